"""Start one "remote" node's workers exactly as msrun would, on this machine. Introduced in notebook 06.

msrun starts a scheduler whenever `--master_addr` is an address of the machine it runs on
(`_is_local_ip` in mindspore/parallel/cluster/process_entity/_api.py). On a real second node the
master's address is not local, so msrun there starts workers only. On ONE machine every node's
msrun sees a local master and starts its own scheduler on the same port (notebook 06 shows what
follows). `run_node` is the second node without that extra scheduler: it starts each worker with
the environment msrun gives a worker (`worker_env`), and they join node 0's scheduler.

    from helpers.multinode import run_node
    result = run_node("--epochs", "1", node_rank=1, local_workers=2, workers=4, port=PORT)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import joblog
from helpers.launcher import PROJECT_ROOT, RunResult, new_run_dir, read_metrics
from helpers.ports import LOOPBACK, port_is_free


def worker_env(rank: int, local_rank: int, workers: int, master_addr: str, port: int,
               cluster_timeout: int) -> dict[str, str]:
    """What msrun 2.10 exports for one worker (_api.py: _Node.run, _ComputeGraphNode.run,
    _ProcessManager.run and _start_single_worker), with `--node_rank` given."""
    return {
        "MS_ROLE": "MS_WORKER",                   # _ComputeGraphNode.run
        "MS_SCHED_HOST": master_addr,             # _Node.run: where the scheduler listens
        "MS_SCHED_PORT": str(port),
        "MS_WORKER_NUM": str(workers),            # --worker_num: ranks in the whole job
        "MS_TOPO_TIMEOUT": str(cluster_timeout),  # --cluster_time_out
        "MS_NODE_ID": str(rank),                  # node_rank * local_worker_num + local rank
        "RANK_ID": str(rank),
        "DEVICE_ID": str(local_rank),             # the card on this node
        "RANK_SIZE": str(workers),                # _ProcessManager.run
    }


def wait_for_listener(port: int, host: str = LOOPBACK, timeout: float = 120) -> float:
    """Block until something listens on host:port (node 0's scheduler); return the seconds waited."""
    start = time.perf_counter()
    while port_is_free(port, host):
        if time.perf_counter() - start > timeout:
            raise TimeoutError(f"nothing listens on {host}:{port} after {timeout:.0f} s: is node 0 running?")
        time.sleep(0.2)
    return time.perf_counter() - start


def _stop(processes: list[subprocess.Popen]) -> None:
    """Kill what is left of this node's workers (each leads its own session, as under msrun)."""
    for process in processes:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        process.wait()


def run_node(*script_args: str, node_rank: int, local_workers: int, workers: int, port: int,
             module: str = "helpers.train", script: str | os.PathLike | None = None,
             master_addr: str = LOOPBACK, name: str = "node",
             timeout: int = 120, wait: float = 600, device: str | None = None) -> RunResult:
    """Run node `node_rank`'s workers (global ranks node_rank*local_workers ...) and wait for them.

    Each worker runs `python -m module script_args` (or `python script script_args`) with `worker_env`
    and writes RUN/worker_<rank>.log, as msrun would on a node that is not the master. `timeout` is the
    cluster-formation timeout (MS_TOPO_TIMEOUT);
    `wait` bounds the whole node (then it is stopped, exit code 124). When a worker fails, the
    others are killed, as msrun does. Returns a RunResult (exit code 0 when every worker succeeded).
    """
    from helpers.device import detect_device

    if workers < 1 or local_workers < 1 or workers % local_workers:
        raise ValueError(f"workers ({workers}) must be a positive multiple of local_workers ({local_workers})")
    if not 0 <= node_rank < workers // local_workers:
        raise ValueError(f"node_rank must be 0..{workers // local_workers - 1}, got {node_rank}")
    run_dir = new_run_dir(name)
    run_dir.mkdir(parents=True)
    device = device or detect_device()
    base = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": str(PROJECT_ROOT), "PYTHONUNBUFFERED": "1", "TUTORIAL_DEVICE": device,
            "TUTORIAL_RUN_DIR": str(run_dir)}
    if device == "CPU":  # as launch.sh does (DESIGN.md §5: oneDNN's slow conv kernel on AVX-512)
        base.setdefault("ONEDNN_MAX_CPU_ISA", "AVX2")
    for name in ("MS_RETRY_INTERVAL_LOWER", "MS_RETRY_INTERVAL_UPPER"):  # launch.sh's 1 s heartbeat
        base.setdefault(name, "1")
    target = [str(Path(script).resolve())] if script is not None else ["-m", module]
    command = ["python", *target, *[str(a) for a in script_args]]
    first = node_rank * local_workers
    processes, ranks = [], []
    start = time.perf_counter()
    for local_rank in range(local_workers):
        rank = first + local_rank
        env = {**base, **worker_env(rank, local_rank, workers, master_addr, port, timeout)}
        with open(run_dir / f"worker_{rank}.log", "w", encoding="utf-8") as log:
            processes.append(subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                              cwd=PROJECT_ROOT, start_new_session=True))
        ranks.append(rank)
    lines = [f"node {node_rank}: ranks {first}-{first + local_workers - 1} of {workers}, workers only "
             f"(scheduler {master_addr}:{port}), logs in {run_dir}"]
    returncode = 0
    try:
        while True:
            running = [p for p in processes if p.poll() is None]
            failed = [(r, p.returncode) for r, p in zip(ranks, processes) if p.returncode not in (None, 0)]
            if failed:
                rank, code = failed[0]
                lines.append(f"rank {rank} exited with code {code}; stopping this node's other workers")
                returncode = code
                break
            if time.perf_counter() - start > wait:
                lines.append(f"node {node_rank} still running after {wait:.0f} s; stopping it")
                returncode = 124
                break
            if not running:
                break
            time.sleep(0.5)
    finally:
        _stop(processes)
    for rank, process in zip(ranks, processes):
        if returncode == 0 and process.returncode != 0:
            returncode = process.returncode
        lines.append(f"rank {rank} (pid {process.pid}) exit code {process.returncode}")
    logs = joblog.rank_logs(run_dir)
    return RunResult(returncode=returncode, wall_time=time.perf_counter() - start, run_dir=run_dir,
                     command=command, output="\n".join(lines) + "\n", metrics=read_metrics(run_dir),
                     log_tail=joblog.tail(logs[min(logs)]) if logs else "")

"""Which setting really keeps a MindSpore CPU worker on one core? One process per setting, no cluster.

    .venv/bin/python benchmarks/threads.py --rounds 3 --out benchmarks/results/threads.jsonl

Each setting trains notebook 04's conv net (benchmarks/nets.py) (batch 32, STAND_ALONE, graph mode) for 5 warm-up and
20 timed steps in a fresh process, then reads /proc/self/task: how many threads exist, how many did
real work (>= 5 % of the process's CPU time), which CPUs each thread may run on, and the process's
CPU time / wall time over the timed steps ("cores used"). The last is load-dependent (a busy machine
caps it); the thread affinity lists are not.

Settings:
    default        nothing set
    threads1       mindspore.device_context.cpu.op_tuning.threads_num(1)
    omp1           OMP_NUM_THREADS=1 in the environment
    taskset        the process started under `taskset -c 0` (inherited affinity)
    affinity       os.sched_setaffinity on every thread after set-up (what the series' workers once did)
    affinity_t1    affinity + threads_num(1)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

SETTINGS = ("default", "threads1", "omp1", "taskset", "affinity", "affinity_t1")


def thread_table() -> list[dict]:
    rows = []
    tick = os.sysconf("SC_CLK_TCK")
    for tid in os.listdir("/proc/self/task"):
        try:
            stat = Path(f"/proc/self/task/{tid}/stat").read_text()
            status = Path(f"/proc/self/task/{tid}/status").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / tick
        allowed = next(line.split(":", 1)[1].strip() for line in status.splitlines()
                       if line.startswith("Cpus_allowed_list"))
        rows.append({"tid": int(tid), "cpu_s": cpu, "allowed": allowed})
    return rows


def worker(setting: str) -> dict:
    import mindspore as ms
    import numpy as np
    from mindspore import nn

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from nets import SmallConvNet, pin_to_core

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_device("CPU")
    if setting in ("threads1", "affinity_t1"):
        ms.device_context.cpu.op_tuning.threads_num(1)
    ms.set_seed(0)
    net = SmallConvNet()
    loss = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    step = nn.TrainOneStepCell(nn.WithLossCell(net, loss), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    x = ms.Tensor(np.random.default_rng(0).standard_normal((32, 3, 32, 32), dtype=np.float32))
    y = ms.Tensor(np.zeros(32, np.int32))
    if setting.startswith("affinity"):
        pin_to_core(min(os.sched_getaffinity(0)))
    for _ in range(5):
        step(x, y).asnumpy()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    times = []
    for _ in range(20):
        start = time.perf_counter()
        step(x, y).asnumpy()
        times.append(time.perf_counter() - start)
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    rows = thread_table()
    total = sum(r["cpu_s"] for r in rows) or 1.0
    busy = [r for r in rows if r["cpu_s"] >= 0.05 * total]
    return {"setting": setting, "step_ms": 1e3 * statistics.median(times), "cores_used": cpu / wall,
            "threads": len(rows), "busy_threads": len(busy),
            "allowed_sets": sorted({r["allowed"] for r in rows}),
            "busy_allowed_sets": sorted({r["allowed"] for r in busy}), "load_1min": os.getloadavg()[0]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--out", default="benchmarks/results/threads.jsonl")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return 0
    # as the launcher sets on CPU
    env = dict(os.environ, ONEDNN_MAX_CPU_ISA=os.environ.get("ONEDNN_MAX_CPU_ISA", "AVX2"))
    for round_no in range(1, args.rounds + 1):
        for setting in args.settings.split(","):
            cmd = [sys.executable, __file__, "--worker", setting]
            run_env = dict(env, OMP_NUM_THREADS="1") if setting == "omp1" else env
            if setting == "taskset":
                cmd = ["taskset", "-c", str(min(os.sched_getaffinity(0)))] + cmd
            out = subprocess.run(cmd, env=run_env, capture_output=True, text=True)
            line = out.stdout.strip().splitlines()[-1] if out.returncode == 0 else json.dumps(
                {"setting": setting, "error": out.stderr[-500:]})
            record = dict(json.loads(line), round=round_no)
            with open(args.out, "a") as handle:
                handle.write(json.dumps(record) + "\n")
            print(json.dumps(record), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

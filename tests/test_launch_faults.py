"""The launcher under faults: named errors in bounded time, nothing left running, nothing lost (issue 7)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from helpers import launch
from helpers.launcher import LAUNCH_SH, PROJECT_ROOT, live_processes

JOB = Path(__file__).with_name("step_job.py")  # a small plain-MindSpore job with real AllReduces
SMALL = (JOB, "--steps", "6")


def assert_failed_fast(result, rank, reason, limit=60):
    assert result.returncode != 0
    assert result.failed_ranks().get(rank, "").startswith(reason), result.output
    assert result.wall_time < limit, f"took {result.wall_time:.0f} s"
    assert live_processes(result.run_dir) == [], "no process of the job may survive it"


def test_worker_raising_before_init(tmp_path):
    script = tmp_path / "fail_before_init.py"
    script.write_text("import os\n"
                      "if os.environ.get('MS_ROLE') == 'MS_WORKER' and os.environ.get('RANK_ID') == '1':\n"
                      "    raise RuntimeError('broken before init')\n"
                      "import mindspore as ms\n"
                      "from mindspore.communication import init\n"
                      "ms.set_device('CPU')\n"
                      "init()\n")
    result = launch(script, workers=2, name="fault-before-init", quiet=True)
    assert_failed_fast(result, 1, "raised an error")
    assert "RuntimeError: broken before init" in result.output


def test_rank_that_never_joins_is_named_after_the_cluster_timeout(tmp_path):
    script = tmp_path / "late_rank.py"
    script.write_text("import os, time\n"
                      "if os.environ.get('MS_ROLE') == 'MS_WORKER' and os.environ.get('RANK_ID') == '1':\n"
                      "    time.sleep(600)\n"
                      "import mindspore as ms\n"
                      "from mindspore.communication import init\n"
                      "ms.set_device('CPU')\n"
                      "init()\n")
    result = launch(script, workers=2, timeout=8, name="fault-never-joins", quiet=True)
    assert result.returncode != 0
    assert "the cluster did not form: rank(s) 1 never called init() within the cluster timeout" in result.output
    assert result.wall_time < 60
    assert live_processes(result.run_dir) == []


def test_worker_raising_mid_training():
    result = launch(*SMALL, "--fault", "raise", "--fault-rank", "1", "--fault-step", "3", workers=2,
                    name="fault-raise", quiet=True)
    assert_failed_fast(result, 1, "raised an error")
    assert "RuntimeError: injected fault on rank 1 after step 3" in result.output
    assert 0 not in result.failed_ranks(), "rank 0 was stopped, it did not fail"


def test_worker_killed_by_a_signal():
    result = launch(*SMALL, "--fault", "kill", "--fault-rank", "1", "--fault-step", "3", workers=2,
                    name="fault-kill", quiet=True)
    assert_failed_fast(result, 1, "exited with code 137 (killed by signal 9)")  # bash's 128 + 9


def test_worker_killed_by_a_signal_under_msrun():
    result = launch(*SMALL, "--fault", "kill", "--fault-rank", "1", "--fault-step", "3", workers=2,
                    startup="msrun", name="fault-kill-msrun", quiet=True)
    assert_failed_fast(result, 1, "exited with code -9 (killed by signal 9)")  # Python's -9, msrun's report


def test_msrun_workers_are_named_once_every_rank_is_seen(tmp_path):
    """launch.sh names msrun's workers from their environment, to report a killed one by rank. msrun's
    `tail -f worker_0.log` carries rank 0's environment: seen before rank 1 started, it must not end the search
    (it did, and the killed rank 1 went unnamed, on a loaded machine)."""
    worker = subprocess.Popen(["sleep", "30"], env={**os.environ, "MS_ROLE": "MS_WORKER", "RANK_ID": "1"})
    pid_map = tmp_path / "ranks.pid"
    pid_map.write_text("101 0\n102 0\n")   # rank 0's worker and msrun's tail of its log
    function = subprocess.run(["sed", "-n", "/^note_worker_pids()/,/^}/p", str(LAUNCH_SH)], capture_output=True,
                              text=True, check=True).stdout
    try:
        subprocess.run(["bash", "-c", f"job_pids() {{ echo {worker.pid}; }}\n{function}\nnote_worker_pids"],
                       env={**os.environ, "PID_MAP": str(pid_map), "LOCAL_WORKERS": "2"}, check=True, timeout=30)
    finally:
        worker.kill()
        worker.wait()
    assert pid_map.read_text().splitlines()[-1] == f"{worker.pid} 1", "rank 1's worker is named"


def test_hung_worker_is_stopped():
    result = launch(*SMALL, "--fault", "hang", "--fault-rank", "0", "--fault-step", "2", workers=2,
                    hang_timeout=15, name="fault-hang", quiet=True)
    assert result.returncode == 124
    assert "no rank wrote anything for 15 s: the job looks hung" in result.output
    assert "injecting fault 'hang' after step 2" in result.output, "the report shows where each rank stopped"
    assert result.wall_time < 60
    assert live_processes(result.run_dir) == []


def wait_for(path: Path, text: str, timeout: float = 90) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.exists() and text in path.read_text(errors="replace"):
            return
        time.sleep(0.5)
    raise AssertionError(f"{text!r} never appeared in {path}")


def test_ctrl_c_on_launch_sh_stops_every_process(tmp_path):
    run_dir = tmp_path / "interrupted"
    env = {**os.environ, "TUTORIAL_PYTHON": sys.executable}
    process = subprocess.Popen(["bash", str(LAUNCH_SH), "--log-dir", str(run_dir), "--", str(JOB), "--steps", "300",
                                "--sleep", "0.2"], env=env, cwd=PROJECT_ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    wait_for(run_dir / "worker_0.log", "[rank 0] step 2 ")
    assert len(live_processes(run_dir)) >= 3, "scheduler and two workers are running"
    start = time.time()
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    output = process.communicate(timeout=30)[0].decode()
    assert time.time() - start < 15
    assert process.returncode != 0
    assert "interrupted; stopping every process of the job" in output
    assert live_processes(run_dir) == []


def test_interrupting_the_python_front_stops_the_job(tmp_path):
    code = ("from helpers import launch\n"
            f"launch({str(JOB)!r}, '--steps', '300', '--sleep', '0.2', name='fault-interrupt')\n")
    process = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               cwd=PROJECT_ROOT, text=True)
    seen = []
    for line in process.stdout:  # the front streams rank 0's progress as it comes
        seen.append(line)
        if "[rank 0] step 2 " in line:
            break
    run_dir = Path(next(line for line in seen if "logs in" in line).split("logs in ")[1].strip())
    start = time.time()
    process.send_signal(signal.SIGINT)  # what the notebook's stop button sends to the kernel
    output = process.communicate(timeout=30)[0]
    assert time.time() - start < 20
    assert "KeyboardInterrupt" in output
    assert live_processes(run_dir) == []


def test_hostile_arguments_are_passed_verbatim_never_run(tmp_path):
    marker = tmp_path / "pwned"
    script = tmp_path / "echo_args.py"
    script.write_text("import json, os, sys\n"
                      "if os.environ.get('MS_ROLE') == 'MS_WORKER':\n"
                      "    out = os.path.join(os.environ['TUTORIAL_RUN_DIR'], 'argv_' + os.environ['RANK_ID'])\n"
                      "    open(out, 'w').write(json.dumps(sys.argv[1:]))\n"
                      "import mindspore as ms\n"
                      "from mindspore.communication import init\n"
                      "ms.set_device('CPU')\n"
                      "init()\n")
    hostile = [f"; touch {marker}", f"$(touch {marker})", f"`touch {marker}`", "a b", "--workers", "9"]
    result = launch(script, *hostile, workers=2, name="hostile", quiet=True)
    assert result.ok, result.output
    import json
    for rank in (0, 1):
        assert json.loads((result.run_dir / f"argv_{rank}").read_text()) == hostile
    assert not marker.exists()


def test_cluster_listens_on_loopback_only():
    """While a job runs, every listening TCP socket of its processes is bound to 127.0.0.1."""
    process = subprocess.Popen([sys.executable, "-c",
                                "from helpers import launch\n"
                                f"launch({str(JOB)!r}, '--steps', '300', '--sleep', '0.2', name='loopback')"],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=PROJECT_ROOT, text=True)
    seen = []
    for line in process.stdout:
        seen.append(line)
        if "[rank 0] step 2 " in line:
            break
    run_dir = Path(next(line for line in seen if "logs in" in line).split("logs in ")[1].strip())
    try:
        inodes = set()
        for pid in live_processes(run_dir):
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                try:
                    target = os.readlink(fd)
                except OSError:
                    continue
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
        listening = []
        for table in ("/proc/net/tcp", "/proc/net/tcp6"):
            for row in Path(table).read_text().splitlines()[1:]:
                fields = row.split()
                if fields[3] == "0A" and fields[9] in inodes:  # 0A = LISTEN
                    listening.append(fields[1])
        assert listening, "the scheduler listens somewhere"
        loopback = {"0100007F", "00000000000000000000000001000000"}
        assert all(addr.split(":")[0] in loopback for addr in listening), listening
    finally:
        process.send_signal(signal.SIGINT)
        process.communicate(timeout=30)
    assert live_processes(run_dir) == []


def test_rank_table_startup_stops_the_others_when_one_fails(tmp_path):
    """Rank-table process management, run for real with plain Python workers (no HCCL needed for this)."""
    script = tmp_path / "rt_worker.py"
    script.write_text("import os, time\n"
                      "print('rank', os.environ['RANK_ID'], 'device', os.environ['DEVICE_ID'], flush=True)\n"
                      "if os.environ['RANK_ID'] == '2':\n"
                      "    raise SystemExit(3)\n"
                      "time.sleep(120)\n")
    table = tmp_path / "rt.json"
    subprocess.run([sys.executable, "-m", "helpers.rank_table", "generate", "--devices", "4", "--server-ip",
                    "192.0.2.30", "-o", str(table)], check=True)
    run_dir = tmp_path / "rt-run"
    env = {**os.environ, "TUTORIAL_PYTHON": sys.executable}
    start = time.time()
    result = subprocess.run(["bash", str(LAUNCH_SH), "--device", "Ascend", "--startup", "ranktable",
                             "--rank-table", str(table), "--log-dir", str(run_dir), str(script)],
                            capture_output=True, text=True, env=env, cwd=PROJECT_ROOT, timeout=60)
    assert result.returncode == 3
    assert time.time() - start < 20
    assert "rank 2 exited with code 3; stopping the others" in result.stderr
    for rank in range(4):
        assert (run_dir / f"rank_{rank}" / f"worker_{rank}.log").read_text().startswith(f"rank {rank} device {rank}")
    assert live_processes(run_dir) == []


def test_two_jobs_side_by_side_do_not_interfere():
    """Notebooks may run twice or side by side: each launch gets its own run folder and port."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        jobs = [pool.submit(launch, JOB, workers=2, name="side-by-side", quiet=True, timeout=120)
                for _ in range(2)]
        results = [job.result() for job in jobs]
    assert all(r.ok for r in results), [r.output[-2000:] for r in results]
    assert results[0].run_dir != results[1].run_dir
    ports = [line.split("(127.0.0.1:")[1].split(")")[0] for r in results for line in r.output.splitlines()
             if line.startswith("launch.sh:") and "(127.0.0.1:" in line]
    assert len(set(ports)) == 2, ports
    for result in results:
        assert sorted(p.name for p in result.run_dir.glob("rank_*")) == ["rank_0", "rank_1"]


def test_a_rank_that_never_joined_is_named_whoever_timed_out_first(tmp_path):
    """The scheduler and the waiting ranks share one cluster timeout; whichever gives up first, the launcher
    stops the rest, so the report must not depend on a waiting rank having logged its own failure.
    The lines are MindSpore 2.10's own (from a run where the scheduler timed out first)."""
    from helpers.joblog import failure_report, never_joined

    (tmp_path / "scheduler.log").write_text(
        "[WARNING] DISTRIBUTED(1,7f,python):2026-11-29-23:41:31.962.766 [meta_server_node.cc:254] ProcessRegister] "
        "The new node: 0(role: MS_WORKER), rank id: 0, device id: 0, hostname: vm, ip: 127.0.0.1 is registered\n"
        "RuntimeError: Failed to initialize distributed job cluster because some processes in the cluster are not "
        "successfully spawned.\n")
    (tmp_path / "worker_0.log").write_text("[WARNING] DISTRIBUTED(2,7f,python): BuildCluster] Topology build timed "
                                           "out., retry(3/16).\n")   # stopped while still waiting
    (tmp_path / "worker_1.log").write_text("")                       # still before init()
    assert never_joined(tmp_path) == [1]
    assert failure_report(tmp_path).startswith("the cluster did not form: rank(s) 1 never called init()")
    (tmp_path / "scheduler.log").write_text("")  # no scheduler here (another node), and nobody failed: no verdict
    assert never_joined(tmp_path) == []

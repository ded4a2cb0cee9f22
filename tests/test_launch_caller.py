"""Nothing of a job outlives whoever started it (issue 35): a killed caller (a restarted Jupyter kernel) or a
killed launch.sh takes every process of the job with it within 10 s, loud job or quiet, dynamic cluster or
msrun; processes of an earlier job still running are named, with the one command that stops them."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import jobs, launch
from helpers.launcher import LAUNCH_SH, PROJECT_ROOT
from helpers.ports import free_port

JOB = Path(__file__).with_name("step_job.py")  # a small plain-MindSpore job with real AllReduces
QUIET = ("--steps", "600", "--sleep", "0.2", "--print-every", "100000")  # prints once, then nothing for 2 min
LOUD = ("--steps", "600", "--sleep", "0.2")                             # a line every 0.2 s
LIMIT = 10  # seconds from the kill until nothing of the job runs


def processes_of(run_dir: Path) -> list[int]:
    """Every process of the job: the ranks, scheduler and msrun (TUTORIAL_RUN_DIR), launch.sh (--log-dir) and
    its watchdog (--run-dir)."""
    found = set(jobs.run_processes(run_dir))
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if str(run_dir).encode() in proc.joinpath("cmdline").read_bytes() and jobs.running(int(proc.name)):
                found.add(int(proc.name))
        except OSError:
            continue
    return sorted(found - {os.getpid()})


def wait_until_running(run_dir: Path, ranks: int = 2, timeout: float = 90) -> None:
    """Until every rank has written a step (the job is past start-up and training)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all((run_dir / f"rank_{k}" / "metrics.jsonl").exists() for k in range(ranks)):
            return
        time.sleep(0.2)
    raise AssertionError(f"the job in {run_dir} never started: {sorted(p.name for p in run_dir.glob('*'))}")


def started_run(runs: Path, name: str) -> Path:
    """The run folder launch(name=...) creates under `runs` (TUTORIAL_RUNS_DIR), once its job is training."""
    deadline = time.time() + 30
    while not list(runs.glob(f"{name}-*")) and time.time() < deadline:
        time.sleep(0.1)
    run_dir = next(runs.glob(f"{name}-*"))
    wait_until_running(run_dir)
    return run_dir


def seconds_until_gone(run_dir: Path, start: float) -> float:
    while processes_of(run_dir) and time.monotonic() - start < LIMIT + 20:
        time.sleep(0.1)
    left = processes_of(run_dir)
    elapsed = time.monotonic() - start
    assert not left, f"still running {elapsed:.0f} s after the kill: {left}"
    return elapsed


@pytest.mark.parametrize("startup", ["dynamic", "msrun"])
@pytest.mark.parametrize("noise", ["quiet", "loud"])
def test_killed_caller_takes_the_job_with_it(tmp_path, startup, noise):
    """The caller is a Python process running launch(), as a notebook's kernel does; SIGKILL is what
    Restart Kernel does to a busy kernel (and the out-of-memory killer to anything)."""
    args = QUIET if noise == "quiet" else LOUD
    code = (f"from helpers import launch\n"
            f"launch({str(JOB)!r}, *{args!r}, workers=2, startup={startup!r}, name='caller')\n")
    kernel = subprocess.Popen([sys.executable, "-c", code], cwd=PROJECT_ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, env={**os.environ, "TUTORIAL_RUNS_DIR": str(tmp_path)})
    try:
        run_dir = started_run(tmp_path, "caller")
        start = time.monotonic()
        kernel.kill()   # the pipe to launch.sh stays open: nobody reads it, as after a kernel's death
        elapsed = seconds_until_gone(run_dir, start)
    finally:
        kernel.kill()
        kernel.communicate()
    print(f"caller killed, {noise} job under {startup}: last process gone after {elapsed:.1f} s")
    assert elapsed < LIMIT
    ended = (run_dir / "ended.txt").read_text()
    assert ended.startswith("stopped: its launcher's caller went away") or (
        noise == "loud" and ended.startswith("stopped: its launcher")), ended


def test_restarting_a_jupyter_kernel_mid_job_stops_the_job(tmp_path):
    """What a reader does with a cell that seems stuck: Kernel -> Restart (a real ipykernel, restarted as
    JupyterLab restarts it: a busy kernel is killed, not asked)."""
    from jupyter_client.manager import start_new_kernel

    kernel, client = start_new_kernel(kernel_name="python3", cwd=str(PROJECT_ROOT),
                                      env={**os.environ, "TUTORIAL_RUNS_DIR": str(tmp_path)})
    try:
        client.execute(f"from helpers import launch\nlaunch({str(JOB)!r}, *{QUIET!r}, workers=2, name='kernel')")
        run_dir = started_run(tmp_path, "kernel")
        start = time.monotonic()
        kernel.restart_kernel(now=True)
        elapsed = seconds_until_gone(run_dir, start)
    finally:
        client.stop_channels()
        kernel.shutdown_kernel(now=True)
    print(f"Jupyter kernel restarted mid-job: last process gone after {elapsed:.1f} s")
    assert elapsed < LIMIT
    # jupyter_client interrupts a kernel before it kills it (KernelManager._async_shutdown_kernel): launch()'s
    # KeyboardInterrupt may stop the job first (launch.sh gets SIGTERM) or the SIGKILL lands first and the
    # watchdog sees its caller go. Either way the job was stopped, and ended.txt says by whom.
    ended = (run_dir / "ended.txt").read_text()
    assert ended.startswith(("stopped: its launcher's caller went away",
                             "interrupted: launch.sh received SIGTERM")), ended


@pytest.mark.parametrize("startup", ["dynamic", "msrun"])
def test_killed_launcher_takes_the_job_with_it(tmp_path, startup):
    run_dir = tmp_path / "run"
    launcher = subprocess.Popen(["bash", str(LAUNCH_SH), "--workers", "2", "--startup", startup,
                                 "--log-dir", str(run_dir), "--", str(JOB), *QUIET],
                                cwd=PROJECT_ROOT, env={**os.environ, "TUTORIAL_PYTHON": sys.executable},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    wait_until_running(run_dir)
    start = time.monotonic()
    launcher.kill()
    launcher.wait()
    elapsed = seconds_until_gone(run_dir, start)
    print(f"launch.sh killed under {startup}: last process gone after {elapsed:.1f} s")
    assert elapsed < LIMIT
    assert (run_dir / "ended.txt").read_text() == f"stopped: its launcher (pid {launcher.pid}) was killed\n"


def test_a_job_started_by_hand_is_named_and_stopped_by_the_command_given(tmp_path):
    """msrun typed into a terminal in this checkout, still running: the next launch names it."""
    hand_dir = tmp_path / "by_hand"
    msrun = subprocess.Popen([sys.executable, "-m", "mindspore.parallel.cluster.run", "--worker_num=2",
                              "--local_worker_num=2", f"--master_port={free_port()}", f"--log_dir={hand_dir}",
                              "--join=True", str(JOB), *QUIET],
                             cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             env={**os.environ, "TUTORIAL_RUN_DIR": str(hand_dir),  # msrun starts `python`
                                  "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"},
                             start_new_session=True)
    try:
        wait_until_running(hand_dir)
        hand = processes_of(hand_dir)
        result = launch(JOB, "--steps", "2", workers=2, name="beside-leftover", quiet=True)
        assert result.ok, result.output
        warning = next(line for line in result.output.splitlines() if line.startswith("launch.sh: warning:"))
        assert "started by hand in this checkout" in warning
        for pid in hand:
            assert str(pid) in warning, f"pid {pid} of the earlier job is not named: {warning}"
        command = warning.split("Stop them with: ")[1].split()
        assert command[:3] == ["bash", "helpers/launch.sh", "--stop"]
        start = time.monotonic()
        subprocess.run(command, cwd=PROJECT_ROOT, check=True, capture_output=True)
        elapsed = seconds_until_gone(hand_dir, start)
        assert elapsed < LIMIT
    finally:
        os.killpg(msrun.pid, signal.SIGKILL) if msrun.poll() is None else None
        msrun.wait()


def test_a_leftover_of_launch_sh_is_named_by_its_run_folder(tmp_path):
    """A process marked as one of launch.sh's whose launcher is gone (its watchdog killed too, say)."""
    gone = subprocess.Popen(["true"])
    gone.wait()
    run_dir = tmp_path / "orphaned"
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                              env={**os.environ, "TUTORIAL_PROJECT": str(PROJECT_ROOT),
                                   "TUTORIAL_RUN_DIR": str(run_dir), "TUTORIAL_LAUNCHER_PID": str(gone.pid)})
    try:
        time.sleep(0.5)
        found = [job for job in jobs.leftovers(PROJECT_ROOT) if job["run_dir"] == str(run_dir)]
        assert len(found) == 1 and found[0]["pids"] == [orphan.pid], found
        assert found[0]["stop"] == f"bash helpers/launch.sh --stop {run_dir}"
        assert f"run folder {run_dir}" in jobs.describe(found[0])
        run_dir.mkdir()
        out = subprocess.run(["bash", str(LAUNCH_SH), "--stop", str(run_dir)], cwd=PROJECT_ROOT,
                             capture_output=True, text=True, check=True).stdout
        assert "stopped 1 process(es)" in out
        assert orphan.wait(timeout=LIMIT) is not None
        assert (run_dir / "ended.txt").read_text() == "stopped: by launch.sh --stop\n"
    finally:
        orphan.kill()

"""The launcher when the run folder cannot take a job: a full filesystem, two jobs in one folder (issue 25).

The full-disk tests mount an 8 MiB tmpfs, which needs root; elsewhere they are skipped with the reason.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers.launcher import LAUNCH_SH, PROJECT_ROOT, live_processes

JOB = Path(__file__).with_name("step_job.py")  # a small plain-MindSpore job with real AllReduces
ENV = {**os.environ, "TUTORIAL_PYTHON": sys.executable, "TUTORIAL_DEVICE": "CPU"}


def start_sh(*args):
    return subprocess.Popen(["bash", str(LAUNCH_SH), *map(str, args)], cwd=PROJECT_ROOT, env=ENV, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.fixture
def small_filesystem(tmp_path):
    """An 8 MiB tmpfs of this test's own, unmounted afterwards."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not root'}); the full-disk tests need one")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(folder: Path) -> None:
    """Write into `folder` until its filesystem refuses another byte."""
    with open(folder / "filler.bin", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError:
            pass
    with open(folder / "filler-tail.bin", "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0")
        except OSError:
            pass


def test_a_full_filesystem_is_refused_before_anything_starts(small_filesystem):
    fill(small_filesystem)
    launcher = start_sh("--workers", 1, "--log-dir", small_filesystem / "run", JOB)
    _, err = launcher.communicate(timeout=60)
    assert launcher.returncode == 2
    assert f"the run folder's filesystem is full: 0 bytes free under {small_filesystem / 'run'}" in err
    assert not (small_filesystem / "run").exists(), "nothing was started or written"


def test_a_rank_that_fills_the_disk_is_named_and_the_job_stopped(small_filesystem, tmp_path):
    script = tmp_path / "fill_disk.py"   # rank 1 writes more than the filesystem holds; rank 0 would wait 2 minutes
    script.write_text("import os, time\nfrom pathlib import Path\nimport mindspore as ms\n"
                      "from mindspore.communication import get_rank, init\n"
                      "ms.set_device('CPU')\ninit()\n"
                      "out = Path(os.environ['TUTORIAL_RUN_DIR']) / f'rank_{get_rank()}'\n"
                      "out.mkdir(parents=True, exist_ok=True)\n"
                      "if get_rank() == 1:\n    (out / 'big.bin').write_bytes(bytes(64 << 20))\n"
                      "time.sleep(120)\n")
    run_dir = small_filesystem / "run"
    began = time.monotonic()
    launcher = start_sh("--workers", 2, "--log-dir", run_dir, script)
    _, err = launcher.communicate(timeout=120)
    elapsed = time.monotonic() - began
    assert launcher.returncode != 0
    assert f"the run folder's filesystem is full: 0 bytes free under {run_dir}" in err, err
    assert elapsed < 60, f"took {elapsed:.0f} s"
    assert live_processes(run_dir) == [], "no process of the job may survive it"


def test_two_jobs_started_together_in_one_folder_get_a_folder_each(tmp_path):
    wanted = tmp_path / "run"
    launchers = [start_sh("--workers", 1, "--log-dir", wanted, JOB, "--steps", 2) for _ in range(2)]
    outputs = [launcher.communicate(timeout=180) for launcher in launchers]
    assert [launcher.returncode for launcher in launchers] == [0, 0], outputs
    folders = sorted(p for p in tmp_path.iterdir() if p.name.startswith("run"))
    assert folders == [wanted, tmp_path / "run-2"]
    claims = {(folder / ".launch.claim").read_text().strip() for folder in folders}
    assert claims == {str(launcher.pid) for launcher in launchers}, "each folder belongs to one launcher"
    for folder in folders:   # each holds exactly one job: one rank's metrics, two steps
        lines = (folder / "rank_0" / "metrics.jsonl").read_text().splitlines()
        assert sum('"step"' in line for line in lines) == 2, lines

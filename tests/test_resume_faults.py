"""Resuming after the faults that damage checkpoints: a file cut short, a corrupted one, an interrupted
job (issue 25). Notebook 04's train.py, read out of the notebook, under the bundled launcher."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from helpers import launch
from helpers.launcher import LAUNCH_SH, PROJECT_ROOT, live_processes
from helpers.scripts import write_script

pytestmark = pytest.mark.launch


@pytest.fixture(scope="module")
def train(tmp_path_factory):
    return write_script("04_network_and_training.ipynb", "scripts/train.py", tmp_path_factory.mktemp("train"))


@pytest.fixture(scope="module")
def saved(train):
    """A finished 2-epoch run with a checkpoint per epoch on each of 2 ranks."""
    return launch(train, "--epochs", 2, "--save-ckpt", name="test-resume-saved", workers=2, quiet=True).check()


def checkpoint(run_dir, rank, epoch):
    return next((Path(run_dir) / f"rank_{rank}" / "ckpt").glob(f"net-{epoch}_*.ckpt"))


def damage(path, how):
    path.chmod(0o600)   # MindSpore leaves its checkpoints read-only
    data = bytearray(path.read_bytes())
    if how == "cut":
        data = data[: len(data) // 2]
    else:   # one byte flipped deep inside a tensor: only the CRC can tell
        data[len(data) - 100] ^= 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["cut", "flipped"])
def test_a_damaged_newest_checkpoint_makes_every_rank_fall_back_alike(train, saved, tmp_path, how):
    copy = tmp_path / "run"
    shutil.copytree(saved.run_dir, copy)
    damage(checkpoint(copy, 1, 2), how)
    result = launch(train, "--epochs", 3, "--resume-from", copy, name="test-resume-fallback", workers=2, quiet=True)
    assert result.ok, result.output
    assert [result.records(r, "resume")[0]["epoch"] for r in (0, 1)] == [1, 1], "the newest epoch every rank can read"
    assert f"cannot read {checkpoint(copy, 1, 2)}" in (result.run_dir / "worker_1.log").read_text()
    assert len({result.final(r)["weights_sha"] for r in (0, 1)}) == 1


def test_no_epoch_readable_everywhere_is_refused_on_every_rank(train, saved, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(saved.run_dir, copy)
    damage(checkpoint(copy, 0, 1), "cut")
    damage(checkpoint(copy, 1, 2), "cut")
    result = launch(train, "--epochs", 3, "--resume-from", copy, name="test-resume-none", workers=2, quiet=True)
    assert result.returncode != 0
    for rank, readable in ((0, [2]), (1, [1])):
        log = (result.run_dir / f"worker_{rank}.log").read_text()
        assert f"rank {rank}: no epoch has a readable checkpoint on every rank in {copy} " \
               f"(this rank can read epochs {readable})" in log
        assert "Traceback" not in log, "a named error, not a stack trace"
    assert result.wall_time < 60
    assert live_processes(result.run_dir) == []


def test_a_job_interrupted_mid_run_resumes_from_its_last_complete_checkpoints(train, tmp_path):
    run_dir = tmp_path / "interrupted"
    env = {**os.environ, "TUTORIAL_PYTHON": sys.executable}
    job = subprocess.Popen(["bash", str(LAUNCH_SH), "--workers", "2", "--log-dir", str(run_dir), str(train),
                            "--epochs", "40", "--save-ckpt"], cwd=PROJECT_ROOT, env=env, start_new_session=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not all(list((run_dir / f"rank_{r}" / "ckpt").glob("net-2_*.ckpt")) for r in (0, 1)):
        assert time.monotonic() < deadline and job.poll() is None, "the job never saved two epochs"
        time.sleep(0.05)
    os.kill(job.pid, signal.SIGINT)   # Ctrl-C, just after epoch 2 is saved
    assert job.wait(timeout=30) == 130
    assert live_processes(run_dir) == [], "every process of the job stopped"
    complete = [max(int(p.stem.split("-")[1].split("_")[0]) for p in (run_dir / f"rank_{r}" / "ckpt").glob("*.ckpt"))
                for r in (0, 1)]
    result = launch(train, "--epochs", min(complete) + 1, "--resume-from", run_dir, name="test-resume-interrupted",
                    workers=2, quiet=True)
    assert result.ok, result.output
    assert [result.records(r, "resume")[0]["epoch"] for r in (0, 1)] == [min(complete)] * 2


def test_notebook_07_names_a_slice_it_cannot_read(tmp_path):
    script = write_script("07_checkpoints_across_strategies.ipynb", "scripts/tp_checkpoint.py", tmp_path)
    saved = launch(script, name="test-tp-saved", workers=2, quiet=True).check()
    copy = tmp_path / "run"
    shutil.copytree(saved.run_dir, copy)
    cut = next((copy / "rank_1").glob("*.ckpt"))
    cut.chmod(0o600)
    cut.write_bytes(cut.read_bytes()[:100])
    result = launch(script, "--load-dir", copy, name="test-tp-load-cut", workers=2, quiet=True)
    assert result.returncode != 0 and list(result.failed_ranks()) == [1]
    log = (result.run_dir / "worker_1.log").read_text()
    assert f"rank 1: cannot read {cut}: Failed to read the checkpoint file" in log
    assert result.wall_time < 60 and live_processes(result.run_dir) == []

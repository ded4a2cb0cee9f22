"""Notebook 14's train_cp.py stops a job it cannot run with the reason: a degree that does not divide the heads
(Ulysses), an odd ring, a sequence that does not split into equal chunks."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.ports import free_port
from helpers.scripts import borrowed_scripts, notebook_scripts

NOTEBOOK = "14_long_sequences.ipynb"


@pytest.mark.launch
@pytest.mark.parametrize("ranks, flags, reason", [
    (3, ("--algos", "ulysses", "--seq", "192"), "ulysses on 3 ranks: heads=8 does not divide by the context-parallel "
                                                "degree 3"),
    (3, ("--algos", "ring", "--seq", "192"), "ring on 3 ranks: ring attention here needs an even number of ranks"),
    (2, ("--algos", "ring-zigzag", "--seq", "102"), "seq=102 does not divide into 4 equal chunks for 2 ranks"),
    (1, ("--algos", "flash"), "--algos: 'flash' is not one of ulysses, ring, ring-zigzag"),
], ids=["heads", "odd-ring", "zigzag-seq", "unknown"])
def test_a_job_it_cannot_run_stops_with_the_reason(ranks, flags, reason, tmp_path):
    for name, source in {**borrowed_scripts(NOTEBOOK), **notebook_scripts(NOTEBOOK)}.items():
        (tmp_path / Path(name).name).write_text(source, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUTORIAL_", "MS_", "RANK_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    command = [sys.executable, "-m", "mindspore.parallel.cluster.run", f"--worker_num={ranks}",
               f"--local_worker_num={ranks}", f"--master_port={free_port()}", f"--log_dir={tmp_path / 'logs'}",
               "--join=True", "train_cp.py", "--steps", "1", *flags]
    result = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    log = (tmp_path / "logs" / "worker_0.log").read_text(errors="replace")
    assert result.returncode != 0 and reason in log, log[-2000:]
    assert "Traceback" not in log, "the reason, not a stack trace"

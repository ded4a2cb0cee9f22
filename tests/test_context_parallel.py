"""Notebook 14's train_cp.py stops a job it cannot run with the reason: a degree that does not divide the heads
(Ulysses), an odd ring, a sequence that does not split into equal chunks."""

import pytest
from bare_msrun import run_script

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
    code, log = run_script(NOTEBOOK, "train_cp.py", ("--steps", "1", *flags), ranks, tmp_path)
    assert code != 0 and reason in log, log[-2000:]
    assert "Traceback" not in log, "the reason, not a stack trace"

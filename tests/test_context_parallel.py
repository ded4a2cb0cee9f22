"""Notebook 14's train_cp.py stops a job it cannot run with the reason: a degree that does not divide the heads
(Ulysses), a sequence that does not split into equal chunks. The ring runs on an odd number of ranks: its order
completes under blocking sends, and it trains as one process does."""

import json

import numpy as np
import pytest
from bare_msrun import assert_stopped_with, launch_script

from helpers.rendezvous import first_deadlock

NOTEBOOK = "14_long_sequences.ipynb"


@pytest.mark.launch
@pytest.mark.parametrize("ranks, flags, reason", [
    (3, ("--algos", "ulysses", "--seq", "192"), "ulysses on 3 ranks: heads=8 does not divide by the context-parallel "
                                                "degree 3"),
    (2, ("--algos", "ring-zigzag", "--seq", "102"), "seq=102 does not divide into 4 equal chunks for 2 ranks"),
    (1, ("--algos", "flash"), "--algos: 'flash' is not one of ulysses, ring, ring-zigzag"),
], ids=["heads", "zigzag-seq", "unknown"])
def test_a_job_it_cannot_run_stops_with_the_reason(ranks, flags, reason, tmp_path):
    assert_stopped_with(launch_script(NOTEBOOK, "train_cp.py", ("--steps", "1", *flags), ranks, tmp_path), reason)


def records(folder, rank, algo):
    lines = (folder / f"rank_{rank}" / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == "step" and r["algo"] == algo]


@pytest.mark.launch
def test_the_ring_runs_on_three_ranks_as_one_process_does(tmp_path):
    """Even ranks send first and odd ranks receive first: on 3 ranks ranks 2 and 0 both send first, and rank 1's
    receive lets the ring move. The order each rank recorded completes under blocking sends (helpers.rendezvous),
    and the losses, first gradients and weights equal one process's within notebook 14's tolerances."""
    flags = ("--steps", "2", "--seq", "192", "--algos", "ring,ring-zigzag")   # 192 = 6 chunks of 32
    runs = {}
    for ranks in (1, 3):
        result = launch_script(NOTEBOOK, "train_cp.py", flags, ranks, tmp_path)
        assert result.ok, result.output[-2000:]
        runs[ranks] = result.run_dir
    for algo in ("ring", "ring-zigzag"):
        issued = [records(runs[3], r, algo)[0]["comms"] for r in range(3)]
        assert all(issued), "every rank recorded its sends and receives"
        assert first_deadlock(issued) is None, f"{algo} on 3 ranks would wait for ever if sends waited: {issued}"
        losses = [[s["loss"] for s in records(runs[ranks], 0, algo)] for ranks in (1, 3)]
        assert np.allclose(*losses, rtol=0, atol=1e-4), losses
        one, three = (dict(np.load(runs[ranks] / "rank_0" / f"{algo}.npz")) for ranks in (1, 3))
        for prefix, tolerance in (("grad:", 1e-4), ("weight:", 1e-3)):
            gap = max(np.abs(three[k] - one[k]).max() / np.abs(one[k]).max() for k in one if k.startswith(prefix))
            assert gap <= tolerance, (algo, prefix, gap)

"""Notebook 13's results reader (helpers.moe_runs) on a run folder written by hand, moe.py's padding of empty
all-to-all blocks checked against a NumPy all-to-all, and train_moe.py's refusal of a rank count that does not divide
its experts or its batch."""

import importlib
import sys

import numpy as np
import pytest
from bare_msrun import assert_stopped_with, launch_script

from helpers import moe_runs
from helpers.scripts import borrowed_scripts, notebook_scripts

NOTEBOOK = "13_mixture_of_experts.ipynb"


def write_ranks(folder, setting, ranks):
    for r, arrays in enumerate(ranks):
        (folder / f"rank_{r}").mkdir(parents=True, exist_ok=True)
        np.savez(folder / f"rank_{r}" / f"{setting}.npz", **arrays)


def test_experts_routing_and_shared_weights_put_back_together(tmp_path):
    rng = np.random.default_rng(0)
    experts, router = rng.standard_normal((4, 3, 2)), rng.standard_normal((4, 2))
    choices = rng.integers(0, 4, (5, 2, 6, 2))          # steps x layers x tokens x k
    ranks = [{"weight:layers.0.moe.w1": experts[2 * r:2 * r + 2], "weight:layers.0.moe.router.weight": router,
              "choices": choices[:, :, 3 * r:3 * r + 3]} for r in range(2)]
    write_ranks(tmp_path, "aux0.01_cf0", ranks)
    whole = moe_runs.assembled(tmp_path, "aux0.01_cf0")
    assert np.array_equal(whole["weight:layers.0.moe.w1"], experts)
    assert np.array_equal(whole["weight:layers.0.moe.router.weight"], router)
    assert np.array_equal(whole["choices"], choices)
    shifted = {k: v + 1e-3 for k, v in whole.items() if k != "choices"}
    gaps = moe_runs.relative_gaps(whole, shifted, "weight:")
    assert set(gaps) == {"layers.0.moe.w1", "layers.0.moe.router.weight"}
    assert all(0 < g < 1e-2 for g in gaps.values())


def test_a_rank_whose_shared_weights_differ_is_named(tmp_path):
    router = np.ones((4, 2))
    write_ranks(tmp_path, "s", [{"weight:router": router}, {"weight:router": router + 1}])
    with pytest.raises(AssertionError, match="router: rank 1 holds other values than rank 0"):
        moe_runs.assembled(tmp_path, "s")
    with pytest.raises(FileNotFoundError, match="no rank wrote missing.npz"):
        moe_runs.assembled(tmp_path, "missing")


def test_imbalance_is_max_over_mean_per_step_and_layer():
    records = [{"load": [[4, 4, 4, 4], [16, 0, 0, 0]]}, {"load": [[8, 8, 0, 0], [4, 4, 4, 4]]}]
    assert moe_runs.imbalance(records).tolist() == [[1.0, 4.0], [2.0, 1.0]]


@pytest.fixture(scope="module")
def padded_splits(tmp_path_factory):
    """moe.py's padded_splits, imported from the script notebook 13 writes (with the gpt.py it imports)."""
    folder = tmp_path_factory.mktemp("nb13")
    for name, source in {**borrowed_scripts(NOTEBOOK), **notebook_scripts(NOTEBOOK)}.items():
        (folder / name.split("/")[-1]).write_text(source, encoding="utf-8")
    sys.path.insert(0, str(folder))
    try:
        yield importlib.import_module("moe").padded_splits
    finally:
        sys.path.remove(str(folder))
        for name in ("moe", "gpt"):
            sys.modules.pop(name, None)


def test_no_empty_block_reaches_the_collective_and_every_rank_keeps_its_rows(padded_splits):
    send, recv, take, keep = padded_splits([2, 0, 1], [0, 0, 3])
    assert (send, recv) == ([2, 1, 1], [1, 1, 3])
    assert take.tolist() == [0, 1, 3, 2], "rank 1's block is the appended row of zeros (row 3)"
    assert keep.tolist() == [2, 3, 4], "the padding from ranks 0 and 1 is dropped"
    assert moe_runs.check_padding(padded_splits, np.random.default_rng(1)) > 0


def test_the_padding_check_catches_a_broken_padding(padded_splits):
    def unpadded(send, recv):   # no padding at all: empty blocks reach the collective
        send, recv = np.asarray(send), np.asarray(recv)
        return send.tolist(), recv.tolist(), np.arange(send.sum()), np.arange(recv.sum())

    def keeps_the_padding(send, recv):   # pads, but the receiver keeps the rows of zeros
        send, recv, take, keep = padded_splits(send, recv)
        return send, recv, take, np.arange(sum(recv))

    for broken, reason in ((unpadded, "an empty block is left"), (keeps_the_padding, "keeps other rows")):
        with pytest.raises(AssertionError, match=reason):
            moe_runs.check_padding(broken, np.random.default_rng(2))
    with pytest.raises(AssertionError, match="rank 1 expects 2 rows from rank 0, gets 1"):
        moe_runs.all_to_all_single([np.zeros((1, 3)), np.zeros((0, 3))], [[0, 1], [0, 0]], [[0, 0], [2, 0]])


@pytest.mark.launch
def test_a_rank_count_that_does_not_divide_stops_the_job_with_the_reason(tmp_path):
    for flags, reason in ((("--experts", "3"), "--experts 3 does not divide by the 2 ranks"),
                          (("--batch", "3"), "--batch 3 does not divide by the 2 ranks")):
        assert_stopped_with(launch_script(NOTEBOOK, "train_moe.py", flags, 2, tmp_path), reason)

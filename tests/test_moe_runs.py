"""Notebook 13's results reader (helpers.moe_runs) on a run folder written by hand, and train_moe.py's refusal of a
rank count that does not divide its experts or its batch."""

import numpy as np
import pytest
from bare_msrun import run_script

from helpers import moe_runs

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


@pytest.mark.launch
def test_a_rank_count_that_does_not_divide_stops_the_job_with_the_reason(tmp_path):
    for flags, reason in ((("--experts", "3"), "--experts 3 does not divide by the 2 ranks"),
                          (("--batch", "3"), "--batch 3 does not divide by the 2 ranks")):
        code, log = run_script(NOTEBOOK, "train_moe.py", flags, 2, tmp_path)
        assert code != 0 and reason in log, log[-2000:]
        assert "Traceback" not in log, "the reason, not a stack trace"

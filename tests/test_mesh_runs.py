"""Notebook 12's results reader (helpers.mesh_runs) on a run folder written by hand, and train_3d.py's refusal of a
layout that cannot run, under bare msrun."""

import json

import numpy as np
import pytest
from bare_msrun import run_script

from helpers import mesh_runs

NOTEBOOK = "12_3d_parallelism.ipynb"


def write_rank(run_dir, rank, lines, weights):
    folder = run_dir / f"rank_{rank}"
    folder.mkdir(parents=True)
    (folder / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    np.savez(folder / "weights_1x1x2.npz", **weights)


def step(n, seconds, sent_tp, loss=None):
    line = {"kind": "step", "layout": "1x1x2", "step": n, "seconds": seconds, "comm_seconds": seconds / 4,
            "sent": {"tp": sent_tp, "pp": 0, "dp": 0}, "held_bytes": 64}
    return line | ({"loss": loss} if loss is not None else {})


def test_layouts_costs_and_weights_put_back_together(tmp_path):
    whole = {"w": np.arange(12, dtype=np.float32).reshape(4, 3), "norm": np.ones(3, np.float32)}
    for rank in (0, 1):
        lines = [step(1, 1.0 + rank, 100.0 * (rank + 1), 2.5), step(2, 0.5, 100.0 * (rank + 1), 2.0),
                 step(3, 0.7, 100.0 * (rank + 1), 1.5),
                 {"kind": "run", "layout": "1x1x2", "coords": [0, 0, rank], "param_bytes": 40,
                  "optimizer_bytes": 80, "tokens_per_step": 70}]
        write_rank(tmp_path, rank, lines, {"w": whole["w"][2 * rank:2 * rank + 2], "norm": whole["norm"]})
    run = mesh_runs.layouts(tmp_path)["1x1x2"]
    assert (run["dp"], run["pp"], run["tp"]) == (1, 1, 2) and run["loss"] == [2.5, 2.0, 1.5]
    assert run["layout"] == "1x1x2"
    cost = mesh_runs.costs(run)
    assert cost["seconds"] == pytest.approx(0.6), "median of the steps after the first, slowest rank"
    assert cost["tokens_per_s"] == pytest.approx(70 / 0.6) and cost["comm_share"] == pytest.approx(0.25)
    assert cost["sent_rank"] == 1 and cost["sent"]["tp"] == 200 and cost["state_bytes"] == 120
    weights = mesh_runs.assembled_weights(tmp_path, run, whole)
    assert all(np.array_equal(weights[k], whole[k]) for k in whole)
    with pytest.raises(ValueError, match="no rank saved"):
        mesh_runs.assembled_weights(tmp_path, run, {**whole, "missing": whole["norm"]})


@pytest.mark.launch
def test_a_layout_that_cannot_run_stops_the_job_with_the_reason(tmp_path):
    for layout, reason in (("1x1x2", "mesh 1x1x2 cannot run on 1 ranks: dp x pp x tp = 2, not 1"),):
        code, log = run_script(NOTEBOOK, "train_3d.py", ("--layouts", layout), 1, tmp_path)
        assert code != 0 and reason in log, log[-2000:]
        assert "Traceback" not in log, "the reason, not a stack trace"

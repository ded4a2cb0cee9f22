"""Notebook 02's exercise checker accepts the reference answers and rejects wrong ones.

The checker and the reference solution are read out of the notebook's cells (found by their first line), so what
is tested is exactly what a reader runs. The notebook itself only runs the reader's answer and the reference
solution through the checker.
"""

import pytest

from helpers import scripts
from helpers.layout import StrategyError, matmul_layout
from helpers.scripts import NOTEBOOKS

NOTEBOOK = NOTEBOOKS / "02_parallel_modes.ipynb"
LAYOUT_DEVICES, LAYOUT_BATCH = 8, 32 * 8   # the notebook's defaults: 8 devices, a per-rank batch of 32


def code_cell(marker):
    return scripts.code_cell(NOTEBOOK, marker)


@pytest.fixture(params=[1, 2, 4, 8], ids=lambda n: f"{n}-ranks")
def notebook(request):
    """The checker and the reference solution, run as the notebook runs them at `n` ranks (sum / mean measured = n)."""
    workers = request.param
    namespace = {"LAYOUT_DEVICES": LAYOUT_DEVICES, "LAYOUT_BATCH": LAYOUT_BATCH, "WORKERS": workers,
                 "ratio": float(workers), "matmul_layout": matmul_layout, "StrategyError": StrategyError}
    exec(code_cell("# The exercises' checker"), namespace)
    exec(code_cell("# Reference solution"), namespace)   # the cell runs the check on the solution itself
    return namespace


def test_accepts_the_reference_solution(notebook, capsys):
    notebook["check_exercises"](notebook["solution_strategy"], notebook["solution_factor"])
    out = capsys.readouterr().out
    assert "exercise 1: correct" in out and "exercise 2: correct" in out


def test_a_stub_is_not_attempted_yet(notebook, capsys):
    notebook["check_exercises"](lambda devices: None, lambda n: None)
    out = capsys.readouterr().out
    assert "exercise 1: not attempted yet" in out and "exercise 2: not attempted yet" in out


@pytest.mark.parametrize("strategy", [
    lambda d: ((d, 1), (1, 1)),            # splits the batch
    lambda d: ((1, 1), (d, 1)),            # splits the 10 classes: MindSpore rejects it
    lambda d: ((1, d // 2), (1, d // 2)),  # splits the features, but not over every device
    lambda d: ((2, d // 2), (1, d // 2)),  # Megatron's fc2: batch and features
], ids=["batch", "classes", "half-the-devices", "megatron"])
def test_rejects_a_wrong_strategy(notebook, strategy):
    with pytest.raises((AssertionError, StrategyError)):
        notebook["check_exercises"](strategy, notebook["solution_factor"])


@pytest.mark.parametrize("factor", [lambda n: n + 1, lambda n: 2 * n, lambda n: 1, lambda n: n / 2],
                         ids=["n+1", "2n", "one", "n/2"])
def test_rejects_a_wrong_factor(notebook, factor):
    with pytest.raises(AssertionError):
        notebook["check_exercises"](notebook["solution_strategy"], factor)


def test_rejects_a_factor_that_only_matches_this_rank_count(notebook):
    measured = notebook["WORKERS"]
    with pytest.raises(AssertionError):
        notebook["check_exercises"](notebook["solution_strategy"], lambda n: measured)

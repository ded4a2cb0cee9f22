"""Notebook 01's exercise checks accept the reference solutions and reject wrong answers.

The stubs, the checks and the reference solutions are read out of the notebook's cells (found by their first
line) and run here, so what is tested is what a reader runs. In the notebook the checks judge answers against
section 2's launch (`comm`); here a stand-in gives them the same facts, at 1, 2, 4 and 8 ranks. Exercise 2
trains SimpleNet in this process, as it does in the notebook's kernel; exercise 3 asks the real launcher for
a rank-table dry run.
"""

import sys

import pytest

from helpers import rank_table
from helpers.scripts import NOTEBOOKS, code_cell, import_cells, write_script

NOTEBOOK = NOTEBOOKS / "01_environment_and_communication.ipynb"
TABLE_PATH = NOTEBOOKS.parent / "rank_table_file.json"   # the repository's 8-card table

# The cells, by the line each starts with, in the notebook's order.
CELLS = ("import mindspore as ms\n\n\ndef expected_allreduce(n):",   # the reader's stubs
         "# The checks of exercises 1 and 3.", "# The check of exercise 2.")
REFERENCE = "# Reference solutions, run through the same checks."

# What the cells find in the notebook's kernel when they run: the configuration cell's imports and MindSpore
# set up in graph mode on CPU (sections 1 and 3).
HEADER = '''
import json
from pathlib import Path

import mindspore as ms
import numpy as np

from helpers import launch

ms.set_context(mode=ms.GRAPH_MODE)
try:
    ms.set_device("CPU")
except RuntimeError:   # the device can only be chosen once per process
    pass
'''


def cell(start):
    return code_cell(NOTEBOOK, start)


class Comm:
    """A stand-in for section 2's RunResult: what the checks read from it."""

    def __init__(self, workers, run_dir):
        self.workers, self.run_dir = workers, run_dir

    def final(self, rank):
        return {"rank": rank, "world": self.workers, "allreduce_sum": [self.workers * (self.workers + 1) / 2] * 4}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Where the cells run from: scripts/comm_check.py as the notebook writes it, for exercise 3's dry run."""
    folder = tmp_path_factory.mktemp("nb01")
    write_script(NOTEBOOK, "scripts/comm_check.py", folder / "scripts")
    return folder


@pytest.fixture(scope="module")
def cells_module(folder):
    """The exercise cells as one module file: MindSpore's graph mode reads `SimpleNet.construct` from its source."""
    source = folder / "nb01_exercise_cells.py"
    module = import_cells(source, HEADER + "\n\n" + "\n\n\n".join(cell(start) for start in CELLS) + "\n",
                          WORKERS=2, comm=Comm(2, folder))   # the configuration cell and section 2 define them first
    yield module
    del sys.modules[source.stem]


@pytest.fixture(params=[1, 2, 4, 8], ids=lambda n: f"{n}-ranks")
def nb(request, cells_module, folder, monkeypatch):
    """The cells' namespace as the notebook sees it when run at `n` ranks, from the notebooks' folder."""
    monkeypatch.chdir(folder)
    monkeypatch.setattr(cells_module, "WORKERS", request.param)
    monkeypatch.setattr(cells_module, "comm", Comm(request.param, folder))
    return cells_module.__dict__


def test_the_stubs_are_not_attempted_yet(nb):
    for check, stub in (("check_allreduce", "expected_allreduce"), ("check_callback", "EpochMeanLoss"),
                        ("check_rank_table", "four_card_table")):
        assert nb[check](nb[stub]) == "not attempted yet", check


def test_the_reference_solutions_are_correct(nb, capsys):
    exec(cell(REFERENCE), dict(nb))   # the cell asserts that every check says "correct"
    assert capsys.readouterr().out.count("reference solution: correct") == 3


def wrong_answers(np, right_callback):
    """(check, wrong answer): each answer is wrong in one way, named in its comment."""

    def sums_the_rank_ids(n):   # rank instead of rank + 1
        return n * (n - 1) / 2

    def squares(n):   # right at 1 rank only
        return n * n

    class LastLossOfEpoch(right_callback):   # the epoch's last step, not its mean
        def on_train_epoch_end(self, run_context):
            self.means.append(self.losses[-1])
            self.losses = []

    class NeverReset(right_callback):   # the second "mean" runs over both epochs
        def on_train_epoch_end(self, run_context):
            self.means.append(float(np.mean(self.losses)))

    class EveryStep(right_callback):   # appends at every step
        def on_train_step_end(self, run_context):
            super().on_train_step_end(run_context)
            self.means.append(float(np.mean(self.losses)))

    def table(**changes):
        answer = {"version": "1.0", "server_count": "1", "status": "completed",
                  "server_list": [{"server_id": "192.0.2.20", "host_nic_ip": "reserve",
                                   "device": [{"device_id": str(k), "device_ip": f"198.51.100.{k + 1}",
                                               "rank_id": str(k)} for k in range(4)]}]}
        answer.update(changes)
        return answer

    def integer_ids():   # looks right, fails inside HCCL
        answer = table()
        for card in answer["server_list"][0]["device"]:
            card["rank_id"] = int(card["rank_id"])
        return answer

    return {
        "sums the rank ids": ("check_allreduce", sums_the_rank_ids),
        "right at 1 rank only": ("check_allreduce", squares),
        "last step's loss": ("check_callback", LastLossOfEpoch),
        "never resets": ("check_callback", NeverReset),
        "appends every step": ("check_callback", EveryStep),
        "integer rank ids": ("check_rank_table", integer_ids),
        "integer server_count": ("check_rank_table", lambda: table(server_count=1)),
        "no status": ("check_rank_table", lambda: {k: v for k, v in table().items() if k != "status"}),
        "the repository's 8-card table": ("check_rank_table", lambda: rank_table.load(TABLE_PATH)),
    }


WRONG = ["sums the rank ids", "right at 1 rank only", "last step's loss", "never resets", "appends every step",
         "integer rank ids", "integer server_count", "no status", "the repository's 8-card table"]


def reference_callback(nb):
    namespace = dict(nb)
    exec(cell(REFERENCE).split("\n\n\nfor number, check, answer in")[0], namespace)   # definitions only
    return namespace["EpochMeanLossSolution"]


@pytest.mark.parametrize("wrong", WRONG)
def test_a_wrong_answer_fails_with_a_hint(nb, wrong):
    answers = wrong_answers(nb["np"], reference_callback(nb))
    assert sorted(answers) == sorted(WRONG)
    check, answer = answers[wrong]
    with pytest.raises(AssertionError, match="Hint"):
        nb[check](answer)

"""Notebook 04's exercise checks accept the reference solutions and reject wrong answers.

The checks are read out of the notebook's cells and executed here, so what is tested is what a reader runs. In
the notebook they judge answers against finished runs (`scale_n`, `resumed`); here small stand-ins give them the
same facts. Exercises 3 and 4 train a small SimpleNet in this process, as they do in the notebook.
"""

import itertools
import json
import os
import statistics
import sys
from pathlib import Path

import pytest

from helpers.scripts import import_cells

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "04_network_and_training.ipynb"
EPOCHS, STEPS_PER_EPOCH = 3, 32
FAULT_STEP = (EPOCHS - 1) * STEPS_PER_EPOCH + STEPS_PER_EPOCH // 2   # as the notebook's section 5 sets it
MLP_BYTES = 4 * (1024 * 4096 + 4096 + 4096 * 1024 + 1024)


def cell(marker):
    """The one code cell of notebook 04 (not a %%writefile cell) whose source contains `marker`."""
    cells = json.loads(NOTEBOOK.read_text(encoding="utf-8"))["cells"]
    found = [source for source in ("".join(c["source"]) for c in cells if c["cell_type"] == "code")
             if marker in source and not source.startswith("%%")]
    assert len(found) == 1, f"{len(found)} code cells of {NOTEBOOK.name} contain {marker!r}"
    return found[0]


class Run:
    """A stand-in for a RunResult: the ranks and their metrics records."""

    def __init__(self, records):
        self.ranks, self._records = sorted(records), records

    def records(self, rank, kind):
        return [r for r in self._records[rank] if r["kind"] == kind]


@pytest.fixture(scope="module")
def nb(tmp_path_factory):
    """The notebook's namespace as its exercise cells see it: SimpleNet, make_arrays, the checks, the stubs.

    The cells become one module file, so that MindSpore's graph mode can read `SimpleNet.construct`'s source."""
    folder = tmp_path_factory.mktemp("nb04")
    counter = itertools.count()
    scaling = [{"kind": "scaling", "net": "mlp", "grad_bytes": MLP_BYTES},
               {"kind": "scaling", "net": "conv", "grad_bytes": 4 * 10_000}]
    stand_ins = {
        "os": os, "statistics": statistics, "DEVICE": "CPU", "BATCH": 32,
        "FAULT_STEP": FAULT_STEP, "steps_per_epoch": STEPS_PER_EPOCH,
        "new_run_dir": lambda name: folder / "runs" / f"{name}-{next(counter)}",
        "scale_n": Run({0: scaling, 1: scaling}),
        "resumed": Run({0: [{"kind": "step", "epoch": EPOCHS, "step": FAULT_STEP - STEPS_PER_EPOCH // 2 + 1}]}),
    }
    source = folder / "nb04_exercise_cells.py"
    module = import_cells(source, "\n\n".join(cell(marker) for marker in (
        "class SimpleNet(nn.Cell):", "def make_arrays(", "def train_demo(", "def check_mlp_gradient_bytes(",
        "def mlp_gradient_bytes():")) + "\n", **stand_ins)
    yield module.__dict__
    del sys.modules[source.stem]


def test_the_stubs_are_not_attempted_yet(nb):
    for check, stub in (("check_mlp_gradient_bytes", "mlp_gradient_bytes"),
                        ("check_resumed_after_epoch", "resumed_after_epoch"),
                        ("check_rank_checkpoint", "rank_checkpoint"), ("check_epoch_mean_loss", "EpochMeanLoss")):
        assert nb[check](nb[stub]) == "not attempted yet", check


def test_the_reference_solutions_are_correct(nb):
    exec(cell("# Reference solutions"), dict(nb))   # it asserts that each check says "correct"


def wrong_answers(ms):
    """(check, wrong answer): each answer is wrong in exactly one way, named in its comment."""

    def weights_only_bytes():   # forgets the biases
        return 4 * (1024 * 4096 + 4096 * 1024)

    def resumed_at_fault_epoch(fault_step, steps_per_epoch):   # the epoch the fault struck in
        return -(-fault_step // steps_per_epoch)

    def checkpoint(folder, rank, steps, keep):
        config = ms.CheckpointConfig(save_checkpoint_steps=steps, **({"keep_checkpoint_max": keep} if keep else {}))
        return ms.ModelCheckpoint(prefix="net", directory=folder, config=config)

    def shared_folder(folder, rank, steps_per_epoch, epochs):   # every rank writes into one folder
        return checkpoint(folder, rank, steps_per_epoch, epochs)

    def default_keep(folder, rank, steps_per_epoch, epochs):   # keeps only the last 5
        return checkpoint(os.path.join(folder, f"rank_{rank}", "ckpt"), rank, steps_per_epoch, None)

    def every_step(folder, rank, steps_per_epoch, epochs):   # saves every step
        return checkpoint(os.path.join(folder, f"rank_{rank}", "ckpt"), rank, 1, epochs * steps_per_epoch)

    class EpochMean(ms.Callback):   # a right answer, for the wrong ones below to differ from in one way
        def __init__(self):
            super().__init__()
            self.means, self.losses = [], []

        def on_train_step_end(self, run_context):
            self.losses.append(float(run_context.original_args().net_outputs.asnumpy()))

        def on_train_epoch_end(self, run_context):
            self.means.append(sum(self.losses) / len(self.losses))
            self.losses = []

    class LastStepLoss(EpochMean):   # one batch per epoch: the noisy comparison the notebook avoids
        def on_train_epoch_end(self, run_context):
            self.means.append(self.losses[-1])
            self.losses = []

    class OldNames(EpochMean):   # the article's deprecated method name
        def step_end(self, run_context):
            self.on_train_step_end(run_context)

    return EpochMean, {
        "forgets the biases": ("check_mlp_gradient_bytes", weights_only_bytes),
        "the epoch of the fault": ("check_resumed_after_epoch", resumed_at_fault_epoch),
        "one folder for all ranks": ("check_rank_checkpoint", shared_folder),
        "keeps only 5": ("check_rank_checkpoint", default_keep),
        "saves every step": ("check_rank_checkpoint", every_step),
        "last step's loss": ("check_epoch_mean_loss", LastStepLoss),
        "deprecated step_end": ("check_epoch_mean_loss", OldNames),
    }


WRONG = ["forgets the biases", "the epoch of the fault", "one folder for all ranks", "keeps only 5",
         "saves every step", "last step's loss", "deprecated step_end"]


@pytest.mark.parametrize("wrong", WRONG)
def test_a_wrong_answer_fails_with_a_hint(nb, wrong):
    _, answers = wrong_answers(nb["ms"])
    check, answer = answers[wrong]
    with pytest.raises(AssertionError, match="Hint|hint"):
        nb[check](answer)


def test_the_right_callback_the_wrong_ones_differ_from_is_accepted(nb):
    right, answers = wrong_answers(nb["ms"])
    assert sorted(answers) == sorted(WRONG)
    assert nb["check_epoch_mean_loss"](right) == "correct"

"""Notebook 05's exercise checks: they accept the reference solutions and reject wrong answers.

The checks, the reference solutions and what they need (configuration, networks, float16 helpers,
training helpers) are read out of the notebook's cells, found by a line each starts with, and written
to one module file: MindSpore compiles a network from its source file, so the cells must be on disk.
Everything runs in this process on CPU (a few graph compilations and short trainings).
"""

import os
import sys
from pathlib import Path

import pytest

from helpers.scripts import code_cell, import_cells

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "05_mixed_precision.ipynb"

# (what the cell starts with, what it is); in the notebook's order
CELLS = [
    ("%matplotlib inline", "configuration"),
    ("class SimpleNet(nn.Cell):", "networks, data, one batch"),
    ("def limits(", "float16 / bfloat16 helpers"),
    ("def snapshot(", "in-process training helpers"),
    ("def smallest_scale_for(gradient):", "the reader's stubs"),
    ("# The checks of the four exercises (1 and 2).", "checks 1 and 2"),
    ("# The checks of the four exercises (3 and 4).", "checks 3 and 4"),
    ("# Reference solutions, run through the same checks.", "reference solutions"),
]

HEADER = '''
import inspect
import os
import statistics
import time

import mindspore as ms
import mindspore.dataset as ds
import numpy as np
from mindspore import amp, nn, ops

from helpers import amp_inspect as ai

'''

SETUP = '''
ms.set_context(mode=ms.GRAPH_MODE)
try:
    ms.set_device(DEVICE)
except RuntimeError:   # the device can only be chosen once per process
    pass
SCRATCH = {scratch!r}
FP16, FP32 = {{"Float16"}}, {{"Float32"}}
'''


def cell_source(start: str) -> str:
    return code_cell(NOTEBOOK, start).replace("%matplotlib inline\n", "")


@pytest.fixture(scope="module")
def nb(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nb05")
    parts = [HEADER]
    for start, what in CELLS:
        parts.append(f"# --- {what}\n{cell_source(start)}\n")
        if what == "configuration":
            parts.append(SETUP.format(scratch=str(folder / "scratch")))
    parts.append('\nfp32_losses, _, _ = train_in_process("O0", None, 1.0)\n')   # what check 2 compares with
    path = folder / "nb05_exercises.py"
    (folder / "scratch").mkdir()
    here = os.getcwd()
    os.chdir(folder)   # the configuration cell makes ./scripts
    try:
        module = import_cells(path, "\n".join(parts))
    finally:
        os.chdir(here)
    yield module
    sys.modules.pop("nb05_exercises", None)


def test_stubs_are_not_attempted_yet(nb):
    assert nb.check_smallest_scale(nb.smallest_scale_for) == "not attempted yet"
    assert nb.check_fixed_scale_model(nb.fixed_scale_model) == "not attempted yet"
    assert nb.check_layer_norm(nb.layer_norm_net, nb.level_for_layer_norm) == "not attempted yet"
    assert nb.check_dynamic_scales(nb.dynamic_scales) == "not attempted yet"


def test_reference_solutions_pass(nb):
    assert nb.check_smallest_scale(nb.smallest_scale_for_solution) == "correct"
    assert nb.check_fixed_scale_model(nb.fixed_scale_model_solution) == "correct"
    assert nb.check_layer_norm(nb.LayerNormNet, lambda: "O2") == "correct"
    assert nb.check_layer_norm(nb.LayerNormNet, lambda: "auto") == "correct"
    assert nb.check_dynamic_scales(nb.dynamic_scales_solution) == "correct"


def unscaled_optimizer(nb):   # the article's second bug: the optimizer divides by 1
    def answer(net, loss_fn, scale):
        optimizer = nb.nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
        return nb.ms.Model(net, loss_fn, optimizer, amp_level="O2",
                           loss_scale_manager=nb.ms.FixedLossScaleManager(scale, drop_overflow_update=False))
    return answer


def dropping_manager(nb):   # refused on CPU; on Ascend the scale is divided out twice
    def answer(net, loss_fn, scale):
        optimizer = nb.nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9, loss_scale=scale)
        return nb.ms.Model(net, loss_fn, optimizer, amp_level="O2",
                           loss_scale_manager=nb.ms.FixedLossScaleManager(scale))
    return answer


def old_net_optimizer(nb):   # the article's first bug: the optimizer of another network
    def answer(net, loss_fn, scale):
        optimizer = nb.nn.Momentum(nb.SimpleNet().trainable_params(), learning_rate=0.05, momentum=0.9,
                                   loss_scale=scale)
        return nb.ms.Model(net, loss_fn, optimizer, amp_level="O2",
                           loss_scale_manager=nb.ms.FixedLossScaleManager(scale, drop_overflow_update=False))
    return answer


def never_grows(overflows, init, factor, window):   # forgets the window
    scale, used = init, []
    for overflow in overflows:
        used.append(scale)
        scale = scale / factor if overflow else scale
    return used


WRONG_ANSWERS = {
    "smallest scale: the article's 1024": lambda nb: nb.check_smallest_scale(lambda g: 1024.0),
    "smallest scale: 2^40, too large": lambda nb: nb.check_smallest_scale(lambda g: 2.0**40),
    "fixed scale: optimizer without loss_scale": lambda nb: nb.check_fixed_scale_model(unscaled_optimizer(nb)),
    "fixed scale: manager that drops overflowed updates": lambda nb: nb.check_fixed_scale_model(dropping_manager(nb)),
    "fixed scale: optimizer of another net": lambda nb: nb.check_fixed_scale_model(old_net_optimizer(nb)),
    "layer norm: SimpleNet has none": lambda nb: nb.check_layer_norm(nb.SimpleNet, lambda: "O2"),
    "layer norm: O3 casts it too": lambda nb: nb.check_layer_norm(nb.LayerNormNet, lambda: "O3"),
    "dynamic scales: never grows": lambda nb: nb.check_dynamic_scales(never_grows),
}


@pytest.mark.parametrize("name", list(WRONG_ANSWERS))
def test_checks_reject_wrong_answers(nb, name):
    with pytest.raises(AssertionError, match="Hint|not an AMP level|you said"):
        WRONG_ANSWERS[name](nb)

"""The language-model track (notebooks 11 on) updates its weights with MindSpore's optimizers, never by hand in NumPy.

A hand-written optimizer shows in its arithmetic: a moment decayed by a beta or a momentum (`beta1 * m + (1 - beta1)
* g`), or a step of a learning rate (`w - lr * update`). Every worker script of notebooks 11 on is read (its AST, as
helpers.scripts gives the source a reader sees) for such arithmetic; a learning rate or betas handed to an optimizer
as arguments (`AdamW(params, lr=args.lr)`) is no arithmetic. Notebook 09's ZeRO by hand keeps its NumPy Adam on
purpose (it shows what ZeRO shards), and serves as the negative control, with notebook 16's NumPy Adam as it was before
notebook 17's train_hf.py took notebook 12's zero.py.
"""

import ast
import re

import pytest

from helpers.scripts import all_scripts

SCRIPTS = all_scripts()
TRACK = sorted(key for key in SCRIPTS if int(key[0][:2]) >= 11)
OPTIMIZER_WORDS = re.compile(r"beta|momentum|^lr$|^lr_t$|learning_rate", re.IGNORECASE)
NUMPY_ADAM_OF_16 = '''
def adam(q, name, g, step):
    m, v = f"adam.m.{name}", f"adam.v.{name}"
    moments[m] = BETA1 * moments[m] + (1 - BETA1) * g
    moments[v] = BETA2 * moments[v] + (1 - BETA2) * g * g
    update = args.lr * (moments[m] / (1 - BETA1 ** step)) / (np.sqrt(moments[v] / (1 - BETA2 ** step)) + EPS)
    ops.assign(q, Tensor(q.asnumpy() - update))
'''


def optimizer_arithmetic(source: str) -> list[int]:
    """The lines where arithmetic uses a beta, a momentum or a learning rate: an optimizer written by hand."""
    lines = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.BinOp):
            continue
        for operand in ast.walk(node):
            name = operand.id if isinstance(operand, ast.Name) else operand.attr if isinstance(
                operand, ast.Attribute) else None
            if name and OPTIMIZER_WORDS.search(name):
                lines.add(node.lineno)
    return sorted(lines)


def test_the_track_has_scripts():
    assert {"scripts/train_3d.py", "scripts/train_hf.py", "scripts/zero.py"} <= {name for _, name in TRACK}


@pytest.mark.parametrize("key", TRACK, ids=lambda k: f"{k[0][:2]}-{k[1].removeprefix('scripts/')}")
def test_no_numpy_optimizer_in_the_language_model_track(key):
    lines = optimizer_arithmetic(SCRIPTS[key])
    assert not lines, (f"{key[0]}, {key[1]}, lines {lines}: an optimizer written by hand (a beta, a momentum or a "
                       "learning rate in arithmetic). Fix: MindSpore's optimizer on the card, as notebook 12's zero.py "
                       "runs mindspore.experimental.optim.AdamW")


def test_the_guard_finds_a_numpy_optimizer():
    zero_by_hand = SCRIPTS[("09_memory_per_card.ipynb", "scripts/zero_by_hand.py")]
    assert optimizer_arithmetic(zero_by_hand), "notebook 09's NumPy Adam (kept on purpose) is found"
    assert len(optimizer_arithmetic(NUMPY_ADAM_OF_16)) == 3, "notebook 16's old NumPy Adam is found, line by line"
    assert optimizer_arithmetic("opt = AdamW(params, lr=args.lr, betas=(0.9, 0.999))\n") == [], "arguments are no sum"

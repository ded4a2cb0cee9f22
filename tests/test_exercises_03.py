"""Notebook 03's exercise checks accept the reference solutions and reject wrong answers, each with its hint.

The checks, the reference solutions and the notebook functions they use (`make_arrays`, `first_error`,
`shard_ids`, `epoch_of`, `coverage`) are read out of the notebook's cells, so what is tested is exactly what a
reader runs. The notebook itself only runs the reader's answers and the reference solutions through the checks.
"""

import ast

import mindspore.dataset as ds
import numpy as np
import pytest

from helpers import scripts
from helpers.scripts import NOTEBOOKS

NOTEBOOK = NOTEBOOKS / "03_data_sharding.ipynb"
SEED = 0   # the notebook's default dataset seed


def code_cell(marker):
    return scripts.code_cell(NOTEBOOK, marker)


def definitions(source):
    """Only the functions and classes a cell defines, without the demonstration it then runs."""
    tree = ast.parse(source)
    tree.body = [node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))]
    return compile(tree, NOTEBOOK.name, "exec")


@pytest.fixture(scope="module")
def notebook():
    namespace = {"ds": ds, "np": np, "SEED": SEED}
    for marker in ("def make_arrays(", "class IndexSource:", "def coverage("):
        exec(definitions(code_cell(marker)), namespace)
    exec(code_cell("# The exercises' checkers"), namespace)
    exec(code_cell("# Reference solutions"), namespace)   # the cell asserts that every solution is "correct"
    yield namespace
    ds.config.set_seed(SEED)


@pytest.mark.parametrize("check, solution", [("check_epoch_plan", "epoch_plan_solution"),
                                             ("check_my_shard", "my_shard_solution"),
                                             ("check_padding_ids", "padding_ids_solution")])
def test_accepts_the_reference_solution(notebook, check, solution):
    assert notebook[check](notebook[solution]) == "correct"


@pytest.mark.parametrize("check", ["check_epoch_plan", "check_my_shard", "check_padding_ids"])
def test_a_stub_is_not_attempted_yet(notebook, check):
    def stub(*args):
        raise NotImplementedError

    assert notebook[check](stub) == "not attempted yet"
    assert notebook[check](lambda *args: None) == "not attempted yet"


def wrong_answers(nb):
    """(check, wrong answer, a word its hint must contain): the mistakes the notebook's sections reproduce."""
    def floor_rows(num_samples, ranks, batch):   # forgets the padding
        return {**nb["epoch_plan_solution"](num_samples, ranks, batch), "rows_per_rank": num_samples // ranks}

    def per_rank_batch(num_samples, ranks, batch):   # confuses the global batch with the per-rank one
        return {**nb["epoch_plan_solution"](num_samples, ranks, batch), "global_batch": batch}

    def article_shard(data, label, rank, world):   # the article's tuple source
        return ds.GeneratorDataset(source=(data, label), column_names=["data", "label"], num_shards=world,
                                   shard_id=rank)

    def unsharded(data, label, rank, world):   # every rank reads everything
        return ds.NumpySlicesDataset({"data": data, "label": label}, shuffle=True)

    def seed_per_rank(data, label, rank, world):   # what ms.set_seed(rank) does
        ds.config.set_seed(rank)
        return nb["my_shard_solution"](data, label, rank, world)

    def unshuffled(data, label, rank, world):   # sharded, but not shuffled
        return ds.NumpySlicesDataset({"data": data, "label": label}, shuffle=False, num_shards=world, shard_id=rank)

    def last_ids(num_samples, num_shards):   # the padding is at the end, not at the start
        return list(range(num_samples - (-num_samples % num_shards), num_samples))

    return {"floor_rows": ("check_epoch_plan", floor_rows, "ceil"),
            "per_rank_batch": ("check_epoch_plan", per_rank_batch, "every rank"),
            "article_shard": ("check_my_shard", article_shard, "row by row"),
            "unsharded": ("check_my_shard", unsharded, "num_shards=world"),
            "seed_per_rank": ("check_my_shard", seed_per_rank, "per-rank seed"),
            "unshuffled": ("check_my_shard", unshuffled, "shuffle=True"),
            "last_ids": ("check_padding_ids", last_ids, "wraps around")}


@pytest.mark.parametrize("name", ["floor_rows", "per_rank_batch", "article_shard", "unsharded", "seed_per_rank",
                                  "unshuffled", "last_ids"])
def test_rejects_a_wrong_answer_with_its_hint(notebook, name):
    check, answer, hint = wrong_answers(notebook)[name]
    with pytest.raises(AssertionError, match=hint):
        notebook[check](answer)
    ds.config.set_seed(SEED)

"""Notebook 06's exercise checks accept right answers and reject wrong ones.

The checks, the stubs and the reference solutions are read out of the notebook's cells (found by their first
line) and run here, so what is tested is what a reader runs. In the notebook the checks judge answers against
section 1's dry runs (`ascend_plan`) and section 3's two-node run (`finals`); here stand-ins give them the same
facts, which the notebook asserts, for 1, 2 and 4 ranks per "node".
"""


import pytest

from helpers import rank_table
from helpers.layout import StrategyError
from helpers.scripts import NOTEBOOKS, code_cell

NOTEBOOK = NOTEBOOKS / "06_multi_node_and_troubleshooting.ipynb"
CARDS_PER_NODE = 8

# The cells, by the line each starts with, in the notebook's order.
CELLS = ("from mindspore.parallel.cluster import run as msrun_cli",   # msrun_options(): msrun's own parser
         "def check(name, test, answer):",
         "def numbering(", "def test_numbering(rule):",
         "three = {", "def test_cluster_table(build):",
         "NODE1_MSRUN = None", "import shlex",
         "from mindspore import ops\n\nMATMUL_TP_IN_NODE = None", "from helpers.layout import matmul_layout")
SOLUTIONS = ("def numbering_solution(", "def cluster_table_solution(", "NODE1_MSRUN_SOLUTION = (",
             "MATMUL_TP_IN_NODE_SOLUTION =")
STUBS = {"exercise 1": ("test_numbering", "numbering"), "exercise 2": ("test_cluster_table", "cluster_table"),
         "exercise 3": ("test_node1_msrun", "NODE1_MSRUN"), "exercise 4": ("test_tp_in_node", "MATMUL_TP_IN_NODE")}


def cell(start):
    return code_cell(NOTEBOOK, start)


def stand_ins(local_workers):
    """What sections 1 and 3 leave in the kernel, as the notebook asserts it: msrun's plan for 2 nodes x 8 cards
    (rank, RANK_ID, DEVICE_ID), and the two-node run's per-rank records."""
    ascend_plan = {node: [(node * CARDS_PER_NODE + k, node * CARDS_PER_NODE + k, k) for k in range(CARDS_PER_NODE)]
                   for node in range(2)}
    finals = {rank: {"RANK_ID": str(rank), "DEVICE_ID": str(rank % local_workers)} for rank in range(2 * local_workers)}
    return {"CARDS_PER_NODE": CARDS_PER_NODE, "LOCAL_WORKERS": local_workers, "ascend_plan": ascend_plan,
            "finals": finals, "rank_table": rank_table}


@pytest.fixture(params=[1, 2, 4], ids=lambda m: f"{m}-per-node")
def nb(request, capsys):
    """The exercise cells run in order, as in the notebook: each check cell reports its untouched stub."""
    namespace = {"sys": __import__("sys"), **stand_ins(request.param)}
    for start in CELLS:
        exec(cell(start), namespace)
    namespace["stub_report"] = capsys.readouterr().out
    return namespace


def test_the_stubs_are_not_attempted_yet(nb):
    for name, (test, stub) in STUBS.items():
        assert f"{name}: not attempted yet" in nb["stub_report"], name
        assert nb["check"](name, nb[test], nb[stub]) is False


def test_the_reference_solutions_are_correct(nb, capsys):
    for start in SOLUTIONS:
        exec(cell(start), nb)   # each cell asserts that its check says "correct"
    assert capsys.readouterr().out.count("(reference solution): correct") == 4


# Right answers written otherwise than the reference solutions, as readers write them.
RIGHT = {
    "exercise 1": lambda node, k, local: (local * node + k, k),
    "exercise 2": lambda tables: rank_table.merge([tables["192.0.2.10"], tables["192.0.2.11"], tables["192.0.2.9"]]),
    "exercise 3": "msrun --node_rank=1 --master_addr=192.0.2.10 --master_port 8118 \\\n"
                  "      --worker_num=16 --local_worker_num=8 --join=True --log_dir=msrun_log \\\n"
                  "      scripts/multinode_train.py",
}


@pytest.mark.parametrize("name", sorted(RIGHT))
def test_a_right_answer_in_other_words_is_correct(nb, name):
    test, _ = STUBS[name]
    assert nb["check"](name, nb[test], RIGHT[name]) is True


def test_a_right_strategy_is_correct(nb):
    assert nb["check"]("exercise 4", nb["test_tp_in_node"], nb["ops"].MatMul().shard(((2, 1), (1, 2)))) is True


# Node 1's command, right: the wrong answers below each change one thing in it.
NODE1 = ("msrun --worker_num=16 --local_worker_num=8 --master_addr=192.0.2.10 --master_port=8118 --node_rank=1 "
         "--log_dir=msrun_log --join=True scripts/multinode_train.py")

# (exercise, wrong answer): each wrong in one way, named by its key.
WRONG = {
    "global card ids": ("exercise 1", lambda node, k, local: (node * local + k, node * local + k)),
    "ranks start at 0 on every node": ("exercise 1", lambda node, k, local: (k, k)),
    "ranks interleaved over the nodes": ("exercise 1", lambda node, k, local: (2 * k + node, k)),
    "numeric order of the IPs": ("exercise 2", lambda tables: rank_table.merge(list(tables.values()))),
    "one node's table": ("exercise 2", lambda tables: tables["192.0.2.9"]),
    "glued, not renumbered": ("exercise 2", lambda tables: {
        **tables["192.0.2.10"], "server_count": "3",
        "server_list": [s for ip in sorted(tables) for s in tables[ip]["server_list"]]}),
    "this node's ranks as the job": ("exercise 3", NODE1.replace("--worker_num=16", "--worker_num=8")),
    "no --join": ("exercise 3", NODE1.replace(" --join=True", "")),
    "its own address as master": ("exercise 3", NODE1.replace("192.0.2.10", "192.0.2.11")),
    "no --node_rank": ("exercise 3", NODE1.replace(" --node_rank=1", "")),
    "hyphens for underscores": ("exercise 3", NODE1.replace("_num", "-num").replace("_rank", "-rank")),
    "python -m instead of msrun": ("exercise 3", NODE1.replace("msrun", "python -m mindspore.parallel.cluster.run")),
    "W split 4 ways": ("exercise 4", ((1, 1), (1, 4))),
    "data parallel only": ("exercise 4", ((4, 1), (1, 1))),
    "tensor parallel across the nodes": ("exercise 4", ((1, 1), (1, 2))),
    "the contraction split": ("exercise 4", ((1, 2), (2, 1))),
    "x and W disagree": ("exercise 4", ((2, 1), (2, 1))),
}


@pytest.mark.parametrize("wrong", sorted(WRONG))
def test_a_wrong_answer_is_rejected(nb, wrong, capsys):
    name, answer = WRONG[wrong]
    if name == "exercise 4":
        answer = nb["ops"].MatMul().shard(answer)
    test, _ = STUBS[name]
    with pytest.raises((AssertionError, StrategyError)) as rejected:
        nb["check"](name, nb[test], answer)
    assert str(rejected.value), "the check says why"
    assert f"{name}: correct" not in capsys.readouterr().out

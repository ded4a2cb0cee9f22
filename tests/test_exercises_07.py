"""Notebook 07's exercise checks: they accept the reference solutions and reject wrong answers.

The notebook's own cells, found by a line each starts with, build what the checks need: the
configuration, a real launch of tp_checkpoint.py (read out of the notebook) that saves one slice per
rank, the strategy file, the merged checkpoint, a one-card SimpleNet and the old job's losses.
"""

import os
from pathlib import Path

import pytest

from helpers.scripts import code_cell, write_script

pytestmark = pytest.mark.launch

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "07_checkpoints_across_strategies.ipynb"

# what each cell starts with, in the notebook's order (the old job's losses are read in between)
CELLS = ["%matplotlib inline", "import dataclasses", "COMMON = (", "slices = {}", "def simplenet_layouts(",
         "merged_dir = old.run_dir", "class SimpleNet(nn.Cell):", "OLD_AFTER",
         "rng = np.random.default_rng(SEED)   # the data of tp_checkpoint.py",
         "def reshard_2x2(src_dir, src_strategy, dst_dir):", "# The checks of the two exercises.",
         "# Reference solutions, run through the same checks."]
OLD_AFTER = 'old_after = [r for r in old.records(0, "step") if r["step"] > STEPS]   # as section 3 reads them\n'


def cell_source(start: str) -> str:
    return code_cell(NOTEBOOK, start)


def set_device_once(ms, target):
    try:
        ms.set_device(target)
    except RuntimeError:   # the device can only be chosen once per process
        pass


@pytest.fixture(scope="module")
def nb(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nb07")
    write_script(NOTEBOOK, "scripts/tp_checkpoint.py", folder / "scripts")
    namespace = {"__name__": "nb07_exercises", "set_device_once": set_device_once}
    here = os.getcwd()
    os.chdir(folder)   # the launch cell runs scripts/tp_checkpoint.py from here
    try:
        for start in CELLS:
            source = OLD_AFTER if start == "OLD_AFTER" else cell_source(start)
            source = source.replace("%matplotlib inline\n", "").replace('ms.set_device("CPU")',
                                                                        'set_device_once(ms, "CPU")')
            exec(compile(source, f"{NOTEBOOK.name}: {start}", "exec"), namespace)
    finally:
        os.chdir(here)
    return namespace


def test_stubs_are_not_attempted_yet(nb):
    assert nb["check_reshard_2x2"](nb["reshard_2x2"]) == "not attempted yet"
    assert nb["check_one_card_resume"](nb["one_card_resume"]) == "not attempted yet"


def test_reference_solutions_pass(nb):
    assert nb["check_reshard_2x2"](nb["reshard_2x2_solution"]) == "correct"
    assert nb["check_one_card_resume"](nb["one_card_resume_solution"]) == "correct"


def reshard_4_way(nb):   # 4 model-parallel ways instead of 2 x 2
    def reshard_4_way(src_dir, src_strategy, dst_dir):
        nb["ms"].transform_checkpoints(src_dir, dst_dir, "simplenet_", src_strategy, str(nb["write_strategy_file"](
            Path(dst_dir) / "strategy_4.json", nb["simplenet_layouts"](4))))
        return dst_dir
    return reshard_4_way


def merge_instead(nb):   # no destination strategy: one full checkpoint
    def merge_instead(src_dir, src_strategy, dst_dir):
        nb["ms"].transform_checkpoints(src_dir, dst_dir, "simplenet_", src_strategy, None)
        return dst_dir
    return merge_instead


def weights_only_resume(nb):   # loads the network only: a fresh optimizer
    def answer(merged_file):
        net = nb["SimpleNet"]()
        nb["ms"].load_param_into_net(net, nb["ms"].load_checkpoint(merged_file))
        return net, nb["nn"].Momentum(net.trainable_params(), learning_rate=nb["LR"], momentum=nb["MOMENTUM"])
    return answer


def step_only_resume(nb):   # sets the step counter by hand, still no momentum
    def answer(merged_file):
        net, optimizer = weights_only_resume(nb)(merged_file)
        optimizer.global_step.set_data(nb["Tensor"](nb["np"].array([nb["STEPS"]], nb["np"].int32)))
        return net, optimizer
    return answer


WRONG_ANSWERS = {
    "reshard: 4 model-parallel ways": ("check_reshard_2x2", reshard_4_way),
    "reshard: a merge instead": ("check_reshard_2x2", merge_instead),
    "resume: the network only": ("check_one_card_resume", weights_only_resume),
    "resume: the step counter set by hand, no momentum": ("check_one_card_resume", step_only_resume),
}


@pytest.mark.parametrize("name", list(WRONG_ANSWERS))
def test_checks_reject_wrong_answers(nb, name):
    check, wrong = WRONG_ANSWERS[name]
    with pytest.raises(AssertionError, match="Hint"):
        nb[check](wrong(nb))

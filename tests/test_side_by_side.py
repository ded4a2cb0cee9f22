"""Two readers on one machine: two notebooks executed at the same moment both pass (issue 25).

Every launch has its own run folder and a free port, so nothing they write or listen on collides.
"""

import subprocess
import sys

import pytest

from helpers.launcher import PROJECT_ROOT

pytestmark = pytest.mark.launch
SIDE_BY_SIDE = ("03_data_sharding.ipynb", "08_dynamic_graph_path.ipynb")   # two short ones that launch jobs


def test_two_notebooks_at_once():
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", "--nbmake",
               "--nbmake-timeout=600"]
    runs = [subprocess.Popen([*command, f"notebooks/{name}"], cwd=PROJECT_ROOT, text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT) for name in SIDE_BY_SIDE]
    outputs = [run.communicate(timeout=900)[0] for run in runs]
    for name, run, output in zip(SIDE_BY_SIDE, runs, outputs):
        assert run.returncode == 0, f"{name} failed beside the other:\n{output[-3000:]}"

"""Every script a notebook launches is plain MindSpore and runs under bare msrun.

The scripts are read from the notebooks' `%%writefile` cells (helpers.scripts), so what is tested
is exactly what a reader sees. Each runs under `msrun` itself (not the series'
launcher) with 2 CPU workers, in an empty folder, as a reader would run it by hand: with no arguments, or, for the
training scripts its notebook already runs with its defaults through the launcher (and checks there), with its
defaults and fewer steps (SHORT_RUN).
"""

import ast
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from bare_msrun import write_scripts

from helpers.ports import free_port
from helpers.scripts import NOTEBOOKS, all_scripts, borrowed_scripts, notebook_scripts, other_cells

SCRIPTS = all_scripts()
ALLOWED_TOP_LEVEL = {"mindspore", "numpy"} | set(sys.stdlib_module_names)

# Scripts run once before a job with plain python, never by msrun, and what each may import beyond a worker's:
# notebook 16's tokens.py tokenizes the corpus with the model's own tokenizer (Hugging Face's `tokenizers`), as
# Megatron-LM's tools/preprocess_data.py does, so that the training job reads ids and needs no tokenizer.
PREPARATION = {"tokens.py": {"tokenizers"}}

# Scripts that need Ascend: on CPU each must stop at once with a message that names the limit.
ASCEND_ONLY = {
    "semi_auto_parallel.py": "needs Ascend",
    "semi_auto_checkpoint.py": "needs Ascend",
    "optimizer_parallel.py": "needs Ascend",
    "static_pipeline.py": "static_pipeline.py needs Ascend",
}

# Training scripts whose notebook launches them with their default arguments at 2 ranks (CI's English book) and
# checks what they train: under bare msrun they run every default (modes, algorithms, layouts) for fewer
# steps. Each step runs the same code; the claim here is only that the script runs unchanged under msrun.
SHORT_RUN = {
    "train_gpt.py": ("--steps", "2"),     # notebook 11: the same modes, 30 steps, through the launcher
    "train_3d.py": ("--steps", "2"),      # notebook 12: every layout, 8 steps
    "train_moe.py": ("--steps", "2"),     # notebook 13: 30 steps
    "train_cp.py": ("--steps", "2"),      # notebook 14: every algorithm, 6 steps
}


def imported_modules(source: str) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            modules.add(node.module.split(".")[0])
    return modules


def siblings(notebook: str) -> set[str]:
    """Module names of the scripts `notebook` writes or copies from another notebook: its scripts may import these
    (notebook 11's train_gpt.py imports gpt.py, as a project's train.py imports its model.py; notebook 12 copies
    that gpt.py)."""
    return {Path(name).stem for nb, name in SCRIPTS if nb == notebook} | {
        Path(name).stem for name in borrowed_scripts(notebook)}


# A module that scripts import (its notebook's, or a later notebook's that copies it: notebook 16's hf.py is imported by
# notebook 17's train_hf.py) is tested through them, not launched on its own.
IMPORTED = {stem for source in SCRIPTS.values() for stem in imported_modules(source)}
MODULES = {(nb, name) for nb, name in SCRIPTS if Path(name).stem in IMPORTED}
LAUNCHED = sorted(key for key in set(SCRIPTS) - MODULES if Path(key[1]).name not in PREPARATION)


def test_a_script_written_in_pieces_is_read_back_whole(tmp_path):
    def cell(source):
        return {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None, "source": source}

    notebook = tmp_path / "nb.ipynb"
    pieces = ["%%writefile scripts/a.py\nx = 1", "print('prose cells and other code are skipped')",
              "%%writefile -a scripts/a.py\n\n\ny = 2\n", "%%writefile scripts/b.py\nz = 3"]
    notebook.write_text(json.dumps({"cells": [cell(p) for p in pieces]}), encoding="utf-8")
    assert notebook_scripts(notebook) == {"scripts/a.py": "x = 1\n\n\ny = 2\n", "scripts/b.py": "z = 3\n"}
    notebook.write_text(json.dumps({"cells": [cell("%%writefile -a scripts/c.py\nx = 1")]}), encoding="utf-8")
    with pytest.raises(ValueError, match="appends to scripts/c.py before writing it"):
        notebook_scripts(notebook)


def test_the_notebooks_show_their_scripts():
    assert len(SCRIPTS) >= 1
    assert all(name.startswith("scripts/") and name.endswith(".py") for _, name in SCRIPTS), \
        "every script is written into notebooks/scripts/ (ignored by git)"


def test_every_short_run_names_a_launched_script():
    assert set(SHORT_RUN) <= {Path(name).name for _, name in LAUNCHED}, "a renamed script would run in full"


# A script of a later notebook that an earlier one's script imports only when its config asks: notebook 11's gpt.py
# builds notebook 13's MoE layer for a config with experts (Qwen3-MoE, Mixtral), so the one layer serves both; the
# import runs inside Block, never for notebook 11's own model. Every notebook that copies gpt.py and builds a model
# with experts copies moe.py beside it (the test after next).
LATER = {("11_gpt_tensor_parallel.ipynb", "scripts/gpt.py"): {"moe": ("13_mixture_of_experts.ipynb", "scripts/moe.py")}}


@pytest.mark.parametrize("key", sorted(SCRIPTS), ids=lambda k: f"{k[0][:2]}-{Path(k[1]).name}")
def test_scripts_import_only_mindspore_numpy_and_the_standard_library(key):
    outside = (imported_modules(SCRIPTS[key]) - ALLOWED_TOP_LEVEL - siblings(key[0]) - set(LATER.get(key, {}))
               - PREPARATION.get(Path(key[1]).name, set()))
    assert not outside, (f"{key[1]} imports {sorted(outside)}: a worker script may use only mindspore, numpy, "
                         "the standard library and the other scripts its notebook shows")


def test_a_later_script_is_imported_only_inside_a_function():
    """gpt.py's import of moe.py is not at the top of the file: notebook 11 runs gpt.py without moe.py beside it."""
    for key, later in LATER.items():
        tree = ast.parse(SCRIPTS[key])
        top = {alias.name.split(".")[0] for node in tree.body if isinstance(node, ast.Import) for alias in node.names}
        top |= {node.module.split(".")[0] for node in tree.body if isinstance(node, ast.ImportFrom) and node.module}
        assert not top & set(later), f"{key[1]} imports {sorted(top & set(later))} at its top"
        assert set(later) <= imported_modules(SCRIPTS[key]), f"{key[1]} no longer imports {sorted(later)}: update LATER"
        assert all(where in SCRIPTS for where in later.values())


def test_a_notebook_that_builds_experts_copies_moe_py():
    """A notebook that copies gpt.py and loads a model with experts (a Hugging Face mixture of experts, or notebook
    13's own) has moe.py beside it."""
    for notebook in sorted({nb for nb, _ in SCRIPTS} | {p.name for p in NOTEBOOKS.glob("*.ipynb")}):
        sources = "\n".join(other_cells(notebook))
        copies = borrowed_scripts(notebook)
        if "scripts/gpt.py" in copies and ("qwen3_moe" in sources or "mixtral" in sources or "experts" in sources):
            assert "scripts/moe.py" in copies or (notebook, "scripts/moe.py") in SCRIPTS, notebook


def bare_msrun(key, folder):
    """Run the script `key` names with its defaults under msrun itself, 2 CPU workers, in `folder`; return msrun's
    CompletedProcess and the workers' logs."""
    write_scripts(key[0], folder)   # the script and the files it may import
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TUTORIAL_", "MS_", "RANK_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"  # msrun starts `python`
    env["ONEDNN_MAX_CPU_ISA"] = "AVX2"  # what the launcher sets on CPU: oneDNN's fast conv kernel here
    name = Path(key[1]).name
    command = [sys.executable, "-m", "mindspore.parallel.cluster.run", "--worker_num=2", "--local_worker_num=2",
               f"--master_port={free_port()}", f"--log_dir={folder / 'logs'}", "--join=True",
               "--cluster_time_out=90", name, *SHORT_RUN.get(name, ())]
    result = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=400)
    logs = "\n".join(f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}"
                     for p in sorted((folder / "logs").glob("worker_*.log")))
    return result, logs


@pytest.fixture(scope="module")
def bare_runs(request, tmp_path_factory):
    """The selected scripts' bare-msrun runs, two at a time in the order pytest runs them: each job spends much of its
    time waiting (the cluster forming, msrun's 5 s sign-off checks), so two side by side share the cores (as
    test_side_by_side's jobs do) and the file takes about half as long. {key: Future of bare_msrun's result}."""
    keys = [item.callspec.params["key"] for item in request.session.items
            if getattr(item, "originalname", "") == "test_script_runs_under_bare_msrun"]
    pool = ThreadPoolExecutor(max_workers=2)
    try:
        yield {key: pool.submit(bare_msrun, key, tmp_path_factory.mktemp(Path(key[1]).stem)) for key in keys}
    finally:
        pool.shutdown(cancel_futures=True)   # after a failure with -x, the runs not started yet are not started


@pytest.mark.launch
@pytest.mark.parametrize("key", LAUNCHED, ids=lambda k: f"{k[0][:2]}-{Path(k[1]).name}")
def test_script_runs_under_bare_msrun(key, bare_runs):
    result, logs = bare_runs[key].result()
    name = Path(key[1]).name
    if name in ASCEND_ONLY:
        assert result.returncode != 0
        assert ASCEND_ONLY[name] in logs, logs
        assert "Traceback" not in logs, "the limit is named, not a stack trace"
    else:
        assert result.returncode == 0, f"msrun exit code {result.returncode}\n{result.stdout[-2000:]}\n{logs}"


def test_a_preparation_script_runs_with_plain_python(tmp_path):
    """tokens.py, as notebook 17 runs it before its job: a model folder in, the corpus's ids out; wrong arguments
    and a folder without tokenizer.json stop with one line, not a stack trace."""
    write_scripts("16_your_model.ipynb", tmp_path)
    fixture = Path(__file__).resolve().parent / "data" / "hf" / "qwen2_tied"
    run = [sys.executable, "tokens.py"]
    done = subprocess.run([*run, str(fixture), "ids.npy"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "end-of-text id 0" in done.stdout, done.stderr[-2000:]
    import numpy as np
    ids = np.load(tmp_path / "ids.npy")
    assert ids.dtype == np.int32 and ids.max() < 300 and (ids == 0).sum() >= 1
    for args, reason in (([], "usage: python tokens.py MODEL_DIR tokens.npy"),
                         ([str(tmp_path), "x.npy"], "tokenizer.json: missing")):
        failed = subprocess.run([*run, *args], cwd=tmp_path, capture_output=True, text=True, timeout=120)
        assert failed.returncode != 0 and reason in failed.stderr and "Traceback" not in failed.stderr, failed.stderr

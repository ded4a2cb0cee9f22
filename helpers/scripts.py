"""The worker scripts the notebooks show in full: read them back out of the notebooks.

Every process the series launches runs a script that its notebook writes with a `%%writefile
scripts/NAME.py` cell, continued by `%%writefile -a scripts/NAME.py` cells. `make demo`, the tests and
the benchmarks take the same scripts from the notebooks, so each script has exactly one source: the
cells a reader sees. The exercise tests read a notebook's other cells the same way (`code_cell`).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _code_sources(notebook: str | Path) -> list[str]:
    """The source of every code cell of `notebook` (a path, or a name in notebooks/), in order."""
    path = Path(notebook)
    if not path.is_absolute() and not path.exists():
        path = NOTEBOOKS / path
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def code_cell(notebook: str | Path, start: str) -> str:
    """The source of the one code cell of `notebook` that starts with `start` (an exercise's stub, check or
    reference solution, for its test). ValueError unless exactly one cell does."""
    found = [source for source in _code_sources(notebook) if source.startswith(start)]
    if len(found) != 1:
        raise ValueError(f"{Path(notebook).name} has {len(found)} code cells starting with {start!r}")
    return found[0]


def other_cells(notebook: str | Path) -> list[str]:
    """The source of every code cell of `notebook` that does not write a script: what the notebook itself runs and
    checks (tests/test_ascend_checklist.py looks there for the check of a script's recorded order)."""
    return [source for source in _code_sources(notebook) if not source.startswith("%%writefile")]


def notebook_scripts(notebook: str | Path) -> dict[str, str]:
    """{path written (relative to notebooks/): source} of every script `notebook` writes, its `%%writefile -a`
    pieces appended in order, as IPython does."""
    scripts = {}
    for source in _code_sources(notebook):
        if source.startswith("%%writefile "):
            first, _, body = source.partition("\n")
            name, body = first.split()[-1], body if body.endswith("\n") else body + "\n"
            if first.split()[1] in ("-a", "--append"):
                if name not in scripts:
                    raise ValueError(f"{Path(notebook).name} appends to {name} before writing it")
                scripts[name] += body
            else:
                scripts[name] = body
    return scripts


def all_scripts() -> dict[tuple[str, str], str]:
    """{(notebook name, script path): source} across the series."""
    return {(nb.name, name): source for nb in sorted(NOTEBOOKS.glob("*.ipynb"))
            for name, source in notebook_scripts(nb).items()}


def borrowed_scripts(notebook: str | Path) -> dict[str, str]:
    """{script path: source} of the scripts `notebook` copies from another notebook with `write_script` (notebook
    12's train_3d.py imports notebook 11's gpt.py, copied as it is), so a test can put them beside its own."""
    found = {}
    for source in _code_sources(notebook):
        for other, name in re.findall(r'write_script\(\s*"([^"]+\.ipynb)",\s*"([^"]+)"', source):
            found[name] = notebook_scripts(other)[name]
    return found


def write_script(notebook: str | Path, name: str, folder: str | Path) -> Path:
    """Write the script `name` (e.g. "scripts/train.py") of `notebook` into `folder`; return its path."""
    scripts = notebook_scripts(notebook)
    if name not in scripts:
        raise KeyError(f"{notebook} writes no {name!r}; it writes {sorted(scripts)}")
    target = Path(folder) / Path(name).name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(scripts[name], encoding="utf-8")
    return target


def import_cells(path: str | Path, source: str, **names):
    """Write `source` (a notebook's cells put together, for an exercise test) to `path` and import it as the
    module `path.stem`, with `names` defined before it runs. A real file, registered in sys.modules, because
    MindSpore's graph mode reads a network's source and imports the module of what it compiles. The caller
    removes it from sys.modules when done."""
    path = Path(path)
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(names)
    sys.modules[path.stem] = module
    spec.loader.exec_module(module)
    return module

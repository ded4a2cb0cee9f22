"""Notebooks are committed clean and follow the series' template."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

NOTEBOOKS = sorted(Path(__file__).resolve().parents[1].joinpath("notebooks").glob("*.ipynb"))
ALLOWED_TAGS = {"raises-exception"}  # no skip-execution: JupyterLab's Run All ignores it, so cells guard in code
SECTIONS = ("What you'll learn", "Prerequisites", "Configuration", "Summary", "Exercises", "Troubleshooting", "Next")
COLLAPSED = {"source_hidden": True}  # cell metadata "jupyter": evidence cells and exercise solutions


def load(path):
    return json.loads(path.read_text(encoding="utf-8"))


def test_the_series_is_here():
    names = [p.name for p in NOTEBOOKS]
    assert names and names[0].startswith("01_"), names
    numbers = [n[:3] for n in names]
    assert all(n[:2].isdigit() and n[2] == "_" for n in numbers), "named NN_topic.ipynb"
    assert len(set(numbers)) == len(numbers), "one notebook per number"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs_and_editor_metadata(path):
    nb = load(path)
    assert set(nb["metadata"]) == {"kernelspec"}, f"notebook metadata must be only kernelspec: {set(nb['metadata'])}"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    for i, cell in enumerate(nb["cells"]):
        metadata = cell.get("metadata", {})
        assert set(metadata) <= {"tags", "jupyter"}, f"cell {i}: only 'tags' and a collapsed source are kept"
        assert metadata.get("jupyter", COLLAPSED) == COLLAPSED, f"cell {i}: 'jupyter' may only collapse the source"
        assert set(metadata.get("tags", [])) <= ALLOWED_TAGS, f"cell {i}: unknown tag {metadata.get('tags')}"
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], f"cell {i} has outputs"
            assert cell["execution_count"] is None, f"cell {i} has an execution count"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_figures_render(path):
    """helpers' plots return Figure objects, which Jupyter renders only with the inline backend."""
    first_code = next(c for c in load(path)["cells"] if c["cell_type"] == "code")
    assert "".join(first_code["source"]).startswith("%matplotlib inline"), "start with %matplotlib inline"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_follows_the_template(path):
    markdown = "\n".join("".join(c["source"]) for c in load(path)["cells"] if c["cell_type"] == "markdown")
    assert markdown.lstrip().startswith("# "), "starts with a title"
    for section in SECTIONS:
        assert section in markdown, f"missing section {section!r}"


def test_lint_notebooks_and_code():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "."], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[1])
    assert result.returncode == 0, result.stdout + result.stderr


# The reading path: the limits a reader of any notebook can count on.
MAX_CODE_LINES = 80       # a longer script is built in %%writefile -a pieces, prose between them
MAX_OPEN_ASSERTS = 25     # one or two per claim in open cells; the rest in a collapsed "Checks" cell
MAX_WORDS_BEFORE_RESULT = 450  # prose before the first real result ("about 400 words")


def is_open(cell):
    return cell["metadata"].get("jupyter", {}) != COLLAPSED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_reading_path(path):
    cells = load(path)["cells"]
    code = [(i, "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "code"]
    long = [(i, len(s.splitlines())) for i, s in code if len(s.splitlines()) > MAX_CODE_LINES]
    assert not long, f"code cells over {MAX_CODE_LINES} lines (cell, lines): {long}"
    asserts = sum(1 for c in cells if c["cell_type"] == "code" and is_open(c)
                  for line in c["source"] if line.lstrip().startswith("assert "))
    assert asserts <= MAX_OPEN_ASSERTS, f"{asserts} assert lines in open cells: move the rest to a collapsed cell"
    # The first real result: the first code cell that is neither the configuration cell nor a script being written.
    first = next(i for i, s in code if not s.startswith(("%matplotlib", "%%writefile")))
    words = sum(len("".join(c["source"]).split()) for c in cells[:first] if c["cell_type"] == "markdown")
    assert words <= MAX_WORDS_BEFORE_RESULT, f"{words} words of prose before the first result (cell {first})"


# The language-model notebooks (11–14) write a ~300-line script in pieces before their first job, so their first
# result comes later than 450 words: they are held to 1,250 words of prose before the first cell that launches one.
LANGUAGE_MODEL = [p for p in NOTEBOOKS if p.name[:2] in ("11", "12", "13", "14")]
MAX_WORDS_BEFORE_LAUNCH = 1250


def words_before_launch(cells):
    """(words of prose, index) up to the first code cell that calls launch(...): markdown words, code spans and
    fences left out (they are read as code, not prose). (words, None) when no cell launches a job."""
    from helpers.translation import without_code

    words = 0
    for index, cell in enumerate(cells):
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            words += len(without_code(text).split())
        elif re.search(r"\blaunch\(", text):
            return words, index
    return words, None


def test_words_before_launch_counts_prose_up_to_the_first_launch():
    def md(text):
        return {"cell_type": "markdown", "source": [text]}

    def code(text):
        return {"cell_type": "code", "source": [text]}

    cells = [md("one two `skipped code` three"), code("x = 1"), md("four " * 1300), code("job = launch('a.py')"),
             md("after the launch")]
    assert words_before_launch(cells) == (1303, 3)
    assert words_before_launch(cells)[0] > MAX_WORDS_BEFORE_LAUNCH, "a notebook like this one fails the rule below"
    assert words_before_launch(cells[:2]) == (3, None)


@pytest.mark.parametrize("path", LANGUAGE_MODEL, ids=lambda p: p.name)
def test_language_model_notebooks_launch_within_1250_words(path):
    words, first = words_before_launch(load(path)["cells"])
    assert first is not None, "a language-model notebook launches a job"
    assert words <= MAX_WORDS_BEFORE_LAUNCH, (
        f"{words} words of prose before the first launch (cell {first}): move notes that belong after the first "
        "result to after it")

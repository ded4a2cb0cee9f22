"""`make book` (helpers.book): executed notebooks rendered with their outputs, collapsed code folded,
failures named on the page, the index and the exit code."""

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from helpers import book


def write_notebook(path, cells):
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}}), path)
    return path


def test_book_renders_outputs_folds_hidden_code_and_names_failures(tmp_path, capsys):
    good = write_notebook(tmp_path / "01_good.ipynb", [
        new_markdown_cell("# 01 · Good (数据并行)\n\nNext: [02](02_bad.ipynb#top)."),
        new_code_cell("print('answer', 6 * 7)"),
        new_code_cell("print('checked', 1 + 1)", metadata={"jupyter": {"source_hidden": True}}),
        new_code_cell("raise ValueError('expected, tagged')", metadata={"tags": ["raises-exception"]}),
    ])
    bad = write_notebook(tmp_path / "02_bad.ipynb", [
        new_code_cell("print('before the error')"),
        new_code_cell("raise RuntimeError('not tagged')"),
        new_code_cell("print('never runs')"),
    ])
    readme = tmp_path / "README.md"
    readme.write_text("| notebook | what |\n|---|---|\n"
                      "| [01 · Good](notebooks/01_good.ipynb) | `init()` and **bold** |\n"
                      "| [02 · Bad](notebooks/02_bad.ipynb) | fails |\n", encoding="utf-8")
    out = tmp_path / "site"

    pages = book.build([good, bad], out, readme=readme, log=lambda *a, **k: None)

    assert [p.error is None for p in pages] == [True, False]
    assert "RuntimeError" in pages[1].error and "not tagged" in pages[1].error
    assert "\x1b" not in pages[1].error, "the error is plain text, without terminal colours"
    good_html = (out / "01_good.html").read_text(encoding="utf-8")
    assert "answer 42" in good_html and "数据并行" in good_html
    assert "expected, tagged" in good_html, "a tagged cell's error is part of the page"
    hidden = good_html.split('<details class="book-hidden-input">')
    assert len(hidden) == 2, "exactly the one collapsed cell is folded"
    assert "checked" in hidden[1].split("</details>")[0], "its code is inside the fold"
    assert "checked 2" in good_html, "its output shows"
    assert 'href="index.html"' in good_html, "every page links back to the index"
    assert 'href="02_bad.html#top"' in good_html, "a link to another notebook goes to its page"
    bad_html = (out / "02_bad.html").read_text(encoding="utf-8")
    assert "before the error" in bad_html and "RuntimeError" in bad_html, "outputs up to the error, and the error"
    index = (out / "index.html").read_text(encoding="utf-8")
    assert 'href="01_good.html"' in index and 'href="02_bad.html"' in index
    assert "<code>init()</code>" in index and "<b>bold</b>" in index
    assert "FAILED: " in index and "ran in" in index


def test_book_exits_nonzero_naming_the_failed_notebook(tmp_path, capsys):
    bad = write_notebook(tmp_path / "03_bad.ipynb", [new_code_cell("1 / 0")])
    readme = tmp_path / "README.md"
    readme.write_text("| [03 · Bad](notebooks/03_bad.ipynb) | x |\n", encoding="utf-8")
    assert book.main([str(bad), "--out", str(tmp_path / "site"), "--readme", str(readme)]) == 1
    assert "failed: 03_bad.ipynb" in capsys.readouterr().err
    assert "ZeroDivisionError" in (tmp_path / "site" / "index.html").read_text(encoding="utf-8")


def test_book_refuses_a_missing_notebook(tmp_path, capsys):
    assert book.main([str(tmp_path / "nope.ipynb"), "--out", str(tmp_path / "site")]) == 2
    assert "no such notebook" in capsys.readouterr().err

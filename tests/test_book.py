"""`make book` (helpers.book): executed notebooks rendered with their outputs, collapsed code folded,
failures named on the page, the index and the exit code; the Chinese book run from notebooks/zh_CN/; pages that
need no network (formulas as MathML, nothing loaded from another host)."""

import html
import json
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from helpers import book
from helpers.translation import CHINESE, english_notebooks


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


def test_the_chinese_book_runs_the_chinese_notebooks_from_their_folder(tmp_path):
    """The Chinese pages come from a run of notebooks/zh_CN/ itself (a path that resolves only from the English
    folder fails there), with Chinese template text, their own titles and lang="zh-CN" like their index."""
    (tmp_path / "zh_CN").mkdir()
    (tmp_path / "zh_CN" / "data.txt").write_text("found beside the Chinese notebook", encoding="utf-8")
    english = write_notebook(tmp_path / "01_where.ipynb", [new_markdown_cell("# 01 · Where")])
    chinese = write_notebook(tmp_path / "zh_CN" / "01_where.ipynb", [
        new_markdown_cell("# 01 · 在哪里运行\n\n公式 $s\\,b\\,h$。"),
        new_code_cell("print(open('data.txt').read())"),
        new_code_cell("print('checked')", metadata={"jupyter": {"source_hidden": True}})])
    (tmp_path / "README.md").write_text("| [01 · Where](notebooks/01_where.ipynb) | x |\n", encoding="utf-8")
    (tmp_path / "README.zh-CN.md").write_text("| [01 · 在哪里](notebooks/zh_CN/01_where.ipynb) | 内容 |\n",
                                              encoding="utf-8")
    out = tmp_path / "site"

    assert book.main([str(chinese), "--out", str(out), "--readme", str(tmp_path / "README.md")]) == 0
    page = (out / "zh_CN" / "01_where.html").read_text(encoding="utf-8")
    assert "found beside the Chinese notebook" in page, "the notebook ran from notebooks/zh_CN/"
    assert '<html lang="zh-CN">' in page and "<title>01 · 在哪里运行</title>" in page
    assert "点击展开" in page and "click to show" not in page, "Chinese template text"
    assert 'href="../01_where.html"' in page, "a link to the English page"
    index = (out / "zh_CN" / "index.html").read_text(encoding="utf-8")
    assert '<html lang="zh-CN">' in index and "运行" in index and 'href="01_where.html"' in index
    assert not (out / "01_where.html").exists(), "the English book is a run of its own"

    assert book.main([str(english), "--out", str(out), "--readme", str(tmp_path / "README.md")]) == 0
    assert 'href="zh_CN/01_where.html"' in (out / "01_where.html").read_text(encoding="utf-8")
    assert book.main([str(english), str(chinese), "--out", str(out)]) == 2, "one language per run"


def test_a_page_needs_no_network(tmp_path):
    """Formulas are MathML (drawn by the browser), tables inside a quote are tables, and no script, style or font
    comes from another host."""
    nb = nbformat.v4.new_notebook(cells=[new_markdown_cell(
        "# 09 · Title\n\nActivations $sbh\\,(10 + 24/t + 5as/(ht))$ and\n\n$$M = \\frac{16\\Psi}{N}$$\n\n"
        "> **Quoted table.**\n>\n> | a | b |\n> |---|---|\n> | 1 | 2 |\n\n`$HOME` stays code.")])
    book.render(nb, tmp_path / "page.html")
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert page.count("<math") == 2 and "<mfrac>" in page
    text = re.sub(r"<[^>]+>", " ", re.sub(r"<(style|script|math)[^>]*>.*?</\\1>", " ", page, flags=re.S))
    assert "sbh" not in text and "frac" not in text and "$" not in text.replace("$HOME", ""), "no raw TeX left"
    assert "<code>$HOME</code>" in page
    assert re.search(r"<blockquote>\s*<p><strong>Quoted table.</strong></p>\s*<table>", page)
    assert not re.findall(r'(?:src|href)="(?:https?:)?//[^"]+"', page), "nothing from another host"
    assert "<title>09 · Title</title>" in page


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="


def figure_notebook(title, section, lead):
    """A notebook whose third cell drew two figures (a run's display_data outputs, as matplotlib leaves them)."""
    draw = new_code_cell("draw(); draw()")
    draw.outputs = [nbformat.v4.new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})
                    for _ in range(2)]
    cells = [new_markdown_cell(f"# {title}"), new_markdown_cell(f"## {section}\n\n{lead}"), draw]
    return new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "language": "python",
                                                              "display_name": "Python 3"}})


@pytest.mark.parametrize("language, title, section, lead, alt", [
    ("en", "01 · Title", "2. The loss, per rank", "Each rank trains its share. Below, the loss of every rank per step:",
     "2. The loss, per rank — Below, the loss of every rank per step"),
    ("zh", "01 · 标题", "2. 每个 rank 的损失", "每个 rank 训练自己的那一份。下图是每个 rank 每一步的损失：",
     "2. 每个 rank 的损失 — 下图是每个 rank 每一步的损失"),
])
def test_every_figure_has_alt_text_in_the_pages_language(tmp_path, language, title, section, lead, alt):
    """Issue 53: every figure carried nbconvert's "No description has been provided for this image", in English on
    Chinese pages too. A figure's alt text is its section and the sentence that introduces it, in the page's
    language; a cell's figures are numbered."""
    from nbconvert import HTMLExporter

    nb = figure_notebook(title, section, lead)
    assert "No description has been provided" in HTMLExporter(template_name="lab").from_notebook_node(nb)[0], \
        "nbconvert's own page has the placeholder this test looks for"
    book.render(nb, tmp_path / "page.html", language)
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    assert "No description has been provided" not in page
    assert [html.unescape(a) for a in re.findall(r'<img\b[^>]*?\balt="([^"]*)"', page, flags=re.S)] == [
        f"{alt} (1/2)", f"{alt} (2/2)"]
    assert "book_alt" not in json.dumps(nb), "the run's notebook is left as it was"


@pytest.mark.parametrize("notebook", [*english_notebooks(), *sorted(CHINESE.glob("[0-9]*.ipynb"))],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_any_figure_of_the_series_would_be_described_in_its_notebooks_language(notebook):
    """Which cells draw a figure is known only once the notebook runs, so every code cell gets a description: a
    Chinese notebook's are Chinese."""
    nb = json.loads(notebook.read_text(encoding="utf-8"))
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            text = book.figure_description(nb, index)
            assert text, f"{notebook.name} cell {index}: no description"
            if notebook.parent.name == "zh_CN":
                assert re.search(r"[\u4e00-\u9fff]", text), f"{notebook.name} cell {index}: {text!r} is not Chinese"


@pytest.mark.parametrize("notebook", [*english_notebooks(), *sorted(CHINESE.glob("[0-9]*.ipynb"))],
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_formula_of_the_series_becomes_mathml(notebook):
    exporter = book.exporter()
    for number, cell in enumerate(json.loads(notebook.read_text(encoding="utf-8"))["cells"]):
        if cell["cell_type"] == "markdown":
            html = exporter.markdown2html({"cell": cell}, "".join(cell["source"]))   # ValueError names a formula
            outside_code = re.sub(r"<code>.*?</code>|<pre>.*?</pre>|<math.*?</math>", "", html, flags=re.S)
            assert not re.search(r"\$[^$<>\s][^$<>]*\$", outside_code), f"{notebook.name} cell {number}: raw TeX"

"""helpers.reference: the book's names-across-stacks page and its error index, in both languages. The error index
is generated from the notebooks (a row added to a notebook's troubleshooting table appears on the page), holds
every troubleshooting row and every raises-exception cell of the series, and links each to the section of the
book page that holds it; the names table links each row to a heading that exists in both languages and says
where each name was checked."""

import html
import json
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from helpers import book, reference, translation

TABLE = "| symptom | cause | fix |\n|---|---|---|\n"


def write(path, cells):
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(new_notebook(cells=cells, metadata={"kernelspec": {
        "name": "python3", "display_name": "Python 3", "language": "python"}}), path)
    return path


def small_series(folder, rows_en, rows_zh):
    """One notebook and its Chinese edition: a troubleshooting table and a cell that raises on purpose."""
    def cells(title, section, intro, heading, rows):
        return [new_markdown_cell(f"# {title}\n\n## 1. {section}\n\n{intro}"),
                new_code_cell("raise ValueError('the shard_id is missing on purpose')",
                              metadata={"tags": ["raises-exception"]}),
                new_markdown_cell(f"## Summary\n\nDone.\n\n## {heading}\n\n{TABLE}" + "".join(rows) + "\n## Next\n")]
    write(folder / "01_small.ipynb", cells("01 · Small", "The `shard` step", "It fails, on purpose.",
                                           "Troubleshooting", rows_en))
    write(folder / "zh_CN" / "01_small.ipynb", cells("01 · 小例子", "`shard` 这一步", "它会失败，这是故意的。",
                                                     "常见问题", rows_zh))


def text_of(page):
    """The page's text with no white space, * or ` at all (tags removed), to look a cell's words up in."""
    return re.sub(r"[\s*`]+", "", html.unescape(re.sub(r"<[^>]+>", "", page)))


def test_the_error_index_is_generated_from_the_notebooks(tmp_path):
    folder = tmp_path / "notebooks"
    small_series(folder, ["| `the shard_id is missing` | no `shard_id` | pass both |\n"],
                 ["| `the shard_id is missing` | 没有 `shard_id` | 两个都传 |\n"])
    first = reference.errors_page("en", folder)
    assert "pass both" in first and "never seen before" not in first
    assert 'href="01_small.html#Troubleshooting"' in first, "each table links to its section of the book page"
    assert 'href="01_small.html#1.-The-shard-step"' in first, "a raising cell links to its section"
    assert "raise ValueError(&#x27;the shard_id is missing on purpose&#x27;)" in first
    assert "It fails, on purpose." in first, "with what the notebook says before it"

    small_series(folder, ["| `the shard_id is missing` | no `shard_id` | pass both |\n",
                          "| never seen before | a new cause | a new fix |\n"],
                 ["| `the shard_id is missing` | 没有 `shard_id` | 两个都传 |\n",
                  "| 新的现象 | 新的原因 | 新的解决方法 |\n"])
    second = reference.errors_page("en", folder)
    assert "never seen before" in second and "a new fix" in second, "a row added to the notebook is on the page"
    chinese = reference.errors_page("zh", folder)
    assert "新的解决方法" in chinese and 'lang="zh-CN"' in chinese and "<title>报错速查</title>" in chinese
    assert 'href="01_small.html#%E5%B8%B8%E8%A7%81%E9%97%AE%E9%A2%98"' in chinese, "the Chinese heading's anchor"


def test_a_run_of_the_notebook_puts_its_error_on_the_page_with_the_row_it_matches(tmp_path):
    folder = tmp_path / "notebooks"
    small_series(folder, ["| `ValueError: the shard_id is missing on purpose` | no `shard_id` | pass both |\n"],
                 ["| `ValueError: the shard_id is missing on purpose` | 没有 `shard_id` | 两个都传 |\n"])
    ran = nbformat.read(folder / "01_small.ipynb", as_version=4)
    ran.cells[1].outputs = [nbformat.v4.new_output("error", ename="ValueError",
                                                   evalue="the shard_id is missing on purpose", traceback=[])]
    page = reference.errors_page("en", folder, executed={"01_small.ipynb": ran})
    raised = page.split('id="raised"')[1]
    assert "<pre>ValueError: the shard_id is missing on purpose</pre>" in raised
    assert "Troubleshooting row: " in raised and "pass both" in raised, "cause and fix come from the matching row"
    assert reference.WORDS["en"]["not_run"] in reference.errors_page("en", folder), "without a run it says so"


def plain(markdown):
    """A table cell's words, without markdown marks (* included) or white space, as text_of leaves the page."""
    markdown = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    return re.sub(r"[\s*`]+", "", markdown.replace("\\|", "|"))


def test_every_troubleshooting_row_and_raising_cell_of_the_series_is_on_the_error_page(tmp_path):
    reference.write_pages(tmp_path, "en")
    reference.write_pages(tmp_path, "zh")
    for language, folder in (("en", reference.NOTEBOOKS), ("zh", reference.NOTEBOOKS / "zh_CN")):
        page = text_of((tmp_path / ("zh_CN" if language == "zh" else "") / "errors.html").read_text("utf-8"))
        notebooks = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
        assert len(notebooks) >= 14
        for path in notebooks:
            nb = json.loads(path.read_text(encoding="utf-8"))
            markdown = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
            heading = "## 常见问题" if language == "zh" else "## Troubleshooting"
            assert heading in markdown, f"{path.name} has a troubleshooting table"
            table = markdown.split(heading, 1)[1].split("\n## ", 1)[0]
            rows = [line for line in table.splitlines() if line.startswith("|")][2:]
            assert rows, f"{path.name}: its troubleshooting table has rows"
            assert len(reference.troubleshooting_rows(path)) == len(rows), path.name
            for line in rows:
                for cell in reference.split_row(line):
                    assert plain(cell) in page, f"{language} {path.name}: {cell[:80]!r} is on the error page"
            for cell in nb["cells"]:
                if "raises-exception" in cell.get("metadata", {}).get("tags", []):
                    last = "".join(cell["source"]).strip().splitlines()[-1]
                    assert re.sub(r"\s+", "", last) in page, f"{path.name}: {last!r}"


def test_the_anchors_are_the_ones_the_book_page_gives_its_headings(tmp_path):
    headings = ["1. The article's step 1, in MindSpore 2.10 form", "3. Reshard for `NEW_WORKERS` ranks (重切分)",
                "4.2 Wrong `num_shards` / `shard_id`", "常见问题", "2. `DATA_PARALLEL`, for real"]
    nb = new_notebook(cells=[new_markdown_cell("# Title\n\n" + "\n\n".join(f"## {h}\n\ntext" for h in headings))],
                      metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
    book.render(nb, tmp_path / "page.html")
    page = (tmp_path / "page.html").read_text(encoding="utf-8")
    ids = {html.unescape(i) for i in re.findall(r'id="([^"]*)"', page)}
    for heading in headings:
        assert reference.heading_anchor(heading) in ids, heading


def test_the_names_table_links_every_row_and_cites_every_name(tmp_path):
    glossary = reference.glossary()
    rows = reference.read_tsv(reference.STACKS)
    assert len(rows) >= 15
    for row in rows:
        if row["glossary"]:
            assert row["chinese"].startswith(glossary[row["glossary"]]), f"{row['english']}: the glossary's term"
        assert row["chinese"], row["english"]
        for key, *_ in reference.STACK_COLUMNS:
            assert bool(row[key]) == bool(row[key + "_source"]), f"{row['english']} / {key}: a name has its source"
        english = reference.read_notebook(reference.NOTEBOOKS / row["notebook"])
        found = reference.find_heading(english, row["section"])
        assert found, f"{row['notebook']} has the heading {row['section']!r}"
        chinese = reference.read_notebook(reference.NOTEBOOKS / "zh_CN" / row["notebook"])
        assert reference.counterpart(found, chinese), f"zh_CN/{row['notebook']} has its translation"
    assert {r["english"].split(" (")[0].split(":")[0] for r in rows} >= {
        "data parallel", "tensor parallel", "sequence parallel", "context parallel", "pipeline parallel",
        "expert parallel", "optimizer parallel", "recompute", "gradient accumulation", "mixed precision"}

    written = reference.write_pages(tmp_path, "en") + reference.write_pages(tmp_path, "zh")
    for path in written:
        page = path.read_text(encoding="utf-8")
        zh = path.parent.name == "zh_CN"
        assert f'<html lang="{"zh-CN" if zh else "en"}">' in page
        title = re.search(r"<title>(.*)</title>", page).group(1)
        assert title in (("跨框架名称对照", "报错速查") if zh else ("Names across stacks", "Error index"))
        assert not re.search(r"<(script|link|img|iframe)\b", page), "nothing loaded, from any host"
        assert 'href="index.html"' in page and ('href="../' if zh else 'href="zh_CN/') in page
    names = (tmp_path / "names.html").read_text(encoding="utf-8")
    assert names.count("<tr>") == len(rows) + 1
    assert 'href="11_gpt_tensor_parallel.html#3.-Tensor-parallelism:-the-same-model-on-WORKERS-ranks"' in names
    assert "<code>parallelism.tensor_parallel</code>" in names
    assert "<code>parallel_config.model_parallel</code>" in names
    chinese = (tmp_path / "zh_CN" / "names.html").read_text(encoding="utf-8")
    assert "张量并行" in chinese and 'href="11_gpt_tensor_parallel.html#3.-' in chinese


def english_left(cell: str) -> list[str]:
    """The English words a reader sees in a cell of a page: its text outside tags and <code>."""
    text = html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<code>.*?</code>", " ", cell, flags=re.S)))
    return translation.english_words(text)


def stack_cells(page: str) -> list[str]:
    """Every cell of the names table but the first of each row, which names the concept in both languages."""
    rows = re.findall(r"<tr>(.*?)</tr>", page, flags=re.S)[1:]
    return [cell for row in rows for cell in re.findall(r"<td>(.*?)</td>", row, flags=re.S)[1:]]


def test_the_chinese_names_page_has_no_english_note_left(tmp_path):
    """Its notes and grey source lines come from translations/zh_CN/stacks.po (issue 53: about 28 notes were
    English on the Chinese page); a note without a current translation stops the page, naming it."""
    chinese, english = reference.names_page("zh"), reference.names_page("en")
    assert len(stack_cells(chinese)) == len(reference.read_tsv(reference.STACKS)) * (len(reference.STACK_COLUMNS) + 1)
    assert [(cell[:60], left) for cell in stack_cells(chinese) if (left := english_left(cell))] == []
    assert sum(bool(english_left(cell)) for cell in stack_cells(english)) >= 40, "the English page has them: the " \
        "check would see one left"
    assert "无对应参数：总 rank 数 ÷（TP × PP × CP）" in chinese and "本机安装的 MindSpore 2.10.0：" in chinese
    assert '<div class="src">Megatron-LM core_v0.15.0 megatron/training/arguments.py:385（' in chinese

    stacks = tmp_path / "stacks.tsv"
    stacks.write_text(reference.STACKS.read_text(encoding="utf-8").replace("no flag: world size", "no flag: all ranks"),
                      encoding="utf-8")
    assert reference.names_page("en", stacks=stacks).count("no flag: all ranks") == 1
    with pytest.raises(ValueError, match="stacks.tsv: the note 'no flag: all ranks.*has no entry"):
        reference.names_page("zh", stacks=stacks)


def test_the_book_index_links_both_pages_in_both_languages(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text("| [01 · A](notebooks/01_a.ipynb) | x |\n", encoding="utf-8")
    for language in ("en", "zh"):
        index = book.index_page(readme, {}, language)
        assert 'href="names.html"' in index and 'href="errors.html"' in index
    assert "报错速查" in book.index_page(readme, {}, "zh")


def test_the_command_writes_the_four_pages_without_running_a_notebook(tmp_path, capsys):
    assert reference.main(["--out", str(tmp_path)]) == 0
    for name in ("names.html", "errors.html", "zh_CN/names.html", "zh_CN/errors.html"):
        assert (tmp_path / name).is_file(), name
    assert capsys.readouterr().out.count("reference: ") == 4

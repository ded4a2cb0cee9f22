"""Two pages of the book that no notebook has, in both languages: names across stacks, and an error index.

- `names.html`: one row per concept (data parallel, tensor parallel, ...), the name each stack gives it
  (Megatron-LM / PyTorch, MindSpore, MindSpore Transformers' static `parallel_config` and dynamic `parallelism`,
  MindSpeed), where each name was checked, and the notebook section that teaches it. The data is
  translations/stacks.tsv; the Chinese term of a row is the glossary's (translations/glossary.tsv), and the Chinese
  page's notes and source lines come from translations/zh_CN/stacks.po (`make zh` lists what is untranslated).
- `errors.html` (报错速查): every error message the series reproduces, generated from the notebooks each time the
  page is written, so it cannot drift from them: every row of each notebook's "## Troubleshooting" table
  (symptom, cause, fix; the Chinese page reads the translated tables of notebooks/zh_CN/), and every cell tagged
  `raises-exception`, linked to the section of the book page that holds it. When the book runs the notebooks
  (`make book`), the page also shows the error each of those cells raised, and the troubleshooting row it matches.

Both pages sit beside the book's index (book/, book/zh_CN/), which links them. `make book` writes them after the
notebooks; without running any notebook:

    python -m helpers.reference [--out book] [--language en|zh|both]
"""

from __future__ import annotations

import argparse
import functools
import html
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
STACKS = ROOT / "translations" / "stacks.tsv"
GLOSSARY = ROOT / "translations" / "glossary.tsv"
TAG = "raises-exception"

# The stacks' columns of stacks.tsv, in the order the page shows them, with their headers in each language.
STACK_COLUMNS = (
    ("megatron_pytorch", "Megatron-LM / PyTorch", "Megatron-LM / PyTorch"),
    ("mindspore", "MindSpore (core API)", "MindSpore（核心 API）"),
    ("mf_static", "MindSpore Transformers, static graph: <code>parallel_config</code>",
     "MindSpore Transformers 静态图：<code>parallel_config</code>"),
    ("mf_dynamic", "MindSpore Transformers r2.0.0, dynamic graph: <code>parallelism</code>",
     "MindSpore Transformers r2.0.0 动态图：<code>parallelism</code>"),
    ("mindspeed", "MindSpeed", "MindSpeed"),
)

WORDS = {
    "en": {
        "lang": "en", "all": "← all notebooks", "other": "中文版",
        "names_title": "Names across stacks", "errors_title": "Error index",
        "index_links": "Reference pages: {names} · {errors}",
        "names_intro": "The same parallel technique under the name each stack gives it, and the notebook section "
                       "that teaches it. Every name was checked in that stack's source or documentation (the grey "
                       "line under it says where; versions at the foot of the page). An empty cell (—) means the "
                       "stack has no such name that we could find.",
        "concept": "concept", "taught": "taught in", "missing": "not found in this stack's source or docs",
        "versions": "Versions read: Megatron-LM tag core_v0.15.0; PyTorch's documentation and source; MindSpore "
                    "2.10.0 as installed; MindSpore Transformers branch r2.0.0 (the release for MindSpore 2.10; "
                    "its static graph reads <code>parallel_config</code>, its dynamic graph <code>parallelism</code>)"
                    "; MindSpeed master (2026-07). The table is <code>translations/stacks.tsv</code>.",
        "errors_intro": "Every error message the series reproduces: the rows of each notebook's troubleshooting "
                        "table, then the cells that raise an error on purpose. This page is generated from the "
                        "notebooks whenever the book is built, so it lists exactly what they say.",
        "table_part": "Troubleshooting tables", "raised_part": "Errors raised on purpose",
        "raised_intro": "Cells tagged <code>raises-exception</code>: the error is the lesson. The cell's code, "
                        "the error it raised when the book ran it, and what the notebook says.",
        "symptom": "symptom", "cause": "cause", "fix": "fix", "where": "where", "code": "the cell",
        "error": "error raised", "explained": "cause and fix",
        "not_run": "shown when the notebook runs (this page was built without running it)",
        "matches": "Troubleshooting row: ", "notebook_says": "The notebook: ",
        "rows": "{n} rows", "troubleshooting": "Troubleshooting",
    },
    "zh": {
        "lang": "zh-CN", "all": "← 全部 Notebook", "other": "English",
        "names_title": "跨框架名称对照", "errors_title": "报错速查",
        "index_links": "参考页面：{names} · {errors}",
        "names_intro": "同一种并行技术在各个框架中的名称，以及讲解它的 Notebook 章节。"
                       "每个名称都在该框架的源码或文档中核对过（名称下方的灰色小字注明出处；所读版本见页面底部）。"
                       "空单元格（—）表示在该框架中没有找到对应的名称。",
        "concept": "概念", "taught": "讲解章节", "missing": "在该框架的源码或文档中未找到",
        "versions": "所读版本：Megatron-LM 标签 core_v0.15.0；PyTorch 的文档与源码；本机安装的 MindSpore 2.10.0；"
                    "MindSpore Transformers 分支 r2.0.0（与 MindSpore 2.10 配套的版本；"
                    "静态图读取 <code>parallel_config</code>，动态图读取 <code>parallelism</code>）；"
                    "MindSpeed master（2026-07）。本表即 <code>translations/stacks.tsv</code>。",
        "errors_intro": "本系列复现的每一条报错：先是每个 Notebook 常见问题表格中的各行，然后是故意报错的单元格。"
                        "本页在每次构建电子书时由 Notebook 生成，因此与 Notebook 的内容完全一致。",
        "table_part": "常见问题表格", "raised_part": "故意触发的报错",
        "raised_intro": "带 <code>raises-exception</code> 标签的单元格：报错本身就是要讲的内容。这里列出单元格的代码、"
                        "构建电子书时它实际抛出的错误，以及 Notebook 的说明。",
        "symptom": "现象", "cause": "原因", "fix": "解决方法", "where": "位置", "code": "单元格",
        "error": "抛出的错误", "explained": "原因与解决方法",
        "not_run": "运行 Notebook 时显示（本页构建时未运行 Notebook）",
        "matches": "常见问题表格中的一行：", "notebook_says": "Notebook 的说明：",
        "rows": "{n} 行", "troubleshooting": "常见问题",
    },
}

STYLE = """body{font-family:system-ui,sans-serif;max-width:110rem;margin:1rem auto;padding:0 1rem;line-height:1.5}
table{border-collapse:collapse;margin:.5rem 0 1.5rem}td,th{border:1px solid #ccc;padding:.4rem .6rem;vertical-align:top}
th{background:#f3f3f3;text-align:left}code{background:#f3f3f3;padding:0 .2rem;word-break:break-word}
pre{background:#f6f6f6;padding:.4rem;margin:0;white-space:pre-wrap;word-break:break-word;font-size:90%}
.src{color:#777;font-size:80%;margin-top:.2rem;overflow-wrap:anywhere}.none{color:#aaa}td p{margin:0 0 .3rem}
nav{padding:.3rem 0}h2{margin-top:2rem}
table.wide{table-layout:fixed;width:100%;font-size:88%}table.wide code{word-break:break-all}
table.names col.concept{width:10%}table.names col.taught{width:11%}
table.errors col.symptom{width:36%}table.raised col.where{width:14%}table.raised col.code{width:30%}"""


@dataclass
class Heading:
    cell: int       # index of the markdown cell
    ordinal: int    # which heading of that cell (0 = its first)
    level: int
    text: str       # the heading's markdown, without the leading #s
    anchor: str     # the id the book page gives it


# --- reading notebooks -----------------------------------------------------------------------------------------

def read_notebook(path: Path) -> dict:
    return json.loads(Path(path).read_text(encoding="utf-8"))


def source(cell) -> str:
    text = cell.get("source", "")
    return text if isinstance(text, str) else "".join(text)


def heading_lines(markdown: str) -> list[tuple[int, str]]:
    """(level, text) of each ATX heading of `markdown`, outside code fences."""
    found, fenced = [], False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"^(#{1,6})\s+(.+?)\s*#*\s*$", line)
        if match:
            found.append((len(match.group(1)), match.group(2)))
    return found


@functools.cache
def heading_anchor(text: str) -> str:
    """The id nbconvert (and so the book page) gives the heading `text`: its rendered text, spaces as hyphens,
    percent-encoded."""
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    match = re.search(r'<h2 id="([^"]*)"', markdown2html_mistune(f"## {text}"))
    return html.unescape(match.group(1)) if match else ""


def headings(nb: dict) -> list[Heading]:
    found = []
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            for ordinal, (level, text) in enumerate(heading_lines(source(cell))):
                found.append(Heading(index, ordinal, level, text, heading_anchor(text)))
    return found


def counterpart(heading: Heading, nb: dict) -> Heading | None:
    """The heading of `nb` (a translation of the notebook `heading` comes from) at the same place: same cell, same
    ordinal. The Chinese notebooks have the English cells in the same order, each paragraph translated."""
    for other in headings(nb):
        if other.cell == heading.cell and other.ordinal == heading.ordinal:
            return other
    return None


def find_heading(nb: dict, text: str) -> Heading | None:
    return next((h for h in headings(nb) if h.text == text), None)


def split_row(line: str) -> list[str]:
    """The cells of one markdown table row (a `\\|` is a pipe inside a cell)."""
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [cell.strip().replace("\\|", "|") for cell in cells]


def table_after(markdown: str, ordinal: int) -> list[list[str]]:
    """The rows (header and separator left out) of the first table after the `ordinal`-th heading of `markdown`,
    before the next heading."""
    lines, seen, fenced, rows, started = markdown.splitlines(), -1, False, [], False
    for line in lines:
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        is_heading = not fenced and re.match(r"^#{1,6}\s", line)
        if is_heading:
            seen += 1
            if seen > ordinal:
                break
            continue
        if seen != ordinal:
            continue
        if line.startswith("|"):
            started = True
            rows.append(split_row(line))
        elif started:
            break
    body = rows[2:] if len(rows) >= 2 and set("".join(rows[1])) <= set("-: ") else rows[1:]
    return [row for row in body if any(row)]


def notebook_title(nb: dict) -> str:
    for level, text in (hl for cell in nb["cells"] if cell["cell_type"] == "markdown"
                        for hl in heading_lines(source(cell))):
        if level == 1:
            return text
    return "Notebook"


# --- the error index -------------------------------------------------------------------------------------------

@dataclass
class Row:
    notebook: str       # file name, e.g. 03_data_sharding.ipynb
    title: str          # the notebook's title
    symptom: str        # markdown
    cause: str
    fix: str
    anchor: str         # of the notebook's troubleshooting heading


@dataclass
class Raised:
    notebook: str
    title: str
    section: str        # markdown of the nearest heading above the cell
    anchor: str
    code: str
    context: str        # the notebook's last paragraph before the cell
    error: str | None   # the error the cell raised, when the notebook has been run


def english_of(path: Path) -> Path:
    """The English notebook a notebook of notebooks/zh_CN/ was generated from (itself for an English one)."""
    return path.parent.parent / path.name if path.parent.name == "zh_CN" else path


def troubleshooting_heading(english: dict) -> Heading | None:
    return next((h for h in headings(english) if h.level == 2 and h.text.strip() == "Troubleshooting"), None)


def troubleshooting_rows(path: Path, nb: dict | None = None) -> list[Row]:
    """Every row of the notebook's troubleshooting table. The table is found through the English notebook's
    "## Troubleshooting" heading; a Chinese notebook's is the translated heading at the same place."""
    nb = nb or read_notebook(path)
    english = read_notebook(english_of(path)) if english_of(path) != path else nb
    found = troubleshooting_heading(english)
    here = found if english is nb else (counterpart(found, nb) if found else None)
    if here is None:
        return []
    title = notebook_title(nb)
    return [Row(path.name, title, *(cells + ["", "", ""])[:3], here.anchor)
            for cells in table_after(source(nb["cells"][here.cell]), here.ordinal)]


def error_text(cell) -> str | None:
    """The error a run of `cell` left in its outputs: the exception's name and the first lines of its message."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            value = re.sub(r"\x1b\[[0-9;]*m", "", str(output.get("evalue", "")))
            lines = [line.rstrip() for line in value.splitlines()   # MindSpore's rules and banners left out
                     if line.strip() and not re.fullmatch(r"[-=\s]+|-?\s*Python Call Stack:\s*", line)][:6]
            text = f"{output.get('ename', 'Error')}: " + "\n".join(lines)
            return text[:900]
    return None


def paragraphs(markdown: str) -> list[str]:
    return [p.strip() for p in re.split(r"\n\s*\n", markdown) if p.strip()]


def raised_cells(path: Path, nb: dict | None = None) -> list[Raised]:
    """Every code cell tagged raises-exception, with its section, the paragraph before it and (when `nb` has been
    run) the error it raised."""
    nb = nb or read_notebook(path)
    title, found, section, context = notebook_title(nb), [], None, ""
    last_of_cell = {h.cell: h for h in headings(nb)}   # each cell's last heading
    for index, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "markdown":
            section = last_of_cell.get(index, section)
            parts = [p for p in paragraphs(source(cell)) if not p.startswith("#")]
            context = parts[-1] if parts else context
        elif TAG in cell.get("metadata", {}).get("tags", []):
            found.append(Raised(path.name, title, section.text if section else title,
                                section.anchor if section else "", source(cell), context, error_text(cell)))
    return found


def matching_row(error: str | None, rows: list[Row]) -> Row | None:
    """The troubleshooting row whose symptom quotes (a long enough piece of) the error message."""
    if not error:
        return None
    for row in rows:
        for span in re.findall(r"`([^`]+)`", row.symptom):
            pieces = [p.strip(" .'\"") for p in re.split(r"\.\.\.|…|<[^>]*>", span)]
            if any(len(p) >= 15 and p in error for p in pieces):
                return row
    return None


# --- rendering -------------------------------------------------------------------------------------------------

def inline(markdown: str) -> str:
    """A table cell's markdown as HTML (code, links, bold; raw HTML escaped); links to notebooks go to their
    pages, as on the book's notebook pages."""
    import mistune

    markdown = re.sub(r"^(\d+)([.)])(\s)", r"\1\\\2\3", markdown.strip())   # "2. Title" is a title, not a list
    markdown = re.sub(r"^([-+*>#])", r"\\\1", markdown)
    rendered = mistune.create_markdown(escape=True)(markdown).strip()
    rendered = re.sub(r"^<p>(.*)</p>$", r"\1", rendered, flags=re.S)
    return re.sub(r'href="((?:\.\./)?\d\d_[\w-]+)\.ipynb', r'href="\1.html', rendered)


def page(language: str, title: str, body: str, other: str, sibling: tuple[str, str]) -> str:
    words = WORDS[language]
    nav = (f'<nav><a href="index.html">{words["all"]}</a> · <a href="{sibling[0]}">{sibling[1]}</a> · '
           f'<a href="{other}">{words["other"]}</a></nav>')
    return f"""<!DOCTYPE html>
<html lang="{words["lang"]}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{STYLE}</style></head><body>
{nav}
<h1>{html.escape(title)}</h1>
{body}
{nav}
</body></html>
"""


def read_tsv(path: Path) -> list[dict[str, str]]:
    lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line and not line.startswith("#")]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t") + [""] * len(header))) for line in lines[1:]]


def glossary() -> dict[str, str]:
    return {row["english"]: row["chinese"] for row in read_tsv(GLOSSARY)}


def notebook_link(notebook: str, section: str, language: str, folder: Path) -> str:
    """`notebook`'s page, at the heading `section` (an English heading) or at its Chinese counterpart."""
    english = read_notebook(folder / notebook)
    found = find_heading(english, section)
    if found is None:
        raise ValueError(f"stacks.tsv: {notebook} has no heading {section!r}")
    name = notebook.replace(".ipynb", ".html")
    if language == "en":
        return f'<a href="{name}#{html.escape(found.anchor)}">{inline(section)}</a>'
    chinese = counterpart(found, read_notebook(folder / "zh_CN" / notebook))
    if chinese is None:
        raise ValueError(f"stacks.tsv: notebooks/zh_CN/{notebook} has no heading where {section!r} is")
    return f'<a href="{name}#{html.escape(chinese.anchor)}">{inline(chinese.text)}</a>'


def names_page(language: str = "en", folder: Path = NOTEBOOKS, stacks: Path = STACKS,
               catalogue: Path | None = None) -> str:
    """The names table in `language`. The Chinese page shows each note and source line of `stacks` in the Chinese
    of its catalogue (translations/zh_CN/stacks.po, helpers.translation): ValueError names a note without one."""
    from helpers.translation import STACKS_CATALOGUE, stacks_chinese

    words, rows = WORDS[language], []
    chinese = stacks_chinese(stacks, catalogue or STACKS_CATALOGUE) if language == "zh" else {}
    for row in read_tsv(stacks):
        concept = (f"<b>{html.escape(row['english'])}</b><br>{html.escape(row['chinese'])}" if language == "en"
                   else f"<b>{html.escape(row['chinese'])}</b><br>{html.escape(row['english'])}")
        cells = [concept]
        for key, *_ in STACK_COLUMNS:
            if row[key]:
                note, source = (chinese.get(text, text) for text in (row[key], row[key + "_source"]))
                cells.append(f'{inline(note)}<div class="src">{inline(source)}</div>')
            else:
                cells.append(f'<span class="none" title="{words["missing"]}">—</span>')
        cells.append(f"{row['notebook'][:2]} · {notebook_link(row['notebook'], row['section'], language, folder)}")
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    column = 2 if language == "zh" else 1
    header = [words["concept"], *(c[column] for c in STACK_COLUMNS), words["taught"]]
    cols = '<col class="concept">' + "<col>" * len(STACK_COLUMNS) + '<col class="taught">'
    head = "".join(f"<th>{h}</th>" for h in header)
    body = (f"<p>{words['names_intro']}</p>\n<table class=\"wide names\">{cols}<tr>{head}</tr>\n"
            + "\n".join(rows) + f"\n</table>\n<p class=\"src\">{words['versions']}</p>")
    return page(language, words["names_title"], body, ("../names.html" if language == "zh" else "zh_CN/names.html"),
                ("errors.html", words["errors_title"]))


def series(language: str, folder: Path = NOTEBOOKS) -> list[Path]:
    where = folder / "zh_CN" if language == "zh" else folder
    return sorted(where.glob("[0-9][0-9]_*.ipynb"))


def errors_page(language: str = "en", folder: Path = NOTEBOOKS, executed: dict | None = None) -> str:
    """The error index of `language`'s notebooks in `folder`; `executed` maps a notebook's file name to a run of
    it (the book's), whose errors are shown."""
    words, executed = WORDS[language], executed or {}
    tables, raised_rows = [], []
    for path in series(language, folder):
        nb = executed.get(path.name) or read_notebook(path)
        rows = troubleshooting_rows(path, nb)
        page_name = path.name.replace(".ipynb", ".html")
        if rows:
            link = f'<a href="{page_name}#{html.escape(rows[0].anchor)}">{html.escape(rows[0].title)}</a>'
            body = "\n".join(f"<tr><td>{inline(r.symptom)}</td><td>{inline(r.cause)}</td><td>{inline(r.fix)}</td></tr>"
                             for r in rows)
            head = "".join(f"<th>{words[key]}</th>" for key in ("symptom", "cause", "fix"))
            tables.append(f'<h3 id="nb{path.name[:2]}">{link} <span class="src">{words["rows"].format(n=len(rows))}'
                          f'</span></h3>\n<table class="wide errors"><col class="symptom"><col><col><tr>{head}</tr>\n'
                          f"{body}\n</table>")
        for cell in raised_cells(path, nb):
            match = matching_row(cell.error, rows)
            error = (f"<pre>{html.escape(cell.error)}</pre>" if cell.error
                     else f'<span class="none">{words["not_run"]}</span>')
            explained = (f"{words['matches']}{inline(match.symptom)}<br><b>{words['cause']}</b>: {inline(match.cause)}"
                         f"<br><b>{words['fix']}</b>: {inline(match.fix)}" if match
                         else f"{words['notebook_says']}{inline(cell.context)}")
            where = (f'{html.escape(cell.title)}<br><a href="{page_name}#{html.escape(cell.anchor)}">'
                     f"{inline(cell.section)}</a>")
            raised_rows.append(f"<tr><td>{where}</td><td><pre>{html.escape(cell.code.strip())}</pre></td>"
                               f"<td>{error}</td><td>{explained}</td></tr>")
    body = (f"<p>{words['errors_intro']}</p>\n<h2 id=\"troubleshooting\">{words['table_part']}</h2>\n"
            + "\n".join(tables)
            + f"\n<h2 id=\"raised\">{words['raised_part']}</h2>\n<p>{words['raised_intro']}</p>\n"
            + '<table class="wide raised"><col class="where"><col class="code"><col><col>'
            + f"<tr><th>{words['where']}</th><th>{words['code']}</th><th>{words['error']}</th>"
            + f"<th>{words['explained']}</th></tr>\n" + "\n".join(raised_rows) + "\n</table>")
    return page(language, words["errors_title"], body,
                ("../errors.html" if language == "zh" else "zh_CN/errors.html"), ("names.html", words["names_title"]))


def index_links(language: str = "en") -> str:
    """The line of the book's index that links the two pages."""
    words = WORDS[language]
    return ("<p>" + words["index_links"].format(names=f'<a href="names.html">{words["names_title"]}</a>',
                                                 errors=f'<a href="errors.html">{words["errors_title"]}</a>') + "</p>")


def write_pages(out: Path, language: str = "en", folder: Path = NOTEBOOKS, executed: dict | None = None,
                stacks: Path = STACKS) -> list[Path]:
    """names.html and errors.html of `language` into the book at `out` (Chinese ones into `out`/zh_CN)."""
    where = Path(out) / ("zh_CN" if language == "zh" else "")
    where.mkdir(parents=True, exist_ok=True)
    written = [where / "names.html", where / "errors.html"]
    written[0].write_text(names_page(language, folder, stacks), encoding="utf-8")
    written[1].write_text(errors_page(language, folder, executed), encoding="utf-8")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.reference", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "book", help="the book's folder (default: book/)")
    parser.add_argument("--language", choices=("en", "zh", "both"), default="both")
    args = parser.parse_args(argv)
    for language in ("en", "zh") if args.language == "both" else (args.language,):
        for path in write_pages(args.out, language):
            print(f"reference: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""`make book`: execute every notebook for real and render a static HTML site with all its outputs.

The notebooks are committed without outputs, so on a code host a reader sees no result at all. The
book runs each notebook top to bottom, as Restart and Run All does (real launches at the default
rank count; a cell tagged `raises-exception` may raise, any other error fails that notebook), and
renders it with nbconvert's JupyterLab template. Collapsed cells ("Checks", evidence) stay
collapsed: their code sits in a `<details>` element, their outputs show. The index page is the
README's table of notebooks, linked to the rendered pages, with each notebook's status and time.

The Chinese edition (中文版) is a run of its own: the notebooks in notebooks/zh_CN/, executed from that
folder as a Chinese reader runs them, go to book/zh_CN/ with an index made from README.zh-CN.md's table.
Every page links to its other language. `make test` builds the English book at 2 ranks and the Chinese
one at 8, so each rank count runs every notebook once.

Beside the index, two pages no notebook has (helpers.reference): names across stacks, and an error index generated
from the notebooks, with the errors this run raised.

The book works with no network: formulas become MathML when the page is written (latex2mathml; browsers
draw MathML themselves), and no script, font or style is loaded from another host.

    python -m helpers.book [--out book] [--language en|zh] [--readme README.md] [NOTEBOOK ...]

Exits non-zero, naming every notebook that failed, after rendering all of them (a failed notebook's
page shows its outputs up to the failing cell and the error).
"""

from __future__ import annotations

import argparse
import html
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).resolve().parent / "templates"  # templates/book: the lab template, plus <details>
CELL_TIMEOUT = 600  # seconds, as nbmake's --nbmake-timeout in pyproject.toml


@dataclass
class Page:
    notebook: Path
    html_name: str
    seconds: float
    error: str | None = None


# What an index and a page's navigation say, in each language.
WORDS = {
    "en": {"lang": "en", "all": "← all notebooks", "other": "中文版", "not_built": "not built",
           "ran": "ran in {:.0f} s", "failed": "FAILED: {}", "columns": ("notebook", "what it teaches", "this build"),
           "hidden": "code hidden in the notebook (click to show)",
           "title": "MindSpore distributed and automatic-parallel training, hands on",
           "intro": "Every notebook of the series, executed for real ({when}, {workers} ranks) with every output and "
                    "figure. Open one to read it with its results; run it yourself with <code>make lab</code>."},
    "zh": {"lang": "zh-CN", "all": "← 全部 Notebook", "other": "English", "not_built": "未构建",
           "ran": "运行 {:.0f} 秒", "failed": "失败：{}", "columns": ("Notebook", "内容", "本次构建"),
           "hidden": "代码在 Notebook 中已折叠（点击展开）",
           "title": "MindSpore 分布式与自动并行训练实战",
           "intro": "本系列的每个中文 Notebook 都在 notebooks/zh_CN/ 中真实运行过（{when}，{workers} 个 rank），"
                    "附全部输出与图表。打开任一页面即可连同结果阅读；自己运行请用 <code>make lab</code>。"},
}


def language_of(notebook: Path) -> str:
    """"zh" for a notebook of the Chinese edition (notebooks/zh_CN/), else "en"."""
    return "zh" if notebook.parent.name == "zh_CN" else "en"


def execute(path: Path) -> tuple[object, str | None]:
    """Run `path` in a fresh kernel from its own folder; return (executed notebook, first error or None)."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                            resources={"metadata": {"path": str(path.parent)}})
    try:
        client.execute()
    except (CellExecutionError, CellTimeoutError, DeadKernelError) as error:
        last_line = re.sub(r"\x1b\[[0-9;]*m", "", str(error).strip().splitlines()[-1])   # no terminal colours
        return nb, f"{type(error).__name__}: {last_line[:300]}"
    return nb, None


def mathml(tex: str, display: str) -> str:
    """TeX as MathML, which browsers draw with no script and no network. ValueError names a formula it cannot
    convert (the book must not show raw TeX)."""
    from latex2mathml.converter import convert

    try:
        return convert(tex.strip(), display=display)
    except Exception as error:   # latex2mathml raises its own exception classes for unknown commands
        raise ValueError(f"book: cannot turn ${tex}$ into MathML ({type(error).__name__}: {error})") from None


def exporter():
    """nbconvert's HTML exporter with the book's template, formulas as MathML and tables inside block quotes."""
    from jinja2 import pass_context
    from mistune.plugins.table import table_in_quote
    from nbconvert import HTMLExporter
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    class OfflineRenderer(IPythonRenderer):
        def inline_math(self, body: str) -> str:
            return mathml(body, "inline")

        def block_math(self, body: str) -> str:
            return mathml(body, "block")

        def latex_environment(self, name: str, body: str) -> str:
            return mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", "block")

    class BookExporter(HTMLExporter):
        @pass_context   # as HTMLExporter's own filter: the template passes the cell in the context
        def markdown2html(self, context, source):
            cell = context.get("cell", {})
            renderer = OfflineRenderer(escape=False, attachments=cell.get("attachments", {}),
                                       embed_images=self.embed_images, anchor_link_text=self.anchor_link_text,
                                       exclude_anchor_links=self.exclude_anchor_links, **self.lexer_options)
            markdown = MarkdownWithMath(renderer=renderer)
            table_in_quote(markdown)   # notebook 01's tables sit in a quote, as JupyterLab shows them
            return markdown.render(source)

    return BookExporter(template_name="book", extra_template_basedirs=[str(TEMPLATES)])


IMAGES = ("image/png", "image/jpeg")   # what nbconvert draws as <img> (helpers/templates/book: data_png, data_jpg)


def _plain(markdown: str) -> str:
    """A paragraph's text as a reader hears it: no markdown marks, links as their labels, code as its text."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    text = re.sub(r"^\s*(?:>\s*)+|^\s*[-*+]\s+", "", text, flags=re.M)
    text = re.sub(r"`+([^`]+)`+|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*", lambda m: next(g for g in m.groups() if g), text)
    return re.sub(r"\s+", " ", text).strip()


CUE = re.compile(r"\b(?:below|here|drawn|draws?|plots?|figure|picture|timeline|chart)\b|下面|下图|如下|画出|图示", re.I)


def figure_description(nb, index: int) -> str:
    """The alt text of the figures cell `index` of `nb` draws, in the notebook's own language: the section it sits
    in, and the sentence that introduces it. That is the last sentence of the closest prose paragraph above the cell
    that points at what follows (below, here, drawn, 下面, 下图 ...), else its first sentence. A Chinese notebook's
    markdown is Chinese, so its figures are described in Chinese."""
    from helpers.reference import heading_lines, source

    section, sentence = "", ""
    for cell in reversed(nb["cells"][:index]):
        if cell["cell_type"] != "markdown":
            continue
        text = source(cell)
        if not sentence:
            prose = [p for p in re.split(r"\n\s*\n", text) if p.strip()
                     and not p.lstrip().startswith(("#", "```", "|", "> |", "$$", "<"))]
            if prose:
                sentences = [s.strip() for s in re.split(r"(?<=[.!?;])\s+(?=[A-Z0-9`*(\[“])|(?<=[。！？；])",
                                                         _plain(prose[-1])) if s.strip()]
                pick = max((i for i, s in enumerate(sentences) if CUE.search(s)), default=0)
                sentence, chinese = sentences[pick], re.search(r"[\u4e00-\u9fff]", sentences[pick])
                if len(sentence) < (12 if chinese else 30) and len(sentences) > 1:   # "Launch it." says too little
                    pair = sentences[pick - 1:pick + 1] if pick else sentences[:2]
                    sentence = ("" if chinese else " ").join(pair)
                sentence = sentence.rstrip(":：")
        found = [line for level, line in heading_lines(text) if level >= 2] or \
            [line for level, line in heading_lines(text) if level == 1]
        if found:
            section = _plain(found[-1])
            break
    text = f"{section} — {sentence}" if section and sentence else section or sentence
    return text if len(text) <= 300 else text[:299].rsplit(" ", 1)[0] + "…"


def describe_figures(nb) -> int:
    """Give every image output of `nb` its alt text (`figure_description`, numbered when a cell draws several),
    kept in the output's metadata as `book_alt` for the page's template; nbconvert would otherwise write "No
    description has been provided for this image", in English on every page. Returns the number of figures."""
    count = 0
    for index, cell in enumerate(nb["cells"]):
        images = [o for o in cell.get("outputs", []) if any(kind in o.get("data", {}) for kind in IMAGES)]
        if images:
            text = figure_description(nb, index)
            for number, output in enumerate(images, start=1):
                output.setdefault("metadata", {})["book_alt"] = (
                    f"{text} ({number}/{len(images)})" if len(images) > 1 else text)
            count += len(images)
    return count


def render(nb, out: Path, language: str = "en", other: str | None = None) -> None:
    """`nb` as a page in `out`, in `language` ("en" or "zh"), linked to its other language's page `other`. Every
    figure gets alt text in the page's language (describe_figures)."""
    import copy

    from helpers.reference import notebook_title

    nb = copy.deepcopy(nb)   # the alt texts go into this page's copy, not into the run's notebook
    describe_figures(nb)
    words = WORDS[language]
    resources = {"metadata": {"name": notebook_title(nb)},
                 "book": {"all": words["all"], "other": other, "other_label": words["other"],
                          "hidden": words["hidden"]}}
    body, _ = exporter().from_notebook_node(nb, resources=resources)
    # <html lang>: CJK fonts for Chinese pages. nbconvert takes only ISO 639-1 codes, and the index says zh-CN.
    body = body.replace('<html lang="en">', f'<html lang="{words["lang"]}">', 1)
    body = re.sub(r'href="((?:\.\./)?\d\d_[\w-]+)\.ipynb', r'href="\1.html', body)   # notebook links: their pages
    out.write_text(body, encoding="utf-8")


def readme_rows(readme: Path) -> list[list[str]]:
    """The cells of each row of the README's notebooks table (the rows that link a notebook)."""
    rows = []
    for line in readme.read_text(encoding="utf-8").splitlines():
        if line.startswith("| [") and ".ipynb)" in line:
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def inline_markdown(text: str, pages: dict[str, Page]) -> str:
    """The README's inline markdown (links, `code`, **bold**) as HTML, notebook links sent to their pages."""
    text = html.escape(text, quote=False)
    text = re.sub(r"`([^`]+)`", r"<code>\1</code>", text)
    text = re.sub(r"\*\*([^*]+)\*\*", r"<b>\1</b>", text)

    def link(match: re.Match) -> str:
        label, target = match.groups()
        page = pages.get(Path(target).name)
        return f'<a href="{page.html_name if page else target}">{label}</a>'

    return re.sub(r"\[([^\]]+)\]\(([^)]+)\)", link, text)


def index_page(readme: Path, pages: dict[str, Page], language: str = "en", other: str | None = None,
               workers: int | str = "?") -> str:
    """The index: `readme`'s notebooks table, each row linked to its page with this build's status."""
    from helpers.reference import index_links

    words, rows = WORDS[language], []
    for cells in readme_rows(readme):
        name = re.search(r"\(([^)]+\.ipynb)\)", cells[0]).group(1)
        page = pages.get(Path(name).name)
        status = (words["not_built"] if page is None else words["ran"].format(page.seconds) if page.error is None
                  else words["failed"].format(html.escape(page.error)))
        rows.append("<tr>" + "".join(f"<td>{inline_markdown(c, pages)}</td>" for c in cells[:2])
                    + f"<td>{status}</td></tr>")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    switch = f'<p><a href="{other}">{words["other"]}</a></p>' if other else ""
    return f"""<!DOCTYPE html>
<html lang="{words["lang"]}"><head><meta charset="utf-8">
<title>{words["title"]}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;line-height:1.5}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.4rem .6rem;vertical-align:top}}
td:first-child{{min-width:12rem}}td:last-child,th:last-child{{min-width:7rem}}
th{{background:#f3f3f3}}code{{background:#f3f3f3;padding:0 .2rem}}</style></head><body>
<h1>{words["title"]}</h1>
{switch}<p>{words["intro"].format(when=when, workers=workers)}</p>
{index_links(language)}
<table><tr>{"".join(f"<th>{c}</th>" for c in words["columns"])}</tr>
{chr(10).join(rows)}
</table></body></html>
"""


def build(notebooks: list[Path], out: Path, readme: Path | None = None, log=print) -> list[Page]:
    """Execute and render every notebook, then the index of its language: English pages in `out`, Chinese ones
    (notebooks/zh_CN/) in `out`/zh_CN with the index of README.zh-CN.md (beside `readme`). Each page links to its
    other language's page, which the other language's build writes."""
    from helpers.device import default_workers

    pages, language, executed = {}, "en", {}
    for path in notebooks:
        language = language_of(path)
        folder = out / "zh_CN" if language == "zh" else out
        folder.mkdir(parents=True, exist_ok=True)
        log(f"book: executing {path.parent.name}/{path.name} ...", flush=True)
        start = time.monotonic()
        nb, error = execute(path)
        page = Page(path, path.with_suffix(".html").name, time.monotonic() - start, error)
        other = (f"../{page.html_name}" if language == "zh"
                 else f"zh_CN/{page.html_name}" if (path.parent / "zh_CN" / path.name).is_file() else None)
        render(nb, folder / page.html_name, language, other=other)
        pages[path.name], executed[path.name] = page, nb
        log(f"book: {path.name} {'ok' if error is None else 'FAILED'} in {page.seconds:.0f} s"
            + (f": {error}" if error else ""), flush=True)
    readme = readme or ROOT / "README.md"
    if language == "zh":
        (out / "zh_CN" / "index.html").write_text(index_page(readme.with_name("README.zh-CN.md"), pages, "zh",
                                                             "../index.html", default_workers()), encoding="utf-8")
    else:
        (out / "index.html").write_text(index_page(readme, pages, "en", "zh_CN/index.html", default_workers()),
                                        encoding="utf-8")
    # The names table and the error index (helpers.reference), the latter with the errors this run raised.
    from helpers.reference import write_pages

    write_pages(out, language, executed=executed)
    return list(pages.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.book", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook of --language")
    parser.add_argument("--out", type=Path, default=ROOT / "book", help="where the site goes (default: book/)")
    parser.add_argument("--language", choices=("en", "zh"), default="en",
                        help="en: notebooks/ into the site's root; zh: notebooks/zh_CN/ into its zh_CN/ folder")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md", help="whose notebooks table is the index "
                        "(the Chinese index reads README.zh-CN.md beside it)")
    args = parser.parse_args(argv)
    folder = ROOT / "notebooks" / ("zh_CN" if args.language == "zh" else "")
    notebooks = [p.resolve() for p in args.notebooks] or sorted(folder.glob("[0-9]*.ipynb"))
    missing = [str(p) for p in notebooks if not p.is_file()] or ([] if notebooks else [f"{folder}/[0-9]*.ipynb"])
    if missing:
        print(f"book: no such notebook: {', '.join(missing)}", file=sys.stderr)
        return 2
    if len({language_of(p) for p in notebooks}) > 1:
        print("book: English and Chinese notebooks are built by separate runs (--language zh for notebooks/zh_CN/)",
              file=sys.stderr)
        return 2
    failed = [page.notebook.name for page in build(notebooks, args.out, args.readme) if page.error]
    index = args.out / ("zh_CN" if language_of(notebooks[0]) == "zh" else "") / "index.html"
    print(f"book: {index} ({len(notebooks) - len(failed)} of {len(notebooks)} notebooks ran clean)")
    if failed:
        print(f"book: failed: {', '.join(failed)} (each page shows the error)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

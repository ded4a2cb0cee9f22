"""`make book`: execute every notebook for real and render a static HTML site with all its outputs.

The notebooks are committed without outputs, so on a code host a reader sees no result at all. The
book runs each notebook top to bottom, as Restart and Run All does (real launches at the default
rank count; a cell tagged `raises-exception` may raise, any other error fails that notebook), and
renders it with nbconvert's JupyterLab template. Collapsed cells ("Checks", evidence) stay
collapsed: their code sits in a `<details>` element, their outputs show. The index page is the
README's table of notebooks, linked to the rendered pages, with each notebook's status and time.

The Chinese edition (中文版) is rendered from the same run, not a second one: each executed notebook with
its markdown replaced by its translation (helpers.translation) goes to book/zh_CN/, with an index made
from README.zh-CN.md's table. Every page links to its other language.

    python -m helpers.book [--out book] [--readme README.md] [NOTEBOOK ...]

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

from helpers import translation

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).resolve().parent / "templates"  # templates/book: the lab template, plus <details>
CELL_TIMEOUT = 600  # seconds, as nbmake's --nbmake-timeout in pyproject.toml


@dataclass
class Page:
    notebook: Path
    html_name: str
    seconds: float
    error: str | None = None
    chinese: bool = False   # book/zh_CN/<html_name> exists


# What an index and a page's navigation say, in each language.
WORDS = {
    "en": {"lang": "en", "all": "← all notebooks", "other": "中文版", "not_built": "not built",
           "ran": "ran in {:.0f} s", "failed": "FAILED: {}", "columns": ("notebook", "what it teaches", "this build"),
           "title": "MindSpore distributed and automatic-parallel training, hands on",
           "intro": "Every notebook of the series, executed for real ({when}) with every output and figure. "
                    "Open one to read it with its results; run it yourself with <code>make lab</code>."},
    "zh": {"lang": "zh-CN", "all": "← 全部 Notebook", "other": "English", "not_built": "未构建",
           "ran": "运行 {:.0f} 秒", "failed": "失败：{}", "columns": ("Notebook", "内容", "本次构建"),
           "title": "MindSpore 分布式与自动并行训练实战",
           "intro": "本系列的每个 Notebook 都真实运行过（{when}），附全部输出与图表（与英文版同一次运行）。"
                    "打开任一页面即可连同结果阅读；自己运行请用 <code>make lab</code>。"},
}


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


def render(nb, out: Path, language: str = "en", other: str | None = None) -> None:
    """`nb` as a page in `out`, in `language` ("en" or "zh"), linked to its other language's page `other`."""
    from nbconvert import HTMLExporter

    words = WORDS[language]
    exporter = HTMLExporter(template_name="book", extra_template_basedirs=[str(TEMPLATES)],
                            language_code=words["lang"][:2])   # <html lang>: CJK fonts for Chinese pages
    resources = {"book": {"all": words["all"], "other": other, "other_label": words["other"]}}
    body, _ = exporter.from_notebook_node(nb, resources=resources)
    body = re.sub(r'href="((?:\.\./)?\d\d_[\w-]+)\.ipynb', r'href="\1.html', body)   # notebook links: their pages
    out.write_text(body, encoding="utf-8")


def render_chinese(nb, page: Page, out: Path, catalogues: Path) -> str | None:
    """The executed English notebook `nb` with its markdown in Chinese, as out/zh_CN/<page>; why not, if not."""
    import copy

    catalogue_file = catalogues / page.notebook.with_suffix(".po").name
    if not catalogue_file.is_file():
        return f"no catalogue {catalogue_file.name}"
    try:
        chinese = translation.translate(copy.deepcopy(nb), page.notebook.name,
                                        translation.read_catalogue(catalogue_file))
    except KeyError as error:
        return error.args[0]
    (out / "zh_CN").mkdir(parents=True, exist_ok=True)
    render(chinese, out / "zh_CN" / page.html_name, "zh", other=f"../{page.html_name}")
    return None


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


def index_page(readme: Path, pages: dict[str, Page], language: str = "en", other: str | None = None) -> str:
    """The index: `readme`'s notebooks table, each row linked to its page with this build's status."""
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
th{{background:#f3f3f3}}code{{background:#f3f3f3;padding:0 .2rem}}</style></head><body>
<h1>{words["title"]}</h1>
{switch}<p>{words["intro"].format(when=when)}</p>
<table><tr>{"".join(f"<th>{c}</th>" for c in words["columns"])}</tr>
{chr(10).join(rows)}
</table></body></html>
"""


def build(notebooks: list[Path], out: Path, readme: Path = ROOT / "README.md", log=print,
          catalogues: Path = translation.CATALOGUES) -> list[Page]:
    """Execute and render every notebook, its Chinese page where its translation is complete, and the indexes
    (book/zh_CN/index.html from the README's Chinese edition, README.zh-CN.md beside `readme`, if it exists)."""
    out.mkdir(parents=True, exist_ok=True)
    pages = {}
    for path in notebooks:
        log(f"book: executing {path.name} ...", flush=True)
        start = time.monotonic()
        nb, error = execute(path)
        page = Page(path, path.with_suffix(".html").name, time.monotonic() - start, error)
        not_chinese = render_chinese(nb, page, out, catalogues)
        page.chinese = not_chinese is None
        render(nb, out / page.html_name, "en", other=f"zh_CN/{page.html_name}" if page.chinese else None)
        pages[path.name] = page
        log(f"book: {path.name} {'ok' if error is None else 'FAILED'} in {page.seconds:.0f} s"
            + (f": {error}" if error else "") + (f" (no Chinese page: {not_chinese})" if not_chinese else ""),
            flush=True)
    readme_zh = readme.with_name("README.zh-CN.md")
    chinese_pages = {name: page for name, page in pages.items() if page.chinese}
    (out / "index.html").write_text(index_page(readme, pages, "en", "zh_CN/index.html" if chinese_pages else None),
                                    encoding="utf-8")
    if chinese_pages and readme_zh.is_file():
        (out / "zh_CN" / "index.html").write_text(index_page(readme_zh, chinese_pages, "zh", "../index.html"),
                                                  encoding="utf-8")
    return list(pages.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.book", description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    parser.add_argument("--out", type=Path, default=ROOT / "book", help="where the site goes (default: book/)")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md", help="whose notebooks table is the index")
    args = parser.parse_args(argv)
    notebooks = [p.resolve() for p in args.notebooks] or sorted((ROOT / "notebooks").glob("[0-9]*.ipynb"))
    missing = [str(p) for p in notebooks if not p.is_file()]
    if missing:
        print(f"book: no such notebook: {', '.join(missing)}", file=sys.stderr)
        return 2
    failed = [page.notebook.name for page in build(notebooks, args.out, args.readme) if page.error]
    print(f"book: {args.out / 'index.html'} ({len(notebooks) - len(failed)} of {len(notebooks)} notebooks ran clean)")
    if failed:
        print(f"book: failed: {', '.join(failed)} (each page shows the error)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

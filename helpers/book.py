"""`make book`: execute every notebook for real and render a static HTML site with all its outputs.

The notebooks are committed without outputs, so on a code host a reader sees no result at all. The
book runs each notebook top to bottom, as Restart and Run All does (real launches at the default
rank count; a cell tagged `raises-exception` may raise, any other error fails that notebook), and
renders it with nbconvert's JupyterLab template. Collapsed cells ("Checks", evidence) stay
collapsed: their code sits in a `<details>` element, their outputs show. The index page is the
README's table of notebooks, linked to the rendered pages, with each notebook's status and time.

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

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = Path(__file__).resolve().parent / "templates"  # templates/book: the lab template, plus <details>
CELL_TIMEOUT = 600  # seconds, as nbmake's --nbmake-timeout in pyproject.toml


@dataclass
class Page:
    notebook: Path
    html_name: str
    seconds: float
    error: str | None = None


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


def render(nb, out: Path) -> None:
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="book", extra_template_basedirs=[str(TEMPLATES)])
    body, _ = exporter.from_notebook_node(nb)
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


def index_page(readme: Path, pages: dict[str, Page]) -> str:
    rows = []
    for cells in readme_rows(readme):
        name = re.search(r"\(([^)]+\.ipynb)\)", cells[0]).group(1)
        page = pages.get(Path(name).name)
        status = ("not built" if page is None else
                  f"ran in {page.seconds:.0f} s" if page.error is None else f"FAILED: {html.escape(page.error)}")
        rows.append("<tr>" + "".join(f"<td>{inline_markdown(c, pages)}</td>" for c in cells[:2])
                    + f"<td>{status}</td></tr>")
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>MindSpore distributed and automatic-parallel training, hands on</title>
<style>body{{font-family:system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;line-height:1.5}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.4rem .6rem;vertical-align:top}}
th{{background:#f3f3f3}}code{{background:#f3f3f3;padding:0 .2rem}}</style></head><body>
<h1>MindSpore distributed and automatic-parallel training, hands on</h1>
<p>Every notebook of the series, executed for real ({when}) with every output and figure.
Open one to read it with its results; run it yourself with <code>make lab</code>.</p>
<table><tr><th>notebook</th><th>what it teaches</th><th>this build</th></tr>
{chr(10).join(rows)}
</table></body></html>
"""


def build(notebooks: list[Path], out: Path, readme: Path = ROOT / "README.md", log=print) -> list[Page]:
    out.mkdir(parents=True, exist_ok=True)
    pages = {}
    for path in notebooks:
        log(f"book: executing {path.name} ...", flush=True)
        start = time.monotonic()
        nb, error = execute(path)
        page = Page(path, path.with_suffix(".html").name, time.monotonic() - start, error)
        render(nb, out / page.html_name)
        pages[path.name] = page
        log(f"book: {path.name} {'ok' if error is None else 'FAILED'} in {page.seconds:.0f} s"
            + (f": {error}" if error else ""), flush=True)
    (out / "index.html").write_text(index_page(readme, pages), encoding="utf-8")
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

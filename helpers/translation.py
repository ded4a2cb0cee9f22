"""The Chinese edition (中文版): notebooks/zh_CN/ generated from the English notebooks and their catalogues.

English is the source. Each English notebook has one gettext catalogue, translations/zh_CN/<notebook>.po,
with one entry per paragraph of its markdown cells (msgid: the English paragraph, msgstr: its Chinese),
read and written with polib. The Chinese notebook is the English one with every markdown paragraph
replaced by its translation: code cells and all metadata are copied as they are, so the Chinese notebook
runs exactly as the English one does. Notebook links stay between Chinese siblings; other relative links
gain a `../` (the README's go to README.zh-CN.md).

    python -m helpers.translation update [NOTEBOOK ...]    # catalogues follow the English text
    python -m helpers.translation generate [NOTEBOOK ...]  # notebooks/zh_CN/ from the catalogues
    python -m helpers.translation check [NOTEBOOK ...]     # what is untranslated, fuzzy, stale or inconsistent

`update` adds each new English paragraph; one that replaced a similar paragraph keeps the old translation,
marked fuzzy, with the old English beside it (`#| msgid`), so the translator sees exactly what changed.
A translator edits the msgstr, deletes the `#, fuzzy` line (the `#| msgid` one goes by itself), then runs
`generate`. `make zh` runs all three.

`check` also holds the Chinese to the glossary's words (translations/glossary.tsv): outside code, no
translation (nor README.zh-CN.md, checked when no notebook is named) may use a variant the glossary forbids
(worker for 工作进程, 全规约 for 全归约, …), italic Chinese (`*…*`, `_…_`) or ASCII quotes ("…" for “…”), and the
template's headings are the series' own (## 小结, | 现象 | 原因 | 解决方法 |, [本系列概览](../README.md): BOILERPLATE).

The book's names-across-stacks page (helpers.reference, translations/stacks.tsv) has a catalogue too,
translations/zh_CN/stacks.po: one entry per note or source line of stacks.tsv that holds English words, so the
Chinese page has no English note left. `update`, `check` and `make zh` handle it when no notebook is named.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import re
import sys
from pathlib import Path

import polib

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CHINESE = NOTEBOOKS / "zh_CN"                     # the generated Chinese notebooks
CATALOGUES = ROOT / "translations" / "zh_CN"      # one .po per notebook
GLOSSARY = ROOT / "translations" / "glossary.tsv"  # one Chinese term per concept, for the whole series
HEADER = """\
The Chinese translation of notebooks/{name}, one entry per English markdown paragraph.
notebooks/zh_CN/{name} is generated from it: `make zh`. An entry marked fuzzy had its English
changed (the old English is the `#| msgid` above it): fix the msgstr, then delete the `#, fuzzy` line.
Terms: translations/glossary.tsv; `# not a term: loss` above an entry lifts a term it uses in another sense."""
ENGLISH_LINK = "> 英文原版 (English edition): [{name}](../{name})"


def english_notebooks() -> list[Path]:
    return sorted(NOTEBOOKS.glob("[0-9]*.ipynb"))


def paragraphs(markdown: str) -> list[str]:
    """A markdown cell's paragraphs: split at blank lines, except inside a ``` fence."""
    chunks, current, fenced = [], [], False
    for line in markdown.split("\n"):
        if line.strip().startswith("```"):
            fenced = not fenced
        if not line.strip() and not fenced:
            if current:
                chunks.append("\n".join(current))
            current = []
        else:
            current.append(line)
    if current:
        chunks.append("\n".join(current))
    return chunks


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def english_paragraphs(notebook: Path) -> list[tuple[int, str]]:
    """(cell index, paragraph) for every paragraph of every markdown cell, in order."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return [(i, paragraph) for i, cell in enumerate(cells) if cell["cell_type"] == "markdown"
            for paragraph in paragraphs(_source(cell))]


def catalogue_path(notebook: Path) -> Path:
    return CATALOGUES / notebook.with_suffix(".po").name


def read_catalogue(path: Path) -> polib.POFile:
    return polib.pofile(str(path), wrapwidth=0, check_for_duplicates=True)


def write_catalogue(catalogue: polib.POFile, path: Path) -> None:
    for entry in catalogue:
        if not entry.fuzzy:
            entry.previous_msgid = None   # the old English matters only until the translation is brought up to date
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(str(catalogue), encoding="utf-8")


def _merge(path: Path, texts: dict[str, list[tuple[str, str]]], header: str) -> Path:
    """Write the catalogue at `path` for `texts` (English text: its occurrences), in that order, keeping what is
    translated (update() for a notebook, update_stacks() for the names page)."""
    old = {entry.msgid: entry for entry in read_catalogue(path)} if path.exists() else {}
    unmatched = [msgid for msgid in old if msgid not in texts]
    catalogue = polib.POFile(wrapwidth=0)
    catalogue.header = header
    catalogue.metadata = {"Project-Id-Version": "MindSpore distributed training, hands on", "Language": "zh_CN",
                          "MIME-Version": "1.0", "Content-Type": "text/plain; charset=UTF-8",
                          "Content-Transfer-Encoding": "8bit"}
    for text, occurrences in texts.items():
        entry = polib.POEntry(msgid=text, msgstr="", occurrences=occurrences)
        before = old.get(text)
        if before is None:
            close = difflib.get_close_matches(text, unmatched, n=1)
            if close:
                unmatched.remove(close[0])
                before = old[close[0]]
                entry.flags = ["fuzzy"]
                entry.previous_msgid = before.previous_msgid if before.fuzzy else before.msgid
        if before is not None:
            entry.msgstr, entry.tcomment = before.msgstr, before.tcomment
            if before.fuzzy and not entry.fuzzy:
                entry.flags, entry.previous_msgid = ["fuzzy"], before.previous_msgid
        catalogue.append(entry)
    write_catalogue(catalogue, path)
    return path


def update(notebook: Path) -> Path:
    """Bring the notebook's catalogue in line with its English text, in the English order.

    A paragraph that is new gets an empty entry; one that replaced a similar paragraph (difflib's closest match,
    as gettext's msgmerge does) keeps the old translation, marked fuzzy, with the English it was made from
    (`#| msgid`); entries no longer in the English go."""
    cells: dict[str, list[tuple[str, str]]] = {}
    for cell, paragraph in english_paragraphs(notebook):
        cells.setdefault(paragraph, []).append((notebook.name, str(cell + 1)))   # cells counted from 1
    return _merge(catalogue_path(notebook), cells, HEADER.format(name=notebook.name))


def _relink(text: str) -> str:
    """Relative link targets as seen from notebooks/zh_CN/: notebooks stay siblings, the README turns Chinese."""
    def target(match: re.Match) -> str:
        url = match.group(1)
        if re.match(r"[a-z]+:|#|/|\d\d_[\w-]+\.ipynb", url):
            return match.group(0)
        return "](" + ("../../README.zh-CN.md" if url == "../README.md" else "../" + url) + ")"
    return re.sub(r"\]\(([^)\s]+)\)", target, text)


def translate(nb: dict, name: str, catalogue) -> dict:
    """Replace, in place, every markdown paragraph of notebook `nb` (JSON or nbformat) by its translation.

    KeyError naming the first paragraph without a current translation. Outputs, code and metadata stay."""
    first = True
    for cell in nb["cells"]:
        if cell["cell_type"] != "markdown":
            continue
        translated = []
        for paragraph in paragraphs(_source(cell)):
            entry = catalogue.find(paragraph)
            if entry is None or not entry.msgstr or entry.fuzzy:
                state = "has no entry" if entry is None else "is fuzzy" if entry.fuzzy else "is untranslated"
                raise KeyError(f"{name}: the paragraph {paragraph[:60]!r} {state} in "
                               f"translations/zh_CN/{Path(name).with_suffix('.po')}; run `make zh` and translate it")
            translated.append(_relink(entry.msgstr))
        if first:   # under the title: where the English original is
            translated.insert(1, ENGLISH_LINK.format(name=name))
            first = False
        text = "\n\n".join(translated)
        cell["source"] = text.splitlines(keepends=True) if isinstance(cell["source"], list) else text
    return nb


def chinese_notebook(notebook: Path, catalogue=None) -> str:
    """The Chinese notebook's text: the English notebook's JSON with every markdown paragraph translated."""
    catalogue = catalogue if catalogue is not None else read_catalogue(catalogue_path(notebook))
    nb = translate(json.loads(notebook.read_text(encoding="utf-8")), notebook.name, catalogue)
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def generate(notebook: Path) -> Path:
    out = CHINESE / notebook.name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(chinese_notebook(notebook), encoding="utf-8")
    return out


# --- what the tests check (tests/test_translation.py) ---

UNITS = {"s": ("s", "秒"), "ms": ("ms", "毫秒"), "min": ("min", "分钟"), "h": ("h", "小时"), "x": ("x", "×", "倍"),
         "×": ("×", "倍")}
NUMBER_WITH_UNIT = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?) ?"
                              r"(GiB|GB|MiB|MB|KiB|KB|TB|GB/s|Gbit/s|ms|min|s|h|%|x|×|B)(?![\w/])")


CODE_SPAN = r"``.+?``|`[^`]+`"   # ``one with `backticks` inside`` or `a plain one`, either may wrap onto the next line


def without_code(text: str) -> str:
    return re.sub(rf"```.*?```|{CODE_SPAN}", " ", text, flags=re.S)


def must_keep(english: str) -> list[str]:
    """What a translation must carry over as it is: fenced blocks, inline code, link targets, formulas."""
    fences = re.findall(r"```.*?```", english, flags=re.S)
    rest = re.sub(r"```.*?```", " ", english, flags=re.S)
    return (fences + re.findall(CODE_SPAN, rest, flags=re.S) + re.findall(r"\]\(([^)\s]+)\)", rest)
            + re.findall(r"\$[^$\n]+\$", without_code(rest)))


def numbers_with_units(english: str) -> list[tuple[str, str]]:
    return NUMBER_WITH_UNIT.findall(re.sub(r"\]\([^)]*\)", " ", without_code(english)))


def _glossary_rows(path: Path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as f:
        rows = [row for row in csv.reader(f, delimiter="\t") if row and not row[0].startswith("#")]
    return rows[1:]


def read_glossary(path: Path = GLOSSARY) -> list[tuple[str, str]]:
    """(English term, Chinese term) pairs, one per concept: the terms every translation uses.

    A row whose English is in parentheses, "(AllReduce)", only names its concept: no paragraph must carry it."""
    return [(english, chinese) for english, chinese, *_ in _glossary_rows(path) if not english.startswith("(")]


def read_variants(path: Path = GLOSSARY) -> list[tuple[str, list[str]]]:
    """(Chinese term, [variants the series must not use for it]), from every row's fourth column; rows that share
    a Chinese term (bit-for-bit, bit-identical: 逐位) share their variants."""
    variants: dict[str, list[str]] = {}
    for row in _glossary_rows(path):
        listed = variants.setdefault(row[1], [])
        new = [v.strip() for v in (row[3] if len(row) > 3 else "").split(",") if v.strip()]
        listed += [v for v in new if v not in listed]
    return [(term, listed) for term, listed in variants.items() if listed]


HAN = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"   # Chinese characters


def prose(text: str) -> str:
    """The text a reader reads as prose: no code, link targets, formulas or HTML tags."""
    text = re.sub(r"\]\([^)\s]*\)", "]", without_code(text))
    return re.sub(r"\$[^$\n]+\$|<[^>\n]+>", " ", text)


def italic_chinese(text: str) -> list[str]:
    """`*…*` and `_…_` spans holding Chinese, outside code: Chinese typesetting has no italics."""
    plain = re.sub(r"\\[*_]", "", prose(text))
    plain = re.sub(r"^[ \t>]*[*+-][ \t]", "", plain, flags=re.M)     # list bullets
    plain = plain.replace("**", "").replace("__", "")                  # bold
    spans = re.findall(r"\*[^*\n]+\*", plain) + re.findall(
        r"(?<![A-Za-z0-9_])_(?!\s)[^_\n]+?(?<!\s)_(?![A-Za-z0-9_])", plain)
    return [span for span in spans if re.search(f"[{HAN}]", span)]


WITHIN = "[^，。；：、！？\n]{0,8}"   # what … in a Chinese variant stands for: a few characters of one clause


def _variant(variant: str) -> re.Pattern:
    """A forbidden variant as a pattern: an English word whole (plural too, any case, not part of a name such as
    worker_0.log or --worker_num), a Chinese one anywhere (a space in it may be missing; … stands for up to eight
    characters of the same clause: 发起…算子 finds 发起数百个小算子)."""
    if re.fullmatch(r"[A-Za-z][A-Za-z .-]*", variant):
        pattern = re.escape(variant).replace(r"\ ", "[ -]")
        return re.compile(rf"(?<![A-Za-z0-9_./-]){pattern}(?:s|es)?(?![A-Za-z0-9_/-]|\.[A-Za-z0-9])", re.I)
    return re.compile(re.escape(variant).replace(r"\ ", r"\s*").replace("…", WITHIN))


def style_problems(chinese: str, variants: list[tuple[str, list[str]]], allowed: set[str] = frozenset()) -> list[str]:
    """Forbidden variants, italic Chinese and ASCII quotes in a translation's prose (code excluded).

    The English original glossed right after the term, 工作进程（worker）, is not a variant, nor is the term itself
    where a variant is part of it (单元 in 单元格).
    `allowed`: variants a translator comment lifts for this paragraph (`# allow: 下线` where it means going offline)."""
    plain, found = prose(chinese), []
    for term, forbidden in variants:
        glossed = re.sub(re.escape(term) + r"[（(][^）)\n]*[）)]", term, plain).replace(term, "\u25af")
        found += [f"{match.group(0)!r} where the series writes {term}" for variant in forbidden
                  if variant not in allowed for match in _variant(variant).finditer(glossed)]
    found += [f"italic Chinese {span!r} (Chinese has no italics: bold or plain)" for span in italic_chinese(chinese)]
    found += [f"ASCII quotes {quoted!r} (Chinese text quotes with “…”, English quotes too)"
              for quoted in re.findall(r'"[^"\n]*"', plain)]
    return found


# The template's fixed lines (tests/test_notebook_hygiene.py: SECTIONS) and how every Chinese notebook writes them:
# an English paragraph that starts with the first must have a translation that starts with the second.
BOILERPLATE = (
    ("## What you'll learn", "## 你将学到"), ("## Prerequisites", "## 前置知识"), ("## Configuration", "## 配置"),
    ("## Summary", "## 小结"), ("## Exercises", "## 练习"), ("## Troubleshooting", "## 常见问题"),
    ("| symptom | cause | fix |", "| 现象 | 原因 | 解决方法 |"), ("## Next", "## 下一步"),
)
OVERVIEW = "[本系列概览](../README.md)"   # "Back to the [series overview](../README.md)", in every notebook's Next


def boilerplate_problems(english: str, chinese: str) -> list[str]:
    """The template's headings, the troubleshooting table's header and the link back to the README, each written
    the one way 01–16 write it."""
    found = [f"{start!r} is {zh!r} in this series" for start, zh in BOILERPLATE
             if english.startswith(start) and not chinese.startswith(zh)]
    if "](../README.md)" in english and OVERVIEW not in chinese:
        found.append(f"the link back to the README is {OVERVIEW!r} in this series")
    return found


KEPT = {"rank", "master"}   # lowercase words the Chinese keeps: rank (so in every notebook), MindSpeed's master branch


def english_words(text: str) -> list[str]:
    """The English words of `text` that a Chinese page must not show untranslated: lowercase words outside code
    spans, link targets, formulas and HTML tags that are not paths or identifiers (a token with / . _ = < > or a
    digit, or an option such as --sequence-parallel). Capitalised words are names and titles (PyTorch, Parallelism
    Strategies Guide) and stay as they are."""
    return [token for token in re.findall(r"[^\s,;:()（）：；，、。\"“”'‘’]+", prose(text))
            if re.fullmatch(r"[a-z][a-z-]*", token) and token not in KEPT]


STACKS = ROOT / "translations" / "stacks.tsv"
STACKS_CATALOGUE = CATALOGUES / "stacks.po"
STACKS_HEADER = """\
The Chinese of translations/stacks.tsv's notes and source lines, for book/zh_CN/names.html (helpers.reference):
one entry per cell that holds English words (helpers.translation.english_words). `make zh` adds a new or changed
cell here; translate it, keep its code spans, and delete the `#, fuzzy` line."""


def stack_notes(stacks: Path = STACKS) -> dict[str, list[tuple[str, str]]]:
    """Each note and source line of stacks.tsv that holds English words, with where it is (the file's line)."""
    from helpers.reference import STACK_COLUMNS, read_tsv

    notes: dict[str, list[tuple[str, str]]] = {}
    for line, row in enumerate(read_tsv(stacks), start=1):
        for key, *_ in STACK_COLUMNS:
            for text in (row[key], row[key + "_source"]):
                if text and english_words(text):
                    notes.setdefault(text, []).append((stacks.name, f"{row['english']} / {key} (row {line})"))
    return notes


def update_stacks(stacks: Path = STACKS, path: Path = STACKS_CATALOGUE) -> Path:
    """stacks.po follows stacks.tsv: a new or edited note gets its entry (an edited one fuzzy)."""
    return _merge(path, stack_notes(stacks), STACKS_HEADER)


def stacks_chinese(stacks: Path = STACKS, path: Path = STACKS_CATALOGUE) -> dict[str, str]:
    """English note -> its Chinese, for every note of stacks.tsv that needs one. ValueError naming the first note
    without a current translation, and the fix."""
    catalogue = read_catalogue(path) if path.exists() else polib.POFile()
    chinese = {}
    for text in stack_notes(stacks):
        entry = catalogue.find(text)
        if entry is None or entry.fuzzy or not entry.msgstr:
            state = "has no entry" if entry is None else "is fuzzy" if entry.fuzzy else "is untranslated"
            shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            raise ValueError(f"{stacks.name}: the note {text[:60]!r} {state} in {shown}; "
                             "run `make zh` and translate it")
        chinese[text] = entry.msgstr
    return chinese


def check_stacks(stacks: Path = STACKS, path: Path = STACKS_CATALOGUE) -> list[str]:
    """What is wrong with stacks.po: a note untranslated, fuzzy or missing, a translation that lost a code span or
    still holds English words, a forbidden variant."""
    if not path.exists():
        return [f"no catalogue {path}; run `make zh`"]
    catalogue, variants, found = read_catalogue(path), read_variants(), []
    for text in stack_notes(stacks):
        entry, where = catalogue.find(text), f"{path.name}: {text[:50]!r}"
        if entry is None:
            found.append(f"{where}: no entry (stacks.tsv changed: run `make zh`)")
        elif entry.fuzzy or not entry.msgstr:
            found.append(f"{where}: {'fuzzy' if entry.fuzzy else 'untranslated'}")
        else:
            left = english_words(entry.msgstr)
            found += [f"{where}: {p}" for p in problems(text, entry.msgstr, [])
                      + ([f"English left in the translation: {', '.join(left)}"] if left else [])
                      + style_problems(entry.msgstr, variants, allowed_variants(entry))]
    return found


def problems(english: str, chinese: str, glossary: list[tuple[str, str]]) -> list[str]:
    """What is wrong with one paragraph's translation (empty: nothing)."""
    found = [f"lost {kept!r}" for kept in must_keep(english) if kept not in chinese]
    plain = without_code(chinese)
    for number, unit in numbers_with_units(english):
        spellings = UNITS.get(unit, (unit,))
        if not any(re.search(rf"(?<![\d,.]){re.escape(number)} ?{re.escape(u)}", plain) for u in spellings):
            found.append(f"lost the number {number} {unit}")
    prose = without_code(english).lower()
    for term, chinese_term in glossary:
        pattern = re.escape(term.lower()).replace(r"\ ", "[ -]")   # "data parallel", "data-parallel"
        if re.search(rf"\b{pattern}(?:s|es|d|ed|ing|ism)?\b", prose) and chinese_term not in chinese:
            found.append(f"'{term}' is {chinese_term} in this series")
    return found


def not_terms(entry: polib.POEntry) -> set[str]:
    """Glossary terms the paragraph uses in another sense, named by a translator comment above its entry:
    `# not a term: loss` (a power loss is not the training loss). Each is then not required."""
    return {term.strip().lower() for comment in (entry.tcomment or "").splitlines()
            if comment.startswith("not a term:") for term in comment.removeprefix("not a term:").split(",")}


def allowed_variants(entry: polib.POEntry) -> set[str]:
    """Forbidden variants the paragraph uses in another sense, named by a translator comment above its entry:
    `# allow: 下线` (a node going offline is not the retirement, 日落)."""
    return {variant.strip() for comment in (entry.tcomment or "").splitlines() if comment.startswith("allow:")
            for variant in comment.removeprefix("allow:").split(",")}


def check(notebook: Path, glossary: list[tuple[str, str]] | None = None,
          variants: list[tuple[str, list[str]]] | None = None) -> list[str]:
    """Every problem of the notebook's Chinese edition: missing, fuzzy or inconsistent entries, forbidden variants,
    italic Chinese, ASCII quotes, a stale file."""
    glossary = read_glossary() if glossary is None else glossary
    variants = read_variants() if variants is None else variants
    path = catalogue_path(notebook)
    if not path.exists():
        return [f"{notebook.name}: no catalogue {path.relative_to(ROOT)}; run `make zh`"]
    catalogue, found = read_catalogue(path), []
    for cell, paragraph in english_paragraphs(notebook):
        entry, where = catalogue.find(paragraph), f"{notebook.name} cell {cell + 1}"
        if entry is None:
            found.append(f"{where}: no entry for {paragraph[:60]!r} (English changed: run `make zh`)")
        elif entry.fuzzy or not entry.msgstr:
            found.append(f"{where}: {'fuzzy' if entry.fuzzy else 'untranslated'}: {paragraph[:60]!r}")
        else:
            terms = [(t, zh) for t, zh in glossary if t.lower() not in not_terms(entry)]
            found += [f"{where}: {p} in the translation of {paragraph[:40]!r}"
                      for p in problems(paragraph, entry.msgstr, terms)
                      + boilerplate_problems(paragraph, entry.msgstr)
                      + style_problems(entry.msgstr, variants, allowed_variants(entry))]
    if not found:
        out = CHINESE / notebook.name
        if not out.exists() or out.read_text(encoding="utf-8") != chinese_notebook(notebook, catalogue):
            found.append(f"{notebook.name}: {out.relative_to(ROOT)} is not what the catalogue generates; "
                         "run `make zh` and commit it")
    return found


README_ZH = ROOT / "README.zh-CN.md"


def readme_problems(path: Path = README_ZH) -> list[str]:
    """README.zh-CN.md's forbidden variants, italic Chinese and ASCII quotes, per paragraph."""
    variants = read_variants()
    return [f"{path.name}: {problem} in {paragraph[:40]!r}"
            for paragraph in paragraphs(path.read_text(encoding="utf-8"))
            for problem in style_problems(paragraph, variants)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.translation", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["update", "generate", "check"])
    parser.add_argument("notebooks", nargs="*", type=Path, help="default: every notebook in notebooks/")
    args = parser.parse_args(argv)
    notebooks = [p.resolve() for p in args.notebooks] or english_notebooks()
    failed = 0
    for notebook in notebooks:
        if args.command == "update":
            print(f"zh: {update(notebook).relative_to(ROOT)}")
        elif args.command == "generate":
            try:
                print(f"zh: {generate(notebook).relative_to(ROOT)}")
            except KeyError as error:
                print(f"zh: {error.args[0]}", file=sys.stderr)
                failed += 1
        else:
            found = check(notebook)
            failed += bool(found)
            print("\n".join(found) if found else f"zh: {notebook.name} ok")
    if not args.notebooks:   # the names page's catalogue and README.zh-CN.md
        if args.command == "update":
            print(f"zh: {update_stacks().relative_to(ROOT)}")
        elif args.command == "check":
            for name, found in ((STACKS_CATALOGUE.name, check_stacks()), (README_ZH.name, readme_problems())):
                failed += bool(found)
                print("\n".join(found) if found else f"zh: {name} ok")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

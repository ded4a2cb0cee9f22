# The series' commands. `make demo` and `make test` set everything up on first use.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-8 book book-en book-zh lab lint clean zh

setup: $(STAMP)

# Created once; re-installed only when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: setup
	$(PY) -m helpers.demo

# The tests, then every notebook executed twice while it is rendered into the book: the English ones at the
# default rank count (2 on CPU, 8 on an Ascend node), then the Chinese ones from notebooks/zh_CN/, where a Chinese
# reader runs them, at 8 ranks, the Ascend default: no lesson may hold only at one rank count, and every Chinese
# notebook must run from its own folder. The book fails exactly where nbmake would (both run the notebook with
# nbclient; a cell tagged raises-exception may raise, any other error fails).
test: setup
	$(PY) -m pytest tests --durations=25
	$(MAKE) book-en
	TUTORIAL_WORKERS=8 $(MAKE) book-zh

# A static HTML site of every notebook with its real outputs, readable offline: book/index.html, and the Chinese
# edition's own run in book/zh_CN/index.html.
book: book-en book-zh

book-en: setup
	$(PY) -m helpers.book --out book

book-zh: setup
	$(PY) -m helpers.book --out book --language zh

# The Chinese edition follows the English text: catalogues updated (edited paragraphs turn fuzzy), notebooks
# regenerated, then every problem listed. Translate what it lists in translations/zh_CN/*.po, run it again.
zh: setup
	$(PY) -m helpers.translation update
	-$(PY) -m helpers.translation generate
	$(PY) -m helpers.translation check

test-8: setup
	TUTORIAL_WORKERS=8 $(PY) -m pytest notebooks

lab: setup
	$(VENV)/bin/jupyter lab notebooks/

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf runs book

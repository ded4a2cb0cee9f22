# The series' commands. `make demo` and `make test` set everything up on first use.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-8 book lab lint clean zh

setup: $(STAMP)

# Created once; re-installed only when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: setup
	$(PY) -m helpers.demo

# The tests, then every notebook executed at the default rank count (2 on CPU, 8 on an Ascend node)
# while it is rendered into the book, then the notebooks again at 8 ranks, the Ascend default: no
# lesson may hold only at one rank count. The book fails exactly where nbmake would (both run the
# notebook with nbclient; a cell tagged raises-exception may raise, any other error fails).
# One Chinese notebook runs too (08: it reads notebook 02's script, so it proves the Chinese folder resolves
# what the English one does); the others carry the same code cells byte for byte (tests/test_translation.py).
test: setup
	$(PY) -m pytest tests
	$(MAKE) book
	$(PY) -m pytest notebooks/zh_CN/08_dynamic_graph_path.ipynb
	$(MAKE) test-8

# A static HTML site of every notebook with its real outputs: book/index.html, and the same run in Chinese
# (book/zh_CN/index.html).
book: setup
	$(PY) -m helpers.book --out book

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

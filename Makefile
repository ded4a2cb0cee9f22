# The series' commands. `make demo` and `make test` set everything up on first use.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-8 book lab lint clean

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
test: setup
	$(PY) -m pytest tests
	$(MAKE) book
	$(MAKE) test-8

# A static HTML site of every notebook with its real outputs: book/index.html.
book: setup
	$(PY) -m helpers.book --out book

test-8: setup
	TUTORIAL_WORKERS=8 $(PY) -m pytest notebooks

lab: setup
	$(VENV)/bin/jupyter lab notebooks/

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf runs book

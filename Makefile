# The series' commands. `make demo` and `make test` set everything up on first use.
VENV   ?= .venv
PYTHON ?= python3
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: setup demo test test-8 lab lint clean

setup: $(STAMP)

# Created once; re-installed only when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: setup
	$(PY) -m helpers.demo

# Everything at the default rank count (2 on CPU, 8 on an Ascend node), then the notebooks again at
# 8 ranks, the Ascend default: no lesson may hold only at one rank count.
test: setup
	$(PY) -m pytest
	$(MAKE) test-8

test-8: setup
	TUTORIAL_WORKERS=8 $(PY) -m pytest notebooks

lab: setup
	$(VENV)/bin/jupyter lab notebooks/

lint: setup
	$(VENV)/bin/ruff check .

clean:
	rm -rf runs

# The contract: `make demo` and `make test` work on a fresh clone (as root in CI).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed

.PHONY: venv compile demo test test-py lint typecheck bench corpus clean libraries-table

# Each build leaves install.json in resumable_cells/labextension/, and pyproject.toml
# maps labextension/install.json to the same place in the wheel: a second install would
# add it twice and fail, so the copy of the last build goes first.
STALE := resumable_cells/labextension/install.json

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q -U pip
	rm -f $(STALE)
	$(PIP) install -q -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

# Every kernel imports the package: compiled once here, as an installed wheel is, rather
# than in each kernel where PYTHONDONTWRITEBYTECODE is set (about 0.1 s a kernel).
compile: $(STAMP)
	$(PY) -m compileall -q resumable_cells

demo: $(STAMP) compile
	$(PY) scripts/run_demos.py demo_notebooks

test-py: $(STAMP) compile
	$(PY) -m pytest -q -p no:cacheprovider tests --ignore=tests/ui

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

# mypy's configuration is pyproject.toml's [tool.mypy]: strict on resumable_cells.engine.
typecheck: $(STAMP)
	$(VENV)/bin/mypy

test: lint typecheck redis-deps s3-deps test-py test-ui

# `resumable-cells verify` over tests/corpus (tests/test_corpus.py does the same in
# `make test`); docs/verify.md's corpus figures come from bench/out/corpus.json.
corpus: $(STAMP) compile
	mkdir -p bench/out
	$(PY) -m resumable_cells verify tests/corpus/whirlwind tests/corpus/pdsh-ch3 \
		tests/corpus/pdsh-ch4 tests/corpus/pdsh-ch5 tests/corpus/johansson-lectures \
		tests/corpus/statsmodels \
		--jobs 2 --timeout 30 --json bench/out/corpus.json

# The figures of docs/benchmarks.md: the team-cache ones start a redis-server and moto,
# the sidebar's a JupyterLab in headless Chromium with the extension built.
bench: $(STAMP) compile redis-deps s3-deps ui-deps labext
	rm -f $(STALE)
	$(PIP) install -q -e '.[test,bench]'
	$(PY) bench/run_all.py

# docs/libraries.md from the library list's results (tests/test_libraries.py)
libraries-table: $(STAMP)
	RESUMABLE_CELLS_LIBRARY_TABLE=docs/libraries.md $(PY) -m pytest -q -p no:cacheprovider tests/test_libraries.py

include mk/ui.mk mk/redis.mk mk/s3.mk

clean:
	rm -rf $(VENV) .resumable_cells demo_notebooks/.resumable_cells demo_notebooks/output

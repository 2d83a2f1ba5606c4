# The Roofline Book. Two commands: `make book` builds the site, `make test` runs every test.
# Both create .venv from requirements.txt when it is missing or older than requirements.txt.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HTML := _build/html

.PHONY: book test unit compat nbval build-check browser lab execute bench clean help

help:
	@echo "make book     build the HTML site into $(HTML) (warnings are errors)"
	@echo "make test     unit tests, compat, nbval over book/, the strict book build, the browser suite"
	@echo "make compat   the library alone (pip install .) tested on the oldest and newest Python"
	@echo "make execute  re-execute the notebooks in place (deterministic; commit the result)"
	@echo "make lab      open the notebooks in JupyterLab with live widgets"
	@echo "make bench    measure library, explorer, notebook and build speed"
	@echo "make clean    remove build outputs (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . --all --builder html -n -W --keep-going
	@echo "The book is at $(CURDIR)/$(HTML)/index.html"

unit: $(STAMP)
	$(BIN)/ruff check lib tests scripts
	$(BIN)/python -m pytest tests -m "not browser"

# No .venv needed: each Python gets its own venv under _build/compat (scripts/compat.sh).
compat:
	bash scripts/compat.sh

nbval: $(STAMP)
	$(BIN)/python -m pytest book

build-check: book

browser: $(STAMP)
	bash scripts/ensure_chromium.sh
	LLMMATH_REQUIRE_BROWSER=1 $(BIN)/python -m pytest tests/browser -m browser

test: $(STAMP)
	@start=$$(date +%s); \
	$(MAKE) --no-print-directory unit && t1=$$(date +%s) && \
	$(MAKE) --no-print-directory compat && tc=$$(date +%s) && \
	$(MAKE) --no-print-directory nbval && t2=$$(date +%s) && \
	$(MAKE) --no-print-directory book && t3=$$(date +%s) && \
	$(MAKE) --no-print-directory browser && t4=$$(date +%s) && \
	mkdir -p _build/bench && \
	printf '{"unit_s": %s, "compat_s": %s, "nbval_s": %s, "build_s": %s, "browser_s": %s}\n' \
	  $$((t1-start)) $$((tc-t1)) $$((t2-tc)) $$((t3-t2)) $$((t4-t3)) > _build/bench/test_stages.json && \
	echo "make test: unit $$((t1-start)) s, compat $$((tc-t1)) s, nbval $$((t2-tc)) s," \
	  "build $$((t3-t2)) s, browser $$((t4-t3)) s"

execute: $(STAMP)
	$(BIN)/python scripts/execute_notebooks.py

lab: $(STAMP)
	$(BIN)/jupyter lab book/

bench: $(STAMP)
	$(BIN)/python scripts/bench.py

clean:
	rm -rf _build .pytest_cache .hypothesis
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +

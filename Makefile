# The Roofline Book. Two commands: `make book` builds the site, `make test` runs every test.
# Both create .venv from requirements.txt when it is missing or older than requirements.txt.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
HTML := _build/html
NOTEBOOKS := _build/notebooks
STUDENT := _build/student
SLIDES := _build/slides
FIGURES := _build/figures

.PHONY: book pdf test check unit unit-baseline compat nbval build-check browser lab notebooks student psets psets-test instructor slides figures execute bench mutate clean help

help:
	@echo "make book     build the HTML site into $(HTML) (warnings are errors)"
	@echo "make pdf      build the whole book as one PDF into _build/latex/book.pdf and test it"
	@echo "make test     unit, unit at numpy's baseline SIMD, compat, nbval, the PDF, the strict book build,"
	@echo "              slides, the student edition, the browser suite (what CI runs)"
	@echo "make check    the edit loop (under a minute): ruff, the unit tests on a sentinel catalogue,"
	@echo "              strict nbval of the notebooks changed since main (BASE=<commit> to choose)"
	@echo "make compat   the library alone (pip install .) tested on the oldest and newest Python"
	@echo "make execute  re-execute the notebooks in place (deterministic; commit the result)"
	@echo "make notebooks  write the reader's edition of every chapter into $(NOTEBOOKS), tested (after make book)"
	@echo "make lab      open the reader's edition in JupyterLab with live widgets"
	@echo "make student  the student edition (site and notebooks, no solutions or answers) into $(STUDENT), tested"
	@echo "make psets    the autograded problem sets (otter-grader) into problem_sets/_build (SEED=N: a new variant)"
	@echo "make instructor  the instructor kit (keys, solutions, sets, exam bank, grader) as one archive"
	@echo "              in _build/instructor; never part of the site or the student edition"
	@echo "make slides   one reveal.js deck per chapter (offline) into $(SLIDES), tested"
	@echo "make figures  every chapter figure as SVG and PNG, by label, into $(FIGURES), tested"
	@echo "make bench    measure library, explorer, notebook and build speed"
	@echo "make mutate   mutation testing of the physics modules by the unit tests (slow; not in make test)"
	@echo "              into data/mutation/summary.md; MODULES='intensity cost' mutates only those"
	@echo "              (merged into the recorded summary), MUTANTS='llmmath.cost.x_f*' runs a subset,"
	@echo "              TESTS='tests/test_a.py ...' a subset of the unit tests (a lower bound, faster),"
	@echo "              CHILDREN=2 mutants at once (niced, so other work keeps priority);"
	@echo "              RESUME=1 MODULES='cost' MUTANTS=survivors re-judges the recorded survivors"
	@echo "              of those modules with today's tests (same library code) in the last run's stage"
	@echo "make clean    remove build outputs (keeps .venv)"

$(STAMP): requirements.txt pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	@touch $(STAMP)

book: $(STAMP)
	$(BIN)/jupyter-book build . --all --builder html -n -W --keep-going
	@# The page's download button links _sources/book/NN.ipynb: hand out the reader's edition, whose
	@# numbers, titles and citations are the ones this build resolved (_build/resolved.json).
	@# (emptied first, so a chapter that left the book leaves no download behind)
	rm -rf $(NOTEBOOKS)
	$(BIN)/python -m scripts.reader_edition --out $(NOTEBOOKS)
	cp $(NOTEBOOKS)/*.ipynb $(HTML)/_sources/book/
	@echo "The book is at $(CURDIR)/$(HTML)/index.html"

# TeX Live from Debian (scripts/ensure_tex.sh). The next `make book` copies the PDF into the
# site and links it from every page's footer (_latex/pdf_outputs.py).
pdf: $(STAMP)
	bash scripts/ensure_tex.sh
	rm -rf _build/latex _build/pdf_frames
	$(BIN)/jupyter-book build . --all --builder pdflatex
	LLMMATH_REQUIRE_PDF=1 $(BIN)/python -m pytest tests/test_pdf.py -m pdf
	@echo "The PDF is at $(CURDIR)/_build/latex/book.pdf"

# pytest-xdist: one worker per core (2 on CI). A notebook stays whole on one worker (--dist
# loadfile: its cells share a kernel); browser tests spread one by one (each worker starts its own
# server, Chromium and JupyterLab), so the JupyterLab tests are not one worker's long tail.
RUFF := $(BIN)/ruff check lib tests scripts _latex _ext problem_sets/*.py
unit: $(STAMP)
	$(RUFF)
	$(BIN)/python -m pytest tests -m "not browser and not pdf" -n auto --dist loadgroup

# numpy picks its SIMD kernels by CPU, and on AVX-512 its exp, expm1 and log1p differ from AVX2's
# and from Python's math by an ulp on some inputs: the numerical unit tests (the ones `make mutate`
# runs, [tool.mutmut] in pyproject.toml) again at numpy's X86_V2 baseline, so a test that holds at
# one SIMD level only fails on the author's machine too. The first line checks it took effect.
BASELINE_OFF := X86_V3 X86_V4 AVX512_ICL AVX512_SPR
unit-baseline: $(STAMP)
	@if [ "$$(uname -m)" != x86_64 ]; then echo "unit-baseline: not x86-64, nothing to do"; exit 0; fi; \
	export NPY_DISABLE_CPU_FEATURES="$(BASELINE_OFF)"; \
	$(BIN)/python -c "import numpy._core._multiarray_umath as u; \
	  on = [f for f in u.__cpu_dispatch__ if u.__cpu_features__.get(f)]; \
	  assert not on, f'numpy still dispatches to {on}'; \
	  print('numpy at its baseline', u.__cpu_baseline__[-1], '(off:', ' '.join(u.__cpu_dispatch__) + ')')" && \
	$(BIN)/python -m pytest tests -m physics -q -n auto -p no:randomly -o addopts="-p no:cacheprovider"

# The edit loop, under a minute: ruff, the unit tests over the sentinel catalogue
# (tests/conftest.py) but the two suites that redraw every figure of the book (figure quality and
# the kernel-free frames: 45 s of CPU whatever the catalogue; make test runs them), and strict
# nbval of the notebooks changed since BASE (default: where this branch left main; on main, the
# last commit), committed or not.
BASE ?= $(shell b=$$(git merge-base HEAD main 2>/dev/null); \
  [ "$$b" = "$$(git rev-parse HEAD)" ] && echo HEAD || echo $${b:-HEAD})
check: $(STAMP)
	@set -e; start=$$(date +%s); \
	$(RUFF); \
	LLMMATH_SENTINELS=1 $(BIN)/python -m pytest tests -q -m "not browser and not pdf" -n auto \
	  --dist loadgroup -o addopts="-p no:cacheprovider" \
	  --ignore=tests/test_figure_quality.py --ignore=tests/test_frames.py; \
	nbs=$$( { git diff --name-only $(BASE) -- 'book/*.ipynb'; \
	  git ls-files --others --exclude-standard -- 'book/*.ipynb'; } | sort -u | \
	  while read -r f; do if [ -f "$$f" ]; then echo "$$f"; fi; done ); \
	if [ -n "$$nbs" ]; then $(BIN)/python -m pytest -q -n auto --dist loadfile $$nbs; \
	else echo "check: no notebook changed since $(BASE)"; fi; \
	echo "make check: $$(( $$(date +%s) - start )) s"

# No .venv needed: each Python gets its own venv under _build/compat (scripts/compat.sh).
compat:
	bash scripts/compat.sh

nbval: $(STAMP)
	$(BIN)/python -m pytest book -n auto --dist loadfile

build-check: book

browser: $(STAMP)
	bash scripts/ensure_chromium.sh
	LLMMATH_REQUIRE_BROWSER=1 $(BIN)/python -m pytest tests/browser -m browser -n auto --dist load

# Every stage, in two lanes side by side (scripts/test_stages.sh); each stage's seconds go to
# _build/bench/test_stages.json.
test: $(STAMP)
	@MAKE="$(MAKE)" bash scripts/test_stages.sh

execute: $(STAMP)
	$(BIN)/python scripts/execute_notebooks.py

# The reader's edition: glued numbers written in, MyST turned into plain markdown, numbers and
# citations as the last `make book` resolved them (_build/resolved.json; without it this says to run
# `make book` first), then tested against that build.
notebooks: $(STAMP)
	$(BIN)/python -m scripts.reader_edition --out $(NOTEBOOKS)
	LLMMATH_REQUIRE_RESOLVED=1 $(BIN)/python -m pytest tests/test_reader_edition.py -q -p no:cacheprovider

# Problem sets (issue 15): Otter Assign turns each problem_sets/partN.ipynb into a student and an
# autograder version under problem_sets/_build/partN/; SEED=N issues another term's variant.
# Grade submissions, each in its own process without the keys (problem_sets/grader.py):
# $(BIN)/python problem_sets/build.py grade part1 SUBMISSIONS.ipynb ... --csv grades.csv
SEED ?= 2026
psets: $(STAMP)
	@start=$$(date +%s); \
	$(BIN)/python problem_sets/build.py --seed $(SEED) && \
	echo "make psets: $$(( $$(date +%s) - start )) s"

# The problem sets' test step (also collected by `make unit`): solutions pass, blanks and attacks
# score zero, no leaks; and the instructor kit's (sealed check cells, the archive, no answer served).
psets-test: $(STAMP)
	$(BIN)/python -m pytest tests/test_problem_sets.py tests/test_instructor_kit.py -q -p no:cacheprovider

# The instructor kit (issue 34): keys, solutions, every set built for SEED, the exam bank and the
# grader's configuration in one archive, _build/instructor/roofline-instructor-kit.tar.gz.
instructor: $(STAMP)
	$(BIN)/python problem_sets/instructor_kit.py --seed $(SEED)

# The student edition (course guide, README "For instructors"): the site and the notebooks with every
# solution, answer cell (tag `answer`) and filled-in answer removed, then scanned for leaks and each
# blank notebook run in a fresh kernel (tests/test_student_edition.py).
student: $(STAMP)
	@start=$$(date +%s); \
	rm -rf $(STUDENT) && \
	$(BIN)/python -m scripts.reader_edition --student-site $(STUDENT)/src && \
	$(BIN)/jupyter-book build $(STUDENT)/src --all --builder html -n -W --keep-going \
	  --path-output $(STUDENT)/out && \
	mv $(STUDENT)/out/_build/html $(STUDENT)/html && \
	mv $(STUDENT)/out/_build/resolved.json $(STUDENT)/resolved.json && rm -rf $(STUDENT)/out && \
	$(BIN)/python -m scripts.reader_edition --student --resolved $(STUDENT)/resolved.json \
	  --out $(STUDENT)/notebooks && \
	cp $(STUDENT)/notebooks/*.ipynb $(STUDENT)/html/_sources/book/ && \
	t1=$$(date +%s) && \
	LLMMATH_REQUIRE_STUDENT=1 $(BIN)/python -m pytest tests/test_student_edition.py -q -p no:cacheprovider && \
	t2=$$(date +%s) && \
	echo "make student: build $$((t1-start)) s, test $$((t2-t1)) s; site $(CURDIR)/$(STUDENT)/html/index.html," \
	  "notebooks $(CURDIR)/$(STUDENT)/notebooks"

# Lecture slides (course guide, "Slides and figures"): one deck per chapter of _toc.yml from the
# executed notebooks, numbered as the last `make book` resolved them (_build/resolved.json) (title, goals, equations, figures, takeaways, exercise prompts without
# solutions); reveal.js from _vendor/reveal, MathJax from the site's package: works from file://.
slides: $(STAMP)
	@start=$$(date +%s); \
	$(BIN)/python -m scripts.slides --out $(SLIDES) && t1=$$(date +%s) && \
	LLMMATH_REQUIRE_SLIDES=1 $(BIN)/python -m pytest tests/test_slides.py -q -p no:cacheprovider \
	  -k "not figure_export" && \
	t2=$$(date +%s) && \
	echo "make slides: build $$((t1-start)) s, test $$((t2-t1)) s; $(CURDIR)/$(SLIDES)/index.html"

# Every figure re-drawn by its builder (one process per chapter) as SVG and PNG, named by label,
# numbered as the last `make book` resolved them (_build/resolved.json).
# Separate from `make slides` (which reuses the notebooks' PNGs) because it re-runs every chapter.
figures: $(STAMP)
	@start=$$(date +%s); \
	$(BIN)/python -m scripts.figures --out $(FIGURES) && t1=$$(date +%s) && \
	LLMMATH_REQUIRE_FIGURES=1 $(BIN)/python -m pytest tests/test_slides.py -q -p no:cacheprovider \
	  -k figure_export && \
	t2=$$(date +%s) && \
	echo "make figures: build $$((t1-start)) s, test $$((t2-t1)) s; $(CURDIR)/$(FIGURES)/index.html"

lab: $(STAMP)
	$(BIN)/python -m scripts.reader_edition --out $(NOTEBOOKS)
	$(BIN)/jupyter lab $(NOTEBOOKS)/

bench: $(STAMP)
	$(BIN)/python scripts/bench.py

# Mutation testing (issue 20): mutmut over the physics modules ([tool.mutmut] in pyproject.toml),
# unit tests only, one child under nice. mutmut 3 wants a src/ layout, so lib/llmmath is staged
# as $(MUTATE)/src/llmmath; a fresh stage each time, so the recorded time is a full run's.
MUTATE := _build/mutate
MUTANTS ?=
MODULES ?=
TESTS ?=
CHILDREN ?= 1
# by rule, not by list: every physics module (llmmath.physics_modules()), and the presentation
# layer (llmmath.PRESENTATION) that no physics module imports
PHYSICS = $(shell $(BIN)/python -c "import llmmath; print(*llmmath.physics_modules())")
PRESENTATION = $(shell $(BIN)/python -c "import llmmath, pathlib; \
  print(*(p for n in llmmath.PRESENTATION for p in pathlib.Path('lib/llmmath').glob(n + '*')))")
mutate:
	@test -x $(BIN)/mutmut || { echo "no $(BIN)/mutmut: make unit (or pip install -r requirements.txt) first"; exit 1; }
ifeq ($(RESUME),)
	rm -rf $(MUTATE) && mkdir -p $(MUTATE)/src $(MUTATE)/data
	cp -r lib/llmmath $(MUTATE)/src/ && cp -r tests pyproject.toml references.bib _toc.yml $(MUTATE)/
	cp -r data/calibration $(MUTATE)/data/
	git rev-parse --short HEAD > $(MUTATE)/commit  # the code this run measures
else
	@# Same code, new tests: re-judge some mutants of an earlier run, keep the others' results.
	@test -d $(MUTATE)/mutants || { echo "RESUME=1: no earlier run in $(MUTATE)"; exit 1; }
	@# the figures and explorers are no physics module's import, so they may change meanwhile; so
	@# may a physics module left out of MODULES that no module in MODULES imports (tradeoffs, say)
	@git diff --quiet $$(cat $(MUTATE)/commit) -- lib/llmmath $(PRESENTATION:%=':!%') \
	  $(foreach m,$(filter-out $(MODULES),$(PHYSICS)),':!lib/llmmath/$(m).py') || { \
	  echo "RESUME=1: lib/llmmath changed since $$(cat $(MUTATE)/commit); run without RESUME"; exit 1; }
	rm -rf $(MUTATE)/tests $(MUTATE)/mutants/tests
	cp -r tests $(MUTATE)/ && cp -r tests $(MUTATE)/mutants/
	cp pyproject.toml $(MUTATE)/ && cp pyproject.toml $(MUTATE)/mutants/
endif
	find $(MUTATE) -name __pycache__ -prune -exec rm -rf {} +
	$(BIN)/python -c "import re, sys; p = sys.argv[1]; s = open(p).read(); \
	  mods = ', '.join('\"src/llmmath/%s.py\"' % m for m in sys.argv[2:]); \
	  open(p, 'w').write(re.sub(r'only_mutate = \[.*?\]', 'only_mutate = [' + mods + ']', s, flags=re.S))" \
	  $(MUTATE)/pyproject.toml $(or $(MODULES),$(PHYSICS))
	-test -f $(MUTATE)/mutants/pyproject.toml && cp $(MUTATE)/pyproject.toml $(MUTATE)/mutants/
ifneq ($(TESTS),)
	$(BIN)/python -c "import re, sys; p = sys.argv[1]; s = open(p).read(); \
	  t = ', '.join('\"%s\"' % x for x in sys.argv[2:]); s = re.sub( \
	  r'pytest_add_cli_args_test_selection = \[.*?\]', 'pytest_add_cli_args_test_selection = [' + t + ']', \
	  s, flags=re.S); open(p, 'w').write(s)" $(MUTATE)/pyproject.toml $(TESTS)
endif
	@start=$$(date +%s); \
	(cd $(MUTATE) && env -u PYTHONPATH nice -n 15 $(CURDIR)/$(BIN)/mutmut run --max-children $(CHILDREN) \
	  $(if $(filter survivors,$(MUTANTS)),$$($(CURDIR)/$(BIN)/python -c "import json; \
	  print(' '.join(s['mutant'] for s in json.load(open('$(CURDIR)/data/mutation/summary.json'))['survivors'] \
	  if s['mutant'].split('.')[1] in '$(MODULES)'.split()))"),$(MUTANTS))) \
	  > $(MUTATE)/run.log 2>&1; rc=$$?; tail -5 $(MUTATE)/run.log; \
	echo $$(( $$(date +%s) - start )) > $(MUTATE)/seconds; test $$rc -eq 0
	$(BIN)/python scripts/mutation_summary.py $(MUTATE) --out data/mutation $(if $(MODULES),--merge)

clean:
	rm -rf _build .pytest_cache .hypothesis
	find . -name __pycache__ -not -path "./$(VENV)/*" -prune -exec rm -rf {} +

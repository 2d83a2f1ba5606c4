#!/usr/bin/env bash
# `make compat`: install the library alone (`pip install .`, no book toolchain) into a fresh venv
# for the oldest and the newest Python present, and run its unit tests there.
#
# Oldest = the floor of pyproject's requires-python (3.10); newest = the highest 3.x found.
# Interpreters are looked up as pythonX.Y on PATH (CI: actions/setup-python puts them there),
# then under ~/.pyenv/versions (this machine). COMPAT_PYTHONS="/path/a /path/b" overrides.
# A version that is not present is skipped with a message, except when CI is set: then the
# oldest must be present and differ from the newest, or this fails.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
OUT=_build/compat
FLOOR=$(sed -n 's/^requires-python *= *">=\([0-9.]*\)".*/\1/p' pyproject.toml)
[ -n "$FLOOR" ] || { echo "compat: no requires-python floor in pyproject.toml" >&2; exit 1; }

find_python() {  # $1 = X.Y; prints the first interpreter that runs, or nothing
  local v=$1 p
  # pyenv shims answer `command -v` but fail when that version is not selected: try each.
  for p in $(type -P -a "python$v" 2>/dev/null || true) \
           $(ls -d "$HOME"/.pyenv/versions/"$v".*/bin/python"$v" 2>/dev/null | sort -rV || true); do
    if "$p" -c 'import venv' >/dev/null 2>&1; then echo "$p"; return 0; fi
  done
  return 0
}

if [ -n "${COMPAT_PYTHONS:-}" ]; then
  read -r -a PYS <<<"$COMPAT_PYTHONS"
else
  oldest=$(find_python "$FLOOR")
  newest=""
  for minor in 20 19 18 17 16 15 14 13 12 11; do
    newest=$(find_python "3.$minor")
    [ -n "$newest" ] && break
  done
  PYS=()
  if [ -n "$oldest" ]; then PYS+=("$oldest"); else
    echo "compat: no Python $FLOOR found (PATH, ~/.pyenv/versions): skipping the oldest" >&2
  fi
  if [ -n "$newest" ] && [ "$newest" != "$oldest" ]; then PYS+=("$newest"); else
    echo "compat: no Python newer than $FLOOR found: skipping the newest" >&2
  fi
  if [ -n "${CI:-}" ] && { [ -z "$oldest" ] || [ ${#PYS[@]} -lt 2 ]; }; then
    echo "compat: CI is set and Python $FLOOR and a newer 3.x are required (setup-python)" >&2
    exit 1
  fi
fi
[ ${#PYS[@]} -gt 0 ] || { echo "compat: no interpreter to test, nothing run" >&2; exit 0; }

# A copy of only what `pip install .` needs, so the build leaves no build/ in the worktree.
rm -rf "$OUT/src" && mkdir -p "$OUT/src"
cp pyproject.toml "$OUT/src/" && cp -r lib "$OUT/src/lib"
rm -rf "$OUT/src/lib"/*.egg-info "$OUT/src/lib/README.md"
find "$OUT/src" -name __pycache__ -prune -exec rm -rf {} +

run_one() {  # $1 = interpreter; venv, install, tests; output to $OUT/py<ver>.log
  local py=$1 ver venv start
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  venv="$OUT/py$ver"
  start=$(date +%s)
  echo "compat: Python $ver ($py): unit tests of the installed library"
  # Deps once per venv (re-made when the pins or pyproject change); the library every run.
  if [ ! -f "$venv/.deps" ] || [ pyproject.toml -nt "$venv/.deps" ] \
     || [ tests/compat-requirements.txt -nt "$venv/.deps" ]; then
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -qq "$OUT/src" -r tests/compat-requirements.txt
    touch "$venv/.deps"
  fi
  "$venv/bin/python" -m pip install -qq --no-deps --force-reinstall "$OUT/src"
  # The installed copy, not lib/, must be what the tests import.
  (cd "$OUT" && env -u PYTHONPATH "$ROOT/$venv/bin/python" -c \
    'import llmmath, sys; assert "site-packages" in llmmath.__file__, llmmath.__file__')
  # The library's own unit tests: no nbval, notebooks or browser (addopts, which names nbval,
  # is replaced), and not the chapters' claims tests, which sweep the whole catalogue through the
  # same functions (the main suite runs them; here they would only double the CI time), nor the
  # figure-quality, explorer and frame suites: they redraw every figure at every control setting
  # (half the time of this run) through matplotlib and ipywidgets, whose pinned versions the main
  # suite tests; nor the sweeps of every builder over every chip and model (the main suite runs
  # them): test_plots.py's other tests still draw each kind of figure here. The bibliography
  # style, the student edition and the instructor kit are the book's toolchain (pybtex, Sphinx,
  # otter-grader), not the library's.
  # Over the sentinel catalogue (tests/conftest.py): a Python version changes how the library
  # runs, not which chip it runs for; the main suite sweeps the whole catalogue on 3.11.
  env -u PYTHONPATH LLMMATH_SENTINELS=1 "$venv/bin/python" -m pytest -q -p no:randomly \
    -o addopts="-p no:cacheprovider" -m "not browser and not pdf" tests \
    --ignore=tests/browser --ignore=tests/test_notebooks.py --ignore-glob="tests/test_claims_*" \
    --ignore=tests/test_from_scratch.py --ignore=tests/test_reader_edition.py \
    --ignore=tests/test_figure_quality.py --ignore=tests/test_widgets.py --ignore=tests/test_frames.py \
    --ignore=tests/test_bibliography_style.py --ignore=tests/test_student_edition.py \
    --ignore=tests/test_problem_sets.py --ignore=tests/test_slides.py \
    --ignore=tests/test_instructor_kit.py \
    -k "not builder_on_every and not builders_on_every"
  echo "compat: Python $ver passed in $(( $(date +%s) - start )) s"
}

# The versions run side by side (one core each on a 2-core runner); each logs to its own file.
pids=()
logs=()
for py in "${PYS[@]}"; do
  log="$OUT/$(basename "$py").log"
  logs+=("$log")
  run_one "$py" >"$log" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then rc=1; cat "${logs[$i]}"; else tail -n 3 "${logs[$i]}"; fi
done
[ "$rc" = 0 ] && echo "compat: passed on every Python tested" || echo "compat: FAILED (log above)" >&2
exit "$rc"

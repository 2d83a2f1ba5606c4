#!/usr/bin/env bash
# `make test`: every stage, in two lanes that run side by side, and each stage's seconds in
# _build/bench/test_stages.json.
#
# Half the stages keep both cores busy (pytest -n auto); the other half are mostly one process
# (Sphinx, xelatex) or waiting on apt and disk (TeX Live, Chromium). Run one after the other
# they took 14 min here (9 min with TeX Live and Chromium already installed); side by side the
# installs and the single-process stages fill the second core. Both lanes are mostly CPU-bound on
# two cores, so the gain is what the idle core had: the lanes are balanced to end together.
#   lane "library": unit, unit-baseline, compat, nbval
#   lane "site":    TeX Live and Chromium installs, pdf, book, notebooks (the reader's edition's
#                   tests, on the numbers the book build resolved), slides, student (its own site
#                   in _build/student), browser
# The site lane builds _build/html only after the unit stage is done: two unit tests read the
# built site when there is one, and must not see half of one. Each lane logs to
# _build/bench/lane-<name>.log, printed when the lane ends; a failing stage stops its lane, and
# the run fails if either lane does.
set -u
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
OUT=_build/bench
mkdir -p "$OUT"
rm -f "$OUT"/stage-*.s "$OUT"/unit.done "$OUT"/lane-*.log

stage() {  # $1 = name in the JSON, then the command; records its seconds
  local name=$1 start rc
  shift
  start=$(date +%s)
  echo "=== $name: $*"
  "$@"
  rc=$?
  echo $(( $(date +%s) - start )) > "$OUT/stage-$name.s"
  echo "=== $name: $( [ $rc = 0 ] && echo passed || echo FAILED) in $(cat "$OUT/stage-$name.s") s"
  return $rc
}

library_lane() {
  stage unit $MAKE --no-print-directory unit || { touch "$OUT/unit.done"; return 1; }
  touch "$OUT/unit.done"
  stage unit_baseline $MAKE --no-print-directory unit-baseline &&
  stage compat $MAKE --no-print-directory compat &&
  stage nbval $MAKE --no-print-directory nbval
}

site_lane() {
  # apt installs one at a time (one dpkg lock), and off the library lane's cores
  stage install_tex bash scripts/ensure_tex.sh &&
  stage install_chromium bash scripts/ensure_chromium.sh &&
  stage pdf $MAKE --no-print-directory pdf || return 1
  while [ ! -e "$OUT/unit.done" ]; do sleep 2; done
  stage build $MAKE --no-print-directory book &&
  stage notebooks $MAKE --no-print-directory notebooks &&
  stage slides $MAKE --no-print-directory slides &&
  stage student $MAKE --no-print-directory student &&
  stage browser $MAKE --no-print-directory browser
}

# Under CI no person looks at the browser suite's full-page screenshots (tests/browser/test_layout.py)
case "${CI:-}" in ""|0|false|no) ;; *) export LLMMATH_SCREENSHOTS=${LLMMATH_SCREENSHOTS:-0} ;; esac

start=$(date +%s)
library_lane > "$OUT/lane-library.log" 2>&1 &
lib_pid=$!
site_lane > "$OUT/lane-site.log" 2>&1 &
site_pid=$!
wait $lib_pid; lib_rc=$?
echo "----- lane library (rc $lib_rc) -----"; cat "$OUT/lane-library.log"
wait $site_pid; site_rc=$?
echo "----- lane site (rc $site_rc) -----"; cat "$OUT/lane-site.log"
total=$(( $(date +%s) - start ))

# every stage's own seconds (lanes overlap, so they sum to more than the total)
{
  printf '{'
  for s in unit unit_baseline compat nbval student install_tex install_chromium pdf build notebooks \
           slides browser; do
    [ -f "$OUT/stage-$s.s" ] && printf '"%s_s": %s, ' "$s" "$(cat "$OUT/stage-$s.s")"
  done
  printf '"total_s": %s, "lanes": "library: unit unit_baseline compat nbval; ' "$total"
  printf 'site: install_tex install_chromium pdf build notebooks slides student browser"}\n'
} > "$OUT/test_stages.json"
echo "make test: $total s wall, stages $(cat "$OUT/test_stages.json")"
[ "$lib_rc" = 0 ] && [ "$site_rc" = 0 ] && { echo "make test: passed"; exit 0; }
echo "make test: FAILED (library lane rc $lib_rc, site lane rc $site_rc; logs above)" >&2
exit 1

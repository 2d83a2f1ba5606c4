#!/usr/bin/env bash
# Make sure a Chromium (and fonts) are present for the browser suite.
# Accepts Debian's chromium, or google-chrome as preinstalled on GitHub's ubuntu-24.04 image (there,
# apt's chromium/chromium-browser is a snap stub that does not run). When none is present and we
# are root, installs Debian's chromium; never downloads a browser build of its own.
# With CI set, a browser that cannot be had is an error (exit 1), not a skip.
set -u
ci=false
case "${CI:-}" in ""|0|false|no) ;; *) ci=true ;; esac
for name in chromium chromium-browser google-chrome google-chrome-stable; do
  p=$(command -v "$name" 2>/dev/null) || continue
  # A snap stub answers `command -v` but does not start: ask it for its version.
  if "$p" --version >/dev/null 2>&1; then
    echo "ensure_chromium: using $p ($("$p" --version 2>/dev/null))"
    exit 0
  fi
done
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian chromium for the browser tests (about a minute)..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq chromium fonts-dejavu-core fonts-liberation >/dev/null \
    && exit 0
  echo "ensure_chromium: apt-get could not install chromium" >&2
else
  echo "ensure_chromium: no working chromium or google-chrome, and cannot install one here (not root or no apt-get)" >&2
fi
if $ci; then
  echo "ensure_chromium: CI is set, so a missing browser fails the run" >&2
  exit 1
fi
exit 0  # the browser tests then skip with a message saying why

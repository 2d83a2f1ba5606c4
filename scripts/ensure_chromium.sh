#!/usr/bin/env bash
# Make sure Debian's Chromium (and fonts) are present for the browser suite.
# Installs from Debian's package registry when missing and we are root; never downloads a
# browser build of its own (Playwright drives /usr/bin/chromium).
set -u
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 \
   || command -v google-chrome >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Debian chromium for the browser tests (about a minute)..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null && apt-get install -y -qq chromium fonts-dejavu-core fonts-liberation >/dev/null \
    && exit 0
  echo "ensure_chromium: apt-get could not install chromium" >&2
  exit 0  # the browser tests then skip with a message saying why
fi
echo "ensure_chromium: chromium is missing and cannot be installed here (not root or no apt-get); the browser tests will skip, saying why" >&2
exit 0

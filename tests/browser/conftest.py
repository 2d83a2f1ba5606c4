"""Fixtures for the browser suite: the built site served on 127.0.0.1 and Debian's Chromium.

The suite needs `_build/html` (run `make book` first; `make test` does) and `/usr/bin/chromium`
(installed by scripts/ensure_chromium.sh from Debian's registry). Where Chromium cannot be had,
every test that needs it skips with a message that says so, except when a browser is required:
the environment sets ``LLMMATH_REQUIRE_BROWSER=1`` (``make browser`` and so ``make test`` do) or
``CI`` (GitHub Actions sets ``CI=true``). Then it fails, and any browser test that skipped for
another reason fails the session too, so CI cannot pass by skipping.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
SHOTS = ROOT / "_build" / "screenshots"
# Debian's chromium here; GitHub's ubuntu-24.04 image ships google-chrome (its chromium-browser
# is a snap stub). LLMMATH_CHROMIUM overrides (point it at a missing path to check the failure).
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_browser(environ=os.environ, which=shutil.which):
    """The browser to drive: $LLMMATH_CHROMIUM, else the first of BROWSER_NAMES on PATH."""
    if environ.get("LLMMATH_CHROMIUM"):
        return environ["LLMMATH_CHROMIUM"]
    return next((p for p in map(which, BROWSER_NAMES) if p), "/usr/bin/chromium")


def browser_required(environ=os.environ):
    """True when a missing browser must fail: LLMMATH_REQUIRE_BROWSER=1, or CI set (not false/0)."""
    if environ.get("LLMMATH_REQUIRE_BROWSER") == "1":
        return True
    return environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


CHROMIUM = find_browser()


def _no_browser(message, environ=os.environ):
    """Skip, or fail where a browser is required (see browser_required)."""
    if browser_required(environ):
        pytest.fail(f"{message} (LLMMATH_REQUIRE_BROWSER=1 or CI set: a browser is required)")
    pytest.skip(message)


_SKIPPED = []


def pytest_runtest_logreport(report):
    if report.skipped and "tests/browser/" in report.nodeid.replace("\\", "/"):
        _SKIPPED.append(report.nodeid)


def pytest_sessionfinish(session, exitstatus):
    # A skip that did not come through _no_browser (a new test's own skip) must not pass CI either.
    if _SKIPPED and browser_required() and exitstatus == 0:
        print(f"\nbrowser suite: {len(_SKIPPED)} test(s) skipped where a browser is required, "
              f"failing: {_SKIPPED[:5]}")
        session.exitstatus = 1


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # keep pytest output readable
        pass


@pytest.fixture(scope="session")
def site_url():
    if not (HTML / "index.html").exists():
        pytest.fail(f"{HTML}/index.html is missing: run `make book` before the browser suite")
    handler = functools.partial(_QuietHandler, directory=str(HTML))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        _no_browser(f"Chromium not found at {CHROMIUM}: install Debian's chromium "
                    "(scripts/ensure_chromium.sh) to run the browser suite")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:  # pragma: no cover - requirements.txt pins playwright
        _no_browser(f"playwright is not importable ({exc}); pip install -r requirements.txt")
    with sync_playwright() as p:
        try:
            b = p.chromium.launch(executable_path=CHROMIUM, args=[
                "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
            ])
        except Exception as exc:  # a binary that cannot start is no browser either
            _no_browser(f"Chromium at {CHROMIUM} did not start: {exc}")
        yield b
        b.close()


def book_pages() -> list[str]:
    """Every HTML page of the built book (relative paths), except Sphinx's generated indexes."""
    if not HTML.exists():
        return []
    skip = {"genindex.html", "search.html", "py-modindex.html"}
    pages = []
    for p in sorted(HTML.rglob("*.html")):
        rel = p.relative_to(HTML).as_posix()
        if rel.startswith(("_static/", "_sources/", "_images/")) or rel in skip:
            continue
        pages.append(rel)
    return pages

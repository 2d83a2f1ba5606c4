"""The built site in a real browser: offline, complete, readable on a phone.

Every page is loaded from a local server in headless Chromium with every request that is not to
127.0.0.1 aborted and counted (the count must be 0), and checked for console errors, failed
requests, typeset math, loaded images with alt text, resolved glue, drawn widgets, working
kernel-free explorers; internal links resolve (read from the built files, no browser needed).
The page checks (`check_page`) run inside test_layout.py's desktop visit, which also measures the
layout, writes the screenshots and runs axe.
"""

from __future__ import annotations

import functools
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import pytest
from conftest import HTML, book_pages
from test_content import MIN_WORDS

try:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
except ImportError:  # pragma: no cover - requirements.txt pins playwright; conftest reports it
    PlaywrightError = PlaywrightTimeout = Exception

pytestmark = pytest.mark.browser

PAGES = book_pages()
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
# Known and harmless: sphinx-thebe 0.3.1 on Sphinx 7.4 declares this twice on every page.
# Scripts that hold back the first paint, in bytes (the theme's small ones are about 40 kB; the
# widget manager or the search index among them would be megabytes or 100 kB more).
BLOCKING_SCRIPT_BUDGET = 60_000
HARMLESS_CONSOLE = ("Identifier 'THEBE_JS_URL' has already been declared",)


class PageVisit:
    """Load one page with the network fenced to 127.0.0.1 and record what happened."""

    def __init__(self, browser, url: str, viewport=DESKTOP):
        self.outside: list[str] = []
        self.failed: list[str] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.context = browser.new_context(viewport=viewport)
        self.page = self.context.new_page()
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("requestfailed", lambda r: self.failed.append(f"{r.url} ({r.failure})"))
        self.page.on("response",
                     lambda r: r.status >= 400 and self.failed.append(f"{r.url} ({r.status})"))
        self.page.goto(url, wait_until="load")
        # The root index.html redirects (meta refresh): measure the page it lands on, not the
        # page in the middle of navigating (which read as raw TeX or a missing body).
        try:
            redirects = self.page.evaluate(
                "() => !!document.querySelector('meta[http-equiv=\"refresh\" i]')")
        except PlaywrightError:  # the redirect is already under way
            redirects = True
        if redirects:
            if self.page.url == url:
                self.page.wait_for_url(lambda u: u != url, timeout=15000)
            self.page.wait_for_load_state("load")
        # MathJax and the widget manager finish after `load`: wait until every formula is
        # typeset (the test then asserts it, so a timeout here is reported there).
        try:
            self.page.wait_for_function(
                "() => document.querySelectorAll('mjx-container').length >= "
                "document.querySelectorAll('.math').length", timeout=15000)
        except PlaywrightTimeout:
            pass
        self.page.wait_for_function(
            "() => document.querySelectorAll("
            "'script[type=\"application/vnd.jupyter.widget-view+json\"]').length === 0 || "
            "document.querySelectorAll('.jupyter-widgets, .widget-box, "
            ".widget-inline-hbox').length > 0",
            timeout=15000)
        self.page.wait_for_timeout(300)

    def _route(self, route):
        host = urlparse(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            route.continue_()
        else:
            self.outside.append(route.request.url)
            route.abort()

    def close(self):
        self.context.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    @property
    def console_errors(self):
        return [e for e in self.errors if not any(h in e for h in HARMLESS_CONSOLE)]


def test_site_was_built():
    assert PAGES, f"no pages under {HTML}: run `make book` first"
    assert "book/intro.html" in PAGES


def check_page(visit, rel):
    """Everything a reader would notice on one loaded page (desktop width): nothing fetched from
    outside, no errors, math typeset, images with alt text, widgets drawn, explorers that move.
    test_layout.py calls it during its desktop visit, so each page is loaded once per width."""
    page = visit.page
    # What Chromium shows: a visible title and the page's text (test_content.py counts the
    # same from the built HTML against each page's source; a blank page fails both).
    root = page.locator("main") if page.locator("main").count() else page.locator("body")
    shown = root.first.inner_text()
    assert len(shown.split()) >= MIN_WORDS, f"{rel}: Chromium shows {len(shown.split())} words"
    assert page.evaluate("""() => Array.from(document.querySelectorAll('h1')).some(
        h => h.offsetParent !== null && h.innerText.trim().length > 0)"""), \
        f"{rel}: no visible title"
    assert visit.outside == [], f"requests left the site: {visit.outside}"
    assert visit.failed == [], f"failed requests: {visit.failed}"
    assert visit.console_errors == [], f"console errors: {visit.console_errors}"

    # Math: every math element typeset, no raw TeX left in the prose.
    n_math = page.locator(".math").count()
    if n_math:
        assert page.locator("mjx-container").count() >= n_math, "some math was not typeset"
    prose = page.evaluate("""() => {
        const root = document.querySelector('main') || document.body;
        const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
        let out = [];
        while (walker.nextNode()) {
          const n = walker.currentNode;
          if (n.parentElement.closest(
                'pre, code, script, style, mjx-container, .cell_output, textarea')) continue;
          out.push(n.textContent);
        }
        return out.join(' ');
    }""")
    raw = re.findall(r"\$\$|\\(?:frac|text|max|left|right|mathrm)\b|\{glue:?\}|\{glue_text\}",
                     prose)
    assert not raw, f"raw TeX or unresolved glue in the prose: {raw[:5]}"

    # Images: loaded, and figures carry alt text. Explorer frames load lazily (when scrolled
    # to): load them now, so a broken file URL fails here.
    page.evaluate("""async () => {
        for (const i of document.querySelectorAll('img[loading=lazy]')) {
          i.loading = 'eager';
          if (!i.complete) await new Promise(r => { i.onload = i.onerror = r; });
        }}""")
    images = page.evaluate("""() => Array.from(document.images).map(i => ({
        src: i.currentSrc || i.src, w: i.naturalWidth, alt: i.getAttribute('alt') || '',
        fig: !!i.closest('.cell_output, figure, .llm-frames')}))""")
    for im in images:
        assert im["w"] > 0, f"image did not load: {im['src']}"
        if im["fig"]:
            assert im["alt"].strip() and im["alt"] != "../_images/", (
                f"figure without alt text: {im['src']}")

    # Saved widgets: each view has been drawn by the widget manager.
    views = page.locator('script[type="application/vnd.jupyter.widget-view+json"]').count()
    if views:
        drawn = page.locator(".jupyter-widgets, .widget-box, .widget-inline-hbox").count()
        assert drawn >= views, f"{views} saved widget views but {drawn} drawn"

    # Light pages (_ext/light_pages.py): the widget manager only where a widget is shown, no
    # Font Awesome script (the icon font draws the icons), and little script before the text.
    manager = [u for u in visit.requests
               if re.search(r"/(require|widgets-glue|embed-amd)\.js", u)]
    if not views:
        assert manager == [], f"no widget on the page, yet it loads {manager}"
    assert not [u for u in visit.requests if "fontawesome.js" in u], "fontawesome.js loaded"
    blocking = page.evaluate("""() => performance.getEntriesByType('resource')
        .filter(e => e.initiatorType === 'script' && e.renderBlockingStatus === 'blocking')
        .map(e => [e.name, e.decodedBodySize])""")
    assert sum(n for _, n in blocking) <= BLOCKING_SCRIPT_BUDGET, \
        f"render-blocking scripts over {BLOCKING_SCRIPT_BUDGET} bytes: {blocking}"

    # Kernel-free explorers: moving the slider changes the image.
    for i in range(page.locator(".llm-frames").count()):
        box = page.locator(".llm-frames").nth(i)
        slider = box.locator('input[type="range"]')
        img = box.locator("img")
        before = img.get_attribute("src")
        hi = slider.get_attribute("max")
        lo = slider.get_attribute("min")
        now = slider.input_value()
        target = lo if now == hi else hi
        slider.fill(target)
        slider.dispatch_event("input")
        after = img.get_attribute("src")
        assert after != before, f"kernel-free explorer {i} on {rel} did not change its image"


class _Links(HTMLParser):
    """The hrefs and ids of one HTML file."""

    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"])
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])


@functools.cache
def _parsed(path: Path) -> _Links:
    links = _Links()
    links.feed(path.read_text(encoding="utf-8"))
    return links


@pytest.mark.parametrize("rel", PAGES)
def test_internal_links_resolve(rel):
    """Every link to the site itself names a file that was built, and an anchor that exists.

    Read from the built HTML, without a browser: the theme draws no links with scripts.
    """
    bad = []
    for href in _parsed(HTML / rel).hrefs:
        url, frag = urldefrag(href)
        parts = urlparse(url)
        if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
            continue
        target = (HTML / rel).parent / unquote(parts.path) if parts.path else HTML / rel
        if target.is_dir():
            target = target / "index.html"
        if not target.resolve().is_relative_to(HTML.resolve()) or not target.is_file():
            shown = target.relative_to(HTML) if target.is_relative_to(HTML) else target
            bad.append(f"{href} (no file {shown})")
        elif frag and target.suffix == ".html" and frag not in _parsed(target.resolve()).ids:
            bad.append(f"{href} (no id {frag!r} in {target.name})")
    assert not bad, f"{rel}: broken internal links: {bad[:10]}"


def test_glue_values_are_present(browser, site_url):
    """Every page with glued numbers shows them (myst-nb renders them as .pasted-text)."""
    for rel in PAGES:
        source = (HTML / rel).read_text(encoding="utf-8")
        prose = re.sub(r"<(pre|code)\b.*?</\1>", "", source, flags=re.S)
        assert "{glue" not in prose, f"unresolved glue role in {rel}"


def _join(base, href):  # pragma: no cover - helper kept small
    return urljoin(base, href)

"""The built site in a real browser: offline, complete, readable on a phone.

Every page is loaded from a local server in headless Chromium with every request that is not to
127.0.0.1 aborted and counted (the count must be 0), and checked for console errors, failed
requests, typeset math, loaded images with alt text, resolved glue, drawn widgets, working
kernel-free explorers, resolving internal links, and no horizontal scroll at phone width.
"""

from __future__ import annotations

import re
from urllib.parse import urldefrag, urljoin, urlparse

import pytest
from conftest import HTML, SHOTS, book_pages

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

    @property
    def console_errors(self):
        return [e for e in self.errors if not any(h in e for h in HARMLESS_CONSOLE)]


def test_site_was_built():
    assert PAGES, f"no pages under {HTML}: run `make book` first"
    assert "book/intro.html" in PAGES


@pytest.mark.parametrize("rel", PAGES)
def test_page(browser, site_url, rel):
    visit = PageVisit(browser, f"{site_url}/{rel}")
    page = visit.page
    try:
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
    finally:
        visit.close()


@pytest.mark.parametrize("rel", PAGES)
def test_internal_links_resolve(browser, site_url, rel):
    visit = PageVisit(browser, f"{site_url}/{rel}")
    try:
        hrefs = visit.page.evaluate("() => Array.from(document.querySelectorAll('a[href]'))"
                                    ".map(a => a.href)")
        checked = {}
        for href in hrefs:
            url, frag = urldefrag(href)
            if urlparse(url).hostname != "127.0.0.1" or not url:
                continue
            if url not in checked:
                checked[url] = visit.page.request.get(url)
            resp = checked[url]
            assert resp.status == 200, f"{rel}: link to {url} gives {resp.status}"
            if frag and url.endswith(".html"):
                body = resp.text()
                assert f'id="{frag}"' in body, f"{rel}: anchor #{frag} not found in {url}"
    finally:
        visit.close()


@pytest.mark.parametrize("rel", PAGES)
def test_phone_width_has_no_horizontal_scroll(browser, site_url, rel):
    visit = PageVisit(browser, f"{site_url}/{rel}", viewport=PHONE)
    try:
        width = visit.page.evaluate("() => document.scrollingElement.scrollWidth")
        assert width <= PHONE["width"] + 1, (f"{rel} scrolls sideways at "
                                             f"{PHONE['width']} px: {width} px wide")
    finally:
        visit.close()


def test_screenshots(browser, site_url):
    """Front page and one chapter at desktop and phone width, for a person to look at."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    chapters = [p for p in PAGES if re.match(r"book/\d\d_", p)]
    targets = ["book/intro.html"] + chapters[-1:]
    written = []
    for rel in targets:
        for label, viewport in (("desktop", DESKTOP), ("phone", PHONE)):
            visit = PageVisit(browser, f"{site_url}/{rel}", viewport=viewport)
            try:
                path = SHOTS / f"{rel.replace('/', '_').removesuffix('.html')}_{label}.png"
                visit.page.screenshot(path=str(path), full_page=True)
                written.append(path)
            finally:
                visit.close()
    print("\nscreenshots written to", SHOTS, *[p.name for p in written], sep="\n  ")
    assert all(p.stat().st_size > 10_000 for p in written)


def test_glue_values_are_present(browser, site_url):
    """Every page with glued numbers shows them (myst-nb renders them as .pasted-text)."""
    for rel in PAGES:
        source = (HTML / rel).read_text(encoding="utf-8")
        prose = re.sub(r"<(pre|code)\b.*?</\1>", "", source, flags=re.S)
        assert "{glue" not in prose, f"unresolved glue role in {rel}"


def _join(base, href):  # pragma: no cover - helper kept small
    return urljoin(base, href)

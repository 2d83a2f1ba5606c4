"""How each page of the built site loads on a slow link (`make bench`, section "pages").

Serves _build/html on 127.0.0.1 with gzip for text files (as any static host does: GitHub Pages,
Netlify, nginx with gzip on), opens each page of _toc.yml in headless Chromium with an empty cache
under network throttling (1.6 Mbit/s down, 0.75 Mbit/s up, 150 ms round trip, after
shared/TOOLCHAIN.md) at phone size, and reads:

- lcp_s: the largest contentful paint (PerformanceObserver, the last entry before load + 1.5 s);
- fcp_s: the first contentful paint;
- transfer_bytes: bytes on the wire for the page and everything it loads (CDP
  Network.loadingFinished encodedDataLength), and the largest few requests.

Measured, never asserted (the target, LCP within 2.5 s, is printed beside it). Needs Playwright
(in requirements.txt) and a Chromium (scripts/ensure_chromium.sh).

Usage: python scripts/page_load.py [page.html ...]   (default: every page in _toc.yml)
"""

from __future__ import annotations

import functools
import gzip
import http.server
import io
import json
import os
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "_build" / "html"
THROTTLE = {"offline": False, "latency": 150, "downloadThroughput": 1.6e6 / 8,
            "uploadThroughput": 0.75e6 / 8}
PHONE = {"width": 390, "height": 844}
LCP_TARGET_S = 2.5
TEXT = (".html", ".js", ".css", ".svg", ".json", ".txt", ".map")
OBSERVE = """new PerformanceObserver(list => {
  for (const e of list.getEntries()) window.__lcp = e.startTime;
}).observe({type: 'largest-contentful-paint', buffered: true});"""


class _GzipHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def send_head(self):
        path = self.translate_path(self.path)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        wants = "gzip" in self.headers.get("Accept-Encoding", "")
        if not (wants and os.path.isfile(path) and path.endswith(TEXT)):
            return super().send_head()
        with open(path, "rb") as f:
            body = gzip.compress(f.read(), 6)
        self.send_response(200)
        self.send_header("Content-Type", self.guess_type(path))
        self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)


def toc_pages(root: Path = ROOT) -> list[str]:
    """The site's pages in reading order, as paths under _build/html."""
    names = ["book/intro"]
    for line in (root / "_toc.yml").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line.startswith("- file:"):
            names.append(line.split(":", 1)[1].strip())
    return [f"{n}.html" for n in names]


def measure(pages: list[str], html_root: Path = HTML, browser_path: str | None = None) -> dict:
    from playwright.sync_api import sync_playwright

    handler = functools.partial(_GzipHandler, directory=str(html_root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}/"
    results = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=(browser_path
                                 or os.environ.get("LLMMATH_CHROMIUM", "/usr/bin/chromium")),
                args=["--no-sandbox", "--disable-gpu"])
            for rel in pages:
                ctx = browser.new_context(viewport=PHONE)
                page = ctx.new_page()
                page.add_init_script(OBSERVE)
                cdp = ctx.new_cdp_session(page)
                cdp.send("Network.enable")
                cdp.send("Network.setCacheDisabled", {"cacheDisabled": True})
                cdp.send("Network.emulateNetworkConditions", THROTTLE)
                sizes, urls = {}, {}
                cdp.on("Network.requestWillBeSent",
                       lambda e, urls=urls: urls.__setitem__(e["requestId"], e["request"]["url"]))
                cdp.on("Network.loadingFinished",
                       lambda e, sizes=sizes: sizes.__setitem__(
                           e["requestId"], e["encodedDataLength"]))
                page.goto(base + rel, wait_until="load", timeout=180_000)
                page.wait_for_timeout(1500)
                lcp = page.evaluate("window.__lcp || null")
                fcp = page.evaluate(
                    "performance.getEntriesByName('first-contentful-paint')[0]?.startTime || null")
                largest = sorted(((n, urls.get(k, "?").replace(base, "").split("?")[0])
                                  for k, n in sizes.items()), reverse=True)[:4]
                results[rel] = {"lcp_s": lcp / 1000 if lcp else None,
                                "fcp_s": fcp / 1000 if fcp else None,
                                "transfer_bytes": int(sum(sizes.values())),
                                "largest": [[u, int(n)] for n, u in largest]}
                ctx.close()
            browser.close()
    finally:
        server.shutdown()
    return results


def report(results: dict) -> str:
    lines = [f"{'page':40s} {'LCP':>7s} {'FCP':>7s} {'transfer':>9s}   largest request"]
    for rel, r in results.items():
        lcp = f"{r['lcp_s']:.2f} s" if r["lcp_s"] else "-"
        fcp = f"{r['fcp_s']:.2f} s" if r["fcp_s"] else "-"
        big = f"{r['largest'][0][0]} ({r['largest'][0][1] / 1e3:.0f} kB)" if r["largest"] else ""
        flag = "" if r["lcp_s"] and r["lcp_s"] <= LCP_TARGET_S else "  <- over the target"
        lines.append(f"{rel:40s} {lcp:>7s} {fcp:>7s} "
                     f"{r['transfer_bytes'] / 1e6:7.2f} MB   {big}{flag}")
    lines.append("(1.6 Mbit/s down, 150 ms round trip, empty "
                 f"cache, gzip; target LCP <= {LCP_TARGET_S} s)")
    return "\n".join(lines)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not (HTML / "index.html").exists():
        print("page_load: build the site first (make book)", file=sys.stderr)
        return 1
    results = measure(argv or toc_pages())
    print(report(results))
    out = ROOT / "_build" / "bench" / "page_load.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

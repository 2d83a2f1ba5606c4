"""Light pages: what a page does not show, it does not download, and nothing blocks its text.

A post-build pass over every HTML page of the site (``build-finished``, HTML builder only):

- **Widget manager only where a widget is on the page.** myst-nb adds the saved widget state and
  the widget manager (require.js, widgets-glue.js, embed-amd.js: about 3.7 MB) to every page of a
  notebook that stored widget state, even when no widget view is rendered (the static page shows
  each explorer's kernel-free twin instead). Where the page holds no widget view, they are
  removed; where it does, the state and the scripts move, in their order, from the head to the
  end of the body, so they no longer hold back the text (the manager finds the state anywhere and
  renders the views when it runs, as before).
- **Icons from the icon font, not from 1.5 MB of script.** The theme loads Font Awesome twice:
  as a webfont through its CSS (every ``fa-*`` class, 157 kB of woff2) and as fontawesome.js,
  which swaps each icon for an SVG. The script is dropped; the same icons render from the font.
- **Explorer frames as files, fetched when shown.** A kernel-free explorer (llmmath.frames) is
  self-contained HTML with every frame as a base64 data URI, so a chapter's page carried a few
  hundred kB of frames the reader may never look at, ahead of its text. In the site each frame
  becomes a file under ``_images/frames/`` (named by its hash) and the visible one loads lazily;
  the slider's script swaps file URLs instead of data URIs. The notebooks keep the
  self-contained form (JupyterLab, Colab).
- **The search index does not block the page.** The theme loads searchtools.js,
  language_data.js and searchindex.js in the head without ``defer``; they are deferred, in order
  (searchtools initialises on DOMContentLoaded, which deferred scripts precede).

Each rule is a plain function on the page's text (``lighten``, ``externalise_frames``), tested in
tests/test_light_pages.py.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

WIDGET_VIEW = 'type="application/vnd.jupyter.widget-view+json"'
_STATE = re.compile(
    r'[ \t]*<script type="application/vnd\.jupyter\.widget-state\+json">.*?</script>\n?', re.S)
_WIDGET_JS = re.compile(
    r'([ \t]*)<script(?P<attrs>[^>]*?) src="(?P<src>[^"]*_static/(?:require\.js|widgets-glue\.js'
    r'|widgets/embed-amd\.js)[^"]*)"></script>\n?')
_FONTAWESOME = re.compile(r'[ \t]*<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*">'
                          r'</script>\n?')
_SEARCH_JS = re.compile(
    r'<script src="(?P<src>[^"]*(?:_static/searchtools\.js|_static/language_data\.js'
    r'|searchindex\.js))"></script>')


def lighten(html: str) -> str:
    """The page with the three rules of this module applied (idempotent)."""
    if WIDGET_VIEW in html:
        cut = html.find("</head>") + len("</head>")
        head, body = html[:cut], html[cut:]  # only what is still in the head moves
        tags = [m.group(0).strip() for m in _STATE.finditer(head)]
        tags += [m.group(0).strip() for m in _WIDGET_JS.finditer(head)]
        if tags:
            head = _WIDGET_JS.sub("", _STATE.sub("", head))
            body = body.replace("</body>", "\n".join(tags) + "\n</body>", 1)
        html = head + body
    else:
        html = _STATE.sub("", html)
        html = _WIDGET_JS.sub("", html)
    html = _FONTAWESOME.sub("", html)
    return _SEARCH_JS.sub(lambda m: f'<script defer src="{m.group("src")}"></script>', html)


_FRAMES_BLOCK = re.compile(r'<div class="llm-frames\b.*?</script></div>', re.S)
_DATA_URI = re.compile(r"data:image/(png|jpeg|webp);base64,([A-Za-z0-9+/=]+)")
FRAMES_DIR = "_images/frames"


def externalise_frames(html: str, prefix: str) -> tuple[str, dict[str, bytes]]:
    """Each data URI of an explorer's frames as a file: (new html, {file name: bytes}).

    ``prefix`` is the path from the page to the site's root ("../" for book/x.html). The frame
    shown first gets ``loading="lazy"``. Pages without explorers are returned unchanged.
    """
    files: dict[str, bytes] = {}

    def to_file(m: re.Match) -> str:
        data = base64.b64decode(m.group(2))
        name = f"{hashlib.sha256(data).hexdigest()[:24]}.{m.group(1)}"
        files[name] = data
        return f"{prefix}{FRAMES_DIR}/{name}"

    def block(m: re.Match) -> str:
        text = _DATA_URI.sub(to_file, m.group(0))
        if 'loading="lazy"' not in text:
            text = text.replace("<img src=", '<img loading="lazy" src=', 1)
        return text

    return _FRAMES_BLOCK.sub(block, html), files


def _lighten_site(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for page in out.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        prefix = "../" * (len(page.relative_to(out).parts) - 1)
        light, frames = externalise_frames(lighten(text), prefix)
        for name, data in frames.items():
            path = out / FRAMES_DIR / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if not path.exists():
                path.write_bytes(data)
        if light != text:
            page.write_text(light, encoding="utf-8")


def setup(app):
    app.connect("build-finished", _lighten_site)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

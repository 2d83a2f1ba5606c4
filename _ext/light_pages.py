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
- **The search index does not block the page.** The theme loads searchtools.js,
  language_data.js and searchindex.js in the head without ``defer``; they are deferred, in order
  (searchtools initialises on DOMContentLoaded, which deferred scripts precede).

Each rule is a plain function on the page's text (``lighten``), tested in tests/test_light_pages.py.
"""

from __future__ import annotations

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


def _lighten_site(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        light = lighten(text)
        if light != text:
            page.write_text(light, encoding="utf-8")


def setup(app):
    app.connect("build-finished", _lighten_site)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

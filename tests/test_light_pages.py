"""_ext/light_pages.py: each rule on hand-written pages (the browser suite checks the
built site)."""

from __future__ import annotations

import base64
import hashlib
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("light_pages", ROOT / "_ext" / "light_pages.py")
light = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(light)

HEAD = """<html><head>
  <script defer src="../_static/scripts/fontawesome.js?digest=abc"></script>
    <script src="../_static/searchtools.js"></script>
    <script src="../_static/language_data.js"></script>
    <script src="../searchindex.js"></script>
    <script type="application/vnd.jupyter.widget-state+json">{"state": {"m1": {}}}</script>
    <script src="../_static/require.js?v=1"></script>
    <script src="../_static/widgets-glue.js?v=2"></script>
    <script data-jupyter-widgets-cdn="widgets/" src="../_static/widgets/embed-amd.js?v=3"></script>
    <script src="../_static/doctools.js?v=4"></script>
</head>
<body><p>Text</p>{view}</body></html>"""
VIEW = '<script type="application/vnd.jupyter.widget-view+json">{"model_id": "m1"}</script>'


def test_a_page_without_a_widget_view_loses_the_widget_manager_and_its_state():
    page = light.lighten(HEAD.replace("{view}", ""))
    for gone in ("widget-state+json", "require.js", "widgets-glue.js", "embed-amd.js"):
        assert gone not in page
    assert '<script src="../_static/doctools.js?v=4"></script>' in page  # others untouched


def test_a_page_with_a_widget_view_keeps_the_manager_after_its_text_in_order():
    page = light.lighten(HEAD.replace("{view}", VIEW))
    head, body = page.split("</head>")
    assert "widget-state+json" not in head and "require.js" not in head
    order = [body.index(s) for s in ("<p>Text</p>", VIEW, "widget-state+json", "require.js",
                                      "widgets-glue.js", "embed-amd.js", "</body>")]
    assert order == sorted(order)
    assert 'data-jupyter-widgets-cdn="widgets/" src="../_static/widgets/embed-amd.js?v=3"' in body


def test_fontawesome_script_dropped_and_search_scripts_deferred():
    page = light.lighten(HEAD.replace("{view}", ""))
    assert "fontawesome.js" not in page
    for src in ("../_static/searchtools.js", "../_static/language_data.js", "../searchindex.js"):
        assert f'<script defer src="{src}"></script>' in page
    assert (page.index("searchtools.js") < page.index("language_data.js")
            < page.index("searchindex.js"))


def test_lighten_is_idempotent():
    for view in ("", VIEW):
        once = light.lighten(HEAD.replace("{view}", view))
        assert light.lighten(once) == once


PNG = base64.b64encode(b"\x89PNG fake frame one").decode()
PNG2 = base64.b64encode(b"\x89PNG fake frame two").decode()
FRAMES = (f'<p>x</p><div class="llm-frames mathjax_ignore" id="u" data-llm-frames="u">'
          f'<img src="data:image/png;base64,{PNG}" alt="a" width="5" height="3">'
          f'<script>(function(){{var F=[null,"data:image/png;base64,{PNG2}"];}})();</script></div>'
          f'<img src="data:image/png;base64,{PNG}" alt="not an explorer">')


def test_explorer_frames_become_files_and_the_first_loads_lazily():
    html, files = light.externalise_frames(FRAMES, "../")
    one = hashlib.sha256(base64.b64decode(PNG)).hexdigest()[:24] + ".png"
    two = hashlib.sha256(base64.b64decode(PNG2)).hexdigest()[:24] + ".png"
    assert files == {one: base64.b64decode(PNG), two: base64.b64decode(PNG2)}
    assert f'<img loading="lazy" src="../_images/frames/{one}"' in html
    assert f'"../_images/frames/{two}"' in html
    # outside an explorer nothing changes
    assert html.endswith(f'<img src="data:image/png;base64,{PNG}" alt="not an explorer">')
    again, more = light.externalise_frames(html, "../")
    assert again == html and more == {}

"""axe-core over every page of the built site, in the light and the dark theme.

axe-core 4.14.1 (npm, MPL-2.0; tests/browser/axe/, injected into the page under test, never
served by the site) checks contrast, names of controls (sliders, dropdowns, buttons), alt text,
heading order, landmarks and more, on each page in the light theme, then the colour rules again in
the dark theme. No violation of serious or critical impact is allowed. Every page is checked by
test_layout.py during its desktop visit (``axe_problems``), so each page is loaded once per width.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

AXE = Path(__file__).parent / "axe" / "axe.min.js"
BLOCKING = ("serious", "critical")
# Only colours change with the theme: in dark mode the colour rules run again.
COLOUR_RULES = ["color-contrast", "link-in-text-block"]  # WCAG AA, as in the light run
RUN = """async (rules) => {
  const opts = {resultTypes: ['violations']};
  if (rules) opts.runOnly = {type: 'rule', values: rules};
  const r = await axe.run(document, opts);
  return r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 3).map(n => n.target.join(' '))}));
}"""


def _serious(violations, where):
    bad = [v for v in violations if v["impact"] in BLOCKING]
    return [f"{where}: {v['id']} ({v['impact']}: {v['help']}) at {v['nodes']}" for v in bad]


def axe_problems(page, rel) -> list[str]:
    """Serious or critical axe violations on a loaded page: light theme, then dark (colours).
    test_layout.py calls this during its desktop visit of every page (one load per page)."""
    page.add_script_tag(path=str(AXE))
    # Colours are measured once they settle: the theme fades some of them in (a transition
    # caught half-way read as a contrast failure: the search button on a loaded CI machine, a
    # code cell's strings when axe ran straight after the load), so no transitions, in either
    # theme.
    page.add_style_tag(content="*, *::before, *::after { transition: none !important;"
                               " animation: none !important; }")
    page.wait_for_timeout(100)
    problems = _serious(page.evaluate(RUN, None), f"{rel} (light)")
    page.evaluate("() => { document.documentElement.dataset.theme = 'dark';"
                  " document.documentElement.dataset.mode = 'dark'; }")
    page.wait_for_timeout(300)
    assert page.evaluate("() => getComputedStyle(document.body).backgroundColor") != \
        "rgb(255, 255, 255)", "the dark theme did not apply"
    return problems + _serious(page.evaluate(RUN, COLOUR_RULES), f"{rel} (dark)")


def test_axe_finds_a_planted_violation(browser, site_url):
    """The check bites: an image without alt text and an unlabelled button are reported."""
    page = browser.new_page()
    try:
        page.goto(f"{site_url}/book/intro.html", wait_until="load")
        page.evaluate("""() => { const m = document.querySelector('main') || document.body;
            m.insertAdjacentHTML('beforeend',
              '<img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="40" height="40">'
              + '<button></button>'); }""")
        found = " ".join(axe_problems(page, "planted"))
        assert "image-alt" in found and "button-name" in found, found
    finally:
        page.close()

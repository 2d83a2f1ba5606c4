"""The reader's edition in a real JupyterLab (headless, driven by Debian's Chromium), and the
edition's install cell checked on its own.

JupyterLab is started on a fresh copy of the edition (scripts/reader_edition.py into a temp
folder), with windowing off so every cell is rendered, not only those near the viewport.
Screenshots of chapter 3 go to _build/screenshots/lab-*.png.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
SHOTS = ROOT / "_build" / "screenshots"
from scripts import reader_edition as re_ed  # noqa: E402

# Five notebooks, one per part and two of Part II (the two explorer kinds a reader meets first),
# are opened in JupyterLab, run top to bottom, their markdown and figures counted and an explorer
# moved. Every notebook's markdown is checked for leftover MyST without a browser
# (test_reader_edition.py), its code is the book's, which nbval re-runs cell by cell, and its
# explorer is the same Explorer class; opening and running all 17 in Lab took 70% of this suite.
RUN_ALL = ("counting", "decode_roofline", "batching_cost", "moe_rack",
           "overtraining")
CHAPTERS = sorted(p.name for p in (ROOT / "book").glob("*.ipynb") if p.stem in RUN_ALL)
RAW = re.compile(r"\{glue|\{(cite|numref|eq|ref|doc)(:[a-z]+)?\}`|```\{|^\s*:::", re.M)


@pytest.fixture(scope="session")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("reader")
    re_ed.build(out)
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def lab_url(edition, tmp_path_factory):
    settings = tmp_path_factory.mktemp("lab-settings")
    # Render every cell (no windowing), and no news or update checks (offline).
    (settings / "@jupyterlab" / "notebook-extension").mkdir(parents=True)
    (settings / "@jupyterlab/notebook-extension/tracker.jupyterlab-settings").write_text(
        json.dumps({"windowingMode": "none"}))
    (settings / "@jupyterlab" / "apputils-extension").mkdir(parents=True)
    (settings / "@jupyterlab/apputils-extension/notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port = _free_port()
    env = dict(os.environ,
               PYTHONPATH=str(ROOT / "lib") + os.pathsep + os.environ.get("PYTHONPATH", ""),
               JUPYTERLAB_SETTINGS_DIR=str(settings))
    log = open(tmp_path_factory.mktemp("lab-log") / "lab.log", "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jupyterlab", "--allow-root", "--no-browser", f"--port={port}",
         "--ip=127.0.0.1", "--ServerApp.token=", "--ServerApp.password=",
         f"--ServerApp.root_dir={edition}", "--LabApp.news_url=None"],
        stdout=log, stderr=subprocess.STDOUT, env=env)
    url = f"http://127.0.0.1:{port}"
    for _ in range(120):
        try:
            urllib.request.urlopen(url + "/api/status", timeout=1)
            break
        except OSError:
            if proc.poll() is not None:
                pytest.fail(f"JupyterLab exited: see {log.name}")
            time.sleep(0.5)
    else:
        proc.terminate()
        pytest.fail("JupyterLab did not start within 60 s")
    yield url
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def _stored(name: str) -> dict:
    return json.loads((ROOT / "book" / name).read_text(encoding="utf-8"))


def _n_figures(nb: dict) -> int:
    """Figure outputs a full run draws: image outputs outside widgets."""
    return sum(1 for c in nb["cells"] if c["cell_type"] == "code"
               for o in c.get("outputs", []) if "image/png" in o.get("data", {}))


def _markdown_texts(page) -> list[str]:
    return page.eval_on_selector_all(
        ".jp-MarkdownCell .jp-RenderedMarkdown", "els => els.map(e => e.innerText)")


IDLE = ("() => /\\|\\s*Idle/.test(document.querySelector('.jp-StatusBar-Widget, "
        "#jp-main-statusbar')?.innerText || '')")


def _wait_idle(page, timeout_ms=60_000):
    page.wait_for_function(IDLE, timeout=timeout_ms)


def _run_all(page, timeout_s=150):
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).first.click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).first.click()
    deadline = time.time() + timeout_s
    time.sleep(1.0)
    while time.time() < deadline:  # done when no cell waits ("[*]") and the kernel is idle
        busy = page.evaluate("""() => {
          const prompts = Array.from(document.querySelectorAll('.jp-InputPrompt'));
          return prompts.some(p => p.innerText.includes('*'));
        }""")
        if not busy and page.evaluate(IDLE):
            return
        time.sleep(0.5)
    pytest.fail(f"Run All did not finish within {timeout_s} s")


@pytest.mark.parametrize("name", CHAPTERS)
def test_chapter_in_jupyterlab(browser, lab_url, edition, name):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
        "http://127.0.0.1") else route.abort())
    try:
        # ?reset: a fresh workspace, so no earlier chapter is restored in a hidden tab
        page.goto(f"{lab_url}/lab/tree/{name}?reset", wait_until="domcontentloaded")
        page.wait_for_selector(".jp-Notebook .jp-MarkdownCell .jp-RenderedMarkdown",
                               state="attached", timeout=60_000)
        _wait_idle(page)
        if name.startswith("03_"):
            SHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SHOTS / "lab-03-opened.png"))
        _run_all(page)
        # scroll through, so anything rendered on demand is drawn
        for frac in (0.25, 0.5, 0.75, 1.0):
            page.evaluate(f"""() => {{ const n = document.querySelector('.jp-WindowedPanel-outer')
                || document.querySelector('.jp-Notebook');"""
                          f""" n.scrollTop = n.scrollHeight * {frac}; }}""")
            time.sleep(0.3)
        texts = _markdown_texts(page)
        n_md = sum(c["cell_type"] == "markdown" for c in
                   json.loads((edition / name).read_text(encoding="utf-8"))["cells"])
        assert len(texts) == n_md, f"{name}: {len(texts)} of {n_md} markdown cells rendered"
        raw = [t[:200] for t in texts if RAW.search(t)]
        assert not raw, f"{name}: rendered markdown shows MyST source: {raw[:3]}"
        errors = page.locator(".jp-OutputArea-output"
                              "[data-mime-type='application/vnd.jupyter.stderr']")
        assert page.locator(".jp-RenderedText"
                            "[data-mime-type='application/vnd.jupyter.error']").count() == 0, \
            f"{name}: a cell raised"
        del errors
        imgs = page.locator(".jp-OutputArea-output:not(.jupyter-widgets) > img, "
                            ".jp-RenderedImage img").count()
        assert imgs >= _n_figures(_stored(name)), f"{name}: {imgs} figures drawn, " \
            f"{_n_figures(_stored(name))} expected"
        # the explorer: the first live widget output holding a slider and a figure
        found = page.evaluate("""() => {
          const outs = Array.from(document.querySelectorAll('.jp-OutputArea-output'));
          const o = outs.find(x => x.querySelector('.widget-hslider .noUi-handle')
                                   && x.querySelector('.jupyter-widgets img'));
          if (!o) return false;
          o.querySelector('.widget-hslider .noUi-handle').setAttribute('data-test', 'handle');
          o.querySelector('.jupyter-widgets img').setAttribute('data-test', 'figure');
          return true; }""")
        if found:
            img = page.locator("img[data-test=figure]")
            img.scroll_into_view_if_needed()
            before = img.get_attribute("src")
            page.locator("[data-test=handle]").focus()
            page.keyboard.press("ArrowRight")
            page.wait_for_function(
                "(b) => document.querySelector('img[data-test=figure]').src !== b",
                arg=before, timeout=20_000)
        else:
            pytest.fail(f"{name}: no live explorer (slider and figure) after Run All")
        if name.startswith("03_"):
            page.locator(".jp-MarkdownCell").first.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "lab-03-after-run.png"))
    finally:
        page.close()


# --- The reader's notebooks run as the book's do ------------------------------------------
# Their code cells are the book's, in order (tests/test_reader_edition.py checks the sources), and
# nbval re-runs the book's notebooks against their stored outputs in `make test`, so a second
# full re-run here would repeat it. What the edition adds is its install cell: run it alone.

def test_install_cell_is_a_no_op_where_llmmath_imports(tmp_path):
    cell = "".join(re_ed.install_cell(ROOT)["source"])
    guard = ("import subprocess\n"
             "def _refuse(*a, **k): raise SystemExit('install cell called pip: ' + repr(a))\n"
             "subprocess.check_call = _refuse\n")
    script = tmp_path / "install_cell.py"
    script.write_text(guard + cell + "\nimport llmmath\nprint(llmmath.__name__)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "lib"))
    run = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "llmmath"


def test_install_cell_installs_where_llmmath_is_missing(tmp_path):
    cell = "".join(re_ed.install_cell(ROOT)["source"])
    # A reader's copy of the repository: the cell finds the checkout above the working folder.
    work = tmp_path / "checkout" / "book"
    (tmp_path / "checkout" / "lib" / "llmmath").mkdir(parents=True)
    work.mkdir(parents=True)
    guard = ("import importlib.util, subprocess\n"
             "importlib.util.find_spec = lambda name, *a: None\n"
             "calls = []\n"
             "subprocess.check_call = lambda args, *a, **k: calls.append(args)\n")
    script = tmp_path / "install_cell.py"
    script.write_text(guard + cell + "\nprint(calls[0][-1])\n")
    run = subprocess.run([sys.executable, str(script)], cwd=work, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == str((tmp_path / "checkout").resolve())

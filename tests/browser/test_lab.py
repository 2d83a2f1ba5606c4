"""The reader's edition in a real JupyterLab (headless, driven by Debian's Chromium), and each
reader's notebook re-run with nbclient in a fresh kernel and compared as nbval compares.

JupyterLab is started on a fresh copy of the edition (scripts/reader_edition.py into a temp
folder), with windowing off so every cell is rendered, not only those near the viewport.
Screenshots of chapter 3 go to _build/screenshots/lab-*.png.
"""

from __future__ import annotations

import configparser
import copy
import importlib.util
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
_spec = importlib.util.spec_from_file_location("reader_edition", ROOT / "scripts/reader_edition.py")
re_ed = importlib.util.module_from_spec(_spec)
sys.modules["reader_edition"] = re_ed
_spec.loader.exec_module(re_ed)

CHAPTERS = sorted(p.name for p in (ROOT / "book").glob("*.ipynb"))
RAW = re.compile(r"\{glue|\{(cite|numref|eq|ref|doc)(:[a-z]+)?\}`|```\{|^\s*:::", re.M)
VIEW = "application/vnd.jupyter.widget-view+json"


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
    env = dict(os.environ, PYTHONPATH=str(ROOT / "lib") + os.pathsep + os.environ.get("PYTHONPATH", ""),
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


IDLE = "() => /\\|\\s*Idle/.test(document.querySelector('.jp-StatusBar-Widget, #jp-main-statusbar')?.innerText || '')"


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
                || document.querySelector('.jp-Notebook'); n.scrollTop = n.scrollHeight * {frac}; }}""")
            time.sleep(0.3)
        texts = _markdown_texts(page)
        n_md = sum(c["cell_type"] == "markdown" for c in
                   json.loads((edition / name).read_text(encoding="utf-8"))["cells"])
        assert len(texts) == n_md, f"{name}: {len(texts)} of {n_md} markdown cells rendered"
        raw = [t[:200] for t in texts if RAW.search(t)]
        assert not raw, f"{name}: rendered markdown shows MyST source: {raw[:3]}"
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
        assert page.locator(".jp-RenderedText[data-mime-type='application/vnd.jupyter.error']").count() == 0, \
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
        elif name.startswith(("03_", "04_")):
            pytest.fail(f"{name}: no live explorer (slider and figure) after Run All")
        if name.startswith("03_"):
            page.locator(".jp-MarkdownCell").first.scroll_into_view_if_needed()
            page.screenshot(path=str(SHOTS / "lab-03-after-run.png"))
    finally:
        page.close()


# --- nbclient: the reader's notebooks re-run in a fresh kernel, compared as nbval does -------

def _sanitizers():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "tests" / "nbval_sanitize.cfg")
    return [(re.compile(cfg[s]["regex"]), cfg[s]["replace"]) for s in cfg.sections()]


SKIP_MIMES = ("image/", VIEW, "text/html")  # nbval skips images and widget views


def _comparable(outputs: list, ctx) -> list:
    subs = _sanitizers()
    result = []
    for out in outputs:
        out = re_ed.transform_output(out, ctx)
        if out["output_type"] == "stream":
            item = (out["name"], re_ed._text(out["text"]))
        elif out["output_type"] in ("display_data", "execute_result"):
            item = tuple(sorted((k, re_ed._text(v) if not isinstance(v, dict) else json.dumps(v))
                                for k, v in out.get("data", {}).items()
                                if not k.startswith(SKIP_MIMES)))
            if not item:
                continue
        else:
            item = (out["output_type"], out.get("ename"), out.get("evalue"))
        text = json.dumps(item)
        for rx, rep in subs:
            text = rx.sub(rep, text)
        result.append(text)
    return result


@pytest.mark.parametrize("name", CHAPTERS)
def test_reader_notebook_reruns_with_the_stored_outputs(edition, name):
    import nbformat
    from nbclient import NotebookClient

    path = edition / name
    stored = nbformat.read(path, as_version=4)
    fresh = copy.deepcopy(stored)
    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = str(ROOT / "lib") + (os.pathsep + env_path if env_path else "")
    try:
        NotebookClient(fresh, timeout=60, kernel_name="python3", record_timing=False,
                       resources={"metadata": {"path": str(edition)}}).execute()
    finally:
        os.environ["PYTHONPATH"] = env_path
    book = re_ed.load_book(ROOT)
    ctx = re_ed.Context(book, f"book/{Path(name).stem}")
    ctx.glue = re_ed.glue_values(stored)
    for i, (a, b) in enumerate(zip(stored.cells, fresh.cells, strict=True)):
        if a.cell_type != "code":
            continue
        tags = a.metadata.get("tags", [])
        if "nbval-ignore-output" in tags or "nbval-skip" in tags:
            continue
        want, got = _comparable(a.get("outputs", []), ctx), _comparable(b.get("outputs", []), ctx)
        assert got == want, f"{name} cell {i}: outputs differ from the stored ones\n" \
            f"stored: {want[:2]}\nfresh: {got[:2]}"

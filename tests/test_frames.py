"""Kernel-free explorers: N embedded frames, a range input, a deterministic id and repr,
no outside request, under the page budget; the same builder as the live explorer."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402

from llmmath import chips, frames, models, plots  # noqa: E402

SANITIZE = re.compile(r"data:image/(png|jpeg|webp);base64,([A-Za-z0-9+/=]+)")
LLAMA, H100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
VALUES = [1, 16, 256, 1024]


@pytest.fixture(scope="module")
def fs():
    return frames.slider(plots.cost_vs_batch, "mark_batch", VALUES, model=LLAMA, chip=H100,
                         n_chips=8)


def test_html_structure(fs):
    html = fs._repr_html_()
    n = len(VALUES)
    assert html.startswith('<div class="llm-frames') and html.endswith("</div>")
    assert len(SANITIZE.findall(html)) == n, "every frame is embedded exactly once"
    assert html.count("<img ") == 1
    assert re.search(rf'<input type="range" min="0" max="{n - 1}" step="1" value="0"', html)
    assert '<div class="llm-frames-label" aria-live="polite">batch = 1</div>' in html
    # the label on its own line above a full-width range input that is a touch target
    assert html.index("llm-frames-label") < html.index('type="range"')
    assert re.search(r'<input type="range"[^>]*style="[^"]*width:100%;min-height:44px', html)
    assert (f"Static page: {n} precomputed frames. Run this "
            "notebook (make lab) for the full explorer.") in html
    assert "<script>" in html and "require" not in html
    assert "http://" not in html and "https://" not in html and "src=\"//" not in html
    assert re.search(r'<img src="data:image/png;base64,[^"]+" alt="[^"]{40,}"', html)
    assert html.count("</script>") == 1


def test_alt_text_per_frame_follows_the_marked_point(fs):
    assert len(set(fs.alts)) == len(VALUES)
    assert all("Marked: B=" in a for a in fs.alts)


def test_deterministic_id_html_and_repr(fs):
    again = frames.slider(plots.cost_vs_batch, "mark_batch", VALUES, model=LLAMA, chip=H100,
                          n_chips=8)
    assert again.uid == fs.uid and re.fullmatch(r"llm-frames-[0-9a-f]{12}", fs.uid)
    assert SANITIZE.sub("X", again.html) == SANITIZE.sub("X", fs.html)
    assert repr(fs) == "<FrameSlider: 4 frames of cost_vs_batch over batch>"
    other = frames.slider(plots.cost_vs_batch, "mark_batch", VALUES[:3], model=LLAMA, chip=H100,
                          n_chips=8)
    assert other.uid != fs.uid


def test_size_and_resolution(fs):
    assert fs.nbytes <= frames.DEFAULT_MAX_BYTES <= frames.PAGE_BUDGET_BYTES
    assert fs.size_px[0] >= 1000, "frames must stay sharp on a phone's 3x screen"
    for img in fs.images:
        assert img.startswith(b"\x89PNG")


def test_budget_steps_resolution_down_then_refuses():
    small = frames.slider(plots.decode_time_vs_batch, "context", [1024, 8192], model=LLAMA,
                          chip=H100, max_bytes=90_000)
    assert small.nbytes <= 90_000 and small.dpi < 200
    with pytest.raises(ValueError, match="fewer frames"):
        frames.slider(plots.decode_time_vs_batch, "context", [1024, 8192], model=LLAMA, chip=H100,
                      max_bytes=5_000)


def test_label_and_arguments():
    s = frames.slider(plots.training_time_vs_chips, "mfu", [0.3, 0.5], label=lambda v: f"{v:.0%}",
                      model=LLAMA, tokens=15e12, chip=H100, max_bytes=400_000)
    assert s.labels == ["mfu = 30%", "mfu = 50%"]
    with pytest.raises(ValueError):
        frames.slider(plots.cost_vs_batch, "mark_batch", [1], model=LLAMA, chip=H100)
    # issue 36: ch1's label read "batch = batch 1"; the slider prints the name itself
    with pytest.raises(ValueError, match="label: got 'batch 1'"):
        frames.slider(plots.cost_vs_batch, "mark_batch", [1, 8], label=lambda b: f"batch {b}",
                      model=LLAMA, chip=H100)


def test_script_cannot_be_closed_by_text():
    assert "<" not in frames._js(["</script><!--"])


def test_slider_swaps_the_image_in_a_browser(fs, tmp_path):
    """The inline script works in Chromium (skips where there is none)."""
    import shutil

    chromium = shutil.which("chromium")
    sync = pytest.importorskip("playwright.sync_api")
    if not chromium:
        pytest.skip("no chromium")
    page_html = f"<!doctype html><html><body>{fs.html}{fs.html}</body></html>"
    with sync.sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = b.new_page()
        page.set_content(page_html)
        for i in range(2):
            box = page.locator(".llm-frames").nth(i)
            before = box.locator("img").get_attribute("src")
            box.locator('input[type="range"]').fill(str(len(VALUES) - 1))
            box.locator('input[type="range"]').dispatch_event("input")
            assert box.locator("img").get_attribute("src") != before
            assert box.locator(".llm-frames-label").inner_text() == "batch = 1,024"
        b.close()


def _mark_builders():
    """Every plots builder with a ``mark_*`` argument whose first arguments are (model, chip)."""
    import inspect

    found = []
    for name, fn in vars(plots).items():
        if not inspect.isfunction(fn) or name.startswith("_"):
            continue
        params = list(inspect.signature(fn).parameters)
        marks = [p for p in params if p.startswith("mark_")]
        if marks and params[:2] == ["model", "chip"]:
            found.append((name, marks[0]))
    return found


MARK_VALUES = {"mark_batch": (2, 256), "mark_context": (512, 6144), "mark_prompt": (256, 8192),
               "mark_stages": (1, 8), "mark_chips": (64, 8192), "mark_tokens": (512, 2 ** 20)}


@pytest.mark.parametrize("name,mark", _mark_builders())
def test_moving_the_marked_point_changes_the_frame(name, mark):
    """A kernel-free slider over a mark_* argument must show different pixels per value
    (a builder that draws its marker outside `marking()` once produced identical frames)."""
    lo, hi = MARK_VALUES[mark]
    fig = getattr(plots, name)(models.get("Llama-3-70B"), chips.get("H100-SXM"), **{mark: lo})
    first = plots.render_rgba(fig).copy()
    fig.update(**{mark: hi})
    second = plots.render_rgba(fig).copy()
    matplotlib.pyplot.close(fig)
    assert (first != second).any(), (f"{name}: moving {mark} from {lo} "
                                     f"to {hi} did not change the figure")


def _png_sizes(images):
    import io

    from PIL import Image
    return [Image.open(io.BytesIO(b)).size for b in images]


def test_frames_of_a_slider_share_one_size_and_legend_place():
    """Ch3's slider: the legend of decode_time_vs_batch once moved from below the axes into the
    plot at context 8,192 and the frames were 800, 925 and 973 px tall (the page jumped)."""
    s = frames.slider(plots.decode_time_vs_batch, "context", [0, 1024, 8192], model=LLAMA,
                      chip=H100, n_chips=8, max_bytes=2_000_000)
    sizes = _png_sizes(s.images)
    assert len(set(sizes)) == 1 and sizes[0] == s.size_px, sizes


def _book_sliders():
    """(notebook, sliders' frame sizes) for every frame slider the executed chapters show."""
    import base64
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = []
    for nb in sorted((root / "book").glob("*.ipynb")):
        for cell in json.loads(nb.read_text(encoding="utf-8"))["cells"]:
            for o in cell.get("outputs", []):
                html = "".join(o.get("data", {}).get("text/html", ""))
                if "data-llm-frames" not in html:
                    continue
                imgs = [base64.b64decode(m.group(2)) for m in SANITIZE.finditer(html)
                        if m.group(1) == "png"]
                out.append((nb.stem, _png_sizes(imgs)))
    return out


def test_every_book_slider_keeps_one_frame_size():
    """What the site serves: all frames of each slider in the executed chapters have one pixel
    size (fails until the chapters are executed with this frames module)."""
    found = _book_sliders()
    assert len(found) >= 10, found
    jumps = [f"{nb}: {sorted(set(sizes))}" for nb, sizes in found if len(set(sizes)) > 1]
    assert not jumps, "frames of different sizes:\n  " + "\n  ".join(jumps)

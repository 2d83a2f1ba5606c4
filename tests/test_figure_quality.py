"""Figure quality over every builder of :mod:`llmmath.plots` (issue 18).

Builders are discovered from ``llmmath.plots.__all__`` (every public function of a figure-family
module that returns a figure), so a builder added later is checked without editing this file:
its required arguments get values from ``SAMPLE`` by name (a missing name fails loudly). The
figures the book draws are read from the chapters themselves: every labelled figure cell of every
chapter in _toc.yml, run as the notebook runs it (``llmmath.book.chapter_figures``). For each
figure:

- no legend and no text (label, note, annotation) overlaps a plotted line or marker: the legend's
  and each text's window extent against every line's path (segments clipped to the axes) and
  every marker, all in display pixels, as matplotlib draws them;
- every text is at least ``MIN_PHONE_PX`` pixels tall when the image is shown at the phone
  column's width (``PHONE_COLUMN_PX``), which is how a 390 px screen shows it;
- every log axis labels at least two ticks;
- across all figures, each role (compute, weight reads, KV reads, the bound ...) and each chip and
  model is drawn in one colour, the one :mod:`llmmath.plots.style` gives it;
- the checks of ``CHECKS`` (issue 36): no text on text, every text inside the figure, no code
  name, e-notation, ASCII stand-in or B for bytes in figure text, one tick formatter family,
  lines and bars at 3:1 on white; and no two figures of the book draw the same pixels.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from llmmath import book, chips, models, plots  # noqa: E402
from llmmath.plots.labels import _boxes, noted, text_corners  # noqa: E402
from llmmath.units import GB, TFLOPS  # noqa: E402

#: Width in CSS px of the text column on a 390 px screen (390 less the theme's 16 px margins).
PHONE_COLUMN_PX = 358
#: Smallest text height (font size in px) a reader should meet at that width: "about 9 px".
MIN_PHONE_PX = 8.9
#: Width in CSS px at which a figure's PNG is shown on a desktop (its size at 100 dpi).
CSS_DPI = 100

NOT_BUILDERS = {"house_style", "setup_notebook", "offscreen", "label_si", "render_rgba",
                "series_colour", "chip_colour", "model_colour", "param_parts"}

H100 = chips.get("H100-SXM")
LLAMA70, DSV3 = models.get("Llama-3-70B"), models.get("DeepSeek-V3")

#: A value for each required argument name, used for builders the book does not call.
SAMPLE = {"model": LLAMA70, "chip": H100, "model_list": [LLAMA70, DSV3], "tokens": 1e12,
          "measured": {"flops": 740 * TFLOPS, "bandwidth": 3000 * GB},
          "kv_bytes_per_token": LLAMA70.kv_bytes_per_token(2),
          # chapter 12 (lifetime): a loss a 100B model reaches, the episode's tokens served, its
          # budget
          "loss": 1.9, "inference_tokens": 259.2e12, "compute": 1.5552e26, "sequence_length": 8192,
          # chapter 10 (estimate): a calibration row by index (NIM's Llama 3.3 70B decode row)
          "row": 37,
          # training layout: Llama 3's one unexpected interruption per 54 days / 419 (s) and a
          # checkpoint of 16,384 GPUs x 4 GB at 2 TB/s (llama3_herd, Sec. 3.3.1 and 3.3.4)
          "mtbf": 54 * 86400 / 419, "checkpoint_time": 16384 * 4e9 / 2e12}


ROOT = Path(__file__).resolve().parents[1]


def _book():
    """The figures the chapters draw: {label: chapter notebook}, from the labelled figure cells
    of every chapter in _toc.yml (nothing here names a chapter or a figure)."""
    out = {}
    for chapter in book.chapters(ROOT / "_toc.yml"):
        path = ROOT / "book" / f"{chapter}.ipynb"
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]:
            if cell["cell_type"] == "code" and book.figure_label(cell):
                out[book.figure_label(cell)] = path
    return out


BOOK = _book()


def builders():
    """Every public figure builder of llmmath.plots."""
    out = {}
    for name in plots.__all__:
        fn = getattr(plots, name)
        if (inspect.isfunction(fn) and name not in NOT_BUILDERS
                and fn.__module__.rsplit(".", 1)[-1] not in ("style", "labels", "figure")):
            out[name] = fn
    return out


def _sample_call(name, fn):
    kwargs = {}
    for par in inspect.signature(fn).parameters.values():
        if par.default is inspect.Parameter.empty and par.kind is not par.VAR_KEYWORD:
            assert par.name in SAMPLE, (f"builder {name}: add a value for its argument "
                                        f"{par.name!r} to SAMPLE in {__file__}")
            kwargs[par.name] = SAMPLE[par.name]
    return lambda: fn(**kwargs)


def cases():
    """Every case: the book's figures by label, then each builder called with SAMPLE values."""
    out = {label: None for label in BOOK}
    for name, fn in builders().items():
        out[f"default {name}"] = _sample_call(name, fn)
    return out


CASES = cases()


def test_every_builder_is_discovered_and_every_chapter_has_figures():
    found = builders()
    assert len(found) >= 25, sorted(found)
    chapters = set(book.chapters(ROOT / "_toc.yml"))
    assert {p.stem for p in BOOK.values()} == chapters and len(BOOK) >= 3 * len(chapters)


class _Drawn(dict):
    """Each case's figure, drawn on first use: a pytest-xdist worker draws only the cases it runs
    (KEYS sends a case's tests to one worker; drawing every case on every worker was the unit
    stage's largest cost)."""

    def __missing__(self, key):
        if key in BOOK:  # running a chapter draws all its figures: keep them all
            with contextlib.redirect_stdout(io.StringIO()):
                for label, fig in book.chapter_figures(BOOK[key]):
                    fig.canvas.draw()
                    self[label] = fig
            return self[key]
        with plots.offscreen():
            fig = CASES[key]()
            fig.canvas.draw()
        self[key] = fig
        return fig


@pytest.fixture(scope="module")
def figures():
    yield _Drawn()
    plt.close("all")


# one xdist group per chapter (its figures are drawn together) and per other case (make unit
# runs --dist loadgroup)
KEYS = [pytest.param(k, id=k, marks=pytest.mark.xdist_group(
    f"figure-{BOOK[k].stem}" if k in BOOK else f"figure-{k}")) for k in CASES]


# ----- geometry ---------------------------------------------------------------------------------

def _crosses(p0, p1, box):
    """Liang-Barsky over arrays of segments: which segments p0[i]-p1[i] cross the box
    (x0, y0, x1, y1). t0 only grows and t1 only shrinks, so "t0 <= t1 at the end" is the
    scalar algorithm's "never t0 > t1 on the way"."""
    d = p1 - p0
    t0, t1 = np.zeros(len(p0)), np.ones(len(p0))
    inside = np.ones(len(p0), dtype=bool)
    for p, q in ((-d[:, 0], p0[:, 0] - box[0]), (d[:, 0], box[2] - p0[:, 0]),
                 (-d[:, 1], p0[:, 1] - box[1]), (d[:, 1], box[3] - p0[:, 1])):
        parallel = p == 0
        inside &= ~(parallel & (q < 0))  # parallel to this edge and outside it
        with np.errstate(divide="ignore", invalid="ignore"):
            r = q / p
        t0 = np.where(~parallel & (p < 0), np.maximum(t0, r), t0)
        t1 = np.where(~parallel & (p > 0), np.minimum(t1, r), t1)
    return inside & (t0 <= t1)


def _inter(a, b):
    return (max(a[0], b[0]), max(a[1], b[1]), min(a[2], b[2]), min(a[3], b[3]))


def _empty(b):
    return b[0] >= b[2] or b[1] >= b[3]


def _line_hits(ln, box, axbox):
    """Whether the drawn line (segments or markers) enters `box`; only its part inside the axes
    counts (matplotlib clips the rest)."""
    area = _inter(box, axbox)
    if _empty(area):
        return False
    xy = np.asarray(ln.get_xydata(), dtype=float)
    if xy.size == 0:
        return False
    with np.errstate(all="ignore"):
        pts = ln.get_transform().transform(xy)
    ok = np.all(np.isfinite(pts), axis=1)
    if ln.get_linestyle() not in ("None", "", " ", "none"):
        both = ok[:-1] & ok[1:]  # segments with both ends finite
        if _crosses(pts[:-1][both], pts[1:][both], area).any():
            return True
    if ln.get_marker() not in (None, "None", "", " ", "none"):
        r = 0.5 * ln.get_markersize() * ln.figure.dpi / 72.0
        grown = (area[0] - r, area[1] - r, area[2] + r, area[3] + r)
        p = pts[ok]
        if ((p[:, 0] > grown[0]) & (p[:, 0] < grown[2]) & (p[:, 1] > grown[1])
                & (p[:, 1] < grown[3])).any():
            return True
    return False


def _scatter_hits(coll, box, axbox):
    area = _inter(box, axbox)
    if _empty(area) or not hasattr(coll, "get_offsets"):
        return False
    off = np.asarray(coll.get_offsets(), dtype=float)
    if off.size == 0 or not len(coll.get_sizes()):
        return False
    pts = coll.get_offset_transform().transform(off)
    r = 0.5 * np.sqrt(np.max(coll.get_sizes())) * coll.figure.dpi / 72.0
    return bool(((pts[:, 0] > area[0] - r) & (pts[:, 0] < area[2] + r) & (pts[:, 1] > area[1] - r)
                 & (pts[:, 1] < area[3] + r)).any())


def _shrink(bb, px=1.5):
    return (bb.x0 + px, bb.y0 + px, bb.x1 - px, bb.y1 - px)


def _shrink_box(b, px=1.5):
    return (b[0] + px, b[1] + px, b[2] - px, b[3] - px)


def overlaps(fig):
    """Every (label or legend, line) pair of `fig` that overlaps, as readable strings."""
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        axbb = ax.get_window_extent(renderer)
        axbox = (axbb.x0, axbb.y0, axbb.x1, axbb.y1)
        boxes = []
        leg = ax.get_legend()
        if leg is not None and leg.get_visible():
            boxes.append(("legend", _shrink(leg.get_window_extent(renderer))))
        for t in ax.texts:
            if t.get_visible() and t.get_text().strip():
                # a label turned along a slope covers a chain of small boxes, not its square
                boxes += [(repr(t.get_text()), _shrink_box(b))
                          for b in _boxes(t, renderer)]
        # guides (lines of constant ratio behind a scatter, noted as guides by plots.labels) are
        # like grid lines: labels may cross them; every other line and marker is data
        lines = [ln for ln in ax.lines if ln.get_visible() and not noted(ln, "guide", False)]
        colls = [c for c in ax.collections
                 if c.get_visible() and type(c).__name__ == "PathCollection"]
        for what, box in boxes:
            for ln in lines:
                if _line_hits(ln, box, axbox):
                    found.append(f"{what} covers the line {ln.get_label()!r} "
                                 f"({to_hex(ln.get_color())})")
            for c in colls:
                if _scatter_hits(c, box, axbox):
                    found.append(f"{what} covers the markers {c.get_label()!r}")
    return found


@pytest.mark.parametrize("key", KEYS)
def test_text_legible_at_phone_width(figures, key):
    fig = figures[key]
    scale = PHONE_COLUMN_PX / (fig.get_figwidth() * CSS_DPI)
    small = []
    for t in fig.findobj(Text):
        if t.get_visible() and t.get_text().strip() and t.get_figure() is not None:
            px = t.get_fontsize() * CSS_DPI / 72.0 * scale
            if px < MIN_PHONE_PX - 1e-9:
                small.append(f"{t.get_text()!r}: {t.get_fontsize():.1f} pt -> {px:.1f} px")
    assert not small, f"{key}: text under {MIN_PHONE_PX} px at {PHONE_COLUMN_PX} px wide:\n  " + \
        "\n  ".join(sorted(set(small)))


@pytest.mark.parametrize("key", KEYS)
def test_log_axes_label_two_ticks(figures, key):
    fig = figures[key]
    for ax in fig.axes:
        for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):
            if axis.get_scale() != "log" or not axis.get_visible():
                continue
            lo, hi = sorted(lim)
            shown = [t for t in axis.get_ticklabels()
                     if t.get_text().strip()
                     and lo * 0.999 <= t.get_position()[axis is ax.yaxis] <= hi * 1.001]
            assert len(shown) >= 2, f"{key}: log {axis.axis_name} axis labels {len(shown)} tick(s)"


# ----- one colour per role, chip and model -----------------------------------------------------

ROLE_PATTERNS = [
    ("compute", re.compile(r"^compute\b(?! per token)|^matmul FLOPs|^compute-bound$")),
    ("weights", re.compile(r"^weight(s| reads| read)\b")),
    ("kv", re.compile(r"^KV(-cache)? (reads|writes)\b")),
    ("bound", re.compile(r"^step bound\b")),
    ("prefill", re.compile(r"^recompute \(prefill\)")),
    ("overhead", re.compile(r"^per-layer kernel overhead$")),
]
#: A reference capacity written beside its line ("HBM of 8× H100-SXM: 640 GB", "H200 HBM 141 GB").
CAPACITY = re.compile(r"\bHBM\b.*\d+(\.\d+)? [kMGT]?B\b")
BATCH = re.compile(r"^(?:batch|B =) ?([\d,]+)$")
CHIP_NAMES = set(chips.names())
MODEL_NAMES = set(models.names()) | {"Llama-3.1-70B"}


def role_of(label: str):
    """The role, chip or model a legend label stands for, or None."""
    head = re.sub(r"\s*\(.*\)$", "", label).strip()
    head = re.sub(r":.*$", "", head)
    head = re.sub(r"^\d+× ", "", head)
    if BATCH.match(head):
        return f"batch {int(BATCH.match(head).group(1).replace(',', ''))}"
    if head in CHIP_NAMES:
        return f"chip {head}"
    if head in MODEL_NAMES:
        return f"model {head}"
    for role, pat in ROLE_PATTERNS:
        if pat.search(label):
            return f"role {role}"
    return None


def colours(fig):
    """(role, colour) for every labelled line, scatter and bar of `fig`."""
    out = []
    for ax in fig.axes:
        for ln in ax.lines:
            r = role_of(ln.get_label())
            if r and r.startswith("batch ") and len(ln.get_xdata()) < 2:
                continue  # one marked point ("B = 1024: 882 FLOP/byte"), not a batch's series
            if r and not ln.get_label().startswith("_"):
                drawn = ln.get_linestyle() not in ("None", "", " ", "none")
                out.append((r, to_hex(ln.get_color() if drawn else ln.get_markerfacecolor())))
        for c in ax.collections:
            r = role_of(c.get_label())
            if r and len(c.get_facecolor()):
                out.append((r, to_hex(c.get_facecolor()[0])))
        for cont in ax.containers:
            r = role_of(cont.get_label() or "")
            if r and len(cont.patches):
                out.append((r, to_hex(cont.patches[0].get_facecolor())))
        for t in ax.texts:
            if t.get_visible() and CAPACITY.search(t.get_text()):
                out.append(("role capacity", to_hex(t.get_color())))
    return out


@pytest.mark.xdist_group("figure-all")
def test_one_colour_per_role_chip_and_model(figures):
    seen: dict = {}
    for key in CASES:  # every case, drawn here if this worker has not drawn it yet
        fig = figures[key]
        for role, colour in colours(fig):
            seen.setdefault(role, {}).setdefault(colour, []).append(key)
    clashes = {role: cols for role, cols in seen.items() if len(cols) > 1}
    assert not clashes, "\n".join(
        f"{role}: " + "; ".join(f"{c} in {', '.join(sorted(set(k)))}" for c, k in cols.items())
        for role, cols in sorted(clashes.items()))
    assert len(seen) >= 10, sorted(seen)


@pytest.mark.xdist_group("figure-all")
def test_role_colours_come_from_the_style_map(figures):
    from llmmath.plots import style
    want = {f"role {r}": style.ROLE[r] for r in ("compute", "weights", "kv", "bound", "prefill",
                                                 "overhead", "capacity")}
    for key in CASES:
        fig = figures[key]
        for role, colour in colours(fig):
            if role in want:
                assert colour.lower() == want[role].lower(), f"{key}: {role} drawn {colour}"
            if role.startswith("chip ") and hasattr(style, "chip_colour"):
                assert colour.lower() == style.chip_colour(role[5:]).lower(), f"{key}: {role}"
            if role.startswith("model ") and hasattr(style, "model_colour"):
                assert colour.lower() == style.model_colour(role[6:]).lower(), f"{key}: {role}"
            if role.startswith("batch "):
                assert colour.lower() == style.batch_colour(int(role[6:])).lower(), \
                    f"{key}: {role} drawn {colour}"


def test_roles_batches_and_capacities_are_read_from_labels():
    assert role_of("batch 64") == role_of("B = 64") == "batch 64"
    assert role_of("step bound (chapters 3–5)") == "role bound"
    assert role_of("recompute (prefill): $0.126/M") == "role prefill"
    assert role_of("8× H100-SXM") == "chip H100-SXM"
    fig, ax = plt.subplots()
    ax.text(0.1, 0.9, "HBM of H200: 141 GB", color="#CC79A7")
    ax.plot([0, 1], [0, 1], color="#E69F00", label="batch 64")
    found = colours(fig)
    plt.close(fig)
    assert found == [("batch 64", "#e69f00"), ("role capacity", "#cc79a7")]


def test_segment_box_crossing_by_hand():
    box = (0.0, 0.0, 1.0, 1.0)
    p0 = np.array([[-1.0, 0.5], [2.0, 2.0], [-1.0, -1.0], [0.5, 2.0], [1.5, -1.0], [0.2, 0.2]])
    p1 = np.array([[2.0, 0.5], [3.0, 3.0], [2.0, 2.0], [0.5, 1.5], [1.5, 3.0], [0.3, 0.3]])
    # through, beside, diagonal through, vertical stopping short, vertical beside, inside
    assert _crosses(p0, p1, box).tolist() == [True, False, True, False, False, True]


def test_a_label_on_a_line_is_found():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], label="data", color="#1f77b4")
    ax.text(0.5, 0.5, "on the line", ha="center", va="center")
    ax.text(0.05, 0.9, "clear of it")
    fig.canvas.draw()
    found = overlaps(fig)
    plt.close(fig)
    assert found == ["'on the line' covers the line 'data' (#1f77b4)"]


# ----- text against text, text spelling, ticks, contrast (issue 36) -----------------------------

def _drawn_tick_labels(ax):
    """The tick labels matplotlib draws for `ax` (those inside the view limits)."""
    out = []
    for axis in (ax.xaxis, ax.yaxis):
        if not axis.get_visible():
            continue
        lo, hi = sorted(axis.get_view_interval())
        for tick in axis.get_major_ticks() + axis.get_minor_ticks():
            loc = tick.get_loc()
            if loc is None or not lo - 1e-9 * abs(lo) <= loc <= hi + 1e-9 * abs(hi):
                continue
            out += [t for t in (tick.label1, tick.label2) if t.get_visible()]
    return out


def figure_texts(fig):
    """Every text a reader sees in `fig`: tick labels (drawn ones), axis labels, titles, texts and
    annotations, legend entries and titles, figure texts, secondary axes' labels."""
    found = []
    axes = list(fig.axes)
    for ax in fig.axes:
        axes += [c for c in ax.child_axes if c not in axes]
    for ax in axes:
        if not ax.get_visible():
            continue
        found += _drawn_tick_labels(ax)
        found += [ax.xaxis.label, ax.yaxis.label, ax.title, ax._left_title, ax._right_title]
        found += list(ax.texts)
        leg = ax.get_legend()
        if leg is not None and leg.get_visible():
            found += list(leg.get_texts()) + [leg.get_title()]
    for leg in fig.legends:
        found += list(leg.get_texts()) + [leg.get_title()]
    found += list(fig.texts)
    if fig._suptitle is not None:
        found.append(fig._suptitle)
    seen, out = set(), []
    for t in found:
        if (id(t) not in seen and t.get_visible() and t.get_text().strip()
                and t.get_alpha() != 0):  # a transparent text holds a place in the layout
            seen.add(id(t))
            out.append(t)
    return out


def _polys_overlap(p, q, pad=1.0):
    """Separating-axis test of two convex quadrilaterals, each shrunk by `pad` px."""
    for poly in (p, q):
        for i in range(4):
            edge = poly[(i + 1) % 4] - poly[i]
            n = np.array([-edge[1], edge[0]])
            norm = np.hypot(*n)
            if norm == 0:
                continue
            n = n / norm
            a, b = p @ n, q @ n
            if a.max() - pad <= b.min() + pad or b.max() - pad <= a.min() + pad:
                return False
    return True


def text_overlaps(fig):
    """Every pair of texts of `fig` whose rendered boxes overlap, as readable strings."""
    renderer = fig.canvas.get_renderer()
    texts = figure_texts(fig)
    polys = [text_corners(t, renderer) for t in texts]
    found = []
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            if _polys_overlap(polys[i], polys[j]):
                found.append(f"{texts[i].get_text()!r} overlaps {texts[j].get_text()!r}")
    return found


def test_two_texts_on_top_of_each_other_are_found():
    fig, ax = plt.subplots()
    ax.set_xlim(0, 1)
    ax.text(0.5, 0.5, "5-min cache", ha="center")
    ax.text(0.52, 0.5, "1-h cache", ha="center")
    ax.text(0.1, 0.9, "alone")
    ax.text(0.05, 0.05, "turned along a slope", rotation=40)
    ax.text(0.2, 0.07, "beside the slope")  # inside the turned label's square, off it
    fig.canvas.draw()
    found = text_overlaps(fig)
    plt.close(fig)
    assert found == ["'5-min cache' overlaps '1-h cache'"]


def texts_outside(fig, tol=1.0):
    """Texts that stick out of the figure's canvas (cut off in a frame or a PNG saved without a
    tight box: a centred title over an axes pushed right, "3 months" at the right edge)."""
    renderer = fig.canvas.get_renderer()
    w, h = fig.bbox.width, fig.bbox.height
    found = []
    for t in figure_texts(fig):
        b = t.get_window_extent(renderer)
        if b.x0 < -tol or b.y0 < -tol or b.x1 > w + tol or b.y1 > h + tol:
            found.append(f"{t.get_text()!r} at x {b.x0:.0f}..{b.x1:.0f}, y {b.y0:.0f}..{b.y1:.0f} "
                         f"in a {w:.0f} x {h:.0f} figure")
    return found


def test_a_text_past_the_edge_is_found():
    fig, ax = plt.subplots(figsize=(4, 3), layout="none")  # no layout to make room
    ax.set_title("a title far wider than this small figure can hold")
    ax.text(1.02, 0.5, "3 months", transform=ax.transAxes)
    ax.text(0.5, 0.5, "inside")
    fig.canvas.draw()
    found = [f.split(" at ")[0] for f in texts_outside(fig)]
    plt.close(fig)
    assert found == ["'a title far wider than this small figure can hold'", "'3 months'"]


def _outside_math(s):
    """A text without its $...$ mathtext parts."""
    return re.sub(r"(?<!\\)\$.*?(?<!\\)\$", "", s)


#: ASCII stand-ins for typography (figure text uses ×, ≥, ≤ and an en dash for ranges).
ASCII_STANDINS = [
    (re.compile(r"(?<=\s)x(?=\s)"), "x for ×"),
    (re.compile(r"\b\d+(\.\d+)?x\b"), "x for ×"),
    (re.compile(r">=|<=|!="), ">= or <= for ≥ or ≤"),
    (re.compile(r"(?<![\w.\-])\d+(\.\d+)?-\d"), "hyphen for an en dash in a range"),
    # a product of numbers (a 4x4x4 torus); a model's name (Mixtral-8x7B) follows a hyphen
    (re.compile(r"(?<![\w.\-])\d+x\d"), "x for ×"),
    (re.compile(r"\d[eE][+-]?\d"), "e-notation for a power of ten"),
    # B is batch and billion in the book (notation page): bytes are spelled out
    (re.compile(r"\d ?B(/| per\b)|FLOP/B\b"), "B for bytes"),
]


def _surnames():
    """The authors' family names of references.bib, lowercased ("hoffmann", "besiroglu")."""
    text = (ROOT / "references.bib").read_text(encoding="utf-8")
    out = set()
    for field in re.findall(r"\bauthor\s*=\s*\{(.*)\},?\s*$", text, flags=re.M):
        for person in field.split(" and "):
            family = person.split(",")[0].strip(" {}") if "," in person else person.split()[-1]
            if len(family) > 2 and family.strip("{}").isalpha():
                out.add(family.strip("{}").lower())
    return out


SURNAMES = _surnames()
#: A fit named after its authors in lowercase, as a code key reads ("hoffmann fit").
AUTHOR_FIT = re.compile(r"\b([a-z][a-z\-]+) fit\b")


def spelling_problems(fig):
    """Code names (an underscore outside mathtext, a fit named by its lowercase code key) and
    ASCII stand-ins in a figure's text."""
    found = []
    for t in figure_texts(fig):
        s = _outside_math(t.get_text())
        if "_" in s:
            found.append(f"{t.get_text()!r}: an underscore outside $...$ (a code name)")
        for m in AUTHOR_FIT.finditer(s):
            if m.group(1) in SURNAMES:
                found.append(f"{t.get_text()!r}: a fit named by its code key, not its authors")
        for pat, what in ASCII_STANDINS:
            if pat.search(s):
                found.append(f"{t.get_text()!r}: {what}")
    return found


def test_code_names_and_ascii_standins_are_found():
    fig, ax = plt.subplots()
    for i, s in enumerate(["N_tot (count)", "$N_\\mathrm{tot}$ (count)", "8,192 x 8,192", "216x",
                           ">= 82 chips", "3-5x", "Llama-3.1-405B", "Mixtral-8x7B", "8×", "3–5×",
                           "DDR5-5200", "hoffmann fit", "Hoffmann et al.", "does not fit",
                           "64 × TPU v4 (4x4x4)", "(1.6e+26 FLOP)", "$1.6 \\times 10^{26}$ FLOP",
                           "16 B/param", "16 bytes/param", "B = 64"]):
        ax.text(0.1, i / 21, s)
    fig.canvas.draw()
    found = spelling_problems(fig)
    plt.close(fig)
    assert "hoffmann" in SURNAMES and "besiroglu" in SURNAMES
    assert found == ["'N_tot (count)': an underscore outside $...$ (a code name)",
                     "'8,192 x 8,192': x for ×", "'216x': x for ×",
                     "'>= 82 chips': >= or <= for ≥ or ≤", "'3-5x': x for ×",
                     "'3-5x': hyphen for an en dash in a range",
                     "'hoffmann fit': a fit named by its code key, not its authors",
                     "'64 × TPU v4 (4x4x4)': x for ×",
                     "'(1.6e+26 FLOP)': e-notation for a power of ten",
                     "'16 B/param': B for bytes"]


_PREFIX = {"k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_NUMBER = re.compile(r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?([kMGTPE])?(?![\w])")
_TIME = re.compile(r"^(\d+(?:\.\d+)?) (ms|s|min|h|days?|weeks?)$")
_MONEY = re.compile(r"^\$(\d[\d,]*)(?:\.(\d+))?$")


def _label_text(t):
    return t.get_text().replace("\u2212", "-").strip()


def tick_problems(fig):
    """Tick labels outside the book's formatter family: e-notation, a prefixed value of 1000 or
    more, a plain number of 10,000 or more (SI prefix), a power of two rounded as a decimal
    (4.1k for 4,096), a time that is not a round human unit (1.7 min), money whose decimals do
    not match (``$0.1`` beside ``$1.00``). Powers of two rounded as decimals are also looked for
    in every other text (``S=8.19k``)."""
    from llmmath.plots.labels import _TIME_TICKS
    round_times = {label for _, label in _TIME_TICKS}
    found = []
    for t in figure_texts(fig):
        s = _outside_math(t.get_text())
        for m in _NUMBER.finditer(s):
            v = float(m.group(1).replace(",", "")) * _PREFIX.get(m.group(2) or "", 1.0)
            if v >= 1024 and "." in m.group(1) or (m.group(2) and len(m.group(1)) >= 2):
                p2 = 2.0 ** round(np.log2(v)) if v > 0 else 0
                if p2 >= 1024 and v != p2 and abs(v / p2 - 1) < 0.01:
                    found.append(f"{t.get_text()!r}: {m.group(0)} is a power of two "
                                 "rounded as a decimal")
    axes = list(fig.axes) + [c for ax in fig.axes for c in ax.child_axes]
    for ax in axes:
        for axis in (ax.xaxis, ax.yaxis):
            labels = [_label_text(t) for t in _drawn_tick_labels(ax)
                      if (t in axis.get_ticklabels(which="both")) and _label_text(t)]
            money = []
            for s in labels:
                if re.search(r"\d[eE][+-]?\d", s):
                    found.append(f"tick {s!r}: e-notation")
                m = re.fullmatch(r"-?\$?(\d[\d,]*(?:\.\d+)?)\s?([kMGTPE])", s)
                if m and float(m.group(1).replace(",", "")) >= 1000:
                    found.append(f"tick {s!r}: a prefixed value of 1000 or more")
                m = re.fullmatch(r"-?(\d[\d,]*)", s)
                if m and int(m.group(1).replace(",", "")) >= 10_000:
                    found.append(f"tick {s!r}: a plain number of 10,000 or more")
                m = _TIME.fullmatch(s)
                if m and "." in m.group(1) and s not in round_times:
                    found.append(f"tick {s!r}: not a round human time")
                m = _MONEY.fullmatch(s)
                if m:
                    money.append((float(m.group(1).replace(",", "")), len(m.group(2) or "")))
            if any(v >= 1 and d for v, d in money) and len({d for _, d in money}) > 1:
                found.append(f"money ticks {labels}: decimals do not match")
    return found


def test_tick_problems_are_found():
    fig, ax = plt.subplots()
    ax.set_xlim(0, 6)
    ax.set_xticks(range(6), ["1e26", "1000T", "100,000", "1.7 min", "4.1k", "10 min"])
    ax.set_yticks([0, 0.5, 1], ["$0.1", "$0.5", "$1.00"])
    ax.set_title("S=8.19k, 4k, 64k, 1M")
    fig.canvas.draw()
    found = sorted(set(tick_problems(fig)))
    plt.close(fig)
    assert found == sorted([
        "'S=8.19k, 4k, 64k, 1M': 8.19k is a power of two rounded as a decimal",
        "'4.1k': 4.1k is a power of two rounded as a decimal",
        "tick '1e26': e-notation", "tick '1000T': a prefixed value of 1000 or more",
        "tick '100,000': a plain number of 10,000 or more",
        "tick '1.7 min': not a round human time",
        "money ticks ['$0.1', '$0.5', '$1.00']: decimals do not match"])


def contrast_on_white(colour):
    """WCAG contrast ratio of a colour against white."""
    from matplotlib.colors import to_rgb

    lin = [v / 12.92 if v <= 0.03928 else ((v + 0.055) / 1.055) ** 2.4 for v in to_rgb(colour)]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return 1.05 / (lum + 0.05)


def low_contrast(fig, minimum=3.0):
    """Lines and bars drawn in a colour under `minimum`:1 against white. Fill bands (spans,
    fill_between), patches without a label and bars with a dark enough edge are exempt, and so
    are the palette colours style.LOW_CONTRAST_OK names."""
    from matplotlib.patches import Rectangle

    from llmmath.plots import style
    ok = {c.lower() for c in style.LOW_CONTRAST_OK}
    found = []
    for ax in fig.axes:
        for ln in ax.lines:
            c = to_hex(ln.get_color())
            if (ln.get_visible() and ln.get_linestyle() not in ("None", "", " ", "none")
                    and c.lower() not in ok and contrast_on_white(c) < minimum):
                found.append(f"line {ln.get_label()!r} {c}: {contrast_on_white(c):.1f}:1")
        for cont in ax.containers:
            for patch in getattr(cont, "patches", []):
                if not isinstance(patch, Rectangle) or not patch.get_visible():
                    continue
                c, e = to_hex(patch.get_facecolor()), patch.get_edgecolor()
                edged = patch.get_linewidth() > 0 and e[3] > 0 and contrast_on_white(e) >= minimum
                if c.lower() not in ok and not edged and contrast_on_white(c) < minimum:
                    found.append(f"bar {cont.get_label()!r} {c}: {contrast_on_white(c):.1f}:1")
                    break
    return found


#: Every check a figure must pass, by what it asks: each returns the problems it finds, as
#: short strings, and has its planted test above.
CHECKS = {
    "no legend or label covers data": overlaps,
    "no two texts overlap": text_overlaps,
    "no code names or ASCII stand-ins": spelling_problems,
    "one tick formatter family": tick_problems,
    "lines and bars contrast with white": low_contrast,
    "every text inside the figure": texts_outside,
}


@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("key", KEYS)
def test_every_figure_passes_every_check(figures, key, check):
    found = sorted(set(CHECKS[check](figures[key])))
    assert not found, f"{key} ({check}):\n  " + "\n  ".join(found)


def test_a_yellow_line_is_found():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1], color="#F0E442", label="overhead")
    ax.plot([0, 1], [1, 0], color="#0072B2", label="compute")
    ax.bar([0.5], [0.5], color="#F0E442", edgecolor="black", label="edged")
    ax.bar([0.2], [0.5], color="#d9d9d9", label="pale")
    ax.axvspan(0.1, 0.2, color="#d9d9d9")
    fig.canvas.draw()
    found = low_contrast(fig)
    plt.close(fig)
    assert found == ["line 'overhead' #f0e442: 1.3:1", "bar 'pale' #d9d9d9: 1.4:1"]


def duplicates(figs):
    """Groups of labels whose figures draw the very same pixels ({hash: [labels]} of size > 1)."""
    import hashlib

    seen: dict = {}
    for label, fig in figs.items():
        rgba = plots.render_rgba(fig)
        digest = hashlib.sha256(rgba.tobytes() + str(rgba.shape).encode()).hexdigest()[:12]
        seen.setdefault(digest, []).append(label)
    return {h: labels for h, labels in seen.items() if len(labels) > 1}


@pytest.mark.xdist_group("figure-all")
def test_no_two_book_figures_are_identical(figures):
    """A figure the book shows twice is a cross-reference, not a second figure (issue 36 N-M4:
    Fig 4.4 was Fig 1.5 and Fig 5.4 is Fig 2.4)."""
    dup = duplicates({label: figures[label] for label in BOOK})
    assert not dup, "identical figures: " + "; ".join(" = ".join(v) for v in dup.values())


def test_identical_figures_are_found():
    figs = {}
    for name in ("a", "b", "c"):
        fig = plt.figure(figsize=(2, 2))
        fig.gca().plot([0, 1], [0, 1 if name != "c" else 2])
        figs[name] = fig
    found = list(duplicates(figs).values())
    plt.close("all")
    assert found == [["a", "b"]]

"""Figure quality over every builder of :mod:`llmmath.plots` (issue 18).

Builders are discovered from ``llmmath.plots.__all__`` (every public function of a figure-family
module that returns a figure), so a builder added later is checked without editing this file:
its required arguments get values from ``SAMPLE`` by name (a missing name fails loudly), and the
calls the book makes are in ``BOOK``. For each figure:

- no legend and no text (label, note, annotation) overlaps a plotted line or marker: the legend's
  and each text's window extent against every line's path (segments clipped to the axes) and
  every marker, all in display pixels, as matplotlib draws them;
- every text is at least ``MIN_PHONE_PX`` pixels tall when the image is shown at the phone
  column's width (``PHONE_COLUMN_PX``), which is how a 390 px screen shows it;
- every log axis labels at least two ticks;
- across all figures, each role (compute, weight reads, KV reads, the bound ...) and each chip and
  model is drawn in one colour, the one :mod:`llmmath.plots.style` gives it.
"""

from __future__ import annotations

import inspect
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from llmmath import chips, cost, lifetime, models, plots  # noqa: E402
from llmmath.plots.labels import noted  # noqa: E402
from llmmath.roofline import arithmetic_intensity, prefill_step  # noqa: E402
from llmmath.units import GB, TFLOPS  # noqa: E402

#: Width in CSS px of the text column on a 390 px screen (390 less the theme's 16 px margins).
PHONE_COLUMN_PX = 358
#: Smallest text height (font size in px) a reader should meet at that width: "about 9 px".
MIN_PHONE_PX = 8.9
#: Width in CSS px at which a figure's PNG is shown on a desktop (its size at 100 dpi).
CSS_DPI = 100

NOT_BUILDERS = {"house_style", "setup_notebook", "offscreen", "label_si", "render_rgba",
                "series_colour", "chip_colour", "model_colour", "param_parts"}

H100, H200, B200, GB200 = (chips.get(n) for n in ("H100-SXM", "H200", "B200", "GB200"))
LLAMA70, DSV3 = models.get("Llama-3-70B"), models.get("DeepSeek-V3")
LLAMA31 = LLAMA70.replace(name="Llama-3.1-70B", max_context=131072)

#: A value for each required argument name, used for builders the book does not call.
SAMPLE = {"model": LLAMA70, "chip": H100, "model_list": [LLAMA70, DSV3], "tokens": 1e12,
          "measured": {"flops": 740 * TFLOPS, "bandwidth": 3000 * GB},
          "kv_bytes_per_token": LLAMA70.kv_bytes_per_token(2),
          # chapter 12 (lifetime): a loss a 100B model reaches, the episode's tokens served, its
          # budget
          "loss": 1.9, "inference_tokens": 259.2e12, "compute": 1.5552e26, "sequence_length": 8192,
          # chapter 10 (estimate): a calibration row by index (NIM's Llama 3.3 70B decode row)
          "row": 37}


def _book():
    """The figures the chapters draw (their plotting lines)."""
    ops = [(f"B = {b}", round(arithmetic_intensity(b, 8192, 28672), 1)) for b in (1, 64, 1024)]
    share = [models.get(n) for n in ("Llama-3-8B", "Llama-3.1-405B", "Qwen3-235B-A22B",
                                     "DeepSeek-V3", "gpt-oss-120b")]
    kv_models = [models.get(n) for n in ("LLaMA-2-13B", "Llama-3-70B", "Llama-3.1-405B",
                                         "Qwen3-235B-A22B", "DeepSeek-V3", "gpt-oss-120b")]
    remat = cost.cost_per_million_tokens(prefill_step(LLAMA70, H100, 1, 8192, n_chips=8))
    p = plots
    return {
        "1 matmul_on_roofline": lambda: p.matmul_on_roofline(H100, batch=64, k=8192, n=8192),
        "1 roofline": lambda: p.roofline(chip_list=[chips.get(n) for n in (
            "A100-SXM-80GB", "H100-SXM", "B200", "TPU v5e", "TPU v6e")], dtype="bf16"),
        "1 flops_vs_bandwidth": lambda: p.flops_vs_bandwidth(dtype="bf16"),
        "1 matmul_throughput_vs_batch": lambda: p.matmul_throughput_vs_batch(
            B200, dtypes=("bf16", "fp8", "fp4"), k=8192, n=8192),
        "1 capacity_vs_bandwidth": lambda: p.capacity_vs_bandwidth(),
        "1 roofline_measured": lambda: p.roofline_measured(
            H100, measured={"flops": 740 * TFLOPS, "bandwidth": 3000 * GB}),
        "2 param_breakdown": lambda: p.param_breakdown([models.get(n) for n in (
            "GPT-3-175B", "LLaMA-2-7B", "Llama-3-8B", "Llama-3-70B", "PaLM-540B", "Mixtral-8x7B",
            "Qwen3-235B-A22B", "DeepSeek-V3", "gpt-oss-120b")]),
        "2 attention_crossover": lambda: p.attention_crossover(),
        "2 attention_flops_share": lambda: p.attention_flops_share(share, context=32768),
        "2 kv_per_token": lambda: p.kv_per_token(models.all_models(), kv_bytes=2),
        "2 kv_vs_context": lambda: p.kv_vs_context(kv_models, H200, batch=1),
        "3 roofline": lambda: p.roofline([H100], ops=ops),
        "3 decode_time_vs_batch": lambda: p.decode_time_vs_batch(LLAMA70, H100, context=1024,
                                                                 n_chips=8),
        "3 decode_time_vs_batch DSV3": lambda: p.decode_time_vs_batch(
            DSV3, H200, context=1024, n_chips=8, weight_bytes=1, dtype="fp8"),
        "3 decode_time_vs_context": lambda: p.decode_time_vs_context(LLAMA70, H100, batch=64,
                                                                     n_chips=8),
        "3 regime_map": lambda: p.regime_map(LLAMA70, H100, n_chips=8),
        "4 cost_vs_batch": lambda: p.cost_vs_batch(LLAMA70, H100, context=1024, n_chips=8,
                                                   mark_batch=64),
        "4 decode_time_vs_batch GB200": lambda: p.decode_time_vs_batch(
            DSV3, GB200, batches=[2**i for i in range(16)], context=128, n_chips=72,
            weight_bytes=0.5, kv_bytes=1, dtype="fp4"),
        "4 latency_cost_frontier": lambda: p.latency_cost_frontier(
            LLAMA70, H100, context=1024, n_chips=8, mark_batch=1024),
        "4 speculative_gain_vs_batch": lambda: p.speculative_gain_vs_batch(
            LLAMA70, H100, draft_tokens=(1, 3, 7), acceptance=0.8, context=1024, n_chips=8,
            batches=[2**i for i in range(12)]),
        "5 kv_vs_context": lambda: p.kv_vs_context([LLAMA31], H100, batch=64, n_chips=8,
                                                   mark_context=8192),
        "5 decode_time_vs_context": lambda: p.decode_time_vs_context(
            LLAMA31, H100, batch=64, n_chips=8, mark_context=32768),
        "5 kv_balance_vs_context": lambda: p.kv_balance_vs_context(
            ["Llama-3.1-405B", "DeepSeek-V3", "gpt-oss-120b", "DeepSeek-V3.2"], H100),
        "6 prefill_time_vs_prompt": lambda: p.prefill_time_vs_prompt(LLAMA70, H100, n_chips=8,
                                                                     mark_prompt=4096),
        "6 prefill_vs_decode_per_token": lambda: p.prefill_vs_decode_per_token(
            LLAMA70, H100, n_chips=8, decode_batch=64, mark_prompt=4096),
        "6 io_cost_ratio_vs_batch": lambda: p.io_cost_ratio_vs_batch(
            LLAMA70, H100, prompt=2048, context=4096, n_chips=8),
        "6 price_step_vs_context": lambda: p.price_step_vs_context(
            active_params=100e9, kv_bytes_per_token=1667, ops_per_byte=600, price_step=200_000,
            price_ratio=18 / 12),
        "6 tier_drain_times": lambda: p.tier_drain_times(),
        "6 cache_cost_vs_lifetime": lambda: p.cache_cost_vs_lifetime(
            LLAMA70.kv_bytes_per_token(2), remat_cost_per_million=remat),
        "11 overtraining_map": lambda: p.overtraining_map(),
        "11 loss_gap_vs_overtraining": lambda: p.loss_gap_vs_overtraining(1.5552e26),
        "11 overtraining_vs_decode_efficiency": lambda: p.overtraining_vs_decode_efficiency(100e9),
        "11 lifetime_cost_vs_params": lambda: p.lifetime_cost_vs_params(
            lifetime.scaling_loss(100e9, 259.2e12), 259.2e12, decode_efficiency=1 / 3),
        "11 lifetime_cost_vs_params marked": lambda: p.lifetime_cost_vs_params(
            lifetime.scaling_loss(37.6e9, 259.2e12), 259.2e12, decode_efficiency=0.2,
            mark_params=37.6e9),
        "11 overtraining_map marked": lambda: p.overtraining_map(mark_params=100e9,
                                                                 mark_tokens=259.2e12),
        "12 store_vs_recompute": lambda: p.store_vs_recompute(LLAMA70, H100, batch=1, n_chips=8,
                                                              mark_context=4096),
        "12 recompute_intensity_vs_ridge": lambda: p.recompute_intensity_vs_ridge(
            models.all_models()),
        "12 checkpoint_memory_vs_depth": lambda: p.checkpoint_memory_vs_depth(
            models.get("Llama-3.1-405B"), 8192, 8192, chip=H100),
        "12 hold_time_by_tier": lambda: p.hold_time_by_tier(LLAMA70, H100, n_chips=8),
        "10 estimate_waterfall dense": lambda: p.estimate_waterfall(37),
        "10 estimate_waterfall moe": lambda: p.estimate_waterfall(48),
        "10 calibration_scatter": lambda: p.calibration_scatter(),
        "10 estimate_vs_batch": lambda: p.estimate_vs_batch(LLAMA70, H100, context=4096,
                                                            n_chips=8, mark_batch=64),
        "10 estimate_vs_batch moe": lambda: p.estimate_vs_batch(
            DSV3, H200, context=4096, n_chips=8, weight_bytes=1, kv_bytes=1, dtype="fp8",
            expert_parallel=8, mark_batch=32),
    }


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
    book = _book()
    out = dict(book)
    for name, fn in builders().items():
        out[f"default {name}"] = _sample_call(name, fn)
    return out


CASES = cases()


def test_every_builder_is_discovered_and_the_book_calls_exist():
    found = builders()
    assert len(found) >= 25, sorted(found)
    for key in _book():
        assert key.split()[1] in found, key


class _Drawn(dict):
    """Each case's figure, drawn on first use: a pytest-xdist worker draws only the cases it runs
    (KEYS sends a case's tests to one worker; drawing every case on every worker was the unit
    stage's largest cost)."""

    def __missing__(self, key):
        with plots.offscreen():
            fig = CASES[key]()
            fig.canvas.draw()
        self[key] = fig
        return fig


@pytest.fixture(scope="module")
def figures():
    yield _Drawn()
    plt.close("all")


# one xdist group per case (make unit runs --dist loadgroup)
KEYS = [pytest.param(k, id=k, marks=pytest.mark.xdist_group(f"figure-{k}")) for k in CASES]


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
                boxes.append((repr(t.get_text()), _shrink(t.get_window_extent(renderer))))
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
def test_no_legend_or_label_covers_data(figures, key):
    found = overlaps(figures[key])
    assert not found, f"{key}:\n  " + "\n  ".join(found)


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
    ("bound", re.compile(r"^step bound$")),
]
CHIP_NAMES = set(chips.names())
MODEL_NAMES = set(models.names()) | {"Llama-3.1-70B"}


def role_of(label: str):
    """The role, chip or model a legend label stands for, or None."""
    head = re.sub(r"\s*\(.*\)$", "", label).strip()
    head = re.sub(r":.*$", "", head)
    head = re.sub(r"^\d+x ", "", head)
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
            if r and not ln.get_label().startswith("_"):
                out.append((r, to_hex(ln.get_color())))
        for c in ax.collections:
            r = role_of(c.get_label())
            if r and len(c.get_facecolor()):
                out.append((r, to_hex(c.get_facecolor()[0])))
        for cont in ax.containers:
            r = role_of(cont.get_label() or "")
            if r and len(cont.patches):
                out.append((r, to_hex(cont.patches[0].get_facecolor())))
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
    want = {"role compute": style.ROLE["compute"], "role weights": style.ROLE["weights"],
            "role kv": style.ROLE["kv"]}
    for key in CASES:
        fig = figures[key]
        for role, colour in colours(fig):
            if role in want:
                assert colour.lower() == want[role].lower(), f"{key}: {role} drawn {colour}"
            if role.startswith("chip ") and hasattr(style, "chip_colour"):
                assert colour.lower() == style.chip_colour(role[5:]).lower(), f"{key}: {role}"
            if role.startswith("model ") and hasattr(style, "model_colour"):
                assert colour.lower() == style.model_colour(role[6:]).lower(), f"{key}: {role}"


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

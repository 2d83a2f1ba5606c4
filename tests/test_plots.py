"""Figure builders: every builder works for every catalogue chip and model, with labelled axes
(units), annotations where the text points, no NaN/inf plotted, and alt text with the key
numbers."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from llmmath import chips, models, plots  # noqa: E402
from llmmath.roofline import critical_batch, max_batch  # noqa: E402

CHIPS = chips.names()
MODELS = models.names()
UNIT = re.compile(r"\((s|B|bytes|USD|FLOP/byte|FLOP/s|sequences|tokens|tokens/s|days|%|count|"
                  r"tokens per step|tokens per sequence|"
                  r"tokens in the KV cache|tokens per sequence)\)")
H100 = chips.get("H100-SXM")
LLAMA = models.get("Llama-3-70B")


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _build(name, model, chip):
    with plots.offscreen():
        return {
            "decode_time_vs_batch": lambda: plots.decode_time_vs_batch(
                model, chip, batches=[1, 8, 64, 512, 4096], mark_batch=64),
            "decode_time_vs_context": lambda: plots.decode_time_vs_context(
                model, chip, contexts=[128, 1024, 2048, 8192, 131072], mark_context=1024),
            "cost_vs_batch": lambda: plots.cost_vs_batch(model, chip, batches=[1, 8, 64, 512, 4096],
                                                         mark_batch=8),
            "latency_cost_frontier": lambda: plots.latency_cost_frontier(model, chip,
                                                                         mark_batch=16),
            "prefill_time_vs_prompt": lambda: plots.prefill_time_vs_prompt(
                model, chip, prompts=[16, 256, 2048], mark_prompt=256),
            "kv_vs_context": lambda: plots.kv_vs_context([model], chip, batch=4,
                                                         contexts=[128, 1024, 8192, 131072],
                                                         mark_context=1024),
            "training_time_vs_chips": lambda: plots.training_time_vs_chips(
                model, 1e12, chip, chip_counts=[8, 512, 65536], mark_chips=512),
            "regime_map": lambda: plots.regime_map(model, chip, batches=np.geomspace(1, 4096, 8),
                                                   contexts=np.geomspace(128, 2048, 6)),
        }[name]()


BUILDERS = ["decode_time_vs_batch", "decode_time_vs_context", "cost_vs_batch",
            "latency_cost_frontier", "prefill_time_vs_prompt", "kv_vs_context",
            "training_time_vs_chips", "regime_map"]


def _check(fig, name):
    ax = fig.axes[0]
    for label in (ax.get_xlabel(), ax.get_ylabel()):
        assert UNIT.search(label), f"{name}: axis label without a unit: {label!r}"
    plotted = 0
    for line in ax.get_lines():
        x, y = (np.asarray(a, dtype=float) for a in line.get_data())
        assert np.all(np.isfinite(x)) and np.all(np.isfinite(y)), (
            f"{name}: non-finite data in {line}")
        plotted += x.size
    assert plotted or ax.collections, f"{name}: nothing plotted"
    assert isinstance(fig.alt_text, str) and len(fig.alt_text) > 40, f"{name}: no alt text"
    assert "nan" not in fig.alt_text.lower().split(), fig.alt_text
    w, h = fig.get_size_inches()
    assert 6 <= w <= 7 and 3.5 <= h <= 7  # taller when the legend sits below the plot
    assert fig.get_facecolor()[:3] == (1.0, 1.0, 1.0), "figures need an opaque white background"


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("name", BUILDERS)
def test_every_builder_on_every_chip(name, chip):
    fig = _build(name, LLAMA, chips.get(chip))
    _check(fig, name)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("name", BUILDERS)
def test_every_builder_on_every_model(name, model):
    fig = _build(name, models.get(model), H100)
    _check(fig, name)
    if name != "regime_map":
        assert (models.get(model).name in fig.axes[0].get_title()
                or models.get(model).name in fig.alt_text)


def _texts(fig):
    """Every text of the figure's axes, its legend's entries included (inside or outside)."""
    ax = fig.axes[0]
    legends = [lg for lg in [ax.get_legend(), *fig.legends] if lg is not None and lg.get_visible()]
    return ([t.get_text() for t in ax.texts] + [c.get_text() for c in ax.get_children()
                                                if hasattr(c, "get_text") and c not in ax.texts]
            + [t.get_text() for lg in legends for t in lg.get_texts()])


def test_decode_vs_batch_marks_the_knee_and_the_floor():
    m = models.get("Llama-3-8B")
    with plots.offscreen():
        fig = plots.decode_time_vs_batch(m, H100, context=0.0)
    b = critical_batch(m, H100, context=0)
    texts = " ".join(_texts(fig))
    assert f"B* = {b:,.0f}" in texts
    assert "weight-read floor" in texts
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert {"compute", "weight reads", "KV-cache reads", "step bound"} <= set(labels)
    assert f"{b:,.0f}" in fig.alt_text
    assert fig.axes[0].get_xscale() == "log" and fig.axes[0].get_yscale() == "log"


def test_cost_curve_stops_at_the_memory_limit():
    with plots.offscreen():
        fig = plots.cost_vs_batch(LLAMA, H100, n_chips=8, context=4096)
    mb = max_batch(LLAMA, H100, 4096, n_chips=8)
    cost = [ln for ln in fig.axes[0].get_lines() if ln.get_label() == "cost (lower bound)"][0]
    assert cost.get_xdata().max() <= mb
    texts = " ".join(_texts(fig))
    # one memory limit, named once: the point where the curve stops (issue 18: not 1,424 and 1,486)
    assert f"memory limit B = {mb:,}" in texts and "floor $" in texts
    assert "HBM full" in texts
    assert fig.numbers["max_batch"] == mb


def test_cost_without_a_price_says_assumed():
    with plots.offscreen():
        fig = plots.cost_vs_batch(LLAMA, chips.get("GB200"), n_chips=4)
    assert "assumed" in fig.axes[0].get_title()


def test_crossover_context_is_annotated():
    with plots.offscreen():
        fig = plots.decode_time_vs_context(LLAMA, H100, batch=64, n_chips=8)
    assert fig.numbers["crossover_context"] is not None
    assert "KV = weights" in " ".join(_texts(fig))


def test_update_in_place_keeps_one_figure_and_lines():
    with plots.offscreen():
        fig = plots.decode_time_vs_batch(LLAMA, H100, n_chips=8, mark_batch=8)
    lines = list(fig.axes[0].get_lines())[:4]
    y0 = lines[3].get_ydata().copy()
    same = fig.update(context=65536.0 if False else 8192, mark_batch=64)
    assert same is fig and list(fig.axes[0].get_lines())[:4] == lines
    assert not np.allclose(lines[3].get_ydata(), y0)
    with pytest.raises(TypeError):
        fig.update(no_such_argument=1)


def test_mark_only_update_reuses_the_background():
    with plots.offscreen():
        fig = plots.cost_vs_batch(LLAMA, H100, n_chips=8, mark_batch=8)
    fig.set_dpi(50)
    a = plots.render_rgba(fig).copy()
    bg = fig.drawing._bg
    b = plots.render_rgba(fig.update(mark_batch=256)).copy()
    assert fig.drawing._bg is bg, "a mark-only change must not redraw the background"
    assert (a != b).any()
    fig.update(context=1024)
    plots.render_rgba(fig)
    assert fig.drawing._bg is not bg


def test_roofline_and_bars():
    with plots.offscreen():
        fig = plots.roofline(ops=[("matvec", 1.0), ("decode B=64", 64.0)])
        _check(fig, "roofline")
        assert "matvec" in fig.alt_text
        fig = plots.param_breakdown()
        assert fig.axes[0].get_xlabel().endswith("(%)")
        fig = plots.kv_per_token()
        assert "(bytes)" in fig.axes[0].get_xlabel()
        fig = plots.kv_vs_context([LLAMA, models.get("DeepSeek-V3"), models.get("GPT-3-175B")],
                                  H100, n_chips=8)
        _check(fig, "kv_vs_context")


@pytest.mark.parametrize("model", MODELS)
def test_param_parts_sum_to_total(model):
    m = models.get(model)
    assert sum(plots.param_parts(m).values()) == m.total_params


def test_unknown_dtype_falls_back_and_says_so():
    with plots.offscreen():
        fig = plots.decode_time_vs_batch(LLAMA, chips.get("Rubin"), n_chips=4)
    assert "fp4" in fig.axes[0].get_title()


def test_decode_alt_text_states_the_figures_numbers():
    """The alt text's floor, B* and end point are the drawn floor line, knee line and bound."""
    from llmmath.roofline import batch_sweep
    from llmmath.units import fmt_time

    with plots.offscreen():
        fig = plots.decode_time_vs_batch(LLAMA, H100, context=1024, n_chips=8)
    ax = fig.axes[0]
    drawn_floor = [ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_linestyle() == "--"][0]
    knee = [ln.get_xdata()[0] for ln in ax.get_lines() if ln.get_linestyle() == ":"][0]
    bound = [ln for ln in ax.get_lines() if ln.get_label() == "step bound"][0]
    assert f"floor of {fmt_time(drawn_floor, 2)}" in fig.alt_text
    assert f"B* is about {knee:,.0f}" in fig.alt_text
    assert f"takes {fmt_time(bound.get_ydata()[-1], 2)}" in fig.alt_text
    assert fig.numbers["floor"] == drawn_floor and fig.numbers["critical_batch"] == knee
    # the floor is the weights' read time at batch 1: N_tot b_w / (n W), to within the LM head's
    # share (the embedding table is not read per token), here 70.55e9 x 2 / (8 x 3.35e12) = 5.26 ms
    assert 0.97 * 5.265e-3 < drawn_floor <= 5.265e-3
    sweep = batch_sweep(LLAMA, H100, [1, 64, 4096], 1024, n_chips=8)
    assert sweep.describe() in plots.decode_time_vs_batch(LLAMA, H100, batches=[1, 64, 4096],
                                                          context=1024, n_chips=8).alt_text


def test_builders_draw_into_a_given_axes():
    import matplotlib.pyplot as plt

    fig, (a, b) = plt.subplots(1, 2)
    assert plots.decode_time_vs_batch("Llama-3-70B", "H100-SXM", n_chips=8, ax=a) is a
    assert a.get_title().startswith("Llama-3-70B on 8× H100-SXM")
    out = plots.kv_vs_context([LLAMA], H100, ax=b)
    assert out is b and b.get_lines()

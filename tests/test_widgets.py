"""Live explorers: each constructs, shows its numbers beside the figure, updates for every
picker value, and a main-slider move redraws the one figure it keeps. Each is declared in its
chapter's figures module and discovered; its panel reads the figure's numbers only."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from llmmath import chips, models, plots, widgets  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"
NAMES = list(widgets.EXPLORERS)


@pytest.mark.parametrize("name", NAMES)
def test_explorer_builds_and_moves(name):
    factory, main, values = widgets.EXPLORERS[name]
    e = factory()
    assert bytes(e.image.value).startswith(PNG)
    assert "<table class='llm-numbers'>" in e.numbers.value
    fig = e.figure
    before = bytes(e.image.value)
    e.update(**{main: values[1]})
    assert e.figure is fig, "an update must reuse the figure"
    assert bytes(e.image.value) != before
    assert e.controls[main].value == values[1]
    assert repr(e).startswith(f"<{name}: ") and "0x" not in repr(e)
    with pytest.raises(TypeError):
        e.update(no_such_control=1)


def test_decode_numbers_match_the_library():
    from llmmath.roofline import decode_step
    from llmmath.units import fmt_time

    e = widgets.decode_explorer("Llama-3-70B", "H100-SXM", batch=64, context=4096, n_chips=8)
    s = decode_step(models.get("Llama-3-70B"), chips.get("H100-SXM"), 64, 4096, n_chips=8)
    assert fmt_time(s.time) in e.numbers.value
    assert s.bound in e.numbers.value
    assert "$/Mtok" in e.numbers.value and "tokens/s" in e.numbers.value


def test_batching_explorer_switches_view():
    e = widgets.batching_explorer()
    cost_fig = e.figure
    e.update(view="latency vs cost")
    assert e.figure is not cost_fig
    assert "decode speed per user" in e.figure.axes[0].get_xlabel()
    e.update(view="cost vs batch", batch=256)
    assert e.figure is cost_fig


@pytest.fixture
def no_render(monkeypatch):
    """Every model x chip combination recomputes; pixels are checked in the test above."""
    monkeypatch.setattr(widgets.explorer.plots, "render_rgba",
                        lambda fig: np.zeros((2, 2, 4), np.uint8))


@pytest.mark.parametrize("name", NAMES)
def test_every_picker_value(name, no_render):
    e = widgets.EXPLORERS[name][0]()
    for m in models.names() if "model" in e.controls else []:
        e.update(model=m)
        assert e.figure.alt_text
    for c in chips.names() if "chip" in e.controls else []:
        e.update(chip=c)
        assert "<table" in e.numbers.value
    for key, w in e.controls.items():
        if key in ("model", "chip"):
            continue
        for opt in list(getattr(w, "options", []) or [])[
                :: max(1, len(getattr(w, "options", [])) // 4)]:
            e.update(**{key: opt[1] if isinstance(opt, tuple) else opt})


def test_main_slider_keeps_the_layout():
    """Moving the main slider redraws without laying the figure out again (what makes an update
    fast; the 100 ms target itself is measured by make bench, never asserted in a test)."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    e = widgets.decode_explorer()
    assert isinstance(e.figure.get_layout_engine(), ConstrainedLayoutEngine)  # first draw
    for b in widgets.BATCHES[:4]:
        e.update(batch=b)
        assert not isinstance(e.figure.get_layout_engine(), ConstrainedLayoutEngine), b
        assert e.last_update_s > 0
    e.update(model="Llama-3-8B")  # another model: its ticks and title change, so lay out again
    assert isinstance(e.figure.get_layout_engine(), ConstrainedLayoutEngine)


def test_plots_offscreen_figures_are_not_in_pyplot():
    import matplotlib.pyplot as plt

    n = len(plt.get_fignums())
    widgets.kv_explorer()
    assert len(plt.get_fignums()) == n
    assert plots.STYLE["figure.facecolor"] == "white"


# ----- no traceback, whatever the controls (issue 21) -------------------------------------------

def _extremes(w):
    """The extreme values of a control: first and last option, or min and max."""
    if hasattr(w, "options") and len(w.options):
        opts = [o[1] if isinstance(o, tuple) else o for o in w.options]
        return [opts[0], opts[-1]]
    if hasattr(w, "min") and hasattr(w, "max"):
        return [w.min, w.max]
    return []


def _offered(w, v):
    if hasattr(w, "options") and len(w.options):
        return v in [o[1] if isinstance(o, tuple) else o for o in w.options]
    return True


@pytest.mark.parametrize("name", NAMES)
def test_controls_at_their_extremes_never_raise(name, no_render):
    """Every control alone at each extreme, then all controls at their low ends and at their high
    ends together, then each model and each chip: every combination either draws a readout table
    or says in the readout why it is not possible; no exception reaches the reader."""
    factory, _main, _values = widgets.EXPLORERS[name]
    e = factory()
    combos = []
    for k, w in e.controls.items():
        combos += [{k: v} for v in _extremes(w)]
    lows = {k: _extremes(w)[0] for k, w in e.controls.items() if _extremes(w)}
    highs = {k: _extremes(w)[-1] for k, w in e.controls.items() if _extremes(w)}
    combos += [lows, highs]
    for k in ("model", "chip"):
        if k in e.controls:
            combos += [{k: o, **{j: highs[j] for j in highs if j not in ("model", "chip")}}
                       for o in e.controls[k].options]
    for values in combos:
        # a reader picks only what a control offers now (a chip's formats follow the chip)
        values = {k: v for k, v in values.items() if _offered(e.controls[k], v)}
        e.update(**values)  # must not raise
        panel = e.numbers.value
        assert ("<table class='llm-numbers'>" in panel) != ("Not possible" in panel), (name, values)
        if getattr(e, "error", None):
            assert "Traceback" not in panel and len(e.error) > 10, (name, values, e.error)


def test_impossible_combinations_say_why():
    """A model that cannot fit, a chip without the format, a context past the window."""
    e = widgets.decode_explorer("Llama-3-70B", "H100-SXM", batch=64, context=4096, n_chips=8)
    e.update(model="DeepSeek-V3", chip="A100-SXM-80GB", n_chips=1)
    assert "needs 18 chips" in e.numbers.value or "Not possible" in e.numbers.value
    e.update(model="Llama-3-70B", chip="H100-SXM", n_chips=8)
    assert getattr(e, "error", None) is None and "<table class='llm-numbers'>" in e.numbers.value


def test_a_failing_compute_shows_its_reason(monkeypatch):
    e = widgets.decode_explorer()
    image = bytes(e.image.value)

    def boom(values):
        raise ValueError("context: got 999999 tokens; Llama-3-70B supports at most 8192")

    monkeypatch.setattr(e, "_compute", boom)
    e.update(batch=1)
    assert "Not possible with these settings" in e.numbers.value
    assert "supports at most 8192" in e.numbers.value
    assert bytes(e.image.value) == image, "the last possible figure stays"


def test_moe_explorer_offers_degrees_past_the_scale_up_domain():
    # The explorer shows the all-to-all jumping where the EP group leaves the domain, so its
    # dropdown must reach past GB200's 72-GPU NVLink domain (a later module-level list of the
    # same name once cut it to 1..72). The estimate explorer keeps its own, smaller degrees.
    domain = chips.get("GB200").scale_up_domain
    ep = widgets.moe_explorer().controls["expert_parallel"].options
    assert domain in ep and max(ep) >= 4 * domain and min(ep) >= 8
    est = [v for _label, v in widgets.estimate_explorer().controls["expert_parallel"].options]
    assert est[0] == 1 and max(est) == domain


# ----- one Explorer, declared beside its figure (issue 30) ---------------------------------------

def _plots_modules():
    import importlib
    import pkgutil

    return [importlib.import_module(f"llmmath.plots.{i.name}")
            for i in pkgutil.iter_modules(plots.__path__)]


def test_every_explorer_declared_in_a_figures_module_is_discovered():
    import inspect

    declared = {name: obj for mod in _plots_modules() for name, obj in vars(mod).items()
                if callable(obj) and hasattr(obj, "declare") and obj.__module__ == mod.__name__}
    assert len(declared) >= 12, sorted(declared)
    assert set(declared) == set(widgets.EXPLORERS)
    for name, factory in declared.items():
        assert getattr(widgets, name) is factory and name in widgets.__all__
        got, main, sweep = widgets.EXPLORERS[name]
        assert got is factory and main == factory.main and sweep == factory.sweep
        assert main in inspect.signature(factory).parameters, (name, main)


def test_a_new_declaration_registers_itself_and_runs(no_render):
    from llmmath.plots.explore import REGISTRY, dropdown, explorer, steps

    try:
        @explorer(main="batch", sweep=[1, 8, 64])
        def probe_explorer(model="Llama-3-8B", batch=8):
            """A throwaway explorer."""
            def figure(v):
                return plots.decode_time_vs_batch, dict(model=v["model"], chip="H100-SXM",
                                                        mark_batch=v["batch"])

            def readout(n):
                return [("step", f"{n['step_time']:.6g}")]

            return ({"model": dropdown("model", ["Llama-3-8B", "Llama-3-70B"], model),
                     "batch": steps("batch", [1, 8, 64], batch)}, figure, readout)

        assert REGISTRY["probe_explorer"] is probe_explorer
        assert probe_explorer.__doc__ == "A throwaway explorer."
        e = probe_explorer(batch=64)
        assert f"{e.figure.numbers['step_time']:.6g}" in e.numbers.value
        e.update(model="Llama-3-70B")
        assert f"{e.figure.numbers['step_time']:.6g}" in e.numbers.value
    finally:
        REGISTRY.pop("probe_explorer", None)


@pytest.mark.parametrize("name", NAMES)
def test_the_panel_is_read_from_the_figure_numbers(name, no_render):
    """The panel is its declaration's readout of ``fig.numbers`` and nothing else: the same
    numbers give the same panel, and a changed number changes it."""
    from llmmath.widgets.explorer import _table

    factory, main, values = widgets.EXPLORERS[name]
    e = factory()
    e.update(**{main: values[2]})
    _controls, _figure, readout = factory.declare()
    numbers = dict(e.figure.numbers)
    assert _table(readout(numbers)) == e.numbers.value
    changed = False
    for key, v in numbers.items():
        if isinstance(v, float) and v > 0 and not isinstance(v, bool):
            try:
                panel = _table(readout({**numbers, key: v * 7.3}))
            except (TypeError, ValueError):
                continue
            changed |= panel != e.numbers.value
    assert changed, f"{name}: no number of the figure reaches its panel"


def test_panels_agree_with_the_physics():
    """Independent checks of what the panels show, from the physics modules."""
    from llmmath import cost, training
    from llmmath.units import fmt_count, fmt_time, fmt_usd

    llama, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    e = widgets.training_explorer(n_chips=1024, mfu=0.4, tokens=15e12)
    t = training.training_time(llama, 15e12, h100, 1024, 0.4)
    assert fmt_time(t) in e.numbers.value
    hours = 1024 * t / 3600
    assert fmt_count(hours) in e.numbers.value
    assert fmt_usd(hours * h100.price_per_hour) in e.numbers.value

    e = widgets.batching_explorer(batch=256)
    from llmmath.roofline import decode_step
    s = decode_step(llama, h100, 256, 4096, n_chips=8)
    assert f"{1 / s.time:,.1f}" in e.numbers.value
    assert fmt_usd(cost.cost_per_million_tokens(s, h100.price_per_hour)) in e.numbers.value


def test_importing_the_figures_does_not_import_ipywidgets():
    import subprocess
    import sys

    code = ("import sys, llmmath.plots, llmmath.plots.explore as x; "
            "assert len(x.REGISTRY) >= 12, x.REGISTRY; "
            "assert 'ipywidgets' not in sys.modules, 'plots imported ipywidgets'")
    import os
    from pathlib import Path

    import llmmath

    here = str(Path(llmmath.__file__).resolve().parents[1])  # this checkout's library
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.environ.get("PYTHONPATH", "")])}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_widgets_hold_no_chapter_and_no_physics():
    """The widgets package is the machinery only: no per-chapter module, and it imports nothing
    from the physics modules (its numbers come from the figures)."""
    import ast
    import pkgutil
    from pathlib import Path

    assert {i.name for i in pkgutil.iter_modules(widgets.__path__)} == {"explorer"}
    for path in Path(widgets.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 2:  # from ..x import y
                names = [a.name for a in node.names]
                ok = (node.module or "").startswith("plots") or (not node.module
                                                                and names == ["plots"])
                assert ok, (path.name, node.module, names)
            elif isinstance(node, ast.ImportFrom) and node.level == 1:
                assert node.module == "explorer", (path.name, node.module)

"""Explorer declarations: each chapter's explorer, declared beside the builder it drives.

A chapter's figures-and-explorers module (``plots/<chapter>.py``) declares its explorer with
:func:`explorer`::

    @explorer(main="batch", sweep=BATCHES)
    def decode_explorer(model="Llama-3-70B", chip="H100-SXM", batch=64, ...):
        \"\"\"What the reader explores.\"\"\"
        controls = {"model": model_picker(model), "batch": steps("batch", BATCHES, batch), ...}

        def figure(v):            # control values -> (builder, its arguments)
            return decode_time_vs_batch, dict(model=v["model"], mark_batch=v["batch"], ...)

        return controls, figure, _decode_readout   # readout: fig.numbers -> rows

The readout reads the figure's ``numbers`` only, so a panel and its figure cannot disagree; what
it shows is computed by the builder. Controls here are plain descriptions (:class:`Control`):
nothing in this module imports ipywidgets. :mod:`llmmath.widgets` discovers every declaration
(:data:`REGISTRY`) and makes it live (``llmmath.widgets.explorer``).
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import chips as _chips
from .. import models as _models

#: Nothing here is a figure: declarations are reached through :mod:`llmmath.widgets`.
__all__: list[str] = []

#: Precision presets: label -> (bytes per weight, bytes per KV element, compute dtype).
PRECISIONS = {
    "bf16 weights, bf16 KV": (2, 2, "bf16"),
    "fp8 weights, fp8 KV": (1, 1, "fp8"),
    "fp8 weights, bf16 KV": (1, 2, "fp8"),
    "int4 weights, bf16 KV": (0.5, 2, "bf16"),
    "fp4 weights, fp8 KV": (0.5, 1, "fp4"),
}
CHIP_COUNTS = [1, 2, 4, 8, 16, 32, 64, 72, 128, 256]
BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
CONTEXTS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]

#: name -> explorer factory (see :func:`explorer`), filled as the figures modules are imported.
REGISTRY: dict = {}


# ----- controls: plain descriptions the widget machinery turns into ipywidgets ------------

@dataclass(frozen=True)
class Control:
    """One control. ``kind``: "dropdown", "steps" (a selection slider over ``options``),
    "slider" (a float slider), "toggle" or "check". ``options``: values, or (label, value) pairs.
    ``follows(values) -> (options, value)``: options that follow other controls (a chip's
    formats)."""

    kind: str
    value: Any
    description: str = ""
    options: tuple = ()
    min: float | None = None
    max: float | None = None
    step: float | None = None
    readout_format: str | None = None
    follows: Any = field(default=None, compare=False)


def dropdown(description, options, value, follows=None) -> Control:
    return Control("dropdown", value, description, tuple(options), follows=follows)


def model_picker(value) -> Control:
    return dropdown("model", _models.names(), _models.get(value).name)


def chip_picker(value) -> Control:
    return dropdown("chip", _chips.names(), _chips.get(value).name)


def snap(value, options):
    """The option nearest ``value`` on a log scale."""
    options = list(options)
    return min(options, key=lambda o: abs(np.log(o) - np.log(value)))


def steps(description, options, value, fmt=None) -> Control:
    """A slider over ``options`` (labelled ``1,024`` or by ``fmt``), starting at the nearest."""
    options = list(options)
    labels = tuple((fmt(o) if fmt else f"{o:,}", o) for o in options)
    return Control("steps", snap(value, options), description, labels)


def slider(description, value, min, max, step, readout_format) -> Control:
    return Control("slider", value, description, min=min, max=max, step=step,
                   readout_format=readout_format)


def toggle(options, value) -> Control:
    return Control("toggle", value, options=tuple(options))


def check(description, value) -> Control:
    return Control("check", value, description)


# ----- shared pieces of explorer declarations ----------------------------------------------

def precision(chip, label):
    """(bytes per weight, bytes per KV element, the compute dtype ``chip`` runs) of a preset."""
    wb, kvb, dt = PRECISIONS[label]
    dt_used, _ = chip.resolve_dtype(dt)
    return wb, kvb, dt_used


def or_dash(v, fmt):
    """``fmt(v)``, or "-" where there is no finite value."""
    try:
        return fmt(v) if v is not None and np.isfinite(v) else "-"
    except (TypeError, ValueError):
        return "-"


def fit_rows(n) -> list:
    """Readout rows from a figure's ``max_batch``, ``fits`` and ``chips_needed``
    (:func:`llmmath.plots.common.fit_numbers`)."""
    mb = n["max_batch"]
    return [("max batch that fits", f"{mb:,}" if mb is not None else "weights do not fit"),
            ("fits in HBM", "yes" if n["fits"] else f"no: needs {n['chips_needed']} chips")]


# ----- the declaration -------------------------------------------------------------------

def explorer(main: str, sweep):
    """Declare an explorer (see the module docstring) and register it in :data:`REGISTRY`.

    The declared function ``declare(...) -> (controls, figure, readout)`` becomes the explorer's
    factory: same name, signature, defaults and docstring, returning the live widget
    (:class:`llmmath.widgets.Explorer`; ipywidgets is imported only then). The factory carries
    ``main`` (the control a benchmark or test sweeps), ``sweep`` (its values) and ``declare``.
    """
    def deco(declare):
        name = declare.__name__

        @functools.wraps(declare)
        def make(*args, **kwargs):
            from ..widgets.explorer import Explorer

            controls, figure, readout = declare(*args, **kwargs)
            return Explorer(name, controls, figure, readout, main=main)

        del make.__wrapped__  # help() and inspect show the declared signature
        make.__signature__ = inspect.signature(declare)
        make.main, make.sweep, make.declare = main, list(sweep), declare
        if name in REGISTRY and REGISTRY[name].__module__ != make.__module__:
            raise ValueError(f"explorer {name!r} is declared in {REGISTRY[name].__module__} "
                             f"and {make.__module__}")
        REGISTRY[name] = make
        return make

    return deco

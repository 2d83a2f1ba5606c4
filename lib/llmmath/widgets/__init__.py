"""Live explorers (ipywidgets) built on :mod:`llmmath.plots`.

Each explorer is a widget: controls on top, then the figure (an ``ipywidgets.Image`` holding a
PNG, so the saved notebook state shows the figure and nbval needs no ignore tag) beside an HTML
panel with the numbers the figure plots (step time, bound, tokens/s, $/Mtok ...).

An update (one slider move) recomputes with the library and updates the figure's artists in
place (``fig.update``): one figure is kept for the life of the explorer. Moving the
explorer's main slider only moves the marked point, which is redrawn over a cached background
(:func:`llmmath.plots.render_rgba`), so it costs milliseconds; other controls redraw the figure.
``explorer.update(**values)`` sets several controls at once and returns after one redraw
(what ``make bench`` times).

In the static site saved widgets cannot recompute; chapters pair each explorer with a
kernel-free twin from :func:`llmmath.frames.slider`, built by the same plot builder.

Each chapter's explorer is declared in its figures-and-explorers module (``plots.decode``
declares ``decode_explorer`` beside ``decode_time_vs_batch``, see
``llmmath.plots.explore``); this package discovers the declarations, and
``widgets.explorer`` holds the machinery that makes them live.
"""

from __future__ import annotations

from .. import plots  # noqa: F401  (imports every figures module: their explorers register)
from ..plots.explore import REGISTRY
from .explorer import BATCHES, CHIP_COUNTS, CONTEXTS, PRECISIONS, Explorer

#: name -> (factory, the main control and values a benchmark or test can sweep), discovered
EXPLORERS = {name: (make, make.main, make.sweep) for name, make in REGISTRY.items()}

globals().update(REGISTRY)

__all__ = ["Explorer", "EXPLORERS", "PRECISIONS", "BATCHES", "CHIP_COUNTS", "CONTEXTS",
           *EXPLORERS]

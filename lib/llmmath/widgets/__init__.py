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

One module per chapter's explorer, beside the plot builder it drives (``plots.kv`` draws,
``widgets.kv`` makes it live); ``widgets.explorer`` holds the machinery they share.
"""

from __future__ import annotations

from .cost import batching_explorer
from .decode import decode_explorer
from .estimate import estimate_explorer
from .explorer import BATCHES, CHIP_COUNTS, CONTEXTS, PRECISIONS, Explorer
from .hardware import chip_explorer, matmul_roofline_explorer
from .kv import kv_explorer
from .lifetime import LIFETIME_EFFICIENCIES, lifetime_explorer
from .moe import moe_explorer
from .partition import partition_explorer
from .pipeline import pipeline_explorer
from .prefill import prefill_explorer
from .tradeoffs import tradeoff_explorer
from .training import training_explorer

#: name -> (factory, the main control and values a benchmark or test can sweep)
EXPLORERS = {
    "decode_explorer": (decode_explorer, "batch", BATCHES),
    "batching_explorer": (batching_explorer, "batch", BATCHES),
    "kv_explorer": (kv_explorer, "context", CONTEXTS),
    "prefill_explorer": (prefill_explorer, "prompt", [16, 64, 256, 1024, 2048, 4096, 8192]),
    "moe_explorer": (moe_explorer, "batch", BATCHES),
    "pipeline_explorer": (pipeline_explorer, "stages", [1, 2, 4, 8, 16, 32, 64]),
    "partition_explorer": (partition_explorer, "n_chips", [1, 2, 4, 8, 16, 32, 64]),
    "estimate_explorer": (estimate_explorer, "batch", BATCHES),
    "training_explorer": (training_explorer, "n_chips", [64, 256, 1024, 2048, 4096, 8192, 16384]),
    "lifetime_explorer": (lifetime_explorer, "decode_efficiency", LIFETIME_EFFICIENCIES),
    "tradeoff_explorer": (tradeoff_explorer, "context", CONTEXTS),
    "matmul_roofline_explorer": (matmul_roofline_explorer, "batch",
                                 [1, 4, 16, 64, 256, 1024, 4096]),
}

__all__ = ["Explorer", "EXPLORERS", "PRECISIONS", "BATCHES", "CHIP_COUNTS", "CONTEXTS",
           "chip_explorer", *EXPLORERS]

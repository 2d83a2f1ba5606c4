"""llmmath: the shared library of The Roofline Book.

Every formula, catalogue entry, figure and explorer the book uses lives here, in SI units
(seconds, bytes, FLOP, FLOP/s, bytes/s, USD). Convert to human units only for display
(see :mod:`llmmath.units`).

The reader's API::

    import llmmath as lm
    h100, llama = lm.chip("H100-SXM"), lm.model("Llama-3-70B")
    step = lm.decode_step(llama, h100, batch=64, context=4096, n_chips=8)
    lm.critical_batch(llama, h100), lm.critical_context(llama, h100),
    lm.max_batch(llama, h100, 8192, 8)

The modules stay reachable as attributes: ``lm.roofline`` (which gathers ``lm.step``,
``lm.balance``, ``lm.capacity``, ``lm.intensity``, ``lm.speculative``, ``lm.sweep``), ``lm.cost``,
``lm.estimate`` (``lm.estimate_step``: the bound plus the time it leaves out, term by term),
``lm.lifetime`` (a model's lifetime compute: pre-training, RL and inference),
``lm.tradeoffs`` (store or recompute, chapter 13), ``lm.plots``,
``lm.widgets`` (the plotting and widget modules load on first use: they import matplotlib and
ipywidgets, which a calculation does not need).
"""

import importlib

from . import (
    balance,
    capacity,
    chips,
    collectives,
    cost,
    estimate,
    intensity,
    lifetime,
    memory,
    models,
    moe,
    parallel,
    pipeline,
    prices,
    roofline,
    speculative,
    step,
    sweep,
    tradeoffs,
    training,
    units,
)
from .chips import Chip
from .cost import cost_per_million_tokens, cost_per_token, tokens_per_second
from .estimate import estimate_step
from .models import Model
from .roofline import (
    critical_batch,
    critical_context,
    decode_step,
    fits_in_memory,
    max_batch,
    max_context,
    memory_held,
    min_chips,
    prefill_step,
)
from .training import mfu, training_flops, training_time

__version__ = "0.1.0"

chip = chips.get
model = models.get

__all__ = [
    "Chip", "Model", "chip", "model",
    "decode_step", "prefill_step", "critical_batch", "critical_context", "max_batch",
    "max_context", "min_chips", "memory_held", "fits_in_memory",
    "tokens_per_second", "cost_per_token", "cost_per_million_tokens",
    "training_flops", "training_time", "mfu",
    "chips", "models", "roofline", "cost", "memory", "prices", "collectives", "parallel",
    "training", "units",
    "step", "balance", "capacity", "intensity", "speculative", "sweep", "moe", "pipeline",
    "estimate", "estimate_step", "lifetime", "tradeoffs",
    "plots", "widgets", "frames", "exercises", "book", "measure",
]

# Loaded on first use: figures and widgets pull in matplotlib and ipywidgets; measure, timers.
_LAZY = ("plots", "widgets", "frames", "exercises", "book", "measure")


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'llmmath' has no attribute {name!r}")

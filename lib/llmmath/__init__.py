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

Every module is reachable as an attribute, found by discovery (a new module needs no edit
here): the physics modules load with the package (``lm.roofline`` gathers ``lm.step``,
``lm.balance``, ``lm.capacity``, ``lm.intensity``, ``lm.speculative``, ``lm.sweep``; ``lm.cost``,
``lm.estimate``, ``lm.moe`` ...); the presentation layer (``lm.plots``, ``lm.widgets``,
``lm.frames`` ...) loads on first use, since it imports matplotlib and ipywidgets, which a
calculation does not need.
"""

import importlib
import pkgutil

from .chips import Chip
from .chips import get as chip
from .cost import cost_per_million_tokens, cost_per_token, tokens_per_second
from .estimate import Overheads, estimate_step
from .models import Model
from .models import get as model
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

#: The presentation layer: figures, explorers and notebook helpers (they import matplotlib and
#: ipywidgets, which a calculation does not need). Loaded on first use.
PRESENTATION = ("plots", "widgets", "frames", "exercises", "book")


def physics_modules() -> list[str]:
    """Every public module of the package outside :data:`PRESENTATION`, discovered (a new
    chapter's module is one of them by being there): what ``import llmmath`` loads, what the
    fuzz harness walks and what ``make mutate`` mutates."""
    return sorted(i.name for i in pkgutil.iter_modules(__path__)
                  if not i.name.startswith("_") and i.name not in PRESENTATION)


for _name in physics_modules():
    globals()[_name] = importlib.import_module(f".{_name}", __name__)

#: The reader's API, short names for the calls the chapters use most (the module docstring);
#: every other public name is reachable through its module (``lm.moe.touched_experts``).
__all__ = [
    "Chip", "Model", "chip", "model",
    "decode_step", "prefill_step", "critical_batch", "critical_context", "max_batch",
    "max_context", "min_chips", "memory_held", "fits_in_memory",
    "tokens_per_second", "cost_per_token", "cost_per_million_tokens",
    "training_flops", "training_time", "mfu", "estimate_step", "Overheads",
]
HEADLINE = list(__all__)
__all__ += physics_modules() + list(PRESENTATION)


def __getattr__(name):
    if name in PRESENTATION:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module 'llmmath' has no attribute {name!r}")

"""Figure builders with one house style. Every chapter figure comes from here.

Each builder takes the model, chip and workload as arguments (a chip or model by name or
object) and returns a :class:`BookFigure`, so a reader can rebuild any
figure for their own hardware; given ``ax=`` it draws into that Axes instead. The house style
(``llmmath.plots.style``) is applied by the builders themselves: readable on a phone, a
colour-blind-safe palette (Okabe and Ito 2008) with one colour per role, an opaque white
background that stays legible in the site's dark mode, labelled axes with units, log axes where
a quantity spans decades, and annotations on the point the text talks about.

Every figure a builder returns has:

- ``fig.alt_text``: one sentence saying what the figure shows, with its key numbers;
- ``fig.numbers``: those numbers (dict), computed by the calls the drawing uses;
- ``fig.update(**changes)``: redraw the same figure with some arguments changed, in place
  (used by :mod:`llmmath.widgets` and :mod:`llmmath.frames`).

Inside the library all quantities are SI; axes show human units through :mod:`llmmath.units`.
Where a chip lacks the requested ``dtype`` a builder uses :meth:`~llmmath.chips.Chip.resolve_dtype`
and says so in the title; a context beyond the model's window is capped by
:meth:`~llmmath.models.Model.cap_context`; prices come from :func:`~llmmath.cost.chip_hour_price`.

Layout: ``style`` (palette, roles, rcParams), ``labels`` (tick formatters, label placement),
``figure`` (``BookFigure``, the ``builder`` decorator, ``render_rgba``), ``common`` (drawing
helpers several families share), ``explore`` (explorer declarations), and one
figures-and-explorers module per figure family: ``hardware``, ``counting``, ``decode``,
``cost``, ``kv``, ``prefill``, ``moe``, ``pipeline``, ``partition``, ``estimate``, ``training``,
``lifetime``, ``tradeoffs``. Each declares its ``__all__`` (what ``llmmath.plots`` exports) and,
where its chapter has one, its explorer (``llmmath.plots.explore.explorer``); this package
gathers both, so a new module needs no line here.
"""

from __future__ import annotations

import importlib as _importlib
import pkgutil as _pkgutil

#: The modules of this package, discovered (importing each registers its explorer).
MODULES = [_importlib.import_module(f"{__name__}.{_info.name}")
           for _info in sorted(_pkgutil.iter_modules(__path__), key=lambda i: i.name)
           if not _info.name.startswith("_")]

__all__ = [_name for _module in MODULES for _name in _module.__all__]
globals().update({_name: getattr(_module, _name) for _module in MODULES
                  for _name in _module.__all__})

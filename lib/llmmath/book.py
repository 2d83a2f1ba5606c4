"""Helpers for the chapter notebooks: glue computed text into the prose.

``myst_nb.glue`` stores a value's ``repr``, so a glued string would show in quotes.
:func:`glue` stores text that prints as itself, so ``{glue:}`name``` shows ``989 TFLOP/s``.
"""

from __future__ import annotations


class Text:
    """A string whose repr is itself (so glued prose has no quotes)."""

    def __init__(self, text: str):
        self.text = str(text)

    def __repr__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, p, cycle):  # IPython's plain-text printer
        p.text(self.text)


def glue(name: str, text, display: bool = False):
    """Glue `text` (already formatted, e.g. by :mod:`llmmath.units`) under `name` for ``{glue:}``."""
    from myst_nb import glue as _glue

    _glue(name, Text(text), display=display)
    return text

"""One row of the book's summary table, declared by the physics module of the chapter that
derives the bound (``SUMMARY`` in that module); :func:`llmmath.tradeoffs.summary_bounds` gathers
the rows of every physics module, so a new chapter adds its rows where its physics lives.

A row carries its number twice: ``value``, what the library computes (the chapter's functions,
every term in), and ``by_formula``, the printed ``formula`` evaluated as plain arithmetic on the
example's inputs (catalogue fields and typed constants), exactly as the TeX prints it. The two
agree within half a per cent (``tests/test_tradeoffs.py`` checks every row); where the library
legitimately adds a term the formula leaves out, ``adds`` names it and the table prints both
numbers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class SummaryRow:
    chapter: str  # the chapter's document name (its file in book/, without .ipynb)
    bound: str  # what it bounds, in words
    formula: str  # LaTeX, in the book's notation
    example: str  # the worked case, in words
    value: Callable[[ModuleType], float]  # the example's number, SI, given the llmmath package
    shown: Callable[[float], str]  # the number as the table prints it
    # the printed formula evaluated by hand on the example's inputs (SI), given the package
    by_formula: Callable[[ModuleType], float] | None = None
    # what the library's value adds to the formula, in words, where the two differ by more than
    # half a per cent ("" where they agree): the table then prints both numbers
    adds: str = ""

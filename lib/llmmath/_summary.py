"""One row of the book's summary table, declared by the physics module of the chapter that
derives the bound (``SUMMARY`` in that module); :func:`llmmath.tradeoffs.summary_bounds` gathers
the rows of every physics module, so a new chapter adds its rows where its physics lives."""

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

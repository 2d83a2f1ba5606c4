"""Argument checks shared by every module (clear errors instead of silent nonsense), and the
shape of their results (a Python float for scalar inputs, an array for array inputs)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping

import numpy as np


def positive(name: str, value, *, allow_zero: bool = False, integer: bool = False):
    """Return `value` as a float (or a float array) after checking it is finite and > 0 (>= 0)."""
    if value is None:
        raise ValueError(f"{name}: got None; expected a positive number")
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name}: got {value!r}; expected a finite number")
    bad = arr < 0 if allow_zero else arr <= 0
    if np.any(bad):
        first = arr[bad].flat[0] if arr.ndim else float(arr)
        allowed = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name}: got {first:g}; allowed values are {allowed}")
    if integer and np.any(arr != np.round(arr)):
        raise ValueError(f"{name}: got {value!r}; expected a whole number")
    return float(arr) if arr.ndim == 0 else arr


def scalar_or_array(x):
    """``x`` as floats: a 0-d result becomes a Python float, an array stays an array."""
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def fraction(name: str, value):
    """A number in (0, 1]: efficiencies and utilisations."""
    arr = np.asarray(value, dtype=float)
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0) or np.any(arr > 1):
        raise ValueError(f"{name}: got {value!r}; allowed values are in (0, 1]")
    return float(arr) if arr.ndim == 0 else arr


def choice(name: str, value, allowed):
    """`value` must be one of `allowed`."""
    allowed = list(allowed)
    if value not in allowed:
        close = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"{name}: got {value!r}; allowed values are {allowed}{hint}")
    return value


def lookup(kind: str, name: str, catalogue: Mapping):
    """Catalogue lookup by name, case- and punctuation-insensitive; KeyError lists close matches."""
    if name in catalogue:
        return catalogue[name]

    def norm(s: str) -> str:
        return "".join(ch for ch in s.lower() if ch.isalnum())

    by_norm = {norm(k): k for k in catalogue}
    if norm(name) in by_norm:
        return catalogue[by_norm[norm(name)]]
    close = difflib.get_close_matches(name, list(catalogue), n=4, cutoff=0.3)
    close += [k for k in catalogue if norm(name) and norm(name) in norm(k) and k not in close]
    hint = f"close matches: {', '.join(close[:5])}" if close else "no close match"
    raise KeyError(f"unknown {kind} {name!r}; {hint}. All {kind}s: {', '.join(catalogue)}")

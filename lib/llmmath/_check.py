"""Argument checks shared by every module (clear errors instead of silent nonsense), and the
shape of their results (a Python float for scalar inputs, an array for array inputs).

One rule for every public function: numbers are real numbers (``int``, ``float``, numpy
scalars) or arrays of them, never strings, booleans or ``None`` (a ``TypeError``); they are
finite and in range (a ``ValueError``); counts that must be whole are whole. Every message
names the argument, the value and what is allowed. Python scalars take a fast path with no
numpy call, so a scalar bound costs microseconds.
"""

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Mapping

import numpy as np

#: More chips than any machine built or announced: a count past this is a typo, not a plan.
MAX_CHIPS = 10_000_000

#: Bytes per stored number: fp64 is the widest format a model is stored or computed in.
MAX_BYTES_PER_ELEMENT = 8

#: Upper limits that go with an argument's name wherever it appears, so one concept has one
#: rule in every module (the names are the ones lib/README.md lists): (limit, why).
LIMITS = {
    "n_chips": (MAX_CHIPS, "more chips than any machine"),
    **{name: (MAX_BYTES_PER_ELEMENT, "8 bytes (fp64) is the widest number format")
       for name in ("weight_bytes", "kv_bytes", "bytes_per_element", "output_bytes")},
}

_LIMIT = {name: limit for name, (limit, _) in LIMITS.items()}
_INF = math.inf


def number(name: str, value, *, single: bool = False):
    """``value`` as a float (scalar) or a float array; TypeError for anything but real numbers.

    ``single=True`` refuses arrays (a TypeError naming the argument): for the few functions
    that solve for one configuration at a time and do not broadcast.
    """
    t = type(value)
    if t is float or t is int:
        return float(value)
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name}: got {value!r}; expected a number, not a boolean")
    if isinstance(value, (np.integer, np.floating)):
        return float(value)
    if value is None or isinstance(value, (str, bytes, complex, Mapping)):
        raise TypeError(f"{name}: got {value!r}; expected a real number or an array of them")
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as exc:  # ragged lists and the like
        raise TypeError(f"{name}: got {value!r}; expected a real "
                        "number or an array of them") from exc
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{name}: got {value!r} (dtype {arr.dtype}); expected real numbers "
                        "(int or float), not strings, booleans or objects")
    arr = arr.astype(float, copy=False)
    if arr.ndim == 0:
        return float(arr)
    if single:
        raise TypeError(f"{name}: got an array of shape {arr.shape}; this function takes one "
                        "number at a time (call it once per value)")
    return arr


def positive(name: str, value, *, allow_zero: bool = False, integer: bool = False,
             maximum: float | None = None, single: bool = False):
    """``value`` as a float (or float array) after checking it is finite and > 0 (>= 0).

    ``integer=True`` asks for whole numbers; ``maximum`` is an inclusive upper limit;
    ``single=True`` refuses arrays (see :func:`number`).
    """
    t = type(value)
    if t is float or t is int:  # the commonest case, decided in a few comparisons
        top = maximum if maximum is not None else _LIMIT.get(name)
        if ((0 < value < _INF or (allow_zero and value == 0))
                and (top is None or value <= top)
                and (not integer or t is int or value.is_integer())):
            return float(value)
    why = ""
    if maximum is None and name in LIMITS:
        maximum, why = LIMITS[name]
    v = number(name, value, single=single)
    why = f" ({why})" if why else ""
    allowed = ">= 0" if allow_zero else "> 0"
    if type(v) is float:  # fast path: plain Python arithmetic, no numpy reductions
        if not math.isfinite(v):
            raise ValueError(f"{name}: got {value!r}; expected a finite number {allowed}")
        if v < 0 or (v == 0 and not allow_zero):
            raise ValueError(f"{name}: got {v:g}; allowed values are {allowed}")
        if integer and not v.is_integer():
            raise ValueError(f"{name}: got {v:g}; expected a whole number")
        if maximum is not None and v > maximum:
            raise ValueError(f"{name}: got {v:g}; allowed values are at most {maximum:g}{why}")
        return v
    if not np.all(np.isfinite(v)):
        first = v[~np.isfinite(v)].flat[0]
        raise ValueError(f"{name}: got an array holding {first!r}; "
                         f"expected finite numbers {allowed}")
    bad = v < 0 if allow_zero else v <= 0
    if np.any(bad):
        raise ValueError(f"{name}: got {v[bad].flat[0]:g}; allowed values are {allowed}")
    if integer and np.any(v != np.round(v)):
        raise ValueError(f"{name}: got {v[v != np.round(v)].flat[0]:g}; expected whole numbers")
    if maximum is not None and np.any(v > maximum):
        raise ValueError(f"{name}: got {np.max(v):g}; allowed values are at most {maximum:g}{why}")
    return v


def n_chips(value, name: str = "n_chips", *, single: bool = False):
    """A whole number of chips, 1 to :data:`MAX_CHIPS`."""
    return positive(name, value, integer=True, maximum=MAX_CHIPS, single=single)


def whole_count(value, names: str, what: str):
    """A floored count (float or array) as an int (int64 array), refusing what no int can hold.

    NaN, infinities and counts past 2**62 are a ValueError naming ``names`` (the arguments that
    produced the count) instead of a silent cast to a garbage integer.
    """
    arr = np.asarray(value, dtype=float)
    bad = ~np.isfinite(arr) | (np.abs(arr) > 2.0**62)
    if np.any(bad):
        raise ValueError(f"{names}: {what} is {float(arr[bad].flat[0]):g}, not a count an "
                         "integer can hold; check these arguments")
    return int(arr) if arr.ndim == 0 else arr.astype(np.int64)


def scalar_or_array(x):
    """``x`` as floats: a 0-d result becomes a Python float, an array stays an array."""
    if type(x) is float:
        return x
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def fraction(name: str, value):
    """A number in (0, 1]: efficiencies and utilisations."""
    t = type(value)
    if (t is float or t is int) and 0 < value <= 1:  # also refuses NaN
        return float(value)
    v = number(name, value)
    if type(v) is float:
        if not (0 < v <= 1):  # also refuses NaN
            raise ValueError(f"{name}: got {value!r}; allowed values are in (0, 1]")
        return v
    if not np.all((v > 0) & (v <= 1)):
        first = v[~((v > 0) & (v <= 1))].flat[0]
        raise ValueError(f"{name}: got an array holding {first!r}; allowed values are in (0, 1]")
    return v


def choice(name: str, value, allowed):
    """`value` must be one of `allowed`."""
    allowed = list(allowed)
    try:
        ok = value in allowed
    except TypeError:  # unhashable or incomparable values
        ok = False
    if not ok:
        close = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=3, cutoff=0.4)
        hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"{name}: got {value!r}; allowed values are {allowed}{hint}")
    return value


def _norm(s: str) -> str:
    return "".join(ch for ch in s.lower() if ch.isalnum())


def _tokens(s: str) -> list[str]:
    return [t for t in re.split(r"[^0-9a-z]+", s.lower()) if t]


def close_matches(name: str, candidates, n: int = 5, newest_first=None) -> list[str]:
    """Catalogue names ranked the way a person types them.

    First names that start with what was typed ("A100" -> "A100-SXM-80GB"), then names that
    contain every typed word ("llama 70b" -> "Llama-3-70B"), then names containing the typed
    text anywhere, then spelling neighbours (difflib). Within a group, ``newest_first`` (a
    name -> year mapping) puts the newest first: "llama 70b" means Llama 3 before LLaMA 2.
    """
    q, words = _norm(name), _tokens(name)
    ranked: list[str] = []
    year = newest_first or {}

    def add(group, by_year=True):
        if by_year:
            group = sorted(group, key=lambda c: -(year.get(c) or 0))  # stable: ties keep order
        ranked.extend(c for c in group if c not in ranked)

    if q:
        add(c for c in candidates if _norm(c).startswith(q))
        if words:
            add(c for c in candidates if all(w in _norm(c) for w in words)
                and _norm(c).startswith(words[0]))
            add(c for c in candidates if all(w in _norm(c) for w in words))
        add(c for c in candidates if q in _norm(c))
    add(difflib.get_close_matches(name, list(candidates), n=n, cutoff=0.3), by_year=False)
    return ranked[:n]


def index_by_name(kind: str, entries) -> dict:
    """Catalogue entries (chips or models) by name; a name that appears twice is an error."""
    index: dict = {}
    for entry in entries:
        if entry.name in index:
            raise ValueError(f"name: {kind} {entry.name!r} appears twice in the catalogue")
        index[entry.name] = entry
    return index


def lookup(kind: str, name: str, catalogue: Mapping):
    """Catalogue lookup by name, case- and punctuation-insensitive; KeyError lists close matches."""
    if not isinstance(name, str):
        raise TypeError(f"name: got {name!r}; expected a {kind} name (a string), for example "
                        f"{next(iter(catalogue))!r}")
    if name in catalogue:
        return catalogue[name]
    by_norm = {_norm(k): k for k in catalogue}
    if _norm(name) in by_norm:
        return catalogue[by_norm[_norm(name)]]
    years = {k: getattr(v, "year", None) for k, v in catalogue.items()}
    close = close_matches(name, list(catalogue), newest_first=years)
    hint = f"close matches: {', '.join(close)}" if close else "no close match"
    raise KeyError(f"name: unknown {kind} {name!r}; {hint}. All {kind}s: {', '.join(catalogue)}")

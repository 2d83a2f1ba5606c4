"""One root-finder for the solvers that have no closed form (private).

``bisect`` finds where an increasing function of one variable crosses zero, by halving a
bracket. The solvers that use it (``tradeoffs.recompute_crossover``,
``speculative.speculative_critical_batch``, ``cost.fast_mode``) each evaluate a roofline bound
at the midpoint, so the only thing asked of the function is that it be non-decreasing on the
bracket: no derivative, no smoothness (a ``max`` of two lines has a kink at its root).
"""

from __future__ import annotations


def bisect(f, lo: float, hi: float, *, f_lo: float | None = None, f_hi: float | None = None,
           atol: float = 0.0, rtol: float = 0.0, max_iter: int = 100) -> float:
    """The ``x`` in ``[lo, hi]`` where the non-decreasing ``f`` crosses zero: the bracket's
    midpoint once halving has shrunk it enough.

    - ``f(lo) <= 0 <= f(hi)`` must hold (pass ``f_lo`` / ``f_hi`` where the caller has already
      evaluated them); otherwise the bracket holds no root and a ValueError says so, with both
      values (NaN included).
    - Each step evaluates ``f`` at the midpoint and keeps the half where the sign changes
      (``f(mid) < 0``: the root lies above ``mid``). It stops after ``max_iter`` steps, or as
      soon as the bracket is narrower than ``max(atol, rtol * |hi|)``; with both tolerances 0
      it runs all ``max_iter`` steps (about 60 steps reach adjacent floats, after which the
      bracket no longer moves).
    - The result is ``0.5 * (lo + hi)`` of the final bracket: within half its width of a root.
    """
    if not lo <= hi:
        raise ValueError(f"lo, hi: got [{lo!r}, {hi!r}]; a bracket needs lo <= hi")
    if max_iter < 0:
        raise ValueError(f"max_iter: got {max_iter!r}; allowed values are >= 0")
    if atol < 0 or rtol < 0:
        raise ValueError(f"atol, rtol: got {atol!r}, {rtol!r}; tolerances are >= 0")
    f_lo = f(lo) if f_lo is None else f_lo
    f_hi = f(hi) if f_hi is None else f_hi
    if not (f_lo <= 0 <= f_hi):
        raise ValueError(f"f: got f({lo:g}) = {f_lo:g} and f({hi:g}) = {f_hi:g}; the bracket "
                         f"[{lo:g}, {hi:g}] holds no root of this non-decreasing function "
                         "(expected f(lo) <= 0 <= f(hi))")
    for _ in range(max_iter):
        mid = 0.5 * (lo + hi)
        if f(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi - lo < max(atol, rtol * abs(hi)):
            break
    return 0.5 * (lo + hi)

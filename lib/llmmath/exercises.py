"""Answer checking for the book's exercises: a verdict and, when off, a hint at the usual slip.

``check(answer, expected)`` prints and returns ``"right"``, ``"close (3.2% high)"`` or
``"off by a factor of ~8: bits vs bytes?"``. A blank answer (``None`` or ``...``, as the check
cells ship in the book and its student edition) gives ``UNANSWERED`` instead of an error, so a
notebook runs top to bottom before the student has filled anything in. The factors recognised
are the classic back-of-envelope mistakes: 2 (a multiply-add is 2 FLOP; K and V are two tensors),
8 (bits vs bytes), 1000 / 1e6 / 1e9 (a unit prefix), 1024 and 1.0737 / 1.0737^2 (GiB vs GB,
binary vs decimal prefixes), and their inverses.

A check cell that must not show its key (homework: the expression that computes the key would
print it) passes ``sealed=seal(key, label)`` instead of the key: a salted SHA-256 of the bucket of
``log |key|`` (0.1% wide), ``"label:digest"``. ``check`` then finds the verdict by hashing the
buckets around the answer (and around the answer divided by each slip), so it can say "right",
"close" or name the slip without the key on the page. A sealed verdict never says how far off an
answer is beyond that (that would give the key away). It hides the key from the page, not from a
determined student: hashing every bucket recovers it in seconds.
"""

from __future__ import annotations

import hashlib
import math

import numpy as np

__all__ = ["check", "seal", "KNOWN_FACTORS", "UNANSWERED", "Verdict"]

class Verdict(str):
    """A verdict `check` has already printed: a notebook does not echo it a second time.

    It is a plain ``str`` everywhere else (compare it, format it, store it).
    """

    def _ipython_display_(self):  # IPython shows nothing for the cell's value
        pass


# The verdict for a blank answer: the check cells ship as ``my_answer = None``.
UNANSWERED = "fill in your answer: replace None with your number, then run the cell again"

_GIB = 1024**3 / 1e9  # 1.0737...
KNOWN_FACTORS = [
    (2.0, "a factor of 2: FLOPs per multiply-add (2 FLOP), "
          "or K and V counted once instead of twice?"),
    (4.0, "a factor of 4: two factors of 2 (FLOP per multiply-add and K+V), "
          "or bf16 (2 B) vs fp32 (4 B) twice?"),
    (8.0, "bits vs bytes?"),
    (16.0, "a factor of 16: bits vs bytes and FLOP per multiply-add together?"),
    (1e3, "a unit prefix slip of 1000 (e.g. GB vs TB, ms vs s)?"),
    (1e6, "a unit prefix slip of 1e6 (e.g. MB vs TB, us vs s)?"),
    (1e9, "a unit prefix slip of 1e9 (e.g. GB vs B, ns vs s)?"),
    (1e12, "a unit prefix slip of 1e12 (e.g. TFLOP/s vs FLOP/s)?"),
    (1024.0, "1024 vs 1000, or a KiB/MiB step counted as 1024 once too often?"),
    (_GIB, "GB vs GiB (1 GiB = 1.0737 GB)?"),
    (1.024**4, "TB vs TiB (1 TiB = 1.0995 TB)?"),
    (_GIB**2, "GB vs GiB applied twice (1.0737^2 = 1.153)?"),
]


def _as_float(x, name):
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 0:
        raise ValueError(f"{name}: check takes one number, got an array of shape {arr.shape}")
    v = float(arr)
    if not math.isfinite(v):
        raise ValueError(f"{name}: got {v!r}; expected a finite number")
    return v


def check(answer, expected=None, rtol=0.05, quiet=False, *, sealed=None) -> str:
    """Compare ``answer`` with ``expected``; print (unless ``quiet``) and return a verdict.

    - ``"right"`` within ``rtol`` (relative, default 5%);
    - ``"close (x% high)"`` / ``"close (x% low)"`` within 3 x ``rtol``;
    - ``"off by a factor of ~F (too high|too low): <hint>"`` when the ratio is near a known slip
      (within ``rtol`` of it, in log terms), else ``"off by a factor of ~F (too high|too low)"``;
    - ``"wrong sign"`` when the signs differ;
    - ``UNANSWERED`` ("fill in your answer: ...") when ``answer`` is ``None`` or ``...`` (a blank
      check cell); ``expected`` and ``rtol`` are still validated.

    With ``sealed=seal(key, label)`` in place of ``expected``, the same verdicts without the key
    on the page: "close (high)" without the per cent, and "off" without the factor when no slip
    explains it.
    """
    if (expected is None) == (sealed is None):
        raise ValueError(f"expected, sealed: got {expected!r} and {sealed!r}; give exactly one")
    blank = answer is None or answer is Ellipsis
    a = None if blank else _as_float(answer, "answer")
    rtol = _as_float(rtol, "rtol")
    if rtol <= 0:
        raise ValueError(f"rtol: got {rtol:g}; allowed values are > 0")
    if sealed is not None:
        label, digest = _unseal(sealed)
        verdict = UNANSWERED if blank else _sealed_verdict(a, label, digest, rtol)
    else:
        e = _as_float(expected, "expected")
        verdict = UNANSWERED if blank else _verdict(a, e, rtol)
    verdict = Verdict(verdict)
    if not quiet:
        print(verdict)
    return verdict


_SEAL_STEP = math.log1p(1e-3)  # width of a sealed key's bucket in log space (0.1%)


def _bucket(label, sign, b):
    return hashlib.sha256(f"{label}:{sign}:{b}".encode()).hexdigest()[:16]


def seal(value, label: str) -> str:
    """``"label:digest"``: ``value`` (nonzero) sealed for ``check(answer, sealed=...)``."""
    v = _as_float(value, "value")
    if v == 0:
        raise ValueError("value: got 0; a sealed key must be nonzero (check the key instead)")
    if not isinstance(label, str) or not label or ":" in label:
        raise ValueError(f"label: got {label!r}; expected a non-empty name without ':' "
                         "(the exercise's label)")
    b = math.floor(math.log(abs(v)) / _SEAL_STEP)
    return f"{label}:{_bucket(label, '+' if v > 0 else '-', b)}"


def _unseal(sealed):
    label, _, digest = str(sealed).rpartition(":")
    if not label or len(digest) != 16 or any(c not in "0123456789abcdef" for c in digest):
        raise ValueError(f"sealed: got {sealed!r}; expected 'label:digest' from seal()")
    return label, digest


def _near(label, digest, sign, logx, width):
    """log(x / key) when the sealed key's bucket lies within ``width`` of ``log x``, else None."""
    for b in range(math.floor((logx - width) / _SEAL_STEP),
                   math.floor((logx + width) / _SEAL_STEP) + 1):
        if _bucket(label, sign, b) == digest:
            return logx - (b + 0.5) * _SEAL_STEP
    return None


def _sealed_verdict(a, label, digest, rtol):
    if a == 0:
        return "off: got 0, expected a nonzero number (a unit or a missing term?)"
    sign, other = ("+", "-") if a > 0 else ("-", "+")
    la, tol = math.log(abs(a)), math.log1p(rtol)
    if _near(label, digest, sign, la, tol) is not None:
        return "right"
    off = _near(label, digest, sign, la, min(math.log1p(3 * rtol), math.log(_GIB) * 0.9))
    if off is not None:
        return f"close ({'high' if off > 0 else 'low'})"
    best = None
    for factor, hint in KNOWN_FACTORS:
        for direction, shifted in (("too high", la - math.log(factor)),
                                   ("too low", la + math.log(factor))):
            err = _near(label, digest, sign, shifted, tol)
            if err is not None and (best is None or abs(err) < best[0]):
                best = (abs(err), factor, direction, hint)
    if best is not None:
        return f"off by a factor of ~{_show(best[1])} ({best[2]}): {best[3]}"
    if _near(label, digest, other, la, tol) is not None:
        return "wrong sign"
    return (f"off: not within {3 * rtol:.0%} of the key, nor one of the known slips away "
            "(check the formula)")


def _verdict(a, e, rtol):
    if e == 0:
        return "right" if abs(a) <= rtol else f"off: expected 0, got {a:g}"
    if a == 0:
        return "off: got 0, expected a nonzero number (a unit or a missing term?)"
    if (a > 0) != (e > 0):
        return "wrong sign"
    rel = a / e - 1.0
    if abs(rel) <= rtol:
        return "right"
    direction = "high" if rel > 0 else "low"
    if abs(rel) <= 3 * rtol and abs(math.log(a / e)) < math.log(_GIB) * 0.9:
        return f"close ({abs(rel) * 100:.3g}% {direction})"
    ratio = abs(a / e)
    big = max(ratio, 1 / ratio)
    too = "too high" if ratio > 1 else "too low"
    best = None
    for factor, hint in KNOWN_FACTORS:
        err = abs(math.log(big / factor))
        if err <= math.log1p(rtol) and (best is None or err < best[0]):
            best = (err, factor, hint)
    if best is not None:
        return f"off by a factor of ~{_show(best[1])} ({too}): {best[2]}"
    return f"off by a factor of ~{_show(big)} ({too})"


def _show(f):
    if f >= 1e4:
        return f"{f:.0e}".replace("e+0", "e").replace("e+", "e")
    if f >= 10:
        return f"{f:.0f}"
    return f"{f:.3g}"

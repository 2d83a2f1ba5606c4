"""SI constants and display formatting.

Inside the library every quantity is SI: seconds, bytes, FLOP, FLOP/s, bytes/s, USD.
The constants below turn human units into SI (``80 * GB``); the ``fmt_*`` functions turn
SI values into short strings for prose and figure labels (``fmt_bytes(80e9) == '80 GB'``).

Decimal prefixes (kB, MB, GB, TB) are powers of 1000, binary prefixes (KiB, MiB, GiB, TiB)
powers of 1024. Vendors usually mean decimal for bandwidth and often binary for capacity:
the chip catalogue says which one each figure uses.
"""

from __future__ import annotations

import math

import numpy as np

# Decimal prefixes.
K = 1e3
M = 1e6
G = 1e9
T = 1e12
P = 1e15
E = 1e18

# Bytes.
kB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
PB = 1e15
KiB = 1024.0
MiB = 1024.0**2
GiB = 1024.0**3
TiB = 1024.0**4

# Time.
ns = 1e-9
us = 1e-6
ms = 1e-3
second = 1.0
minute = 60.0
hour = 3600.0
day = 86400.0
year = 365.25 * day

# Rates.
TFLOPS = 1e12  # FLOP/s
PFLOPS = 1e15
GBps = 1e9  # bytes/s
TBps = 1e12
Gbps = 1e9 / 8  # network links are quoted in bits per second

_PREFIXES = [(1e24, "Y"), (1e21, "Z"), (1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"),
             (1e6, "M"), (1e3, "k"), (1.0, "")]


def _scalar(x, name: str) -> float:
    arr = np.asarray(x, dtype=float)
    if arr.ndim != 0:
        raise ValueError(f"{name}: formatting takes one number, got an array of shape {arr.shape}")
    value = float(arr)
    if not math.isfinite(value):
        raise ValueError(f"{name}: cannot format {value!r}; expected a finite number")
    return value


def _sig(x: float, digits: int) -> str:
    """Round to `digits` significant figures, without trailing zeros or scientific notation."""
    if x == 0:
        return "0"
    decimals = max(digits - 1 - int(math.floor(math.log10(abs(x)))), 0)
    s = f"{x:.{decimals}f}"
    if "." in s:
        s = s.rstrip("0").rstrip(".")
    return s


def fmt_si(x, unit: str = "", digits: int = 3) -> str:
    """Format with a decimal SI prefix: ``fmt_si(2.5e12, 'FLOP/s') == '2.5 TFLOP/s'``."""
    value = _scalar(x, "x")
    if value == 0:
        return f"0 {unit}".strip()
    mag = abs(value)
    for scale, prefix in _PREFIXES:
        if mag >= scale * (1 - 0.5 * 10 ** (1 - digits)):
            shown = _sig(value / scale, digits)
            if abs(float(shown)) >= 1000 and prefix != "Y":
                continue  # rounding reached the next prefix
            return f"{shown} {prefix}{unit}".strip()
    return f"{_sig(value, digits)} {unit}".strip()


def fmt_bytes(x, digits: int = 3, binary: bool = False) -> str:
    """Bytes with a decimal prefix (``'80 GB'``) or, with ``binary=True``,
    a binary one (``'80 GiB'``)."""
    value = _scalar(x, "x")
    if not binary:
        return fmt_si(value, "B", digits)
    mag = abs(value)
    for scale, prefix in [(TiB * 1024, "PiB"), (TiB, "TiB"), (GiB, "GiB"), (MiB, "MiB"),
                          (KiB, "KiB")]:
        if mag >= scale:
            return f"{_sig(value / scale, digits)} {prefix}"
    return f"{_sig(value, digits)} B"


def fmt_time(x, digits: int = 3) -> str:
    """Seconds in the most readable unit: ns, µs, ms, s, min, h, days or years."""
    value = _scalar(x, "x")
    mag = abs(value)
    if mag == 0:
        return "0 s"
    for scale, unit in [(year, "years"), (day, "days"), (hour, "h"), (minute, "min")]:
        if mag >= scale:
            return f"{_sig(value / scale, digits)} {unit}"
    for scale, unit in [(1.0, "s"), (ms, "ms"), (us, "µs"), (ns, "ns")]:
        if mag >= scale * (1 - 0.5 * 10 ** (1 - digits)):
            return f"{_sig(value / scale, digits)} {unit}"
    return f"{_sig(value / ns, digits)} ns"


def fmt_flops(x, digits: int = 3) -> str:
    """A FLOP count: ``fmt_flops(3.14e23) == '314 ZFLOP'``."""
    return fmt_si(x, "FLOP", digits)


def fmt_flops_rate(x, digits: int = 3) -> str:
    """A compute rate: ``fmt_flops_rate(9.89e14) == '989 TFLOP/s'``."""
    return fmt_si(x, "FLOP/s", digits)


def fmt_bandwidth(x, digits: int = 3) -> str:
    """A memory or network bandwidth in bytes/s: ``fmt_bandwidth(3.35e12) == '3.35 TB/s'``."""
    return fmt_si(x, "B/s", digits)


def fmt_count(x, digits: int = 3) -> str:
    """A plain count with a short-scale suffix: ``fmt_count(7.05e10) == '70.5B'``
    (parameters, tokens)."""
    value = _scalar(x, "x")
    mag = abs(value)
    for scale, suffix in [(1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")]:
        if mag >= scale * (1 - 0.5 * 10 ** (1 - digits)):
            return f"{_sig(value / scale, digits)}{suffix}"
    return _sig(value, digits)


def fmt_usd(x, digits: int = 3) -> str:
    """US dollars: ``fmt_usd(2.5) == '$2.50'``; small amounts keep significant figures."""
    value = _scalar(x, "x")
    if abs(value) >= 1000:
        return "$" + fmt_count(value, digits)
    if abs(value) >= 1:
        return f"${value:,.2f}"
    return "$" + _sig(value, digits)


def fmt_ratio(x, digits: int = 2) -> str:
    """A dimensionless factor: ``fmt_ratio(2.47) == '2.5×'`` (the multiplication sign, as print
    sets it, not the letter x)."""
    return _sig(_scalar(x, "x"), digits) + "×"


def fmt_percent(x, digits: int = 2) -> str:
    """A fraction as a percentage: ``fmt_percent(0.456) == '46%'``."""
    return _sig(100 * _scalar(x, "x"), digits) + "%"

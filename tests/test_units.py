"""Tests of llmmath.units: SI constants and display formatting."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import units as u


def test_constants():
    assert u.GB == 1e9 and u.GiB == 2**30 and u.TiB == 2**40 and u.KiB == 1024
    assert u.GiB / u.GB == pytest.approx(1.0737, rel=1e-4)
    assert u.ms == 1e-3 and u.us == 1e-6 and u.ns == 1e-9
    assert u.hour == 3600 and u.day == 86400 and u.year == pytest.approx(365.25 * 86400)
    assert u.TFLOPS == 1e12 and u.TBps == 1e12 and u.Gbps == pytest.approx(1.25e8)
    assert 400 * u.Gbps == pytest.approx(50 * u.GBps)  # a 400 Gb/s NIC moves 50 GB/s


@pytest.mark.parametrize("fn, args, expected", [
    (u.fmt_si, (2.5e12, "FLOP/s"), "2.5 TFLOP/s"),
    (u.fmt_si, (0,), "0"),
    (u.fmt_si, (999.9, "B"), "1 kB"),
    (u.fmt_si, (-2e9, "B"), "-2 GB"),
    (u.fmt_bytes, (80e9,), "80 GB"),
    (u.fmt_bytes, (512,), "512 B"),
    (u.fmt_time, (0.0286,), "28.6 ms"),
    (u.fmt_time, (90,), "1.5 min"),
    (u.fmt_time, (3e-7,), "300 ns"),
    (u.fmt_time, (0,), "0 s"),
    (u.fmt_flops, (3.14e23,), "314 ZFLOP"),
    (u.fmt_flops_rate, (9.89e14,), "989 TFLOP/s"),
    (u.fmt_bandwidth, (3.35e12,), "3.35 TB/s"),
    (u.fmt_count, (7.05e10,), "70.5B"),
    (u.fmt_count, (12,), "12"),
    (u.fmt_usd, (2.5,), "$2.50"),
    (u.fmt_usd, (0.00123,), "$0.00123"),
    (u.fmt_usd, (12345,), "$12.3k"),
    (u.fmt_ratio, (2.47,), "2.5×"),
    (u.fmt_percent, (0.456,), "46%"),
])
def test_formatting(fn, args, expected):
    assert fn(*args) == expected


def test_binary_bytes():
    assert u.fmt_bytes(80 * u.GiB, binary=True) == "80 GiB"
    assert u.fmt_bytes(32 * u.GiB) == "34.4 GB"


def test_formatting_rejects_arrays_and_nonfinite():
    with pytest.raises(ValueError, match="array"):
        u.fmt_bytes(np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="finite"):
        u.fmt_time(float("inf"))
    assert u.fmt_bytes(np.float64(1e9)) == "1 GB"


_SCALE = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Z": 1e21,
          "Y": 1e24}


@settings(max_examples=300, deadline=None)
@given(x=st.floats(min_value=1e-3, max_value=1e26))
def test_fmt_si_round_trips_to_three_significant_figures(x):
    number, unit = u.fmt_si(x, "B").split(" ")
    value = float(number) * _SCALE[unit[:-1]]
    assert value == pytest.approx(x, rel=5e-3)


@settings(max_examples=300, deadline=None)
@given(x=st.floats(min_value=1e-9, max_value=1e5))
def test_fmt_time_round_trips(x):
    scale = {"ns": u.ns, "µs": u.us, "ms": u.ms, "s": 1, "min": u.minute, "h": u.hour,
             "days": u.day, "years": u.year}
    number, unit = u.fmt_time(x).split(" ")
    assert float(number) * scale[unit] == pytest.approx(x, rel=5e-3)
    assert math.isfinite(float(number))

"""Tests of llmmath.memory (memory tiers, prompt-cache cost) and llmmath.prices (API price sheets).

Each value is checked against a hand computation from the cited figures in the catalogue
(DRAM: 32 GB DDR5-5200 at $325.99; disk: 24 TB at 285 MB/s; flash: 30.72 TB at 14 GB/s),
or against a toy tier whose numbers are easy to follow.
"""

import numpy as np
import pytest

from llmmath import chips, models
from llmmath.memory import (
    MEMORY_TIERS,
    MemoryTier,
    amortised_price_per_hour,
    cache_cost,
    cache_fetch_time,
    cache_hold_cost,
    cheapest_tier,
    kv_transfer_time,
    memory_tiers,
    tier_crossover,
)
from llmmath.prices import PRICE_SHEETS, PriceSheet, kv_bytes_from_price_step

H100 = chips.get("H100-SXM")
LLAMA = models.get("Llama-3-70B")
HOURS_PER_YEAR = 365.25 * 24

# Toy tiers at $1 per device-second: A holds 100 B and reads 10 B/s (hold 0.01 $/B/s, read
# 0.1 $/B, drain 10 s); B holds 1000 B and reads 1 B/s (hold 0.001 $/B/s, read 1 $/B).
A = MemoryTier("A", capacity=100.0, bandwidth=10.0, price_per_hour=3600.0)
B = MemoryTier("B", capacity=1000.0, bandwidth=1.0, price_per_hour=3600.0)


# ----- MemoryTier ------------------------------------------------------------------------------

def test_tier_derived_quantities():
    assert A.drain_time == pytest.approx(10.0)
    assert A.price_per_second == pytest.approx(1.0)
    assert A.hold_price == pytest.approx(0.01)
    assert A.read_price == pytest.approx(0.1)


@pytest.mark.parametrize("field", ["capacity", "bandwidth", "price_per_hour"])
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan")])
def test_tier_rejects_bad_figures(field, bad):
    kw = dict(name="x", capacity=1.0, bandwidth=1.0, price_per_hour=1.0)
    kw[field] = bad
    with pytest.raises(ValueError, match=field):
        MemoryTier(**kw)


def test_tier_from_chip_uses_hbm_and_rental_price():
    hbm = MemoryTier.from_chip(H100)
    assert hbm.capacity == H100.hbm_capacity == 80e9
    assert hbm.bandwidth == H100.hbm_bandwidth
    assert hbm.price_per_hour == H100.price_per_hour
    assert MemoryTier.from_chip(H100, price_per_hour=4.0).price_per_hour == 4.0


def test_tier_from_chip_without_price_raises(small_chip):
    with pytest.raises(ValueError, match="price_per_hour"):
        MemoryTier.from_chip(small_chip)  # a chip with no price


# ----- amortised_price_per_hour ----------------------------------------------------------------

def test_amortised_price_per_hour_by_hand():
    # $325.99 over 5 years of 8,766 hours
    assert amortised_price_per_hour(325.99, 5) == pytest.approx(325.99 / (5 * HOURS_PER_YEAR))
    assert amortised_price_per_hour(8766.0, 1) == pytest.approx(1.0)
    np.testing.assert_allclose(amortised_price_per_hour(np.array([8766.0, 17532.0]), 1), [1.0, 2.0])


@pytest.mark.parametrize("args", [(0.0, 5), (-1.0, 5), (100.0, 0.0), (100.0, -2.0)])
def test_amortised_price_per_hour_rejects_bad_input(args):
    with pytest.raises(ValueError):
        amortised_price_per_hour(*args)


# ----- the catalogue ---------------------------------------------------------------------------

def test_memory_tiers_catalogue_matches_cited_figures():
    assert list(MEMORY_TIERS) == ["HBM", "DRAM", "flash", "disk"]
    assert [t.name for t in memory_tiers()] == ["HBM", "DRAM", "flash", "disk"]
    dram, flash, disk = MEMORY_TIERS["DRAM"], MEMORY_TIERS["flash"], MEMORY_TIERS["disk"]
    assert dram.capacity == 32e9 and dram.bandwidth == pytest.approx(41.6e9)  # 5,200 MT/s x 8 B
    assert dram.price_per_hour == pytest.approx(325.99 / (5 * HOURS_PER_YEAR))
    assert flash.capacity == 30.72e12 and flash.bandwidth == 14e9
    assert flash.price_per_hour == pytest.approx(10950 / (5 * HOURS_PER_YEAR))
    assert disk.capacity == 24e12 and disk.bandwidth == 285e6
    assert disk.price_per_hour == pytest.approx(24e3 * 0.014 * 1.35 / (5 * HOURS_PER_YEAR))
    assert dram.drain_time == pytest.approx(32e9 / 41.6e9)  # about 0.77 s
    for tier in memory_tiers():
        assert tier.source and tier.price_source


def test_tiers_get_cheaper_to_hold_and_slower_to_read():
    tiers = memory_tiers()
    holds = [t.hold_price for t in tiers]
    bws = [t.bandwidth for t in tiers]
    assert holds == sorted(holds, reverse=True)
    assert bws == sorted(bws, reverse=True)


# ----- cache_hold_cost / cache_fetch_time / cache_cost -----------------------------------------

def test_cache_hold_cost_by_hand():
    assert cache_hold_cost(10.0, 5.0, A) == pytest.approx(10 * 5 * 0.01)
    dram = MEMORY_TIERS["DRAM"]
    b = LLAMA.kv_bytes_per_token(2)  # 327,680 B per token
    hand = b * 300 * (325.99 / (5 * HOURS_PER_YEAR) / 3600) / 32e9
    assert cache_hold_cost(b, 300, dram) == pytest.approx(hand)
    assert cache_hold_cost(0.0, 300, dram) == 0.0
    np.testing.assert_allclose(cache_hold_cost(1.0, np.array([1.0, 2.0]), A), [0.01, 0.02])


@pytest.mark.parametrize("args", [(-1.0, 1.0), (1.0, -1.0), (float("nan"), 1.0), (None, 1.0)])
def test_cache_hold_cost_rejects_bad_input(args):
    with pytest.raises(TypeError if None in args else ValueError, match="nbytes|seconds"):
        cache_hold_cost(*args, A)


def test_cache_fetch_time_by_hand():
    assert cache_fetch_time(33e9, MEMORY_TIERS["disk"]) == pytest.approx(33e9 / 285e6)  # ~116 s
    assert cache_fetch_time(14e9, MEMORY_TIERS["flash"]) == pytest.approx(1.0)
    assert cache_fetch_time(0.0, A) == 0.0


def test_a_gpu_takes_a_host_cache_in_at_most_its_pcie_rate():
    # H100 datasheet: "PCIe Gen5: 128 GB/s", both directions: 64 GB/s into one GPU. One DDR5-5200
    # module reads 41.6 GB/s (under the link); 16 modules 665.6 GB/s, but one GPU still takes
    # 64 GB/s, and 8 GPUs 8 x 64 = 512 GB/s. An 8,192-token Llama 3 70B prefix (8,192 x
    # 327,680 B = 2.684 GB) then takes 2.684e9 / 64e9 = 41.9 ms into one GPU.
    from llmmath.memory import PCIE_GEN5_X16_BANDWIDTH, fetch_bandwidth
    dram, flash, hbm = MEMORY_TIERS["DRAM"], MEMORY_TIERS["flash"], MEMORY_TIERS["HBM"]
    assert PCIE_GEN5_X16_BANDWIDTH == 128e9 / 2
    assert fetch_bandwidth(dram) == pytest.approx(41.6e9)
    assert fetch_bandwidth(dram, devices=16) == pytest.approx(64e9)
    assert fetch_bandwidth(dram, devices=16, n_chips=8) == pytest.approx(512e9)
    assert fetch_bandwidth(flash, devices=8) == pytest.approx(64e9)  # 8 x 14 = 112 GB/s of drives
    assert cache_fetch_time(8192 * 327_680, dram, devices=16) == pytest.approx(41.943e-3, rel=1e-4)
    # the GPU's own HBM has no link in the way: devices x 3.35 TB/s
    assert hbm.link_bandwidth is None
    assert fetch_bandwidth(hbm, devices=2) == pytest.approx(6.7e12)
    with pytest.raises(ValueError, match="^devices"):
        fetch_bandwidth(dram, devices=0)
    with pytest.raises(ValueError, match="^n_chips"):
        cache_fetch_time(1.0, dram, n_chips=0)
    with pytest.raises(ValueError, match="^link_bandwidth"):
        MemoryTier(name="x", capacity=1, bandwidth=1, price_per_hour=1, link_bandwidth=0)


def test_cache_fetch_time_rejects_bad_input():
    with pytest.raises(ValueError, match="nbytes"):
        cache_fetch_time(-1.0, A)


def test_cache_cost_is_a_roofline_in_lifetime():
    # below the drain time (10 s) the bandwidth floor b p / W; above it capacity b p t / M
    assert cache_cost(1.0, 5.0, A) == pytest.approx(0.1)
    assert cache_cost(1.0, 10.0, A) == pytest.approx(0.1)
    assert cache_cost(1.0, 20.0, A) == pytest.approx(0.2)
    assert cache_cost(3.0, 20.0, A) == pytest.approx(0.6)
    # above the drain time it equals the episode's hold cost
    assert cache_cost(7.0, 1e4, A) == pytest.approx(cache_hold_cost(7.0, 1e4, A))
    np.testing.assert_allclose(cache_cost(1.0, np.array([1.0, 100.0]), A), [0.1, 1.0])


@pytest.mark.parametrize("args", [(-1.0, 1.0), (1.0, -1.0), (1.0, float("inf"))])
def test_cache_cost_rejects_bad_input(args):
    with pytest.raises(ValueError):
        cache_cost(*args, A)


# ----- cheapest_tier / tier_crossover ----------------------------------------------------------

def test_tier_crossover_by_hand():
    # A's capacity cost t x 0.01 meets B's bandwidth floor 1 at t = 100 s
    assert tier_crossover(A, B) == pytest.approx(100.0)
    assert tier_crossover(B, A) == float("inf")  # A is dearer to hold: it never wins late
    cheap = MemoryTier("C", capacity=1000.0, bandwidth=100.0, price_per_hour=3600.0)
    assert tier_crossover(A, cheap) == 0.0  # cheaper to hold and to read: wins at every lifetime


def test_tier_crossover_of_the_catalogue():
    t = MEMORY_TIERS
    hand = t["flash"].read_price / t["DRAM"].hold_price
    assert tier_crossover(t["DRAM"], t["flash"]) == pytest.approx(hand)


def test_cheapest_tier_switches_at_the_crossover():
    assert cheapest_tier(1.0, [A, B]) == "A"
    assert cheapest_tier(99.0, [A, B]) == "A"
    assert cheapest_tier(101.0, [A, B]) == "B"
    assert list(cheapest_tier(np.array([1.0, 1e3]), [A, B])) == ["A", "B"]
    for t in (1e-3, 300.0, 3600.0):  # default: the catalogue tiers
        hand = min(memory_tiers(), key=lambda tier: max(t * tier.hold_price, tier.read_price))
        assert cheapest_tier(t) == hand.name
    assert cheapest_tier(10 * 365.25 * 86400.0) == "disk"


@pytest.mark.parametrize("bad", [0.0, -5.0, float("nan")])
def test_cheapest_tier_rejects_bad_input(bad):
    with pytest.raises(ValueError, match="seconds"):
        cheapest_tier(bad, [A, B])


# ----- kv_transfer_time ------------------------------------------------------------------------

def test_kv_transfer_time_by_hand():
    # Llama-3-70B: 80 layers x 2 (K, V) x 8 KV heads x 128 x 2 B = 327,680 B per token
    per_token = 80 * 2 * 8 * 128 * 2
    assert LLAMA.kv_bytes_per_token(2) == per_token
    assert kv_transfer_time(LLAMA, 4096, 400e9) == pytest.approx(4096 * per_token / 400e9)
    assert kv_transfer_time(LLAMA, 4096, 400e9, kv_bytes=1) == pytest.approx(
        4096 * per_token / 2 / 400e9)


@pytest.mark.parametrize("args", [(0, 1e9), (-1, 1e9), (4096, 0.0), (4096, -1e9)])
def test_kv_transfer_time_rejects_bad_input(args):
    with pytest.raises(ValueError):
        kv_transfer_time(LLAMA, *args)


# ----- prices ----------------------------------------------------------------------------------

def test_kv_bytes_from_price_step_by_hand():
    # the episode's N_act / (300 S): 100e9 / (300 x 200e3) = 1,667 B per token
    assert kv_bytes_from_price_step(100e9, 200e3, 600) == pytest.approx(100e9 / (300 * 200e3))
    assert kv_bytes_from_price_step(100e9, 200e3, 600) == pytest.approx(1666.667, rel=1e-6)
    np.testing.assert_allclose(kv_bytes_from_price_step(100e9, np.array([1e5, 2e5]), 600),
                               [2e11 / 6e7, 2e11 / 1.2e8])


@pytest.mark.parametrize("args", [(0, 2e5, 600), (1e11, 0, 600), (1e11, 2e5, 0), (1e11, 2e5, -1)])
def test_kv_bytes_from_price_step_rejects_bad_input(args):
    with pytest.raises(ValueError):
        kv_bytes_from_price_step(*args)


def test_price_sheet_ratios():
    sheet = PriceSheet("m", input=2.0, output=12.0, cached_input=0.2)
    assert sheet.output_to_input == pytest.approx(6.0)
    assert sheet.cached_to_input == pytest.approx(0.1)
    assert PriceSheet("n", input=1.0, output=4.0).cached_to_input is None


def test_price_sheets_catalogue():
    by_name = {p.model: p for p in PRICE_SHEETS}
    opus = by_name["Claude Opus (4.x)"]
    assert (opus.input, opus.output, opus.cached_input, opus.cache_write) == (5.0, 25.0, 0.50, 6.25)
    assert opus.output_to_input == pytest.approx(5.0)
    gemini = by_name["Gemini 3.1 Pro"]
    assert (gemini.long_context == 200_000
            and gemini.long_output / gemini.output == pytest.approx(1.5))
    for p in PRICE_SHEETS:
        assert p.source and p.date
        assert 3 <= p.output_to_input <= 6
        assert p.cached_to_input == pytest.approx(0.1)


# ----- the edges and the wiring (issue 20: what the mutation run found untested) ---------------

def test_tier_from_chip_fills_every_field(small_chip):
    hbm = MemoryTier.from_chip(H100)
    assert (hbm.name, hbm.device) == ("HBM", "H100-SXM HBM (whole GPU rented)")
    assert (hbm.date, hbm.source, hbm.price_source) == (
        H100.price_date, H100.source, H100.price_source)
    assert MemoryTier.from_chip(small_chip, price_per_hour=1.0).date == ""  # no price date: empty
    with pytest.raises(ValueError, match="^price_per_hour: chip 'small' has no price; pass one "
                                         "in USD per hour$"):
        MemoryTier.from_chip(small_chip)


def test_amortised_price_default_lifetime_is_five_years():
    # five Julian years are 5 x 8766 = 43,830 hours: $43,830 is a dollar an hour
    assert amortised_price_per_hour(43_830.0) == pytest.approx(1.0, rel=1e-12)


def test_zero_bytes_or_zero_seconds_cost_nothing():
    dram = MEMORY_TIERS["DRAM"]
    assert cache_cost(0, 10.0, dram) == 0.0
    assert cache_cost(1e9, 0, dram) == pytest.approx(1e9 * dram.read_price, rel=1e-12)
    assert cache_hold_cost(0, 10.0, dram) == 0.0 and cache_hold_cost(1e9, 0, dram) == 0.0
    assert cache_fetch_time(0, dram) == 0.0


def test_cheapest_tier_of_one_lifetime_is_a_name():
    assert type(cheapest_tier(1.0)) is str
    assert cheapest_tier(1.0) == cheapest_tier(np.array([1.0]))[0]


def test_tier_crossover_at_equal_prices():
    a = MEMORY_TIERS["DRAM"]
    same = MemoryTier(name="copy", capacity=a.capacity, bandwidth=a.bandwidth,
                      price_per_hour=a.price_per_hour)
    assert tier_crossover(a, same) == float("inf")  # no cheaper to hold: never wins
    # half the hold price at the same read price: cheaper on both counts from the start
    half = MemoryTier(name="half", capacity=2 * a.capacity, bandwidth=a.bandwidth,
                      price_per_hour=a.price_per_hour)
    assert half.read_price == a.read_price and half.hold_price == a.hold_price / 2
    assert tier_crossover(a, half) == 0.0


@pytest.mark.parametrize("call, name", [
    (lambda: amortised_price_per_hour(0), "purchase_price"),
    (lambda: amortised_price_per_hour(100, 0), "lifetime_years"),
    (lambda: cache_cost(-1, 1, MEMORY_TIERS["DRAM"]), "nbytes"),
    (lambda: cache_cost(1, -1, MEMORY_TIERS["DRAM"]), "seconds"),
    (lambda: cache_hold_cost(-1, 1, MEMORY_TIERS["DRAM"]), "nbytes"),
    (lambda: cache_hold_cost(1, -1, MEMORY_TIERS["DRAM"]), "seconds"),
    (lambda: cache_fetch_time(-1, MEMORY_TIERS["DRAM"]), "nbytes"),
    (lambda: cheapest_tier(0), "seconds"),
    (lambda: kv_transfer_time(models.get("Llama-3-8B"), 0, 1e9), "prompt"),
    (lambda: kv_transfer_time(models.get("Llama-3-8B"), 10**7, 1e9), "prompt"),
    (lambda: kv_transfer_time(models.get("Llama-3-8B"), 100, 0), "bandwidth"),
    (lambda: MemoryTier(name="x", capacity=0, bandwidth=1, price_per_hour=1), "capacity"),
    (lambda: MemoryTier(name="x", capacity=1, bandwidth=0, price_per_hour=1), "bandwidth"),
    (lambda: MemoryTier(name="x", capacity=1, bandwidth=1, price_per_hour=0), "price_per_hour"),
])
def test_bad_input_names_its_argument(call, name):
    with pytest.raises(ValueError, match=f"^{name}"):
        call()

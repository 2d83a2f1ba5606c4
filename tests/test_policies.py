"""The one-rule-each policies that figures, explorers and tests share (issue 12)."""

import pytest

from llmmath import chips, models
from llmmath.chips import Chip
from llmmath.cost import ASSUMED_PRICE_PER_CHIP_HOUR, chip_hour_price
from llmmath.roofline import fits_in_memory, memory_held, min_chips


def test_resolve_dtype_keeps_a_listed_format():
    assert chips.get("H100-SXM").resolve_dtype("fp8") == ("fp8", "")


def test_resolve_dtype_falls_back_to_the_widest_listed_format():
    only_int8_fp4 = Chip(name="toy", flops={"fp4": 4e15, "int8": 2e15}, hbm_bandwidth=1e12,
                         hbm_capacity=1e10)
    used, note = only_int8_fp4.resolve_dtype("bf16")
    assert used == "int8"  # int8 comes before fp4 in the preference order
    assert "toy" in note and "bf16" in note and "int8" in note


def test_cap_context_caps_at_the_window_and_says_so():
    llama = models.get("Llama-3-70B")
    assert llama.cap_context(1000) == (1000.0, "")
    ctx, note = llama.cap_context(10 * llama.max_context)
    assert ctx == llama.max_context and "capped" in note


def test_chip_hour_price_order_caller_then_catalogue_then_assumed(small_chip):
    h100 = chips.get("H100-SXM")
    assert chip_hour_price(h100, 7.5) == (7.5, "")
    assert chip_hour_price(h100) == (h100.price_per_hour, "")
    price, note = chip_hour_price(small_chip)  # a chip with no price
    assert price == ASSUMED_PRICE_PER_CHIP_HOUR and "assumed" in note


def test_memory_held_by_hand():
    # Llama 3 70B: 70.55e9 weights x 1 B + 3 sequences x 1000 tokens x 80 layers x 2 x 8 x 128 x 1 B
    llama = models.get("Llama-3-70B")
    expected = llama.total_params * 1 + 3 * 1000 * 80 * 2 * 8 * 128 * 1
    assert memory_held(llama, 3, 1000, weight_bytes=1, kv_bytes=1) == pytest.approx(
        expected, rel=1e-12)


def test_fits_in_memory_edges():
    llama = models.get("Llama-3-70B")
    h100 = chips.get("H100-SXM")  # 80 GB
    assert not fits_in_memory(llama, h100, 1, 1000)  # 141 GB of bf16 weights on one chip
    assert fits_in_memory(llama, h100, 1, 1000, n_chips=2)
    n = min_chips(llama, h100, batch=64, context=8192)
    assert fits_in_memory(llama, h100, 64, 8192, n_chips=n)
    assert not fits_in_memory(llama, h100, 64, 8192, n_chips=n - 1)

"""Tests of llmmath.cost: throughput, cost per token, the latency-cost frontier,
input vs output cost."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import chips, models
from llmmath.chips import Chip
from llmmath.cost import (
    Frontier,
    chip_seconds_per_token,
    cost_per_million_tokens,
    cost_per_token,
    input_output_cost,
    latency_cost_frontier,
    tokens_per_second,
    tokens_per_second_per_chip,
)
from llmmath.models import Model
from llmmath.roofline import decode_step, max_batch, prefill_step

H100 = chips.get("H100-SXM")
LLAMA = models.get("Llama-3-70B")
DSV3 = models.get("DeepSeek-V3")
TOY_MOE = Model(name="toy-moe", n_layers=8, d_model=1024, d_ff=4096, n_heads=8, n_kv_heads=2,
                vocab_size=1000, n_experts=64, experts_per_token=4, d_ff_expert=512)
NO_PRICE = Chip(name="unpriced", flops={"bf16": 1e15}, hbm_bandwidth=2e12, hbm_capacity=1e12)


def test_throughput_and_chip_seconds():
    s = decode_step(LLAMA, H100, 128, 4096, n_chips=8)
    assert tokens_per_second(s) == pytest.approx(128 / s.time)
    assert tokens_per_second_per_chip(s) == pytest.approx(128 / s.time / 8)
    assert chip_seconds_per_token(s) == pytest.approx(8 * s.time / 128)
    p = prefill_step(LLAMA, H100, 2, 1000, n_chips=8)
    assert tokens_per_second(p) == pytest.approx(2000 / p.time)


def test_cost_per_token_uses_chip_price_or_given_price():
    s = decode_step(LLAMA, H100, 128, 4096, n_chips=8)
    expected = 8 * s.time * H100.price_per_hour / 3600 / 128
    assert cost_per_token(s) == pytest.approx(expected)
    assert cost_per_token(s, price_per_chip_hour=2.0) == pytest.approx(8 * s.time * 2 / 3600 / 128)
    assert cost_per_million_tokens(s) == pytest.approx(1e6 * expected)


def test_cost_needs_a_price():
    s = decode_step(LLAMA, NO_PRICE, 8, 100)
    with pytest.raises(ValueError, match="price_per_chip_hour"):
        cost_per_token(s)
    assert cost_per_token(s, price_per_chip_hour=1.0) > 0
    with pytest.raises(ValueError, match="price_per_chip_hour"):
        cost_per_token(s, price_per_chip_hour=-1.0)


def test_cost_broadcasts():
    s = decode_step(LLAMA, H100, np.array([1, 10, 100]), 1024, n_chips=8)
    c = cost_per_million_tokens(s)
    assert c.shape == (3,) and np.all(np.diff(c) < 0)


def test_unbatched_serving_is_orders_of_magnitude_dearer():
    # Episode: unbatched serving can cost "a thousand times" more than batched
    # (order of magnitude check).
    one = cost_per_token(decode_step(DSV3, H100, 1, 0, n_chips=64))
    big = cost_per_token(decode_step(DSV3, H100, 4096, 0, n_chips=64))
    assert one / big > 100


def test_frontier():
    batches = np.array([1, 8, 64, 512, 4096])
    f = latency_cost_frontier(LLAMA, H100, batches, 4096, n_chips=8)
    assert isinstance(f, Frontier)
    for name in ("batch", "step_time", "tokens_per_second_per_user", "tokens_per_second",
                 "cost_per_million_tokens", "bound", "fits"):
        assert np.shape(getattr(f, name)) == (5,), name
    assert np.allclose(f.tokens_per_second_per_user, 1 / f.step_time)
    assert np.allclose(f.tokens_per_second, batches / f.step_time)
    assert np.all(np.diff(f.cost_per_million_tokens) <= 0)
    assert np.all(np.diff(f.tokens_per_second_per_user) <= 0)
    limit = max_batch(LLAMA, H100, 4096, n_chips=8)
    assert np.array_equal(f.fits, batches <= limit)
    single = latency_cost_frontier(LLAMA, H100, 16, 4096, n_chips=8)
    assert single.batch.shape == (1,)


def test_input_output_cost_output_dearer():
    # Episode §1.6: output tokens cost 3-5x input; decode is memory-bound, prefill compute-bound.
    r = input_output_cost(LLAMA, H100, prompt=4096, batch=64, context=4096, n_chips=8)
    assert r.prefill.bound == "compute" and r.decode.bound == "memory"
    assert r.output_per_million > r.input_per_million
    assert r.output_to_input == pytest.approx(r.output_per_million / r.input_per_million)
    assert r.input_per_million == pytest.approx(cost_per_million_tokens(r.prefill))




@settings(max_examples=200, deadline=None)
@given(m=st.sampled_from([LLAMA, DSV3, TOY_MOE]), b1=st.floats(1, 1e5), b2=st.floats(1, 1e5),
       s=st.integers(0, 8192), overlap=st.sampled_from(["step", "per-op"]))
def test_cost_per_token_never_rises_with_batch(m, b1, b2, s, overlap):
    # Holds for MoE too: expected distinct experts touched, E(1-(1-k/E)^B), is concave in B with a
    # positive intercept (the shared weights), so weights read per token never rise with the batch.
    # (Until the memory limit: beyond it the configuration does not fit at all.)
    lo, hi = sorted((b1, b2))
    c_lo = cost_per_token(decode_step(m, H100, lo, s, overlap=overlap))
    c_hi = cost_per_token(decode_step(m, H100, hi, s, overlap=overlap))
    assert c_hi <= c_lo * (1 + 1e-9)


def test_price_step_context_by_hand():
    from llmmath.cost import kv_to_compute_ratio, price_step_context

    # 2 x 100e9 / (1667 B x 600 FLOP/byte) = 2e11 / 1.0002e6 = 199,960 tokens
    s = price_step_context(100e9, 1667, 600)
    assert abs(s - 199_960.0) < 1.0
    assert abs(kv_to_compute_ratio(199_960.0, 100e9, 1667, 600) - 1.0) < 1e-6  # 199,960 is rounded
    assert abs(kv_to_compute_ratio(2 * s, 100e9, 1667, 600) - 2.0) < 1e-12

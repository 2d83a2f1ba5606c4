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
from llmmath.roofline import decode_step, max_batch, prefill_step

H100 = chips.get("H100-SXM")
LLAMA = models.get("Llama-3-70B")
DSV3 = models.get("DeepSeek-V3")
NO_PRICE = Chip(name="unpriced", flops={"bf16": 1e15}, hbm_bandwidth=2e12, hbm_capacity=1e12)


def test_throughput_and_chip_seconds(toy_chip):
    # By hand: Llama-3-8B has 32 x (4096 x 6144 + 4096^2 + 3 x 4096 x 14336) + 128,256 x 4096
    # = 7,504,658,432 matmul parameters (Meta's model card: 8.03e9 with the embedding table,
    # which is gathered, not read). Batch 128 at context 0 on 4 toy chips (1 PFLOP/s, 1 TB/s):
    # memory 2 x 7.5047e9 B / 4e12 B/s = 3.7523 ms against compute 128 x 2 x 7.5047e9 / 4e15
    # = 0.48 ms, so the step takes 3.7523 ms: 128 / 3.7523e-3 = 34,112 tokens/s, 8,528 per
    # chip, 4 x 3.7523e-3 / 128 = 1.1726e-4 chip-seconds per token.
    s = decode_step(models.get("Llama-3-8B"), toy_chip, 128, 0, n_chips=4)
    assert tokens_per_second(s) == pytest.approx(34_112, rel=1e-3)
    assert tokens_per_second_per_chip(s) == pytest.approx(8_528, rel=1e-3)
    assert chip_seconds_per_token(s) == pytest.approx(1.1726e-4, rel=1e-3)
    # Prefill of 2 x 1000 tokens on one toy chip is compute-bound: 2000 x 2 x 7.5047e9 / 1e15
    # = 30.02 ms (+ causal attention 4 x 4096 x 500 x 32 = 0.26e9 FLOP a token, 1.7%): about
    # 30.5 ms, 65,500 tokens/s.
    p = prefill_step(models.get("Llama-3-8B"), toy_chip, 2, 1000)
    assert tokens_per_second(p) == pytest.approx(2000 / 30.53e-3, rel=0.01)


def test_cost_per_token_uses_chip_price_or_given_price(toy_chip):
    # The step above at $2/chip-hour: 1.1726e-4 chip-s x 2 / 3600 = 6.514e-8 $/token,
    # $0.06514 per million; the H100's catalogue price p gives 1.1726e-4 x p / 3600.
    s = decode_step(models.get("Llama-3-8B"), toy_chip, 128, 0, n_chips=4)
    assert cost_per_token(s, price_per_chip_hour=2.0) == pytest.approx(6.514e-8, rel=1e-3)
    assert cost_per_million_tokens(s, price_per_chip_hour=2.0) == pytest.approx(0.06514, rel=1e-3)
    h = decode_step(models.get("Llama-3-8B"), H100, 128, 0, n_chips=4)
    # on H100s (3.35 TB/s each): 15.009e9 / 13.4e12 = 1.1201 ms a step, 4 x 1.1201e-3 / 128
    # = 3.500e-5 chip-s per token
    assert cost_per_token(h) == pytest.approx(3.500e-5 * H100.price_per_hour / 3600, rel=2e-3)
    assert cost_per_million_tokens(h) == pytest.approx(35.0 * H100.price_per_hour / 3600,
                                                        rel=2e-3)


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
@given(name=st.sampled_from(["LLAMA", "DSV3", "toy_moe"]), b1=st.floats(1, 1e5),
       b2=st.floats(1, 1e5), s=st.integers(0, 8192), overlap=st.sampled_from(["step", "per-op"]))
def test_cost_per_token_never_rises_with_batch(toy_moe, name, b1, b2, s, overlap):
    # Holds for MoE too: expected distinct experts touched, E(1-(1-k/E)^B), is concave in B with a
    # positive intercept (the shared weights), so weights read per token never rise with the batch.
    # (Until the memory limit: beyond it the configuration does not fit at all.)
    m = {"LLAMA": LLAMA, "DSV3": DSV3, "toy_moe": toy_moe}[name]
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


# ----- by hand, to the last digit the arithmetic allows (the mutation run, issue 20) ----------
# Llama-3-8B on the toy chip (1 PFLOP/s, 1 TB/s): per token 2 x 7,504,658,432 matmul FLOP plus
# 4 x 4096 x S x 32 attention FLOP; a step reads 2 x (7,504,924,672 + 4096 B) bytes of weights
# (matmul weights, 65 norm scales of 4096, B embedding rows) and B x S x 131,072 of KV.
L8 = models.get("Llama-3-8B")


def _toy_l8_step(batch, context):
    """(compute s, memory s) of the step above, worked from the model card's figures."""
    compute = batch * (2 * 7_504_658_432 + 4 * 4096 * context * 32) / 1e15
    memory = (2 * (7_504_924_672 + 4096 * batch) + batch * context * 131_072) / 1e12
    return compute, memory


def test_chunked_prefill_tokens_by_hand(toy_chip):
    # batch 8 at 128 tokens: compute 120.611 us, memory 15.1441 ms; the idle FLOPs hold
    # (15.1441e-3 / 120.611e-6 - 1) x 8 = 996.49 prompt tokens
    c, m = _toy_l8_step(8, 128)
    got = cost_chunked(L8, toy_chip, 8, 128)
    assert got == pytest.approx((m / c - 1) * 8, rel=1e-9)
    assert got == pytest.approx(996.4909, rel=1e-6)
    # compute-bound (batch 4000 at context 0: 60.04 ms of compute, 15.04 ms of reads): none
    assert cost_chunked(L8, toy_chip, 4000, 0) == 0.0
    # int8 KV halves the KV read: (15.0099e-3 + 8 x 128 x 65,536e-12) / c - 1, x 8
    m8 = (2 * (7_504_924_672 + 4096 * 8) + 8 * 128 * 65_536) / 1e12
    assert cost_chunked(L8, toy_chip, 8, 128, kv_bytes=1) == pytest.approx((m8 / c - 1) * 8,
                                                                            rel=1e-9)
    # two chips halve both times: the ratio, and so the tokens, stay
    assert cost_chunked(L8, toy_chip, 8, 128, n_chips=2) == pytest.approx(996.4909, rel=1e-6)


def test_chunked_prefill_tokens_per_op_counts_each_kernels_idle_flops(toy_chip):
    # per-op overlap: the matmul kernels' idle time holds the chunk's matmuls, the attention
    # kernel's its attention. Batch 8 at 128 tokens: matmuls 8 x 2 x 7,504,658,432 / 1e15 =
    # 120.0745 us against weights 2 x (7,504,924,672 + 8 x 4096) / 1e12 = 15.00991 ms: room for
    # (15.00991e-3 / 120.0745e-6 - 1) x 8 = 992.04 tokens; attention 8 x 4 x 4096 x 128 x 32
    # / 1e15 = 0.537 us against KV reads 8 x 128 x 131,072 / 1e12 = 134.2 us: room for 1,992.
    # The matmuls bind: 992.04 (the whole-step 996.49 pools all the slack).
    got = cost_chunked(L8, toy_chip, 8, 128, overlap="per-op")
    assert got == pytest.approx(992.0398, rel=1e-6)
    assert got < cost_chunked(L8, toy_chip, 8, 128, overlap="step")
    # matmuls compute-bound (batch 4000: 60.04 ms of matmul against 15.04 ms of weights): none
    assert cost_chunked(L8, toy_chip, 4000, 0, overlap="per-op") == 0.0
    # the attention kernel can bind instead: an MHA rebuild (32 KV heads of 128, 32 layers) at
    # 1 byte per KV element reads 2 x 32 x 32 x 128 = 262,144 B and does 4 x 32 x 32 x 128 =
    # 524,288 FLOP per cached token: on the toy chip the KV reads take 262,144 / 1e12 over
    # 524,288 / 1e15 = 500 times the attention, so at batch 1 the attention kernel has room for
    # (500 - 1) x 1 = 499 tokens, fewer than the matmuls' (about 1,000 - 1)
    mha = L8.replace(n_kv_heads=32)
    assert cost_chunked(mha, toy_chip, 1, 4096, kv_bytes=1, overlap="per-op") == pytest.approx(
        499.0, rel=1e-9)
    assert cost_chunked(mha, toy_chip, 1, 4096, kv_bytes=1) > 900  # whole step pools the slack
    with pytest.raises(ValueError, match="^overlap"):
        cost_chunked(L8, toy_chip, 8, 128, overlap="whole")


def cost_chunked(*args, **kw):
    from llmmath.cost import chunked_prefill_tokens
    return chunked_prefill_tokens(*args, **kw)


def test_cost_per_million_tokens_is_exactly_a_million_tokens(toy_chip):
    # batch 64 at context 0 on one toy chip at $3.6/chip-hour (a millionth of a dollar per
    # chip-second): memory-bound, 2 x (7,504,924,672 + 262,144) / 1e12 = 15.010373632 ms a step;
    # 15.010373632e-3 / 64 chip-s a token = $2.3453709e-10; a million tokens $2.3453709e-4
    s = decode_step(L8, toy_chip, 64, 0)
    per_token = 15.010373632e-3 / 64 * 3.6 / 3600
    assert cost_per_token(s, price_per_chip_hour=3.6) == pytest.approx(per_token, rel=1e-12)
    assert cost_per_million_tokens(s, price_per_chip_hour=3.6) == pytest.approx(
        1e6 * per_token, rel=1e-12)


def test_chip_hour_price_rules(toy_chip):
    from llmmath.cost import ASSUMED_PRICE_PER_CHIP_HOUR, chip_hour_price

    assert chip_hour_price(toy_chip, 2.5) == (2.5, "")  # the caller's price first
    assert chip_hour_price(H100, 2.5) == (2.5, "")
    assert chip_hour_price(H100) == (H100.price_per_hour, "")  # then the catalogue's
    assert isinstance(chip_hour_price(H100)[0], float)
    price, note = chip_hour_price(toy_chip)  # then the assumption, said so
    assert price == ASSUMED_PRICE_PER_CHIP_HOUR
    assert note == f"assumed ${ASSUMED_PRICE_PER_CHIP_HOUR:g}/chip-h"
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="^price_per_chip_hour"):
            chip_hour_price(H100, bad)


def test_fast_mode_by_hand(toy_chip):
    from llmmath.cost import fast_mode

    # Context 50: compute 15.035531264 us a sequence; memory 15.009849344 ms + 6.561792 us a
    # sequence. Batch 4000 is compute-bound: t0 = 60.142125056 ms; batch 1 is memory-bound:
    # t1 = 15.016411136 ms; max speed-up t0 / t1 = 4.00510.
    c0, m0 = _toy_l8_step(4000, 50)
    t0 = max(c0, m0)
    t1 = max(_toy_l8_step(1, 50))
    assert t0 == pytest.approx(60.142125056e-3, rel=1e-12)
    f = fast_mode(L8, toy_chip, 4000, 3.0, 50)
    assert (f.batch, f.speedup) == (4000, 3.0)
    assert f.max_speedup == pytest.approx(t0 / t1, rel=1e-12)
    # 3x faster: t = 20.047375 ms, which the memory line reaches at
    # B = (20.047375e-3 - 15.009849344e-3) / 6.561792e-6 = 767.71 (compute there: 11.5 ms)
    bf = (t0 / 3 - 15.009849344e-3) / 6.561792e-6
    assert f.fast_batch == pytest.approx(bf, rel=1e-9)
    assert f.fast_batch == pytest.approx(767.706, rel=1e-5)
    # cost per token (t / B) at the fast batch over at 4000: (4000 / 767.71) / 3 = 1.7368
    assert f.price_ratio == pytest.approx((4000 / bf) / 3, rel=1e-9)
    # 2x faster stays compute-bound (B = 2000 > the critical 1771): the same price
    g = fast_mode(L8, toy_chip, 4000, 2.0, 50)
    assert g.fast_batch == pytest.approx(2000, rel=1e-9) and g.price_ratio == pytest.approx(1.0)
    # exactly the largest speed-up is batch 1; past it, or below 1x, there is no fast batch
    top = fast_mode(L8, toy_chip, 4000, t0 / t1, 50)
    assert top.fast_batch == pytest.approx(1.0, rel=1e-9)
    for s in (t0 / t1 * 1.001, 0.999):
        none = fast_mode(L8, toy_chip, 4000, s, 50)
        assert np.isnan(none.fast_batch) and np.isnan(none.price_ratio)
        assert none.batch == 4000 and none.speedup == s
        assert none.max_speedup == pytest.approx(t0 / t1, rel=1e-12)
    assert fast_mode(L8, toy_chip, 4000, 1.0, 50).fast_batch == pytest.approx(4000, rel=1e-9)


# ----- every argument reaches the step it describes (a dropped keyword changes some number) ----

def _same_step(a, b):
    for name in ("matmul_time", "attention_time", "compute_time", "weight_time", "kv_time",
                 "memory_time", "time", "tokens", "n_chips"):
        assert np.array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name))), name


def test_input_output_cost_passes_every_argument_on():
    kw = dict(n_chips=2, weight_bytes=1, kv_bytes=1, dtype="fp8", compute_efficiency=0.5,
              memory_efficiency=0.8)
    r = input_output_cost(LLAMA, H100, 2048, 64, 4096, price_per_chip_hour=3.6, prefill_batch=3,
                          **kw)
    pre, dec = prefill_step(LLAMA, H100, 3, 2048, **kw), decode_step(LLAMA, H100, 64, 4096, **kw)
    _same_step(r.prefill, pre)
    _same_step(r.decode, dec)
    # $3.6 a chip-hour is $1e-3 a chip-second: a million tokens cost 1e6 x 2 x t / T x 1e-3
    assert r.input_per_million == pytest.approx(1e3 * 2 * pre.time / (3 * 2048), rel=1e-12)
    assert r.output_per_million == pytest.approx(1e3 * 2 * dec.time / 64, rel=1e-12)
    assert r.output_to_input == pytest.approx(r.output_per_million / r.input_per_million,
                                              rel=1e-12)
    # the defaults: one chip, bf16 weights and cache, one prompt, the chip's own price
    d = input_output_cost(LLAMA, H100, 2048, 64, 4096)
    _same_step(d.prefill, prefill_step(LLAMA, H100, 1, 2048))
    _same_step(d.decode, decode_step(LLAMA, H100, 64, 4096))
    assert d.input_per_million == pytest.approx(
        1e6 * d.prefill.time / 2048 * H100.price_per_hour / 3600, rel=1e-12)
    with pytest.raises(ValueError, match="^prefill_batch"):
        input_output_cost(LLAMA, H100, 2048, 64, 4096, prefill_batch=0)


def test_latency_cost_frontier_passes_every_argument_on():
    kw = dict(n_chips=8, weight_bytes=1, kv_bytes=1, dtype="fp8", overlap="per-op",
              compute_efficiency=0.5, memory_efficiency=0.8)
    batches = np.array([1.0, 64.0, 512.0])
    f = latency_cost_frontier(LLAMA, H100, batches, 4096, price_per_chip_hour=3.6,
                              memory_fraction=0.9, **kw)
    s = decode_step(LLAMA, H100, batches, 4096, **kw)
    assert np.array_equal(f.step_time, s.time)
    assert np.allclose(f.cost_per_million_tokens, 1e3 * 8 * s.time / batches, rtol=1e-12)
    # fits: 70.55e9 weights at 1 B and 512 caches of 4096 x 327,680 B / 2 (fp8) = 414.2 GB
    # against 8 x 80 x 0.9 = 576 GB: all fit; in bf16 (141.1 + 687.2 GB) the 512 do not
    assert list(f.fits) == [True, True, True]
    g = latency_cost_frontier(LLAMA, H100, batches, 4096, n_chips=8, memory_fraction=0.9)
    assert list(g.fits) == [True, True, False]
    # the defaults and a context of 0 (an empty cache) are allowed
    d = latency_cost_frontier(LLAMA, H100, [64], 0, n_chips=8)
    assert d.step_time[0] == decode_step(LLAMA, H100, 64, 0, n_chips=8).time
    for bad, name in (([0], "batches"), (-1, "context")):
        with pytest.raises(ValueError, match=f"^{name}"):
            latency_cost_frontier(LLAMA, H100, *((bad, 4096) if name == "batches" else ([1], bad)))


def test_price_per_chip_second_messages():
    from types import SimpleNamespace

    from llmmath.cost import price_per_chip_second
    msg = ("^price_per_chip_hour: got None and chip {!r} has no price_per_hour; pass a price in "
           "USD per chip-hour$")
    with pytest.raises(ValueError, match=msg.format("unpriced")):
        price_per_chip_second(NO_PRICE)
    with pytest.raises(ValueError, match=msg.format("?").replace("?", r"\?")):
        price_per_chip_second(None)
    with pytest.raises(ValueError, match=msg.format("bare")):
        price_per_chip_second(SimpleNamespace(name="bare"))  # no price_per_hour attribute
    with pytest.raises(ValueError, match="^price_per_chip_hour"):
        price_per_chip_second(H100, 0)
    assert price_per_chip_second(None, 7.2) == 0.002


def test_kv_to_compute_ratio_of_whole_numbers_does_not_overflow():
    from llmmath.cost import kv_to_compute_ratio

    # 1e13 tokens x 1e6 B x 1e3 FLOP/B / (2 x 1e9) = 5e12: the product (1e22) is past int64
    assert kv_to_compute_ratio(np.array([10**13]), 10**9, 10**6, 10**3)[0] == pytest.approx(
        5e12, rel=1e-12)


def test_fast_mode_with_fp8_weights_and_cache_by_hand(toy_chip):
    from llmmath.cost import fast_mode

    # fp8 weights and cache, context 50: memory 7.504924672 ms + 3.280896 us a sequence
    # (4096 B of embedding row, 50 x 65,536 B of cache); compute 15.035531264 us a sequence.
    # Batch 4000 is compute-bound (60.142 ms), batch 1 takes 7.508205568 ms: up to 8.01x.
    t0, t1 = 4000 * 15.035531264e-6, 7.504924672e-3 + 3.280896e-6
    f = fast_mode(L8, toy_chip, 4000, 7.0, 50, weight_bytes=1, kv_bytes=1)
    assert f.max_speedup == pytest.approx(t0 / t1, rel=1e-12)
    # 7x faster: t = 8.5917 ms, on the memory line at B = (8.5917 - 7.5049) ms / 3.2809 us
    # = 331.26 (compute there 4.98 ms)
    bf = (t0 / 7 - 7.504924672e-3) / 3.280896e-6
    assert f.fast_batch == pytest.approx(bf, rel=1e-9)
    # a fast batch below e (the bisection runs in log B from B = 1): 1.5 sequences
    target = 7.504924672e-3 + 1.5 * 3.280896e-6
    assert fast_mode(L8, toy_chip, 4000, t0 / target, 50, weight_bytes=1,
                     kv_bytes=1).fast_batch == pytest.approx(1.5, rel=1e-9)
    # within the 1e-12 slack above the largest speed-up: batch 1, not an error
    top = fast_mode(L8, toy_chip, 4000, t0 / t1 * (1 + 5e-13), 50, weight_bytes=1, kv_bytes=1)
    assert top.fast_batch == 1.0
    # a context of 0 is allowed
    assert fast_mode(L8, toy_chip, 4000, 2.0, 0).fast_batch == pytest.approx(2000, rel=1e-9)
    for bad, name in ((dict(batch=0), "batch"), (dict(speedup=0), "speedup"),
                      (dict(context=-1), "context"), (dict(weight_bytes=0), "weight_bytes"),
                      (dict(kv_bytes=0), "kv_bytes")):
        args = dict(model=L8, chip=toy_chip, batch=4000, speedup=2.0, context=50)
        with pytest.raises(ValueError, match=f"^{name}"):
            fast_mode(**{**args, **bad})

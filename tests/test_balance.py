"""llmmath.balance where the balance is piecewise (windows), by hand, and its messages (issue 20).

The toy chip (``toy_chip`` in tests/conftest.py) does 1 PFLOP/s in bf16 and reads 1 TB/s.
gpt-oss-120b (OpenAI's model card and config): 36 layers, 18 of them with a 128-token window,
8 KV heads of 64 (1024 K and V elements per token per layer), 64 query heads of 64
(4 x 64 x 64 = 16,384 attention FLOP per cached token per layer), 5,132,636,928 matmul
parameters active per token (2 x that = 10,265,273,856 FLOP, 10.265273856 us on the toy chip).
"""

import warnings

import numpy as np
import pytest

from llmmath import chips, models
from llmmath.balance import (
    critical_batch,
    critical_context,
    decode_balance,
    implied_kv_bytes_per_token,
)
from llmmath.chips import Chip

GPT_OSS = models.get("gpt-oss-120b")
L8 = models.get("Llama-3-8B")
MM = 10.265273856e-6  # gpt-oss' matmul seconds per token on the toy chip


def test_critical_context_inside_the_window_by_hand(toy_chip):
    # fp32 KV (4 B): below the window all 36 layers read S x 4096 B, 147.456 ns a token:
    # S* = 10.265273856 us / 147.456 ns = 69.6159, inside the window
    assert critical_context(GPT_OSS, toy_chip, kv_bytes=4, attention_flops=False) == pytest.approx(
        MM / 147.456e-9, rel=1e-12)
    # attention adds 36 x 16,384 FLOP a cached token (0.589824 ns):
    # S* = 10.265273856 us / (147.456 - 0.589824) ns = 69.8955
    assert critical_context(GPT_OSS, toy_chip, kv_bytes=4) == pytest.approx(
        MM / (147.456e-9 - 0.589824e-9), rel=1e-12)
    assert critical_context(GPT_OSS, toy_chip, kv_bytes=4) == pytest.approx(69.8955, rel=1e-5)


def test_critical_context_past_the_window_by_hand(toy_chip):
    # bf16 KV: at 128 tokens the reads (36 x 128 x 2048 B = 9.437 us) are still below compute;
    # past it only the 18 global layers grow (18 x 2048 B = 36.864 ns a token) on top of the
    # windows' 18 x 128 x 2048 B (4.718592 us): S* = (10.265274 - 4.718592) / 0.036864
    # = 150.4634 tokens
    want = (MM - 4.718592e-6) / 36.864e-9
    assert critical_context(GPT_OSS, toy_chip, attention_flops=False) == pytest.approx(
        want, rel=1e-12)
    assert want == pytest.approx(150.4634, rel=1e-6)
    # with attention: past the window 18 x 16,384 FLOP a token (0.294912 ns) grow with S and
    # the windows' 18 x 128 x 16,384 FLOP (37.749 ns) are fixed: (10.265274 + 0.037749
    # - 4.718592) us / (36.864 - 0.294912) ns = 152.709 tokens
    want = (MM + 37.748736e-9 - 4.718592e-6) / (36.864e-9 - 0.294912e-9)
    assert critical_context(GPT_OSS, toy_chip) == pytest.approx(want, rel=1e-12)
    # one array of byte widths gives one root each, the same as one at a time
    both = critical_context(GPT_OSS, toy_chip, kv_bytes=np.array([2.0, 4.0]), attention_flops=False)
    assert both.shape == (2,)
    assert both == pytest.approx([(MM - 4.718592e-6) / 36.864e-9, MM / 147.456e-9], rel=1e-12)


def test_decode_balance_by_hand(toy_chip):
    # Llama-3-8B on the toy chip, per sequence at 50 tokens: reads 50 x 131,072 B = 6.5536 us,
    # computes (15,009,316,864 + 4 x 4096 x 50 x 32) FLOP = 15.035531 us: 0.435874
    assert decode_balance(L8, toy_chip, 50) == pytest.approx(6.5536e-6 / 15.035531264e-6, rel=1e-12)
    assert decode_balance(L8, toy_chip, 50, attention_flops=False) == pytest.approx(
        6.5536e-6 / 15.009316864e-6, rel=1e-12)
    assert decode_balance(L8, toy_chip, 50, kv_bytes=1) == pytest.approx(
        3.2768e-6 / 15.035531264e-6, rel=1e-12)
    assert decode_balance(L8, toy_chip, 0) == 0.0  # no cache yet: nothing to read


def test_critical_batch_without_attention_flops_by_hand(toy_chip):
    # At 50 tokens, attention's FLOPs left out: B* = 15.009849e-3 / (15.009317e-6 - 6.561792e-6)
    # (weights, norms and B embedding rows over the compute left after each sequence's reads)
    want = 2 * 7_504_924_672 / 1e12 / (15.009316864e-6 - 6.561792e-6)
    assert critical_batch(L8, toy_chip, context=50, attention_flops=False) == pytest.approx(
        want, rel=1e-9)
    assert critical_batch(L8, toy_chip, np.array([2.0]), context=50, attention_flops=False)[0] == \
        pytest.approx(want, rel=1e-9)


def test_no_critical_batch_names_the_critical_context(toy_chip):
    # 114.97 tokens is Llama-3-8B's critical context on the toy chip (test_values_physics)
    with pytest.raises(ValueError, match=r"^context: got 1000 tokens; at or beyond the critical "
                                         r"context of Llama-3-8B on toy \(115 tokens\) decode is "
                                         r"memory-bound at every batch, so there is no critical "
                                         r"batch$"):
        critical_batch(L8, toy_chip, context=1000)
    with pytest.raises(ValueError, match=r"\(115 tokens\)"):
        critical_batch(L8, toy_chip, np.array([2.0, 1.0]), context=1000)
    # fp8 KV: 15.009317 us / (65.536 - 0.524288) ns = 230.87 tokens; the message says so
    with pytest.raises(ValueError, match=r"\(231 tokens\)"):
        critical_batch(L8, toy_chip, context=1000, kv_bytes=1)


def test_no_critical_context_says_why(toy_chip):
    # attention that does more FLOPs per cached byte than the chip's ridge: a chip with a ridge
    # of 2 FLOP/B against Llama-3-8B's 4 x 4096 / (8 x 128 x 2 x 2 B) = 4 FLOP per byte
    slow = Chip(name="slow", flops={"bf16": 2e12}, hbm_bandwidth=1e12, hbm_capacity=100e9)
    with pytest.raises(ValueError, match="^model 'Llama-3-8B' on slow: attention does 4 FLOP "
                                         "per cached byte, at or above slow's 2 FLOP/byte at "
                                         "the arithmetic it runs in, so KV reads never outgrow "
                                         "compute; decode never becomes memory-bound at every "
                                         "batch, so there is no critical context$"):
        critical_context(L8, slow)
    # every layer windowed at 16 tokens: reads stop at 32 x 16 x 4096 B (2.1 us), below compute
    win = L8.replace(sliding_window=16, n_sliding_layers=32)
    with pytest.raises(ValueError, match=r"^model 'Llama-3-8B' on toy: its KV reads per step "
                                         r"are capped \(sliding window / sparse top-k\) below "
                                         r"the bytes that balance one token's compute; decode"):
        critical_context(win, toy_chip)
    with pytest.raises(ValueError, match="^overlap: got 'per-op'; under the per-operation bound "
                                         "the matmuls pair only with the weight reads, which a "
                                         "large enough batch amortises at every context, so "
                                         "there is no critical context"):
        critical_context(L8, toy_chip, overlap="per-op")


@pytest.mark.parametrize("call, name", [
    (lambda chip: critical_batch(L8, chip, context=-1), "context"),
    (lambda chip: critical_batch(L8, chip, np.array([2.0]), context=-1), "context"),
    (lambda chip: critical_batch(L8, chip, np.array([2.0]), overlap="none"), "overlap"),
    (lambda chip: critical_batch(L8, chip, weight_bytes=0), "weight_bytes"),
    (lambda chip: critical_batch(L8, chip, kv_bytes=0), "kv_bytes"),
    (lambda chip: critical_context(L8, chip, kv_bytes=0), "kv_bytes"),
    (lambda chip: critical_context(L8, chip, overlap="none"), "overlap"),
    (lambda chip: decode_balance(L8, chip, -1), "context"),
    (lambda chip: decode_balance(L8, chip, 10, kv_bytes=0), "kv_bytes"),
    (lambda chip: implied_kv_bytes_per_token(0, chip, 100), "active_params"),
    (lambda chip: implied_kv_bytes_per_token(1e9, chip, 0), "critical_context"),
])
def test_bad_input_names_its_argument(call, name, toy_chip):
    with pytest.raises(ValueError, match=f"^{name}"):
        call(toy_chip)


# Llama-3-8B (llama3_herd Table 3, config.json): 8,030,261,248 parameters; the matmuls use all but
# the input embedding (128,256 x 4,096 = 525,336,576) and the 65 RMSNorm gains of 4,096
# (266,240): 7,504,658,432. Its cache holds 32 layers x 8 KV heads x 128 x (K, V) x 2 B =
# 131,072 B a token. The edge chip does 7,504,658,432 FLOP/s in bf16 and twice that in fp8, and
# reads 100 tokens of that cache a second: at fp8 a token's matmuls (2 x 7,504,658,432 FLOP)
# take exactly as long (1 s) as reading 100 tokens of cache, so without attention FLOPs the
# critical context is exactly 100 tokens (200 at bf16).
L8_MATMUL = 7_504_658_432
EDGE = Chip(name="edge", flops={"bf16": float(L8_MATMUL), "fp8": 2.0 * L8_MATMUL},
            hbm_bandwidth=100 * 131_072.0, hbm_capacity=100e9)


@pytest.mark.parametrize("form", ["scalar", "array weight_bytes", "array context"])
def test_critical_batch_at_and_just_inside_the_critical_context_by_hand(form):
    assert L8.matmul_params_active == L8_MATMUL

    def call(context):
        wb, S = 1.0, context
        if form == "array weight_bytes":
            wb = np.array([1.0])
        elif form == "array context":
            S = np.array([context])
        return critical_batch(L8, EDGE, wb, dtype="fp8", context=S, attention_flops=False)

    # at 100 tokens compute and KV read tie: no batch makes the step compute-bound, and the
    # message names the critical context (at fp8, without attention FLOPs: 100 tokens)
    with pytest.raises(ValueError, match=r"^context: got 100 tokens; at or beyond the critical "
                                         r"context of Llama-3-8B on edge \(100 tokens\) decode is "
                                         r"memory-bound at every batch"):
        call(100.0)
    # 2^-20 tokens inside it each sequence leaves 2^-20 x 131,072 B = 1/8 byte of slack a step:
    # the 8,030,261,248 one-byte weights (all read at so large a batch) need 8 x that many
    # sequences (the slack is a difference of two times near 1 s: good to about 1e-8)
    got = call(100.0 - 2.0**-20)
    assert float(np.ravel(got)[0]) == pytest.approx(8 * 8_030_261_248, rel=1e-6)


def test_critical_context_where_the_reads_stop_exactly_at_the_balance():
    """Every layer's reads capped at 100 tokens, where (on the edge chip at fp8, no attention
    FLOPs) reading them takes exactly as long as a token's matmuls: the critical context is the
    cap itself, found with no numpy warning though the balance is flat beyond it; the same with
    a top-100 selection on half the layers and a 100-token window on the other half (a kink
    listed twice)."""
    windowed = L8.replace(sliding_window=100, n_sliding_layers=32)
    both = L8.replace(sliding_window=100, n_sliding_layers=16, sparse_attention_topk=100)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for model in (windowed, both):
            assert critical_context(model, EDGE, dtype="fp8", attention_flops=False) == 100.0


def test_a_flat_balance_raises_without_a_numpy_warning():
    """Attention at exactly the chip's FLOP per byte: Llama-3-8B's attention does
    4 x 32 heads x 128 = 16,384 FLOP per cached token and layer on 2 x 8 x 128 x 2 B = 4,096
    B, 4 FLOP/B, and this chip does 2^42 FLOP/s on 2^40 B/s. Each sequence's KV-read time then
    grows exactly as fast as its attention time and never overtakes the matmuls: no critical
    context, said by a ValueError and not by numpy's division warnings."""
    ridge4 = Chip(name="ridge4", flops={"bf16": 2.0**42}, hbm_bandwidth=2.0**40,
                  hbm_capacity=100e9)
    windowed = L8.replace(sliding_window=1000, n_sliding_layers=16)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for model in (L8, windowed):
            with pytest.raises(ValueError, match="attention does 4 FLOP per cached byte"):
                critical_context(model, ridge4)


def test_critical_context_between_two_caps_by_hand():
    # Llama-3-8B with 16 layers windowed at 50 tokens and the other 16 reading their top 200,
    # on the edge chip at fp8 without attention FLOPs: a token's matmuls take 1 s and a second
    # reads 100 tokens x 32 layers of cache. Between the caps the read span is 16 S + 16 x 50
    # token-layers, which reaches 3,200 at S = 150
    model = L8.replace(sliding_window=50, n_sliding_layers=16, sparse_attention_topk=200)
    assert critical_context(model, EDGE, dtype="fp8", attention_flops=False) == pytest.approx(
        150.0, rel=1e-12)


def test_per_op_critical_batch_at_no_context_is_the_whole_step_one():
    """With no context and no attention FLOPs there is nothing for attention to overlap: the
    matmul kernel's balance (per-op) is the whole step's. (Zeroing attention's seconds must
    not divide by them.)"""
    for name in ("Llama-3-70B", "DeepSeek-V3"):
        m, h100 = models.get(name), chips.get("H100-SXM")
        whole = critical_batch(m, h100, context=0, attention_flops=False)
        assert critical_batch(m, h100, context=0, attention_flops=False,
                              overlap="per-op") == whole
        # over an array of widths too, element by element within a few ulps
        widths = np.array([0.5, 1.0, 2.0])
        np.testing.assert_array_max_ulp(
            critical_batch(m, h100, widths, context=0, attention_flops=False, overlap="per-op"),
            [critical_batch(m, h100, float(w), context=0, attention_flops=False) for w in widths],
            maxulp=64)

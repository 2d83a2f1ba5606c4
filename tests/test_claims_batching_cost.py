"""The rules of thumb of chapter 4 ("Batching trades latency for token cost",
book/batching_cost.ipynb), asserted over the whole chip and model catalogues.

When a rule fails for some chip or model, the chapter's prose changes (its scope), not the test.

Sources: the episode (dwarkesh2026pope) for "B* ~ 300 x sparsity", "run 2-3x above it", "a step
every ~20 ms" (the HBM drain time); Leviathan et al. 2023 (leviathan2023fast), eq. 1, for the
expected tokens per speculative verification step; DeepSeek-V3 config (deepseek_v3) for 8 of 256
routed experts.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from claims import BF16_CHIPS, DENSE_GQA, each, from_scratch, glued, glued_number

from llmmath import chips, models
from llmmath.cost import chip_seconds_per_token, fast_mode, latency_cost_frontier
from llmmath.roofline import (
    critical_batch,
    critical_context,
    decode_step,
    max_batch,
    max_context,
    min_chips,
    serial_step,
    speculative_critical_batch,
    speculative_step,
    speculative_tokens_per_step,
)

CHIPS = chips.all_chips()
MODELS = models.all_models()
DENSE = [m for m in MODELS if not m.is_moe]
MOE = [m for m in MODELS if m.is_moe]
# Matching compute and weight formats: (dtype, bytes per weight).
FORMATS = [("bf16", 2.0), ("fp8", 1.0), ("int8", 1.0), ("fp4", 0.5)]
PAIRS = [(c, d, b) for c in CHIPS for d, b in FORMATS if d in c.flops]
PAIR_IDS = [f"{c.name}-{d}" for c, d, _ in PAIRS]


def _critical_context(model, chip, dtype):
    """S* with attention FLOPs, or inf where attention keeps decode compute-bound at any S."""
    try:
        return critical_context(model, chip, dtype=dtype)
    except ValueError:
        return math.inf


def _fmt(c):
    """The chip's widest format: bf16 when it has it (Rubin lists only fp4)."""
    for d, b in FORMATS:
        if d in c.flops:
            return d, b
    raise AssertionError(c.name)


# Claim: "cost per token never rises with batch, up to the memory limit" (every model, every chip,
# short and long context), with the chip count the model needs plus headroom.
@each("chip", CHIPS, ids=[c.name for c in CHIPS])
@each("model", MODELS, ids=[m.name for m in MODELS])
@each("context", [128, 4096])
def test_cost_per_token_non_increasing_up_to_max_batch(model, chip, context):
    context = min(context, model.max_context or context)
    d, b = _fmt(chip)
    n = 2 * min_chips(model, chip, weight_bytes=b)
    top = max_batch(model, chip, context, n_chips=n, weight_bytes=b, kv_bytes=2)
    assert top >= 1
    B = np.unique(np.round(np.logspace(0, math.log10(top), 60)))
    cost = chip_seconds_per_token(decode_step(model, chip, B, context, n_chips=n, weight_bytes=b,
                                              dtype=d))
    assert np.all(np.diff(cost) <= 1e-12 * cost[:-1]), (model.name, chip.name)
    # ... and the frontier trades speed for it: per-user speed never rises with batch.
    f = latency_cost_frontier(model, chip, B, context, n_chips=n, weight_bytes=b, dtype=d,
                              price_per_chip_hour=1.0)
    assert np.all(np.diff(f.tokens_per_second_per_user)
                  <= 1e-12 * f.tokens_per_second_per_user[:-1])


# Claim: "for a dense model B* = ridge point x b_w / 2" (context 0); the library's extra is the
# untied input-embedding rows a step gathers (< 2%).
@each("chip,dtype,b", PAIRS, ids=PAIR_IDS)
@each("model", DENSE, ids=[m.name for m in DENSE])
def test_dense_bstar_is_ridge_times_half_bytes(model, chip, dtype, b):
    star = critical_batch(model, chip, weight_bytes=b, dtype=dtype)
    simple = chip.ops_per_byte(dtype) * b / 2
    assert 1.0 <= star / simple <= 1.02, (model.name, chip.name, dtype, star, simple)


# Claim: "B* ~ ridge x b_w/2 x N_tot/N_act for MoE" once the batch touches every expert: within
# 15% (the library uses N_mm rather than N_act and the expected experts touched).
@each("chip,dtype,b", PAIRS, ids=PAIR_IDS)
@each("model", MOE, ids=[m.name for m in MOE])
def test_moe_bstar_is_300_times_sparsity(model, chip, dtype, b):
    star = critical_batch(model, chip, weight_bytes=b, dtype=dtype)
    simple = chip.ops_per_byte(dtype) * b / 2 * model.sparsity
    assert abs(star / simple - 1) <= 0.15, (model.name, chip.name, dtype, star, simple)


# Claim: "the episode's constant: C b_w / 2W stays within a factor of two of 300 on every chip"
# at matching compute and weight formats.
@each("chip,dtype,b", PAIRS, ids=PAIR_IDS)
def test_chip_constant_near_300(chip, dtype, b):
    const = chip.ops_per_byte(dtype) * b / 2
    if (chip.name, dtype) == ("TPU v4", "int8"):  # the exception the chapter names
        assert const == pytest.approx(275e12 / 1.2e12 / 2, rel=0.01)  # int8 peak = bf16 peak, 1 B
        assert const < 150
        return
    assert 300 / 2 <= const <= 300 * 2, (chip.name, dtype, const)


# Claim: "at B*, compute time equals memory time" (the definition, checked at several contexts).
@each("chip", CHIPS, ids=[c.name for c in CHIPS])
@each("model", MODELS, ids=[m.name for m in MODELS])
def test_at_bstar_compute_equals_memory(model, chip):
    d, b = _fmt(chip)
    for S in (0, 256):
        try:
            star = critical_batch(model, chip, weight_bytes=b, dtype=d, context=S)
        except ValueError:
            # Skipped only where S = 256 lies beyond the pair's critical context (KV reads
            # outgrow compute per sequence, so no batch balances the step): never at S = 0.
            assert S > 0, (model.name, chip.name)
            assert _critical_context(model, chip, d) <= S, (model.name, chip.name)
            continue
        s = decode_step(model, chip, star, S, weight_bytes=b, dtype=d)
        assert s.compute_time == pytest.approx(s.memory_time, rel=1e-6)
        if S:  # ... and where B* exists, S = 256 is short of the critical context
            assert _critical_context(model, chip, d) > S, (model.name, chip.name)


# Claim: "batch 1 costs about B* times the floor": for a dense model, at least 100x on every chip
# (no context); for an MoE model, at least 10x (batch 1 reads only k experts).
@each("chip", CHIPS, ids=[c.name for c in CHIPS])
@each("model", MODELS, ids=[m.name for m in MODELS])
def test_batch_one_is_far_costlier_than_bstar(model, chip):
    d, b = _fmt(chip)
    star = critical_batch(model, chip, weight_bytes=b, dtype=d)
    c1 = chip_seconds_per_token(decode_step(model, chip, 1, 0, weight_bytes=b, dtype=d))
    cs = chip_seconds_per_token(decode_step(model, chip, star, 0, weight_bytes=b, dtype=d))
    if model.is_moe:
        assert c1 / cs >= 10, (model.name, chip.name, c1 / cs)
    else:
        assert c1 / cs >= 100, (model.name, chip.name, c1 / cs)
        assert c1 / cs == pytest.approx(star, rel=0.02)


# Claim: "with no overlap a token costs at most twice the bound, about 2x at B*, 1.5x at 2B*,
# 1.33x at 3B*" (context 0: the weight term is B*/B of the compute floor).
@each("model", MODELS, ids=[m.name for m in MODELS])
def test_no_overlap_penalty_shrinks_above_bstar(model):
    chip = chips.get("H100-SXM")
    star = critical_batch(model, chip)
    floor = chip_seconds_per_token(decode_step(model, chip, star, 0))
    for mult, expect in ((1, 2.0), (2, 1.5), (3, 4 / 3)):
        s = decode_step(model, chip, mult * star, 0)
        assert serial_step(s).time <= 2 * s.time * (1 + 1e-12)
        ratio = chip_seconds_per_token(serial_step(s)) / floor
        assert ratio == pytest.approx(expect, rel=0.05), (model.name, mult, ratio)


# Claim: "the train leaves every drain time: 10 to 40 ms on every catalogue chip".
@each("chip", CHIPS, ids=[c.name for c in CHIPS])
def test_drain_time_tens_of_ms(chip):
    assert 0.010 <= chip.drain_time <= 0.040, (chip.name, chip.drain_time)


# Claim (flashcard 8): DeepSeek-V3 routes 8 of 256 experts, sparsity ~18, B* ~ 5,400 on an H100 in
# FP8 (not the card's 2,400).
def test_deepseek_v3_real_sparsity():
    ds = models.get("DeepSeek-V3")
    assert (ds.n_experts, ds.experts_per_token) == (256, 8)
    assert 17 <= ds.sparsity <= 19
    star = critical_batch(ds, chips.get("H100-SXM"), weight_bytes=1, dtype="fp8")
    # By hand (DeepSeek-V3 config, counted in test_claims_decode_roofline's critical context): at B*
    # every expert is touched, so a step reads all 670.10e9 matmul weights (attention 11.413e9,
    # dense MLPs 1.189e9, 58 x (257 x 3 x 7168 x 2048 + 7168 x 256) = 656.57e9, head 0.927e9)
    # at 1 B, and computes 2 x 36.625e9 FLOP a token: B* = 670.10e9 x 1978.9e12
    # / (2 x 36.625e9 x 3.35e12) = 5,404.
    assert star == pytest.approx(5404, rel=0.005)
    assert star > 2 * 2400


# Claim: "verifying gamma drafted tokens costs about one memory-bound step" (k below is gamma):
# while B (gamma+1) stays below B* the verify step takes the plain step's time (within 1%) for
# every model and chip.
@each("chip", CHIPS, ids=[c.name for c in CHIPS])
@each("model", DENSE, ids=[m.name for m in DENSE])
def test_speculative_verify_costs_one_memory_bound_step(model, chip):
    d, b = _fmt(chip)
    S = 256
    star = critical_batch(model, chip, weight_bytes=b, dtype=d)  # weights only
    for k in (1, 3, 7):
        # Below the weights-only B* / (k+1) the verify step is memory-bound for any context ...
        B = max(1.0, math.floor(star / (k + 1) / 2))
        try:
            kb = speculative_critical_batch(model, chip, k, S, weight_bytes=b, dtype=d)
        except ValueError:  # KV reads outgrow compute: memory-bound at every batch
            kb = math.inf
        # (attention's FLOPs for k + 1 queries over 256 cached tokens pull it in by under 1%)
        assert star / (k + 1) <= kb * 1.01
        plain = decode_step(model, chip, B, S, weight_bytes=b, dtype=d)
        spec = speculative_step(model, chip, B, S, k, 0.8, weight_bytes=b, dtype=d)
        assert spec.time == pytest.approx(plain.time, rel=0.01), (model.name, chip.name, k)
        # ... and where plain decoding is itself compute-bound, rejected drafts make users slower.
        if math.isinf(kb):
            continue
        big = 8 * (k + 1) * kb
        p2 = decode_step(model, chip, big, S, weight_bytes=b, dtype=d)
        s2 = speculative_step(model, chip, big, S, k, 0.8, weight_bytes=b, dtype=d)
        if p2.bound != "compute":
            continue
        assert s2.tokens / s2.time < p2.tokens / p2.time


def test_speculative_tokens_per_step():
    # Leviathan et al. 2023, eq. 1.
    assert speculative_tokens_per_step(0, 0.5) == pytest.approx(1.0)
    assert speculative_tokens_per_step(3, 1.0) == pytest.approx(4.0)
    assert speculative_tokens_per_step(3, 0.8) == pytest.approx((1 - 0.8**4) / 0.2)
    assert speculative_tokens_per_step(1, 0.0) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        speculative_tokens_per_step(2, 1.5)
    m, c = models.get("Llama-3-70B"), chips.get("H100-SXM")
    s0 = decode_step(m, c, 16, 512, n_chips=8)
    s = speculative_step(m, c, 16, 512, 0, 0.7, n_chips=8)
    assert s.time == pytest.approx(s0.time) and s.tokens == pytest.approx(s0.tokens)


# Claim: "price ratio x speed ratio = batch ratio on fixed chips, and no batch beats the batch-1
# step".
@each("model", MODELS, ids=[m.name for m in MODELS])
def test_fast_mode_identity_and_ceiling(model):
    chip = chips.get("H100-SXM")
    n = 2 * min_chips(model, chip)
    B = 256
    fm = fast_mode(model, chip, B, 1.5, 512, n_chips=n)
    if fm.max_speedup >= 1.5:
        assert fm.price_ratio * fm.speedup == pytest.approx(B / fm.fast_batch, rel=1e-6)
        assert fm.fast_batch < B
    else:
        assert math.isnan(fm.fast_batch)
    assert math.isnan(fast_mode(model, chip, B, fm.max_speedup * 1.01, 512, n_chips=n).fast_batch)


# Claim (ch4): "on a mixture of experts the memory side grows too": DeepSeek-V3 at batch 1 with one
# draft reads about 1.54x the weights of a plain step (drafted tokens routed independently and
# uniformly: an upper estimate; 1 shared + 8 routed experts per token per layer, a second token
# touching 8 more of the 255 left: 1 + 2 x 8 - 8 x 8/256 = 16.75 expert reads instead of 9, on
# ~58% of the active weights), and with 3 drafts at batch 8 the verify step costs 2-3 plain
# steps; at a batch that touches every expert it is about one step again.
def test_speculative_verify_costs_more_on_moe_at_small_batch():
    # (on a layout that holds the model: fp8 weights, 671 GB, on eight 141-GB H200s)
    ds, h200 = models.get("DeepSeek-V3"), chips.get("H200")
    kw = dict(n_chips=8, weight_bytes=1, dtype="fp8")
    assert ds.weight_params_read(2) / ds.weight_params_read(1) == pytest.approx(1.54, abs=0.01)
    for overlap in ("step", "per-op"):
        plain = decode_step(ds, h200, 8, 4096, overlap=overlap, **kw)
        spec = speculative_step(ds, h200, 8, 4096, 3, overlap=overlap, **kw)
        assert plain.fits and spec.fits
        assert 2.0 <= spec.time / plain.time <= 3.0
        plain = decode_step(ds, h200, 1, 4096, overlap=overlap, **kw)
        spec = speculative_step(ds, h200, 1, 4096, 1, overlap=overlap, **kw)
        assert 1.4 <= spec.time / plain.time <= 1.6
        # a batch of 1,024 touches every expert: verification about one step again (within 10%:
        # per-op, the second query's bf16 attention no longer hides entirely under the KV reads)
        plain = decode_step(ds, h200, 1024, 512, overlap=overlap, **kw)
        spec = speculative_step(ds, h200, 1024, 512, 1, overlap=overlap, **kw)
        assert spec.fits and spec.time / plain.time < 1.1


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    from llmmath.cost import cost_per_million_tokens
    from llmmath.roofline import critical_batch, decode_step
    for m in DENSE_GQA:
        c = chips.get("H100-SXM")
        s = decode_step(m, c, 64, 1024, n_chips=8)
        assert ns["cost_per_million"](s.time, 64, 8, 3.0) == pytest.approx(
            cost_per_million_tokens(s, 3.0), rel=1e-9), m.name
    # dense: the closed form within 2% (the library reads N_read, not N_tot); MoE within 15%
    for m in models.all_models():
        for c in BF16_CHIPS:
            got = ns["weights_only_critical_batch"](m.total_params, m.active_params, c.peak("bf16"),
                                                    c.hbm_bandwidth)
            lib = critical_batch(m, c, context=0, attention_flops=False)
            assert got == pytest.approx(lib, rel=0.15 if m.is_moe else 0.02), (m.name, c.name)


# ----- the worked examples, by hand against the glued numbers (corrections v2) -----------------

_NB = Path(__file__).resolve().parents[1] / "book" / "batching_cost.ipynb"
_UNITS = {"ms": 1e-3, "µs": 1e-6, "s": 1.0, "k": 1e3, "B": 1.0, "%": 1e-2, "x": 1.0, "×": 1.0,
          "": 1.0}


def _glued(name):
    return glued(_NB, name)


def _value(name):
    """A glued number in SI: "31.4 ms" -> 0.0314, "182k" -> 182000, "66%" -> 0.66."""
    return glued_number(_NB, name, _UNITS)[0]


# DeepSeek-V3 on a GB200 NVL72 rack at B* (FP4 weights, fp8 cache), typed from the datasheet and
# the config: 72 GPUs of 186 GB, 8 TB/s, 2.5 PFLOP/s bf16, 5 PFLOP/s fp8, 10 PFLOP/s fp4;
# 671.03e9 parameters (36.625e9 matmul parameters active), 61 layers; FlashMLA's fp8 row 656 B
# (512 fp8 + 4 x 4 B scales + 64 x 2 B RoPE); absorbed attention 128 heads x 2 x (576 + 512) =
# 278,528 FLOP per cached token per layer.
_GB = dict(n=72, M=186e9, W=8e12, bf16=2.5e15, fp8=5e15, fp4=10e15)
_DS = dict(N_tot=671.03e9, N_mm=36.625e9, L=61, row8=512 + 4 * 4 + 64 * 2, a=128 * 2 * (576 + 512))


def test_gb200_rack_step_is_set_by_bf16_attention_not_the_drain_time():
    gb200, ds = chips.get("GB200"), models.get("DeepSeek-V3")
    kw = dict(n_chips=72, weight_bytes=0.5, kv_bytes=1, dtype="fp4")
    B = critical_batch(ds, gb200, weight_bytes=0.5, dtype="fp4")
    S = max_context(ds, gb200, B, n_chips=72, weight_bytes=0.5, kv_bytes=1)
    # by hand: the KV budget over B sequences of 61 x 656 B per token
    budget = _GB["n"] * _GB["M"] - _DS["N_tot"] * 0.5
    assert _DS["row8"] == 656 == ds.kv_row_bytes(1)
    assert S == pytest.approx(budget / (B * _DS["L"] * _DS["row8"]), abs=1)
    assert _value("ds_full_ctx") == pytest.approx(S, rel=0.002)
    attn_flops = B * S * _DS["L"] * _DS["a"]
    t_attn = attn_flops / (_GB["n"] * _GB["bf16"])  # bf16 MMAs on the dequantised latent
    t_attn8 = attn_flops / (_GB["n"] * _GB["fp8"])  # fp8 MMAs
    t_mm = B * 2 * _DS["N_mm"] / (_GB["n"] * _GB["fp4"])
    drain = _GB["M"] / _GB["W"]
    bf16 = decode_step(ds, gb200, B, S, **kw)
    fp8 = decode_step(ds, gb200, B, S, attention_dtype="fp8", **kw)
    assert bf16.fits and fp8.fits
    assert bf16.attention_time == pytest.approx(t_attn, rel=1e-3)
    assert fp8.attention_time == pytest.approx(t_attn8, rel=1e-3)
    assert bf16.memory_time == pytest.approx(drain, rel=0.005)  # HBM full: one drain time
    # the claim: with bf16 MMAs attention outlasts the reads (425 FLOP/B > the bf16 ridge of
    # 312.5), the step is attention + matmuls; with fp8 MMAs (ridge 625) it hides, step = drain
    assert _DS["a"] / _DS["row8"] > _GB["bf16"] / _GB["W"]
    assert _DS["a"] / _DS["row8"] < _GB["fp8"] / _GB["W"]
    assert bf16.bound == "compute" and fp8.bound == "memory"
    assert bf16.time == pytest.approx(t_attn + t_mm, rel=1e-3)
    assert fp8.time == pytest.approx(drain, rel=0.005)
    # ... and the glued prose says so
    for name, hand in (("ds_full_attn", t_attn), ("ds_full_step", t_attn + t_mm),
                       ("ds_full_mem", drain), ("ds_full_attn_fp8", t_attn8),
                       ("ds_full_step_fp8", drain), ("ds_full_tps", B / (t_attn + t_mm)),
                       ("ds_full_tps_fp8", B / drain), ("ds_mla_fpb8", _DS["a"] / _DS["row8"])):
        assert _value(name) == pytest.approx(hand, rel=0.005), name
    # "the context does not change this": attention and KV reads both scale as B S
    for s in (S / 4, S / 2):
        st = decode_step(ds, gb200, B, s, **kw)
        assert st.attention_time / st.kv_time == pytest.approx(bf16.attention_time
                                                               / bf16.kv_time, rel=1e-9)


def test_moe_verification_example_runs_on_a_configuration_that_fits():
    # §4.7's DeepSeek-V3 example: fp8 weights (671 GB) on eight H200s (8 x 141 GB); the bf16
    # weights it used before (1.34 TB) do not fit eight H100s (640 GB).
    ds, h100, h200 = models.get("DeepSeek-V3"), chips.get("H100-SXM"), chips.get("H200")
    assert not decode_step(ds, h100, 8, 1024, n_chips=8).fits
    fp8 = dict(n_chips=8, weight_bytes=1, dtype="fp8")
    plain = decode_step(ds, h200, 8, 1024, **fp8)
    spec = speculative_step(ds, h200, 8, 1024, 3, **fp8)
    assert plain.fits and spec.fits
    assert spec.time / plain.time == pytest.approx(_value("moe_spec_b8"), abs=0.05)
    assert 2.0 <= spec.time / plain.time <= 3.0


def test_deepseek_fleet_balance_point_and_mtp_prediction():
    # DeepSeek's fleet (deepseek2025inference): 14.8k tokens/s per node at 21 tokens/s per user,
    # 144 GPUs per decode unit: 14,800 / 21 x 18 = 12,686 sequences. With the KV reads of a
    # 4,096-token mean context (bf16 latent, 61 x 1,152 B) B* rises from 5,404 to ~9,334.
    ds, h100 = models.get("DeepSeek-V3"), chips.get("H100-SXM")
    in_flight = 14.8e3 / 21 * 18
    kw = dict(weight_bytes=1, dtype="fp8")
    b0 = critical_batch(ds, h100, **kw)
    b4k = critical_batch(ds, h100, context=4096, **kw)
    assert b4k == pytest.approx(9334, rel=0.005)
    assert in_flight / b4k == pytest.approx(1.36, abs=0.01)
    assert _value("ds_over_star_S") == pytest.approx(in_flight / b4k, abs=0.005)
    assert _value("ds_bstar_S") == pytest.approx(b4k, rel=0.001)
    assert in_flight / b0 == pytest.approx(2.35, abs=0.01)
    # the bound: compute-bound on attention, so one MTP draft doubles the step and the bound
    # predicts a slight loss, 1.85 x t / 2t = 0.93 (DeepSeek measured about 1.8x)
    step = decode_step(ds, h100, in_flight, 4096, n_chips=144, kv_bytes=2, **kw)
    mtp = speculative_step(ds, h100, in_flight, 4096, 1, 0.85, n_chips=144, kv_bytes=2, **kw)
    assert step.fits and mtp.fits
    assert step.bound == "compute" and step.attention_time > 0.5 * step.time
    assert mtp.time == pytest.approx(2 * step.time, rel=1e-6)
    gain = speculative_tokens_per_step(1, 0.85) * step.time / mtp.time
    assert gain == pytest.approx(1.85 / 2, rel=1e-6) and gain < 1
    assert _value("ds_mtp_gain") == pytest.approx(gain, abs=0.005)


def test_deepseek_exercise_formula_gives_its_printed_number():
    # Ex. (b): B* = (C b_w / 2W)(N_tot / N_act) with the H100's fp8 peak 1,978.9 TFLOP/s,
    # 3.35 TB/s, 1 byte per weight, 671.03e9 / 37.552e9 = 17.87: 295.4 x 17.87 = 5,278. The
    # library's 5,404 divides by the matmul parameters (36.625e9, ratio 18.32) instead.
    hand = 1978.9e12 * 1 / (2 * 3.35e12) * (671.03e9 / 37.552e9)
    assert _value("ex_ds_simple") == pytest.approx(hand, rel=0.001)
    assert 1978.9e12 / (2 * 3.35e12) * 671.03e9 / 36.625e9 == pytest.approx(
        _value("ex_ds_h100"), rel=0.005)


def test_fleet_sits_below_the_balance_point_of_its_own_layout():
    # Claim (section 4.8): counted per chip as DeepSeek lays it out (data-parallel attention
    # keeps the non-expert weights whole on each of the 144 GPUs), the replica's critical batch
    # exceeds the 12,686 sequences in flight, so the fleet runs below it, while the
    # every-weight-spread B*(4096) puts it above. Each GPU re-reads ~17 GB of replicated fp8
    # weights every step (moe_rack's hand computation), which 12,686 / 144 = 88 sequences per
    # GPU cannot amortise.
    from llmmath.balance import critical_batch
    from llmmath.moe import expert_parallel_critical_batch
    ds, h100 = models.get("DeepSeek-V3"), chips.get("H100-SXM")
    ep = expert_parallel_critical_batch(ds, h100, 144, weight_bytes=1, dtype="fp8", context=4096,
                                        kv_bytes=2)
    spread = critical_batch(ds, h100, context=4096, weight_bytes=1, dtype="fp8")
    assert spread < 12_686 < ep
    assert _glued("ds_bstar_ep") == f"{ep:,.0f}"
    assert _glued("ds_over_ep") == f"{12_686 / ep:.2f}"


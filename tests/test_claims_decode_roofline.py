"""Every rule of thumb chapter 3 (book/decode_roofline.ipynb) states, over the whole catalogue.

Each test names the claim as the chapter words it. When a claim fails for some chip or model,
the prose changes, not the test.
"""

import itertools

import numpy as np
import pytest
from claims import BF16_CHIPS, DENSE_GQA, config_of, each, from_scratch

from llmmath import chips, models
from llmmath.parallel import tensor_parallel_comm_time
from llmmath.roofline import (
    critical_batch,
    critical_context,
    decode_step,
    drain_time,
    min_latency,
)

CHIPS = chips.all_chips()
MODELS = models.all_models()
PAIRS = list(itertools.product(MODELS, CHIPS))
IDS = [f"{m.name}-{c.name}" for m, c in PAIRS]

BATCHES = np.array([1, 2, 8, 32, 64, 128, 256, 512, 1024, 4096, 16384], dtype=float)
CONTEXTS = np.array([0, 128, 1024, 2048, 4096], dtype=float)


def _dtypes(chip):
    return list(chip.flops)


def _dt(chip):
    return chip.resolve_dtype("bf16")[0]


def _contexts(model):
    cap = model.max_context or np.inf
    return CONTEXTS[CONTEXTS <= cap]


# ----- "Batch 1 is memory-bound on every chip" -------------------------------------------------

@each("model, chip", PAIRS, ids=IDS)
def test_batch_one_is_memory_bound_everywhere(model, chip):
    # for every dtype the chip has and every weight width from fp4 to bf16, at any context
    for dtype, wb in itertools.product(_dtypes(chip), (0.5, 1, 2)):
        s = decode_step(model, chip, 1, _contexts(model), weight_bytes=wb, kv_bytes=wb, dtype=dtype)
        assert np.all(s.bound == "memory"), (dtype, wb)


# ----- "the latency floor is the time to read the touched weights" -----------------------------

@each("model, chip", PAIRS, ids=IDS)
def test_floor_is_reading_the_touched_weights(model, chip):
    for n, wb in itertools.product((1, 8, 64), (1, 2)):
        floor = min_latency(model, chip, n_chips=n, weight_bytes=wb, dtype=_dt(chip))
        assert floor == pytest.approx(model.weight_params_read(1) * wb / (n * chip.hbm_bandwidth),
                                      rel=1e-12)
        # no batch or context is faster than the floor
        s = decode_step(model, chip, BATCHES, 1024 if (model.max_context or 1e9) >= 1024 else 0,
                        n_chips=n, weight_bytes=wb, dtype=_dt(chip))
        assert np.all(s.time >= floor * (1 - 1e-12))


@each("model", [m for m in MODELS if not m.is_moe], ids=lambda m: m.name)
def test_dense_floor_is_all_weights(model):
    # dense: N_read(1) = N_tot less the input embedding table but one row ("within a few percent of
    # N_tot": at most 7% in the catalogue, Llama 3 8B's large vocabulary being the extreme)
    h100 = chips.get("H100-SXM")
    t_all = model.total_params * 2 / h100.hbm_bandwidth
    floor = min_latency(model, h100)
    assert floor <= t_all
    assert floor >= (model.total_params - model.embedding_params) * 2 / h100.hbm_bandwidth
    assert floor == pytest.approx(t_all, rel=0.07)


@each("model", [m for m in MODELS if m.is_moe], ids=lambda m: m.name)
def test_moe_floor_is_only_the_touched_experts(model):
    # MoE at batch 1 reads the shared weights and k experts per layer: at most the active
    # parameters, and the read grows with the batch toward N_tot (never exceeding it)
    assert model.weight_params_read(1) <= model.active_params
    reads = model.weight_params_read(BATCHES)
    assert np.all(np.diff(reads) >= 0)
    assert reads[-1] <= model.total_params
    assert reads[-1] >= 0.99 * model.total_params


def test_deepseek_v3_floor_numbers():
    # the chapter: DeepSeek-V3 on 8 H200s, fp8 weights: batch-1 floor under 1 ms; reading every
    # expert takes more than 15x longer; batch 8 already reads over 4x the batch-1 weights
    ds, h200 = models.get("DeepSeek-V3"), chips.get("H200")
    one = decode_step(ds, h200, 1, 0, n_chips=8, weight_bytes=1, dtype="fp8")
    eight = decode_step(ds, h200, 8, 0, n_chips=8, weight_bytes=1, dtype="fp8")
    full = decode_step(ds, h200, 512, 0, n_chips=8, weight_bytes=1, dtype="fp8")
    assert one.time < 1e-3
    assert full.weight_time / one.time > 15
    assert eight.weight_bytes_read / one.weight_bytes_read > 4
    assert ds.weight_params_read(64) / ds.total_params > 0.85


# ----- "the per-operation bound is never below the whole-step bound, and at most twice it" -----

@each("model, chip", PAIRS, ids=IDS)
def test_per_op_between_step_and_twice_step(model, chip):
    B, S = np.meshgrid(BATCHES, _contexts(model))
    for dtype in _dtypes(chip):
        step = decode_step(model, chip, B, S, dtype=dtype, overlap="step")
        per_op = decode_step(model, chip, B, S, dtype=dtype, overlap="per-op")
        assert np.all(per_op.time >= step.time * (1 - 1e-12))
        assert np.all(per_op.time <= 2 * step.time * (1 + 1e-12))
        # they agree whenever both kernels sit on the same side of the ridge: memory reads
        # outlast FLOPs in the matmuls and in attention alike (or FLOPs outlast reads in both)
        mem = (step.weight_time >= step.matmul_time) & (step.kv_time >= step.attention_time)
        comp = (step.weight_time <= step.matmul_time) & (step.kv_time <= step.attention_time)
        for agree in (mem, comp):
            assert np.allclose(per_op.time[agree], step.time[agree], rtol=1e-12)
        # and they differ where the two kernels sit on opposite sides
        split = ~(mem | comp) & (np.minimum(step.weight_time, step.matmul_time)
                                 > 1e-3 * step.time)
        split &= np.minimum(step.kv_time, step.attention_time) > 1e-3 * step.time
        assert np.all(per_op.time[split] > step.time[split])


def test_per_op_example_in_text():
    # Llama 3 70B, 8 H100, batch 1024, context 1024 (it fits: 141 GB of bf16 weights and
    # 1024 x 1024 x 327,680 B = 344 GB of caches, 60.6 GB a chip of 80). By hand (8 x 989.4e12 =
    # 7.915e15 FLOP/s, 8 x 3.35e12 = 26.8e12 B/s; 69.5e9 matmul params, the 1.05e9-row embedding
    # gathered not read; KV 80 x 2 x 8 x 128 x 2 = 327,680 B/token): t_mm = 2 x 69.5e9 x 1024 /
    # 7.915e15 = 17.98 ms against t_w = 139.0e9 B / 26.8e12 = 5.19 ms; t_attn = 4 x 64 x 128 x
    # 1024 x 80 x 1024 / 7.915e15 = 0.347 ms against t_kv = 1024 x 1024 x 327,680 / 26.8e12 =
    # 12.82 ms. Whole step: max(t_mm + t_attn, t_w + t_kv) = max(18.33, 18.01) = 18.33 ms; per op:
    # max(t_attn, t_kv) + max(t_mm, t_w) = 12.82 + 17.98 = 30.80 ms; ratio 1.680.
    l70, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    C, W, n_mm, b_kv = 8 * 989.4e12, 8 * 3.35e12, 69.5017e9, 327_680
    B, S = 1024, 1024
    w_read = 2 * (70_553_706_496 - (128_256 - B) * 8192)  # N_tot less the rows not gathered
    t_mm, t_w = 2 * n_mm * B / C, w_read / W
    t_attn, t_kv = 4 * 64 * 128 * S * 80 * B / C, B * S * b_kv / W
    whole, per_op = max(t_mm + t_attn, t_w + t_kv), max(t_attn, t_kv) + max(t_mm, t_w)
    assert (whole, per_op) == (pytest.approx(18.33e-3, rel=1e-3), pytest.approx(30.80e-3, rel=1e-3))
    a = decode_step(l70, h100, B, S, n_chips=8)
    b = decode_step(l70, h100, B, S, n_chips=8, overlap="per-op")
    assert a.fits and b.fits
    for got, hand in ((a.matmul_time, t_mm), (a.attention_time, t_attn), (a.weight_time, t_w),
                      (a.kv_time, t_kv), (a.time, whole), (b.time, per_op)):
        assert got == pytest.approx(hand, rel=1e-4)
    assert b.time / a.time == pytest.approx(1.680, rel=0.002)
    # the printed parts add up to the printed per-op bound (I2): kv + matmuls
    assert b.time == pytest.approx(a.kv_time + a.matmul_time, rel=1e-12)
    # the old example (context 4,096) did not fit eight H100s: 1.37 TB of caches
    assert not decode_step(l70, h100, 1024, 4096, n_chips=8).fits


def test_overlap_exercise_fits_and_adds_up():
    # Ex. "Whole step or per operation": batch 512, context 2,048, 8 H100s (the old 4,096 did not
    # fit: 512 x 4096 x 327,680 B = 687 GB of caches plus 141 GB of weights on 640 GB). By hand:
    # t_mm = 2 x 69.5e9 x 512 / 7.915e15 = 8.99 ms, t_attn = 4 x 64 x 128 x 2048 x 80 x 512 /
    # 7.915e15 = 0.347 ms, t_w = 5.19 ms, t_kv = 512 x 2048 x 327,680 / 26.8e12 = 12.82 ms. Whole
    # step max(9.34, 18.01) = 18.01 ms; per op 12.82 + 8.99 = 21.81 ms.
    l70, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    a = decode_step(l70, h100, 512, 2048, n_chips=8)
    b = decode_step(l70, h100, 512, 2048, n_chips=8, overlap="per-op")
    assert a.fits and not decode_step(l70, h100, 512, 4096, n_chips=8).fits
    assert a.matmul_time == pytest.approx(2 * 69.5017e9 * 512 / 7.9152e15, rel=1e-4)
    assert a.attention_time == pytest.approx(4 * 64 * 128 * 2048 * 80 * 512 / 7.9152e15, rel=1e-4)
    assert a.time == pytest.approx(18.01e-3, rel=1e-3)
    assert b.time == pytest.approx(21.81e-3, rel=1e-3)
    assert b.time == pytest.approx(max(a.attention_time, a.kv_time)
                                   + max(a.matmul_time, a.weight_time), rel=1e-12)


def test_section_one_step_by_its_parts():
    # Sec. 3.1: Llama 3 70B, 8 H100s, batch 64, context 4,096. Matmul work 2 x 64 x 69.5017e9 =
    # 8.90 TFLOP; attention 64 x 4 x 64 x 128 x 80 x 4096 = 0.687 TFLOP (together the 9.58 the
    # step does); the up-projection 8192 x 28672 passes the ridge at B = I* k n / (k n - I* (k + n))
    # with I* = 989.4 / 3.35 = 295.34: 295.34 x 234,881,024 / (234,881,024 - 295.34 x 36,864) =
    # 309.7, not "near 1,000". Eq. (3.1) with N_act = 70.5537e9: 2 x 64 x N_act / 7.915e15 =
    # 1.141 ms, against the library's t_mm 1.124 ms (N_mm) plus t_attn 86.8 us.
    from llmmath.roofline import matmul_ridge_batch
    l70, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    s = decode_step(l70, h100, 64, 4096, n_chips=8)
    assert s.fits
    assert 2 * 64 * l70.matmul_params_active == pytest.approx(8.896e12, rel=1e-3)
    assert s.flops - 2 * 64 * l70.matmul_params_active == pytest.approx(
        64 * 4 * 64 * 128 * 80 * 4096, rel=1e-12)
    ridge = 989.4e12 / 3.35e12
    hand = ridge * 8192 * 28672 / (8192 * 28672 - ridge * (8192 + 28672))
    assert hand == pytest.approx(309.7, abs=0.1)
    assert matmul_ridge_batch(h100, 8192, 28672) == pytest.approx(hand, rel=1e-4)
    assert s.matmul_time == pytest.approx(2 * 64 * 69.5017e9 / 7.9152e15, rel=1e-4)
    assert s.attention_time == pytest.approx(64 * 4 * 64 * 128 * 80 * 4096 / 7.9152e15, rel=1e-4)
    assert 2 * 64 * 70.5537e9 / 7.9152e15 == pytest.approx(1.141e-3, rel=1e-3)


def test_three_streams_exercise_by_its_parts():
    # Ex. "Three streams": Llama 3 8B, one H100, batch 32, context 2,048. The matmuls: 2 x 32 x
    # 7.5047e9 / 989.4e12 = 485 us; attention 32 x 4 x 32 x 128 x 32 x 2048 / 989.4e12 = 34.7 us;
    # compute 520 us (the formula of the solution gives 485, the library's compute 520).
    l8, h100 = models.get("Llama-3-8B"), chips.get("H100-SXM")
    s = decode_step(l8, h100, 32, 2048)
    assert s.fits
    assert s.matmul_time == pytest.approx(2 * 32 * 7.5047e9 / 989.4e12, rel=1e-4)
    assert s.matmul_time == pytest.approx(485e-6, rel=2e-3)
    assert s.attention_time == pytest.approx(32 * 4 * 32 * 128 * 32 * 2048 / 989.4e12, rel=1e-9)
    assert s.compute_time == pytest.approx(520e-6, rel=2e-3)


# ----- "more chips divide both terms; critical batch and context do not depend on n" ----------

@each("model, chip", PAIRS, ids=IDS)
def test_many_chips_divide_both_terms(model, chip):
    one = decode_step(model, chip, BATCHES, _contexts(model)[-1], dtype=_dt(chip))
    for n in (2, 8, 72):
        many = decode_step(model, chip, BATCHES, _contexts(model)[-1], n_chips=n, dtype=_dt(chip))
        for f in ("compute_time", "weight_time", "kv_time", "time"):
            assert np.allclose(getattr(many, f) * n, getattr(one, f), rtol=1e-12), f
        assert np.all(many.bound == one.bound)


def test_communication_does_not_shrink_with_chips():
    # tensor-parallel all-reduce bandwidth time per step grows with n, (n-1)/n
    # (Pope et al. 2022 §2.1)
    l70, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    t = [tensor_parallel_comm_time(l70, 64, n, h100.scale_up_bandwidth) for n in (2, 4, 8)]
    assert t[0] < t[1] < t[2]


# ----- critical batch: "about 300 for a dense model on an H100 in bf16", "300 x sparsity" ------

def test_dense_critical_batch_on_h100_is_about_300():
    h100 = chips.get("H100-SXM")
    for m in MODELS:
        if not m.is_moe:
            assert critical_batch(m, h100) == pytest.approx(
                h100.ops_per_byte("bf16"), rel=0.02), m.name
            assert 280 < critical_batch(m, h100) < 310, m.name


@each("model", [m for m in MODELS if m.is_moe], ids=lambda m: m.name)
def test_moe_critical_batch_scales_with_sparsity(model):
    # the episode's "300 x sparsity" (with the real sparsity): within 12% on an H100 in bf16
    h100 = chips.get("H100-SXM")
    expected = h100.ops_per_byte("bf16") * model.sparsity
    assert critical_batch(model, h100) == pytest.approx(expected, rel=0.12)


def test_knee_moves_right_with_context_and_vanishes():
    l70, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    b0, b1k = critical_batch(l70, h100), critical_batch(l70, h100, context=1024)
    assert b1k > 3 * b0
    with pytest.raises(ValueError):
        critical_batch(l70, h100, context=4096)


# ----- critical context ------------------------------------------------------------------------

def test_critical_context_values_in_text():
    # ch3: the episode's first approximation (no attention FLOPs) against the counted bound.
    # Hand values: S* = 2 N_mm W / (C b_kv); Llama-3-70B 2 x 69.5e9 x 3.35e12
    # / (989.4e12 x 327,680 B) = 1,436; with attention 4 n_q d_h = 32,768 FLOP per 327,680/80
    # = 4,096 B per layer-token, S grows by 1 / (1 - 8 / 295.3) = 1.028. DeepSeek-V3 (config
    # of deepseekv3: 61 layers, 3 dense with d_ff 18432, 58 MoE with 1 shared + 8 of 256 routed
    # experts of 2048, MLA q rank 1536, kv rank 512, 128 heads of 128 + 64 rope, vocab 129,280):
    # attention 7168 x 1536 + 1536 x 128 x 192 + 7168 x 576 + 512 x 128 x 256 + 128 x 128 x 7168
    # = 187,105,280 per layer x 61 = 11.413e9; dense MLPs 3 x 3 x 7168 x 18432 = 1.189e9; MoE
    # 58 x (9 x 3 x 7168 x 2048 + 7168 x 256) = 23.095e9; head 0.927e9: 36.625e9 matmul
    # parameters a token; KV (512 + 64) x 61 x 2 B = 70,272 B/token. S* = 2 x 36.625e9 x 3.35e12
    # / (989.4e12 x 70,272) = 3,529 without attention FLOPs, about 19.5k with (issue 11).
    h100 = chips.get("H100-SXM")
    l70, ds = models.get("Llama-3-70B"), models.get("DeepSeek-V3")
    ep70 = critical_context(l70, h100, attention_flops=False)
    assert ep70 == pytest.approx(1436, rel=0.01)
    assert critical_context(l70, h100) == pytest.approx(ep70 / (1 - 8 / h100.ops_per_byte()),
                                                        rel=1e-5)
    assert critical_context(ds, h100, attention_flops=False) == pytest.approx(3529.3, rel=1e-3)
    assert critical_context(ds, h100) == pytest.approx(19_500, rel=0.01)
    assert critical_context(models.get("Llama-3-8B"), h100) < 500
    # fp8 KV doubles the first approximation; counted, a little more than doubles it: with bf16
    # arithmetic attention's FLOPs stay while the bytes halve (16 FLOP per cached byte, not 8)
    assert critical_context(l70, h100, kv_bytes=1, attention_flops=False) == pytest.approx(
        2 * ep70, rel=1e-9)
    fp8 = critical_context(l70, h100, kv_bytes=1)
    assert fp8 == pytest.approx(2 * ep70 / (1 - 16 / h100.ops_per_byte()), rel=1e-5)
    # ... and with fp8 arithmetic too (attention at the fp8 peak) doubles the counted one
    # at that dtype
    fp8_math = critical_context(l70, h100, kv_bytes=1, dtype="fp8", attention_dtype="fp8")
    assert fp8_math == pytest.approx(
        2 * critical_context(l70, h100, dtype="fp8"), rel=1e-3)  # fp8 peak is 2.0001x bf16



def test_first_approximation_is_the_printed_formula():
    # Eq. (S*) = 2 N_mm W / (C b_kv), typed: Llama 3 70B 69.5017e9 multiplied parameters, 327,680
    # B/token, H100 3.35e12 B/s and 989.4e12 FLOP/s: 1,436 tokens; with N_act = 70.5537e9 (the
    # episode's form) 1,458.
    l70, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    hand = 2 * 69.5017e9 * 3.35e12 / (989.4e12 * 327_680)
    assert critical_context(l70, h100, attention_flops=False) == pytest.approx(hand, rel=1e-5)
    assert hand == pytest.approx(1436.3, abs=0.5)
    assert 2 * 70.5537e9 * 3.35e12 / (989.4e12 * 327_680) == pytest.approx(1458.0, abs=0.5)


def test_mla_critical_context_is_ill_conditioned():
    # Ch. 3: DeepSeek-V3's S* = (2 N_mm / C) / (b_kv / W - a / C). Typed from the config (see
    # test_critical_context_values_in_text): N_mm = 36.625e9, b_kv = 576 x 61 x 2 = 70,272 B,
    # a = 2 x 128 x (2 x 512 + 64) x 61 = 16,990,208 FLOP per cached token; H100 989.4e12 FLOP/s,
    # 3.35e12 B/s: 74.03 us / (20.98 ns - 17.17 ns) = 19.5k tokens. Attention does 241.8 FLOP per
    # cached byte, within 20% of the ridge (295.3), so a 20% change in one rate moves S* by more
    # than 2x: 80% of the bandwidth gives about 8.2k, 80% of the FLOP rate none at all. The range
    # the chapter prints: about 9.7k (fp8 matmuls, bf16 MLA) to none (FlashMLA's measured 660
    # TFLOP/s over 3.0 TB/s: an attention ridge of 220 < 241.8).
    from llmmath.chips import Chip
    ds, h100 = models.get("DeepSeek-V3"), chips.get("H100-SXM")
    a, b_kv = 2 * 128 * (2 * 512 + 64) * 61, 576 * 61 * 2
    assert (ds.attention_flops_per_token(1), ds.kv_read_bytes(1)) == (a, b_kv)
    hand = (2 * ds.matmul_params_active / 989.4e12) / (b_kv / 3.35e12 - a / 989.4e12)
    base = critical_context(ds, h100)
    assert base == pytest.approx(hand, rel=1e-6) and base == pytest.approx(19_460, rel=1e-3)
    assert 1 - (a / b_kv) / h100.ops_per_byte("bf16") < 0.20

    def derated(compute=1.0, memory=1.0):
        return Chip(name="derated H100", flops={d: f * compute for d, f in h100.flops.items()},
                    hbm_bandwidth=h100.hbm_bandwidth * memory, hbm_capacity=h100.hbm_capacity)

    slow_memory = critical_context(ds, derated(memory=0.8))
    assert base / slow_memory > 2 and slow_memory == pytest.approx(8_182, rel=1e-3)
    with pytest.raises(ValueError, match="FLOP per cached byte"):
        critical_context(ds, derated(compute=0.8))
    # a 20% efficiency change moves it by more than 2x (the book's rule for printing a range)
    assert critical_context(ds, derated(compute=0.9)) / base > 2
    # the range's ends
    assert critical_context(ds, h100, dtype="fp8") == pytest.approx(9_729, rel=1e-3)
    measured = Chip(name="H100 as measured", flops={"bf16": 660e12}, hbm_bandwidth=3.0e12,
                    hbm_capacity=h100.hbm_capacity)
    assert chips.MEASURED_H100["mla_decode_flops"] == 660e12
    assert chips.MEASURED_H100["hbm_read"] == 3.0e12
    with pytest.raises(ValueError, match="FLOP per cached byte"):
        critical_context(ds, measured)
    # contrast: a GQA model's S* moves by about 20%, not 2x, under the same change
    l70 = models.get("Llama-3-70B")
    ratio = critical_context(l70, derated(memory=0.8)) / critical_context(l70, h100)
    assert 0.75 < ratio < 0.85


def test_palm_critical_context_on_pope_tpu_v4():
    # PaLM 540B (one KV head of 256, 118 layers, 48 query heads of 256; tied embeddings): b_kv =
    # 2 x 118 x 256 x 2 = 120,832 B/token; attention 4 x 48 x 256 x 118 = 5,799,936 FLOP per
    # cached token, 48 FLOP per byte. TPU v4: 275e12 FLOP/s, 1.2e12 B/s (ridge 229.2): first
    # approximation 2 x 540.35e9 x 1.2e12 / (275e12 x 120,832) = 39.0k, counted 39.0k / (1 - 48 /
    # 229.2) = 49.4k. On an H100 36.2k. Both far beyond its 2,048-token window.
    palm = models.get("PaLM-540B")
    tpu, h100 = chips.get("TPU v4"), chips.get("H100-SXM")
    ep = 2 * palm.matmul_params_active * 1.2e12 / (275e12 * 120_832)
    assert critical_context(palm, tpu, attention_flops=False) == pytest.approx(ep, rel=1e-6)
    hand = ep / (1 - 5_799_936 / 120_832 / (275e12 / 1.2e12))
    assert critical_context(palm, tpu) == pytest.approx(hand, rel=1e-6)
    assert hand == pytest.approx(49_368, rel=1e-3)
    assert critical_context(palm, h100) == pytest.approx(36_160, rel=1e-3)
    assert min(hand, critical_context(palm, h100)) > palm.max_context


def test_v32_critical_context_with_its_fp8_latent():
    # DeepSeek serves V3.2 with FlashMLA's fp8 latent: 512 fp8 + 4 fp32 scales + 64 bf16 RoPE =
    # 512 + 16 + 128 = 656 B per token per layer, dequantised for bf16 arithmetic. Its critical
    # context on an H100 moves from about 35.0k (bf16 latent, 1,152 B) to about 44.7k (+28%).
    v32, h100 = models.get("DeepSeek-V3.2"), chips.get("H100-SXM")
    assert v32.kv_row_bytes(1) == 512 + 4 * 4 + 64 * 2 and v32.kv_row_bytes(2) == 576 * 2
    bf16, fp8 = critical_context(v32, h100), critical_context(v32, h100, kv_bytes=1)
    assert bf16 == pytest.approx(34_964, rel=1e-3) and fp8 == pytest.approx(44_727, rel=1e-3)
    assert fp8 / bf16 == pytest.approx(1.28, abs=0.01)
    assert fp8 < v32.max_context


@pytest.mark.whole_catalogue
def test_count_of_models_that_read_their_whole_cache():
    # "every grouped-query or multi-head model that reads its whole KV cache in every layer (12 of
    # them)": gpt-oss-120b's sliding-window layers read only their last 128 tokens, so it is
    # named apart (the claim holds for it too: test_critical_context_inside_supported_window).
    # (13 since BLOOM-176B joined the catalogue: multi-head, reads its whole cache)
    whole = [m for m in FULL_KV if not m.n_sliding_layers]
    windowed = [m for m in FULL_KV if m.n_sliding_layers]
    assert len(whole) == 13 and "BLOOM-176B" in {m.name for m in whole}
    assert [(m.name, m.sliding_window) for m in windowed] == [("gpt-oss-120b", 128)]

def test_gqa_attention_changes_the_critical_context_by_at_most_twelve_percent():
    # "the approximation is good for grouped-query attention": attention does n_q / n_kv FLOP per
    # cached bf16 byte (4 n_q d_h / (2 n_kv d_h 2)), so S* grows by 1 / (1 - (n_q/n_kv) / (C/W)):
    # at most 12% (Llama 3.1 405B's 16 query heads per KV head on an A100's 153 FLOP/byte)
    for m in FULL_KV:
        for c in CHIPS:
            if "bf16" in c.flops:
                ratio = critical_context(m, c) / critical_context(m, c, attention_flops=False)
                expected = 1 / (1 - (m.n_heads / m.n_kv_heads) / c.ops_per_byte("bf16"))
                if not m.n_sliding_layers:  # windows shift the balance between the two terms
                    assert ratio == pytest.approx(expected, rel=1e-6), (m.name, c.name)
                assert 1 < ratio < 1.12, (m.name, c.name, ratio)


@pytest.mark.whole_catalogue
def test_mla_attention_flops_per_byte_near_the_ridge():
    # absorbed MLA: 2 x 128 x (2 x 512 + 64) FLOP per 576 x 2 B = 241.8 FLOP per cached byte
    ds = models.get("DeepSeek-V3")
    per_byte = ds.attention_flops_per_token(1) / ds.kv_read_bytes(1)
    assert per_byte == pytest.approx(2 * 128 * 1088 / 1152)
    # no critical context exactly on the chips whose FLOP per byte is below that
    for c in CHIPS:
        if "bf16" not in c.flops:
            continue
        if c.ops_per_byte("bf16") <= per_byte:
            with pytest.raises(ValueError, match="FLOP per cached byte"):
                critical_context(ds, c)
        else:
            s = critical_context(ds, c)
            assert s > 1.5 * critical_context(ds, c, attention_flops=False)
    assert {"A100-SXM-80GB", "H200", "TPU v4", "TPU v5p"} <= {
        c.name for c in CHIPS if "bf16" in c.flops and c.ops_per_byte("bf16") <= per_byte}


FULL_KV = [m for m in MODELS if m.attention_kind in ("MHA", "GQA") and not m.sparse_attention_topk]


@each("model, chip",
                         [(m, c) for m in FULL_KV for c in CHIPS if "bf16" in c.flops],
                         ids=lambda x: x.name)
@each("attention_flops", [True, False])
def test_critical_context_inside_supported_window(model, chip, attention_flops):
    # "for every grouped-query or multi-head model that reads its whole KV cache, on every chip, the
    # critical context lies inside the model's own supported context", with or without attention
    # FLOPs
    s = critical_context(model, chip, attention_flops=attention_flops)
    assert s < model.max_context
    # and beyond it the step is memory-bound at every batch (whole-step overlap) ...
    over = min(model.max_context, 1.05 * s)
    st = decode_step(model, chip, BATCHES, over, attention_flops=attention_flops)
    assert np.all(st.bound == "memory")
    # ... while under per-op overlap the matmuls still turn compute-bound at a large batch
    big = decode_step(model, chip, 1e6, over, attention_flops=attention_flops, overlap="per-op")
    assert big.matmul_time > big.weight_time


def test_per_op_has_no_critical_context():
    with pytest.raises(ValueError, match="per-op"):
        critical_context(models.get("Llama-3-70B"), chips.get("H100-SXM"), overlap="per-op")


def test_mqa_palm_540b_stays_below_its_critical_context():
    # the MQA exception: PaLM 540B's critical context exceeds its 2,048-token window on every chip
    palm = models.get("PaLM-540B")
    for c in CHIPS:
        if "bf16" in c.flops:
            for attn in (True, False):
                assert critical_context(palm, c, attention_flops=attn) > palm.max_context, c.name


def test_sparse_attention_with_indexer_has_a_critical_context_in_its_window():
    # DeepSeek-V3.2 attends to 2,048 tokens, but its indexer reads 132 B per cached token per layer:
    # "a critical context of ~35k tokens on an H100 (~13k by the first approximation), inside its
    # window". On every chip it exists; it lies inside the window wherever the chip does at least
    # ~250 FLOP per byte.
    ds32, h100 = models.get("DeepSeek-V3.2"), chips.get("H100-SXM")
    assert critical_context(ds32, h100, attention_flops=False) == pytest.approx(12_930, rel=0.01)
    assert 30_000 < critical_context(ds32, h100) < 40_000 < ds32.max_context
    for c in CHIPS:
        if "bf16" not in c.flops:
            continue
        for attn in (True, False):
            s = critical_context(ds32, c, attention_flops=attn)
            assert s > ds32.sparse_attention_topk or c.name == "TPU v6e"
        if c.ops_per_byte("bf16") >= 250:
            assert critical_context(ds32, c) < ds32.max_context, c.name


def test_kv_line_crosses_compute_at_critical_context_for_any_batch():
    l70, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    s_star = critical_context(l70, h100)
    s = decode_step(l70, h100, BATCHES, s_star, n_chips=8)
    assert np.allclose(s.kv_time, s.compute_time, rtol=1e-9)


# ----- "the bound sits at or below every measured latency quoted" ------------------------------

MEASURED = [
    # Pope et al. 2022 (arXiv 2211.05102), PaLM 540B on 64 TPU v4, context 2048
    ("PaLM-540B", "TPU v4", 64, 64, 2048, 1, 1, "bf16", 1.82 / 64),   # Table 2, int8, 28.4 ms
    ("PaLM-540B", "TPU v4", 64, 64, 2048, 2, 2, "bf16", 36.9e-3),     # §4.4, bf16, 36.9 ms
    ("PaLM-540B", "TPU v4", 64, 512, 2048, 2, 2, "bf16", 6.0 / 64),   # Table 2, bf16, 93.75 ms
    # NVIDIA NIM LLM benchmarking, performance page (v1.0.0 guide): Llama-3.3-70B-Instruct,
    # NIM 1.8.0, 2 x H100 80GB, fp8, TP2, concurrency 1: ITL 18.58 ms (5000 in / 500 out) and
    # 18.91 ms (500 in / 2000 out). Bound: batch 1, fp8 weights and (generously) fp8 KV.
    ("Llama-3-70B", "H100-SXM", 2, 1, 5000, 1, 1, "fp8", 18.58e-3),
    ("Llama-3-70B", "H100-SXM", 2, 1, 500, 1, 1, "fp8", 18.91e-3),
]


@each("row", MEASURED,
                         ids=[f"{r[0]}-B{r[3]}-{r[8] * 1e3:.2f}ms" for r in MEASURED])
@each("overlap", ["step", "per-op"])
def test_bound_below_measured(row, overlap):
    name, chip, n, batch, ctx, wb, kvb, dtype, measured = row
    for eff in ((1.0, 1.0), (0.8, 0.9)):  # datasheet peaks and achievable ceilings
        s = decode_step(models.get(name), chips.get(chip), batch, ctx, n_chips=n, weight_bytes=wb,
                        kv_bytes=kvb, dtype=dtype, overlap=overlap, attention_flops=True,
                        compute_efficiency=eff[0], memory_efficiency=eff[1])
        assert s.time <= measured
        # "measured steps take about 1.5 to 4 times the bound"
        assert 1.5 <= measured / s.time <= 4.5 or eff != (1.0, 1.0)


def test_int8_saving_matches_weight_term():
    # Pope §4.4: bf16 -> int8 weights took batch-64 decode from 36.9 to 28.5 ms; the bound's drop
    # (the int8 weight time) is within 20% of the measured drop
    palm, tpu = models.get("PaLM-540B"), chips.get("TPU v4")
    b16 = decode_step(palm, tpu, 64, 2048, n_chips=64, weight_bytes=2)
    b8 = decode_step(palm, tpu, 64, 2048, n_chips=64, weight_bytes=1)
    assert (b16.time - b8.time) == pytest.approx(36.9e-3 - 28.5e-3, rel=0.2)


# ----- the HBM drain time -----------------------------------------------------------------------

def test_h100_drain_time_about_20ms():
    assert 15e-3 < drain_time(chips.get("H100-SXM")) < 30e-3


# ----- "By hand beside the library": the hand read of all N_tot weights exceeds the library's by
# the embedding rows a step does not gather (weights actually read), and by nothing else, for every
# dense model. Expected bytes from the config fields: an untied V x D input table is gathered one
# row per token; a tied table is the LM head, a matmul, read whole.
DENSE = [m for m in MODELS if not m.is_moe]


@each("model", DENSE, ids=[m.name for m in DENSE])
@each("batch", [1, 64])
def test_hand_weight_read_exceeds_the_library_by_the_ungathered_embedding(model, batch):
    h100 = chips.get("H100-SXM")
    step = decode_step(model, h100, batch, 0, n_chips=8)
    hand = model.total_params * 2
    ungathered = 0 if model.tied_embeddings else (model.vocab_size - batch) * model.d_model * 2
    assert hand - step.weight_bytes_read == pytest.approx(ungathered, rel=1e-9, abs=1.0)
    # and the hand step (memory-bound at S = 0) is longer by exactly that read time
    assert hand / (8 * h100.hbm_bandwidth) - step.weight_time == pytest.approx(
        ungathered / (8 * h100.hbm_bandwidth), rel=1e-9, abs=1e-15)


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    # the whole-step bound with attention FLOPs, against decode_step for every dense GQA/MHA model
    # on every bf16 chip; norms, biases and the B gathered embedding rows are left out by hand,
    # so hold it to 1% (they are under 0.5% of every such model's weights)
    from llmmath.roofline import decode_step
    fn = ns["decode_step_time"]
    assert len(DENSE_GQA) >= 5
    for m in DENSE_GQA:
        for c in BF16_CHIPS:
            for B, S in ((1, 0), (64, min(4096, m.max_context)), (1024, 512)):
                lib = decode_step(m, c, B, S, n_chips=8).time
                got = fn(B, S, 8, peak=c.peak("bf16"), bw=c.hbm_bandwidth, **config_of(m))
                assert got == pytest.approx(lib, rel=0.01), (m.name, c.name, B, S)



# ----- the batch-1 floor with tensor parallelism's all-reduce latency (eq-tmin-tp) ----------------

def test_floor_with_all_reduce_latency_by_hand():
    # Llama 3 70B, 8 H100s, bf16: roofline floor N_read(1) b_w / (8W) = 2 x (70,553,706,496 -
    # 128,255 x 8192) / 26.8e12 = 5.187 ms. 80 layers x 2 all-reduces (n_ar = 2), each sigma steps
    # of t_lat: NVLink SHARP through the switch, 2 steps of 3 us (nccl_nvls_latency: about 6 us an
    # all-reduce on H100s): 160 x 6 us = 0.96 ms, floor 6.147 ms; NCCL's ring over 8 GPUs, 14
    # steps of 33.7/14 us (nccl_tests_latency: 33.7 us on 8 A100s): 160 x 33.7 us = 5.392 ms,
    # floor 10.579 ms. One chip: no all-reduce. PaLM (parallel block): one all-reduce a layer.
    from llmmath.collectives import STEP_LATENCIES
    l70, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    floor = 2 * (70_553_706_496 - 128_255 * 8192) / (8 * 3.35e12)
    assert min_latency(l70, h100, n_chips=8) == pytest.approx(floor, rel=1e-9)
    assert STEP_LATENCIES["NVLink SHARP step (H100, NCCL)"][0] == pytest.approx(3e-6)
    assert STEP_LATENCIES["NVLink ring step (A100, NCCL)"][0] == pytest.approx(33.7e-6 / 14)
    nvls = min_latency(l70, h100, n_chips=8, hop_latency=3e-6)
    ring = min_latency(l70, h100, n_chips=8, hop_latency=33.7e-6 / 14, topology="ring")
    assert nvls == pytest.approx(floor + 160 * 2 * 3e-6, rel=1e-9)
    assert ring == pytest.approx(floor + 160 * 33.7e-6, rel=1e-9)
    assert nvls == pytest.approx(6.147e-3, rel=1e-3) and ring == pytest.approx(10.579e-3, rel=1e-3)
    # the latency is 19% to 104% of the floor: more than the 10% a headline may leave out
    assert (nvls - floor) / floor > 0.1
    assert min_latency(l70, h100, hop_latency=3e-6) == min_latency(l70, h100)
    palm, tpu = models.get("PaLM-540B"), chips.get("TPU v4")
    extra = (min_latency(palm, tpu, n_chips=64, hop_latency=1e-6)
             - min_latency(palm, tpu, n_chips=64))
    assert extra == pytest.approx(118 * 1 * 2 * 1e-6, rel=1e-9)
    # the default is the pure roofline floor, so every other chapter's floor is unchanged
    assert min_latency(l70, h100, n_chips=8, topology="ring") == min_latency(l70, h100, n_chips=8)


def test_floor_latency_arguments_are_checked():
    l70, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    with pytest.raises(ValueError, match="hop_latency"):
        min_latency(l70, h100, n_chips=8, hop_latency=-1e-6)
    with pytest.raises(ValueError, match="topology"):
        min_latency(l70, h100, n_chips=8, hop_latency=3e-6, topology="mesh")
    with pytest.raises(ValueError, match="topology"):
        min_latency(l70, h100, n_chips=8, topology="mesh")


# ----- "an expectation, not a bound": skewed routing touches fewer experts ----------------------

def test_uniform_routing_touches_the_most_experts():
    # Each of B tokens picks expert i with probability q_i (sum q_i = k); the expected distinct
    # experts is sum_i 1 - (1 - q_i)^B, concave in q, so the uniform q_i = k/E is the largest:
    # E (1 - (1 - k/E)^B), what weight_params_read counts. A skewed router (Zipf-like q) touches
    # fewer at every batch: the library's read is an expectation under uniform routing, an upper
    # estimate of the distinct experts, not a lower bound on the bytes.
    ds = models.get("DeepSeek-V3")
    E, k = 256, 8
    ranks = np.arange(1, E + 1, dtype=float)
    skew = (1 / ranks) / np.sum(1 / ranks) * k
    skew = np.minimum(skew, 1.0)
    skew = skew / skew.sum() * k
    for B in (1, 2, 8, 64, 512):
        uniform = E * (1 - (1 - k / E) ** B)
        assert ds.experts_touched(B) == pytest.approx(uniform, rel=1e-9)
        skewed = np.sum(1 - (1 - skew) ** B)
        assert skewed <= uniform * (1 + 1e-12)
        if B > 1:
            assert skewed < uniform

"""The rules of thumb of chapter 5 ("KV-cache growth and long context", book/kv_cache.ipynb),
asserted over the whole model and chip catalogues, not only for the examples in the text.

When a rule fails for some model or chip, the chapter's prose changes (its scope), not the test.

Sources: the core inequality and the critical context follow the episode (dwarkesh2026pope,
1:33:02, "deducing long context memory costs from API pricing") and Pope et al. 2022
(pope2022efficiently) §2.1 and Table 1; architectures are the catalogue entries' sources
(configs and papers, see _model_catalogue.py); chip figures are their datasheets
(_chip_catalogue.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from claims import BF16_CHIPS, DENSE_GQA, each, from_scratch, glued, glued_number

from llmmath import chips, models
from llmmath.chips import Chip
from llmmath.parallel import pipeline_memory_per_chip
from llmmath.roofline import (
    critical_batch,
    critical_context,
    decode_step,
    implied_kv_bytes_per_token,
    max_batch,
    min_chips,
)

ALL = models.all_models()
IDS = [m.name for m in ALL]
# "Full attention": every layer global and dense, so held = read = S x b_kv.
FULL = [m for m in ALL if not m.n_sliding_layers and m.sparse_attention_topk is None]
CAPPED = [m for m in ALL if m.n_sliding_layers or m.sparse_attention_topk is not None]
BF16 = [c for c in chips.all_chips() if "bf16" in c.flops]
PAIRS = [(m, c) for m in FULL for c in BF16]
PAIR_IDS = [f"{m.name}-{c.name}" for m, c in PAIRS]


def _unlimited(m):
    """The same architecture without its max_context (bounds past the supported window)."""
    return m.replace(max_context=None)


# ----- KV bytes grow as B x S x b_kv -------------------------------------------------------

@each("m", FULL, ids=[m.name for m in FULL])
def test_kv_linear_in_context_for_full_attention(m):
    S = np.array([1, 128, 1000, m.max_context // 2, m.max_context], dtype=float)
    held = m.kv_cache_bytes(S, 2)
    assert np.allclose(held, S * m.kv_bytes_per_token(2), rtol=1e-12)
    assert np.allclose(m.kv_read_bytes(S, 2), held, rtol=1e-12)


@each("m", ALL, ids=IDS)
def test_kv_reads_linear_in_batch_and_not_amortised(m):
    # KV time per sequence does not fall with the batch (every model, every chip), unlike weights.
    h100 = chips.get("H100-SXM")
    ctx = min(4096, m.max_context or 4096)
    B = np.array([1.0, 8.0, 64.0, 512.0])
    s = decode_step(m, h100, B, ctx)
    per_seq = np.asarray(s.kv_time) / B
    assert np.allclose(per_seq, per_seq[0], rtol=1e-12)
    assert np.allclose(np.asarray(s.kv_bytes_read), B * m.kv_read_bytes(ctx, 2), rtol=1e-12)
    w_per_seq = np.asarray(s.weight_time) / B
    assert w_per_seq[-1] < w_per_seq[0] / 4  # weights are amortised


# ----- MQA < MLA < GQA < MHA, per layer per token ------------------------------------------

@pytest.mark.whole_catalogue
def test_attention_kind_ordering_per_layer():
    # Claim: cached numbers per token per layer order MQA < MLA < GQA < MHA across the catalogue.
    per_layer = {}
    for m in ALL:
        per_layer.setdefault(m.attention_kind, []).append(m.kv_elements_per_token_per_layer)
    order = ["MQA", "MLA", "GQA", "MHA"]
    for lo, hi in zip(order, order[1:], strict=False):
        assert max(per_layer[lo]) < min(per_layer[hi]), (lo, hi, per_layer)


@each("m", [m for m in ALL if m.kv_lora_rank is None], ids=lambda m: m.name)
def test_gqa_saves_the_group_size(m):
    # Rebuilding a model with one KV head per query head (MHA) or a single one (MQA):
    # bytes per token scale with n_kv exactly, so GQA saves n_q / n_kv.
    mha = m.replace(n_kv_heads=m.n_heads)
    mqa = m.replace(n_kv_heads=1)
    assert mha.kv_bytes_per_token() >= m.kv_bytes_per_token() >= mqa.kv_bytes_per_token()
    assert (mha.kv_bytes_per_token() / m.kv_bytes_per_token()
            == pytest.approx(m.n_heads / m.n_kv_heads))


def test_mla_versus_its_mha_and_gqa_rebuilds():
    # DeepSeek-V3's 576 cached numbers per layer vs an MHA of its 128 heads (K 192, V 128 wide: we
    # use d_h 192 for both, an upper bound) and a GQA-8 of d_h 128: at least 50x and 3x smaller.
    ds = models.get("DeepSeek-V3")
    mha = ds.replace(kv_lora_rank=None, n_kv_heads=128, head_dim=192)
    gqa8 = ds.replace(kv_lora_rank=None, n_kv_heads=8, head_dim=128)
    assert mha.kv_bytes_per_token() / ds.kv_bytes_per_token() > 50
    assert gqa8.kv_bytes_per_token() / ds.kv_bytes_per_token() > 3


# ----- memory capacity caps the batch ------------------------------------------------------

@each("m", ALL, ids=IDS)
@each("chip", BF16, ids=lambda c: c.name)
def test_max_batch_non_increasing_in_context(m, chip):
    n = min_chips(m, chip) * 2  # room for some KV
    S = np.unique(np.geomspace(128, m.max_context or 131072, 40).round())
    b = max_batch(m, chip, S, n_chips=n)
    assert np.all(np.diff(b) <= 0), m.name
    if not CAPPED.count(m):
        # full attention: doubling the context halves the batch (up to the floor)
        b1, b2 = max_batch(m, chip, 1024, n_chips=n), max_batch(m, chip, 2048, n_chips=n)
        assert b2 in (b1 // 2, (b1 - 1) // 2, b1 // 2 - 1) or b1 < 2


@each("m", [m for m in FULL if not m.is_moe], ids=lambda m: m.name)
@each("chip", BF16, ids=lambda c: c.name)
def test_full_hbm_step_takes_about_the_drain_time(m, chip):
    # Claim: when HBM is filled with weights and KV (B = B_max, dense model), a memory-bound decode
    # step reads nearly all of it, so it takes about the drain time M / W and never longer.
    n = min_chips(m, chip) * 2
    ctx = m.max_context
    b = max_batch(m, chip, ctx, n_chips=n)
    if b < 10:
        pytest.skip("fewer than 10 sequences fit: the floor loses more than 10%")
    s = decode_step(m, chip, b, ctx, n_chips=n)
    assert s.memory_time <= chip.drain_time * (1 + 1e-9)
    assert s.memory_time >= 0.85 * chip.drain_time


def test_min_chips_example_llama31_70b():
    # The chapter's example: Llama-3.1-70B, batch 64 x 128k tokens on H100s needs 37 chips for
    # memory alone (weights 141 GB + 64 x 42.9 GB of KV).
    llama = models.get("Llama-3-70B").replace(name="Llama-3.1-70B", max_context=131072)
    assert min_chips(llama, chips.get("H100-SXM"), batch=64, context=131072) == 37


@each("m", FULL, ids=[m.name for m in FULL])
def test_pipelining_divides_weights_not_kv(m):
    # Flashcard 13: with P micro-batches in flight, weights per chip fall as 1/P, KV per chip does
    # not.
    ctx = min(8192, m.max_context)
    one = pipeline_memory_per_chip(m, micro_batch=64, context=ctx, expert_parallel=8,
                                   stages=1)
    four = pipeline_memory_per_chip(m, micro_batch=64, context=ctx, expert_parallel=8,
                                    stages=4)
    assert four.weights == pytest.approx(one.weights / 4)
    assert four.kv == pytest.approx(one.kv)


# ----- the critical context ----------------------------------------------------------------

@each("m, chip", PAIRS, ids=PAIR_IDS)
def test_critical_context_finite_and_memory_bound_at_every_batch_beyond(m, chip):
    # with attention FLOPs counted (the library's default); MLA on a chip with fewer FLOPs per byte
    # than its attention does has none (test_mla_attention_flops_are_near_the_ridge)
    try:
        s_star = critical_context(m, chip)
    except ValueError:
        assert m.attention_kind == "MLA", (m.name, chip.name)
        return
    assert np.isfinite(s_star) and s_star > 0
    free = _unlimited(m)
    B = np.geomspace(1, 1e6, 61)
    beyond = decode_step(free, chip, B, 1.01 * s_star)
    assert np.all(np.asarray(beyond.bound) == "memory"), (m.name, chip.name)
    # ... and below it a large enough batch is compute-bound
    b_star = critical_batch(free, chip, context=0.9 * s_star)
    below = decode_step(free, chip, 1.5 * b_star, 0.9 * s_star)
    assert below.bound == "compute"


@each("m, chip", PAIRS, ids=PAIR_IDS)
def test_critical_context_depends_on_the_chip_only_through_its_ridge(m, chip):
    # The closed form (the episode's approximation, attention FLOPs left out):
    # S* = 2 N W / (C b_kv): S* x C/W is the same on every chip; halving the KV bytes doubles it,
    # and implied_kv_bytes_per_token inverts it exactly.
    h100 = chips.get("H100-SXM")

    def cc(model, c, **kw):
        return critical_context(model, c, attention_flops=False, **kw)

    ref = cc(m, h100) * h100.ops_per_byte()
    assert cc(m, chip) * chip.ops_per_byte() == pytest.approx(ref, rel=1e-9)
    # fewer bytes per element move it out by the ratio of bytes per token (2 and 4 for K and V;
    # less for MLA, whose quantised latent keeps a bf16 RoPE key and fp32 scales)
    for b in (1, 0.5):
        ratio = m.kv_bytes_per_token(2) / m.kv_bytes_per_token(b)
        if m.kv_lora_rank is None and not m.has_indexer:
            assert ratio == 2 / b
        assert cc(m, chip, kv_bytes=b) == pytest.approx(ratio * cc(m, chip), rel=1e-9)
    back = implied_kv_bytes_per_token(m.matmul_params_active, chip, cc(m, chip))
    assert back == pytest.approx(m.kv_bytes_per_token(2), rel=1e-9)


def test_critical_context_values_in_the_text():
    # The closed form S* = 2 N_mm W / (C b_kv), by hand: Llama-3-70B 80 x (8192 x 10240 + 8192^2
    # + 3 x 8192 x 28672) + 128,256 x 8192 = 69.50e9 matmul parameters, 327,680 B/token of bf16
    # KV: 2 x 69.50e9 x 3.35e12 / (989.4e12 x 327,680) = 1,436; DeepSeek-V3 36.625e9 and
    # 70,272 B/token (term by term in test_claims_decode_roofline): 3,529. Counted with attention
    # FLOPs DeepSeek-V3's is ~19.5k (issue 11), Llama's ~1,476 (x 1/(1 - 8/295.3)).
    h100 = chips.get("H100-SXM")
    l70, ds = models.get("Llama-3-70B"), models.get("DeepSeek-V3")
    assert critical_context(l70, h100, attention_flops=False) == pytest.approx(1436, abs=1)
    assert critical_context(ds, h100, attention_flops=False) == pytest.approx(3529, abs=1)
    assert critical_context(l70, h100) == pytest.approx(1436 / (1 - 8 / 295.34), rel=1e-3)
    assert critical_context(ds, h100) == pytest.approx(19_460, rel=0.005)


@each("m", FULL, ids=[m.name for m in FULL])
def test_critical_context_below_supported_context_for_long_context_models(m):
    # Claim: every grouped-query catalogue model supporting 32k+ tokens is memory-bound at any batch
    # over most of its window on every bf16 chip: S* is under 1/8 of max_context (and under 12k).
    if m.max_context < 32768 or m.attention_kind not in ("MHA", "GQA"):
        pytest.skip("short-context or MLA model (MLA: test_mla_attention_flops_are_near_the_ridge)")
    for chip in BF16:
        s = critical_context(m, chip)
        assert s < m.max_context / 8 and s < 12_000, (m.name, chip.name, s)


def test_ridge_points_span_a_factor_under_four():
    # Claim: the catalogue's bf16 chips keep C/W between about 150 and 560 FLOP/byte, so the same
    # model's S* varies by under 4x from chip to chip.
    r = [c.ops_per_byte() for c in BF16]
    assert 140 < min(r) and max(r) < 600 and max(r) / min(r) < 4


def test_no_chip_moves_s_star_more_than_twofold_from_an_h100():
    # Claim (section "The critical context"): against an H100's ridge, no chip in the catalogue
    # moves S* by more than a factor of two either way. S* scales as W/C (first approximation), so
    # the claim is on the ridge points; H100 SXM: 989.4 TFLOP/s / 3.35 TB/s = 295 FLOP/byte.
    h100 = 989.4e12 / 3.35e12
    assert chips.get("H100-SXM").ops_per_byte() == pytest.approx(h100, rel=1e-3)
    for c in BF16:
        assert max(c.ops_per_byte() / h100, h100 / c.ops_per_byte()) < 2, c.name
        m = models.get("Llama-3-70B")
        ratio = critical_context(m, c, attention_flops=False) / critical_context(
            m, chips.get("H100-SXM"), attention_flops=False)
        assert ratio == pytest.approx(h100 / c.ops_per_byte(), rel=1e-9), c.name


@each("m", [m for m in FULL if m.attention_kind in ("MHA", "GQA")],
                         ids=lambda m: m.name)
def test_attention_flops_move_gqa_mha_critical_context_little(m):
    # Leaving attention's FLOPs out of the compute side moves S* by under 12% for MHA/GQA models on
    # every chip: they do n_q / n_kv (<= 16) FLOP per cached byte at bf16, far below C/W.
    for chip in BF16:
        plain = critical_context(m, chip, attention_flops=False)
        with_attn = critical_context(_unlimited(m), chip, attention_flops=True)
        assert 1.0 <= with_attn / plain < 1.12, (m.name, chip.name)


def test_mla_attention_flops_are_near_the_ridge():
    # MLA's absorbed attention does ~242 FLOP per cached byte (bf16): close to the ridge, so with
    # attention FLOPs counted S* grows several-fold or disappears.
    ds = _unlimited(models.get("DeepSeek-V3"))
    per_byte = ds._attention_flops_per_context_token / (ds.kv_elements_per_token_per_layer * 2)
    assert 200 < per_byte < 300
    for chip in BF16:
        plain = critical_context(ds, chip, attention_flops=False)
        try:
            with_attn = critical_context(ds, chip, attention_flops=True)
        except ValueError:
            assert chip.ops_per_byte() <= per_byte
            continue
        assert with_attn > 1.7 * plain


# ----- sliding windows and sparse attention ------------------------------------------------

@each("m", CAPPED, ids=[m.name for m in CAPPED])
def test_capped_models_read_less_than_a_dense_rebuild_at_long_context(m):
    S = float(m.max_context)
    dense = m.kv_bytes_per_token(2) * S
    assert m.kv_read_bytes(S, 2) < 0.6 * dense
    if m.sparse_attention_topk is not None:
        # sparse: holds everything (the indexer's keys too), reads top-k plus the indexer's keys
        assert m.kv_cache_bytes(S, 2) == pytest.approx(dense)
        assert m.kv_read_bytes(S, 2) < m.kv_cache_bytes(S, 2) / 5
    if m.n_sliding_layers:
        # sliding: holds and reads the same capped amount
        assert m.kv_cache_bytes(S, 2) == pytest.approx(m.kv_read_bytes(S, 2))
        assert m.kv_cache_bytes(S, 2) < 0.6 * dense


@each("m", [m for m in CAPPED if m.n_sliding_layers], ids=lambda m: m.name)
def test_sliding_windows_raise_the_critical_context(m):
    full = m.replace(n_sliding_layers=0, sliding_window=None)
    for chip in BF16:
        assert critical_context(m, chip) > critical_context(full, chip)


@each("chip", BF16, ids=lambda c: c.name)
def test_sparse_topk_alone_has_a_critical_context_only_where_the_cap_exceeds_the_balance(chip):
    # Without its indexer's reads DeepSeek-V3.2 reads at most top-k = 2048 tokens per layer: 144 MB
    # per sequence per step in bf16. Where one token's compute time is worth more bytes than that
    # (2 N W / C), decode never becomes memory-bound at every batch (first approximation).
    m = models.get("DeepSeek-V3.2").replace(index_n_heads=None, index_head_dim=None,
                                            index_key_bytes=None)
    cap = m.kv_read_bytes(m.max_context, 2)
    assert cap == pytest.approx(61 * 2048 * 576 * 2)
    balance = 2 * m.matmul_params_active / chip.ops_per_byte()
    if balance > cap:
        with pytest.raises(ValueError, match="capped"):
            critical_context(m, chip, attention_flops=False)
        assert chip.ops_per_byte() < 510
    else:
        assert critical_context(m, chip, attention_flops=False) <= m.sparse_attention_topk


@each("chip", BF16, ids=lambda c: c.name)
def test_v32_indexer_reads_give_it_a_critical_context_on_every_chip(chip):
    # The indexer's keys (132 B per token per layer) are read for every cached token, so the reads
    # grow without bound: V3.2 has a critical context on every chip, with or without attention
    # FLOPs, later than V3's (the attention reads are capped), and inside its window where
    # C/W >= 250.
    m, v3 = models.get("DeepSeek-V3.2"), models.get("DeepSeek-V3")
    for attn in (False, True):
        s = critical_context(m, chip, attention_flops=attn)
        # at S*, one sequence's reads take as long as its compute (bf16: attention at the bf16 peak,
        # the indexer's scoring at the fp8 peak where there is one)
        C, W = chip.peak("bf16"), chip.hbm_bandwidth
        C8 = max(C, chip.flops.get("fp8", 0.0))
        reads = (61 * min(s, 2048) * 1152 + 61 * s * 132) / W
        compute = 2 * m.matmul_params_active / C
        if attn:
            compute += 61 * min(s, 2048) * 278_528 / C + 61 * s * 2 * 64 * 129 / C8
        assert reads == pytest.approx(compute, rel=1e-9)
        # on an H100 the cap moves it out (the chapter's "about 1.8x"); not on every chip: where V3
        # crosses below 2,048 tokens (TPU v6e) or its attention is near compute-bound (MI300X), the
        # indexer's extra reads bring V3.2's crossing in instead
    h100 = chips.get("H100-SXM")
    assert critical_context(m, h100) / critical_context(v3, h100) == pytest.approx(1.8, abs=0.05)
    if chip.ops_per_byte() >= 250:
        assert critical_context(m, chip) < m.max_context


# ----- reading architecture from a price step (flashcards 21-23) -------------------------

def test_price_step_implies_about_two_kilobytes_per_token():
    # Episode: a 200k-token crossover with 100B active parameters implies N_act / (300 S) ~ 1.7 kB
    # per token when "300" counts multiply-adds per byte (C/W = 600 FLOP/byte). With GB200 at fp8
    # (C/W = 625) it is 1.6 kB; with H100 at bf16 (295) about twice that.
    gb = chips.get("GB200")
    assert implied_kv_bytes_per_token(100e9, gb, 200e3, "fp8") == pytest.approx(1600, rel=0.01)
    assert implied_kv_bytes_per_token(100e9, chips.get("H100-SXM"), 200e3) == pytest.approx(
        3386, rel=0.01)
    assert 100e9 / (300 * 200e3) == pytest.approx(1667, rel=0.01)
    # every catalogue model caches more than that per token in bf16 (so none of them could price a
    # 200k step at 100B active): the smallest is PaLM-8B's MQA at 32 kB
    assert min(m.kv_bytes_per_token(2) for m in ALL) > 10 * 1700


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    # exact (same physics, no windows): the library's critical context with attention FLOPs
    from llmmath.roofline import critical_context
    for m in DENSE_GQA:
        for c in BF16_CHIPS:
            got = ns["critical_context_gqa"](m.matmul_params_active, m.n_layers, m.n_heads,
                                             m.n_kv_heads, m.head_dim, c.peak("bf16"),
                                             c.hbm_bandwidth)
            assert got == pytest.approx(critical_context(m, c), rel=1e-9), (m.name, c.name)


# ----- the worked numbers, by hand against the glued prose (corrections v2) -------------------

_NB = Path(__file__).resolve().parents[1] / "book" / "kv_cache.ipynb"
_UNITS = {"ms": 1e-3, "µs": 1e-6, "s": 1.0, "k": 1e3, "B": 1.0, "bytes": 1.0,
          "x": 1.0, "×": 1.0, "": 1.0}


def _glued(name):
    return glued(_NB, name)


def _value(name):
    """A glued number in SI: "17.6 µs" -> 1.76e-5, "1,667 bytes" -> 1667, "2.12x" -> 2.12."""
    return glued_number(_NB, name, _UNITS)[0]


# H100 SXM datasheet: 989.4 TFLOP/s bf16, 1,978.9 fp8, 3.35 TB/s. DeepSeek-V3: 36.625e9 matmul
# parameters active, 61 layers, a bf16 latent row of (512 + 64) x 2 = 1,152 B, absorbed attention
# 128 x 2 x (576 + 512) = 278,528 FLOP per cached token per layer. FlashMLA and DeepGEMM measured
# on an H800 (chapter 1): 660 TFLOP/s of MLA attention at 3.0 TB/s, 1,350 TFLOP/s of fp8 GEMM.
_C, _C8, _W = 989.4e12, 1978.9e12, 3.35e12
_NMM, _B_KV, _A = 36.625e9, 61 * 1152, 61 * 278_528


def _mla_s_star(c_mm, c_attn, bw):
    """S* = (2 N_mm / C_mm) / (b_kv / W - a / C_attn): one sequence's reads equal its compute."""
    slack = _B_KV / bw - _A / c_attn
    return math.inf if slack <= 0 else 2 * _NMM / c_mm / slack


def _cc(model, chip, **kw):
    try:
        return critical_context(model, chip, **kw)
    except ValueError:
        return math.inf


def _h100(scale_c=1.0, scale_w=1.0, bf16=_C, fp8=_C8, bw=_W):
    return Chip(name="H100 variant", flops={"bf16": bf16 * scale_c, "fp8": fp8 * scale_c},
                hbm_bandwidth=bw * scale_w, hbm_capacity=80e9)


def test_deepseek_v3_critical_context_is_a_range_and_ill_conditioned():
    ds, h100 = models.get("DeepSeek-V3"), chips.get("H100-SXM")
    # the range the chapter prints, by hand: all bf16 19,457; fp8 GEMMs with bf16 MLA attention
    # 9,728; at the measured kernel rates attention (2.57e-8 s per cached token) outruns the reads
    # (2.34e-8 s): no crossing
    assert _cc(ds, h100) == pytest.approx(_mla_s_star(_C, _C, _W), rel=1e-3)
    assert _cc(ds, h100, dtype="fp8") == pytest.approx(_mla_s_star(_C8, _C, _W), rel=1e-3)
    assert _value("s_ds_fp8") == pytest.approx(_mla_s_star(_C8, _C, _W), abs=1)
    assert _value("s_ds") == pytest.approx(_mla_s_star(_C, _C, _W), rel=1e-3)
    assert math.isinf(_mla_s_star(1350e12, 660e12, 3.0e12))
    assert math.isinf(_cc(ds, _h100(bf16=660e12, fp8=1350e12, bw=3.0e12), dtype="fp8"))
    assert _value("mla_meas_ridge") == pytest.approx(660 / 3.0, abs=0.5)
    # W2: it is a full-attention model whose S* exceeds the GQA bound the text quotes
    assert _cc(ds, h100) > _value("s_worst")
    # ill-conditioned (the rule for printing a range): a 20% change of the chip's FLOP/s or
    # bandwidth moves DeepSeek-V3's S* by more than 2x or removes it, and a GQA model's by < 30%
    llama = models.get("Llama-3-70B")
    for kw in (dict(scale_c=0.8), dict(scale_c=1.2), dict(scale_w=0.8), dict(scale_w=1.2)):
        moved = _cc(ds, _h100(**kw)) / _cc(ds, h100)
        assert moved > 2 or moved < 0.5, (kw, moved)
        assert 0.7 < _cc(llama, _h100(**kw)) / _cc(llama, h100) < 1.3, kw


def test_per_token_compute_at_32k_is_matmuls_plus_attention():
    # Llama 3.1 70B on 8 H100s at 32,768 tokens: matmuls 2 x 69.50e9 / (8 x 989.4e12) = 17.56 us;
    # attention 4 x 80 x 64 x 128 x 32,768 / (8 x 989.4e12) = 10.85 us per token
    mm, attn = 2 * 69.50e9 / (8 * _C), 4 * 80 * 64 * 128 * 32768 / (8 * _C)
    assert _value("c_mm_tok") == pytest.approx(mm, rel=0.005)
    assert _value("c_attn_tok") == pytest.approx(attn, rel=0.005)
    assert _value("c_tok") == pytest.approx(mm + attn, rel=0.005)


def test_405b_exercise_formula_gives_its_printed_number():
    # Llama 3.1 405B: N_act 405.85e9, b_kv = 2 x 126 x 8 x 128 x 2 = 516,096 B; the printed
    # formula S* = (2 N_act / b_kv) / (C/W) = 5,325; fp8 halves b_kv: exactly twice that
    hand = 2 * 405.85e9 / 516_096 / (_C / _W)
    assert _value("ex2_formula") == pytest.approx(hand, abs=1)
    assert _value("ex2_formula_fp8") == pytest.approx(2 * hand, abs=1)
    # the library: N_mm (403.75e9) alone gives 5,298; attention's FLOPs move it to 5,601, and
    # the fp8 cache a little more than doubles it
    l405 = models.get("Llama-3.1-405B")
    assert _value("ex2_first") == pytest.approx(2 * 403.75e9 / 516_096 / (_C / _W), rel=1e-3)
    ratio = critical_context(l405, chips.get("H100-SXM"), kv_bytes=1) / critical_context(
        l405, chips.get("H100-SXM"))
    assert 2.0 < ratio < 2.2 and _value("ex2_fp8_ratio") == pytest.approx(ratio, abs=0.005)


def test_price_step_readings_agree_with_chapter_6():
    # the episode's reading, I* = 600 FLOP/B: b_kv = 2 x 100e9 / (600 x 200,000) = 1,667 B (the
    # number chapter 6 prints); the per-operation reading of the 1.5x step is (1.5 - 1) x that
    corner = 2 * 100e9 / (600 * 200_000)
    assert _value("b_implied") == pytest.approx(corner, abs=0.5)
    assert _value("b_ratio_perop") == pytest.approx(0.5 * corner, abs=0.5)


def test_indexer_keys_are_a_ninth_of_a_bf16_latent_in_bytes():
    # 128 fp8 values + a 4-byte scale = 132 B against (512 + 64) x 2 = 1,152 B per layer
    assert _value("idx_row") == 132 and _value("latent_row") == 1152
    assert 1 / 10 < 132 / 1152 < 1 / 8
    ds32 = models.get("DeepSeek-V3.2")
    assert ds32.indexer_cache_bytes(1) / ds32.n_layers == 132


def test_v32_critical_context_with_the_fp8_latent():
    # FlashMLA's 656-B fp8 row, attention in bf16 (dequantised), the indexer at fp8: one
    # sequence's reads 61 (2,048 x 656 + S x 132) / W equal its compute at S* = 44.7k tokens
    ds32 = models.get("DeepSeek-V3.2")
    s = critical_context(ds32, chips.get("H100-SXM"), kv_bytes=1)
    reads = 61 * (2048 * 656 + s * 132) / _W
    compute = (2 * ds32.matmul_params_active / _C + 61 * 2048 * 278_528 / _C
               + 61 * s * 2 * 64 * 129 / _C8)
    assert reads == pytest.approx(compute, rel=1e-9)
    assert _value("s_ds32_fp8") == pytest.approx(s, abs=1)
    assert 1.2 < s / critical_context(ds32, chips.get("H100-SXM")) < 1.35

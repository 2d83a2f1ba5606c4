"""Unit and property tests of llmmath.roofline (decode/prefill bounds, balance points, capacity)."""


import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import chips, models
from llmmath.chips import Chip
from llmmath.models import Model
from llmmath.roofline import (
    Step,
    arithmetic_intensity,
    attainable_flops,
    critical_batch,
    critical_context,
    decode_step,
    drain_time,
    max_batch,
    max_context,
    min_chips,
    min_latency,
    prefill_step,
)
from llmmath.step import serial_step

H100 = chips.get("H100-SXM")
LLAMA = models.get("Llama-3-70B")
DSV3 = models.get("DeepSeek-V3")
TOY = Model(name="toy", n_layers=64, d_model=4096, d_ff=16384, n_heads=32, n_kv_heads=8,
            head_dim=256, vocab_size=32128, tied_embeddings=True)
CHIP = Chip(name="unit chip", flops={"bf16": 1e15, "fp8": 2e15}, hbm_bandwidth=2e12,
            hbm_capacity=100e9, price_per_hour=2.0)
# The models the sweeps and property tests run over, by name: toy_moe is conftest.py's fixture
# (a small MoE with a shared expert and tied embeddings), so a test reads them from models_by_name.
MODELS = ["LLAMA", "DSV3", "TOY", "toy_moe"]


@pytest.fixture(scope="module")
def models_by_name(toy_moe):
    """The models of MODELS by their names there."""
    return {"LLAMA": LLAMA, "DSV3": DSV3, "TOY": TOY, "toy_moe": toy_moe}


# ----- decode_step ---------------------------------------------------------------------------

def test_decode_step_matches_hand_formula():
    B, S, n = 64, 4096, 8
    s = decode_step(LLAMA, H100, batch=B, context=S, n_chips=n)
    C, W = 989.4e12, 3.35e12  # H100 SXM datasheet, bf16 dense
    # Llama-3-70B by hand (Meta model card: 80 layers, D 8192, 64 query / 8 KV heads of 128,
    # SwiGLU 28672, vocabulary 128,256, untied): matmul parameters 80 x (8192 x 10240 + 8192^2
    # + 3 x 8192 x 28672) + 128,256 x 8192 = 69,501,714,432; read per step: those, the
    # (2 x 80 + 1) x 8192 = 1,318,912 norm scales and B gathered embedding rows of 8192.
    N_mm, read = 69_501_714_432, 69_501_714_432 + 1_318_912 + B * 8192
    # QK^T and AV: 2 x 2 FLOP per multiply-add, 64 heads of 128, 80 layers, per cached token
    attn = B * 4 * 64 * 128 * 80 * S / (n * C)
    compute = B * 2 * N_mm / (n * C) + attn
    weights = read * 2 / (n * W)
    kv = B * S * 80 * 2 * 8 * 128 * 2 / (n * W)  # 327,680 B per cached token
    assert isinstance(s, Step)
    assert s.compute_time == pytest.approx(compute, rel=1e-12)
    assert s.weight_time == pytest.approx(weights, rel=1e-12)
    assert s.kv_time == pytest.approx(kv, rel=1e-12)
    assert s.memory_time == pytest.approx(weights + kv, rel=1e-12)
    assert s.time == pytest.approx(max(compute, weights + kv), rel=1e-12)
    assert s.bound == "memory"
    assert s.attention_time == pytest.approx(attn, rel=1e-12)
    assert s.flops == pytest.approx(B * (2 * N_mm + 4 * 64 * 128 * 80 * S))
    assert s.weight_bytes_read == pytest.approx(read * 2)
    assert s.kv_bytes_read == pytest.approx(B * S * 327_680)
    assert (s.tokens, s.batch, s.n_chips) == (64, 64, 8)
    assert isinstance(s.time, float) and isinstance(s.bound, str)


def test_decode_core_inequality_dense_weights_are_nearly_n_tot():
    # DESIGN §4: weights term is N_tot b_w (the untied input embedding only gathers B rows).
    s = decode_step(LLAMA, H100, batch=1, context=0)
    assert s.weight_bytes_read == pytest.approx(LLAMA.total_params * 2, rel=0.02)
    assert s.weight_bytes_read < LLAMA.total_params * 2


def test_decode_bound_switches_from_memory_to_compute():
    small = decode_step(TOY, H100, batch=1, context=0)
    big = decode_step(TOY, H100, batch=4096, context=0)
    assert small.bound == "memory" and big.bound == "compute"
    assert big.time == pytest.approx(big.compute_time)


def test_decode_attention_flops_flag_adds_context_dependent_flops():
    a = decode_step(LLAMA, H100, 8, 8000, attention_flops=False)
    b = decode_step(LLAMA, H100, 8, 8000)
    extra = 8 * LLAMA.attention_flops_per_token(8000)
    assert b.flops - a.flops == pytest.approx(extra)
    assert b.compute_time > a.compute_time


def test_decode_per_op_serialises_kv_reads():
    s = decode_step(LLAMA, H100, 256, 8000, n_chips=8, overlap="per-op")
    # each kernel overlaps its own traffic: attention with the KV reads, matmuls with weights
    assert s.time == pytest.approx(max(s.attention_time, s.kv_time)
                                   + max(s.matmul_time, s.weight_time))
    assert s.compute_time == pytest.approx(s.attention_time + s.matmul_time)
    # the episode's form (no attention FLOPs) serialises the KV reads
    e = decode_step(LLAMA, H100, 256, 8000, n_chips=8, overlap="per-op", attention_flops=False)
    assert e.time == pytest.approx(e.kv_time + max(e.compute_time, e.weight_time))
    assert s.time >= decode_step(LLAMA, H100, 256, 8000, n_chips=8).time
    assert s.overlap == "per-op"


def test_decode_efficiencies_derate_peaks():
    base = decode_step(TOY, CHIP, 100, 1000)
    derated = decode_step(TOY, CHIP, 100, 1000, compute_efficiency=0.5, memory_efficiency=0.25)
    assert derated.compute_time == pytest.approx(2 * base.compute_time)
    assert derated.weight_time == pytest.approx(4 * base.weight_time)
    assert derated.kv_time == pytest.approx(4 * base.kv_time)


def test_decode_dtype_and_weight_bytes():
    bf = decode_step(TOY, CHIP, 10, 100)
    fp8 = decode_step(TOY, CHIP, 10, 100, dtype="fp8", weight_bytes=1, kv_bytes=1,
                      attention_dtype="fp8")
    assert fp8.compute_time == pytest.approx(bf.compute_time / 2)
    assert fp8.weight_time == pytest.approx(bf.weight_time / 2)
    assert fp8.kv_time == pytest.approx(bf.kv_time / 2)


def test_moe_decode_reads_only_touched_experts():
    one = decode_step(DSV3, H100, batch=1, context=0, n_chips=8)
    many = decode_step(DSV3, H100, batch=100_000, context=0, n_chips=8)
    assert one.weight_bytes_read < 0.1 * DSV3.total_params * 2  # ~k experts, not all E
    assert one.weight_bytes_read >= DSV3.active_params * 2 * 0.95
    assert many.weight_bytes_read == pytest.approx(DSV3.total_params * 2, rel=0.01)


def test_decode_broadcasts_over_arrays():
    B = np.array([1, 16, 256, 4096])[:, None]
    S = np.array([0, 1024, 8192])[None, :]
    s = decode_step(LLAMA, H100, B, S, n_chips=8)
    for name in ("compute_time", "weight_time", "kv_time", "memory_time", "time", "flops",
                 "weight_bytes_read", "kv_bytes_read", "tokens", "batch", "n_chips"):
        assert np.shape(getattr(s, name)) == (4, 3), name
    assert s.bound.shape == (4, 3)
    assert set(np.unique(s.bound)) <= {"compute", "memory"}
    scalar = decode_step(LLAMA, H100, 256, 1024, n_chips=8)
    assert s.time[2, 1] == pytest.approx(scalar.time)
    assert s.bound[2, 1] == scalar.bound
    assert np.all(np.isfinite(s.time))


def test_decode_million_point_sweep_is_one_call():
    # Its speed is measured by make bench (scripts/bench.py), never asserted in a test.
    B, S = np.meshgrid(np.arange(1, 1001), np.linspace(0, 8000, 1000))
    s = decode_step(LLAMA, H100, B, S, n_chips=8)
    assert s.time.shape == (1000, 1000)
    assert np.all(np.isfinite(s.time)) and np.all(s.time > 0)
    assert s.time[999, 0] == pytest.approx(decode_step(LLAMA, H100, 1, 8000, n_chips=8).time)


@pytest.mark.parametrize("kwargs, arg", [
    (dict(batch=0), "batch"), (dict(batch=-3), "batch"), (dict(context=-1), "context"),
    (dict(n_chips=0), "n_chips"), (dict(weight_bytes=0), "weight_bytes"),
    (dict(kv_bytes=-2), "kv_bytes"), (dict(overlap="sometimes"), "overlap"),
    (dict(compute_efficiency=1.5), "compute_efficiency"),
    (dict(memory_efficiency=0), "memory_efficiency"), (dict(batch=np.nan), "batch"),
    (dict(dtype="fp4"), "dtype"),
])
def test_decode_validates_inputs(kwargs, arg):
    args = dict(batch=8, context=128)
    args.update(kwargs)
    with pytest.raises(ValueError, match=arg):
        decode_step(TOY, CHIP, **args)


def test_decode_error_names_allowed_values():
    with pytest.raises(ValueError, match="per-op"):
        decode_step(TOY, CHIP, 1, 1, overlap="op")
    with pytest.raises(ValueError, match="bf16"):
        decode_step(TOY, CHIP, 1, 1, dtype="fp4")


def test_decode_context_beyond_model_limit_raises():
    with pytest.raises(ValueError, match="context"):
        decode_step(LLAMA, H100, 1, 10**6)


# ----- prefill_step --------------------------------------------------------------------------

def test_prefill_matches_hand_formula():
    B, P, n = 2, 4096, 8
    s = prefill_step(LLAMA, H100, batch=B, prompt=P, n_chips=n)
    C, W = 989.4e12, 3.35e12
    # causal attention: query i attends to i tokens (itself included), 4 x 64 x 128 x 80 FLOP
    # each, summed over i = 1..4096: 2,621,440 x 8,390,656 = 21,995,601,264,640 per sequence
    flops = B * P * 2 * 69_501_714_432 + B * 2_621_440 * (P * (P + 1) // 2)
    assert s.flops == pytest.approx(flops)
    assert s.compute_time == pytest.approx(flops / (n * C))
    # weights: the matmuls, the norms and one embedding row per prompt token (8192 of them)
    read = 69_501_714_432 + 1_318_912 + B * P * 8192
    assert s.weight_time == pytest.approx(read * 2 / (n * W))
    assert s.kv_time == pytest.approx(B * P * 327_680 / (n * W))  # the prompt's KV, written
    assert s.tokens == B * P and s.batch == B
    assert s.bound == "compute" and s.kind == "prefill"


def test_prefill_short_prompt_is_memory_bound():
    assert prefill_step(LLAMA, H100, 1, 16, n_chips=8).bound == "memory"


def test_prefill_past_adds_kv_read_and_attention():
    fresh = prefill_step(LLAMA, H100, 1, 512)
    cached = prefill_step(LLAMA, H100, 1, 512, past=4096)
    assert cached.kv_bytes_read == pytest.approx(
        LLAMA.kv_cache_bytes(4608) - LLAMA.kv_cache_bytes(4096) + LLAMA.kv_read_bytes(4096))
    assert cached.flops > fresh.flops
    no_attn = prefill_step(LLAMA, H100, 1, 512, attention_flops=False)
    # whole numbers below 2**53: the matmul FLOPs alone, exactly, and nothing for attention
    assert no_attn.flops == 512 * 2 * LLAMA.matmul_params_active
    assert no_attn.attention_time == 0.0 and no_attn.model is LLAMA


def test_prefill_overlap_is_the_one_asked_for():
    """A prompt of 64 after 100,000 cached tokens on Llama 3.1 405B (H100): the matmuls are
    memory-bound (the 810 GB weight read outlasts 64 tokens' FLOPs) while attention is
    compute-bound (64 x 100,064 pairs against 100,000 tokens of cache), so the two overlap
    models differ: max(compute, memory) for the whole step, the sum of each kernel's max."""
    m = models.get("Llama-3.1-405B")
    step = prefill_step(m, H100, 1, 64, past=100_000)
    per_op = prefill_step(m, H100, 1, 64, past=100_000, overlap="per-op")
    assert step.matmul_time < step.weight_time and step.attention_time > step.kv_time
    assert step.time == max(step.compute_time, step.memory_time) and step.overlap == "step"
    assert per_op.time == pytest.approx(step.attention_time + step.weight_time, rel=1e-12)
    assert per_op.time > 1.1 * step.time


def test_prefill_counts_the_indexer_of_sparse_attention():
    """DeepSeek-V3.2's indexer scores every earlier token for each prompt token: its FLOPs join
    the step's, per sequence (2 sequences here), and a model without one adds none."""
    v32 = models.get("DeepSeek-V3.2")
    s = prefill_step(v32, H100, 2, 1000)
    assert s.flops == pytest.approx(2 * (1000 * 2 * v32.matmul_params_active
                                         + v32.prefill_attention_flops(1000)
                                         + v32.prefill_indexer_flops(1000)), rel=1e-12)
    assert v32.prefill_indexer_flops(1000) > 0
    no_indexer = v32.replace(name="no indexer", index_n_heads=None, index_head_dim=None,
                             index_key_bytes=None)
    s = prefill_step(no_indexer, H100, 2, 1000)
    assert s.flops == pytest.approx(2 * (1000 * 2 * no_indexer.matmul_params_active
                                         + no_indexer.prefill_attention_flops(1000)), rel=1e-12)


def test_prefill_validates():
    with pytest.raises(ValueError, match="prompt"):
        prefill_step(TOY, CHIP, 1, 0)
    with pytest.raises(ValueError, match="past"):
        prefill_step(TOY, CHIP, 1, 10, past=-1)
    # a past beyond the model's window is named as the past, before past + prompt is
    l8 = models.get("Llama-3-8B")
    with pytest.raises(ValueError, match=r"^past: got 1e\+06 tokens; Llama-3-8B supports at most"):
        prefill_step(l8, H100, 1, 1, past=10**6)


# ----- critical batch and context ------------------------------------------------------------

def test_critical_batch_dense_tied_is_ops_per_byte_times_bw_over_2():
    cb = critical_batch(TOY, CHIP)
    expected = CHIP.ops_per_byte() * 2 / 2 * TOY.weight_params_read(1) / TOY.matmul_params_active
    assert cb == pytest.approx(expected, rel=1e-9)
    assert critical_batch(TOY, CHIP, weight_bytes=1) == pytest.approx(cb / 2)


@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("frac", [0, 0.5])
def test_at_critical_batch_compute_equals_memory(models_by_name, name, frac):
    model = models_by_name[name]
    context = int(frac * critical_context(model, H100))
    cb = critical_batch(model, H100, context=context)
    s = decode_step(model, H100, cb, context)
    assert s.compute_time == pytest.approx(s.memory_time, rel=1e-6)
    assert decode_step(model, H100, cb * 0.9, context).bound == "memory"
    assert decode_step(model, H100, cb * 1.1, context).bound == "compute"


def test_critical_batch_moe_is_about_sparsity_times_dense():
    dense_like = H100.ops_per_byte()  # b_w = 2: C b_w / 2W
    cb = critical_batch(DSV3, H100)
    # Self-consistent: above the dense value, below the all-experts-touched limit
    # (episode's 300 x sparsity).
    upper = dense_like * DSV3.total_params / DSV3.matmul_params_active
    assert dense_like < cb < upper
    assert cb > 0.5 * upper  # at this batch nearly every expert is touched


def test_critical_batch_grows_with_context():
    assert critical_batch(LLAMA, H100, context=1024) > critical_batch(LLAMA, H100)


def test_critical_batch_raises_beyond_critical_context():
    cc = critical_context(DSV3, H100)
    with pytest.raises(ValueError, match="memory-bound at every batch") as err:
        critical_batch(DSV3, H100, context=int(cc) + 1)
    assert f"{cc:,.0f}" in str(err.value)


def test_critical_context_dense_formula():
    cc = critical_context(LLAMA, H100, attention_flops=False)
    expected = 2 * LLAMA.matmul_params_active * H100.hbm_bandwidth / (
        H100.flops["bf16"] * LLAMA.kv_bytes_per_token(2))
    assert cc == pytest.approx(expected, rel=1e-9)
    # at the critical context, reading one sequence's KV takes as long as computing its token
    kv_t = LLAMA.kv_read_bytes(cc) / H100.hbm_bandwidth
    assert kv_t == pytest.approx(2 * LLAMA.matmul_params_active / H100.flops["bf16"], rel=1e-9)
    assert critical_context(LLAMA, H100, kv_bytes=1, attention_flops=False) == pytest.approx(2 * cc)


def test_critical_context_with_attention_flops_is_later():
    with_attn = critical_context(LLAMA, H100)
    assert with_attn > critical_context(LLAMA, H100, attention_flops=False)
    # by hand: S L 2 n_kv d_h b / W = (2 N_mm + S L 4 n_q d_h) / C, 80 layers, 8 KV / 64 query heads
    C, W = H100.flops["bf16"], H100.hbm_bandwidth
    hand = 2 * LLAMA.matmul_params_active / C / (80 * (2 * 8 * 128 * 2 / W - 4 * 64 * 128 / C))
    assert with_attn == pytest.approx(hand, rel=1e-9)


def test_critical_context_per_op_has_none():
    with pytest.raises(ValueError, match="per-op"):
        critical_context(LLAMA, H100, overlap="per-op")
    # ... and the matmuls' critical batch does not move with the context
    assert critical_batch(LLAMA, H100, context=8_000, overlap="per-op") == pytest.approx(
        critical_batch(LLAMA, H100, context=0), rel=1e-9)


def test_critical_context_partial_sliding_window():
    m = TOY.replace(sliding_window=128, n_sliding_layers=48)
    cc = critical_context(m, H100, attention_flops=False)
    target = 2 * m.matmul_params_active * H100.hbm_bandwidth / H100.flops["bf16"]
    assert m.kv_read_bytes(cc) == pytest.approx(target, rel=1e-9)
    assert cc > critical_context(TOY, H100, attention_flops=False)


def test_critical_context_raises_when_reads_are_capped():
    m = TOY.replace(sliding_window=128, n_sliding_layers=TOY.n_layers)
    with pytest.raises(ValueError, match="capped"):
        critical_context(m, H100)
    # ... and then a critical batch exists at any context
    assert critical_batch(m, H100, context=100_000) > 0


def test_sparse_attention_without_indexer_has_no_critical_context(deepseek_v32_no_indexer):
    # Top-k reads alone (no indexer reading every key) stop growing: compute-bound at any context.
    m = deepseek_v32_no_indexer
    with pytest.raises(ValueError, match="capped"):
        critical_context(m, H100, attention_flops=False)
    k = m.sparse_attention_topk
    assert critical_batch(m, H100, context=100_000) == pytest.approx(
        critical_batch(m, H100, context=k))
    assert critical_batch(m, H100, context=k) > critical_batch(m, H100, context=0)


def test_indexer_keys_give_v32_a_critical_context():
    # DeepSeek-V3.2's indexer reads 132 B per cached token per layer (fp8 keys of 128 + an fp32
    # scale) for every token, on top of MLA's 576 latent elements for the top 2048.
    m = models.get("DeepSeek-V3.2")
    C, C8, W, L, n = (H100.flops["bf16"], H100.flops["fp8"], H100.hbm_bandwidth, 61,
                      m.matmul_params_active)
    topk_bytes = L * 2048 * 576 * 2
    episode = (2 * n * W / C - topk_bytes) / (L * 132)
    assert critical_context(m, H100, attention_flops=False) == pytest.approx(episode, rel=1e-9)
    assert 12_000 < episode < 14_000  # "near 13k tokens on an H100" (issue 11)
    # with attention's FLOPs: absorbed MLA 2 x 128 x (2 x 512 + 64) per pair over the top 2048,
    # and the indexer's 2 x 64 x (128 + 1) per cached token at the fp8 peak
    attn = L * 2048 * 2 * 128 * (2 * 512 + 64) / C
    full = (2 * n / C + attn - topk_bytes / W) / (L * (132 / W - 2 * 64 * 129 / C8))
    assert critical_context(m, H100) == pytest.approx(full, rel=1e-9)
    assert full < m.max_context


# ----- capacity ------------------------------------------------------------------------------

def test_max_batch_fills_memory():
    n, S = 8, 8192
    b = max_batch(LLAMA, H100, S, n_chips=n)
    assert isinstance(b, int)
    used = LLAMA.total_params * 2 + b * LLAMA.kv_cache_bytes(S)
    assert used <= n * H100.hbm_capacity
    assert used + LLAMA.kv_cache_bytes(S) > n * H100.hbm_capacity


def test_max_batch_memory_fraction_and_arrays():
    full = max_batch(LLAMA, H100, [1024, 8192], n_chips=8)
    part = max_batch(LLAMA, H100, [1024, 8192], n_chips=8, memory_fraction=0.9)
    assert full.shape == (2,) and np.all(part < full) and full[0] > full[1]


def test_max_batch_zero_when_kv_does_not_fit():
    chip = Chip(name="tight", flops={"bf16": 1e15}, hbm_bandwidth=1e12,
                hbm_capacity=TOY.total_params * 2 + 1000.0)
    assert max_batch(TOY, chip, 4096) == 0


def test_max_batch_names_minimum_chips_when_weights_do_not_fit():
    with pytest.raises(ValueError, match="at least 2 x H100-SXM"):
        max_batch(LLAMA, H100, 1024, n_chips=1)


def test_min_chips():
    assert min_chips(LLAMA, H100) == 2  # 141 GB of bf16 weights on 80 GB chips
    assert min_chips(LLAMA, H100, weight_bytes=1) == 1
    n = min_chips(LLAMA, H100, batch=64, context=8192)
    assert max_batch(LLAMA, H100, 8192, n_chips=n) >= 64
    assert max_batch(LLAMA, H100, 8192, n_chips=n - 1) < 64
    need = LLAMA.total_params * 2 + 1000 * LLAMA.kv_cache_bytes(8192)  # 2.8 TB
    assert np.all(min_chips(LLAMA, H100, batch=[1, 1000], context=8192)
                  == [2, np.ceil(need / 80e9)])


def test_max_context_inverts_kv_cache():
    s = max_context(TOY, CHIP, batch=4)
    free = CHIP.hbm_capacity - TOY.total_params * 2
    assert 4 * TOY.kv_cache_bytes(s) <= free < 4 * TOY.kv_cache_bytes(s + 1)
    sl = TOY.replace(sliding_window=256, n_sliding_layers=32)
    s2 = max_context(sl, CHIP, batch=4)
    assert 4 * sl.kv_cache_bytes(s2) <= free < 4 * sl.kv_cache_bytes(s2 + 1)
    assert s2 > s


def test_max_context_with_kv_fraction_and_replicas():
    a = max_context(TOY, CHIP, batch=8, n_chips=4, kv_fraction=0.3)
    b = max_context(TOY, CHIP, batch=8, n_chips=4, kv_fraction=0.3, kv_replicas=4)
    assert a == pytest.approx(0.3 * 4 * CHIP.hbm_capacity / (8 * TOY.kv_bytes_per_token()), abs=1)
    assert b == pytest.approx(a / 4, abs=1)


def test_max_context_all_windowed_raises():
    m = TOY.replace(sliding_window=128, n_sliding_layers=TOY.n_layers)
    with pytest.raises(ValueError, match="any context fits"):
        max_context(m, CHIP, batch=1)


def test_drain_time_and_min_latency():
    assert drain_time(H100) == pytest.approx(80e9 / 3.35e12)
    t = min_latency(LLAMA, H100, n_chips=8)
    # one token's weights (69,501,714,432 + 1,318,912 + 8192 parameters, bf16) over 8 x 3.35e12
    assert t == pytest.approx((69_501_714_432 + 1_318_912 + 8192) * 2 / (8 * 3.35e12))
    assert min_latency(DSV3, H100, n_chips=8) < DSV3.total_params * 2 / (8 * H100.hbm_bandwidth) / 5


# ----- classic roofline ----------------------------------------------------------------------

def test_arithmetic_intensity_and_attainable():
    # square matmul: 2n^3 FLOP over 3 n^2 b bytes
    assert arithmetic_intensity(4096, 4096, 4096) == pytest.approx(2 * 4096 / 6)
    # skinny decode matmul: ~ 2m/b_w FLOP per byte
    assert arithmetic_intensity(1, 8192, 8192) == pytest.approx(1.0, rel=1e-3)
    assert arithmetic_intensity(1, 8192, 8192, weight_bytes=1) == pytest.approx(2.0, rel=1e-3)
    ridge = H100.ops_per_byte()
    assert attainable_flops(H100, ridge / 2) == pytest.approx(H100.flops["bf16"] / 2)
    assert attainable_flops(H100, ridge * 10) == pytest.approx(H100.flops["bf16"])
    out = attainable_flops(H100, np.array([1.0, 1e4]))
    assert out.shape == (2,)
    with pytest.raises(ValueError, match="intensity"):
        attainable_flops(H100, 0)
    with pytest.raises(ValueError, match="m"):
        arithmetic_intensity(0, 1, 1)


# ----- properties ----------------------------------------------------------------------------

batches = st.floats(min_value=1, max_value=1e5, allow_nan=False)
contexts = st.integers(min_value=0, max_value=8192)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(MODELS), b1=batches, b2=batches, s=contexts,
       overlap=st.sampled_from(["step", "per-op"]), attn=st.booleans())
def test_more_batch_never_lowers_step_time(models_by_name, name, b1, b2, s, overlap, attn):
    m = models_by_name[name]
    lo, hi = sorted((b1, b2))
    t_lo = decode_step(m, H100, lo, s, overlap=overlap, attention_flops=attn).time
    t_hi = decode_step(m, H100, hi, s, overlap=overlap, attention_flops=attn).time
    assert t_hi >= t_lo * (1 - 1e-12)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(MODELS), b=batches, s=contexts, attn=st.booleans())
def test_per_op_never_faster_than_step(models_by_name, name, b, s, attn):
    m = models_by_name[name]
    a = decode_step(m, H100, b, s, attention_flops=attn)
    p = decode_step(m, H100, b, s, overlap="per-op", attention_flops=attn)
    assert p.time >= a.time * (1 - 1e-12)
    assert p.time <= a.compute_time + a.memory_time * (1 + 1e-12)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(MODELS), b=batches, s=contexts, n=st.integers(1, 512),
       overlap=st.sampled_from(["step", "per-op"]))
def test_decode_time_scales_as_one_over_chips(models_by_name, name, b, s, n, overlap):
    m = models_by_name[name]
    one = decode_step(m, H100, b, s, overlap=overlap)
    many = decode_step(m, H100, b, s, n_chips=n, overlap=overlap)
    assert many.time == pytest.approx(one.time / n, rel=1e-9)


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(MODELS), b=batches, s=contexts)
def test_step_time_is_at_least_each_term(models_by_name, name, b, s):
    m = models_by_name[name]
    x = decode_step(m, H100, b, s)
    assert x.time >= x.compute_time and x.time >= x.memory_time
    assert x.time == max(x.compute_time, x.memory_time)


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(MODELS), p1=st.integers(1, 4000), p2=st.integers(1, 4000),
       b=st.integers(1, 64))
def test_longer_prompt_never_prefills_faster(models_by_name, name, p1, p2, b):
    m = models_by_name[name]
    lo, hi = sorted((p1, p2))
    assert prefill_step(m, H100, b, hi).time >= prefill_step(m, H100, b, lo).time


@settings(max_examples=100, deadline=None)
@given(name=st.sampled_from(MODELS), s=st.integers(0, 2048), f=st.floats(0.05, 0.95))
def test_bound_flips_at_critical_batch(models_by_name, name, s, f):
    m = models_by_name[name]
    try:
        cb = critical_batch(m, H100, context=s)
    except ValueError:
        assert s >= critical_context(m, H100)
        return
    assert decode_step(m, H100, cb * f, s).bound == "memory"
    assert decode_step(m, H100, cb / f, s).bound == "compute"


def test_serial_step_keeps_scalars_scalar_and_says_no_overlap():
    s = serial_step(decode_step(LLAMA, H100, 64, 4096, n_chips=8))
    assert s.overlap == "none" and type(s.time) is float
    v = serial_step(decode_step(LLAMA, H100, np.array([1.0, 64.0]), 4096, n_chips=8))
    assert v.overlap == "none" and v.time.shape == (2,)
    assert np.array_equal(v.time, np.asarray(v.compute_time) + np.asarray(v.memory_time))


def test_step_bound_documents_itself():
    # the API reference reads Step.bound's docstring from the descriptor
    doc = Step.__dict__["bound"].__doc__
    assert doc and "compute" in doc and "memory" in doc


def test_indexer_without_fp8_runs_at_the_step_peak_whatever_its_scale():
    # a chip with no fp8 runs DeepSeek-V3.2's indexer at its bf16 peak, however slow: here half
    # a FLOP a second. At 100 cached tokens one sequence's attention does 61 x 100 x 278,528 FLOP
    # (absorbed MLA) and its indexer 61 x 100 x 16,512 (test_models), both at 0.5 FLOP/s
    slow = Chip(name="half a flop", flops={"bf16": 0.5}, hbm_bandwidth=1.0, hbm_capacity=1e15)
    step = decode_step(models.get("DeepSeek-V3.2"), slow, 1, 100)
    assert step.attention_time == pytest.approx(61 * 100 * (278_528 + 16_512) / 0.5, rel=1e-12)


def test_a_step_says_what_each_chip_holds_and_whether_it_fits():
    # DeepSeek-V3 in fp8 on 8 chips, 8 sequences of 4,096 tokens: 671,026,419,200 B of weights
    # plus 8 x 4096 x 61 x 656 B of fp8 MLA cache (FlashMLA's row), over 8 chips = 84.04 GB each:
    # more than an H100's 80 GB, within an H200's 141 GB (datasheets)
    from llmmath import chips, models
    ds = models.get("DeepSeek-V3")
    held = (671_026_419_200 + 8 * 4096 * 61 * 656) / 8
    on_h100 = decode_step(ds, chips.get("H100-SXM"), 8, 4096, n_chips=8, weight_bytes=1,
                          kv_bytes=1, dtype="fp8")
    assert on_h100.held_per_chip == pytest.approx(held, rel=1e-12)
    assert on_h100.fits is False
    on_h200 = decode_step(ds, chips.get("H200"), 8, 4096, n_chips=8, weight_bytes=1, kv_bytes=1,
                          dtype="fp8")
    assert on_h200.fits is True
    # prefill holds the cache of past + prompt; an array of batches gives an array of answers
    pre = prefill_step(ds, chips.get("H200"), [1, 10_000], 4096, n_chips=8, weight_bytes=1,
                       kv_bytes=1, dtype="fp8")
    assert pre.held_per_chip[0] == pytest.approx(held - 7 * 4096 * 61 * 656 / 8, rel=1e-12)
    assert list(pre.fits) == [True, False]

"""Tests of llmmath.training: 6ND, training time, MFU, memory per parameter, Chinchilla tokens."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import chips, models
from llmmath.training import (
    MemoryPerParam,
    activation_bytes_per_token_per_layer,
    activation_memory,
    attention_training_flops_per_token,
    attention_training_share,
    compute_optimal_model,
    compute_optimal_tokens,
    dp_compute_time,
    dp_critical_tokens,
    dp_gradient_sync_time,
    inference_mfu,
    mfu,
    mfu_from_chip_hours,
    min_training_chips,
    overtraining_factor,
    training_flops,
    training_memory,
    training_memory_per_param,
    training_time,
    zero_memory_per_chip,
)

H100 = chips.get("H100-SXM")
LLAMA = models.get("Llama-3-70B")
DSV3 = models.get("DeepSeek-V3")


def test_training_flops_6nd_and_8nd():
    assert training_flops(LLAMA, 1e12) == pytest.approx(6 * LLAMA.active_params * 1e12)
    assert training_flops(LLAMA, 1e12, recompute=True) == pytest.approx(
        8 * LLAMA.active_params * 1e12)
    assert training_flops(7e9, 2e12) == pytest.approx(6 * 7e9 * 2e12)  # a bare parameter count
    # MoE: active, not total, parameters
    assert training_flops(DSV3, 1e12) == pytest.approx(6 * DSV3.active_params * 1e12)
    assert np.shape(training_flops(LLAMA, [1e12, 2e12])) == (2,)


def test_gpt3_training_compute():
    # Brown et al. 2020, Table D.1: GPT-3 175B on 300B tokens used 3.14e23 FLOP. Within 2%.
    assert training_flops(models.get("GPT-3-175B"), 300e9) == pytest.approx(3.14e23, rel=0.02)


def test_llama3_405b_training_compute():
    # Llama 3 Herd paper (Dubey et al. 2024, §3.2.1): 405B trained on 15.6T tokens with 3.8e25
    # FLOP. Within 2%.
    assert training_flops(models.get("Llama-3.1-405B"), 15.6e12) == pytest.approx(3.8e25, rel=0.02)


def test_deepseek_v3_training_compute_order():
    # DeepSeek-V3 report: 14.8T tokens; 6 x 37B x 14.8T = 3.3e24 FLOP (order-of-magnitude check,
    # 10%).
    assert training_flops(DSV3, 14.8e12) == pytest.approx(3.3e24, rel=0.1)


def test_training_time_and_mfu_round_trip():
    t = training_time(LLAMA, 15e12, H100, n_chips=4096, mfu=0.45)
    assert t == pytest.approx(6 * LLAMA.active_params * 15e12 / (4096 * H100.flops["bf16"] * 0.45))
    assert mfu(LLAMA, 15e12, t, H100, n_chips=4096) == pytest.approx(0.45)
    assert 10 * 86400 < t < 100 * 86400  # weeks, not hours or years


def test_inference_mfu_is_2n():
    got = inference_mfu(LLAMA, 1e6, 10.0, H100, n_chips=8)
    assert got == pytest.approx(2 * LLAMA.active_params * 1e6 / (8 * H100.flops["bf16"] * 10))
    assert got == pytest.approx(mfu(LLAMA, 1e6, 10.0, H100, n_chips=8, flops_per_param=2))


def test_training_validation():
    with pytest.raises(ValueError, match="mfu"):
        training_time(LLAMA, 1e12, H100, 8, mfu=1.2)
    with pytest.raises(ValueError, match="tokens"):
        training_flops(LLAMA, 0)
    with pytest.raises(ValueError, match="dtype"):
        training_time(LLAMA, 1e12, H100, 8, mfu=0.4, dtype="fp4")
    with pytest.raises(ValueError, match="time"):
        mfu(LLAMA, 1e12, -1, H100, 8)
    with pytest.raises(ValueError, match="optimizer"):
        training_memory_per_param("lion")


def test_memory_per_param():
    m = training_memory_per_param()
    assert isinstance(m, MemoryPerParam)
    assert (m.weights, m.gradients, m.master_weights, m.optimizer_states, m.total) == (
        2, 2, 4, 8, 16)
    assert training_memory_per_param("adam", mixed_precision=False).total == 16
    assert training_memory_per_param("sgd-momentum").total == 12
    assert training_memory_per_param("sgd", mixed_precision=False).total == 8
    assert training_memory(LLAMA) == pytest.approx(16 * LLAMA.total_params)


def test_chinchilla():
    # Hoffmann et al. 2022: Chinchilla, 70B parameters on 1.4T tokens, is compute-optimal
    # (~20 tokens/param).
    assert compute_optimal_tokens(70e9) == pytest.approx(1.4e12)
    assert overtraining_factor(70e9, 1.4e12) == pytest.approx(1.0)
    n, d = compute_optimal_model(6 * 70e9 * 1.4e12)
    assert n == pytest.approx(70e9) and d == pytest.approx(1.4e12)
    # Episode §1.5: ~100B active parameters, rumoured 150T pre-training tokens vs Chinchilla's 2T:
    # 75x over-trained ("about 100x").
    assert compute_optimal_tokens(100e9) == pytest.approx(2e12)
    assert overtraining_factor(100e9, 150e12) == pytest.approx(75)
    # Llama 3 70B on 15T tokens: ~10x beyond compute-optimal
    assert overtraining_factor(LLAMA, 15e12) == pytest.approx(15e12 / (20 * LLAMA.active_params))


@settings(max_examples=100, deadline=None)
@given(n=st.floats(1e6, 1e13), d=st.floats(1e6, 1e15), chips_=st.integers(1, 100_000),
       u=st.floats(0.01, 1.0))
def test_mfu_inverts_training_time(n, d, chips_, u):
    t = training_time(n, d, H100, chips_, u)
    assert mfu(n, d, t, H100, chips_) == pytest.approx(u, rel=1e-9)
    assert training_flops(n, d, recompute=True) == pytest.approx(4 / 3 * training_flops(n, d))


# ----- chapter 11 additions: attention in training, activations, ZeRO, data-parallel sync ------
# Expected values are computed by hand from the cited formulas (comments show the arithmetic).

def test_attention_training_flops_by_hand():
    m = models.get("Llama-3-8B")  # 32 layers, 32 query heads of 128 (config.json)
    # forward: 4 n_q d_h per (query, key) pair per layer, S (S + 1) / 2 causal pairs;
    # backward twice the forward; per token divide by S.
    S = 4096
    expected = 3 * 32 * (4 * 32 * 128) * (S * (S + 1) / 2) / S
    assert attention_training_flops_per_token(m, S) == pytest.approx(expected, rel=1e-12)
    a = expected
    assert attention_training_share(m, S) == pytest.approx(a / (6 * m.active_params + a), rel=1e-12)


def test_activation_bytes_korthikanti():
    # Korthikanti et al. 2022: 34 s b h + 5 a s^2 b bytes per layer; per token 34 D + 5 n_q S.
    m = models.get("Llama-3.1-405B")  # D = 16384, 128 heads
    assert activation_bytes_per_token_per_layer(m, 8192) == 34 * 16384 + 5 * 128 * 8192  # 5,799,936
    assert activation_bytes_per_token_per_layer(m, 8192, "selective") == 557_056
    assert activation_bytes_per_token_per_layer(m, 8192, "full") == 32_768
    # one 8,192-token sequence over 126 layers, full recomputation: 126 x 8192 x 32768 B
    assert activation_memory(m, 8192, 8192, "full") == pytest.approx(126 * 8192 * 32768)


def test_zero_stages_by_hand():
    # Rajbhandari et al. 2020, mixed-precision Adam, N = 1e9 over n = 4 chips:
    # stage 0: 16 N; 1: 4 N + 12 N/4; 2: 2 N + 14 N/4; 3: 16 N/4.
    n = 1e9
    assert zero_memory_per_chip(n, 4, 0) == pytest.approx(16e9)
    assert zero_memory_per_chip(n, 4, 1) == pytest.approx(7e9)
    assert zero_memory_per_chip(n, 4, 2) == pytest.approx(5.5e9)
    assert zero_memory_per_chip(n, 4, 3) == pytest.approx(4e9)
    assert zero_memory_per_chip(n, 1, 3) == pytest.approx(16e9)  # one chip: nothing to shard


def test_min_training_chips_by_hand():
    # 16 B per parameter over 80 GB: 5e9 -> 1 chip, 10e9 -> exactly 2, 10.1e9 -> 161.6/80 -> 3
    assert min_training_chips(5e9, H100) == 1
    assert min_training_chips(10e9, H100) == 2
    assert min_training_chips(10.1e9, H100) == 3
    # Llama 3.1 405B: 405.85e9 x 16 = 6.49 TB over 80 GB = 81.2 -> 82
    assert min_training_chips(models.get("Llama-3.1-405B"), H100) == 82
    assert min_training_chips(5e9, H100, activation_bytes=70e9) == 2  # 80e9 + 70e9 over 80e9


def test_dp_sync_and_threshold_by_hand():
    # 2 chips in one 8-GPU server: no network phase, only the NVLink ring,
    # 2 (n-1)/n N b_g / W_up = 2 x 0.5 x 2e9 / 450e9; N = 1e9, b_g = 2
    assert dp_gradient_sync_time(1e9, H100, 2) == pytest.approx(2e9 / 450e9)
    assert dp_gradient_sync_time(1e9, H100, 2, zero_stage=3) == pytest.approx(1.5 * 2e9 / 450e9)
    assert dp_gradient_sync_time(1e9, H100, 2, "scale_up") == pytest.approx(2e9 / 450e9)
    # 16 chips in 2 servers, a 50 GB/s port per GPU: network phase 2 (16-8)/16 x 2e9 / (8 x 50e9)
    # = 5 ms; NVLink phase 2 x 7/8 x 2e9 / 450e9 = 7.78 ms, the longer; serial: their sum
    assert dp_gradient_sync_time(1e9, H100, 16) == pytest.approx(2 * 7 / 8 * 2e9 / 450e9)
    assert dp_gradient_sync_time(1e9, H100, 16, scale_up_phase="serial") == pytest.approx(
        2 * 8 / 16 * 2e9 / (8 * 50e9) + 2 * 7 / 8 * 2e9 / 450e9)
    # one port per server: the network phase is 8 times longer, 40 ms
    assert dp_gradient_sync_time(1e9, H100, 16, nics_per_domain=1) == pytest.approx(
        2 * 8 / 16 * 2e9 / 50e9)
    # four ports per server: 10 ms, above the NVLink phase
    assert dp_gradient_sync_time(1e9, H100, 16, nics_per_domain=4) == pytest.approx(
        2 * 8 / 16 * 2e9 / (4 * 50e9))
    # compute: 6 N T / C; 1e9 params, 1,000 tokens, 989.4 TFLOP/s at MFU 0.5
    assert dp_compute_time(1e9, H100, 1000, mfu=0.5) == pytest.approx(6e12 / 494.7e12)
    # T* = (n - n_dom)/n (b_g/3) C/(n_dom W_out) N_tot/N_act: H100, n = 1024 in servers of 8,
    # dense: 1016/1024 x 2/3 x 989.4e12 / 400e9 = 1,636 (the NVLink phase, 7/8 x 2/3 x
    # 989.4e12 / 450e9 = 1,283, is shorter)
    expected = 1016 / 1024 * (2 / 3) * 989.4e12 / (8 * 50e9)
    assert dp_critical_tokens(1e9, H100, 1024) == pytest.approx(expected, rel=1e-12)  # ~1,636
    ds = models.get("DeepSeek-V3")
    assert dp_critical_tokens(ds, H100, 1024) == pytest.approx(
        expected * ds.total_params / ds.active_params)
    # arrays of chip counts broadcast: 8 (one server: NVLink only) and 1,024
    got = dp_critical_tokens(1e9, H100, np.array([8, 1024]))
    assert np.allclose(got, [7 / 8 * (2 / 3) * 989.4e12 / 450e9, expected], rtol=1e-12)


def test_dp_network_arguments_are_checked():
    with pytest.raises(ValueError, match="nics_per_domain"):
        dp_gradient_sync_time(1e9, H100, 16, nics_per_domain=9)  # more ports than GPUs a server
    with pytest.raises(ValueError, match="nics_per_domain"):
        dp_gradient_sync_time(1e9, H100, 16, nics_per_domain=1.5)
    with pytest.raises(ValueError, match="scale_up_phase"):
        dp_critical_tokens(1e9, H100, 16, scale_up_phase="pipelined")


def test_mfu_from_chip_hours_by_hand():
    # Llama 3.1 405B: 3.8e25 FLOP over 30.84M H100-hours (model card):
    # 3.8e25 / (30.84e6 x 3600 x 989.4e12)
    assert mfu_from_chip_hours(3.8e25, 30.84e6, H100) == pytest.approx(0.34594, rel=1e-4)


def test_published_training_totals():
    # PaLM 540B: 2527.2 zettaFLOP reported (Chowdhery et al. 2022) for 780B tokens; 6ND within 0.5%
    palm = models.get("PaLM-540B")
    assert training_flops(palm, 780e9) == pytest.approx(2527.2e21, rel=0.005)
    # Llama 3.1 405B: 3.8e25 FLOP for 15.6T tokens (Llama 3 herd), within 1%
    assert training_flops(models.get("Llama-3.1-405B"), 15.6e12) == pytest.approx(3.8e25, rel=0.01)
    # DeepSeek-V3: 180K H800-hours per trillion tokens and 2.664M for 14.8T tokens: the paper's
    # own numbers agree (2.664e6 / 14.8 = 180e3, within 0.1%)
    assert 2.664e6 / 14.8 == pytest.approx(180e3, rel=0.001)


def test_chapter10_bad_input():
    m = models.get("Llama-3-8B")
    with pytest.raises(TypeError, match="model"):
        attention_training_flops_per_token(8e9, 4096)
    with pytest.raises(ValueError, match="sequence_length"):
        attention_training_share(m, 0)
    with pytest.raises(ValueError, match="recompute"):
        activation_bytes_per_token_per_layer(m, 4096, "partial")
    with pytest.raises(ValueError, match="stage"):
        zero_memory_per_chip(m, 8, 4)
    with pytest.raises(ValueError, match="network"):
        dp_gradient_sync_time(m, H100, 8, "infiniband")
    with pytest.raises(ValueError, match="network"):
        dp_gradient_sync_time(m, chips.get("TPU v4"), 8, "scale_out")
    with pytest.raises(ValueError, match="tokens_per_chip"):
        dp_compute_time(m, H100, 0)
    with pytest.raises(ValueError, match="activation_bytes"):
        min_training_chips(m, H100, activation_bytes=-1)
    with pytest.raises(ValueError, match="chip_hours"):
        mfu_from_chip_hours(1e24, 0, H100)
    with pytest.raises(ValueError, match="sequence_length|context|supports"):
        attention_training_share(m, 1e6)  # beyond the model's 8,192-token context


# ----- chapter 11 figure builders: every chip and model, units on the axes, finite data, alt text

import matplotlib  # noqa: E402

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from llmmath import plots  # noqa: E402

_UNIT = ("(tokens)", "(%)", "(count)", "(bytes)", "(s)")  # "B" is batch only (plots.style)


def _check_figure(fig):
    ax = fig.axes[0]
    for label in (ax.get_xlabel(), ax.get_ylabel()):
        assert label.endswith(_UNIT), label
    for line in ax.get_lines():
        x, y = (np.asarray(a, dtype=float) for a in line.get_data())
        assert np.all(np.isfinite(x)) and np.all(np.isfinite(y))
    assert len(fig.alt_text) > 40 and "nan" not in fig.alt_text.lower().split()
    plt.close(fig)


@pytest.mark.parametrize("chip", chips.names())
def test_ch11_builders_on_every_chip(chip):
    with plots.offscreen():
        _check_figure(plots.zero_memory_vs_chips(LLAMA, chip, mark_chips=256))
        fig = plots.dp_sync_vs_tokens(LLAMA, chip, n_chips=64, mark_tokens=4096)
    assert set(fig.numbers["critical"]) == {n for n in ("scale_up", "scale_out")
                                            if getattr(chips.get(chip), f"{n}_bandwidth")}
    _check_figure(fig)


@pytest.mark.parametrize("model", models.names())
def test_ch11_builders_on_every_model(model):
    m = models.get(model)
    with plots.offscreen():
        fig = plots.attention_share_vs_seq([m, LLAMA], mark_sequence_length=1024)
        assert fig.numbers["share"] == pytest.approx(attention_training_share(m, 1024))
        _check_figure(fig)
        fig = plots.zero_memory_vs_chips(m, H100)
        assert fig.numbers["state"] == pytest.approx(16 * m.total_params)
        _check_figure(fig)
        fig = plots.dp_sync_vs_tokens(m, H100)
        assert fig.numbers["critical"]["scale_out"] == pytest.approx(
            dp_critical_tokens(m, H100, 1024))
        _check_figure(fig)


# ----- issue 20: arguments the tests above left at their defaults --------------------------------
# H100-SXM (catalogue, NVIDIA datasheet): 989.4 TFLOP/s dense bf16, 1,978.9 fp8, 80 GB of HBM,
# 50 GB/s scale-out.

def test_inference_mfu_at_fp8_uses_the_fp8_peak():
    # 2 N tokens / (n C_fp8 t): a 1e9-parameter model, 1e6 tokens in 1 s on one H100 at fp8
    assert inference_mfu(1e9, 1e6, 1.0, H100, dtype="fp8") == pytest.approx(
        2e15 / 1978.9e12, rel=1e-12)


def test_zero_stage_1_in_plain_fp32():
    # fp32 Adam keeps 4 B weights + 4 B gradients on every chip and shards 8 B of m and v (no
    # master copy): N = 1e9 over 4 chips, 8e9 + 8e9 / 4 = 10e9 B (mixed precision: 7e9)
    assert zero_memory_per_chip(1e9, 4, 1, mixed_precision=False) == pytest.approx(10e9)
    # stage 2, SGD with momentum, fp32: 4 B kept, 4 + 4 sharded: 4e9 + 8e9 / 4 = 6e9
    assert zero_memory_per_chip(1e9, 4, 2, "sgd-momentum", mixed_precision=False) == \
        pytest.approx(6e9)


def test_min_training_chips_for_an_array_of_activations():
    # 5e9 parameters x 16 B = 80 GB of state; plus 0, 70 and 90 GB of activations over 80 GB
    # chips: 80/80 = 1, 150/80 = 1.9 -> 2, 170/80 = 2.1 -> 3
    got = min_training_chips(5e9, H100, activation_bytes=np.array([0.0, 70e9, 90e9]))
    assert np.array_equal(got, [1, 2, 3])


def test_overtraining_factor_at_another_tokens_per_param():
    # 70B parameters on 1.4T tokens, against 10 tokens per parameter: 1.4e12 / 7e11 = 2
    assert overtraining_factor(70e9, 1.4e12, tokens_per_param=10) == pytest.approx(2.0, rel=1e-12)


def test_dp_critical_tokens_at_lower_mfu_and_with_zero_3():
    # T* = (n - n_dom)/n (b_g / 3) C MFU / (n_dom W_out): at MFU 0.5 half the dense 1e9 case
    # above; ZeRO-3 moves 1.5 times the bytes, so T* is 1.5 times larger
    full = 1016 / 1024 * (2 / 3) * 989.4e12 / (8 * 50e9)
    assert dp_critical_tokens(1e9, H100, 1024, mfu=0.5) == pytest.approx(full / 2, rel=1e-12)
    assert dp_critical_tokens(1e9, H100, 1024, zero_stage=3) == pytest.approx(1.5 * full,
                                                                             rel=1e-12)


def test_a_missing_network_names_the_ones_the_chip_has():
    # TPU v4 has no scale-out bandwidth in the catalogue (its ICI is counted as scale-up)
    tpu = chips.get("TPU v4")
    with pytest.raises(ValueError, match=r"^network: .*; allowed: one of \['scale_up'\]$"):
        dp_gradient_sync_time(1e9, tpu, 8, "scale_out")

"""Tests of llmmath.training: 6ND, training time, MFU, memory per parameter, Chinchilla tokens."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import chips, models
from llmmath.training import (
    MemoryPerParam,
    compute_optimal_model,
    compute_optimal_tokens,
    inference_mfu,
    mfu,
    overtraining_factor,
    training_flops,
    training_memory,
    training_memory_per_param,
    training_time,
)

H100 = chips.get("H100-SXM")
LLAMA = models.get("Llama-3-70B")
DSV3 = models.get("DeepSeek-V3")


def test_training_flops_6nd_and_8nd():
    assert training_flops(LLAMA, 1e12) == pytest.approx(6 * LLAMA.active_params * 1e12)
    assert training_flops(LLAMA, 1e12, recompute=True) == pytest.approx(8 * LLAMA.active_params * 1e12)
    assert training_flops(7e9, 2e12) == pytest.approx(6 * 7e9 * 2e12)  # a bare parameter count
    # MoE: active, not total, parameters
    assert training_flops(DSV3, 1e12) == pytest.approx(6 * DSV3.active_params * 1e12)
    assert np.shape(training_flops(LLAMA, [1e12, 2e12])) == (2,)


def test_gpt3_training_compute():
    # Brown et al. 2020, Table D.1: GPT-3 175B on 300B tokens used 3.14e23 FLOP. Within 2%.
    assert training_flops(models.get("GPT-3-175B"), 300e9) == pytest.approx(3.14e23, rel=0.02)


def test_llama3_405b_training_compute():
    # Llama 3 Herd paper (Dubey et al. 2024, §3.2.1): 405B trained on 15.6T tokens with 3.8e25 FLOP. Within 2%.
    assert training_flops(models.get("Llama-3.1-405B"), 15.6e12) == pytest.approx(3.8e25, rel=0.02)


def test_deepseek_v3_training_compute_order():
    # DeepSeek-V3 report: 14.8T tokens; 6 x 37B x 14.8T = 3.3e24 FLOP (order-of-magnitude check, 10%).
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
    assert (m.weights, m.gradients, m.master_weights, m.optimizer_states, m.total) == (2, 2, 4, 8, 16)
    assert training_memory_per_param("adam", mixed_precision=False).total == 16
    assert training_memory_per_param("sgd-momentum").total == 12
    assert training_memory_per_param("sgd", mixed_precision=False).total == 8
    assert training_memory(LLAMA) == pytest.approx(16 * LLAMA.total_params)


def test_chinchilla():
    # Hoffmann et al. 2022: Chinchilla, 70B parameters on 1.4T tokens, is compute-optimal (~20 tokens/param).
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

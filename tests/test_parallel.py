"""Tests of llmmath.parallel: collectives (Pope et al. 2022 App. A.1), TP/EP/PP, FFN layouts (§3.2)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import models
from llmmath.parallel import (
    PipelineMemory,
    all_gather_time,
    all_reduce_time,
    all_to_all_time,
    expert_parallel_comm_time,
    ffn_comm_time,
    pipeline_memory_per_chip,
    reduce_scatter_time,
    scaleup_vs_scaleout_ratio,
    tensor_parallel_comm_time,
)

LLAMA = models.get("Llama-3-70B")
DSV3 = models.get("DeepSeek-V3")
PALM = models.get("PaLM-540B")


def test_collectives():
    D, bw = 1e9, 100e9
    assert all_gather_time(D, 8, bw) == pytest.approx(D / bw * 7 / 8)
    assert reduce_scatter_time(D, 8, bw) == pytest.approx(D / bw * 7 / 8)
    assert all_reduce_time(D, 8, bw) == pytest.approx(2 * all_gather_time(D, 8, bw))
    assert all_to_all_time(D, 4, bw) == pytest.approx(D / bw * 3 / 4)
    assert all_gather_time(D, 1, bw) == 0.0
    assert all_reduce_time(D, 1e6, bw) == pytest.approx(2 * D / bw, rel=1e-5)
    assert np.shape(all_reduce_time([1e6, 1e9], 8, bw)) == (2,)
    with pytest.raises(ValueError, match="bandwidth"):
        all_gather_time(D, 8, 0)
    with pytest.raises(ValueError, match="n"):
        all_to_all_time(D, 0, bw)


def test_tensor_parallel_comm():
    t = tensor_parallel_comm_time(LLAMA, 64, 8, 450e9)
    per = all_reduce_time(64 * LLAMA.d_model * 2, 8, 450e9)
    assert t == pytest.approx(LLAMA.n_layers * 2 * per)
    # PaLM's parallel block needs one all-reduce per layer instead of two (Pope et al. §3.4)
    serial = PALM.replace(parallel_block=False)
    assert tensor_parallel_comm_time(PALM, 64, 64, 270e9) == pytest.approx(
        tensor_parallel_comm_time(serial, 64, 64, 270e9) / 2)


def test_expert_parallel_comm():
    t = expert_parallel_comm_time(DSV3, 4096, 64, 900e9)
    per_chip = 4096 * 8 * 7168 * 2 / 64
    assert t == pytest.approx(DSV3.n_moe_layers * 2 * per_chip / 900e9 * 63 / 64)
    assert expert_parallel_comm_time(LLAMA, 4096, 8, 900e9) == 0.0
    # doubling the chips at fixed tokens halves each chip's share
    assert expert_parallel_comm_time(DSV3, 4096, 128, 900e9) < t


def test_pipeline_memory_kv_does_not_shrink_with_stages():
    # Episode §1.4: c = N b_w / (E P) + b S b_kv / E.
    one = pipeline_memory_per_chip(DSV3, micro_batch=256, context=4096, expert_parallel=64, pipeline_stages=1)
    four = pipeline_memory_per_chip(DSV3, micro_batch=256, context=4096, expert_parallel=64, pipeline_stages=4)
    assert isinstance(four, PipelineMemory)
    assert four.weights == pytest.approx(one.weights / 4)
    assert four.kv == pytest.approx(one.kv)
    assert four.kv == pytest.approx(256 * DSV3.kv_cache_bytes(4096) / 64)
    assert four.total == pytest.approx(four.weights + four.kv)
    assert four.batch_in_flight == 1024


def test_scaleup_vs_scaleout_ratio():
    # Episode §1.3: t_up / t_out = (1/8) k layers_per_stage 2; want >= 1.
    assert scaleup_vs_scaleout_ratio(8, 1) == pytest.approx(2.0)
    assert scaleup_vs_scaleout_ratio(1, 1) == pytest.approx(0.25)
    assert scaleup_vs_scaleout_ratio(DSV3, 1) == pytest.approx(2.0)
    assert scaleup_vs_scaleout_ratio(LLAMA, 4) == pytest.approx(1.0)
    assert scaleup_vs_scaleout_ratio(8, 1, scale_out_over_up=0.5) == pytest.approx(8.0)


E, F, BW = 16384, 65536, 270e9  # Pope et al. Fig. 3 assumptions


def test_ffn_1d_ws_independent_of_chips():
    t = ffn_comm_time("1d-ws", 512, E, F, 64, BW)
    assert t == pytest.approx(2 * 512 * E * 2 / BW)
    assert ffn_comm_time("1d-ws", 512, E, F, 256, BW) == pytest.approx(t)


def test_ffn_2d_ws_optimum():
    n = 64
    opt = ffn_comm_time("2d-ws", 512, E, F, n, BW)
    assert opt == pytest.approx(8 * 512 * E * 2 / (np.sqrt(n) * BW))  # 8BLE/(sqrt(n) bw), F = 4E
    # the optimum is at X = 0.5 sqrt(n), YZ = 2 sqrt(n)
    assert ffn_comm_time("2d-ws", 512, E, F, n, BW, x=0.5 * np.sqrt(n)) == pytest.approx(opt)
    for x in (1, 2, 8, 16):
        assert ffn_comm_time("2d-ws", 512, E, F, n, BW, x=x) >= opt * (1 - 1e-12)


def test_ffn_weight_gathered():
    T, n = 2**20, 64
    opt = ffn_comm_time("wg-opt", T, E, F, n, BW, activation_bytes=1, weight_bytes=1)
    assert opt == pytest.approx(4 * E * np.sqrt(T * F) / (np.sqrt(n) * BW))  # App. A.2
    for layout in ("wg-x", "wg-xy", "wg-xyz"):
        assert ffn_comm_time(layout, T, E, F, n, BW, activation_bytes=1, weight_bytes=1) >= opt * (1 - 1e-12)
    xyz = ffn_comm_time("wg-xyz", T, E, F, n, BW)
    assert xyz == pytest.approx(2 * E * F * 2 / BW + 2 * T * E * 2 / (n * BW))
    xy = ffn_comm_time("wg-xy", T, E, F, n, BW, axes=(4, 4, 4))
    assert xy == pytest.approx(2 * E * F * 2 * 16 / (n * BW) + 2 * T * E * 2 / (16 * BW))


def test_ffn_validation():
    with pytest.raises(ValueError, match="layout"):
        ffn_comm_time("3d-ws", 1, E, F, 64, BW)
    with pytest.raises(ValueError, match="axes"):
        ffn_comm_time("wg-x", 1, E, F, 32, BW)
    with pytest.raises(ValueError, match="axes"):
        ffn_comm_time("wg-x", 1, E, F, 64, BW, axes=(2, 2, 2))


@settings(max_examples=200, deadline=None)
@given(t=st.floats(1, 1e7), n=st.sampled_from([8, 27, 64, 125, 512]))
def test_wg_opt_is_a_lower_envelope(t, n):
    opt = ffn_comm_time("wg-opt", t, E, F, n, BW)
    for layout in ("wg-x", "wg-xy", "wg-xyz"):
        assert ffn_comm_time(layout, t, E, F, n, BW) >= opt * (1 - 1e-9)

"""Tests of llmmath.parallel: collectives (Pope et al. 2022 App. A.1), TP/EP/PP,
FFN layouts (§3.2)."""

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
    with pytest.raises(ValueError, match="n_chips"):
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
    one = pipeline_memory_per_chip(DSV3, micro_batch=256, context=4096, expert_parallel=64,
                                   stages=1)
    four = pipeline_memory_per_chip(DSV3, micro_batch=256, context=4096, expert_parallel=64,
                                    stages=4)
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
        assert (ffn_comm_time(layout, T, E, F, n, BW, activation_bytes=1, weight_bytes=1)
                >= opt * (1 - 1e-12))
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


# ----- chapter 9: tensor parallelism with the alpha-beta model -------------------------------

from llmmath import chips  # noqa: E402
from llmmath.chips import Chip  # noqa: E402
from llmmath.parallel import (  # noqa: E402
    best_tensor_parallel,
    kv_replicas,
    ring_optimal_chips,
    sharded_decode,
)
from llmmath.step import decode_step  # noqa: E402

H100 = chips.get("H100-SXM")


def test_sharded_decode_tp_comm_by_hand():
    # Llama 3 70B (80 layers, D = 8192, two all-reduces a layer), batch 8, 8 chips on a ring,
    # 2 us a step, 450 GB/s: each all-reduce is 14 x 2 us + 1.75 x 131,072 B / 450 GB/s
    # = 28 us + 0.5097 us; 160 of them = 4.5616 ms.
    r = sharded_decode(LLAMA, H100, 8, 4096, 8, hop_latency=2e-6, topology="ring")
    assert r.tp_comm == pytest.approx(160 * (28e-6 + 1.75 * 131072 / 450e9), rel=1e-9)
    assert r.time == pytest.approx(r.step.time + r.tp_comm + r.kv_comm)
    assert r.time_overlapped == pytest.approx(max(r.step.time, r.comm))
    one = sharded_decode(LLAMA, H100, 8, 4096, 1)
    assert one.comm == 0.0 and not one.fits   # 141 GB of bf16 weights do not fit one 80 GB chip


def test_kv_replicas_by_hand():
    # one KV head, 64 chips: 64 copies (Pope Table 1)
    assert kv_replicas(PALM, 512, 64, "head") == 64
    assert kv_replicas(PALM, 512, 64, "batch") == 1
    assert kv_replicas(LLAMA, 64, 16, "head") == 2       # 8 KV heads over 16 chips
    # 4 sequences on 8 chips: busiest holds 1 = 2 x 4/8
    assert kv_replicas(LLAMA, 4, 8, "batch") == 2
    assert kv_replicas(DSV3, 64, 8, "head") == 8         # MLA's latent is shared by all heads
    assert kv_replicas(LLAMA, 64, 8, "sequence") == 1
    with pytest.raises(ValueError, match="kv_shard"):
        kv_replicas(LLAMA, 64, 8, "layer")


def test_ring_optimum_matches_the_sweep():
    # With bandwidth made irrelevant, the fastest power of two on a ring brackets
    # sqrt(t1/(2 L n_ar a)).
    for batch in (1, 8, 64):
        n_star = ring_optimal_chips(LLAMA, H100, batch, 4096, 2.4e-6)
        t1 = sharded_decode(LLAMA, H100, batch, 4096, 1).step.time
        assert n_star == pytest.approx(np.sqrt(t1 / (2 * 160 * 2.4e-6)))
        runs = {n: sharded_decode(LLAMA, H100, batch, 4096, n, 2.4e-6, "ring", bandwidth=1e30).time
                for n in (1, 2, 4, 8, 16, 32, 64)}
        best = min(runs, key=runs.get)
        assert best / 2 <= n_star <= best * 2


def test_best_tensor_parallel_skips_what_does_not_fit():
    best, runs = best_tensor_parallel(LLAMA, H100, 8, 4096, hop_latency=2.4e-6, topology="ring")
    assert best == 8 and not runs[1].fits
    with pytest.raises(TypeError, match="batch"):
        best_tensor_parallel(LLAMA, H100, np.array([1, 2]), 4096)


def test_sharded_decode_bad_input():
    with pytest.raises(ValueError, match="kv_shard"):
        sharded_decode(LLAMA, H100, 8, 4096, 8, kv_shard="heads")
    with pytest.raises(ValueError, match="hop_latency"):
        sharded_decode(LLAMA, H100, 8, 4096, 8, hop_latency=-1.0)


def test_best_tensor_parallel_default_counts_and_wiring(toy_chip):
    # powers of two up to the scale-up domain (8 on an H100, 72 on a GB200 rack: up to 64), at
    # most 1024 (a TPU v4 pod's 4096), and 8 for a chip that lists no domain
    assert sorted(best_tensor_parallel(LLAMA, H100, 8, 4096)[1]) == [1, 2, 4, 8]
    assert sorted(best_tensor_parallel(LLAMA, chips.get("GB200"), 8, 4096)[1]) == [
        1, 2, 4, 8, 16, 32, 64]
    assert max(best_tensor_parallel(LLAMA, chips.get("TPU v4"), 8, 4096)[1]) == 1024
    assert sorted(best_tensor_parallel(LLAMA, toy_chip, 8, 0, bandwidth=1e11)[1]) == [1, 2, 4, 8]
    # the keyword arguments reach every run; a context of 0 is allowed
    best, runs = best_tensor_parallel(LLAMA, H100, 8, 0, hop_latency=5e-6, topology="ring")
    assert runs[4].time == sharded_decode(LLAMA, H100, 8, 0, 4, hop_latency=5e-6,
                                          topology="ring").time
    # nothing fits: no best
    assert best_tensor_parallel(LLAMA, H100, 8, 4096, chip_counts=[1])[0] is None
    with pytest.raises(TypeError, match="^context: got an array .*; best_tensor_parallel takes "
                                        "one context$"):
        best_tensor_parallel(LLAMA, H100, 8, np.array([0, 1]))
    for bad, name in (((0, 4096), "batch"), ((8, -1), "context")):
        with pytest.raises(ValueError, match=f"^{name}"):
            best_tensor_parallel(LLAMA, H100, *bad)
    with pytest.raises(ValueError, match="^chip_counts"):
        best_tensor_parallel(LLAMA, H100, 8, 4096, chip_counts=[0])


# ----- sharded_decode assembled by hand (issue 20: the mutation run's survivors) ---------------
# Llama-3-70B (80 layers, D 8192, 64 query heads of 128, 8 KV heads; 70,553,706,496 parameters)
# at batch 12, 4096 tokens, on 8 H100s behind a switch at 100 GB/s with 2 us a step, fp8 weights,
# cache and arithmetic, attention FLOPs left out.
_KW = dict(hop_latency=2e-6, topology="switch", weight_bytes=1, kv_bytes=1, activation_bytes=2,
           dtype="fp8", bandwidth=1e11, attention_flops=False)


@pytest.mark.parametrize("kv_shard", ["batch", "head", "sequence"])
def test_sharded_decode_by_hand(kv_shard):
    s = sharded_decode(LLAMA, H100, 12, 4096, 8, kv_shard=kv_shard, **_KW)
    # replicas: batch sharding puts ceil(12/8) = 2 sequences on the busiest of 8 chips:
    # 8 x 2 / 12 = 4/3; head sharding 8 chips over 8 KV heads: 1; sequence sharding: 1
    r = {"batch": 16 / 12, "head": 1.0, "sequence": 1.0}[kv_shard]
    assert s.kv_replicas == pytest.approx(r, rel=1e-12)
    # two all-reduces a layer of 12 x 8192 x 2 = 196,608 B: 2 x 2 us + 2 x 7/8 x 196,608 / 1e11
    ar = 2 * 2e-6 + 2 * 7 / 8 * 196_608 / 1e11
    assert s.tp_comm == pytest.approx(80 * 2 * ar, rel=1e-12)
    # attention's resharding, queries of 12 x 64 x 128 x 2 = 196,608 B: batch sharding sends
    # them out and back (2 all-to-alls of 196,608 / 8 B a chip: 2 us + 7/8 x 24,576 / 1e11
    # each), sequence sharding all-reduces them, head sharding moves nothing
    kv = {"batch": 2 * (2e-6 + 7 / 8 * 24_576 / 1e11), "head": 0.0, "sequence": ar}[kv_shard]
    assert s.kv_comm == pytest.approx(80 * kv, rel=1e-12, abs=0)
    assert s.comm == pytest.approx(s.tp_comm + s.kv_comm, rel=1e-12)
    step = decode_step(LLAMA, H100, 12, 4096, n_chips=8, weight_bytes=1, kv_bytes=1, dtype="fp8",
                       attention_flops=False, kv_replicas=r)
    assert s.step.time == pytest.approx(step.time, rel=1e-12)
    assert s.step.kv_time == pytest.approx(step.kv_time, rel=1e-12)
    assert s.time == pytest.approx(step.time + s.comm, rel=1e-12)
    assert s.time_overlapped == pytest.approx(max(step.time, s.comm), rel=1e-12)
    # HBM: 70.55 GB of fp8 weights over 8 chips; 12 caches of 4096 x 163,840 B (fp8) times the
    # replicas over 8 chips
    assert s.weights_per_chip == pytest.approx(70_553_706_496 / 8, rel=1e-12)
    assert s.kv_per_chip == pytest.approx(12 * 671_088_640 * r / 8, rel=1e-12)
    assert bool(s.fits)  # 8.8 GB of weights and at most 1.3 GB of cache in 80 GB
    assert (s.n_chips, s.batch) == (8, 12)


def test_sharded_decode_edges(toy_chip):
    # one chip: no communication at all, whatever the layout
    one = sharded_decode(LLAMA, H100, 12, 4096, 1, **_KW)
    assert one.comm == 0.0 and one.tp_comm == 0.0 and one.kv_comm == 0.0
    assert one.time == one.step.time
    # the default bandwidth is the chip's scale-up link; a chip without one must be given one
    assert sharded_decode(LLAMA, H100, 12, 4096, 8).tp_comm == pytest.approx(
        sharded_decode(LLAMA, H100, 12, 4096, 8, bandwidth=H100.scale_up_bandwidth).tp_comm)
    with pytest.raises(ValueError, match="^bandwidth: chip 'toy' lists no scale_up_bandwidth; "
                                         "pass bandwidth=$"):
        sharded_decode(LLAMA, toy_chip, 12, 4096, 8)
    for bad, name in ((dict(batch=0), "batch"), (dict(bandwidth=0), "bandwidth"),
                      (dict(kv_bytes=0), "kv_bytes"), (dict(kv_shard="rows"), "kv_shard")):
        args = dict(model=LLAMA, chip=H100, batch=12, context=4096, n_chips=8)
        with pytest.raises(ValueError, match=f"^{name}"):
            sharded_decode(**{**args, **bad})


def test_kv_replicas_of_each_layout_by_hand():
    # head sharding of MLA (one latent, g = 1) over 8 chips: every chip holds it: 8
    assert kv_replicas(DSV3, 12, 8, kv_shard="head") == 8.0
    assert list(kv_replicas(DSV3, np.array([1.0, 12.0]), 8, kv_shard="head")) == [8.0, 8.0]
    assert kv_replicas(LLAMA, 12, 16, kv_shard="head") == 2.0  # 16 chips, 8 KV heads
    assert kv_replicas(LLAMA, 3, 8) == pytest.approx(8 / 3)  # batch (the default): 1 each
    assert list(kv_replicas(LLAMA, np.array([3.0, 12.0]), 8, kv_shard="sequence")) == [1.0, 1.0]
    assert kv_replicas(LLAMA, 3, 8, kv_shard="sequence") == 1.0
    for bad, name in (((LLAMA, 0, 8), "batch"), ((LLAMA, 3, 8, "rows"), "kv_shard")):
        with pytest.raises(ValueError, match=f"^{name}"):
            kv_replicas(*bad)


def test_ring_optimal_chips_by_hand():
    from llmmath.parallel import ring_optimal_chips

    # n* = sqrt(t1 / (2 L n_ar alpha)), t1 the one-chip step in fp8, L n_ar = 80 x 2 all-reduces
    t1 = decode_step(LLAMA, H100, 8, 4096, n_chips=1, weight_bytes=1, kv_bytes=1,
                     dtype="fp8").time
    got = ring_optimal_chips(LLAMA, H100, 8, 4096, hop_latency=3e-6, weight_bytes=1, kv_bytes=1,
                             dtype="fp8")
    assert got == pytest.approx(np.sqrt(t1 / (2 * 160 * 3e-6)), rel=1e-12)
    # a parallel-block model (PaLM) all-reduces once a layer: L n_ar = 118
    t1 = decode_step(PALM, H100, 8, 2048, n_chips=1).time
    assert ring_optimal_chips(PALM, H100, 8, 2048, hop_latency=3e-6) == pytest.approx(
        np.sqrt(t1 / (2 * 118 * 3e-6)), rel=1e-12)
    with pytest.raises(ValueError, match="^hop_latency"):
        ring_optimal_chips(LLAMA, H100, 8, 4096, hop_latency=0)


def test_ffn_comm_time_by_hand():
    from llmmath.parallel import ffn_comm_time

    # T = 1000 tokens, E = 1024, F = 4096, 64 chips at 1e11 B/s, 1-byte activations, 2-byte weights
    a = dict(activation_bytes=1, weight_bytes=2)
    # 1D weight-stationary: 2 T E b_a / bw = 2 x 1000 x 1024 x 1 / 1e11, for any chip count
    assert ffn_comm_time("1d-ws", 1000, 1024, 4096, 64, 1e11, **a) == pytest.approx(2.048e-5)
    # weight-gathered at the best N: 4 E sqrt(T F b_a b_w) / (sqrt(n) bw)
    #   = 4 x 1024 x sqrt(1000 x 4096 x 2) / (8 x 1e11) = 1.4654e-5
    assert ffn_comm_time("wg-opt", 1000, 1024, 4096, 64, 1e11, **a) == pytest.approx(
        4 * 1024 * np.sqrt(1000 * 4096 * 2) / (8 * 1e11), rel=1e-12)
    # 2D weight-stationary with X = 4: (2 T b_a / bw)(E/X + F/(n/X)) = 2e-8 x (256 + 256)
    assert ffn_comm_time("2d-ws", 1000, 1024, 4096, 64, 1e11, x=4, **a) == pytest.approx(
        2e-8 * 512, rel=1e-12)
    # weight-gathered over X = 4 of a 4 x 4 x 4 cube: 2 E F b_w N / (n bw) + 2 T E b_a / (N bw)
    wg = 2 * 1024 * 4096 * 2 * 4 / (64 * 1e11) + 2 * 1000 * 1024 / (4 * 1e11)
    assert ffn_comm_time("wg-x", 1000, 1024, 4096, 64, 1e11, **a) == pytest.approx(wg, rel=1e-12)
    assert ffn_comm_time("wg-x", 1000, 1024, 4096, 64, 1e11, axes=(4, 4, 4), **a) == \
        pytest.approx(wg, rel=1e-12)
    with pytest.raises(ValueError, match="^axes: n_chips=.* is not a cube"):
        ffn_comm_time("wg-x", 1000, 1024, 4096, 32, 1e11)
    with pytest.raises(ValueError, match=r"^axes: got \(4, 4, 2\); X\*Y\*Z must equal"):
        ffn_comm_time("wg-x", 1000, 1024, 4096, 64, 1e11, axes=(4, 4, 2))
    # a cube to within rounding (n = 27) is accepted; an axis product off by 1e-6 is not
    assert ffn_comm_time("wg-xyz", 1000, 1024, 4096, 27, 1e11) > 0
    with pytest.raises(ValueError, match="^axes"):
        ffn_comm_time("wg-x", 1000, 1024, 4096, 64, 1e11, axes=(4, 4, 4.000001))
    for bad, name in ((dict(layout="3d"), "layout"), (dict(tokens=0), "tokens"),
                      (dict(d_model=0), "d_model"), (dict(d_ff=0), "d_ff"),
                      (dict(bandwidth=0), "bandwidth"), (dict(activation_bytes=0),
                                                         "activation_bytes"),
                      (dict(weight_bytes=0), "weight_bytes"), (dict(layout="2d-ws", x=0), "x"),
                      (dict(axes=(0, 8, 8)), r"axes\[0\]")):
        args = dict(layout="wg-x", tokens=1000, d_model=1024, d_ff=4096, n_chips=64,
                    bandwidth=1e11)
        with pytest.raises(ValueError, match=f"^{name}"):
            ffn_comm_time(**{**args, **bad})
    # 1D over an array of chip counts keeps the array's shape
    assert ffn_comm_time("1d-ws", 1000, 1024, 4096, np.array([8, 64]), 1e11).shape == (2,)


def test_expert_parallel_comm_time_by_hand():
    from llmmath.parallel import expert_parallel_comm_time

    # DeepSeek-V3 (58 MoE layers, 8 routed experts a token, D 7168), 64 tokens over 16 chips as
    # an 8 x 2 torus, 1 us a step: each chip sends 64 x 8 x 7168 x 2 / 16 = 458,752 B, twice a
    # layer (dispatch and combine); the torus all-to-all takes (7 + 1) steps and moves
    # (16/8 + 1/2) x 458,752 B at 1e11 B/s
    t = (8 * 1e-6 + 2.5 * 458_752 / 1e11)
    assert expert_parallel_comm_time(DSV3, 64, 16, 1e11, hop_latency=1e-6, topology="torus",
                                     dims=(8, 2)) == pytest.approx(58 * 2 * t, rel=1e-12)
    # a dense model exchanges nothing: zeros of the batch's shape
    assert list(expert_parallel_comm_time(LLAMA, np.array([1.0, 64.0]), 8, 1e11)) == [0.0, 0.0]
    # one chip: no exchange, an array of token counts stays an array of zeros
    assert expert_parallel_comm_time(DSV3, 64, 1, 1e11) == 0.0
    assert list(expert_parallel_comm_time(DSV3, np.array([1.0, 64.0]), 1, 1e11)) == [0.0, 0.0]
    with pytest.raises(ValueError, match="^tokens"):
        expert_parallel_comm_time(DSV3, 0, 8, 1e11)
    with pytest.raises(ValueError, match="^activation_bytes"):
        expert_parallel_comm_time(DSV3, 64, 8, 1e11, activation_bytes=0)


# ----- issue 20, second pass: the collectives off their default path, torus sides passed on,
# the step's compute, HBM edges (the mutation run's survivors) -----------------------------------
# Hand numbers from the catalogue's Llama-3-70B (its config.json: D 8192, 80 layers, 64 query
# heads of 128, 8 KV heads, MLP 28,672, vocabulary 128,256): 2 x 8192^2 + 2 x 8192 x 1024 +
# 3 x 8192 x 28,672 = 855,638,016 matmul weights a layer, x 80 + the 1,050,673,152 of the output
# head = 69,501,714,432; a token's cache is 80 x 2 x 8 x 128 = 163,840 numbers. H100 SXM
# (datasheet): 1978.9 TFLOP/s fp8 dense, 3.35 TB/s, 80 GB.
LLAMA_MATMUL = 69_501_714_432


def test_collectives_zero_bytes_a_latency_and_a_ring_all_to_all():
    D, bw = 1e9, 1e11
    # a collective of no bytes is allowed and takes no time
    for collective in (all_gather_time, reduce_scatter_time, all_reduce_time, all_to_all_time):
        assert collective(0, 8, bw) == 0.0
    # a (deliberately round) 1 s step through a switch: one step, two for an all-reduce, on top
    # of 7/8 x 1e9 B / 1e11 B/s = 8.75 ms (twice that for an all-reduce)
    assert all_gather_time(D, 8, bw, hop_latency=1) == pytest.approx(1 + 8.75e-3, rel=1e-12)
    assert all_reduce_time(D, 8, bw, hop_latency=1) == pytest.approx(2 + 17.5e-3, rel=1e-12)
    # all-to-all on a ring of 8, no latency: the D/8 meant for each other chip travels
    # 1, 1, 2, 2, 3, 3 and 4 hops, 16 x D/8 = 2 D of link traffic a chip (7/8 D on a switch)
    assert all_to_all_time(D, 8, bw, topology="ring") == pytest.approx(2 * D / bw, rel=1e-12)
    assert all_to_all_time(D, 8, bw) == pytest.approx(7 / 8 * D / bw, rel=1e-12)


# 16 chips as an 8 x 2 torus, not the default most nearly cubic 4 x 2 x 2: a ring along each side
# in turn, (8 - 1) + (2 - 1) = 8 steps (16 for an all-reduce) at 1 us, and 15/16 of the bytes
_TORUS = dict(hop_latency=1e-6, topology="torus", dims=(8, 2))


def test_collectives_on_a_given_torus():
    D, bw = 1e6, 1e11
    assert all_gather_time(D, 16, bw, **_TORUS) == pytest.approx(8e-6 + 15 / 16 * 1e-5, rel=1e-12)
    assert reduce_scatter_time(D, 16, bw, **_TORUS) == pytest.approx(8e-6 + 15 / 16 * 1e-5,
                                                                     rel=1e-12)
    assert all_reduce_time(D, 16, bw, **_TORUS) == pytest.approx(16e-6 + 2 * 15 / 16 * 1e-5,
                                                                 rel=1e-12)
    # all-to-all: on the ring of 8 a byte crosses 16/8 links on average, on the ring of 2 1/2
    assert all_to_all_time(D, 16, bw, **_TORUS) == pytest.approx(8e-6 + 2.5 * 1e-5, rel=1e-12)
    # tensor parallelism passes the sides on: Llama-3-70B at 16 tokens all-reduces
    # 16 x 8192 x 2 = 262,144 B twice a layer
    from llmmath.parallel import tensor_parallel_layer_comm_time

    ar = 16e-6 + 2 * 15 / 16 * 262_144 / 1e11
    assert tensor_parallel_layer_comm_time(LLAMA, 16, 16, 1e11, **_TORUS) == pytest.approx(
        2 * ar, rel=1e-12)
    assert tensor_parallel_comm_time(LLAMA, 16, 16, 1e11, **_TORUS) == pytest.approx(
        160 * ar, rel=1e-12)


@pytest.mark.parametrize("kv_shard", ["batch", "sequence"])
def test_sharded_decode_on_a_given_torus(kv_shard):
    s = sharded_decode(LLAMA, H100, 16, 4096, 16, kv_shard=kv_shard, bandwidth=1e11, **_TORUS)
    ar = 16e-6 + 2 * 15 / 16 * 262_144 / 1e11  # as above: 16 x 8192 x 2 B
    assert s.tp_comm == pytest.approx(160 * ar, rel=1e-12)
    # queries of 16 x 64 x 128 x 2 = 262,144 B: batch sharding all-to-alls 262,144 / 16 =
    # 16,384 B a chip out and back (8 steps, 2.5 x the bytes, as above); sequence sharding
    # all-reduces them
    kv = {"batch": 2 * (8e-6 + 2.5 * 16_384 / 1e11), "sequence": ar}[kv_shard]
    assert s.kv_comm == pytest.approx(80 * kv, rel=1e-12)


def test_sharded_decode_step_compute_by_hand():
    # _KW's run (batch 12 on 8 chips, fp8, attention left out): 12 x 2 x 69,501,714,432 FLOPs
    # over 8 chips at the fp8 peak
    s = sharded_decode(LLAMA, H100, 12, 4096, 8, **_KW)
    assert s.step.flops == pytest.approx(12 * 2 * LLAMA_MATMUL, rel=1e-12)
    assert s.step.compute_time == pytest.approx(12 * 2 * LLAMA_MATMUL / (8 * 1978.9e12),
                                                rel=1e-12)
    # with attention: QK^T and AV over 4096 tokens, 2 x 2 x 64 x 128 x 4096 FLOPs a layer,
    # x 80 = 10,737,418,240 a token
    s = sharded_decode(LLAMA, H100, 12, 4096, 8, **{**_KW, "attention_flops": True})
    assert s.step.flops == pytest.approx(12 * (2 * LLAMA_MATMUL + 10_737_418_240), rel=1e-12)


def test_sharded_decode_fits_at_the_edges():
    # two H100s hold half of Llama-3-70B's 141.1 GB of bf16 weights (70.55 GB of 80 GB each) but
    # not also 64 sequences of 4096 tokens: 64 x 4096 x 327,680 B / 2 = 42.9 GB a chip
    s = sharded_decode(LLAMA, H100, 64, 4096, 2)
    assert s.weights_per_chip == pytest.approx(70_553_706_496, rel=1e-12)
    assert s.kv_per_chip == pytest.approx(64 * 4096 * 327_680 / 2, rel=1e-12)
    assert not bool(s.fits)
    # HBM filled to the byte fits: one chip of exactly 141,107,412,992 B of weights plus one
    # token's 327,680 B of cache; a byte less does not
    cap = 2 * 70_553_706_496 + 327_680
    for hbm, fits in ((cap, True), (cap - 1, False)):
        chip = Chip(name="edge", flops={"bf16": 1e15}, hbm_bandwidth=3e12, hbm_capacity=hbm)
        assert bool(sharded_decode(LLAMA, chip, 1, 1, 1, bandwidth=1e11).fits) is fits


def test_ring_optimal_chips_compute_bound():
    # 1024 sequences of 128 tokens on one H100 in fp8 are compute-bound: t1 = 1024 x
    # 2 x 69,501,714,432 / 1978.9e12 + 1024 x 80 x 4 x 64 x 128 x 128 / 989.4e12 (attention
    # dequantises the fp8 cache and runs in bf16) = 72.3 ms, against
    # (70.55 GB + 1024 x 128 x 163,840 B) / 3.35 TB/s = 27.5 ms of memory
    t1 = 1024 * 2 * LLAMA_MATMUL / 1978.9e12 + 1024 * 335_544_320 / 989.4e12
    got = ring_optimal_chips(LLAMA, H100, 1024, 128, hop_latency=3e-6, weight_bytes=1,
                             kv_bytes=1, dtype="fp8")
    assert got == pytest.approx(np.sqrt(t1 / (2 * 160 * 3e-6)), rel=1e-12)


def test_pipeline_memory_per_chip_by_hand():
    # DeepSeek-V3: 671,026,419,200 parameters (the catalogue's count) in bf16 over 8 x 4 chips;
    # its fp8 MLA cache holds 61 layers x 656 B a token (512 fp8 latent values, 4 fp32 scales,
    # a 64-wide bf16 RoPE key: FlashMLA's format): 4096 x 40,016 = 163,905,536 B a sequence,
    # 16 sequences over the 8 chips of a stage
    # Under data-parallel attention every chip of a stage holds the 17,117,648,384 weights that
    # are not routed experts (671,026,419,200 - 58 x 256 x 3 x 7168 x 2048), whole, / 4 stages
    repl = 671_026_419_200 - 58 * 256 * 3 * 7168 * 2048
    m = pipeline_memory_per_chip(DSV3, 16, 4096, 8, 4, kv_bytes=1)
    assert m.replicated_weights == pytest.approx(repl * 2 / 4, rel=1e-12)
    assert m.weights == pytest.approx(repl * 2 / 4 + (671_026_419_200 - repl) * 2 / 32, rel=1e-12)
    assert m.kv == pytest.approx(16 * 163_905_536 / 8, rel=1e-12)
    assert m.total == pytest.approx(m.weights + 2 * 163_905_536, rel=1e-12)
    assert m.batch_in_flight == 64
    # every weight divided: the episode's N_tot b_w / (E P)
    flat = pipeline_memory_per_chip(DSV3, 16, 4096, 8, 4, kv_bytes=1, replicated_params=0)
    assert flat.weights == pytest.approx(671_026_419_200 * 2 / 32, rel=1e-12)
    with pytest.raises(ValueError, match="replicated_params"):
        pipeline_memory_per_chip(DSV3, 16, 4096, 8, 4, replicated_params=1e15)


def test_ffn_comm_time_bytes_and_axis_tolerance():
    # wg-opt is symmetric in the two widths: 2-byte activations and 1-byte weights give the
    # same 4 E sqrt(T F b_a b_w) / (sqrt(n) bw) as the reverse
    assert ffn_comm_time("wg-opt", 1000, 1024, 4096, 64, 1e11, activation_bytes=2,
                         weight_bytes=1) == pytest.approx(
        4 * 1024 * np.sqrt(1000 * 4096 * 2) / (8 * 1e11), rel=1e-12)
    # the axes' product must equal n_chips to 1e-9 relative (room for round-off): 4 x 4 x
    # (4 + 1e-10) for 64 chips (off by 2.5e-11 relative) is taken as the 4 x 4 x 4 cube
    wg = 2 * 1024 * 4096 * 2 * 4 / (64 * 1e11) + 2 * 1000 * 1024 * 2 / (4 * 1e11)
    assert ffn_comm_time("wg-x", 1000, 1024, 4096, 64, 1e11, axes=(4, 4, 4 + 1e-10)) == \
        pytest.approx(wg, rel=1e-12)
    # the bound is inclusive: at 125^3 = 1,953,125 chips 1e-9 n is 2^-9 exactly, and a product
    # off by exactly that is accepted; weight-gathered over all N ~ n chips that is
    # 2 E F b_w / bw + 2 T E b_a / (n bw)
    n = 125**3
    assert ffn_comm_time("wg-xyz", 1000, 1024, 4096, n, 1e11, axes=(n + 2**-9, 1, 1)) == \
        pytest.approx(2 * 1024 * 4096 * 2 / 1e11 + 2 * 1000 * 1024 * 2 / (n * 1e11), rel=1e-9)


# ----- issue 31: the KV layout is the chapter's rule by default; algorithms; gated MLPs --------

def test_sharded_decode_auto_takes_head_sharding_within_the_kv_heads():
    # Llama-3-70B has 8 KV heads: on 2, 4 or 8 chips head sharding reads one copy and exchanges
    # nothing, so "auto" is "head" (the expert review's 8 H100s, batch 8, ring at 33.7/14 us:
    # kv_comm 0, not the 2.71 ms of batch sharding's 160 all-to-alls)
    for n in (2, 4, 8):
        auto = sharded_decode(LLAMA, H100, 8, 4096, n, 2.4e-6, "ring")
        head = sharded_decode(LLAMA, H100, 8, 4096, n, 2.4e-6, "ring", kv_shard="head")
        assert auto.kv_shard == "head" and auto.kv_comm == 0.0
        assert auto.time == head.time
    # batch sharding of batch 8 on 8 chips, ring at 2.4 us: 2 all-to-alls a layer of 7 steps
    # plus 8 x 64 x 128 x 2 / 8 = 16,384 B a chip crossing 16/8 = 2 links on average (the ring's
    # hop sum 1+2+3+4+3+2+1) at 450 GB/s; 80 layers: 2.6997 ms
    batch = sharded_decode(LLAMA, H100, 8, 4096, 8, 2.4e-6, "ring", kv_shard="batch")
    assert batch.kv_comm == pytest.approx(80 * 2 * (7 * 2.4e-6 + 2 * 16_384 / 450e9),
                                          rel=1e-12)


def test_sharded_decode_auto_is_the_cheaper_layout_that_fits():
    # beyond the 8 KV heads: 64 sequences on 16 chips read 2 copies head-sharded and 1
    # batch-sharded; at 4096 tokens the copies cost more than the all-to-alls: batch
    gb = chips.get("GB200")
    auto = sharded_decode(LLAMA, gb, 64, 4096, 16, 3e-6, "switch")
    batch = sharded_decode(LLAMA, gb, 64, 4096, 16, 3e-6, "switch", kv_shard="batch")
    head = sharded_decode(LLAMA, gb, 64, 4096, 16, 3e-6, "switch", kv_shard="head")
    assert (head.kv_replicas, batch.kv_replicas) == (2.0, 1.0)
    assert auto.kv_shard == "batch" and auto.time == batch.time < head.time
    # 8 sequences on 64 chips read 8 copies either way (64/8 KV heads; 64 x 1 / 8 sequences):
    # head sharding exchanges nothing and wins
    auto = sharded_decode(LLAMA, gb, 8, 4096, 64, 3e-6, "switch")
    assert auto.kv_shard == "head" and auto.kv_replicas == 8.0 and auto.kv_comm == 0.0
    # PaLM (one KV head) at batch 512 on 64 TPU v4: head sharding holds 64 copies, 127 GB a chip
    # of 34 GB, and does not fit; batch sharding fits and is chosen
    tpu = chips.get("TPU v4")
    auto = sharded_decode(PALM, tpu, 512, 2048, 64)
    assert not bool(sharded_decode(PALM, tpu, 512, 2048, 64, kv_shard="head").fits)
    assert auto.kv_shard == "batch" and bool(auto.fits)
    # arrays of batches choose element by element, and the step is the chosen layout's
    many = sharded_decode(LLAMA, gb, np.array([8.0, 64.0]), 4096, 16, 3e-6, "switch")
    assert list(many.kv_shard) == ["head", "batch"]
    assert list(many.kv_replicas) == [2.0, 1.0]
    for i, b in enumerate((8, 64)):
        one = sharded_decode(LLAMA, gb, b, 4096, 16, 3e-6, "switch")
        assert many.time[i] == pytest.approx(one.time, rel=1e-12)
        assert many.step.time[i] == pytest.approx(one.step.time, rel=1e-12)
        assert many.kv_comm[i] == pytest.approx(one.kv_comm, rel=1e-12)


def test_sharded_decode_latency_floor_and_algorithm_by_hand():
    # the 160 all-reduces' fixed costs: 160 x 14 x 2 us = 4.48 ms on a ring of 8, 160 x 2 x 3 us
    # = 0.96 ms through a switch (two-shot), 160 x 1 x 3 us = 0.48 ms one-shot
    ring = sharded_decode(LLAMA, H100, 8, 4096, 8, 2e-6, "ring")
    assert ring.tp_latency == pytest.approx(160 * 14 * 2e-6, rel=1e-12)
    assert sharded_decode(LLAMA, H100, 8, 4096, 8, 3e-6).tp_latency == pytest.approx(0.96e-3)
    one = sharded_decode(LLAMA, H100, 8, 4096, 8, 3e-6, "switch", algorithm="one-shot")
    assert one.tp_latency == pytest.approx(0.48e-3, rel=1e-12)
    # one-shot moves 7 buffers of 8 x 8192 x 2 = 131,072 B at 450 GB/s after its one step
    assert one.tp_comm == pytest.approx(160 * (3e-6 + 7 * 131_072 / 450e9), rel=1e-12)
    # a tree of 8: 6 steps, twice the buffer
    tree = sharded_decode(LLAMA, H100, 8, 4096, 8, 2e-6, "switch", algorithm="tree")
    assert tree.tp_comm == pytest.approx(160 * (6 * 2e-6 + 2 * 131_072 / 450e9), rel=1e-12)
    # one chip: no floor; Pope et al.'s defaults (no latency): no floor either
    assert sharded_decode(LLAMA, H100, 8, 4096, 1).tp_latency == 0.0
    assert sharded_decode(LLAMA, H100, 8, 4096, 8).tp_latency == 0.0
    # the sequence layout's all-reduce follows the algorithm too: 80 more one-shot all-reduces
    # of the queries, 8 x 64 x 128 x 2 = 131,072 B
    seq = sharded_decode(LLAMA, H100, 8, 4096, 8, 3e-6, "switch", kv_shard="sequence",
                         algorithm="one-shot")
    assert seq.kv_comm == pytest.approx(80 * (3e-6 + 7 * 131_072 / 450e9), rel=1e-12)
    with pytest.raises(ValueError, match="^algorithm"):
        sharded_decode(LLAMA, H100, 8, 4096, 8, 3e-6, "ring", algorithm="one-shot")
    with pytest.raises(ValueError, match="^kv_shard: got 'heads'; allowed values are "
                                         r"\['auto', 'batch', 'head', 'sequence'\]"):
        sharded_decode(LLAMA, H100, 8, 4096, 8, kv_shard="heads")


def test_ffn_comm_time_counts_the_weight_matrices():
    # a gated MLP gathers three D x F matrices: weight-gathered over X = 4 of 64 chips,
    # 3 x 1024 x 4096 x 2 x 4 / (64 x 1e11) + 2 x 1000 x 1024 x 1 / (4 x 1e11)
    a = dict(activation_bytes=1, weight_bytes=2)
    wg = 3 * 1024 * 4096 * 2 * 4 / (64 * 1e11) + 2 * 1000 * 1024 / (4 * 1e11)
    assert ffn_comm_time("wg-x", 1000, 1024, 4096, 64, 1e11, n_mats=3, **a) == pytest.approx(
        wg, rel=1e-12)
    # the best n_wg: 2 D sqrt(2 n_mats T F b_a b_w) / (sqrt(n) bw)
    #   = 2 x 1024 x sqrt(2 x 3 x 1000 x 4096 x 2) / (8 x 1e11)
    assert ffn_comm_time("wg-opt", 1000, 1024, 4096, 64, 1e11, n_mats=3, **a) == pytest.approx(
        2 * 1024 * np.sqrt(6 * 1000 * 4096 * 2) / (8 * 1e11), rel=1e-12)
    # PaLM 540B's SwiGLU on 64 TPU v4 (D 18,432, F 73,728, 270 GB/s), 512 x 2048 tokens,
    # everything gathered: 3 x 18,432 x 73,728 x 2 / 270e9 + 2 x 2^20 x 18,432 x 2 / (64 x 270e9)
    # = 30.199 + 4.474 = 34.673 ms (24.6 ms with Pope et al.'s two matrices)
    t = ffn_comm_time("wg-xyz", 512 * 2048, 18_432, 73_728, 64, 270e9, axes=(4, 4, 4), n_mats=3)
    assert t == pytest.approx(34.673e-3, rel=1e-4)
    # the weight-stationary layouts do not depend on it
    for lay in ("1d-ws", "2d-ws"):
        assert ffn_comm_time(lay, 1000, 1024, 4096, 64, 1e11, n_mats=3) == \
            ffn_comm_time(lay, 1000, 1024, 4096, 64, 1e11)
    for bad in (0, 2.5):
        with pytest.raises(ValueError, match="^n_mats"):
            ffn_comm_time("wg-x", 1000, 1024, 4096, 64, 1e11, n_mats=bad)

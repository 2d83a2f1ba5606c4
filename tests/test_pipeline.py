"""Unit tests of llmmath.pipeline, expected values computed by hand in the comments.

Sources for the formulas: Huang et al. 2019 (GPipe) and Narayanan et al. 2021 (1F1B, interleaved:
bubble (p-1)/m of the ideal time, i.e. (p-1)/(m+p-1) of the step; divided by v when interleaved);
Qi et al. 2024 (zero bubble: ZB-H1 bubble (p-1)(T_F + T_B - T_W)); DeepEP docs/legacy.md for the
measured hop latencies (77 us at EP8, 194 us at EP256).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from llmmath import chips, models
from llmmath import pipeline as pp
from llmmath.moe import expert_parallel_decode_step
from llmmath.roofline import decode_step

DSV3, LLAMA, H100, GB200 = (models.get("DeepSeek-V3"), models.get("Llama-3-70B"),
                            chips.get("H100-SXM"), chips.get("GB200"))
# DeepSeek-V3's config.json: 671,026,419,200 parameters; 58 MoE layers of 256 routed experts of
# 3 x 7168 x 2048 = 44,040,192 weights: 653,908,770,816 routed, 17,117,648,384 not (attention,
# 3 dense layers, shared experts, routers, embeddings), replicated on every chip of a stage
# under data-parallel attention.
DS_TOT, DS_ROUTED = 671_026_419_200, 58 * 256 * 3 * 7168 * 2048
DS_REPL = DS_TOT - DS_ROUTED


def test_bubble_hand_values():
    assert pp.bubble_fraction(4, 8) == pytest.approx(3 / 11)            # (4-1)/(8+4-1)
    assert pp.bubble_fraction(4, 8, "gpipe") == pytest.approx(3 / 11)
    assert pp.bubble_fraction(8, 24) == pytest.approx(7 / 31)
    assert pp.bubble_fraction(1, 5) == 0.0                              # one stage never idles
    # interleaved, v = 2: bubble 3*3/2 = 4.5 against work 8*3 = 24 -> 4.5/28.5
    assert pp.bubble_fraction(4, 8, "interleaved", virtual_stages=2) == pytest.approx(4.5 / 28.5)
    # ZB-H1 at equal times: bubble 3*(1+1-1) = 3 against 24 -> 3/27
    assert pp.bubble_fraction(4, 8, "zb-h1") == pytest.approx(3 / 27)
    assert pp.bubble_fraction(4, 8, "zb-h2") == 0.0
    # ZB-H1 with a weight pass longer than F + B: never a negative bubble
    assert pp.bubble_fraction(4, 8, "zb-h1", forward=1, backward_input=1, backward_weight=3) == 0.0
    # DualPipe (DeepSeek-V3 Table 2, (PP/2 - 1)(F&B + B - 3W) with B the full backward t_B + t_W
    # and F&B = t_F + t_B + t_W): its Figure 5, 8 stages and 20 micro-batches, equal times:
    # (8/2 - 1)(3 + 2 - 3) = 6 against work 20 x 3 = 60 -> 6/66
    assert pp.bubble_fraction(8, 20, "dualpipe") == pytest.approx(6 / 66)
    # no weight split (t_W = 0, t_B = 2): (4 - 1)(1 + 4 - 0) = 15 against 60 -> 15/75
    assert pp.bubble_fraction(8, 20, "dualpipe", backward_input=2,
                              backward_weight=0) == pytest.approx(15 / 75)
    with pytest.raises(ValueError, match="even number of stages"):
        pp.bubble_fraction(7, 20, "dualpipe")


def test_bubble_broadcasts():
    got = pp.bubble_fraction(np.array([2, 4, 8]), 8)
    assert np.allclose(got, [1 / 9, 3 / 11, 7 / 15])


def test_micro_batches_for_bubble():
    assert pp.micro_batches_for_bubble(16, 0.10) == 135                 # 15 * 0.9 / 0.1 = 135
    assert pp.micro_batches_for_bubble(8, 0.05) == 133                  # 7 * 0.95 / 0.05 = 133
    assert pp.micro_batches_for_bubble(1, 0.05) == 1
    assert pp.micro_batches_for_bubble(16, 0.10, "interleaved", virtual_stages=3) == 45
    m = pp.micro_batches_for_bubble(16, 0.10)
    assert pp.bubble_fraction(16, m) <= 0.10 < pp.bubble_fraction(16, m - 1)


@pytest.mark.parametrize("schedule", ["gpipe", "1f1b"])
@pytest.mark.parametrize("P, m", [(1, 1), (2, 1), (4, 8), (8, 4), (5, 13), (16, 64), (64, 1)])
def test_simulated_timeline_matches_the_formula(schedule, P, m):
    ops = pp.schedule_timeline(P, m, schedule)
    assert len(ops) == 2 * P * m
    end = max(start + dur for _, start, dur, _, _ in ops)
    assert end == pytest.approx((m + P - 1) * 3)                        # (m+P-1)(t_F + t_B)
    assert 1 - 3 * m / end == pytest.approx(pp.bubble_fraction(P, m, schedule))
    for s in range(P):  # a stage never runs two ops at once
        spans = sorted((start, start + dur) for st, start, dur, _, _ in ops if st == s)
        assert all(a[1] <= b[0] + 1e-12 for a, b in zip(spans, spans[1:], strict=False))


def test_1f1b_holds_at_most_P_micro_batches_gpipe_all():
    def peak_in_flight(ops, stage):
        events = sorted([(start, 1) for s, start, _, k, _ in ops if s == stage and k == "F"]
                        + [(start + dur, -1) for s, start, dur, k, _ in ops
                           if s == stage and k == "B"])
        live = peak = 0
        for _, d in events:
            live += d
            peak = max(peak, live)
        return peak

    assert peak_in_flight(pp.schedule_timeline(4, 8, "1f1b"), 0) == 4
    assert peak_in_flight(pp.schedule_timeline(4, 8, "gpipe"), 0) == 8


def test_pipeline_memory_hand_values():
    # DeepSeek-V3 bf16 on 4 stages of 8: the replicated 17.1e9 x 2 B / 4 = 8.56 GB on every chip,
    # the routed 653.9e9 x 2 B / 32 = 40.87 GB; 49.43 GB, not 671.0e9 x 2 / 32 = 41.94 GB.
    # KV 61 x 576 x 2 = 70,272 B per token, 64 sequences over a stage's 8 chips: 2.30 GB.
    mem = pp.pipeline_memory(DSV3, 64, 4096, 8, 4)
    assert DS_REPL == 17_117_648_384
    assert mem.weights == pytest.approx(DS_REPL * 2 / 4 + DS_ROUTED * 2 / 32, rel=1e-12)
    assert mem.replicated_weights == pytest.approx(DS_REPL * 2 / 4, rel=1e-12)
    assert mem.kv == pytest.approx(64 * 4096 * 70272 / 8)
    assert mem.total == pytest.approx(51.73e9, rel=1e-3)                 # 49.43 + 2.30 GB
    assert mem.batch_in_flight == 256
    # every weight divided (replicated_params=0): the episode's N_tot b_w / (E P)
    flat = pp.pipeline_memory(DSV3, 64, 4096, 8, 4, replicated_params=0)
    assert flat.weights == pytest.approx(DS_TOT * 2 / 32, rel=1e-12)
    assert flat.replicated_weights == 0
    # a dense model divides every weight by default (tensor parallelism)
    dense = pp.pipeline_memory(LLAMA, 8, 4096, 8, 2)
    assert dense.weights == pytest.approx(LLAMA.total_params * 2 / 16, rel=1e-12)
    # fewer micro-batches than stages: the cache per chip falls (and the stages idle)
    two = pp.pipeline_memory(DSV3, 64, 4096, 8, 4, micro_batches=2)
    assert two.kv == pytest.approx(mem.kv / 2)


def test_stages_to_fit_hand_values():
    # Llama 3 70B bf16 (141 GB) on one H100 (80 GB) with a tiny cache: ceil(141.1/79.99...) = 2
    assert pp.stages_to_fit(LLAMA, H100, 1, 128, 1) == 2
    need = pp.stages_to_fit(DSV3, H100, 64, 4096, 8)
    room = 80e9 - 64 * 4096 * 70272 / 8                                 # 77.70 GB a chip
    weights = DS_REPL * 2 + DS_ROUTED * 2 / 8                           # 34.24 + 163.48 GB
    assert need == math.ceil(weights / room) == 3                       # 2.54 -> 3
    # every weight divided: ceil(1.342e12 / 8 / 77.70e9) = ceil(2.16) = 3 as well
    assert pp.stages_to_fit(DSV3, H100, 64, 4096, 8, replicated_params=0) == 3
    # fp8: (17.12 + 81.74) GB / 77.70 GB = 1.27 -> 2
    assert pp.stages_to_fit(DSV3, H100, 64, 4096, 8, weight_bytes=1) == 2
    assert pp.stages_to_fit(DSV3, GB200, 64, 4096, 72) == 1
    # one micro-batch's cache share alone exceeds the chip: no number of stages fits
    assert pp.stages_to_fit(models.get("Llama-3.1-405B"), H100, 16, 131072, 8) == math.inf


def test_hop_time():
    # 64 tokens x 7168 x 2 B = 917,504 B at 50 GB/s = 18.35 us, plus 77 us
    assert pp.hop_time(64, 7168, 50e9, latency=77e-6) == pytest.approx(77e-6 + 917504 / 50e9)
    assert (pp.HOP_LATENCIES["measured cross-node dispatch (DeepEP, EP8)"]
            == (77e-6, "deepseek_deepep"))


def test_pipeline_decode_latency_and_throughput():
    # the default MoE layout (data-parallel attention, expert parallelism) reads what it holds
    step = expert_parallel_decode_step(DSV3, H100, 64, 4096, 8)
    one = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 1)
    assert one.token_latency == pytest.approx(step.time) and one.hops == 0
    four = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, hop_latency=1e-3)
    hop = 1e-3 + 64 * 7168 * 2 / 50e9
    # 3 boundaries carry activations; the sampled tokens return in one latency
    assert four.token_latency == pytest.approx(step.time + 3 * hop + 1e-3)
    assert four.stage_time == pytest.approx(step.time / 4)
    # m = P micro-batches of 64 tokens per token_latency
    assert four.throughput == pytest.approx(4 * 64 / four.token_latency)
    assert four.n_chips == 32
    # per-chip throughput with free hops equals the unpipelined n_st-chip replica's
    zero = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, scale_out_bandwidth=1e30)
    assert zero.throughput_per_chip == pytest.approx(64 / step.time / 8)
    # half the micro-batches: half the utilisation
    half = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, micro_batches=2, scale_out_bandwidth=1e30)
    assert half.utilisation == pytest.approx(0.5)


def test_boundary_ratio_hand_values():
    # H100: 450 GB/s NVLink one way vs 400 Gb/s = 50 GB/s: ratio 1/9;
    # DeepSeek k = 8, one layer: 16/9
    assert pp.boundary_ratio(DSV3, H100, 1) == pytest.approx(16 / 9)
    assert pp.min_layers_per_stage(DSV3, GB200) == 2                    # 16 L / 18 >= 1 -> L = 2
    assert pp.min_layers_per_stage(LLAMA, GB200) == 9                   # 2 L / 18 >= 1 -> L = 9


@pytest.mark.parametrize("call, arg", [
    (lambda: pp.bubble_fraction(4, 8, "pipedream"), "schedule"),
    (lambda: pp.bubble_fraction(0, 8), "stages"),
    (lambda: pp.bubble_fraction(4, 2.5), "micro_batches"),
    (lambda: pp.bubble_fraction("4", 8), "stages"),
    (lambda: pp.bubble_fraction(4, 8, virtual_stages=True), "virtual_stages"),
    (lambda: pp.micro_batches_for_bubble(4, 1.5), "bubble"),
    (lambda: pp.micro_batches_for_bubble(4, 0.1, "zb-h1"), "schedule"),
    (lambda: pp.schedule_timeline(100, 4), "stages"),
    (lambda: pp.schedule_timeline(4, 8, forward=np.array([1.0, 2.0])), "forward"),
    (lambda: pp.schedule_timeline(np.array([2, 4]), 8), "stages"),
    (lambda: pp.pipeline_memory(DSV3, -1, 4096, 8, 4), "micro_batch"),
    (lambda: pp.pipeline_memory(DSV3, 64, 4096, 2.5, 4), "chips_per_stage"),
    (lambda: pp.stages_to_fit(DSV3, H100, 64, 4096, 8, memory_fraction=1.5), "memory_fraction"),
    (lambda: pp.hop_time(64, 7168, 0.0), "bandwidth"),
    (lambda: pp.hop_time(64, 7168, 50e9, latency=float("nan")), "latency"),
    (lambda: pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, hop_latency=-1), "hop_latency"),
    (lambda: pp.pipeline_decode(DSV3, chips.get("TPU v4"), 64, 4096, 8, 4), "scale_out_bandwidth"),
    (lambda: pp.boundary_ratio(DSV3, chips.get("TPU v4"), 4), "chip"),
])
def test_bad_input_names_the_argument(call, arg):
    with pytest.raises((ValueError, TypeError)) as exc:
        call()
    assert arg in str(exc.value)


def test_refusals_say_what_to_do_instead():
    # the house rule: a message that refuses names what is allowed or what to use instead
    with pytest.raises(TypeError) as exc:
        pp.schedule_timeline(4, 8, backward=np.array([1.0, 2.0]))
    assert str(exc.value).endswith("simulates one configuration, pass a single number")
    with pytest.raises(ValueError) as exc:
        pp.min_layers_per_stage(DSV3, chips.get("TPU v4"))
    assert str(exc.value).endswith("use parallel.scaleup_vs_scaleout_ratio with your own ratio")
    with pytest.raises(ValueError, match=r"pass one \(bytes/s\)"):
        pp.pipeline_decode(DSV3, chips.get("TPU v4"), 64, 4096, 8, 2)


def test_bubble_with_a_free_weight_pass():
    # t_W = 0 is allowed (a backward that is all input gradient): ZB-H1 bubble 3*(1+1-0) = 6
    # against work 8*(1+1) = 16 -> 6/22; 1F1B the same here, (P-1)/(m+P-1) = 3/11
    assert pp.bubble_fraction(4, 8, "zb-h1", backward_weight=0) == pytest.approx(6 / 22)
    assert pp.bubble_fraction(4, 8, backward_weight=0) == pytest.approx(3 / 11)


def test_micro_batches_for_bubble_ignores_v_outside_interleaved():
    # GPipe and plain 1F1B have no chunks: virtual_stages is ignored, 15*0.9/0.1 = 135
    assert pp.micro_batches_for_bubble(16, 0.10, "gpipe") == 135
    assert pp.micro_batches_for_bubble(16, 0.10, "1f1b", virtual_stages=3) == 135


def test_timeline_durations_by_hand():
    # 1F1B, P = 2, m = 1, t_F = 1, t_B = 3: F on stage 0 [0,1], on stage 1 [1,2]; the last
    # stage's backward [2,5] right after its forward, then stage 0's backward [5,8]
    ops = pp.schedule_timeline(2, 1, "1f1b", forward=1.0, backward=3.0)
    assert sorted(ops, key=lambda o: o[1]) == [(0, 0.0, 1.0, "F", 0), (1, 1.0, 1.0, "F", 0),
                                               (1, 2.0, 3.0, "B", 0), (0, 5.0, 3.0, "B", 0)]


def test_pipeline_memory_kv_bytes_and_array_batch():
    # fp8 cache (kv_bytes=1): 61 layers x 656 B (FlashMLA's fp8 row), 64 x 4096 x 40,016 B / 8
    one = pp.pipeline_memory(DSV3, 64, 4096, 8, 4, kv_bytes=1)
    assert one.kv == pytest.approx(64 * 4096 * 40016 / 8)
    # an array of micro-batches: m b = 4 x [32, 64] sequences in flight, floats
    arr = pp.pipeline_memory(DSV3, np.array([32, 64]), 4096, 8, 4)
    assert np.allclose(arr.batch_in_flight, [128, 256]) and arr.batch_in_flight.dtype == float


def test_stages_to_fit_memory_fraction_and_kv_bytes():
    # Llama 3 70B bf16, 141.1 GB, on half an H100 (40 GB) with a tiny cache: ceil(3.53) = 4
    assert pp.stages_to_fit(LLAMA, H100, 1, 128, 1, memory_fraction=0.5) == 4
    # Llama 3.1 405B, fp8 cache: 126 x 8 x 128 x 2 x 1 = 258,048 B/token, 16 x 131072 tokens
    # = 541.2 GB of 640 GB; room 98.8 GB, 811.7 GB of weights -> ceil(8.21) = 9 stages
    big = models.get("Llama-3.1-405B")
    room = 8 * 80e9 - 16 * 131072 * 258048
    assert pp.stages_to_fit(big, H100, 16, 131072, 8, kv_bytes=1) == math.ceil(
        big.total_params * 2 / room) == 9


def test_stages_to_fit_at_the_edges():
    # a chip that holds exactly half the bf16 weights plus one micro-batch's cache (128 tokens,
    # 80 x 8 x 128 x 2 x 2 = 327,680 B each): exactly 2 stages, not 3 (all sums exact in float)
    kv = 128 * 80 * 8 * 128 * 2 * 2
    half = dataclasses.replace(H100, hbm_capacity=LLAMA.total_params + kv)
    assert pp.stages_to_fit(LLAMA, half, 1, 128, 1) == 2
    # half a byte of room left: still finite, 2 N / 0.5 = 4 N stages
    tight = dataclasses.replace(H100, hbm_capacity=kv + 0.5)
    assert pp.stages_to_fit(LLAMA, tight, 1, 128, 1) == 4 * LLAMA.total_params


def test_pipeline_decode_fields_by_hand():
    # DeepSeek-V3 on 4 stages of 8 H100s, 64 sequences a micro-batch, m = P = 4
    step = expert_parallel_decode_step(DSV3, H100, 64, 4096, 8)
    four = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, hop_latency=1e-3)
    assert four.step.time == step.time and four.step.fits == step.fits
    hop = 1e-3 + 64 * 7168 * 2 / 50e9                                   # 1 ms + 18.35 us
    assert four.hop_time == pytest.approx(hop) and four.hops == 3
    # cycle: max(token latency, m x stage time) = max(step + 3 hops + 1 ms, step)
    assert four.cycle == pytest.approx(step.time + 3 * hop + 1e-3)
    assert four.utilisation == pytest.approx(step.time / (step.time + 3 * hop + 1e-3))
    # memory: weights 17.12e9 x 2 / 4 + 653.9e9 x 2 / 32, KV 4 x 64 x 4096 x 70,272 / 32
    assert four.memory.weights == pytest.approx(DS_REPL * 2 / 4 + DS_ROUTED * 2 / 32)
    assert four.memory.kv == pytest.approx(4 * 64 * 4096 * 70272 / 32)
    assert four.n_chips == 32 and type(four.n_chips) is float
    assert type(four.hop_time) is float and type(four.hops) is float
    # two micro-batches: half the cache per chip
    two = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, micro_batches=2)
    assert two.memory.kv == pytest.approx(2 * 64 * 4096 * 70272 / 32)


def test_pipeline_decode_passes_its_byte_widths_on():
    # fp8 weights and cache: the step is the expert-parallel step at those widths
    step = expert_parallel_decode_step(DSV3, H100, 64, 4096, 8, weight_bytes=1, kv_bytes=1,
                                       dtype="fp8")
    one = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 1, weight_bytes=1, kv_bytes=1, dtype="fp8")
    assert one.token_latency == pytest.approx(step.time)
    assert one.memory.weights == pytest.approx(DS_REPL + DS_ROUTED / 8)  # 17.12 + 81.74 GB
    assert one.memory.kv == pytest.approx(64 * 4096 * 40016 / 8)  # 61 x 656 B a token
    w = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 1, weight_bytes=1)
    assert w.token_latency == pytest.approx(
        expert_parallel_decode_step(DSV3, H100, 64, 4096, 8, weight_bytes=1).time)
    k = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 1, kv_bytes=1)
    assert k.token_latency == pytest.approx(
        expert_parallel_decode_step(DSV3, H100, 64, 4096, 8, kv_bytes=1).time)
    # every weight divided (replicated_params=0): decode_step on the stage's 8 chips
    flat = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 1, replicated_params=0)
    assert flat.token_latency == pytest.approx(decode_step(DSV3, H100, 64, 4096, n_chips=8).time)
    with pytest.raises(ValueError, match="replicated_params"):
        pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 1, replicated_params=1e9)
    # fp8 activations at the boundary: 64 x 7168 x 1 B at 50 GB/s
    a = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 2, activation_bytes=1)
    assert a.hop_time == pytest.approx(64 * 7168 / 50e9)


def test_pipeline_decode_one_stage_needs_no_scale_out():
    # TPU v4 lists no scale-out bandwidth; one stage never crosses it
    tpu = chips.get("TPU v4")
    one = pp.pipeline_decode(DSV3, tpu, 64, 4096, 8, 1)
    assert one.hops == 0
    assert one.token_latency == pytest.approx(
        expert_parallel_decode_step(DSV3, tpu, 64, 4096, 8).time)

"""Unit tests of llmmath.pipeline, expected values computed by hand in the comments.

Sources for the formulas: Huang et al. 2019 (GPipe) and Narayanan et al. 2021 (1F1B, interleaved:
bubble (p-1)/m of the ideal time, i.e. (p-1)/(m+p-1) of the step; divided by v when interleaved);
Qi et al. 2024 (zero bubble: ZB-H1 bubble (p-1)(T_F + T_B - T_W)); DeepEP docs/legacy.md for the
measured hop latencies (77 us at EP8, 194 us at EP256).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmmath import chips, models
from llmmath import pipeline as pp
from llmmath.roofline import decode_step

DSV3, LLAMA, H100, GB200 = (models.get("DeepSeek-V3"), models.get("Llama-3-70B"),
                            chips.get("H100-SXM"), chips.get("GB200"))


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
@pytest.mark.parametrize("P, m", [(1, 1), (2, 1), (4, 8), (8, 4), (5, 13), (16, 64)])
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
    # DeepSeek-V3 bf16: 671.0e9 params x 2 B / (8 x 4); KV 61 x 576 x 2 = 70,272 B per token
    mem = pp.pipeline_memory(DSV3, 64, 4096, 8, 4)
    assert mem.weights == pytest.approx(DSV3.total_params * 2 / 32)
    assert mem.kv == pytest.approx(64 * 4096 * 70272 / 8)
    assert mem.batch_in_flight == 256
    # fewer micro-batches than stages: the cache per chip falls (and the stages idle)
    two = pp.pipeline_memory(DSV3, 64, 4096, 8, 4, micro_batches=2)
    assert two.kv == pytest.approx(mem.kv / 2)


def test_stages_to_fit_hand_values():
    # Llama 3 70B bf16 (141 GB) on one H100 (80 GB) with a tiny cache: ceil(141.1/79.99...) = 2
    assert pp.stages_to_fit(LLAMA, H100, 1, 128, 1) == 2
    need = pp.stages_to_fit(DSV3, H100, 64, 4096, 8)
    room = 8 * 80e9 - 64 * 4096 * 70272
    assert need == math.ceil(DSV3.total_params * 2 / room)             # 1.342e12 / 621.6e9 -> 3
    assert pp.stages_to_fit(DSV3, GB200, 64, 4096, 72) == 1
    # one micro-batch's cache share alone exceeds the chip: no number of stages fits
    assert pp.stages_to_fit(models.get("Llama-3.1-405B"), H100, 16, 131072, 8) == math.inf


def test_hop_time():
    # 64 tokens x 7168 x 2 B = 917,504 B at 50 GB/s = 18.35 us, plus 77 us
    assert pp.hop_time(64, 7168, 50e9, latency=77e-6) == pytest.approx(77e-6 + 917504 / 50e9)
    assert (pp.HOP_LATENCIES["measured cross-node dispatch (DeepEP, EP8)"]
            == (77e-6, "deepseek_deepep"))


def test_pipeline_decode_latency_and_throughput():
    step = decode_step(DSV3, H100, 64, 4096, n_chips=8)
    one = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 1)
    assert one.token_latency == pytest.approx(step.time) and one.hops == 0
    four = pp.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, hop_latency=1e-3)
    hop = 1e-3 + 64 * 7168 * 2 / 50e9
    assert four.token_latency == pytest.approx(step.time + 4 * hop)
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

"""The rules of thumb of chapter 9 ("Partitioning a model for inference",
book/partitioning.ipynb), asserted over the whole chip and model catalogues.

When a rule fails for some chip or model, the chapter's prose changes (its scope), not the test.

Sources: Thakur et al. 2005 (thakur2005collectives) for the ring's n-1 steps per pass and the
(n-1)/n bandwidth factor; Pope et al. 2022 (pope2022efficiently) §3.2 and App. A for the
weight-stationary and weight-gathered formulas and "2D beats 1D when sqrt(n) > F/D" (F = 4D);
Shoeybi et al. 2019 for two all-reduces per layer. The ring optimum n* = sqrt(t1/(2 L n_ar a)) is
derived in the chapter by setting d/dn [t1/n + 2 L n_ar (n-1) a] = 0. Expected values below are
derived by hand from those formulas, never read off the library.
"""

from __future__ import annotations

import math

import pytest
from claims import each, from_scratch, glued, glued_number

from llmmath import chips, models
from llmmath.collectives import collective_time, latency_bandwidth_crossover
from llmmath.parallel import ffn_comm_time, kv_replicas, ring_optimal_chips, sharded_decode

CHIPS = chips.all_chips()
LINKED = [c for c in CHIPS if c.scale_up_bandwidth]
MODELS = models.all_models()
ALPHA = 33.7e-6 / 14          # the NVLink ring step the chapter quotes (nccl-tests issue 123)
ALPHA_NVLS = 3e-6             # NVLink SHARP step (NCCL issue 1259)


def _ctx(model, s):
    return min(s, model.max_context or s)


# Claim: "for every model and chip of the catalogue, a ring all-reduce of a decode step's
# activations over 8 chips is latency-bound for every batch up to 64" (Q = B D 2 bytes).
@each("chip", LINKED, ids=lambda c: c.name)
def test_decode_all_reduce_is_latency_bound(chip):
    for m in MODELS:
        q = 64 * m.d_model * 2
        latency = 14 * ALPHA
        bandwidth = 2 * 7 / 8 * q / chip.scale_up_bandwidth
        assert latency > bandwidth, (m.name, chip.name)
        assert latency_bandwidth_crossover("all-reduce", 8, chip.scale_up_bandwidth, ALPHA,
                                           "ring") > q


# Claim: "the bandwidth factor is about 1 (2 for an all-reduce) on any topology; topology changes
# the step count": (n-1)/n and 2(n-1)/n for switch, ring and torus; steps 2, 2(n-1), 2 sum(d_i - 1).
@each("n, dims",
                         [(8, (2, 2, 2)), (16, (4, 2, 2)), (64, (4, 4, 4)), (256, (8, 8, 4))])
def test_topology_changes_steps_not_bandwidth(n, dims):
    q, bw = 1e8, 1e11
    for topo in ("switch", "ring", "torus"):
        bw_only = collective_time("all-reduce", q, n, bw, 0.0, topo,
                                  dims=dims if topo == "torus" else None)
        assert bw_only == pytest.approx(2 * (n - 1) / n * q / bw)
    steps = {"switch": 2, "ring": 2 * (n - 1), "torus": 2 * sum(d - 1 for d in dims)}
    for topo, s in steps.items():
        t = collective_time("all-reduce", 0.0, n, bw, 1.0, topo,
                            dims=dims if topo == "torus" else None)
        assert t == pytest.approx(s)


# Claim: "on a ring the fastest tensor-parallel degree is n* = sqrt(t1/(2 L n_ar t_lat))": the
# fastest power of two (bandwidth made free, capacity ignored) lies within a factor 2 of n*.
@each("model", MODELS, ids=lambda m: m.name)
@each("chip", [chips.get("H100-SXM"), chips.get("GB200"), chips.get("TPU v4")],
                         ids=lambda c: c.name)
def test_ring_optimum(model, chip):
    S = _ctx(model, 4096)
    for batch in (1, 8, 64):
        n_star = ring_optimal_chips(model, chip, batch, S, ALPHA)
        times = {n: sharded_decode(model, chip, batch, S, n, ALPHA, "ring", kv_shard="sequence",
                                   bandwidth=1e30).time for n in (2 ** i for i in range(11))}
        best = min(times, key=times.get)
        if best < 1024:
            assert best / 2 <= n_star <= best * 2, (model.name, batch, best, n_star)


# Claim: "a switch removes the optimum but leaves a floor of 2 L n_ar t_lat": every step is above
# the floor, and with more chips the step falls toward it (every model on a GB200 rack).
@each("model", MODELS, ids=lambda m: m.name)
def test_switch_floor(model):
    gb = chips.get("GB200")
    S = _ctx(model, 4096)
    n_ar = 1 if model.parallel_block else 2
    floor = 2 * model.n_layers * n_ar * ALPHA_NVLS
    for batch in (1, 8, 64):
        times = [sharded_decode(model, gb, batch, S, n, ALPHA_NVLS, "switch").time
                 for n in (2, 4, 8, 16, 32, 64)]
        assert min(times) > floor
        assert times[-1] < times[0]


# Claim: "head sharding copies the cache n / n_kv times (every chip for MQA and MLA); batch sharding
# keeps one copy while B >= n".
@each("model", MODELS, ids=lambda m: m.name)
def test_kv_copies(model):
    groups = 1 if model.kv_lora_rank is not None else model.n_kv_heads
    for n in (1, 8, 64, 512):
        assert kv_replicas(model, 1024, n, "head") == pytest.approx(max(1, n / groups))
        assert kv_replicas(model, 1024, n, "batch") == pytest.approx(n * math.ceil(1024 / n) / 1024)
        assert kv_replicas(model, 1024, n, "sequence") == 1


# Claim: "2D weight-stationary beats 1D beyond 4F/D chips" (from the optimum
# 4 T b sqrt(DF)/(sqrt(n) bw) against 2 T D b / bw), for every model's own D and F.
@each("model", MODELS, ids=lambda m: m.name)
def test_2d_beats_1d_beyond_4f_over_d(model):
    D, F = model.d_model, model.d_ff
    for n in (2 ** i for i in range(1, 13)):
        one = ffn_comm_time("1d-ws", 512, D, F, n, 1e11)
        two = ffn_comm_time("2d-ws", 512, D, F, n, 1e11)
        if n > 4 * F / D * 1.0001:
            assert two < one, (model.name, n)
        elif n < 4 * F / D / 1.0001:
            assert two > one, (model.name, n)


# Claim: "weight-stationary for decode, weight-gathered for large prefills": on 64 chips, XYZ
# weight-gathering loses at 512 tokens and wins at 512 x 2048 for every model. By hand: WG costs
# 2DFb/bw + 2TDb/(64 bw), 2D WS 4Tb sqrt(DF)/(8 bw) = T b sqrt(DF)/(2 bw). At T = 512 the weight
# term 2DF alone exceeds 256 sqrt(DF) whenever sqrt(DF) > 128; at T = 2^20 the WS term
# 2^19 sqrt(DF) exceeds 2DF (plus the small 2^15 D) whenever sqrt(DF) is well below 2^18. Both
# hold for every catalogue model (D and F in the thousands to tens of thousands).
@each("model", MODELS, ids=lambda m: m.name)
def test_ws_for_decode_wg_for_prefill(model):
    D, F = model.d_model, model.d_ff
    for T, wg_wins in ((512, False), (512 * 2048, True)):
        wg = ffn_comm_time("wg-xyz", T, D, F, 64, 1e11, axes=(4, 4, 4))
        ws = ffn_comm_time("2d-ws", T, D, F, 64, 1e11)
        assert (wg < ws) == wg_wins, (model.name, T)
        # the hand form of both
        assert wg == pytest.approx(2 * D * F * 2 / 1e11 + 2 * T * D * 2 / (64 * 1e11))
        assert ws == pytest.approx(4 * T * 2 * math.sqrt(D * F) / (8 * 1e11))


# Claim: "more chips buy latency at a price": on a GB200 rack with switch all-reduces, the fastest
# chip count costs at least as much per token as the fewest chips that hold the model.
@each("model", MODELS, ids=lambda m: m.name)
def test_fastest_is_not_cheapest(model):
    gb = chips.get("GB200")
    S = _ctx(model, 4096)
    for batch in (1, 8, 64, 256):
        runs = [sharded_decode(model, gb, batch, S, n, ALPHA_NVLS, "switch")
                for n in (1, 2, 4, 8, 16, 32, 64)]
        fit = [r for r in runs if r.fits]
        if not fit:
            continue
        fastest = min(fit, key=lambda r: r.time)
        assert fastest.chip_seconds_per_token >= fit[0].chip_seconds_per_token * (1 - 1e-9), (
            model.name, batch)


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    # tp_comm_per_step(...) and ring_optimum(...) against llmmath.parallel over every catalogue
    # model (tensor-parallel all-reduces do not depend on routing), rings and switches, 2-64 chips.
    from llmmath.parallel import ring_optimal_chips, tensor_parallel_comm_time
    from llmmath.roofline import decode_step
    h100 = chips.get("H100-SXM")
    for m in models.all_models():
        n_ar = 1 if m.parallel_block else 2
        for n in (1, 2, 4, 8, 64):
            for batch in (1, 8, 256):
                for ring in (True, False):
                    lib = tensor_parallel_comm_time(m, batch, n, 450e9, hop_latency=2.41e-6,
                                                    topology="ring" if ring else "switch")
                    got = ns["tp_comm_per_step"](m.n_layers, n_ar, n, batch, m.d_model, 2, 450e9,
                                                 2.41e-6, ring)
                    assert got == pytest.approx(lib, rel=1e-12), (m.name, n, batch, ring)
        for batch in (1, 8, 256):
            t1 = decode_step(m, h100, batch, 1024).time
            assert ns["ring_optimum"](t1, m.n_layers, n_ar, 2.41e-6) == pytest.approx(
                ring_optimal_chips(m, h100, batch, 1024, 2.41e-6), rel=1e-12), (m.name, batch)


# ----- issue 31: the printed numbers, by hand from typed constants, against the glued text -------
# Typed constants: Llama 3 70B's config.json (80 layers, D 8192, 8 KV heads of 128; 70,553,706,496
# parameters, of which the 128,256 x 8192 = 1,050,673,152 input embedding rows are not read in a
# decode step but looked up: 69,503,033,344 read, plus the batch's rows); H100 SXM datasheet
# (3.35 TB/s HBM, 450 GB/s NVLink one direction); GB200 (8 TB/s, 900 GB/s, 186 GB); TPU v4
# (270 GB/s ICI per chip in Pope et al.'s model, 275 TFLOP/s bf16); PaLM 540B (118 layers,
# D 18,432, F 73,728 = 4D, 48 query heads of 256, one KV head, a SwiGLU MLP).

from pathlib import Path  # noqa: E402

NOTEBOOK = Path(__file__).resolve().parents[1] / "book" / "partitioning.ipynb"
_UNITS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "kB": 1e3, "MB": 1e6, "k": 1e3,
          "%": 1e-2, "x": 1.0, "×": 1.0, "": 1.0}


def _glued(name):
    return glued(NOTEBOOK, name)


def _number(name):
    """A glued number in SI units, and the relative error its printed digits allow (half a unit
    of the last digit printed)."""
    return glued_number(NOTEBOOK, name, _UNITS)


def _agrees(name, value):
    got, tol = _number(name)
    assert got == pytest.approx(value, rel=tol + 1e-9), (name, _glued(name), value)


ALPHA_RING = 33.7e-6 / 14          # nccl-tests issue 123: 33.7 us for 14 steps
L70_READ = 69_503_033_344          # parameters a decode step reads (embedding looked up)
L70_KV_TOKEN = 80 * 2 * 8 * 128 * 2   # 327,680 B a token in bf16
Q8 = 8 * 8192 * 2                  # one all-reduce at batch 8: 131,072 B


def _l70_step(n, hbm_bw, replicas=1.0):
    """Chapter 3-5's memory-bound decode step: weights read and the cache, over n chips."""
    return (L70_READ * 2 + 8 * 4096 * L70_KV_TOKEN * replicas) / (n * hbm_bw)


def test_worked_example_sums_by_hand():
    # eq. 9.2: t_tp = L n_ar [sigma t_lat + phi B D b_a / W] = 160 (14 x 2.407 us + 1.75 x
    # 131,072 / 450e9) = 5.4736 ms; the cache is head-sharded (8 KV heads on 8 GPUs), so
    # kv_comm = 0 and the step is bound + all-reduces, 5.587 + 5.474 = 11.06 ms (not 13.8)
    tp = 160 * (14 * ALPHA_RING + 1.75 * Q8 / 450e9)
    step = _l70_step(8, 3.35e12)
    _agrees("r8_tp", tp)
    _agrees("r8_step", step)
    assert _glued("r8_kv") == "0 s" and _glued("r8_shard") == "head"
    _agrees("r8_time", step + tp)
    _agrees("r8_over", max(step, tp))        # everything overlapped: the larger of the two
    _agrees("tp_share", tp / (step + tp))    # 49%
    # the sequential latency floor, L n_ar sigma t_lat: ring 160 x 14 x 2.407 us, NVLS 160 x 2 x
    # 3 us
    _agrees("tp_lat_ring", 160 * 14 * ALPHA_RING)
    _agrees("tp_lat_nvls", 160 * 2 * 3e-6)
    # n = 4: 160 (6 steps + 1.5 x 131,072 / 450e9) on top of the step over 4 GPUs: 13.56 ms
    _agrees("r4_time", _l70_step(4, 3.35e12) + 160 * (6 * ALPHA_RING + 1.5 * Q8 / 450e9))
    # NVLink SHARP, two steps of 3 us: 5.587 + 160 (6 us + 0.51 us) = 6.63 ms (not 7.11)
    _agrees("nvls8_time", step + 160 * (6e-6 + 1.75 * Q8 / 450e9))
    # one-shot: one step, seven buffers: 160 (3 us + 7 x 131,072 / 450e9) = 0.806 ms
    _agrees("one8_tp", 160 * (3e-6 + 7 * Q8 / 450e9))
    # what batch sharding would add through the switch: 160 all-to-alls of 8 x 64 x 128 x 2 / 8
    # = 16,384 B a chip, one step of 2.407 us and 7/8 of the bytes each
    _agrees("r8_batch_kv", 160 * (ALPHA_RING + 7 / 8 * 16_384 / 450e9))
    # every configuration of the example fits: 17.6 GB (8 GPUs) or 35.3 GB (4) of bf16 weights
    # and at most 1.3 GB of cache a GPU, of 80 GB
    h100 = chips.get("H100-SXM")
    for n in (4, 8):
        assert bool(sharded_decode(models.get("Llama-3-70B"), h100, 8, 4096, n, ALPHA_RING,
                                   "switch", algorithm="ring").fits)


def test_gb200_rack_by_hand():
    # GB200 (8 TB/s, 900 GB/s NVLink one direction, 186 GB: the catalogue's datasheet figures)
    gb = chips.get("GB200")
    assert (gb.hbm_bandwidth, gb.scale_up_bandwidth, gb.hbm_capacity) == (8e12, 900e9, 186e9)
    one = _l70_step(1, 8e12)                                   # 18.72 ms on one GPU
    # 64 GPUs, head-sharded: 8 KV heads read 64/8 = 8 copies (batch sharding of 8 sequences on
    # 64 GPUs would too); 160 two-shot all-reduces of 2 x 3 us + 2 x 63/64 x 131,072 / 900e9
    tp = 160 * (6e-6 + 2 * 63 / 64 * Q8 / 900e9)
    best = _l70_step(64, 8e12, replicas=8) + tp                # 1.445 ms (not 1.93)
    _agrees("gb_t_first", one)
    _agrees("gb_t_best", best)
    _agrees("gb_speed_ratio", one / best)                      # 12.9x (not 9.7x)
    _agrees("gb_cost_ratio", 64 * best / one)                  # 4.9x (not 6.6x)
    _agrees("gb_floor", 160 * 2 * 3e-6)                        # L n_ar sigma t_lat = 960 us
    _agrees("gb_tp_best", tp)
    assert _glued("gb_shard") == "head"
    # both ends fit: 141 GB of weights and 10.7 GB of cache on one 186 GB GPU; 1/64 of them
    # (8 copies of the cache) on each of 64
    l70 = models.get("Llama-3-70B")
    assert bool(sharded_decode(l70, gb, 8, 4096, 1).fits)
    assert bool(sharded_decode(l70, gb, 8, 4096, 64, 3e-6).fits)


def test_palm_layouts_by_hand():
    # M8: batch-sharded KV on the 4 x 4 x 4 torus: 2 all-to-alls a layer of 512 x 48 x 256 x 2
    # / 64 = 196,608 B a chip at the torus factor 1 + 1 + 1 = 3 (each ring of 4: 4/4):
    # 118 x 2 x 3 x 196,608 / 270e9 = 515.5 us (the switch factor 63/64 gave 169 us)
    _agrees("palm_kvcomm_batch", 118 * 2 * 3 * 196_608 / 270e9)
    # batch sharding fits (16.9 GB of bf16 weights and 1.98 GB of cache a chip of 34.4 GB);
    # head sharding's 64 copies (127 GB a chip) do not, as the chapter says
    palm, tpu = models.get("PaLM-540B"), chips.get("TPU v4")
    assert bool(sharded_decode(palm, tpu, 512, 2048, 64, topology="torus", kv_shard="batch").fits)
    assert not bool(sharded_decode(palm, tpu, 512, 2048, 64, kv_shard="head").fits)
    # W3: PaLM's SwiGLU has three D x F matrices; gathering them over all 64 chips for a
    # 512 x 2048-token prefill: 3 x 18,432 x 73,728 x 2 / 270e9 + 2 x 2^20 x 18,432 x 2 /
    # (64 x 270e9) = 34.67 ms (24.6 ms with Pope et al.'s two)
    act = 2 * 2**20 * 18_432 * 2 / (64 * 270e9)
    _agrees("wg_big", 3 * 18_432 * 73_728 * 2 / 270e9 + act)
    _agrees("wg_big_2", 2 * 18_432 * 73_728 * 2 / 270e9 + act)
    # the crossover n_mats F / (8/sqrt(n) - 2/n) at n = 64: 3 x 73,728 / (1 - 1/32) = 228,319
    _agrees("cross_tokens", 3 * 73_728 / (1 - 1 / 32))
    _agrees("cross_tokens_2", 2 * 73_728 / (1 - 1 / 32))
    _agrees("ex6_t", 3 * 73_728 / (1 - 1 / 32))


def test_pope_mfu_within_the_printed_points():
    # Tables 2 and 3: MFU = 2 N tokens / (n x 275e12 x t), N the catalogue's unpadded counts
    # (540,356,474,880 and 62,495,662,080); every row within the printed points of the paper's
    n540, n62 = 540_356_474_880, 62_495_662_080
    rows = [(n540, 64, 1 * 2048, 0.29, 0.43), (n540, 64, 64 * 64, 1.82, 0.14),
            (n540, 64, 512 * 2048, 85.2, 0.76), (n540, 64, 512 * 64, 6.0, 0.33),
            (n62, 16, 1 * 2048, 0.16, 0.36), (n62, 16, 32 * 64, 0.73, 0.08),
            (n62, 32, 512 * 2048, 20.2, 0.73), (n62, 8, 512 * 64, 5.1, 0.37)]
    worst = max(abs(2 * n_p * tok / (n * 275e12 * t) - paper) for n_p, n, tok, t, paper in rows)
    assert float(_glued("mfu_err")) / 100 == pytest.approx(worst, abs=0.00005)   # 0.73 points
    assert worst < 0.0075


# Claim: "shard by head while n <= n_kv" is what kv_shard="auto" does, and "auto" is never slower
# than either layout (every catalogue model, on H100s and a GB200 rack)
@each("model", MODELS, ids=lambda m: m.name)
def test_auto_kv_layout_is_the_rule(model):
    groups = 1 if model.kv_lora_rank is not None else model.n_kv_heads
    S = _ctx(model, 4096)
    for chip in (chips.get("H100-SXM"), chips.get("GB200")):
        for n in (1, 2, 4, 8, 16, 64):
            if n > (chip.scale_up_domain or 8):
                continue
            for batch in (1, 8, 64, 256):
                auto = sharded_decode(model, chip, batch, S, n, ALPHA_NVLS, "switch")
                head = sharded_decode(model, chip, batch, S, n, ALPHA_NVLS, "switch",
                                      kv_shard="head")
                by_batch = sharded_decode(model, chip, batch, S, n, ALPHA_NVLS, "switch",
                                          kv_shard="batch")
                if n <= groups:
                    assert auto.kv_shard == "head" and auto.kv_comm == 0, (model.name, n, batch)
                fitting = [r.time for r in (head, by_batch) if r.fits]
                if fitting:
                    assert auto.fits and auto.time == min(fitting), (model.name, n, batch)


# Claim: "one-shot beats two-shot while t_lat > (n-1)(1-2/n) Q/W: below 257 kB for 8 GPUs at 3 us
# a step; vLLM switches at 256 KiB on 8 GPUs, within a few percent of that"
def test_one_shot_crossover_and_vllm():
    from llmmath.collectives import VLLM_ONE_SHOT_BYTES

    knee = 3e-6 * 450e9 / (7 * (1 - 2 / 8))          # 257,143 B
    _agrees("oneshot_knee", knee)
    assert VLLM_ONE_SHOT_BYTES == 256 * 1024          # csrc/custom_all_reduce.cuh: bytes < 256 KiB
    assert abs(knee / VLLM_ONE_SHOT_BYTES - 1) < 0.03
    for q, one_shot_wins in ((0.9 * knee, True), (1.1 * knee, False)):
        one = collective_time("all-reduce", q, 8, 450e9, 3e-6, "switch", algorithm="one-shot")
        two = collective_time("all-reduce", q, 8, 450e9, 3e-6, "switch")
        assert (one < two) == one_shot_wins

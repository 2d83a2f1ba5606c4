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
from claims import each, from_scratch

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

"""Each chapter's from-scratch cell (tag ``from-scratch``) agrees with the library over the
catalogue.

CHAPTER_STANDARD item 9: one visible cell of at most 15 lines of plain Python (no ``llmmath``)
computes the chapter's core quantity. This file finds the cell by its tag, runs it alone in a fresh
namespace (so it cannot lean on hidden cells), and hands the namespace to the chapter's check below.

To add a chapter: tag its cell ``from-scratch`` and register a check with ``@check("NN_slug")``;
the check receives the names the cell defined and asserts agreement with the library over every
catalogue entry the cell claims to cover. A tagged cell with no check, or a check with no cell,
fails ``test_every_cell_has_a_check``.
"""

import contextlib
import io
import json
from pathlib import Path

import pytest

from llmmath import chips, models
from llmmath.roofline import arithmetic_intensity, attainable_flops
from llmmath.tradeoffs import recompute_crossover

BOOK = Path(__file__).resolve().parent.parent / "book"
TAG = "from-scratch"
MAX_LINES = 15
HIDING_TAGS = {"remove-input", "hide-input", "remove-cell", "hide-cell"}
CHECKS = {}


def check(stem):
    def register(fn):
        CHECKS[stem] = fn
        return fn
    return register


def tagged_cells(path):
    cells = json.loads(path.read_text())["cells"]
    return [c for c in cells if TAG in c.get("metadata", {}).get("tags", [])]


def chapters_with_cells():
    return sorted(p.stem for p in BOOK.glob("*.ipynb") if tagged_cells(p))


def run_cell(stem):
    (cell,) = tagged_cells(BOOK / f"{stem}.ipynb")
    namespace = {"__name__": f"from_scratch_{stem}"}
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile("".join(cell["source"]), f"{stem}:from-scratch", "exec"), namespace)
    return cell, namespace


def test_every_cell_has_a_check():
    assert set(chapters_with_cells()) == set(CHECKS), (
        "a from-scratch cell without a check here, or a check without its cell")


# ----- the checks, one per chapter ----------------------------------------------------------

@check("01_hardware")
def _ch1(ns):
    # matmul_time(B, d_in, d_out, peak_flops, bandwidth, bytes_per_value) against the library's
    # roofline, for every chip and dtype of the catalogue, small and large batches, two shapes.
    matmul_time = ns["matmul_time"]
    width = {"bf16": 2, "fp8": 1, "int8": 1, "fp4": 0.5}
    for chip in chips.all_chips():
        for dtype, peak in chip.flops.items():
            b = width[dtype]
            for batch in (1, 16, 300, 4096):
                for d_in, d_out in ((8192, 8192), (4096, 14336)):
                    i = arithmetic_intensity(batch, d_in, d_out, bytes_per_element=b)
                    lib = 2 * batch * d_in * d_out / attainable_flops(chip, i, dtype)
                    got = matmul_time(batch, d_in, d_out, peak, chip.hbm_bandwidth, b)
                    assert got == pytest.approx(lib, rel=1e-9), (chip.name, dtype, batch)
            assert peak / chip.hbm_bandwidth == pytest.approx(chip.ops_per_byte(dtype), rel=1e-12)


@check("02_counting")
def _ch2(ns):
    # dense_params(L, D, F, V, n_q, n_kv, d_h, gated, tied) leaves out norms and biases, which
    # are under 0.01% of every dense model in the catalogue: hold it to 0.05% of total_params.
    dense_params = ns["dense_params"]
    dense = [m for m in models.all_models() if not m.is_moe and m.kv_lora_rank is None]
    assert len(dense) >= 5
    for m in dense:
        got = dense_params(m.n_layers, m.d_model, m.d_ff, m.vocab_size, m.n_heads, m.n_kv_heads,
                           m.head_dim, gated=m.gated_mlp, tied=m.tied_embeddings)
        assert got == pytest.approx(m.total_params, rel=5e-4), m.name
        assert got <= m.total_params, m.name  # it only leaves things out


DENSE_GQA = [m for m in models.all_models() if not m.is_moe and m.kv_lora_rank is None
             and not m.n_sliding_layers and m.sparse_attention_topk is None]
BF16_CHIPS = [c for c in chips.all_chips() if "bf16" in c.flops]


def _config(m):
    return dict(L=m.n_layers, D=m.d_model, F=m.d_ff, V=m.vocab_size, n_q=m.n_heads,
                n_kv=m.n_kv_heads, d_h=m.head_dim, gated=m.gated_mlp)


@check("03_decode_roofline")
def _ch3(ns):
    # the whole-step bound with attention FLOPs, against decode_step for every dense GQA/MHA model
    # on every bf16 chip; norms, biases and the B gathered embedding rows are left out by hand,
    # so hold it to 1% (they are under 0.5% of every such model's weights)
    from llmmath.roofline import decode_step
    fn = ns["decode_step_time"]
    assert len(DENSE_GQA) >= 5
    for m in DENSE_GQA:
        for c in BF16_CHIPS:
            for B, S in ((1, 0), (64, min(4096, m.max_context)), (1024, 512)):
                lib = decode_step(m, c, B, S, n_chips=8).time
                got = fn(B, S, 8, peak=c.peak("bf16"), bw=c.hbm_bandwidth, **_config(m))
                assert got == pytest.approx(lib, rel=0.01), (m.name, c.name, B, S)


@check("04_batching_cost")
def _ch4(ns):
    from llmmath.cost import cost_per_million_tokens
    from llmmath.roofline import critical_batch, decode_step
    for m in DENSE_GQA:
        c = chips.get("H100-SXM")
        s = decode_step(m, c, 64, 1024, n_chips=8)
        assert ns["cost_per_million"](s.time, 64, 8, 3.0) == pytest.approx(
            cost_per_million_tokens(s, 3.0), rel=1e-9), m.name
    # dense: the closed form within 2% (the library reads N_read, not N_tot); MoE within 15%
    for m in models.all_models():
        for c in BF16_CHIPS:
            got = ns["weights_only_critical_batch"](m.total_params, m.active_params, c.peak("bf16"),
                                                    c.hbm_bandwidth)
            lib = critical_batch(m, c, context=0, attention_flops=False)
            assert got == pytest.approx(lib, rel=0.15 if m.is_moe else 0.02), (m.name, c.name)


@check("05_kv_cache")
def _ch5(ns):
    # exact (same physics, no windows): the library's critical context with attention FLOPs
    from llmmath.roofline import critical_context
    for m in DENSE_GQA:
        for c in BF16_CHIPS:
            got = ns["critical_context_gqa"](m.matmul_params_active, m.n_layers, m.n_heads,
                                             m.n_kv_heads, m.head_dim, c.peak("bf16"),
                                             c.hbm_bandwidth)
            assert got == pytest.approx(critical_context(m, c), rel=1e-9), (m.name, c.name)


@check("06_prefill_prices")
def _ch6(ns):
    from llmmath.roofline import prefill_step
    for m in DENSE_GQA:
        for P in sorted({512, min(4096, m.max_context), min(8192, m.max_context)}):
            lib = prefill_step(m, chips.get("H100-SXM"), 1, P, n_chips=8).compute_time
            got = ns["prefill_compute_time"](P, m.matmul_params_active, m.n_layers, m.n_heads,
                                             m.head_dim, chips.get("H100-SXM").peak("bf16"),
                                             n_chips=8)
            assert got == pytest.approx(lib, rel=1e-9), (m.name, P)



@check("07_moe_rack")
def _ch7(ns):
    # moe_bounds(n_dom, M, C, W, $/h, $/Mtok, sparsity) against llmmath.moe for every chip with a
    # scale-up domain, every dtype it lists, priced chips for the active bound, every MoE sparsity.
    from llmmath import moe
    widths = {"bf16": 2, "fp8": 1, "int8": 1, "fp4": 0.5}
    sparsities = sorted({m.sparsity for m in models.all_models() if m.is_moe})
    checked = 0
    for c in chips.all_chips():
        if not c.scale_up_domain:
            continue
        for dtype, peak in c.flops.items():
            b = widths[dtype]
            for s in sparsities:
                n_tot, n_act, b_star = ns["moe_bounds"](c.scale_up_domain, c.hbm_capacity, peak,
                                                        c.hbm_bandwidth, c.price_per_hour or 1.0,
                                                        0.10, s, b_w=b, kv_share=0.3, eff=0.6)
                assert n_tot == pytest.approx(moe.max_total_params(c, weight_bytes=b,
                                                                   kv_fraction=0.3),
                                              rel=1e-12), (c.name, dtype)
                assert n_act == pytest.approx(moe.max_active_params(
                    c, 0.10, dtype=dtype, compute_efficiency=0.6,
                    price_per_chip_hour=c.price_per_hour or 1.0),
                    rel=1e-12), (c.name, dtype)
                assert b_star == pytest.approx(moe.critical_batch_for_sparsity(
                    c, s, weight_bytes=b, dtype=dtype), rel=1e-12), (c.name, dtype, s)
                checked += 1
    assert checked > 50

@check("08_pipelining")
def _ch8(ns):
    # pipeline_per_chip(n_tot, b_w, kv_per_seq, micro_batch, chips_per_stage, stages) and
    # bubble(stages, micro_batches) against llmmath.pipeline over every catalogue model
    # (dense and MoE; a sliding-window model's cache enters through kv_per_seq).
    from llmmath.pipeline import bubble_fraction, pipeline_memory
    for m in models.all_models():
        for S in sorted({1024, min(32768, m.max_context)}):
            for P in (1, 2, 4, 16):
                for b_w in (2, 1):
                    lib = pipeline_memory(m, 64, S, 8, P, weight_bytes=b_w).total
                    got = ns["pipeline_per_chip"](m.total_params, b_w, m.kv_cache_bytes(S), 64,
                                                  8, P)
                    assert got == pytest.approx(lib, rel=1e-12), (m.name, S, P, b_w)
    for P in (1, 2, 4, 16, 64):
        for mb in (1, 8, 64, 512):
            assert ns["bubble"](P, mb) == pytest.approx(bubble_fraction(P, mb), rel=1e-12)


@check("11_training_compute")
def _ch10(ns):
    # train_flops, train_days and dp_tokens_star against llmmath.training over every catalogue
    # model (dense and MoE) and every chip with a bf16 peak and a network bandwidth.
    from llmmath.training import dp_critical_tokens, training_flops, training_time
    for m in models.all_models():
        for D in (1e12, 15.6e12):
            for remat in (False, True):
                assert ns["train_flops"](m.active_params, D, remat) == pytest.approx(
                    training_flops(m, D, recompute=remat), rel=1e-12), (m.name, D, remat)
        for c in chips.all_chips():
            if "bf16" not in c.flops:
                continue
            days = ns["train_days"](m.active_params, 15e12, 4096, c.peak("bf16"), 0.4)
            assert days == pytest.approx(training_time(m, 15e12, c, 4096, 0.4) / 86400, rel=1e-12)
            for net in ("scale_up", "scale_out"):
                bw = getattr(c, f"{net}_bandwidth")
                if not bw:
                    continue
                for n in (8, 1024):
                    got = ns["dp_tokens_star"](m.total_params, m.active_params, c.peak("bf16"),
                                               bw, n)
                    assert got == pytest.approx(dp_critical_tokens(m, c, n, net), rel=1e-12), (
                        m.name, c.name, net, n)


@check("09_partitioning")
def _ch9(ns):
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


@check("12_overtraining")
def _ch11(ns):
    # served, equal_spend and overtraining against llmmath.lifetime over every catalogue model
    # (active parameters, dense and MoE), both decode utilisations of the episode and RL 2..6.
    from llmmath.lifetime import equal_spend_overtraining, equal_spend_tokens, served_tokens
    from llmmath.training import overtraining_factor
    for rate, days in ((5e6, 30), (50e6, 60), (500e6, 365)):
        d = ns["served"](rate, days)
        assert d == pytest.approx(served_tokens(rate, days * 86400), rel=1e-12)
        for u in (1 / 5, 1 / 3, 1.0):
            for r in (2, 3, 6):
                d_pre, d_rl = ns["equal_spend"](d, u, r)
                e = equal_spend_tokens(d, u, r)
                assert (d_pre, d_rl) == pytest.approx((e.pretrain_tokens, e.rl_tokens), rel=1e-12)
            for m in models.all_models():
                d_pre, _ = ns["equal_spend"](d, u)
                got = ns["overtraining"](m.active_params, d_pre)
                assert got == pytest.approx(equal_spend_overtraining(m, d, u), rel=1e-12), m.name
                assert got == pytest.approx(overtraining_factor(m, d_pre), rel=1e-12), m.name


@check("13_memory_for_compute")
def _ch12(ns):
    # step_store, step_recompute and free_context against llmmath (attention FLOPs off, as the cell
    # leaves them out) over every dense catalogue model without sliding windows, on H100 and B200,
    # at batches 1, 8 and 64.
    from llmmath.roofline import decode_step, prefill_step
    for m in models.all_models():
        if m.is_moe or m.n_sliding_layers:
            continue
        b_kv = m.kv_bytes_per_token(2)
        for c in (chips.get("H100-SXM"), chips.get("B200")):
            peak, bw = c.peak("bf16"), c.hbm_bandwidth
            for batch in (1, 8, 64):
                for ctx in (0, 100, 1000, min(4000, m.max_context - 1)):
                    n_read = m.weight_params_read(batch)
                    got = ns["step_store"](m.matmul_params_active, n_read, 2, b_kv, batch, ctx,
                                           peak, bw)
                    lib = decode_step(m, c, batch, ctx, attention_flops=False).time
                    assert got == pytest.approx(lib, rel=1e-9), (m.name, c.name, batch, ctx)
                    n_read = m.weight_params_read(batch * (ctx + 1))
                    got = ns["step_recompute"](m.matmul_params_active, n_read, 2, b_kv, batch,
                                               ctx, peak, bw)
                    lib = prefill_step(m, c, batch, ctx + 1, attention_flops=False).time
                    assert got == pytest.approx(lib, rel=1e-9), (m.name, c.name, batch, ctx)
                # the library's crossover counts attention's FLOPs too: a few per cent at most
                free = ns["free_context"](m.matmul_params_active, m.weight_params_read(batch), 2,
                                          b_kv, batch, peak, bw)
                lib = recompute_crossover(m, c, batch=batch)
                if free > 1:
                    assert free == pytest.approx(lib, rel=0.05), (m.name, c.name, batch)
                else:
                    assert lib < 1.5, (m.name, c.name, batch)


@check("10_bound_to_estimate")
def _ch10(ns):
    # estimate(t_mm, t_w, t_attn, t_kv, tokens, layers, n, d_model, link_bw, ar_per_layer):
    # (bound, estimate) of a dense decode step from the per-operation bound's four times, against
    # estimate_step for every dense MHA/GQA model of the catalogue on every NVIDIA chip (a switch:
    # the cell's 2-step all-reduce) in bf16, one chip and eight, small and large batches. The
    # cell writes the cited fractions as the sources print them (740/989.4, 3,000/3,350,
    # 2,250/3,350); the library derives the last from DeepGEMM's six shapes: hold to 1e-6.
    from llmmath.estimate import LINK_EFFICIENCY, estimate_step
    from llmmath.roofline import decode_step
    fn = ns["estimate"]
    nvidia = [c for c in BF16_CHIPS if c.vendor == "NVIDIA" and c.scale_up_bandwidth]
    assert len(nvidia) >= 3
    for m in DENSE_GQA:
        for c in nvidia:
            for n in (1, 8):
                for B, S in ((1, 1024), (8, 4096), (200, 2048)):
                    S = min(S, m.max_context - 1)
                    s = decode_step(m, c, B, S, n_chips=n, overlap="per-op")
                    lib = estimate_step(m, c, B, S, n_chips=n)
                    bound, est = fn(s.matmul_time, s.weight_time, s.attention_time, s.kv_time,
                                    B, m.n_layers, n, m.d_model,
                                    c.scale_up_bandwidth * LINK_EFFICIENCY,
                                    ar_per_layer=1 if m.parallel_block else 2)
                    assert bound == pytest.approx(lib.bound.time, rel=1e-12), (m.name, c.name)
                    assert est == pytest.approx(lib.time, rel=1e-6), (m.name, c.name, n, B)


# ----- the tests (after the checks, so that parametrize sees every registered chapter) -----

@pytest.mark.parametrize("stem", sorted(CHECKS))
def test_cell_is_short_plain_and_visible(stem):
    cells = tagged_cells(BOOK / f"{stem}.ipynb")
    assert len(cells) == 1, f"{stem}: exactly one cell is tagged {TAG!r}"
    cell = cells[0]
    source = "".join(cell["source"])
    assert cell["cell_type"] == "code"
    assert len(source.strip().splitlines()) <= MAX_LINES
    assert "llmmath" not in source and "import" not in source, "plain Python: no imports"
    assert not HIDING_TAGS & set(cell["metadata"].get("tags", [])), "the reader must see it"


@pytest.mark.whole_catalogue
@pytest.mark.parametrize("stem", sorted(CHECKS))
def test_from_scratch_agrees_with_the_library(stem):
    _, namespace = run_cell(stem)
    CHECKS[stem](namespace)

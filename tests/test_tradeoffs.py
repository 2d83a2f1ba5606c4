"""llmmath.tradeoffs: store or recompute, with expected values computed by hand.

Hand values come from the published configurations (Llama 3 70B: L = 80, D = 8,192, F = 28,672,
64 query and 8 KV heads of 128, V = 128,256, untied; Llama 3.1 405B: L = 126, D = 16,384, 128
query heads of 128) and the H100's datasheet (989.4 TFLOP/s bf16 dense, 3.35 TB/s), worked
below in the comments; Korthikanti et al. 2022 for the activation bytes (2 D per layer with full
recomputation); Gomez et al. 2017 and Kitaev et al. 2020 for reversible layers.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from llmmath import chips, memory, models
from llmmath import tradeoffs as tr
from llmmath.units import hour, year

H100 = chips.get("H100-SXM")
L70, L405 = models.get("Llama-3-70B"), models.get("Llama-3.1-405B")
R_H100 = 989.4e12 / 3.35e12  # 295.34 FLOP/byte
# Llama 3 70B, counted by hand: per layer attention 2 x 8192^2 + 2 x 8192 x 1024 = 150,994,944,
# MLP 3 x 8192 x 28672 = 704,643,072; x 80 layers = 68,451,041,280; LM head 128,256 x 8,192.
N_MM_70 = 80 * (2 * 8192 * 8192 + 2 * 8192 * 1024 + 3 * 8192 * 28672) + 128256 * 8192
B_KV_70 = 2 * 80 * 8 * 128 * 2  # 327,680 bytes per token in bf16
ATT_PAIR_70 = 80 * 4 * 64 * 128  # QK^T and AV FLOPs per (query, key) pair, all layers


def test_hand_counts_match_the_model():
    assert N_MM_70 == 69_501_714_432 == L70.matmul_params_active
    assert B_KV_70 == L70.kv_bytes_per_token(2)


def test_recompute_intensity_by_hand():
    # 424,204.8
    assert tr.recompute_intensity(L70) == pytest.approx(2 * N_MM_70 / B_KV_70, rel=1e-12)
    assert tr.recompute_intensity(L70) == pytest.approx(424_204.8, rel=1e-9)
    # an fp8 cache halves the bytes, so each byte costs twice the FLOPs to rebuild
    assert tr.recompute_intensity(L70, kv_bytes=1) == pytest.approx(848_409.6, rel=1e-9)


def test_store_or_recompute_flops_and_bytes_by_hand():
    S = 1000
    r = tr.store_or_recompute(L70, H100, 1, S, n_chips=8)
    # recompute: a causal prefill of S + 1 tokens; store: one token attending to S cached ones
    pre = 2 * N_MM_70 * (S + 1) + (S + 1) * (S + 2) / 2 * ATT_PAIR_70
    dec = 2 * N_MM_70 + S * ATT_PAIR_70
    assert r.extra_flops == pytest.approx(pre - dec, rel=1e-9)  # 1.4032e14 FLOP
    assert r.saved_bytes == pytest.approx(S * B_KV_70, rel=1e-12)
    # at 8 H100s the recompute is compute-bound: pre / (8 C); the cached step reads the weights
    assert r.recompute.time == pytest.approx(pre / (8 * 989.4e12), rel=1e-9)
    assert r.time_ratio == pytest.approx(r.recompute.time / r.store.time, rel=1e-12)
    assert r.time_ratio > 3  # 3.4x at 1,000 tokens


def test_store_or_recompute_broadcasts_and_grows_with_context():
    S = np.array([10.0, 100.0, 1000.0, 8000.0])
    r = tr.store_or_recompute(L70, H100, 64, S, n_chips=8)
    assert np.all(np.diff(r.time_ratio) > 0)
    assert r.time_ratio.shape == (4,)


def test_recompute_crossover_by_hand():
    # ignoring attention: 2 B N_mm (S+1) / C = (N_read b_w + B S b_kv) / W, N_read = weights
    # the step reads (the matmul weights, norms and one embedding row), so
    # S = (R N_read / (B N_mm) - 1) / (1 - R b_kv / (2 N_mm)); attention adds ~0.3% FLOPs
    n_read = L70.weight_params_read(1)
    for batch, expect in ((1, 294.5), (64, 3.615)):
        hand = (R_H100 * n_read / (batch * N_MM_70) - 1) / (1 - R_H100 * B_KV_70 / (2 * N_MM_70))
        assert hand == pytest.approx(expect, rel=2e-3)
        assert tr.recompute_crossover(L70, H100, batch=batch, n_chips=8) == pytest.approx(
            hand, rel=0.01)


def test_recompute_crossover_is_zero_when_the_step_is_compute_bound():
    assert tr.recompute_crossover(L70, H100, batch=512, n_chips=8) == 0.0


def test_checkpoint_price_by_hand():
    D, L, T, S = 16384, 126, 8192, 8192
    n = L405.active_params
    # attention forward per token: 4 n_q d_h FLOP per pair per layer, S(S+1)/2 pairs per sequence
    a = L * 4 * 128 * 128 * (S * (S + 1) / 2) / S * T
    base = 6 * n * T + 3 * a
    full = tr.checkpoint_price(L405, T, S, "full")
    assert full.activation_bytes == pytest.approx(2 * D * L * T, rel=1e-12)  # 33.8 GB
    assert full.overhead == pytest.approx(1 / 3, rel=1e-12)  # (2N + a) / (6N + 3a), exactly a third
    assert full.flops == pytest.approx(8 * n * T + 4 * a, rel=1e-9)
    sel = tr.checkpoint_price(L405, T, S, "selective")
    assert sel.activation_bytes == pytest.approx(34 * D * L * T, rel=1e-12)
    assert sel.overhead == pytest.approx(a / base, rel=1e-9)  # about 1.3%
    assert 0.012 < sel.overhead < 0.015
    none = tr.checkpoint_price(L405, T, S, "none")
    assert none.overhead == 0.0
    assert none.activation_bytes == pytest.approx((34 * D + 5 * 128 * S) * L * T, rel=1e-12)
    rev = tr.checkpoint_price(L405, T, S, "reversible")
    assert rev.activation_bytes == pytest.approx(4 * D * T, rel=1e-12)  # 537 MB: two streams of D
    assert rev.overhead == pytest.approx(1 / 3, rel=1e-12)


def test_reversible_memory_does_not_grow_with_depth():
    shallow, deep = L405.replace(n_layers=8), L405.replace(n_layers=256)
    a = tr.checkpoint_price(shallow, 4096, 4096, "reversible").activation_bytes
    b = tr.checkpoint_price(deep, 4096, 4096, "reversible").activation_bytes
    assert a == b
    fa = tr.checkpoint_price(shallow, 4096, 4096, "full").activation_bytes
    fb = tr.checkpoint_price(deep, 4096, 4096, "full").activation_bytes
    assert fb / fa == pytest.approx(32, rel=1e-12)


def test_max_hold_time_by_hand():
    P = 8192
    flops = 2 * N_MM_70 * P + P * (P + 1) / 2 * ATT_PAIR_70  # the prefill, compute-bound on 8 H100s
    # chip-seconds x $3.00 per H100-hour
    usd_per_token = flops / (8 * 989.4e12) * 8 * 3.0 / 3600 / P
    dram = memory.MEMORY_TIERS["DRAM"]
    dram_per_byte_s = 325.99 / (5 * year / hour) / 3600 / 32e9  # $325.99 over 5 years, 32 GB
    t = tr.max_hold_time(L70, H100, dram, prompt=P, n_chips=8)
    assert t == pytest.approx(usd_per_token / (B_KV_70 * dram_per_byte_s), rel=1e-6)
    assert 1.5 * 3600 < t < 1.8 * 3600  # about 1.7 hours
    hbm = memory.MEMORY_TIERS["HBM"]  # an H100's 80 GB at $3.00 an hour
    t_hbm = tr.max_hold_time(L70, H100, hbm, prompt=P, n_chips=8)
    assert t_hbm == pytest.approx(usd_per_token / (B_KV_70 * 3.0 / 3600 / 80e9), rel=1e-6)  # ~37 s


def test_max_hold_time_is_zero_when_reading_back_costs_more():
    slow = memory.MemoryTier(name="slow", capacity=1e12, bandwidth=1.0, price_per_hour=1.0)
    assert tr.max_hold_time(L70, H100, slow, n_chips=8) == 0.0


# every numbered chapter of _toc.yml, in the book's order (read here without the library's reader)
CHAPTERS = re.findall(r"file: book/(\w+)", (Path(__file__).resolve().parents[1] / "_toc.yml")
                      .read_text().split("caption: Appendices")[0])


def test_summary_bounds_cover_the_book():
    rows = tr.summary_bounds(CHAPTERS)
    chapters = {r.chapter for r in rows}
    assert chapters == set(CHAPTERS)
    for r in rows:
        assert math.isfinite(r.value) and r.value > 0, r
        assert r.formula and r.example and r.shown
    by = {r.bound: r for r in rows}
    assert by["ridge point (FLOP per byte)"].value == pytest.approx(R_H100, rel=1e-12)
    # the episode's price-step reading: 1e11 / 2e5 / 300 = 1,667 bytes
    assert by["KV bytes read from a price step"].value == pytest.approx(1e11 / 2e5 / 300, rel=1e-12)
    assert by["pipeline bubble"].value == pytest.approx(3 / 19, rel=1e-12)
    # Meta reports 3.8e25 FLOP for Llama 3.1 405B (llama3_herd)
    assert by["training compute"].value == pytest.approx(3.8e25, rel=0.01)
    assert by["training state"].value == pytest.approx(16 * L405.total_params, rel=1e-12)
    assert by["full checkpointing's compute price"].value == pytest.approx(1 / 3, rel=1e-12)


@pytest.mark.parametrize("call, name, exc", [
    (lambda: tr.store_or_recompute(L70, H100, 1, 8192), "context", ValueError),
    (lambda: tr.store_or_recompute(L70, H100, -1, 100), "batch", ValueError),
    (lambda: tr.recompute_crossover(L70, H100, batch=[1, 2]), "batch", TypeError),
    (lambda: tr.checkpoint_price(L70, 1e3, 1024, "some"), "recompute", ValueError),
    (lambda: tr.checkpoint_price(L70, 1e3, 1e6), "sequence_length", ValueError),
    (lambda: tr.max_hold_time(L70, H100, memory.MEMORY_TIERS["DRAM"], prompt=0), "prompt",
     ValueError),
    (lambda: tr.recompute_intensity(L70, kv_bytes="2"), "kv_bytes", TypeError),
])
def test_bad_input_is_refused_by_name(call, name, exc):
    with pytest.raises(exc, match=name):
        call()


def test_summary_row_of_chapter_10_by_hand():
    # Llama 3 70B, 8 H100s, bf16, batch 1, context 4,096: the bound is about the weight read,
    # 70.55e9 x 2 B / (8 x 3.35e12 B/s) = 5.27 ms; weights stream at 0.6716 of the datasheet
    # (DeepGEMM's M = 64 median, 2,250 of 3,350 GB/s): 7.84 ms; 80 layers x 2 all-reduces x
    # 2 switch steps x 3 us = 0.96 ms; 80 layers x 9 kernels x 2.65 us = 1.91 ms. Sum 10.7 ms
    # (KV reads and the embedding rows, left out here, are under 2%).
    row = {r.chapter: r for r in tr.summary_bounds()}["bound_to_estimate"]
    assert row.bound == "a calibrated estimate (not a bound)"
    hand = 70.55e9 * 2 / (8 * 3.35e12) / (2250 / 3350) + 80 * 2 * 2 * 3e-6 + 80 * 9 * 2.65e-6
    assert row.value == pytest.approx(hand, rel=0.03)


# Every row of the book's summary table against a hand computation from the catalogue's cited
# figures (module docstring; GB200: 72 GPUs x 186 GB; H100 NVLink 450 GB/s a direction and
# 400 Gb/s = 50 GB/s scale-out; $3.00 an H100-hour; DDR5-5200 32 GB module at $325.99 over five
# years; Micron 9550 30.72 TB at 14 GB/s). The estimate row has its own test above.
N_70 = 70_553_706_496  # Llama 3 70B's published count
NORMS_70 = (2 * 80 + 1) * 8192  # two RMSNorms per layer and a final one
W_READ_70 = 2 * (N_MM_70 + NORMS_70)  # bf16 weights a decode step reads (no embedding table)
N_405 = 405_853_388_800  # Llama 3.1 405B's count
DRAM_PRICE = 325.99 / (5 * 365.25 * 24)  # $ an hour for the 32 GB module
PREFILL_FLOPS_70 = 2 * N_MM_70 + ATT_PAIR_70 * (8192 + 1) / 2  # per token of an 8k causal prompt
SUMMARY_BY_HAND = {
    "ridge point (FLOP per byte)": (R_H100, 1e-12),
    "HBM drain time": (80e9 / 3.35e12, 1e-12),  # 23.9 ms
    "forward FLOPs per token": (2 * N_MM_70, 1e-12),  # 139 GFLOP
    "KV bytes per token": (B_KV_70, 1e-12),
    # B = 64 sequences of 4,096 tokens: weights + 64 embedding rows + the KV cache, on 8 x 3.35 TB/s
    "decode step": ((W_READ_70 + 2 * 64 * 8192 + 64 * 4096 * B_KV_70) / (8 * 3.35e12), 1e-9),
    "minimum latency per token": (W_READ_70 / (8 * 3.35e12), 1e-5),  # 5.19 ms
    # DeepSeek-V3 in fp8 on an H100, every expert touched: B* = I* b_w/2 N_tot/N_mm =
    # 1,978.9/3.35 x 1/2 x 671.03/36.62 = 5,411; the exact solve (embedding rows a batch does not
    # read) is 5,404 (test_values_physics)
    "critical batch": (1978.9 / 3.35 / 2 * 671_026_419_200 / 36_624_736_768, 0.005),
    # 2 N_mm FLOPs at $3/h on 989.4 TFLOP/s, per million tokens: $0.117
    "cost floor per token": (2 * N_MM_70 * 3.0 / 3600 / 989.4e12 * 1e6, 1e-9),
    # S* = 2 N / (I* b_kv - attention FLOPs per context token): 1,476
    "critical context": (2 * N_MM_70 / (R_H100 * B_KV_70 - ATT_PAIR_70), 1e-9),
    "largest batch that fits": (math.floor((8 * 80e9 - 2 * N_70) / (8192 * B_KV_70)), 0),  # 185
    "KV bytes read from a price step": (2 * 1e11 / (600 * 2e5), 1e-12),  # 2 N_act / (I* S)
    "cache tier knee (hold vs read)": (30.72e12 / 14e9, 1e-12),  # 36.6 min
    # fp8: a byte each, half the HBM kept for the KV cache (kappa = 1/2): 6.7T
    "total parameters one scale-up domain holds": (72 * 186e9 * 0.5, 1e-12),
    "pipeline bubble": (3 / 19, 1e-12),
    "all-reduce (bandwidth term)": (2 * 7 / 8 * 1e9 / 450e9, 1e-12),
    "training compute": (6 * N_405 * 15.6e12, 1e-12),  # 3.80e25, Meta's 3.8e25
    "training state": (16 * N_405, 1e-12),
    # (n - n_dom)/n b_g/3 C/(n_dom W_out) for a dense model, b_g = 2 bytes, 1,024 chips in
    # 8-GPU nodes with a 50 GB/s NIC per GPU: 1,636 tokens (the NVLink phase, 7/8 x 2/3 x
    # 989.4e12 / 450e9 = 1,283, overlaps)
    "per-chip batch that hides the gradient sync":
        ((1024 - 8) / 1024 * 2 / 3 * 989.4e12 / (8 * 50e9), 1e-12),
    # Young: sqrt(2 delta M); delta = 16,384 GPUs x 4 GB / 2 TB/s = 32.8 s (Llama 3, Sec. 3.3.1),
    # M = 54 days / 419 unexpected interruptions = 11,135 s: 854 s, 14.2 min
    "checkpoint interval (Young)":
        (math.sqrt(2 * (16384 * 4e9 / 2e12) * (54 * 86400 / 419)), 1e-12),
    # D_pre = D_inf / (3 u): 50M tokens/s x 60 days = 2.592e14 served, u = 1/3
    "equalise pre-training, RL and inference compute": (50e6 * 60 * 86400, 1e-12),
    "FLOPs to rebuild a cached byte": (2 * N_MM_70 / B_KV_70, 1e-12),
    # B* / B - 1 at B = 1 (dense, bf16: B* = I*), less the KV and attention terms: about 294
    "context recomputed for free": (R_H100 - 1, 0.01),
    "full checkpointing's compute price": (1 / 3, 1e-12),
    # an 8k prompt's prefill chip-seconds per token at $3/h, over its KV bytes' DRAM rent a second
    "longest worthwhile hold of a prompt cache":
        (PREFILL_FLOPS_70 / 989.4e12 * 3.0 / (B_KV_70 * DRAM_PRICE / 32e9), 1e-6),  # 1.66 h
}


def _checked_in_its_claims(row):
    """A row that comes with a later chapter is checked by hand (value and printed text) in that
    chapter's claims file, which names the bound: nothing here lists it."""
    path = Path(__file__).resolve().parent / f"test_claims_{row.chapter}.py"
    return path.exists() and f'"{row.bound}"' in path.read_text(encoding="utf-8")


def test_every_summary_row_by_hand():
    rows = {r.bound: r for r in tr.summary_bounds()}
    assert set(SUMMARY_BY_HAND) <= set(rows)
    unchecked = [b for b, r in rows.items() if b not in SUMMARY_BY_HAND
                 and b != "a calibrated estimate (not a bound)"
                 and not _checked_in_its_claims(r)]
    assert not unchecked, f"summary rows no test checks by hand: {unchecked}"
    for bound, (hand, rel) in SUMMARY_BY_HAND.items():
        assert rows[bound].value == pytest.approx(hand, rel=rel, abs=0), bound


# ----- a printed formula gives its printed number (issue 31) -------------------------------------

FORMULA_TOLERANCE = 0.005  # half a per cent


def _formula_mismatches(rows):
    """Rows whose library value is not their printed formula's number: a row must declare
    ``by_formula`` and agree with it within half a per cent, unless it names what the library
    adds (``adds``), in which case they must differ and the table must print both numbers."""
    bad = []
    for r in rows:
        if math.isnan(r.by_formula):
            bad.append((r.bound, "declares no by_formula"))
            continue
        off = abs(r.value / r.by_formula - 1)
        if not r.adds and off > FORMULA_TOLERANCE:
            bad.append((r.bound, f"value {r.value:.6g} but the formula gives {r.by_formula:.6g}"))
        if r.adds and off <= FORMULA_TOLERANCE:
            bad.append((r.bound, f"names an added term ({r.adds}) but agrees with its formula"))
        if r.adds and not (r.shown in r.printed and r.shown_by_formula in r.printed
                           and r.adds in r.printed):
            bad.append((r.bound, f"prints {r.printed!r}, not both numbers and the term"))
    return bad


def test_every_summary_row_gives_its_formulas_number():
    rows = tr.summary_bounds(CHAPTERS)
    assert not _formula_mismatches(rows)
    assert all(not r.adds and r.printed == r.shown for r in rows)  # none needs a second number


@pytest.mark.parametrize("module, bound, formula, by_formula", [
    # the table as it was: t_min printed with N_tot while the library reads N_read (no input
    # embedding table): 5.27 ms by the formula, 5.19 ms by the library
    ("step", "minimum latency per token", r"N_\text{tot} b_w / (n W)",
     lambda lm: lm.model("Llama-3-70B").total_params * 2 / (8 * 3.35e12)),
    # S* printed as the episode's 2 N_act / (I* b_kv) while the library counts attention's FLOPs
    # per cached token: 1,458 against 1,476
    ("capacity", "critical context", r"S^* = \frac{2 N_\text{act}}{I^* b_\text{kv}}",
     lambda lm: 2 * lm.model("Llama-3-70B").active_params / (989.4e12 / 3.35e12 * 327_680)),
    # B* printed with the sparsity N_tot / N_act: 5,278 against the exact 5,404
    ("cost", "critical batch", r"B^* = I^* \frac{b_w}{2} \frac{N_\text{tot}}{N_\text{act}}",
     lambda lm: 1978.9 / 3.35 / 2 * (m := lm.model("DeepSeek-V3")).total_params
     / m.active_params),
])
def test_a_silent_term_is_caught(monkeypatch, module, bound, formula, by_formula):
    import dataclasses
    import importlib

    mod = importlib.import_module(f"llmmath.{module}")
    rows = list(mod.SUMMARY)
    i = next(i for i, r in enumerate(rows) if r.bound == bound)
    old = dataclasses.replace(rows[i], formula=formula, by_formula=by_formula)
    monkeypatch.setattr(mod, "SUMMARY", tuple(rows[:i] + [old] + rows[i + 1:]))
    assert [b for b, _ in _formula_mismatches(tr.summary_bounds())] == [bound]
    # naming the term makes the difference legitimate: the table then prints both numbers
    named = dataclasses.replace(old, adds="the term the formula leaves out")
    monkeypatch.setattr(mod, "SUMMARY", tuple(rows[:i] + [named] + rows[i + 1:]))
    assert not _formula_mismatches(tr.summary_bounds())
    row = {r.bound: r for r in tr.summary_bounds()}[bound]
    assert row.printed == (f"{row.shown} (the formula alone: {row.shown_by_formula}; the library "
                           "adds the term the formula leaves out)")


def test_a_row_without_its_formula_is_caught(monkeypatch):
    from llmmath import units
    from llmmath._summary import SummaryRow

    row = SummaryRow("a_new_chapter", "a new bound", "x", "a case", lambda lm: 2.5, str)
    monkeypatch.setattr(units, "SUMMARY", (row,), raising=False)
    assert _formula_mismatches(tr.summary_bounds()) == [("a new bound", "declares no by_formula")]


def test_summary_rows_read_in_chapter_order():
    # the table is printed as it comes: chapter 1 first, each chapter's rows together, in the
    # order the chapter's module declares them
    rows = tr.summary_bounds(CHAPTERS)
    chapters = [r.chapter for r in rows]
    assert chapters == sorted(chapters, key=CHAPTERS.index)
    assert [r.bound for r in rows][:2] == ["ridge point (FLOP per byte)", "HBM drain time"]


def test_the_book_reads_the_same_chapter_order(monkeypatch):
    from llmmath import book

    monkeypatch.chdir(Path(__file__).resolve().parents[1] / "book")  # where a notebook runs
    assert book.chapters() == CHAPTERS and len(CHAPTERS) >= 13


def test_a_modules_declared_row_joins_the_table(monkeypatch):
    from llmmath import units
    from llmmath._summary import SummaryRow

    row = SummaryRow("a_new_chapter", "a new bound", "x", "a case", lambda lm: 2.5, str)
    monkeypatch.setattr(units, "SUMMARY", (row,), raising=False)
    rows = tr.summary_bounds([*CHAPTERS, "a_new_chapter"])
    assert (rows[-1].bound, rows[-1].value, rows[-1].shown) == ("a new bound", 2.5, "2.5")
    with pytest.raises(ValueError, match="a_new_chapter"):  # a chapter the order leaves out
        tr.summary_bounds(CHAPTERS)


# How the table prints each row: (the unit's size in SI, the text after the number). Chosen for a
# reader (milliseconds for a step, minutes for a drive's drain, T for trillions of parameters).
SUMMARY_UNITS = {
    "ridge point (FLOP per byte)": (1, " FLOP/byte"), "HBM drain time": (1e-3, " ms"),
    "forward FLOPs per token": (1e9, " GFLOP"), "KV bytes per token": (1e3, " kB"),
    "decode step": (1e-3, " ms"), "minimum latency per token": (1e-3, " ms"),
    "critical batch": (1, " sequences"), "cost floor per token": (1, " per million tokens"),
    "critical context": (1, " tokens"), "largest batch that fits": (1, " sequences"),
    "KV bytes read from a price step": (1e3, " kB"),
    "cache tier knee (hold vs read)": (60, " min"),
    "total parameters one scale-up domain holds": (1e12, "T parameters"),
    "pipeline bubble": (1e-2, "%"), "all-reduce (bandwidth term)": (1e-3, " ms"),
    "a calibrated estimate (not a bound)": (1e-3, " ms"), "training compute": (1e24, " YFLOP"),
    "training state": (1e12, " TB"),
    "per-chip batch that hides the gradient sync": (1e3, "k tokens"),
    "equalise pre-training, RL and inference compute": (1e12, "T pre-training tokens"),
    "FLOPs to rebuild a cached byte": (1e3, "k FLOP/byte"),
    "context recomputed for free": (1, " tokens"),
    "full checkpointing's compute price": (1e-2, "% FLOPs"),
    "longest worthwhile hold of a prompt cache": (3600, " h"),
    "checkpoint interval (Young)": (60, " min"),
}


def test_summary_rows_print_their_number():
    # each row's printed text is its value in a reader's unit, rounded to the digits shown
    rows = tr.summary_bounds()
    assert set(SUMMARY_UNITS) <= {r.bound for r in rows}
    for r in rows:
        if r.bound not in SUMMARY_UNITS:
            assert _checked_in_its_claims(r), r.bound
            continue
        size, suffix = SUMMARY_UNITS[r.bound]
        m = re.fullmatch(r"[$+]?([0-9][0-9,]*(?:\.([0-9]+))?)(?:e([+-][0-9]+))?(.*)", r.shown)
        assert m and m.group(4) == suffix, (r.bound, r.shown)
        scale = 10.0 ** int(m.group(3) or 0)
        shown = float(m.group(1).replace(",", "")) * scale
        half_digit = 0.5 * 10.0 ** -len(m.group(2) or "") * scale
        assert abs(shown - r.value / size) <= half_digit * (1 + 1e-9), (r.bound, r.shown, r.value)
        assert r.shown.startswith("$") == (r.bound == "cost floor per token"), r.shown


# ----- each keyword reaches the bound it changes (issue 20's mutation run) ----------------------

def test_store_or_recompute_passes_precision_and_chips_on():
    # fp8 weights, fp8 cache and fp8 arithmetic on 8 H100s (1,978.9 TFLOP/s each, datasheet)
    S = 1000
    r = tr.store_or_recompute(L70, H100, 1, S, n_chips=8, weight_bytes=1, kv_bytes=1, dtype="fp8")
    # the matmuls at fp8's 1,978.9 TFLOP/s, attention (dequantised) at bf16's 989.4
    mm, attn = 2 * N_MM_70 * (S + 1), (S + 1) * (S + 2) / 2 * ATT_PAIR_70
    assert r.saved_bytes == pytest.approx(S * B_KV_70 / 2, rel=1e-12)
    assert r.recompute.time == pytest.approx(mm / (8 * 1978.9e12) + attn / (8 * 989.4e12),
                                             rel=1e-9)
    # the cached step reads a byte per weight and per cached element
    read = (N_MM_70 + (2 * 80 + 1) * 8192 + 8192) + S * B_KV_70 / 2
    assert r.store.time == pytest.approx(read / (8 * 3.35e12), rel=1e-6)


def test_store_or_recompute_at_no_context_is_one_token_either_way():
    # S = 0 is allowed: the recompute is a one-token prefill, the same pass as the cached step
    r = tr.store_or_recompute(L70, H100, 1, 0, n_chips=8)
    assert r.saved_bytes == 0.0
    # ...but for attention: the prefilled token attends to itself (one query-key pair), the
    # cached step at S = 0 to nothing
    assert r.extra_flops == pytest.approx(ATT_PAIR_70, rel=1e-9)
    assert r.time_ratio == pytest.approx(1.0, rel=1e-4)


def test_recompute_crossover_is_where_the_two_steps_meet():
    # substitute the root back: the recompute pass (its cache writes aside) takes the cached
    # step's time, with every keyword passed through to both
    from llmmath.roofline import decode_step, prefill_step

    for kw in (dict(n_chips=8, weight_bytes=1, kv_bytes=1, dtype="fp8"),
               dict(n_chips=8, weight_bytes=2, kv_bytes=1, dtype="bf16"),
               dict(n_chips=4, weight_bytes=0.5, kv_bytes=2, dtype="bf16")):
        s = tr.recompute_crossover(L70, H100, batch=4, **kw)
        pre = prefill_step(L70, H100, 4, s + 1, **kw)
        dec = decode_step(L70, H100, 4, s, **kw)
        assert max(pre.compute_time, pre.weight_time) == pytest.approx(dec.time, rel=1e-5), kw
    # fp8 weights halve the read that hides the recompute: about R/2 - 1 = 146.7 tokens at B = 1
    assert tr.recompute_crossover(L70, H100, weight_bytes=1) == pytest.approx(R_H100 / 2 - 1,
                                                                                rel=0.01)


def test_recompute_crossover_below_one_token():
    # near the critical batch only part of one token is free: B = 200 gives R/B - 1 = 0.48
    s = tr.recompute_crossover(L70, H100, batch=200, n_chips=8)
    assert s == pytest.approx(R_H100 / 200 - 1, rel=0.05)
    assert 0 < s < 1


def test_checkpoint_price_names_its_scheme_and_model_flops():
    L, T, S = 126, 8192, 8192
    n = L405.active_params
    a = L * 4 * 128 * 128 * (S * (S + 1) / 2) / S * T
    for scheme in tr.CHECKPOINT_SCHEMES:
        p = tr.checkpoint_price(L405, T, S, scheme)
        assert p.scheme == scheme
        assert p.model_flops == pytest.approx(6 * n * T + 3 * a, rel=1e-9)  # what MFU counts
    # keeping everything recomputes nothing, not a FLOP (one token, so one FLOP would show)
    none = tr.checkpoint_price(L405, 1, S, "none")
    assert none.flops == none.model_flops and none.overhead == 0.0


def test_max_hold_time_passes_each_keyword_on():
    dram = memory.MEMORY_TIERS["DRAM"]
    base = tr.max_hold_time(L70, H100, dram, n_chips=8)
    # fp8 arithmetic (1,978.9 against 989.4 TFLOP/s) speeds the matmuls of a compute-bound
    # prefill; attention still runs at bf16, the format of a 2-byte cache (chapter 5's rule)
    P = 8192
    attn = ATT_PAIR_70 * (P + 1) / 2  # per prompt token
    fp8_over_bf16 = (2 * N_MM_70 / 1978.9 + attn / 989.4) / ((2 * N_MM_70 + attn) / 989.4)
    assert tr.max_hold_time(L70, H100, dram, n_chips=8, dtype="fp8") == pytest.approx(
        base * fp8_over_bf16, rel=1e-9)  # 0.536 of the bf16 hold
    # twice the chip price: recomputing costs twice as much
    assert tr.max_hold_time(L70, H100, dram, n_chips=8, price_per_chip_hour=6.0) == pytest.approx(
        2 * base, rel=1e-9)
    # an fp8 cache: half the bytes to hold (the prefill writes half as much too: 8k tokens x
    # 163,840 B = 1.3 GB less traffic, hidden under a compute-bound pass)
    assert tr.max_hold_time(L70, H100, dram, n_chips=8, kv_bytes=1) == pytest.approx(
        2 * base, rel=1e-9)


def test_max_hold_time_of_a_short_prompt_by_hand():
    # a 16-token prompt's prefill is memory-bound: one read of the weights (matmul, norms and
    # 16 embedding rows) plus 16 tokens' cache writes, on one H100 at $3.00 an hour
    P = 16
    read = 2 * (N_MM_70 + (2 * 80 + 1) * 8192 + P * 8192) + P * B_KV_70
    usd_per_token = read / 3.35e12 * 3.0 / 3600 / P
    dram = memory.MEMORY_TIERS["DRAM"]
    dram_per_byte_s = 325.99 / (5 * year / hour) / 3600 / 32e9
    t = tr.max_hold_time(L70, H100, dram, prompt=P)
    assert t == pytest.approx(usd_per_token / (B_KV_70 * dram_per_byte_s), rel=1e-6)
    # fp8 weights halve the read, so the cache is worth holding about half as long
    assert tr.max_hold_time(L70, H100, dram, prompt=P, weight_bytes=1) == pytest.approx(
        t / 2, rel=1e-3)

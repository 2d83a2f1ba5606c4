"""What a problem set hands the student: its parameters, drawn from a seed, and form checks.

``problem(part, seed)`` draws one variant of a part's problem set (chip, model, batch,
context, ...) from the library's catalogues, so an instructor issues a fresh variant each term
by changing ``SEED``. It holds no answers: the keys live in ``keys.py``, which ships with the
autograder only. ``feedback(answer, low, high, unit)`` is what the public tests call: it
refuses a blank or non-numeric answer and, when an answer falls outside the question's
plausible range (one range per question, the same for every seed, so it says nothing about
this variant's key), names the classic slip that would bring it back in, with the hints of
``llmmath.exercises.check``.
"""

from __future__ import annotations

import hashlib
import math
import random
from types import SimpleNamespace

import numpy as np

import llmmath as lm
from llmmath.exercises import KNOWN_FACTORS

PARTS = ("part1", "part2", "part3", "part4")  # one set per part of the book
WEEKS = tuple(f"week{n:02d}" for n in range(1, 13))  # one set per week of the 12-week course
SETS = PARTS + WEEKS
# Full credit within 10% of the key: the course guide's tolerance ("Grading"), the one the grader
# and the hidden tests apply; tests/test_problem_sets.py holds the guide to it.
TOLERANCE = 0.10
_WEEK_DRAWS = {}  # week -> draw(rng, p), registered by @_week below


def _week(name):
    """Register a week's draw: ``draw(rng, p)`` sets the variant's parameters on ``p``."""
    if name not in WEEKS:
        raise KeyError(f"week: got {name!r}; allowed values are {', '.join(WEEKS)}")

    def register(draw):
        _WEEK_DRAWS[name] = draw
        return draw
    return register

# Catalogue subsets each part draws from (names only; every figure comes from the catalogue).
_LLAMAS = ("LLaMA-2-13B", "LLaMA-2-70B", "Llama-3-8B", "Llama-3-70B", "Llama-3.1-405B")
_LLAMAS_PART1 = tuple(m for m in _LLAMAS if m != "Llama-3-8B")  # the exam bank counts that one
_MOES = ("Mixtral-8x7B", "Mixtral-8x22B", "DeepSeek-V3", "Qwen3-235B-A22B", "Qwen3-30B-A3B",
         "gpt-oss-120b")


def _bf16_chips(priced=False):
    return [c.name for c in lm.chips.all_chips()
            if "bf16" in c.flops and (c.price_per_hour is not None or not priced)]


def _chips_to_hold(model, chip, share):
    """Smallest power-of-two chip count whose HBM holds bf16 weights in ``share`` of it."""
    n = 1
    while model.total_params * 2 > share * n * chip.hbm_capacity:
        n *= 2
    return n


def problem(part: str, seed: int) -> SimpleNamespace:
    """The parameters of one variant of ``part``'s problem set (deterministic in ``seed``)."""
    if part not in SETS:
        raise KeyError(f"part: got {part!r}; allowed values are {', '.join(SETS)}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: got {seed!r}; allowed values are whole numbers >= 0")
    rng = random.Random(f"{part}-{int(seed)}")
    p = SimpleNamespace(part=part, seed=int(seed))
    if part in WEEKS:
        if part not in _WEEK_DRAWS:
            raise KeyError(f"part: {part!r} has no problems yet; drawn so far: "
                           f"{', '.join(PARTS + tuple(_WEEK_DRAWS))}")
        _WEEK_DRAWS[part](rng, p)
        return p
    if part == "part1":
        p.chip = rng.choice(_bf16_chips())
        p.model = rng.choice(_LLAMAS_PART1)
        p.kv_bytes = rng.choice([1, 2])
        p.n_chips = _chips_to_hold(lm.model(p.model), lm.chip(p.chip), 0.5)
    elif part == "part2":
        p.chip = rng.choice(_bf16_chips(priced=True))
        p.model = rng.choice(_LLAMAS)
        model, chip = lm.model(p.model), lm.chip(p.chip)
        p.n_chips = _chips_to_hold(model, chip, 0.4)
        p.batch = rng.choice([8, 16, 32, 64, 128])
        p.context = rng.choice([c for c in (1024, 2048, 4096, 8192) if c < model.max_context])
        p.prompt = rng.choice([512, 1024, 2048, 4096])
    elif part == "part3":
        p.model = rng.choice(_MOES)
        p.chip = rng.choice(_bf16_chips(priced=True))
        p.batch = rng.choice([1, 4, 16, 64, 256])
        p.tp_chips = rng.choice([4, 8, 16])
        p.link_bandwidth = rng.choice([100e9, 200e9, 450e9, 900e9])
        p.hop_latency = rng.choice([1e-6, 2e-6, 3e-6, 5e-6])
        p.micro_batch = rng.choice([16, 32, 64, 128])
        p.scale_out_bandwidth = rng.choice([25e9, 50e9, 100e9])
        p.stage_latency = rng.choice([5e-6, 10e-6, 20e-6])
        p.compute_efficiency = rng.choice([0.3, 0.4, 0.5, 0.6])
    else:
        p.model = rng.choice(_LLAMAS)
        p.chip = rng.choice(_bf16_chips())
        p.tokens = rng.choice([2e12, 5e12, 10e12, 15e12])
        p.days = rng.choice([30, 45, 60, 90])
        p.mfu = rng.choice([0.35, 0.4, 0.45, 0.5])
        p.compute = rng.choice([1e23, 3e23, 1e24, 3e24, 1e25])
        p.zero_stage = rng.choice([1, 2, 3])
        p.dp_chips = rng.choice([8, 16, 64, 256])
        p.tokens_per_second = rng.choice([1e6, 5e6, 20e6, 50e6])
        p.serve_days = rng.choice([90, 180, 365])
        # q5 (training_layout): an interleaved pipeline whose stages span scale-up domains
        p.__dict__.update(_redraw_until(rng, _draw_pipeline_layout, _pipeline_layout_ok(p.model)))
    return p


def _draw_pipeline_layout(rng):
    return {"layout_chip": rng.choice(_network_gpus()), "layout_tp": rng.choice([2, 4, 8]),
            "layout_pp": rng.choice([4, 8, 16]), "layout_v": rng.choice([2, 4]),
            "layout_dp": rng.choice([8, 16, 32, 64]), "micro_batches": rng.choice([8, 16, 32]),
            "sequence_length": rng.choice([2048, 4096])}


def _pipeline_layout_ok(model_name):
    """A layout llmmath.layout accepts (heads and MLP divide by tp, a layer per chunk, the
    sequence within the window) whose chips exceed one scale-up domain (sends go scale-out)."""
    def ok(layout_chip, layout_tp, layout_pp, layout_v, layout_dp, micro_batches,
           sequence_length):
        m, chip = lm.model(model_name), lm.chip(layout_chip)
        return (m.n_heads % layout_tp == 0 and m.d_ff % layout_tp == 0
                and m.n_layers >= layout_pp * layout_v and sequence_length <= m.max_context
                and layout_dp * layout_tp * layout_pp > (chip.scale_up_domain or 1))
    return ok


# ---- weeks 1-6 (chapters 1-6): each week's draw, registered with @_week("weekNN") ----


# Dense Llama-family decoders (GQA or MHA, gated MLP, untied embeddings) and MoEs with plain
# grouped-query attention (no MLA, no sliding layers, no biases): the hand solutions hold for them.
_DENSE = ("LLaMA-2-7B",) + _LLAMAS
_MOE_GQA = ("Mixtral-8x7B", "Mixtral-8x22B", "Qwen3-30B-A3B")


def _fp8_chips(priced=False):
    return [n for n in _bf16_chips(priced) if "fp8" in lm.chip(n).flops]


@_week("week01")
def _draw_week01(rng, p):
    p.chip = rng.choice(_bf16_chips())
    p.model = rng.choice(_DENSE)
    p.inputs = rng.choice([1, 2, 3])
    p.batch = rng.choice([2048, 4096, 8192])


@_week("week02")
def _draw_week02(rng, p):
    p.model = rng.choice(_DENSE)
    m = lm.model(p.model)
    p.context = rng.choice([c for c in (4096, 8192, 32768, 131072) if c <= m.max_context])
    share = rng.choice([1 / 8, 1 / 4, 1 / 2])  # of the cache full attention would hold
    p.window = rng.choice([w for w in (256, 512, 1024, 2048) if w <= share * p.context / 2])
    p.kv_budget = round(share * m.kv_cache_bytes(p.context))  # bytes, bf16
    p.moe = rng.choice(_MOE_GQA)
    p.moe_context = rng.choice([1024, 4096, 16384])


@_week("week03")
def _draw_week03(rng, p):
    while True:  # a context below half the critical context: the knee still exists there
        p.model, p.chip = rng.choice(_DENSE), rng.choice(_bf16_chips())
        s_star = lm.critical_context(lm.model(p.model), lm.chip(p.chip))
        short = [c for c in (64, 128, 256, 512, 1024) if c < s_star / 2]
        if short:
            p.short_context = rng.choice(short)
            break
    p.batch = rng.choice([1, 8, 32, 128])
    p.context = rng.choice([c for c in (1024, 2048, 4096, 8192)
                            if c <= lm.model(p.model).max_context])
    weights = 2 * lm.model(p.model).total_params / lm.chip(p.chip).hbm_bandwidth  # one chip
    p.step_target = rng.choice([t for t in (0.002, 0.005, 0.01, 0.02, 0.05) if t < weights])
    p.fp8_chip = rng.choice(_fp8_chips())
    p.n_chips = _chips_to_hold(lm.model(p.model), lm.chip(p.fp8_chip), 0.5)


@_week("week04")
def _draw_week04(rng, p):
    p.model, p.chip = rng.choice(_DENSE), rng.choice(_bf16_chips(priced=True))
    model, chip = lm.model(p.model), lm.chip(p.chip)
    p.n_chips = 2 * _chips_to_hold(model, chip, 0.5)
    p.context = rng.choice([c for c in (1024, 2048, 4096) if c < model.max_context])
    floor = 2 * model.total_params / (p.n_chips * chip.hbm_bandwidth)  # the weight read alone
    p.user_speed = rng.choice([s for s in (10, 20, 30, 50, 100) if 1 / s > 1.5 * floor])
    p.batch = rng.choice([1, 4, 16, 64, 256])
    p.draft_tokens = rng.choice([2, 3, 4])
    p.acceptance = rng.choice([0.6, 0.7, 0.8, 0.9])
    p.full_context = rng.choice([c for c in (2048, 4096, 8192, 32768) if c <= model.max_context])


@_week("week05")
def _draw_week05(rng, p):
    p.model, p.chip = rng.choice(_DENSE), rng.choice(_bf16_chips())
    model, chip = lm.model(p.model), lm.chip(p.chip)
    p.n_chips = 2 * _chips_to_hold(model, chip, 0.5)
    p.batch = rng.choice([16, 32, 64, 128])
    p.context = rng.choice([c for c in (2048, 4096, 8192, 32768) if c <= model.max_context])
    p.fp8_context = rng.choice([c for c in (2048, 4096, 8192) if c <= model.max_context])


_LONG_GQA = ("Llama-3.1-405B", "Mixtral-8x7B", "Mixtral-8x22B", "Qwen3-235B-A22B",
             "Qwen3-30B-A3B")  # long windows, plain grouped-query attention


@_week("week06")
def _draw_week06(rng, p):
    p.long_model = rng.choice(_LONG_GQA)
    p.chip = rng.choice(_bf16_chips(priced=True))
    p.kv_bytes = rng.choice([1, 2])
    p.long_context = rng.choice([c for c in (32768, 65536, 131072)
                                 if c <= lm.model(p.long_model).max_context])
    p.model = rng.choice(_DENSE)
    model, chip = lm.model(p.model), lm.chip(p.chip)
    p.n_chips = _chips_to_hold(model, chip, 0.5)
    p.prompt = rng.choice([p_ for p_ in (1024, 2048, 4096, 8192) if p_ <= model.max_context])
    p.batch = rng.choice([16, 32, 64, 128])
    p.context = rng.choice([c for c in (1024, 2048, 4096) if c < model.max_context])


# ---- weeks 7-12 (chapters 7-13) ----


_DENSE_GQA_LLAMAS = ("Llama-3-8B", "Llama-3-70B", "LLaMA-2-70B", "Llama-3.1-405B")


def _network_gpus(priced=False, nvidia=False):
    """bf16 GPUs (NVIDIA, AMD) with scale-up and scale-out figures; priced or NVIDIA only."""
    return [c.name for c in lm.chips.all_chips()
            if "bf16" in c.flops and c.vendor in (("NVIDIA",) if nvidia else ("NVIDIA", "AMD"))
            and c.scale_up_bandwidth and c.scale_out_bandwidth
            and (c.price_per_hour is not None or not priced)]


def _redraw_until(rng, draw, ok):
    """Redraw with ``draw(rng)`` (a dict) until ``ok(**it)``: only combinations that make sense."""
    while True:
        it = draw(rng)
        if ok(**it):
            return it


@_week("week07")
def _week07(rng, p):
    p.model = rng.choice(_MOES)
    p.chip = rng.choice(_network_gpus(priced=True))
    p.weight_bytes = rng.choice([1, 2])
    p.kv_fraction = rng.choice([0.2, 0.3, 0.4, 0.5])
    chip = lm.chip(p.chip)

    def sparsity(cost_per_million_tokens, compute_efficiency):
        total = 8 * chip.hbm_capacity * (1 - p.kv_fraction) / p.weight_bytes
        active = cost_per_million_tokens / 1e6 * chip.flops["bf16"] * compute_efficiency / (
            2 * chip.price_per_hour / 3600)
        return total / active
    p.__dict__.update(_redraw_until(
        rng, lambda r: {"cost_per_million_tokens": r.choice([0.02, 0.05, 0.1, 0.2, 0.5]),
                        "compute_efficiency": r.choice([0.4, 0.5, 0.6])},
        lambda **kw: 2 <= sparsity(**kw) <= 100))
    model = lm.model(p.model)
    p.ep_chips = rng.choice([n for n in (4, 8, 16, 32, 64, 72) if n <= model.n_experts])
    p.redundant_experts = rng.choice([r for r in (0, 8, 16, 32) if r < model.n_experts])


@_week("week08")
def _week08(rng, p):
    p.stages = rng.choice([4, 8, 16])
    p.micro_batches = rng.choice([8, 16, 32, 64])
    p.virtual_stages = rng.choice([2, 3, 4])
    p.forward_time = rng.choice([2e-3, 5e-3, 10e-3, 20e-3])

    def room(model, chip, pp_stages, micro_batch):  # q2's longest context, tokens
        m, c = lm.model(model), lm.chip(chip)
        left = c.hbm_capacity - m.total_params * 2 / (8 * pp_stages)
        return left * 8 / (micro_batch * m.kv_bytes_per_token(2))
    p.__dict__.update(_redraw_until(
        rng, lambda r: {"model": r.choice(("Llama-3.1-405B", "Qwen3-235B-A22B", "DeepSeek-V3",
                                           "Mixtral-8x22B")),
                        "chip": r.choice(_bf16_chips()), "pp_stages": r.choice([2, 4, 8]),
                        "micro_batch": r.choice([1, 2, 4, 8, 16])},
        lambda **kw: 2048 <= room(**kw) <= lm.model(kw["model"]).max_context))

    def fits(dense_model, gpu, pp_racks, decode_micro_batch, context):
        m, c = lm.model(dense_model), lm.chip(gpu)
        return context < m.max_context and m.total_params * 2 < 0.6 * 8 * pp_racks * c.hbm_capacity
    p.__dict__.update(_redraw_until(
        rng, lambda r: {"dense_model": r.choice(_DENSE_GQA_LLAMAS),
                        "gpu": r.choice(_network_gpus()),
                        "pp_racks": r.choice([2, 4, 8]),
                        "decode_micro_batch": r.choice([1, 4, 16]),
                        "context": r.choice([2048, 4096, 8192])},
        fits))
    p.hop_latency = rng.choice([10e-6, 50e-6, 200e-6, 1e-3])


@_week("week09")
def _week09(rng, p):
    p.tpu = rng.choice(["TPU v4", "TPU v5p", "TPU v7"])
    p.torus = rng.choice([(4, 4, 4), (4, 4, 8), (4, 8, 8), (8, 8, 8)])
    p.buffer_bytes = rng.choice([1e6, 4e6, 16e6, 64e6])
    p.hop_latency = rng.choice([1e-6, 2e-6, 5e-6])
    p.dense_model = rng.choice(_DENSE_GQA_LLAMAS + ("GPT-3-175B",))
    p.gpu = rng.choice(_network_gpus(nvidia=True))
    p.switch_latency = rng.choice([2e-6, 3e-6, 5e-6])

    def n_opt(ffn_model, tokens, n_chips):  # best gathering group, bf16 (parallel.ffn_comm_time)
        model = lm.model(ffn_model)
        return math.sqrt(2 * tokens * n_chips / ((3 if model.gated_mlp else 2) * model.d_ff))
    p.__dict__.update(_redraw_until(
        rng, lambda r: {"ffn_model": r.choice(("GPT-3-175B", "PaLM-540B", "Llama-3-70B",
                                               "Llama-3.1-405B")),
                        "tokens": r.choice([2048, 16384, 131072, 1048576]),
                        "n_chips": r.choice([64, 128, 256, 512])},
        lambda **kw: 1 <= n_opt(**kw) <= kw["n_chips"]))


@_week("week10")
def _week10(rng, p):
    def fits(model, chip, n_chips, batch, context):
        m, c = lm.model(model), lm.chip(chip)
        return (context < m.max_context
                and m.total_params * 2 + batch * m.kv_bytes_per_token(2) * context
                < 0.9 * n_chips * c.hbm_capacity)
    p.__dict__.update(_redraw_until(
        rng, lambda r: {"model": r.choice(_DENSE_GQA_LLAMAS),
                        "chip": r.choice(_network_gpus(nvidia=True)),
                        "n_chips": r.choice([1, 2, 4, 8]), "batch": r.choice([1, 4, 8, 16, 32]),
                        "context": r.choice([1024, 2048, 4096])},
        fits))
    p.moe_model = rng.choice(_MOES)
    p.touched_share = rng.choice([0.5, 0.75, 0.9, 0.99])
    p.ep_model = rng.choice(_MOES)
    p.ep_chip = rng.choice(["H100-SXM", "H200", "B200", "GB200", "B300"])
    domain = lm.chip(p.ep_chip).scale_up_domain
    p.ep_chips = rng.choice([n for n in (8, 16, 32, 64, 72) if n <= domain])
    p.ep_batch = rng.choice([16, 64, 256])


@_week("week11")
def _week11(rng, p):
    def length(model, attention_share):  # q1's sequence length, roughly (6 L n_q d_h S)
        m = lm.model(model)
        return attention_share / (1 - attention_share) * m.active_params / (
            m.n_layers * m.n_heads * m.head_dim)
    p.__dict__.update(_redraw_until(
        rng, lambda r: {"model": r.choice(("Llama-3-8B", "Llama-3-70B", "Llama-3.1-405B",
                                           "Mixtral-8x22B", "Qwen3-235B-A22B",
                                           "Qwen3-30B-A3B")),
                        "attention_share": r.choice([0.05, 0.1, 0.2, 0.3])},
        lambda **kw: 1024 <= length(**kw) <= 0.9 * lm.model(kw["model"]).max_context))
    p.chip = rng.choice(_network_gpus())
    model, chip = lm.model(p.model), lm.chip(p.chip)
    p.dp_chips = rng.choice([n for n in (8, 16, 64, 256, 1024)
                             if 16 * model.total_params / n < 0.7 * chip.hbm_capacity])
    p.zero_stage = rng.choice([0, 1, 2, 3])
    p.tokens_per_chip = rng.choice([4096, 16384, 65536])
    p.busy_efficiency = rng.choice([0.4, 0.5, 0.6])
    # q5-q7 (training_layout): a dense model laid out TP x PP x DP, micro-batches of one sequence
    p.layout_chip = rng.choice(_network_gpus(nvidia=True))

    def fits(layout_model, layout_tp, layout_pp, layout_dp, layout_zero, sequence_length):
        m = lm.model(layout_model)  # a layout the library accepts, bf16 weights in half the HBM
        return (m.n_heads % layout_tp == 0 and m.d_ff % layout_tp == 0
                and m.n_layers >= layout_pp and sequence_length <= m.max_context
                and 2 * m.total_params / (layout_tp * layout_pp)
                < 0.5 * lm.chip(p.layout_chip).hbm_capacity)
    p.__dict__.update(_redraw_until(
        rng, lambda r: {"layout_model": r.choice(_DENSE_GQA_LLAMAS),
                        "layout_tp": r.choice([2, 4, 8]), "layout_pp": r.choice([2, 4, 8, 16]),
                        "layout_dp": r.choice([8, 16, 32, 64]),
                        "layout_zero": r.choice([0, 1, 2, 3]),
                        "sequence_length": r.choice([2048, 4096, 8192])},
        fits))
    p.micro_batches = rng.choice([8, 16, 32])
    p.job_chips = rng.choice([1024, 4096, 16384])
    p.storage_bandwidth = rng.choice([0.5e12, 1e12, 2e12])
    p.restart_time = rng.choice([300.0, 600.0, 1200.0, 1800.0])


@_week("week12")
def _week12(rng, p):
    big = rng.choice(("Llama-3-70B", "Llama-3.1-405B", "Mixtral-8x22B", "LLaMA-2-70B"))
    p.big_model = big
    f = lm.lifetime.SCALING_FITS["hoffmann"]

    def gap(small):  # loss left above the small model's infinite-data floor (> 0: reachable)
        nb, ns = lm.model(big).active_params, lm.model(small).active_params
        return f.A / nb ** f.alpha + f.B / (20 * nb) ** f.beta - f.A / ns ** f.alpha
    p.small_model = rng.choice([m for m in ("Llama-3-8B", "LLaMA-2-13B", "Mixtral-8x7B",
                                            "Qwen3-235B-A22B", "Llama-3-70B")
                                if lm.model(m).active_params < 0.7 * lm.model(big).active_params
                                and gap(m) > 0.02])
    p.pretrain_tokens = rng.choice([15e12, 20e12, 36e12])
    p.rl_tokens = rng.choice([1e12, 5e12, 20e12])
    p.tokens_per_second = rng.choice([1e6, 5e6, 20e6, 50e6])
    p.serve_days = rng.choice([90, 180, 365])
    p.decode_efficiency = rng.choice([1 / 3, 1 / 4, 1 / 5])
    p.__dict__.update(_redraw_until(
        rng, lambda r: {"model": r.choice(("Llama-3-8B", "Llama-3-70B", "Llama-3.1-405B",
                                           "Qwen3-235B-A22B", "Qwen3-30B-A3B")),
                        "chip": r.choice(_network_gpus(priced=True)),
                        "prompt": r.choice([2048, 4096, 8192]),
                        "tier": r.choice(["DRAM", "flash"])},
        lambda **kw: kw["prompt"] < lm.model(kw["model"]).max_context))
    p.n_chips = _chips_to_hold(lm.model(p.model), lm.chip(p.chip), 0.5)
    p.__dict__.update(_redraw_until(
        rng, lambda r: {"dense_model": r.choice(_DENSE_GQA_LLAMAS),
                        "dense_chip": r.choice(_bf16_chips()),
                        "batch": r.choice([1, 4, 16, 64]),
                        "context": r.choice([1024, 2048, 4096])},
        lambda **kw: kw["context"] < lm.model(kw["dense_model"]).max_context))
    p.dense_chips = _chips_to_hold(lm.model(p.dense_model), lm.chip(p.dense_chip), 0.5)


def student_seed(seed: int, student_id: str | None = None) -> int:
    """The variant of one student: ``seed`` itself when ``student_id`` is None (the term's
    variant), else a stable hash of both: the first 4 bytes of SHA-256 of ``"seed:student_id"``
    (the id stripped, as the course roster spells it), a whole number below 2**32. The same on
    every machine and Python (no ``hash()``, which is salted per process)."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed: got {seed!r}; allowed values are whole numbers >= 0")
    if student_id is None:
        return int(seed)
    sid = str(student_id).strip()
    if not sid:
        raise ValueError(f"student_id: got {student_id!r}; allowed values are None (the term's "
                         "variant) or a non-empty id")
    return int.from_bytes(hashlib.sha256(f"{int(seed)}:{sid}".encode()).digest()[:4], "big")


def describe(p: SimpleNamespace) -> str:
    """The variant's parameters as the student reads them (numbers in the units of the text)."""
    lines = [f"Problem set {p.part}, seed {p.seed}:"]
    for k, v in vars(p).items():
        if k in ("part", "seed"):
            continue
        if isinstance(v, float) and k.endswith("bandwidth"):
            v = f"{v / 1e9:g} GB/s"
        elif isinstance(v, float) and k.endswith("latency"):
            v = f"{v * 1e6:g} us"
        elif isinstance(v, float) and (k in ("tokens", "compute", "tokens_per_second")
                                       or abs(v) >= 1e6):
            v = f"{v:.3g}"
        lines.append(f"  {k:>20} = {v}")
    return "\n".join(lines)


def feedback(answer, low: float, high: float, unit: str) -> None:
    """A public test: a filled-in finite number in the question's plausible range, or a hint.

    Raises ``AssertionError`` with the hint (the test's feedback); returns None when the answer
    is of the right form. Passing says nothing about being right: the hidden tests grade.
    """
    if answer is None or answer is Ellipsis:
        raise AssertionError("fill in your answer: replace ... with your number, then run the "
                             "cell again")
    if isinstance(answer, (bool, str)):
        raise AssertionError(f"expected a number, got {answer!r}")
    try:
        a = float(np.asarray(answer, dtype=float))
    except (TypeError, ValueError):
        raise AssertionError(f"expected one number, got {answer!r}") from None
    if not math.isfinite(a) or a <= 0:
        raise AssertionError(f"expected a positive finite number, got {a!r}")
    if low <= a <= high:
        return
    too = "too high" if a > high else "too low"
    # Every slip that would bring the answer back into range. Name the one that lands it
    # nearest the middle of the range (in log), so a 1000x slip is not called a factor of 16;
    # slips that land within 1.5x of that (1000 and 1024) go by check's order.
    mid = math.log(low * high) / 2 if low > 0 else math.log(high)
    fixes = [(abs(math.log(back) - mid), i) for i, (factor, _) in enumerate(KNOWN_FACTORS)
             for back in [a / factor if a > high else a * factor] if low <= back <= high]
    if fixes:
        nearest = min(d for d, _ in fixes)
        factor, hint = KNOWN_FACTORS[min(i for d, i in fixes if d <= nearest + math.log(1.5))]
        raise AssertionError(f"{a:.4g} {unit} is {too} to be plausible here "
                             f"(off by a factor of ~{factor:g}?): {hint}")
    raise AssertionError(f"{a:.4g} {unit} is {too} to be plausible here (expected "
                         f"{low:g} to {high:g} {unit}): check the units and the formula")

"""Mixture of experts across a scale-up domain: what bounds total and active parameters, how
experts are placed on chips, what the all-to-all costs inside and outside a domain, and what
routing imbalance does to the step.

The episode's rule: **active parameters are bounded by compute cost, total parameters
by the memory of one scale-up domain**. Both sides are here:

- :func:`max_total_params`: ``N_tot <= n M mu (1 - kv_fraction) / b_w`` for a domain of ``n``
  chips of ``M`` bytes;
- :func:`max_active_params`: at a compute-bound step a token costs ``2 N_act / (C eta)``
  chip-seconds, so a target price per token bounds ``N_act``;
- :func:`critical_batch_for_sparsity`: the weights-only critical batch ``(C/W)(b_w/2) s`` with
  ``s = N_tot/N_act`` (the episode's "300 x sparsity").

An expert-parallel layout reads what it holds (:func:`expert_parallel_decode_step`,
:func:`expert_parallel_prefill_step`, :func:`expert_parallel_critical_batch`): under data-parallel
attention every chip of the group holds, and reads every step, all the weights that are not
routed experts (attention, dense layers, shared experts, router, LM head), beside its own expert
slots and its own sequences' KV caches. Only the routed experts divide by the group.

Expert parallelism (:func:`expert_placement`, :func:`expert_all_to_all`): experts spread over the
chips of an EP group; per MoE layer each token is sent to the chips holding its ``k`` experts
(dispatch) and the results come back (combine). Traffic to chips in the sender's scale-up domain
rides the scale-up network, the rest the scale-out network, which is about an order of magnitude
slower per chip (:func:`scale_up_over_scale_out`).

Routing imbalance (:func:`expected_max_load`, :func:`imbalance_factor`): the slowest chip sets the
step, so the MoE part of a step takes ``E[max load] / mean load`` times its balanced time. The
model is uniform random routing (a multinomial), the best case a real router can only approach.

All sizes in bytes, bandwidths in bytes/s (one direction, per chip), times in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._check import choice, fraction, number, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from ._summary import SummaryRow
from .balance import _per_sequence_decode
from .cost import price_per_chip_second
from .step import ATTENTION_DTYPES, Step, _check_step, _decode_work, _finish, _prefill_work
from .units import fmt_count

__all__ = [
    "ScaleUpDomain",
    "ANNOUNCED_DOMAINS",
    "DEEPSEEK_SERVING_2025",
    "SGLANG_LARGE_EP_2025",
    "DEEPSEEKMOE_16B_COMPUTE_SHARE",
    "domain_of",
    "all_domains",
    "domain_memory",
    "max_total_params",
    "max_active_params",
    "compute_cost_per_million_tokens",
    "critical_batch_for_sparsity",
    "ExpertPlacement",
    "expert_placement",
    "expert_parallel_decode_step",
    "expert_parallel_prefill_step",
    "expert_parallel_critical_batch",
    "expected_max_load",
    "imbalance_factor",
    "AllToAll",
    "ALL_TO_ALL_KERNELS",
    "expert_all_to_all",
    "scale_up_over_scale_out",
    "two_batch_overlap_time",
]


# ----- scale-up domains -------------------------------------------------------------------------

@dataclass(frozen=True)
class ScaleUpDomain:
    """A scale-up domain: ``scale_up_domain`` chips of ``hbm_capacity`` bytes joined by one fast
    network (NVLink, ICI, UB). Attribute names match :class:`~llmmath.chips.Chip`, so every
    function here takes either. ``scale_out_bandwidth`` is per chip, one direction (0: unknown)."""

    name: str
    scale_up_domain: int
    hbm_capacity: float
    scale_up_bandwidth: float = 0.0
    scale_out_bandwidth: float = 0.0
    year: int | None = None
    source: str = ""
    notes: str = ""


#: Domains that are not one catalogue chip times its domain size: a shipping system built from a
#: chip outside the catalogue, and an announced one. Cited figures, not a datasheet of ours.
ANNOUNCED_DOMAINS: tuple[ScaleUpDomain, ...] = (
    ScaleUpDomain(
        name="CloudMatrix384 (Ascend 910C)", scale_up_domain=384, hbm_capacity=128e9,
        scale_up_bandwidth=392e9, scale_out_bandwidth=50e9, year=2025,
        source="zuo2025cloudmatrix",
        notes=("Huawei CloudMatrix384: 384 Ascend 910C NPUs (128 GB HBM each) on one Unified Bus "
               "network, over 392 GB/s one way per NPU; RDMA scale-out 400 Gb/s (50 GB/s) per NPU. "
               "Serves DeepSeek-R1 with EP320 inside the domain."),
    ),
    ScaleUpDomain(
        name="Rubin Ultra NVL576 (144 packages, announced)", scale_up_domain=144,
        hbm_capacity=1e12, year=2027,
        source="nvidia2025gtc_roadmap",
        notes=("Announced at GTC 2025 for the second half of 2027: 144 Rubin Ultra packages (576 "
               "compute dies, hence 'NVL576') in one NVLink domain, about 1 TB of HBM4e per "
               "package. A roadmap figure, not a datasheet."),
    ),
)


#: DeepSeek-V3/R1's published serving layout and one day of statistics, March 2025
#: [deepseek2025inference], with its profiles' batches per GPU [deepseek_profile_data]: decode on
#: EP144 (18 nodes of 8 H800s) with 32 redundant experts, 128 sequences per GPU, an average KV
#: length of 4,989 tokens per output token; prefill on EP32 at 16K tokens per GPU; each node took
#: 73.7k input tokens/s, 56.3% of them served from the on-disk KV cache.
DEEPSEEK_SERVING_2025 = {
    "decode_expert_parallel": 144,
    "prefill_expert_parallel": 32,
    "redundant_experts": 32,
    "decode_tokens_per_gpu": 128,
    "prefill_tokens_per_gpu": 16384,
    "mean_kv_length": 4989,
    "node_input_tokens_per_s": 73.7e3,
    "input_cache_hit_rate": 0.563,
}

#: SGLang's large expert-parallel deployment of DeepSeek-V3 on 96 H100s [lmsys2025largeep]:
#: dispatch about 0.17 ms per layer in both its and DeepSeek's decode profiles; expert balancing
#: (EPLB) raised throughput 1.49x in prefill and 2.54x in decode; two-batch overlap gave 27-35%
#: more prefill throughput.
SGLANG_LARGE_EP_2025 = {
    "dispatch_time": 0.17e-3,
    "eplb_speedup": {"prefill": 1.49, "decode": 2.54},
    "two_batch_overlap_prefill_gain": (0.27, 0.35),
}

#: DeepSeekMoE 16B matched LLaMA2 7B with about 40% of its computation [dai2024deepseekmoe].
DEEPSEEKMOE_16B_COMPUTE_SHARE = 0.40


def domain_of(chip) -> ScaleUpDomain:
    """The scale-up domain of a catalogue chip: ``chip.scale_up_domain`` chips of its HBM."""
    if not getattr(chip, "scale_up_domain", None):
        raise ValueError(f"chip: {getattr(chip, 'name', chip)!r} has no scale_up_domain figure")
    if isinstance(chip, ScaleUpDomain):
        return chip
    return ScaleUpDomain(
        name=f"{chip.scale_up_domain} x {chip.name}", scale_up_domain=int(chip.scale_up_domain),
        hbm_capacity=chip.hbm_capacity, scale_up_bandwidth=chip.scale_up_bandwidth or 0.0,
        scale_out_bandwidth=chip.scale_out_bandwidth or 0.0, year=chip.year, source=chip.source)


def all_domains(include_announced: bool = True) -> list[ScaleUpDomain]:
    """Every catalogue chip's domain (one per chip with a domain figure), then
    :data:`ANNOUNCED_DOMAINS`, in ascending order of total memory."""
    from . import chips

    out = [domain_of(c) for c in chips.all_chips() if c.scale_up_domain]
    if include_announced:
        out += list(ANNOUNCED_DOMAINS)
    return sorted(out, key=lambda d: d.scale_up_domain * d.hbm_capacity)


def _domain_size(chip, n_chips):
    if n_chips is None:
        size = getattr(chip, "scale_up_domain", None)
        if not size:
            raise ValueError(f"n_chips: {getattr(chip, 'name', chip)!r} has no scale_up_domain "
                             "figure; pass n_chips")
        return float(size)
    return n_chips_check(n_chips)


def domain_memory(chip, n_chips=None):
    """HBM of a scale-up domain: ``n M`` bytes (``n`` defaults to the chip's domain size)."""
    n = _domain_size(chip, n_chips)
    return _out(n * chip.hbm_capacity)


# ----- the two bounds ---------------------------------------------------------------------------

def max_total_params(chip, n_chips=None, weight_bytes=2, kv_fraction=0.0, memory_fraction=1.0):
    """Largest total parameter count whose weights fit one scale-up domain beside the KV cache.

    ``N_tot,max = n M mu (1 - kv_fraction) / b_w``: ``n`` chips (default: the chip's domain) of
    ``M`` bytes, a usable fraction ``mu`` (``memory_fraction``), a share ``kv_fraction`` kept for
    the KV cache, ``b_w`` bytes per weight. All experts are stored, used or not; this is the
    capacity side of the episode's rule.
    """
    n = _domain_size(chip, n_chips)
    weight_bytes = positive("weight_bytes", weight_bytes)
    kv = number("kv_fraction", kv_fraction)
    if np.any(np.asarray(kv) < 0) or np.any(np.asarray(kv) >= 1) or not np.all(np.isfinite(kv)):
        raise ValueError(f"kv_fraction: got {kv_fraction!r}; allowed values are in [0, 1)")
    f = fraction("memory_fraction", memory_fraction)
    return _out(n * chip.hbm_capacity * f * (1.0 - kv) / weight_bytes)


def max_active_params(chip, cost_per_million_tokens, dtype="bf16", compute_efficiency=1.0,
                      price_per_chip_hour=None):
    """Largest active (matmul) parameter count whose compute-bound token costs at most the target.

    At or above the critical batch a token costs ``2 N_act / (C eta)`` chip-seconds, so at ``p``
    USD per chip-second ``N_act,max = (cost per token) C eta / (2 p)`` (``eta``:
    ``compute_efficiency``). This is the compute side of
    the episode's rule: total parameters do not enter (they set the batch at which the bound is
    reached, not the cost there). ``price_per_chip_hour`` defaults to the catalogue price.
    """
    c = positive("cost_per_million_tokens", cost_per_million_tokens)
    e = fraction("compute_efficiency", compute_efficiency)
    p = price_per_chip_second(chip, price_per_chip_hour)
    return _out(c / 1e6 * chip.peak(dtype) * e / (2.0 * p))


def compute_cost_per_million_tokens(active_params, chip, dtype="bf16", compute_efficiency=1.0,
                                    price_per_chip_hour=None):
    """Compute-bound floor of the cost of a million tokens: ``1e6 x 2 N_act p / (C eta)`` USD."""
    n_act = positive("active_params", active_params)
    e = fraction("compute_efficiency", compute_efficiency)
    p = price_per_chip_second(chip, price_per_chip_hour)
    return _out(1e6 * 2.0 * n_act * p / (chip.peak(dtype) * e))


def critical_batch_for_sparsity(chip, sparsity, weight_bytes=2, dtype="bf16"):
    """The weights-only critical batch of a model with ``N_tot/N_act = sparsity``:
    ``(C/W)(b_w/2) s``.

    Compute time ``2 B N_act / C`` equals the weight-read time ``N_tot b_w / W`` there: the
    episode's "B* ~ 300 x sparsity" (at ``b_w = 2`` and ``C/W`` about 300). It assumes the batch
    touches every expert; :func:`llmmath.roofline.critical_batch` solves it exactly for a model.
    """
    s = positive("sparsity", sparsity)
    if np.any(np.asarray(s) < 1):
        raise ValueError(f"sparsity: got {sparsity!r}; N_tot/N_act is at least 1")
    b = positive("weight_bytes", weight_bytes)
    return _out(chip.ops_per_byte(dtype) * b / 2.0 * s)


# ----- expert placement -------------------------------------------------------------------------

@dataclass(frozen=True)
class ExpertPlacement:
    """Routed experts of one MoE layer laid out over an EP group (all counts per layer).

    ``experts_per_chip``: expert slots each chip holds (``ceil(slots / n)``); ``slots``: ``E + r``
    (routed experts plus redundant copies); ``chips_used``: chips that hold at least one slot when
    each holds ``experts_per_chip``; ``idle_chips``: the rest; ``spare_slots``: free slots on the
    used chips. Bytes are per chip for all layers: ``routed_bytes`` (its expert slots),
    ``replicated_bytes`` (everything that is not a routed expert: attention, dense layers, shared
    experts, router, embeddings, replicated on every chip as under data-parallel attention) and
    ``weight_bytes_per_chip`` (their sum).
    """

    n_chips: float
    slots: float
    experts_per_chip: float
    chips_used: float
    idle_chips: float
    spare_slots: float
    routed_bytes: float
    replicated_bytes: float
    weight_bytes_per_chip: float


def expert_placement(model, n_chips, redundant_experts=0, weight_bytes=1):
    """Place ``E + r`` routed-expert slots on ``n`` chips, the same number per chip.

    ``experts_per_chip = ceil((E + r)/n)``; with that many per chip
    ``ceil((E + r)/experts_per_chip)`` chips are needed and the rest idle (the episode's 256 experts
    on a 72-GPU rack: 4 per GPU on 64 GPUs, 8 idle). DeepSeek's decode layout is ``E = 256``,
    ``r = 32``, ``n = 144``: 2 per GPU; prefill ``n = 32``: 9 per GPU. ``weight_bytes`` sizes the
    bytes per chip (1: fp8).
    """
    if not model.is_moe:
        raise ValueError(f"model: {model.name!r} is dense; expert placement needs an MoE model")
    n = n_chips_check(n_chips)
    r = positive("redundant_experts", redundant_experts, allow_zero=True, integer=True)
    b = positive("weight_bytes", weight_bytes)
    slots = model.n_experts + r
    per = np.ceil(slots / n - 1e-12)
    used = np.ceil(slots / per - 1e-12)
    routed = per * model.n_moe_layers * model.expert_params * b
    replicated = (model.total_params
                  - model.n_moe_layers * model.n_experts * model.expert_params) * b
    return ExpertPlacement(_out(n), _out(slots + 0.0 * n), _out(per), _out(used), _out(n - used),
                           _out(used * per - slots), _out(routed), _out(replicated + 0.0 * routed),
                           _out(routed + replicated))


# ----- a step of an expert-parallel layout: each chip reads what it holds ----------------------

def _ep_bytes(model, n, tokens, slots_per_chip, slots, weight_bytes):
    """Weight bytes one chip of an expert-parallel group reads in a pass over ``tokens`` tokens
    (the whole group's), with the group's ``n`` chips each gathering embedding rows for its own
    ``tokens / n``.

    ``N_shared b_w`` (every weight but the input embedding and the routed experts, all of it
    replicated and read) ``+ min(T_b/n, V) D b_w`` (the input embedding's rows, untied) ``+
    e_chip L_moe N_exp b_w (1 - (1 - k/(E + r))^T_b)`` (its expert slots, each read if any token
    of the pass reaches it: uniform routing over the ``E + r`` slots).
    """
    share = np.minimum(float(model.experts_per_token) / np.asarray(slots, dtype=float), 1.0)
    with np.errstate(divide="ignore"):  # a share of 1: every slot reached by any token
        touched = -np.expm1(np.asarray(tokens, dtype=float) * np.log1p(-share))
    touched = np.where(share >= 1.0, 1.0, touched)
    rows = 0.0
    if not model.tied_embeddings:
        rows = np.minimum(np.asarray(tokens, dtype=float) / n, model.vocab_size) * model.d_model
    routed = slots_per_chip * model.n_moe_layers * model.expert_params * touched
    return (model._params_read_by_every_step + rows + routed) * weight_bytes


def _ep_layout(model, n_chips, redundant_experts, weight_bytes):
    """The placement and the numbers the step functions share (MoE only; arguments checked)."""
    if not getattr(model, "is_moe", False):
        raise ValueError(f"model: {getattr(model, 'name', model)!r} is dense; an expert-parallel "
                         "layout needs an MoE model (a dense model: llmmath.decode_step)")
    placement = expert_placement(model, n_chips, redundant_experts, weight_bytes)
    return placement, np.asarray(placement.slots, dtype=float)


def expert_parallel_decode_step(model, chip, batch, context, n_chips, redundant_experts=0,
                                weight_bytes=2, kv_bytes=2, dtype="bf16", overlap="step",
                                compute_efficiency=1.0, memory_efficiency=1.0,
                                attention_flops=True, attention_dtype="bf16") -> Step:
    """Lower bound on one decode step of an MoE on an expert-parallel group of ``n`` chips with
    data-parallel attention: each chip reads the bytes it holds.

    ``batch`` B sequences spread evenly, ``B/n`` per chip; each chip runs attention and the
    replicated layers on its own sequences, and the routed experts on the tokens sent to its
    ``e_chip = ceil((E + r)/n)`` expert slots (:func:`expert_placement`). Per chip::

        t >= max( (B/n)(2 N_mm + attn(S)) / C,
                  (N_shared b_w + e_chip L_moe N_exp b_w + (B/n) kv_read(S)) / W )

    with ``N_shared`` every weight that is not a routed expert (attention, dense layers, shared
    experts, routers, LM head; the input embedding is a gather of ``B/n`` rows), replicated on
    every chip and read every step. A slot is read if any of the step's ``B`` tokens reaches it,
    ``1 - (1 - k/(E + r))^B`` (uniform routing). :func:`llmmath.roofline.decode_step` with
    ``n_chips=n`` instead spreads every weight over the ``n`` chips, which no layout with
    batch-split (data-parallel) attention does.

    Returns a :class:`llmmath.step.Step` whose totals are the busiest chip's bytes times ``n``
    (``weight_bytes_read``) and whose ``held_per_chip`` is the placement's
    ``weight_bytes_per_chip`` plus ``B/n`` sequences' caches; ``fits`` compares it with HBM.
    The all-to-all (:func:`expert_all_to_all`) and routing imbalance (:func:`imbalance_factor`)
    are left out: a lower bound. Other arguments as in :func:`llmmath.roofline.decode_step`.
    """
    batch = positive("batch", batch)
    context = positive("context", context, allow_zero=True)
    n, weight_bytes, kv_bytes, compute_efficiency, memory_efficiency = _check_step(
        n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency,
        attention_dtype)
    peak = chip.peak(dtype)
    context = model.check_context(context)
    placement, slots = _ep_layout(model, n, redundant_experts, weight_bytes)
    mm, attn, idx = _decode_work(model, batch, context, attention_flops)
    per_chip = _ep_bytes(model, n, batch, placement.experts_per_chip, slots, weight_bytes)
    kvbytes = batch * model._read_bytes(context, kv_bytes)
    held = n * placement.weight_bytes_per_chip + batch * model._held_bytes(context, kv_bytes)
    return _finish("decode", overlap, mm, attn, idx, _out(per_chip * n), kvbytes, n, chip, peak,
                   compute_efficiency, memory_efficiency, batch, batch, model, attention_dtype,
                   _out(held))


def expert_parallel_prefill_step(model, chip, batch, prompt, n_chips, redundant_experts=0,
                                 weight_bytes=2, kv_bytes=2, dtype="bf16", past=0,
                                 compute_efficiency=1.0, memory_efficiency=1.0,
                                 attention_flops=True, overlap="step",
                                 attention_dtype="bf16") -> Step:
    """Lower bound on prefilling ``prompt`` tokens for each of ``batch`` sequences on an
    expert-parallel group of ``n`` chips with data-parallel attention (each chip prefills
    ``B/n`` of the sequences).

    Per chip: compute ``(B/n)(P 2 N_mm + attn(P, past)) / C``; memory ``(N_shared b_w +
    e_chip L_moe N_exp b_w + (B/n)(kv_held(past + P) - kv_held(past) + kv_read(past))) / W``,
    the replicated weights and its expert slots read once for the pass (a slot is read if any of
    the ``B P`` tokens reaches it). As :func:`expert_parallel_decode_step` is to
    :func:`llmmath.roofline.decode_step`, this is to :func:`llmmath.roofline.prefill_step`;
    ``tokens`` in the result is ``B P``.
    """
    batch = positive("batch", batch)
    prompt = positive("prompt", prompt)
    past = positive("past", past, allow_zero=True)
    n, weight_bytes, kv_bytes, compute_efficiency, memory_efficiency = _check_step(
        n_chips, weight_bytes, kv_bytes, overlap, compute_efficiency, memory_efficiency,
        attention_dtype)
    peak = chip.peak(dtype)
    past = model.check_context(past, "past")
    model.check_context(past + prompt, "past + prompt")
    placement, slots = _ep_layout(model, n, redundant_experts, weight_bytes)
    tokens = positive("batch x prompt", batch * prompt)
    mm, attn, idx = _prefill_work(model, batch, prompt, past, attention_flops)
    per_chip = _ep_bytes(model, n, tokens, placement.experts_per_chip, slots, weight_bytes)
    written = model._held_bytes(past + prompt, kv_bytes) - model._held_bytes(past, kv_bytes)
    kvbytes = batch * (written + model._read_bytes(past, kv_bytes))
    held = (n * placement.weight_bytes_per_chip
            + batch * model._held_bytes(past + prompt, kv_bytes))
    return _finish("prefill", overlap, mm, attn, idx, _out(per_chip * n), kvbytes, n, chip, peak,
                   compute_efficiency, memory_efficiency, tokens, batch, model, attention_dtype,
                   _out(held))


def expert_parallel_critical_batch(model, chip, n_chips, redundant_experts=0, weight_bytes=2,
                                   dtype="bf16", context=0, kv_bytes=2, attention_flops=True,
                                   attention_dtype="bf16"):
    """Sequences per replica (the whole group of ``n`` chips) at which
    :func:`expert_parallel_decode_step`'s compute time equals its memory time.

    Solves, per chip, ``(B/n)(2 N_mm + attn(S))/C = (bytes_w(B) + (B/n) kv_read(S))/W`` for B,
    with ``bytes_w`` the weight bytes one chip reads (replicated weights, its embedding rows and
    its expert slots; see :func:`expert_parallel_decode_step`). At ``context=0`` and every slot
    read it is ``n (N_shared + e_chip L_moe N_exp) b_w C / (2 N_mm W)``: the replicated weights
    are amortised over one chip's ``B/n`` sequences, not over the replica's ``B``, so the
    critical batch grows with ``n`` where :func:`llmmath.roofline.critical_batch` (every weight
    spread over the chips) does not. Returned as a real number (bisection to float precision).

    Raises ValueError where no batch balances: the context is at or past the critical context
    (the KV read per sequence outgrows its compute).
    """
    n = n_chips_check(n_chips)
    weight_bytes = positive("weight_bytes", weight_bytes)
    kv_bytes = positive("kv_bytes", kv_bytes)
    context = positive("context", context, allow_zero=True)
    choice("attention_dtype", attention_dtype, ATTENTION_DTYPES)
    model.check_context(context)
    placement, slots = _ep_layout(model, n, redundant_experts, weight_bytes)
    W = chip.hbm_bandwidth
    mm, attn, kv = _per_sequence_decode(model, chip, context, kv_bytes, dtype, attention_flops,
                                        attention_dtype)
    slack = (np.asarray(mm) + np.asarray(attn) - np.asarray(kv)) * W  # bytes per sequence
    if np.any(slack <= 0):
        raise ValueError(
            f"context: got {float(np.max(context)):g} tokens; at or beyond the critical context "
            f"of {model.name} on {chip.name} decode is memory-bound at every batch, so there is "
            "no critical batch")
    per = np.asarray(placement.experts_per_chip, dtype=float)

    def gap(B):  # bytes of slack minus bytes read, one chip; increasing past its only root
        return B / n * slack - _ep_bytes(model, n, B, per, slots, weight_bytes)

    full = (model._params_read_by_every_step + model.vocab_size * model.d_model
            + per * model.n_moe_layers * model.expert_params) * weight_bytes
    lo = np.zeros(np.broadcast(slack, per, n).shape)
    hi = n * full / slack + lo  # every byte read: gap(hi) >= 0
    for _ in range(200):  # bisection: 200 halvings reach float precision from any bracket
        mid = 0.5 * (lo + hi)
        up = gap(mid) >= 0
        lo, hi = np.where(up, lo, mid), np.where(up, mid, hi)
        if np.all(hi - lo <= 1e-12 * hi):
            break
    return _out(hi)


# ----- routing imbalance ------------------------------------------------------------------------

def _binom_logpmf(k, n, p):
    lg = np.vectorize(math.lgamma, otypes=[float])
    return lg(n + 1) - lg(k + 1) - lg(n - k + 1) + k * math.log(p) + (n - k) * math.log1p(-p)


def _expected_max_std_normal(n: int) -> float:
    """E[max of n independent standard normals], by integrating 1 - Phi^n (z > 0) and -Phi^n
    (z < 0) on a fine grid."""
    z = np.linspace(0.0, 10.0, 4001)
    cdf = np.vectorize(math.erf, otypes=[float])
    up = 1.0 - (0.5 * (1.0 + cdf(z / math.sqrt(2.0)))) ** n       # P(max > z), z >= 0
    down = (0.5 * (1.0 + cdf(-z / math.sqrt(2.0)))) ** n           # P(max < -z), z >= 0
    return float(np.trapezoid(up - down, z))


def _expected_max(assignments: float, bins: float) -> float:
    """E[max count] of ``assignments`` balls thrown uniformly into ``bins`` bins (product of
    binomial marginals; multinomial counts are negatively associated, so this is slightly below
    the exact value)."""
    N, n = int(round(assignments)), int(round(bins))
    if n == 1 or N == 0:
        return float(N)
    p = 1.0 / n
    mu, sd = N * p, math.sqrt(N * p * (1 - p))
    if sd > 500:  # the binomial is normal to far better than the rest of the model
        return mu + sd * _expected_max_std_normal(n)
    lo = max(0, int(mu - 12 * sd) - 5)
    hi = min(N, int(mu + 12 * sd + 12 * math.log(n) + 20))
    k = np.arange(lo, hi + 1, dtype=float)
    pmf = np.exp(_binom_logpmf(k, float(N), p))
    cdf = np.clip(np.cumsum(pmf), 0.0, 1.0)  # the mass below lo (12 sd down) is negligible
    # E[max] = sum_{m>=0} P(max > m) = lo + sum_{m=lo}^{hi} (1 - F(m)^n)  (F(m) ~ 0 below lo)
    tail = 1.0 - np.exp(n * np.log(np.maximum(cdf, 1e-300)))
    return float(lo + tail.sum())


def expected_max_load(assignments, n_chips):
    """Expected load of the busiest of ``n`` chips when ``assignments`` token-to-expert
    assignments land uniformly at random on them (a multinomial).

    Each chip's load is Binomial(N, 1/n) with mean ``N/n``; the expected maximum is
    ``sum_m P(max > m)`` with ``P(max <= m) ~ F(m)^n`` (independent marginals: a slight
    under-estimate, about 2% at one assignment per chip and under 1% from ten per chip; the tests
    check it against simulation).
    Arguments broadcast; whole numbers.
    """
    N = positive("assignments", assignments, allow_zero=True, integer=True)
    n = n_chips_check(n_chips)
    f = np.vectorize(_expected_max, otypes=[float])
    return _out(f(N, n))


def imbalance_factor(tokens_per_chip, n_chips, experts_per_token=8):
    """Busiest chip's load over the mean load for uniform random routing: ``E[max]/mean``.

    ``tokens_per_chip`` tokens on each of ``n`` chips each pick ``k`` experts, so
    ``N = tokens_per_chip x n x k`` assignments spread over the ``n`` chips (experts spread evenly).
    The MoE part of a step, whose slowest chip sets the pace, takes this factor times its balanced
    time. Uniform routing is the best case: a real router's hot experts add to it (redundant
    experts and rebalancing remove most of that, never the random part).
    """
    t = positive("tokens_per_chip", tokens_per_chip)
    n = n_chips_check(n_chips)
    k = positive("experts_per_token", experts_per_token, integer=True)
    N = np.round(t * n * k)
    mean = N / n
    return _out(np.asarray(expected_max_load(N, n)) / mean)


# ----- the all-to-all ----------------------------------------------------------------------------

@dataclass(frozen=True)
class AllToAll:
    """Dispatch + combine of one MoE layer, per chip (lower bounds, seconds and bytes).

    ``scale_up_bytes`` / ``scale_out_bytes``: bytes each chip sends over each network (dispatch
    and combine together); ``scale_up_time``, ``scale_out_time``: those over the per-chip,
    one-direction bandwidths; ``time``: the larger (the two networks run in parallel);
    ``off_domain_copies``: copies of each token that leave its domain.
    """

    scale_up_bytes: float
    scale_out_bytes: float
    scale_up_time: float
    scale_out_time: float
    time: float
    off_domain_copies: float


def scale_up_over_scale_out(chip):
    """Per-chip scale-up over scale-out bandwidth: how much slower leaving the domain is."""
    up, out = getattr(chip, "scale_up_bandwidth", None), getattr(chip, "scale_out_bandwidth", None)
    if not up or not out:
        raise ValueError(f"chip: {getattr(chip, 'name', chip)!r} lacks a scale-up or scale-out "
                         "bandwidth figure")
    return up / out


#: The two all-to-all kernels of DeepEP [deepseek_deepep] (README, "Normal kernels with NVLink and
#: RDMA forwarding", "Low-latency kernels with pure RDMA"): ``"normal"`` forwards a token once
#: per destination domain and fans it out inside (training and prefill); ``"low-latency"`` sends
#: one copy per (token, expert) straight to the chip that holds the expert (decode).
ALL_TO_ALL_KERNELS = ("normal", "low-latency")


def expert_all_to_all(model, tokens_per_chip, n_chips, chip, domain=None, dispatch_bytes=1,
                      combine_bytes=2, kernels="normal"):
    """Dispatch and combine of one MoE layer over an EP group of ``n`` chips (uniform routing).

    Each chip holds ``tokens_per_chip`` tokens; each token's ``k`` experts are spread uniformly over
    the ``n`` chips, ``d`` per domain (``domain``, default the chip's ``scale_up_domain``, capped at
    ``n``), ``g = n/d`` domains. Each copy carries ``D`` numbers of ``dispatch_bytes`` out and
    ``combine_bytes`` back. Copies per token, by ``kernels`` (:data:`ALL_TO_ALL_KERNELS`):

    - ``"normal"`` (the default; DeepEP's README: "normal kernels with NVLink and RDMA
      forwarding", for training and prefill, aligned with DeepSeek-V3's node-limited routing):
      a token crosses once to each other domain its experts are in and is forwarded inside it,
      ``(g - 1)(1 - (1 - 1/g)^k)`` off-domain copies over the scale-out network; inside its own
      domain it goes once to each other chip holding one of its experts,
      ``(d - 1)(1 - (1 - 1/n)^k)`` copies over the scale-up network (the forwarding of
      arrivals inside the destination domain is left out);
    - ``"low-latency"`` (DeepEP's "low-latency kernels with pure RDMA", for decode): one copy per
      (token, expert), no forwarding: ``k (1 - d/n)`` off-domain copies and ``k (d - 1)/n``
      in-domain ones (sent over the scale-up network; DeepEP's first release sent these over
      RDMA too, which only adds to the scale-out time).

    The two networks run in parallel, so the time is the larger of the two. Defaults match
    DeepSeek's serving: fp8 dispatch (1 B), bf16 combine (2 B). Hop latency, the scales of fp8
    and a hot expert are left out, so the time is a lower bound.
    """
    if not model.is_moe:
        raise ValueError(f"model: {model.name!r} is dense; it has no expert all-to-all")
    t = positive("tokens_per_chip", tokens_per_chip, allow_zero=True)
    n = n_chips_check(n_chips)
    d = _domain_size(chip, None) if domain is None else n_chips_check(domain, "domain")
    bd = positive("dispatch_bytes", dispatch_bytes)
    bc = positive("combine_bytes", combine_bytes)
    choice("kernels", kernels, ALL_TO_ALL_KERNELS)
    d = np.minimum(d, n)
    k = model.experts_per_token
    g = n / d
    if kernels == "normal":
        in_copies = (d - 1.0) * (1.0 - (1.0 - 1.0 / n) ** k)
        out_copies = np.where(g > 1, (g - 1.0) * (1.0 - (1.0 - 1.0 / np.maximum(g, 1.0)) ** k),
                              0.0)
    else:
        in_copies = k * (d - 1.0) / n
        out_copies = k * (1.0 - d / n)
    per_copy = t * model.d_model * (bd + bc)
    up_bytes, out_bytes = per_copy * in_copies, per_copy * out_copies
    up_bw = chip.scale_up_bandwidth
    if not up_bw:
        raise ValueError(f"chip: {chip.name!r} has no scale_up_bandwidth figure")
    up_t = up_bytes / up_bw
    if np.any(np.asarray(out_bytes) > 0):
        if not chip.scale_out_bandwidth:
            raise ValueError(f"chip: {chip.name!r} has no scale_out_bandwidth figure, and "
                             f"n_chips={float(np.max(n)):g} exceeds "
                             f"its domain of {float(np.min(d)):g}")
        out_t = out_bytes / chip.scale_out_bandwidth
    else:
        out_t = 0.0 * out_bytes
    return AllToAll(_out(up_bytes), _out(out_bytes), _out(up_t), _out(out_t),
                    _out(np.maximum(up_t, out_t)), _out(out_copies + 0.0 * up_t))


def two_batch_overlap_time(compute_time, comm_time, n_layers=1):
    """A step of ``n_layers`` layers, each with ``compute_time`` and ``comm_time`` for the whole
    batch, run as two micro-batches whose communication hides behind each other's compute.

    Serial: ``L (t_comp + t_comm)``. Overlapped: ``L max(t_comp, t_comm) + min(t_comp,
    t_comm)/2``. Each micro-batch carries half the work, so per layer each stream has two tasks
    of half its time; the longer stream runs its ``2L`` half-tasks back to back, ``L max``, and
    one half-task of the shorter stream cannot overlap anything (the first micro-batch's compute
    before any communication starts, or the last one's communication after the compute ends):
    ``min/2``. A lower bound on the overlapped step: it assumes the two streams do not slow each
    other (in practice communication kernels take SMs from compute).
    """
    c = positive("compute_time", compute_time, allow_zero=True)
    m = positive("comm_time", comm_time, allow_zero=True)
    L = positive("n_layers", n_layers, integer=True)
    return _out(L * np.maximum(c, m) + np.minimum(c, m) / 2.0)


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("moe_rack", "total parameters one scale-up domain holds",
               r"N_\text{tot} \le n_\text{dom} M \mu (1 - \kappa) / b_w",
               r"GB200 NVL72, fp8 weights, half the HBM for the KV cache ($\kappa = 1/2$, "
               r"$\mu = 1$)",
               lambda lm: lm.moe.max_total_params(lm.chip("GB200"), weight_bytes=1,
                                                  kv_fraction=0.5),
               lambda n: f"{fmt_count(n)} parameters",
               by_formula=lambda lm: (c := lm.chip("GB200")).scale_up_domain * c.hbm_capacity
               * 1.0 * (1 - 0.5) / 1),
)

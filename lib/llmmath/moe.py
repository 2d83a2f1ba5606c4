"""Mixture of experts across a scale-up domain: what bounds total and active parameters, how
experts are placed on chips, what the all-to-all costs inside and outside a domain, and what
routing imbalance does to the step.

The episode's rule: **active parameters are bounded by compute cost, total parameters
by the memory of one scale-up domain**. Both sides are here:

- :func:`max_total_params`: ``N_tot <= n M f (1 - kv_fraction) / b_w`` for a domain of ``n``
  chips of ``M`` bytes;
- :func:`max_active_params`: at a compute-bound step a token costs ``2 N_act / (C e)`` chip-seconds,
  so a target price per token bounds ``N_act``;
- :func:`critical_batch_for_sparsity`: the weights-only critical batch ``(C/W)(b_w/2) s`` with
  ``s = N_tot/N_act`` (the episode's "300 x sparsity").

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

from ._check import fraction, number, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out
from ._summary import SummaryRow
from .cost import price_per_chip_second
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
    "expected_max_load",
    "imbalance_factor",
    "AllToAll",
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
        name="Rubin Ultra NVL576 (announced)", scale_up_domain=144, hbm_capacity=1e12, year=2027,
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

    ``N_tot,max = n M f (1 - kv_fraction) / b_w``: ``n`` chips (default: the chip's domain) of
    ``M`` bytes, a usable fraction ``f`` (``memory_fraction``), a share ``kv_fraction`` kept for
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

    At or above the critical batch a token costs ``2 N_act / (C e)`` chip-seconds, so at ``p``
    USD per chip-second ``N_act,max = (cost per token) C e / (2 p)``. This is the compute side of
    the episode's rule: total parameters do not enter (they set the batch at which the bound is
    reached, not the cost there). ``price_per_chip_hour`` defaults to the catalogue price.
    """
    c = positive("cost_per_million_tokens", cost_per_million_tokens)
    e = fraction("compute_efficiency", compute_efficiency)
    p = price_per_chip_second(chip, price_per_chip_hour)
    return _out(c / 1e6 * chip.peak(dtype) * e / (2.0 * p))


def compute_cost_per_million_tokens(active_params, chip, dtype="bf16", compute_efficiency=1.0,
                                    price_per_chip_hour=None):
    """Compute-bound floor of the cost of a million tokens: ``1e6 x 2 N_act p / (C e)`` USD."""
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


def expert_all_to_all(model, tokens_per_chip, n_chips, chip, domain=None, dispatch_bytes=1,
                      combine_bytes=2):
    """Dispatch and combine of one MoE layer over an EP group of ``n`` chips (uniform routing).

    Each chip holds ``tokens_per_chip`` tokens; each token's ``k`` experts are spread uniformly over
    the ``n`` chips. A token is sent once to each other chip its experts sit on (and once per other
    domain for the off-domain part, forwarded inside the domain, as DeepSeek's node-limited
    dispatch does), ``D`` numbers of ``dispatch_bytes`` out and ``combine_bytes`` back:

    - in-domain copies per token ``(d - 1)(1 - (1 - 1/n)^k)`` over the scale-up network;
    - off-domain copies per token ``(g - 1)(1 - (1 - 1/g)^k)`` with ``g = n/d`` domains, over the
      scale-out network.

    ``d`` is ``domain`` (default the chip's ``scale_up_domain``), capped at ``n``. Defaults match
    DeepSeek's serving: fp8 dispatch (1 B), bf16 combine (2 B). Hop latency, the scales of fp8 and
    a hot expert are left out, so the time is a lower bound.
    """
    if not model.is_moe:
        raise ValueError(f"model: {model.name!r} is dense; it has no expert all-to-all")
    t = positive("tokens_per_chip", tokens_per_chip, allow_zero=True)
    n = n_chips_check(n_chips)
    d = _domain_size(chip, None) if domain is None else n_chips_check(domain, "domain")
    bd = positive("dispatch_bytes", dispatch_bytes)
    bc = positive("combine_bytes", combine_bytes)
    d = np.minimum(d, n)
    k = model.experts_per_token
    g = n / d
    in_copies = (d - 1.0) * (1.0 - (1.0 - 1.0 / n) ** k)
    out_copies = np.where(g > 1, (g - 1.0) * (1.0 - (1.0 - 1.0 / np.maximum(g, 1.0)) ** k), 0.0)
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

    Serial: ``L (c + m)``. Overlapped: ``L max(c, m) + min(c, m)/2``: in steady state the longer
    of the two streams sets the pace; only the first half-batch's start (or the last one's end)
    is exposed. A lower bound on the overlapped step: it assumes the two streams do not slow
    each other (in practice communication kernels take SMs from compute).
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

"""Throughput and cost per token from a step bound.

A step of ``n`` chips that takes ``t`` seconds and yields ``T`` tokens costs
``n t p / T`` dollars per token at ``p`` dollars per chip-second. Pope et al. (2022, §4.4)
measure the same thing in chip-seconds per token, ``n t / T``, which is proportional to
operating cost and inversely proportional to MFU. Because the step times are lower bounds,
these throughputs are upper bounds and these costs lower bounds.

Dividing the decode bound by the batch turns the weight fetch into a hyperbola in B (the
weights are shared) and leaves compute and KV traffic as flat floors per token, so the cost
per token falls with batch until the chips' memory is full.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._check import positive
from .roofline import Step, critical_batch, decode_step, prefill_step

__all__ = [
    "tokens_per_second",
    "tokens_per_second_per_chip",
    "chip_seconds_per_token",
    "cost_per_token",
    "cost_per_million_tokens",
    "Frontier",
    "latency_cost_frontier",
    "InputOutputCost",
    "input_output_cost",
    "weight_amortising_batch",
]


def _out(x):
    arr = np.asarray(x, dtype=float)
    return float(arr) if arr.ndim == 0 else arr


def _price_per_second(step_or_chip, price_per_chip_hour):
    if price_per_chip_hour is not None:
        return positive("price_per_chip_hour", price_per_chip_hour) / 3600.0
    chip = getattr(step_or_chip, "chip", step_or_chip)
    if chip is None or getattr(chip, "price_per_hour", None) is None:
        name = getattr(chip, "name", "?")
        raise ValueError(f"price_per_chip_hour: got None and chip {name!r} has no price_per_hour; "
                         "pass a price in USD per chip-hour")
    return chip.price_per_hour / 3600.0


def tokens_per_second(step: Step):
    """Tokens per second of one replica: ``tokens / time`` (an upper bound, since time is a lower bound)."""
    return _out(np.asarray(step.tokens) / np.asarray(step.time))


def tokens_per_second_per_chip(step: Step):
    """Tokens per second per chip: ``tokens / (time x n_chips)``."""
    return _out(np.asarray(step.tokens) / (np.asarray(step.time) * np.asarray(step.n_chips)))


def chip_seconds_per_token(step: Step):
    """Pope et al.'s cost metric: ``n_chips x time / tokens`` (chip-seconds per token)."""
    return _out(np.asarray(step.n_chips) * np.asarray(step.time) / np.asarray(step.tokens))


def cost_per_token(step: Step, price_per_chip_hour=None):
    """USD per token: ``n t p / T``, with ``p`` in USD per chip-hour (default: the chip's price).

    ValueError when no price is given and the step's chip has none.
    """
    return _out(chip_seconds_per_token(step) * _price_per_second(step, price_per_chip_hour))


def cost_per_million_tokens(step: Step, price_per_chip_hour=None):
    """USD per million tokens: ``1e6 x cost_per_token``."""
    return _out(1e6 * np.asarray(cost_per_token(step, price_per_chip_hour)))


@dataclass(frozen=True)
class Frontier:
    """A latency-cost sweep over batch (arrays of one shape, SI units).

    - ``batch`` (sequences), ``step_time`` (s, lower bound)
    - ``tokens_per_second_per_user``: ``1 / step_time`` (each sequence gets one token per step)
    - ``tokens_per_second``: ``batch / step_time`` for the replica
    - ``cost_per_million_tokens`` (USD), ``bound`` ("compute"/"memory")
    - ``fits``: whether weights + KV caches fit in the replica's HBM (x ``memory_fraction``)
    """

    batch: np.ndarray
    step_time: np.ndarray
    tokens_per_second_per_user: np.ndarray
    tokens_per_second: np.ndarray
    cost_per_million_tokens: np.ndarray
    bound: np.ndarray
    fits: np.ndarray


def latency_cost_frontier(model, chip, batches, context, n_chips=1, weight_bytes=2, kv_bytes=2,
                          dtype="bf16", price_per_chip_hour=None, overlap="step",
                          compute_efficiency=1.0, memory_efficiency=1.0, memory_fraction=1.0):
    """Decode speed per user against cost per token as the batch grows.

    Each point is a :func:`~llmmath.roofline.decode_step` bound: per-user speed ``1/t``,
    replica throughput ``B/t`` and ``$/Mtok = 1e6 n t p / B``. Points whose memory
    (``N_tot b_w + B kv_held(S)``) exceeds ``n M x memory_fraction`` are kept but flagged
    ``fits=False``.
    """
    batches = np.atleast_1d(positive("batches", batches))
    step = decode_step(model, chip, batches, context, n_chips=n_chips, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype, overlap=overlap,
                       compute_efficiency=compute_efficiency, memory_efficiency=memory_efficiency)
    held = model.total_params * weight_bytes + batches * model.kv_cache_bytes(context, kv_bytes)
    fits = held <= np.asarray(n_chips) * chip.hbm_capacity * memory_fraction
    t = np.asarray(step.time)
    return Frontier(
        batch=np.asarray(step.batch), step_time=t,
        tokens_per_second_per_user=1.0 / t,
        tokens_per_second=np.asarray(step.batch) / t,
        cost_per_million_tokens=np.atleast_1d(cost_per_million_tokens(step, price_per_chip_hour)),
        bound=np.atleast_1d(step.bound),
        fits=np.broadcast_to(fits, t.shape).copy(),
    )


@dataclass(frozen=True)
class InputOutputCost:
    """Cost of input (prefill) and output (decode) tokens, USD per million tokens."""

    input_per_million: float | np.ndarray
    output_per_million: float | np.ndarray
    output_to_input: float | np.ndarray  # output price / input price
    prefill: Step
    decode: Step


def input_output_cost(model, chip, prompt, batch, context, n_chips=1, weight_bytes=2, kv_bytes=2,
                      dtype="bf16", price_per_chip_hour=None, prefill_batch=1,
                      compute_efficiency=1.0, memory_efficiency=1.0):
    """Lower-bound $/Mtok for input tokens (prefill) and output tokens (decode).

    Input: ``prefill_batch`` prompts of ``prompt`` tokens each in one pass
    (:func:`~llmmath.roofline.prefill_step`); output: a decode step of ``batch`` sequences at
    ``context`` tokens (:func:`~llmmath.roofline.decode_step`). Prefill is compute-bound and
    decode memory-bound, so output costs several times input: the ratio API prices show.
    """
    pre = prefill_step(model, chip, prefill_batch, prompt, n_chips=n_chips, weight_bytes=weight_bytes,
                       kv_bytes=kv_bytes, dtype=dtype, compute_efficiency=compute_efficiency,
                       memory_efficiency=memory_efficiency)
    dec = decode_step(model, chip, batch, context, n_chips=n_chips, weight_bytes=weight_bytes,
                      kv_bytes=kv_bytes, dtype=dtype, compute_efficiency=compute_efficiency,
                      memory_efficiency=memory_efficiency)
    i = cost_per_million_tokens(pre, price_per_chip_hour)
    o = cost_per_million_tokens(dec, price_per_chip_hour)
    return InputOutputCost(i, o, _out(np.asarray(o) / np.asarray(i)), pre, dec)


def weight_amortising_batch(model, chip, weight_bytes=2, dtype="bf16", context=0, kv_bytes=2):
    """Alias of :func:`llmmath.roofline.critical_batch`: the batch where weight reads stop dominating."""
    return critical_batch(model, chip, weight_bytes=weight_bytes, dtype=dtype, context=context,
                          kv_bytes=kv_bytes)


# --- chapter 6 additions ---------------------------------------------------------------------
# Prefill vs decode and what API prices reveal (book/06_prefill_prices.ipynb): the KV bytes per
# token implied by a long-context price step, and the cost of holding a prompt cache in a
# memory tier (HBM, DRAM, flash, disk), with each tier's figures as cited data.

_SECONDS_PER_YEAR = 365.25 * 86400.0


def kv_bytes_from_price_step(active_params, context, ops_per_byte):
    """KV bytes per token at which a decode step's KV traffic equals its compute at ``context``.

    At large batch the weights are amortised, so per sequence and step the KV read
    ``S b_kv / W`` balances the compute ``2 N_act / C`` when ``b_kv = 2 N_act / (R S)``, with
    ``R = C / W`` the chip's FLOP per byte. Read backwards, a price step at context ``S`` (the
    provider's crossover) reveals ``b_kv``. The episode's ``N_act / (300 S)`` is this with
    ``R = 600`` FLOP/byte (300 multiply-adds per byte): a Blackwell GPU in fp8 (GB200: 625).
    It is the inverse of :func:`llmmath.roofline.critical_context` for dense attention.
    """
    n = positive("active_params", active_params)
    s = positive("context", context)
    r = positive("ops_per_byte", ops_per_byte)
    return _out(2.0 * n / (r * s))


@dataclass(frozen=True)
class MemoryTier:
    """One storage device a KV cache can wait in: capacity, read bandwidth and cost, SI units.

    ``price_per_hour`` is what one device costs per hour: a rental price for HBM (the whole
    accelerator, since HBM cannot be rented alone) or a purchase price amortised over
    ``lifetime_years`` for DRAM, flash and disk (no power, host, network or margin: a floor).
    """

    name: str
    capacity: float  # B per device
    bandwidth: float  # B/s per device (sequential read)
    price_per_hour: float  # USD per device-hour
    device: str = ""  # the device the figures describe
    date: str = ""  # when the price was seen, YYYY-MM
    source: str = ""  # citation key(s) for capacity and bandwidth
    price_source: str = ""  # citation key(s) for the price
    notes: str = ""

    def __post_init__(self):
        positive("capacity", self.capacity)
        positive("bandwidth", self.bandwidth)
        positive("price_per_hour", self.price_per_hour)

    @property
    def drain_time(self) -> float:
        """Seconds to read the whole device once: ``capacity / bandwidth``."""
        return self.capacity / self.bandwidth

    @property
    def price_per_second(self) -> float:
        return self.price_per_hour / 3600.0

    @property
    def hold_price(self) -> float:
        """USD per byte-second of capacity: ``device $/s / capacity`` (the episode's hold rate)."""
        return self.price_per_second / self.capacity

    @property
    def read_price(self) -> float:
        """USD per byte read, if the device did nothing but read: ``device $/s / bandwidth``."""
        return self.price_per_second / self.bandwidth

    @classmethod
    def from_chip(cls, chip, price_per_hour=None):
        """The HBM of an accelerator as a tier, priced at the chip's rental price (or the one given)."""
        price = price_per_hour if price_per_hour is not None else chip.price_per_hour
        if price is None:
            raise ValueError(f"price_per_hour: chip {chip.name!r} has no price; pass one in USD per hour")
        return cls(name="HBM", capacity=chip.hbm_capacity, bandwidth=chip.hbm_bandwidth,
                   price_per_hour=price, device=f"{chip.name} HBM (whole GPU rented)",
                   date=chip.price_date or "", source=chip.source, price_source=chip.price_source)


def amortised_price_per_hour(purchase_price, lifetime_years=5.0):
    """A purchase price spread evenly over ``lifetime_years`` (USD per hour)."""
    p = positive("purchase_price", purchase_price)
    y = positive("lifetime_years", lifetime_years)
    return _out(p / (y * _SECONDS_PER_YEAR / 3600.0))


def _tiers():
    from . import chips as _chips

    return {
        "HBM": MemoryTier.from_chip(_chips.get("H100-SXM")),
        "DRAM": MemoryTier(
            name="DRAM", capacity=32e9, bandwidth=5200e6 * 8,
            price_per_hour=amortised_price_per_hour(325.99, 5), device="one 32 GB DDR5-5200 module",
            date="2026-01", source="jedec_ddr5", price_source="techradar2026ddr5",
            notes=("Bandwidth: 5,200 MT/s x 8 bytes per transfer (a 64-bit channel) = 41.6 GB/s. "
                   "Price: $325.99 retail for a 32 GB DDR5-5200 module (Jan 2026, during the "
                   "2025-26 DRAM price rise), amortised over 5 years.")),
        "flash": MemoryTier(
            name="flash", capacity=30.72e12, bandwidth=14e9,
            price_per_hour=amortised_price_per_hour(10950, 5), device="one 30.72 TB PCIe Gen5 NVMe SSD",
            date="2026-03", source="storagereview2025micron9550", price_source="vdura2026ssdprices",
            notes=("Micron 9550 PRO class: up to 14 GB/s sequential read over PCIe Gen5 x4, 30.72 TB "
                   "top capacity, 5-year warranty. Price: $10,950 for a 30 TB TLC SSD in Q1 2026 "
                   "(up from $3,062 in Q2 2025), amortised over 5 years.")),
        "disk": MemoryTier(
            name="disk", capacity=24e12, bandwidth=285e6,
            price_per_hour=amortised_price_per_hour(24e3 * 0.014 * 1.35, 5),
            device="one 24 TB 7,200 rpm hard disk", date="2026-03",
            source="blocksandfiles2023exosx24", price_source="backblaze2022hddcost,vdura2026ssdprices",
            notes=("Seagate Exos X24: 24 TB, 285 MB/s maximum sustained rate, 5-year warranty. Price: "
                   "Backblaze's bulk $0.014/GB (Nov 2022) raised by the 35% HDD rise of Q2 2025-Q1 2026, "
                   "for 24 TB, amortised over 5 years. Random reads cost a ~10 ms seek each.")),
    }


MEMORY_TIERS: dict = _tiers()


def memory_tiers() -> list:
    """The four tiers, fastest first: HBM (an H100's), DRAM, flash, disk."""
    return list(MEMORY_TIERS.values())


def cache_hold_cost(nbytes, seconds, tier):
    """USD to keep ``nbytes`` in ``tier`` for ``seconds``: ``bytes x time x (device $/s / capacity)``.

    The episode's hold cost: it charges capacity only and assumes the device's bandwidth is
    not the binding constraint (true when ``seconds`` exceeds the tier's drain time).
    """
    b = positive("nbytes", nbytes, allow_zero=True)
    t = positive("seconds", seconds, allow_zero=True)
    return _out(b * t * tier.hold_price)


def cache_fetch_time(nbytes, tier):
    """Seconds to read ``nbytes`` back from ``tier`` at its full bandwidth: ``bytes / W``."""
    return _out(positive("nbytes", nbytes, allow_zero=True) / tier.bandwidth)


def cache_cost(nbytes, seconds, tier):
    """USD to hold ``nbytes`` for ``seconds`` in ``tier`` and read them back once.

    A device full of such data must both store it and deliver it: per byte it needs
    ``max(1/M, 1/(W t))`` devices, so the cost is ``bytes x device $/s x max(t/M, 1/W)``:
    a roofline in the lifetime ``t``. Below the drain time ``M/W`` the cost is flat (paying
    for bandwidth); above it, it grows with ``t`` (paying for capacity, the episode's
    :func:`cache_hold_cost`).
    """
    b = positive("nbytes", nbytes, allow_zero=True)
    t = positive("seconds", seconds, allow_zero=True)
    return _out(b * tier.price_per_second * np.maximum(t / tier.capacity, 1.0 / tier.bandwidth))


def cheapest_tier(seconds, tiers=None):
    """Name of the tier with the lowest :func:`cache_cost` for a cache entry living ``seconds``."""
    tiers = list(tiers) if tiers is not None else memory_tiers()
    t = np.asarray(positive("seconds", seconds), dtype=float)
    costs = np.stack([np.broadcast_to(cache_cost(1.0, t, tier), t.shape) for tier in tiers])
    names = np.array([tier.name for tier in tiers])
    best = names[np.argmin(costs, axis=0)]
    return str(best) if best.ndim == 0 else best


def tier_crossover(tier_a, tier_b):
    """Lifetime (s) beyond which ``tier_b`` holds-and-returns a byte more cheaply than ``tier_a``.

    Each tier's :func:`cache_cost` per byte is ``max(t h, r)`` with ``h`` its hold price and
    ``r`` its read price. If ``b`` is cheaper on both counts it wins at every lifetime (0);
    if it is dearer to hold it never wins (``inf``); otherwise ``a``'s rising capacity cost
    meets ``b``'s flat bandwidth floor at ``t = r_b / h_a``.
    """
    if tier_b.hold_price >= tier_a.hold_price:
        return float("inf")
    if tier_b.read_price <= tier_a.read_price:
        return 0.0
    return float(tier_b.read_price / tier_a.hold_price)


__all__ += ["kv_bytes_from_price_step", "MemoryTier", "MEMORY_TIERS", "memory_tiers",
            "amortised_price_per_hour", "cache_hold_cost", "cache_fetch_time", "cache_cost",
            "cheapest_tier", "tier_crossover"]


# --- chapter 4 additions ---------------------------------------------------------------------
# "Batching trades latency for token cost": what a faster tier of the same replica costs.

@dataclass(frozen=True)
class FastMode:
    """A faster tier served by shrinking the batch on the same chips (decode lower bounds).

    - ``batch``: the operating batch; ``fast_batch``: the (real-valued) batch whose step is
      ``speedup`` times shorter (``nan`` when ``speedup > max_speedup``)
    - ``price_ratio``: cost per token at ``fast_batch`` / at ``batch``; on fixed chips it is
      ``(batch / fast_batch) / speedup``
    - ``max_speedup``: step time at ``batch`` / at batch 1: no batch makes a user faster
    """

    batch: float
    speedup: float
    fast_batch: float
    price_ratio: float
    max_speedup: float


def fast_mode(model, chip, batch, speedup, context, n_chips=1, weight_bytes=2, kv_bytes=2,
              dtype="bf16", overlap="step"):
    """Sell ``speedup`` times the per-user speed by running a smaller batch on the same replica.

    Speed per user is ``1 / t(B)`` and cost per token ``n p t(B) / B``; ``t`` grows with ``B``, so
    the fast batch solves ``t(B_f) = t(B) / speedup`` (bisection in log B). The price ratio is
    ``(t(B_f) / B_f) / (t(B) / B)``. Beyond ``max_speedup = t(B) / t(1)`` only more chips per
    replica, lower precision or speculative decoding help.
    """
    batch = float(positive("batch", batch))
    speedup = float(positive("speedup", speedup))
    kw = dict(n_chips=n_chips, weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dtype, overlap=overlap)
    t0 = decode_step(model, chip, batch, context, **kw).time
    t1 = decode_step(model, chip, 1.0, context, **kw).time
    max_speedup = t0 / t1
    if speedup > max_speedup * (1 + 1e-12) or speedup < 1:
        return FastMode(batch, speedup, float("nan"), float("nan"), max_speedup)
    target = t0 / speedup
    lo, hi = 0.0, np.log(batch)
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if decode_step(model, chip, np.exp(mid), context, **kw).time > target:
            hi = mid
        else:
            lo = mid
    bf = float(np.exp(lo))
    tf = decode_step(model, chip, bf, context, **kw).time
    return FastMode(batch, speedup, bf, (tf / bf) / (t0 / batch), max_speedup)


__all__ += ["FastMode", "fast_mode"]


def chunked_prefill_tokens(model, chip, batch, context, n_chips=1, weight_bytes=2, kv_bytes=2,
                           dtype="bf16"):
    """Prompt tokens a memory-bound decode step could also prefill without getting longer (bound).

    A decode step of ``batch`` sequences lasts ``t = max(compute, memory)``; while it waits on
    memory the chips could do ``n C t`` FLOPs but do only the decode's. Chunked prefill fills
    the gap with prompt tokens at ``2 N_act`` FLOPs each: ``(t / t_compute - 1) B`` tokens
    (0 when the step is compute-bound). Ignores the chunk's own KV writes and attention FLOPs.
    """
    from .roofline import decode_step

    s = decode_step(model, chip, batch, context, n_chips=n_chips, weight_bytes=weight_bytes,
                    kv_bytes=kv_bytes, dtype=dtype)
    return _out(np.maximum(np.asarray(s.time) / np.asarray(s.compute_time) - 1.0, 0.0)
                * np.asarray(s.batch))


def kv_transfer_time(model, prompt, bandwidth, kv_bytes=2):
    """Seconds to ship one prompt's KV cache from a prefill node to a decode node.

    ``kv_held(P) / bandwidth``: the price of disaggregating prefill and decode onto different
    chips. ``bandwidth`` in bytes/s (e.g. a chip's ``scale_out_bandwidth`` times the chips sending).
    """
    return _out(model.kv_cache_bytes(positive("prompt", prompt), kv_bytes) / positive("bandwidth", bandwidth))


@dataclass(frozen=True)
class PriceSheet:
    """One model's API prices, USD per million tokens, as published on ``date`` (YYYY-MM)."""

    model: str
    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None  # 5-minute cache write, where priced separately
    long_context: int | None = None  # prompt length above which the long-context prices apply
    long_input: float | None = None
    long_output: float | None = None
    date: str = ""
    source: str = ""

    @property
    def output_to_input(self) -> float:
        return self.output / self.input

    @property
    def cached_to_input(self):
        return None if self.cached_input is None else self.cached_input / self.input


PRICE_SHEETS = [
    PriceSheet("Gemini 3.1 Pro", input=2.0, output=12.0, cached_input=0.20, long_context=200_000,
               long_input=4.0, long_output=18.0, date="2026-03",
               source="glbgpt2026gemini31,laozhang2026gemini31,cloudprice2026gemini31"),
    PriceSheet("Claude Opus (4.x)", input=5.0, output=25.0, cached_input=0.50, cache_write=6.25,
               date="2026-06", source="anthropic_prompt_caching"),
    PriceSheet("GPT-5.5", input=5.0, output=30.0, cached_input=0.50, date="2026-06",
               source="morph2026openaipricing"),
    PriceSheet("GPT-5.4", input=2.5, output=15.0, cached_input=0.25, date="2026-06",
               source="morph2026openaipricing"),
]


__all__ += ["chunked_prefill_tokens", "kv_transfer_time", "PriceSheet", "PRICE_SHEETS"]

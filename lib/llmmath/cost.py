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

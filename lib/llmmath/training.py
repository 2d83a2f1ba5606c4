"""Training compute, time, utilisation and memory; compute-optimal and over-trained token counts.

- Training FLOPs: ``6 N_act D`` (forward 2, backward 4 FLOP per parameter per token;
  Kaplan et al. 2020), ``8 N_act D`` when every activation is recomputed in the backward pass.
  Attention's context-dependent FLOPs are left out, as in the published totals.
- MFU (model FLOPs utilisation) counts only the model's FLOPs, never recomputation:
  ``MFU = f N tokens / (n C t)`` with ``f = 6`` for training and ``f = 2`` for inference
  (Pope et al. 2022).
- Compute-optimal data: ``D ~ 20 N`` (Hoffmann et al. 2022).

A ``model`` argument may be a :class:`~llmmath.models.Model` (its ``active_params`` are used) or
a plain parameter count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._check import choice, fraction, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out

__all__ = [
    "training_flops",
    "training_time",
    "mfu",
    "inference_mfu",
    "MemoryPerParam",
    "training_memory_per_param",
    "training_memory",
    "compute_optimal_tokens",
    "compute_optimal_model",
    "overtraining_factor",
]

CHINCHILLA_TOKENS_PER_PARAM = 20.0


def _params(model, which="active_params"):
    if hasattr(model, which):
        return float(getattr(model, which))
    return positive("model (parameter count)", model)


def training_flops(model, tokens, recompute=False):
    """Training FLOPs: ``6 N_act D``, or ``8 N_act D`` with full activation recomputation.

    ``tokens`` is D; N_act is the model's ``active_params`` (embeddings included, as in the
    published totals such as GPT-3's 3.14e23 FLOP).
    """
    tokens = positive("tokens", tokens)
    per = 8.0 if recompute else 6.0
    return _out(per * _params(model) * tokens)


def training_time(model, tokens, chip, n_chips, mfu, dtype="bf16"):
    """Wall-clock seconds to train on ``tokens``: ``6 N_act D / (n C MFU)``.

    ``mfu`` is model FLOPs utilisation, which already excludes recomputation, so the time does
    not depend on whether activations are recomputed (a run that recomputes reaches a lower MFU).
    """
    n_chips = n_chips_check(n_chips)
    mfu = fraction("mfu", mfu)
    return _out(training_flops(model, tokens) / (n_chips * chip.peak(dtype) * mfu))


def mfu(model, tokens, time, chip, n_chips=1, dtype="bf16", flops_per_param=6):
    """Model FLOPs utilisation of a reported run: ``f N tokens / (n C t)``.

    ``flops_per_param`` is 6 for training (forward + backward) and 2 for inference
    (see :func:`inference_mfu`). A result above 1 means the reported figures are impossible on
    that hardware.
    """
    tokens = positive("tokens", tokens)
    time = positive("time", time)
    n_chips = n_chips_check(n_chips)
    flops_per_param = positive("flops_per_param", flops_per_param)
    return _out(flops_per_param * _params(model) * tokens / (n_chips * chip.peak(dtype) * time))


def inference_mfu(model, tokens, time, chip, n_chips=1, dtype="bf16"):
    """Inference MFU as Pope et al. (2022) define it: ``2 N tokens / (n C t)``.

    ``tokens`` are the tokens processed (prefill: batch x prompt) or generated (decode:
    batch x steps) in ``time`` seconds.
    """
    return mfu(model, tokens, time, chip, n_chips=n_chips, dtype=dtype, flops_per_param=2)


@dataclass(frozen=True)
class MemoryPerParam:
    """Bytes of training state per parameter (activations excluded)."""

    weights: float
    gradients: float
    master_weights: float
    optimizer_states: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.master_weights + self.optimizer_states


OPTIMIZER_STATES = {"adam": 2, "adamw": 2, "sgd-momentum": 1, "sgd": 0}  # fp32 tensors per param


def training_memory_per_param(optimizer="adam", mixed_precision=True) -> MemoryPerParam:
    """Bytes per parameter of weights, gradients, fp32 master copy and optimiser state.

    Mixed-precision Adam: bf16 weights 2 + bf16 gradients 2 + fp32 master 4 + Adam m and v
    8 = **16 B**. Pure fp32 Adam: 4 + 4 + 0 + 8 = 16 B as well. SGD with momentum keeps one
    fp32 state (4 B), plain SGD none.
    """
    choice("optimizer", optimizer, list(OPTIMIZER_STATES))
    states = 4.0 * OPTIMIZER_STATES[optimizer]
    if mixed_precision:
        return MemoryPerParam(weights=2.0, gradients=2.0, master_weights=4.0, optimizer_states=states)
    return MemoryPerParam(weights=4.0, gradients=4.0, master_weights=0.0, optimizer_states=states)


def training_memory(model, optimizer="adam", mixed_precision=True):
    """Bytes of training state for all parameters: ``N_tot x bytes per param`` (no activations)."""
    per = training_memory_per_param(optimizer, mixed_precision).total
    return per * _params(model, "total_params")


def compute_optimal_tokens(model, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """Compute-optimal training tokens, ``D = 20 N`` (Hoffmann et al. 2022).

    N is ``active_params`` (Chinchilla fitted dense models, whose active and total counts are
    equal; for MoE this is the convention that matches ``6 N_act D``, and only a rough guide).
    """
    tokens_per_param = positive("tokens_per_param", tokens_per_param)
    return _out(tokens_per_param * _params(model))


def compute_optimal_model(compute, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """(params, tokens) that spend ``compute`` FLOP compute-optimally: ``C = 6 N D`` with ``D = 20 N``.

    ``N = sqrt(C / (6 x 20))``, ``D = 20 N``.
    """
    compute = positive("compute", compute)
    tokens_per_param = positive("tokens_per_param", tokens_per_param)
    n = np.sqrt(compute / (6.0 * tokens_per_param))
    return _out(n), _out(tokens_per_param * n)


def overtraining_factor(model, tokens, tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """How many times the compute-optimal token count a run used: ``D / (20 N)``."""
    tokens = positive("tokens", tokens)
    return _out(tokens / compute_optimal_tokens(model, tokens_per_param))

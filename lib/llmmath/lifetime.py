"""A model's lifetime compute: pre-training, reinforcement learning (RL) and inference.

Three costs over one model's life, in FLOP counted at training's utilisation (a FLOP done at
decode's lower utilisation costs ``1 / decode_efficiency`` of them), following the episode
(Pope in the episode, ``dwarkesh2026pope`` in references.bib):

- pre-training: ``6 N_act D_pre`` (``llmmath.training.training_flops``);
- RL: ``r N_act D_RL / u`` with ``r`` between 2 (the rollout's forward pass) and 6 (a training
  step's), ``u`` decode's utilisation relative to training (rollouts are decoded);
- inference: ``2 N_act D_inf / u``.

When one cost falls as another rises, the episode's heuristic is to spend the same on each:
``6 D_pre = r D_RL / u = 2 D_inf / u`` gives ``D_pre = D_inf / (3 u)`` and ``D_RL = 2 D_inf / r``
(``equal_spend_tokens``). ``lifetime_optimum`` solves the same problem exactly for a
fixed loss, with the Chinchilla loss fit ``L(N, D) = E + A / N^alpha + B / D^beta``
(``SCALING_FITS``: Hoffmann et al. 2022's published fit and Besiroglu et al. 2024's refit of
the same data), so the equal-spend rule can be compared with the optimum of that model.

All token counts are tokens; compute is FLOP; ``seconds`` are seconds (a day is 86,400).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ._check import choice, fraction, positive
from ._check import scalar_or_array as _out
from ._summary import SummaryRow
from .training import CHINCHILLA_TOKENS_PER_PARAM, _params, overtraining_factor, training_flops

__all__ = [
    "ScalingFit", "SCALING_FITS", "CHINCHILLA_APPROACH1", "PUBLISHED_RUNS",
    "DECODE_EFFICIENCY", "RL_FLOPS_PER_PARAM", "EPISODE_DEPLOYMENT", "META_CHINCHILLA_8B_TOKENS",
    "CHINCHILLA_EXPERIMENTS",
    "served_tokens", "LifetimeCompute", "lifetime_compute", "EqualSpend", "equal_spend_tokens",
    "equal_spend_overtraining", "scaling_loss", "compute_optimal_ratio", "loss_gap",
    "tokens_for_loss", "LifetimeOptimum", "lifetime_optimum",
]

#: Decode's utilisation relative to prefill and training that the episode assumes in its
#: worked problem (1/3); elsewhere it uses 1/5 (output tokens priced 3-5x input tokens).
DECODE_EFFICIENCY = 1.0 / 3.0
#: FLOP per active parameter per RL token in the episode's worked problem (its range is 2-6).
RL_FLOPS_PER_PARAM = 3.0

#: The episode's deployment arithmetic [dwarkesh2026pope]: one frontier model served at about 50
#: million tokens/s for two months (60 days), a lab's models at about 500 million tokens/s in
#: all, a 100B-active model, a rumoured pre-training run of 150 trillion tokens (which it flags
#: as not well sourced), and its round "two hundred trillion" for the tokens served.
EPISODE_DEPLOYMENT = {"tokens_per_second": 50e6, "days": 60, "lab_tokens_per_second": 500e6,
                      "active_params": 100e9, "rumoured_pretraining_tokens": 150e12,
                      "round_served_tokens": 200e12}
#: Meta: "the Chinchilla-optimal amount of training compute for an 8B parameter model corresponds
#: to ~200B tokens" [meta_llama3_blog].
META_CHINCHILLA_8B_TOKENS = 200e9
#: Chinchilla's experiments: dense models of 70M to 16B parameters on at most 500B tokens
#: [hoffmann2022chinchilla].
CHINCHILLA_EXPERIMENTS = {"params": (70e6, 16e9), "max_tokens": 500e9}


@dataclass(frozen=True)
class ScalingFit:
    """``L(N, D) = E + A / N^alpha + B / D^beta`` (nats per token); ``source`` its citation key."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float
    source: str


#: Chinchilla's parametric loss fit (Hoffmann et al. 2022, eq. 10: Approach 3, rounded as
#: published) and Besiroglu et al. 2024's refit of the same experiments (their Table 1).
SCALING_FITS = {
    "hoffmann": ScalingFit(1.69, 406.4, 410.7, 0.34, 0.28, "hoffmann2022chinchilla"),
    "besiroglu": ScalingFit(1.8172, 482.01, 2085.43, 0.3478, 0.3658, "besiroglu2024chinchilla"),
}

#: Hoffmann et al. 2022, Table 3 (Approach 1): (parameters, compute-optimal training tokens).
CHINCHILLA_APPROACH1 = (
    (400e6, 8.0e9), (1e9, 20.2e9), (10e9, 205.1e9), (67e9, 1.5e12), (175e9, 3.7e12),
    (280e9, 5.9e12), (520e9, 11.0e12), (1e12, 21.2e12), (10e12, 216.2e12),
)

#: Published pre-training runs: (name, active parameters or a catalogue model name, tokens,
#: source). Catalogue names resolve to the counted active parameters.
PUBLISHED_RUNS = (
    ("GPT-3 175B", "GPT-3-175B", 300e9, "brown2020gpt3"),
    ("PaLM 540B", "PaLM-540B", 780e9, "chowdhery2022palm"),
    ("Chinchilla 70B", 70e9, 1.4e12, "hoffmann2022chinchilla"),
    ("Llama 3.1 405B", "Llama-3.1-405B", 15.6e12, "llama3_herd"),
    ("Llama 3 70B", "Llama-3-70B", 15e12, "meta_llama3_blog"),
    ("Llama 3 8B", "Llama-3-8B", 15e12, "meta_llama3_blog"),
    ("DeepSeek-V3", "DeepSeek-V3", 14.8e12, "deepseek_v3"),
    ("Qwen3-235B-A22B", "Qwen3-235B-A22B", 36e12, "qwen3_report"),
)


def _fit(fit):
    return SCALING_FITS[choice("fit", fit, list(SCALING_FITS))]


def _decode(decode_efficiency):
    return fraction("decode_efficiency", decode_efficiency)


def served_tokens(tokens_per_second, seconds):
    """Tokens a deployment serves: ``tokens_per_second x seconds`` (60 days = 5,184,000 s)."""
    tokens_per_second = positive("tokens_per_second", tokens_per_second)
    seconds = positive("seconds", seconds)
    return _out(np.multiply(tokens_per_second, seconds))


@dataclass(frozen=True)
class LifetimeCompute:
    """The three costs of one model's life, FLOP at training's utilisation."""

    pretrain: float
    rl: float
    inference: float

    @property
    def total(self):
        return self.pretrain + self.rl + self.inference

    @property
    def shares(self):
        """(pre-training, RL, inference) as fractions of the total."""
        t = self.total
        return self.pretrain / t, self.rl / t, self.inference / t


def lifetime_compute(model, pretrain_tokens, rl_tokens, inference_tokens,
                     decode_efficiency=DECODE_EFFICIENCY, rl_flops_per_param=RL_FLOPS_PER_PARAM):
    """Pre-training, RL and inference compute over a model's life (FLOP at training's utilisation).

    ``6 N D_pre``, ``r N D_RL / u`` and ``2 N D_inf / u``, with ``u = decode_efficiency`` and
    ``r = rl_flops_per_param``; ``N`` is the model's ``active_params`` (or a count). ``rl_tokens``
    may be 0 (no RL). Prefill's higher utilisation, attention's FLOPs and the inference of
    other models served on the same chips are left out.
    """
    n = _params(model)
    u = _decode(decode_efficiency)
    r = positive("rl_flops_per_param", rl_flops_per_param)
    rl_tokens = positive("rl_tokens", rl_tokens, allow_zero=True)
    inference_tokens = positive("inference_tokens", inference_tokens)
    pre = training_flops(n, positive("pretrain_tokens", pretrain_tokens))  # 6 N D_pre
    return LifetimeCompute(pretrain=_out(pre), rl=_out(r * n * np.asarray(rl_tokens) / u),
                           inference=_out(2.0 * n * np.asarray(inference_tokens) / u))


@dataclass(frozen=True)
class EqualSpend:
    """Token counts that make pre-training, RL and inference cost the same."""

    pretrain_tokens: float
    rl_tokens: float
    inference_tokens: float


def equal_spend_tokens(inference_tokens, decode_efficiency=DECODE_EFFICIENCY,
                       rl_flops_per_param=RL_FLOPS_PER_PARAM):
    """The episode's heuristic: ``6 D_pre = r D_RL / u = 2 D_inf / u``.

    ``D_pre = D_inf / (3 u)`` and ``D_RL = 2 D_inf / r``: at ``u = 1/3`` and ``r = 3``,
    ``D_pre = D_inf = 1.5 D_RL``; at ``u = 1/5``, ``D_pre = 5/3 D_inf``. The model's size cancels.
    """
    d_inf = positive("inference_tokens", inference_tokens)
    u = _decode(decode_efficiency)
    r = positive("rl_flops_per_param", rl_flops_per_param)
    return EqualSpend(pretrain_tokens=_out(np.asarray(d_inf) / (3.0 * np.asarray(u))),
                      rl_tokens=_out(2.0 * np.asarray(d_inf) / np.asarray(r)),
                      inference_tokens=_out(d_inf))


def equal_spend_overtraining(model, inference_tokens, decode_efficiency=DECODE_EFFICIENCY,
                             tokens_per_param=CHINCHILLA_TOKENS_PER_PARAM):
    """How far past compute-optimal the equal-spend rule trains: ``D_inf / (3 u) / (20 N_act)``."""
    d_pre = equal_spend_tokens(inference_tokens, decode_efficiency).pretrain_tokens
    return overtraining_factor(model, d_pre, tokens_per_param)


# ----- the Chinchilla loss fit ------------------------------------------------------------------

def scaling_loss(active_params, tokens, fit="hoffmann"):
    """Loss the fit predicts, ``E + A / N^alpha + B / D^beta`` (nats per token).

    Fitted on dense models of 70M to 16B parameters and 5B to 500B tokens: far outside that box
    (hundreds of tokens per parameter, mixtures of experts) it is an extrapolation.
    """
    f = _fit(fit)
    n = positive("active_params", active_params)
    d = positive("tokens", tokens)
    return _out(f.E + f.A / np.power(n, f.alpha) + f.B / np.power(d, f.beta))


def _optimal_params(compute, f):
    g = (f.alpha * f.A / (f.beta * f.B)) ** (1.0 / (f.alpha + f.beta))
    return g * np.power(np.asarray(compute) / 6.0, f.beta / (f.alpha + f.beta))


def compute_optimal_ratio(compute, fit="hoffmann"):
    """Tokens per parameter at the fit's compute-optimal point for ``compute`` FLOP (``C = 6 N D``).

    ``N_opt = G (C/6)^(beta/(alpha+beta))`` with ``G = (alpha A / (beta B))^(1/(alpha+beta))``
    (Hoffmann et al. 2022, eq. 4), ``D_opt = C / (6 N_opt)``. The ratio drifts with compute when
    ``alpha != beta``.
    """
    f = _fit(fit)
    compute = positive("compute", compute)
    n = _optimal_params(compute, f)
    return _out(np.asarray(compute) / 6.0 / n**2)


def loss_gap(compute, tokens_per_param, fit="hoffmann"):
    """Loss given up by spending ``compute`` at ``tokens_per_param`` instead of the fit's optimum.

    ``N = sqrt(C / (6 k))``, ``D = k N``; returns ``L(N, D) - L(N_opt, D_opt)`` (nats, >= 0).
    """
    f = _fit(fit)
    compute = positive("compute", compute)
    k = positive("tokens_per_param", tokens_per_param)
    n = np.sqrt(np.asarray(compute) / (6.0 * np.asarray(k)))
    n_opt = _optimal_params(compute, f)
    d_opt = np.asarray(compute) / 6.0 / n_opt

    def loss(nn, dd):
        return f.A / np.power(nn, f.alpha) + f.B / np.power(dd, f.beta)

    return _out(np.maximum(loss(n, np.asarray(k) * n) - loss(n_opt, d_opt), 0.0))


def tokens_for_loss(active_params, loss, fit="hoffmann"):
    """Training tokens a model of ``active_params`` needs to reach ``loss`` under the fit.

    ``D = (B / (L - E - A / N^alpha))^(1/beta)``. A loss at or below ``E + A / N^alpha`` (what
    the model reaches with infinite data) is a ValueError naming ``loss``.
    """
    f = _fit(fit)
    n = positive("active_params", active_params)
    loss = positive("loss", loss)
    room = np.asarray(loss) - f.E - f.A / np.power(n, f.alpha)
    if np.any(room <= 0):
        floor = np.broadcast_to(f.E + f.A / np.power(n, f.alpha), np.shape(room))
        bad = np.argmax(np.ravel(room <= 0))
        raise ValueError(f"loss: got "
                         f"{float(np.ravel(np.broadcast_to(loss, np.shape(room)))[bad]):g}; "
                         f"a model of active_params = "
                         f"{float(np.ravel(np.broadcast_to(n, np.shape(room)))[bad]):g} "
                         f"reaches at best {float(np.ravel(floor)[bad]):.4f} under the "
                         f"{fit!r} fit (infinite data); allowed values are above that")
    return _out(np.power(f.B / room, 1.0 / f.beta))


@dataclass(frozen=True)
class LifetimeOptimum:
    """Three ways to reach one loss with ``D_inf`` tokens of inference (FLOP at training's rate).

    ``*_params`` and ``*_tokens``: active parameters and pre-training tokens; ``*_total``:
    ``6 N D_pre + 2 N D_inf / u``. ``optimum``: the least total (exact, for this model);
    ``equal``: pre-training and inference cost the same; ``chinchilla``: the least pre-training
    compute (inference ignored).
    """

    loss: float
    inference_tokens: float
    decode_efficiency: float
    fit: str
    optimum_params: float
    optimum_tokens: float
    optimum_total: float
    equal_params: float
    equal_tokens: float
    equal_total: float
    chinchilla_params: float
    chinchilla_tokens: float
    chinchilla_total: float

    @property
    def optimum_inference_over_pretrain(self):
        """Inference compute over pre-training compute at the exact optimum (1 under the rule)."""
        n = self.optimum_params
        return (2.0 * n * self.inference_tokens / self.decode_efficiency
                / (6.0 * n * self.optimum_tokens))

    @property
    def equal_excess(self):
        """How much more the equal-spend rule costs than the exact optimum (a fraction)."""
        return self.equal_total / self.optimum_total - 1.0


def _bisect_log(fn, lo, hi, iters=200):
    """x in [lo, hi] where fn changes sign from negative to positive (log bisection)."""
    for _ in range(iters):
        mid = math.sqrt(lo * hi)
        if fn(mid) < 0:
            lo = mid
        else:
            hi = mid
        if hi / lo < 1 + 1e-12:
            break
    return math.sqrt(lo * hi)


def lifetime_optimum(loss, inference_tokens, decode_efficiency=DECODE_EFFICIENCY, fit="hoffmann"):
    """Model size that reaches ``loss`` at the least pre-training plus inference compute.

    Along the fit's iso-loss curve ``D(N)`` (``tokens_for_loss``), minimise
    ``C(N) = 6 N D(N) + 2 N D_inf / u``. With ``x = (A / N^alpha) / (B / D^beta)`` (the
    parameter term of the loss over the data term), ``d ln(6 N D) / d ln N = 1 - (alpha/beta) x``,
    so at the optimum ``C_inf / C_pre = (alpha / beta) x - 1``: equal spend is exact only where
    that is 1. Solved by bisection on the derivative's sign (C is convex in ln N here); one
    configuration at a time.
    """
    f = _fit(fit)
    loss = positive("loss", loss, single=True)
    d_inf = positive("inference_tokens", inference_tokens, single=True)
    u = fraction("decode_efficiency", decode_efficiency)
    if isinstance(u, np.ndarray):
        raise TypeError("decode_efficiency: got an array; this function takes one number at a time")
    if loss <= f.E:
        raise ValueError(f"loss: got {loss:g}; the {fit!r} fit never goes below E = {f.E:g}; "
                         "allowed values are above that")
    c_inf = 2.0 * d_inf / u  # inference FLOP per active parameter
    n_min = (f.A / (loss - f.E)) ** (1.0 / f.alpha) * (1.0 + 1e-9)  # below: loss unreachable

    def x_ratio(n):  # parameter term over data term on the iso-loss curve
        p = f.A / n**f.alpha
        return p / (loss - f.E - p)

    def pre(n):
        return 6.0 * n * float(tokens_for_loss(n, loss, fit))

    def dtotal(n):  # d C / d ln N, up to the positive factor n
        return pre(n) * (1.0 - f.alpha / f.beta * x_ratio(n)) + c_inf * n

    hi = n_min * 2.0
    while x_ratio(hi) > f.beta / f.alpha:
        hi *= 2.0  # past the Chinchilla point both costs rise with N
    n_chin = _bisect_log(lambda n: 1.0 - f.alpha / f.beta * x_ratio(n), n_min, hi)
    n_opt = _bisect_log(dtotal, n_min, n_chin)  # dtotal < 0 near n_min, = c_inf n > 0 at n_chin
    top = n_chin
    for _ in range(200):
        if c_inf * top > pre(top):
            break
        top *= 2.0
    else:
        raise ValueError(f"inference_tokens: got {d_inf:g}; inference never costs as much as "
                         f"pre-training at loss {loss:g}; allowed values are larger")
    n_eq = _bisect_log(lambda n: c_inf * n - pre(n), n_min, top)
    total = {n: pre(n) + c_inf * n for n in (n_opt, n_eq, n_chin)}
    return LifetimeOptimum(
        loss=loss, inference_tokens=d_inf, decode_efficiency=u, fit=fit,
        optimum_params=n_opt, optimum_tokens=pre(n_opt) / (6 * n_opt), optimum_total=total[n_opt],
        equal_params=n_eq, equal_tokens=pre(n_eq) / (6 * n_eq), equal_total=total[n_eq],
        chinchilla_params=n_chin, chinchilla_tokens=pre(n_chin) / (6 * n_chin),
        chinchilla_total=total[n_chin])


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("overtraining", "equalise pre-training, RL and inference compute",
               r"6 N_\text{act} D_\text{pre} = \frac{f_\text{RL} N_\text{act} D_\text{RL}}{u} "
               r"= \frac{2 N_\text{act} D_\text{inf}}{u} \Rightarrow "
               r"D_\text{pre} = \frac{D_\text{inf}}{3 u}",
               r"the episode's 50M tokens/s for 60 days, $u = 1/3$",
               lambda lm: lm.lifetime.equal_spend_tokens(
                   lm.lifetime.served_tokens(50e6, 60 * 86400), 1 / 3).pretrain_tokens,
               lambda d: f"{d / 1e12:.0f}T pre-training tokens",
               by_formula=lambda lm: 50e6 * 60 * 86400 / (3 * (1 / 3))),
)

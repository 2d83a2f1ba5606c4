"""Figures: a model's lifetime compute (chapter 12, over-training beyond compute-optimal)."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter

from .. import models as _models
from ..cost import chip_hours_cost, chip_hours_cost_per_million_tokens
from ..lifetime import (
    DECODE_EFFICIENCY,
    PUBLISHED_RUNS,
    RL_FLOPS_PER_PARAM,
    SCALING_FITS,
    compute_optimal_ratio,
    equal_spend_overtraining,
    equal_spend_tokens,
    lifetime_compute,
    lifetime_optimum,
    loss_gap,
    scaling_loss,
    served_tokens,
    tokens_for_loss,
)
from ..training import compute_chip_hours, overtraining_factor
from ..units import fmt_count, fmt_percent, fmt_si, fmt_usd
from .explore import chip_picker, dropdown, explorer, model_picker, slider, steps
from .figure import builder, chip_of, model_of
from .labels import fmt_params, fmt_sci, loglim, place_labels, set_log
from .style import CYCLE, PALETTE, ROLE

__all__ = ["lifetime_cost_vs_params", "overtraining_vs_decode_efficiency", "overtraining_map",
           "loss_gap_vs_overtraining"]

DAY = 86400.0
#: How a figure names each loss fit of ``SCALING_FITS`` (its authors, not its code key).
FIT_NAMES = {"hoffmann": "Hoffmann et al.", "besiroglu": "Besiroglu et al."}


def _sci(v):
    """Compute for an axis: a power of ten in mathtext (``10^26``)."""
    return fmt_sci(v)


def _per_param(model):
    """(active parameters, name) of a model given by name, object or count."""
    if isinstance(model, str):
        model = _models.get(model)
    if hasattr(model, "active_params"):
        return float(model.active_params), model.name
    return float(model), f"{fmt_params(model)}-active model"


_ABOVE = [(0, 12, "center", "bottom"), (-8, 8, "right", "bottom"), (8, 8, "left", "bottom")]
_BELOW = [(8, -8, "left", "top"), (-8, -8, "right", "top"), (0, -12, "center", "top")]


# ----- total compute along one loss ----------------------------------------------------------

def _cost_setup(p):
    ax = p.ax
    p.pre, = ax.plot([], [], color=ROLE["compute"], lw=2.2,
                     label=r"pre-training, $6 N D_\mathrm{pre}$")
    p.inf, = ax.plot([], [], color=ROLE["decode"], lw=2.2, ls="--",
                     label=r"inference, $2 N D_\mathrm{inf} / u$")
    p.tot, = ax.plot([], [], color=ROLE["total"], lw=2.6, label="lifetime total")
    set_log(ax, x=lambda v: fmt_params(v, 3), y=_sci)
    ax.set_xlabel("active parameters N (count)")
    ax.set_ylabel("compute (FLOP at training's rate)")


def _life_numbers(params, inference_tokens, decode_efficiency, rl_flops_per_param, chip, mfu):
    """A model's life under the equal-spend rule; with a chip, what each third costs on it."""
    eq = equal_spend_tokens(inference_tokens, decode_efficiency, rl_flops_per_param)
    c = lifetime_compute(params, eq.pretrain_tokens, eq.rl_tokens, inference_tokens,
                         decode_efficiency, rl_flops_per_param)
    out = {"inference_tokens": inference_tokens, "pretrain_tokens": eq.pretrain_tokens,
           "rl_tokens": eq.rl_tokens,
           "overtraining": overtraining_factor(params, eq.pretrain_tokens),
           "tokens_per_param": eq.pretrain_tokens / params, "third": c.pretrain,
           "lifetime_total": c.total}
    if chip is not None:
        dt, _ = chip.resolve_dtype("bf16")
        hours = compute_chip_hours(c.pretrain, chip, mfu, dt)  # one third, at training's rate
        out.update(chip=chip.name, mfu=mfu, chip_hours_per_third=hours,
                   cost_per_third=chip_hours_cost(hours, chip),
                   inference_cost_per_million=chip_hours_cost_per_million_tokens(
                       hours, inference_tokens, chip))
    return out


@builder(figsize=(6.4, 5.2), setup=_cost_setup, marked=("rl_flops_per_param", "chip", "mfu"))
def lifetime_cost_vs_params(p, loss, inference_tokens, decode_efficiency=DECODE_EFFICIENCY,
                            fit="hoffmann", mark_params=None, rl_flops_per_param=RL_FLOPS_PER_PARAM,
                            chip=None, mfu=0.4):
    """Pre-training, inference and total compute against model size, every model trained to the
    same ``loss`` (the fit's iso-loss curve), with the least pre-training (Chinchilla), equal
    spend and the exact optimum marked. From ``llmmath.lifetime.lifetime_optimum``.

    With ``mark_params``, ``fig.numbers`` also gives that model's life under the equal-spend rule
    (``rl_flops_per_param`` FLOP per parameter per RL token): its tokens and compute, and with a
    ``chip`` the chip-hours and dollars of each third at training utilisation ``mfu``."""
    o = lifetime_optimum(loss, inference_tokens, decode_efficiency, fit)
    lo = max(o.optimum_params / 12.0, (SCALING_FITS[fit].A / (loss - SCALING_FITS[fit].E))
             ** (1 / SCALING_FITS[fit].alpha) * 1.02)
    n = np.geomspace(lo, o.chinchilla_params * 6.0, 160)
    pre = 6.0 * n * np.asarray(tokens_for_loss(n, loss, fit))
    inf = 2.0 * n * inference_tokens / decode_efficiency
    p.pre.set_data(n, pre)
    p.inf.set_data(n, inf)
    p.tot.set_data(n, pre + inf)
    ax = p.ax
    ax.set_xlim(n.min(), n.max())
    top = min(float(np.max(pre + inf)), 30 * o.chinchilla_total)
    ax.set_ylim(*loglim([o.optimum_total / 6.0, min(inf.min(), pre.min()) / 1.5, top * 3], pad=1.0))
    pts = [(o.chinchilla_params, 6 * o.chinchilla_params * o.chinchilla_tokens,
            "least pre-training", PALETTE["blue"]),
           (o.equal_params, 6 * o.equal_params * o.equal_tokens, "equal spend", PALETTE["grey"]),
           (o.optimum_params, o.optimum_total, "least total", PALETTE["black"])]
    handles = [p.pre, p.inf, p.tot]
    for (x, y, t, c), m in zip(pts, ("s", "D", "o"), strict=True):
        handles.append(p.add(ax.plot([x], [y], m, ms=7, mfc=c, mec="white", mew=1.5, zorder=5,
                                     label=f"{t}: {fmt_params(x, 3)}")[0]))
    with p.marking():
        if mark_params is not None:
            mn = float(mark_params)
            tot = (6 * mn * float(tokens_for_loss(mn, loss, fit))
                   + 2 * mn * inference_tokens / decode_efficiency)
            handles.append(p.add(ax.plot([mn], [tot], "o", ms=9, mfc="none",
                                         mec=PALETTE["vermillion"], mew=2.2, zorder=6,
                                         label="the marked model")[0]))
            p.numbers = {"marked_total": tot,
                         **_life_numbers(mn, inference_tokens, decode_efficiency,
                                         rl_flops_per_param, chip, mfu)}
    # one legend below the axes, the same size for every value of the arguments (frames match)
    p.add(ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=2,
                    frameon=False))
    ax.set_title(f"One loss ({loss:.3f}), {fmt_count(inference_tokens)} tokens served, "
                 f"u = {decode_efficiency:.2g}")
    p.numbers.update(loss=loss, fit=fit, optimum_params=o.optimum_params,
                     equal_params=o.equal_params,
                     chinchilla_params=o.chinchilla_params, equal_excess=o.equal_excess,
                     inference_over_pretrain=o.optimum_inference_over_pretrain)
    return (f"Log-log plot of compute against active parameters for models that all reach loss "
            f"{loss:.3f} under the {FIT_NAMES.get(fit, fit)} fit, serving "
            f"{fmt_count(inference_tokens)} tokens at "
            f"decode utilisation {decode_efficiency:.2g}: pre-training cost falls as the model "
            f"grows up to "
            f"{fmt_params(o.chinchilla_params, 3)} parameters, inference cost rises in proportion; "
            f"they are equal at {fmt_params(o.equal_params, 3)} and the total is least at "
            f"{fmt_params(o.optimum_params, 3)}, where equal spend costs "
            f"{o.equal_excess:.1%} more than the least total.")


# ----- the equal-spend over-training factor against decode's utilisation ----------------------

def _u_setup(p):
    ax = p.ax
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(
        FuncFormatter(lambda v, _: f"{v:,.0f}×" if v >= 1 else f"{v:.2g}×"))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:.0%}"))
    ax.set_xlabel("decode utilisation relative to training, u (%)")
    ax.set_ylabel(r"over-training $D_\mathrm{pre} / (20 N)$ (×)")


@builder(setup=_u_setup)
def overtraining_vs_decode_efficiency(p, model, seconds=60 * DAY, rates=(10e6, 50e6, 200e6),
                                      marks=(0.2, 1 / 3), mark_decode_efficiency=None):
    """The equal-spend over-training factor ``D_inf / (3 u) / (20 N_act)`` against decode's
    relative utilisation ``u``, one line per serving rate (tokens/s over ``seconds``); the
    ``marks`` are drawn on the middle rate's line. ``model``: a name, a Model or a count."""
    n, name = _per_param(model)
    u = np.linspace(0.1, 1.0, 91)
    ax = p.ax
    ys = []
    for i, r in enumerate(rates):
        d = served_tokens(r, seconds)
        y = np.asarray(equal_spend_overtraining(n, d, u))
        ys.append(y)
        p.add(ax.plot(u, y, color=CYCLE[i % len(CYCLE)], lw=2.2,
                      label=f"{fmt_count(r)} tokens/s for {seconds / DAY:.0f} days")[0])
    p.hline(1.0, "compute-optimal (20 tokens per parameter)", color=PALETTE["grey"], x=0.99,
            ha="right", va="bottom", ls=":")
    ax.set_xlim(0.08, 1.02)
    ax.set_ylim(*loglim(np.concatenate(ys + [[0.7]]), pad=1.6))
    mid = rates[len(rates) // 2]
    d_mid = served_tokens(mid, seconds)
    got = {}
    xs, yv, names = [], [], []
    for m in marks:
        f = float(equal_spend_overtraining(n, d_mid, m))
        got[float(m)] = f
        xs.append(float(m))
        yv.append(f)
        names.append(f"u = 1/{1 / m:.0f}: {f:,.0f}×")
    for x, y, text in zip(xs, yv, names, strict=True):
        dot = p.add(ax.plot([x], [y], "o", ms=7, mfc=CYCLE[len(rates) // 2 % len(CYCLE)],
                            mec="white", mew=1.5, zorder=5)[0])
        p.label(x, y, text, [(10, 6, "left", "bottom"), (14, 12, "left", "bottom"),
                             (-10, -6, "right", "top"), (-14, -12, "right", "top")]
                + _ABOVE + _BELOW,
                exclude=[dot], box=False)  # between two curves a white box would cut one
    p.add(ax.legend(loc="upper right"))
    with p.marking():
        if mark_decode_efficiency is not None:
            mu = float(mark_decode_efficiency)
            f = float(equal_spend_overtraining(n, d_mid, mu))
            p.point(mu, f, f"u = {mu:.0%}: {f:,.0f}×")
            p.numbers = {"marked": f}
    ax.set_title(f"{name}: equal spend on pre-training and inference")
    p.numbers.update(marks=got)
    body = "; ".join(f"{v:,.0f}× at u = {k:.2g}" for k, v in got.items())
    return (f"Plot of the over-training factor (log scale) against decode's relative utilisation u "
            f"for {name}, one falling curve per serving rate "
            f"({', '.join(fmt_count(r) for r in rates)} "
            f"tokens/s for {seconds / DAY:.0f} days): the factor is inversely proportional to u; "
            f"at {fmt_count(mid)} tokens/s: {body}.")


# ----- published runs against compute-optimal -------------------------------------------------

def _map_setup(p):
    ax = p.ax
    set_log(ax, x=lambda v: fmt_params(v, 3), y=lambda v: f"{v:,.0f}" if v >= 1 else f"{v:.2g}")
    ax.set_xlabel("active parameters N (count)")
    ax.set_ylabel("pre-training tokens per parameter")


def _runs():
    out = []
    for name, params, tokens, source in PUBLISHED_RUNS:
        n = float(_models.get(params).active_params) if isinstance(params, str) else float(params)
        out.append((name, n, float(tokens), source))
    return out


@builder(setup=_map_setup)
def overtraining_map(p, mark_params=None, mark_tokens=None):
    """Published pre-training runs (``llmmath.lifetime.PUBLISHED_RUNS``): tokens per active
    parameter against active parameters, over guides at 1×, 10× and 100× compute-optimal (20,
    200 and 2,000 tokens per parameter). The marked point is an estimate to set beside them."""
    runs = _runs()
    ax = p.ax
    xs = np.array([r[1] for r in runs])
    ys = np.array([r[2] / r[1] for r in runs])
    pts = list(ys) + ([float(mark_tokens) / float(mark_params)] if mark_tokens is not None
                      and mark_params is not None else [])
    ax.set_xlim(3e9, 1.5e12)
    ax.set_ylim(min(pts) / 2.5, max(pts) * 3)
    p.add(ax.scatter(xs, ys, s=42, color=PALETTE["blue"], edgecolor="white", zorder=4,
                     label="published runs"))
    for v, lab in ((20, "1×: 20 per parameter"), (200, "10×"), (2000, "100×")):
        p.hline(v, lab, color=PALETTE["grey"], x=0.99, ha="right", va="bottom", ls=":")
    place_labels(ax, list(xs), list(ys), [r[0] for r in runs])
    with p.marking():
        if mark_params is not None and mark_tokens is not None:
            mn, mt = float(mark_params), float(mark_tokens)
            p.point(mn, mt / mn, f"estimate: {mt / (20 * mn):,.0f}×", color=PALETTE["vermillion"])
            p.numbers = {"marked_factor": mt / (20 * mn)}
    ax.set_title("How far past 20 tokens per parameter")
    factors = {r[0]: r[2] / (20 * r[1]) for r in runs}
    p.numbers.update(factors=factors)
    body = "; ".join(f"{k} {v:.2g}×" for k, v in factors.items())
    return ("Log-log scatter of pre-training tokens per active parameter against active parameters "
            f"for published runs, over horizontal guides at 1×, 10× and 100× the compute-optimal "
            f"20 tokens per parameter: {body}.")


# ----- the loss given up by over-training, at fixed compute -----------------------------------

def _gap_setup(p):
    ax = p.ax
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}"))
    ax.set_xlabel(r"tokens per parameter $D_\mathrm{pre} / N$")
    ax.set_ylabel("loss above the fit's optimum (nats/token)")


@builder(setup=_gap_setup)
def loss_gap_vs_overtraining(p, compute, tokens_per_param=None, mark_tokens_per_param=None):
    """Loss given up at fixed pre-training ``compute`` by training a smaller model on more tokens,
    for each loss fit of ``llmmath.lifetime.SCALING_FITS`` (``llmmath.lifetime.loss_gap``).
    ``tokens_per_param`` default 5 .. 5,000."""
    k = (np.geomspace(5, 5000, 120) if tokens_per_param is None
         else np.asarray(tokens_per_param, float))
    ax = p.ax
    tops, best = [], {}
    for i, fit in enumerate(SCALING_FITS):
        g = np.asarray(loss_gap(compute, k, fit))
        tops.append(g.max())
        best[fit] = float(compute_optimal_ratio(compute, fit))
        p.add(ax.plot(k, g, color=CYCLE[i], lw=2.2,
                      label=f"{FIT_NAMES.get(fit, fit)}: optimum at {best[fit]:,.0f} "
                            "tokens/param")[0])
    ax.set_xlim(k.min(), k.max())
    ax.set_ylim(0, max(tops) * 1.35)
    p.vline(20, "20 tokens/param", color=PALETTE["grey"], y=0.97)
    p.add(ax.legend(loc="upper left"))
    with p.marking():
        if mark_tokens_per_param is not None:
            mk = float(mark_tokens_per_param)
            g = {fit: float(loss_gap(compute, mk, fit)) for fit in SCALING_FITS}
            top = max(g.values())
            p.point(mk, top, f"{mk:,.0f}/param: +{top:.3f}")
            p.numbers = {"marked": g}
    ax.set_title(f"Same pre-training compute ({fmt_sci(compute)} FLOP), smaller model, more tokens")
    p.numbers.update(optimum_ratio=best)
    return (f"Plot of the loss above the compute-optimal loss against tokens per parameter "
            f"(log scale) at {fmt_si(compute, 'FLOP')} of pre-training, for the "
            + " and ".join(f"{FIT_NAMES.get(f, f)} fit (optimum at {v:,.0f} tokens per parameter)"
                           for f, v in best.items())
            + ": each curve is zero at its optimum and rises slowly on either side.")


# ----- the chapter's explorer --------------------------------------------------------------------

LIFETIME_EFFICIENCIES = [0.1, 0.2, 0.25, 1 / 3, 0.5, 1.0]


@explorer(main="decode_efficiency", sweep=LIFETIME_EFFICIENCIES)
def lifetime_explorer(model="DeepSeek-V3", chip="H100-SXM", tokens_per_second=50e6, days=60,
                      decode_efficiency=1 / 3, rl_flops_per_param=3.0, fit="hoffmann", mfu=0.4):
    """Pre-training, RL and inference over one model's life: the serving rate and lifetime set the
    inference tokens, the equal-spend rule sets the pre-training and RL tokens; the figure puts
    the model on the fit's iso-loss curve beside the least-pre-training and least-total sizes.
    The panel prices each third on ``chip`` at training utilisation ``mfu`` (decode's FLOPs run
    at ``decode_efficiency`` times that)."""
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "tokens_per_second": steps("tokens/s", [1e6, 3e6, 10e6, 30e6, 50e6, 100e6, 200e6, 500e6],
                                   tokens_per_second, fmt=lambda r: fmt_count(r)),
        "days": steps("days served", [7, 30, 60, 90, 180, 365, 730], days),
        "decode_efficiency": steps("decode u", LIFETIME_EFFICIENCIES, decode_efficiency,
                                   fmt=lambda u: f"1/{1 / u:.0f}" if u < 1 else "1"),
        "rl_flops_per_param": slider("RL FLOP/param", rl_flops_per_param, 2.0, 6.0, 0.5, ".1f"),
        "fit": dropdown("loss fit", list(SCALING_FITS), fit),
    }

    def figure(v):
        n = float(model_of(v["model"]).active_params)
        u, r = v["decode_efficiency"], v["rl_flops_per_param"]
        d_inf = served_tokens(v["tokens_per_second"], v["days"] * 86400.0)
        eq = equal_spend_tokens(d_inf, u, r)
        return lifetime_cost_vs_params, dict(
            loss=scaling_loss(n, eq.pretrain_tokens, v["fit"]), inference_tokens=d_inf,
            decode_efficiency=u, fit=v["fit"], mark_params=n, rl_flops_per_param=r,
            chip=chip_of(v["chip"]), mfu=mfu)

    return controls, figure, _lifetime_readout


def _lifetime_readout(n):
    return [("inference tokens D_inf", fmt_count(n["inference_tokens"])),
            ("pre-training tokens (equal spend)", fmt_count(n["pretrain_tokens"])),
            ("RL tokens (equal spend)", fmt_count(n["rl_tokens"])),
            ("past compute-optimal", f"{n['overtraining']:,.0f}×"),
            ("tokens per parameter", f"{n['tokens_per_param']:,.0f}"),
            ("each of the three costs", fmt_si(n["third"], "FLOP")),
            (f"chip-hours per third ({n['chip']}, MFU {n['mfu']:.0%})",
             fmt_count(n["chip_hours_per_third"])),
            ("dollars per third", fmt_usd(n["cost_per_third"])),
            ("inference $ per million tokens", fmt_usd(n["inference_cost_per_million"])),
            ("lifetime total", fmt_si(n["lifetime_total"], "FLOP")),
            (f"loss ({n['fit']} fit)", f"{n['loss']:.3f}"),
            ("least-total size at that loss", f"{n['optimum_params'] / 1e9:,.1f} bn"),
            ("equal spend costs more by", fmt_percent(n["equal_excess"]))]

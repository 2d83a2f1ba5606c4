"""Figures: counting."""

from __future__ import annotations

import numpy as np
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from .. import models as _models
from ..models import attention_crossover_context
from ..units import fmt_count, fmt_percent
from .figure import as_list, new_axes
from .labels import (
    fmt_b,
    fmt_params,
    fmt_tokens_binary,
    set_log,
    settle_legend,
)
from .style import KIND_COLOUR, PALETTE, ROLE, SMALL, house_style, model_colour

__all__ = ["param_parts", "param_breakdown", "kv_per_token", "attention_flops_share",
           "attention_crossover"]

_PARTS = [("embeddings + head", PALETTE["grey"]), ("attention", ROLE["kv"]),
          ("dense MLP", ROLE["compute"]), ("routed experts, active", ROLE["cost"]),
          ("routed experts, idle", "#f2b38f"), ("shared experts", PALETTE["purple"]),
          ("router + norms", ROLE["router"])]


def param_parts(model) -> dict:
    """Parameters of `model` by part (the parts of :func:`param_breakdown`);
    they sum to ``total_params``."""
    m = model
    dense_layers = m.n_layers - m.n_moe_layers
    parts = {
        "embeddings + head": m.embedding_params + m.lm_head_params,
        "attention": m.n_layers * m.attention_params_per_layer,
        "dense MLP": dense_layers * m.dense_mlp_params,
        "routed experts, active": m.n_moe_layers * m.experts_per_token * m.expert_params,
        "routed experts, idle": (m.n_moe_layers * (m.n_experts - m.experts_per_token)
                                 * m.expert_params),
        "shared experts": m.n_moe_layers * m.shared_expert_params,
        "router + norms": m.n_moe_layers * m.router_params + m.norm_params,
    }
    return {k: int(v) for k, v in parts.items()}


def param_breakdown(model_list=None):
    """Stacked horizontal bars: each model's parameters by part, as shares of its total.

    Parts: embeddings + head, attention, dense MLP, routed experts (active and idle), shared
    experts, router + norms. Shares (not absolute counts) keep 7B and 671B models readable on
    one axis; the total and active counts are printed beside each bar.
    """
    ms = as_list(model_list, _models.all_models())
    fig, ax = new_axes((6.4, 0.36 * len(ms) + 1.9))
    with house_style():
        y = np.arange(len(ms))
        left = np.zeros(len(ms))
        table = [param_parts(m) for m in ms]
        for name, col in _PARTS:
            share = np.array([t[name] / m.total_params for t, m in zip(table, ms, strict=False)])
            if share.any():
                # the pale idle share is outlined in the experts' colour (3:1 on white)
                edge = ROLE["cost"] if name == "routed experts, idle" else "none"
                ax.barh(y, share * 100, left=left, color=col, label=name, height=0.7,
                        edgecolor=edge, linewidth=0.8 if edge != "none" else 0)
            left += share * 100
        for yi, m in zip(y, ms, strict=False):
            txt = fmt_params(m.total_params, 3)
            if m.is_moe:
                txt += f" ({fmt_params(m.active_params, 2)} active)"
            ax.text(101, yi, txt, va="center", fontsize=SMALL)
        ax.set_yticks(y, [m.name for m in ms])
        ax.invert_yaxis()
        ax.set_xlim(0, 135)
        ax.set_xticks([0, 25, 50, 75, 100])
        ax.set_xlabel("share of parameters (%)")
        ax.grid(axis="y", visible=False)
        fig.legend(loc="outside lower center", ncol=2)
        ax.set_title("Where the parameters are\n(total, and active per token, at right)")
    idle = [(m, t["routed experts, idle"] / m.total_params)
            for m, t in zip(ms, table, strict=False) if m.is_moe]
    alt = ("Stacked bars of the share of parameters in embeddings, attention, MLPs and experts for "
           f"{len(ms)} models, totals from {fmt_count(min(m.total_params for m in ms))} to "
           f"{fmt_count(max(m.total_params for m in ms))}")
    if idle:
        m, f = max(idle, key=lambda p: p[1])
        alt += f"; in {m.name} {f:.0%} of the parameters are experts a token does not use"
    fig.alt_text = alt + "."
    fig.numbers = {m.name: t for m, t in zip(ms, table, strict=False)}
    settle_legend(ax)
    return fig


def kv_per_token(model_list=None, kv_bytes=2):
    """Bars of KV-cache bytes per token (all layers) for each model, coloured by attention kind
    (MHA, GQA, MQA, MLA); log axis, since they span two decades."""
    ms = as_list(model_list, _models.all_models())
    vals = np.array([m.kv_bytes_per_token(kv_bytes) for m in ms])
    fig, ax = new_axes((6.4, 0.32 * len(ms) + 1.4))
    with house_style():
        y = np.arange(len(ms))
        ax.barh(y, vals, color=[KIND_COLOUR[m.attention_kind] for m in ms], height=0.7)
        for yi, v in zip(y, vals, strict=False):
            ax.text(v * 1.05, yi, fmt_b(v), va="center", fontsize=SMALL)
        ax.set_yticks(y, [m.name for m in ms])
        ax.invert_yaxis()
        set_log(ax, x=fmt_b)
        ax.set_xlim(vals.min() / 2, vals.max() * 6)
        ax.set_xlabel(f"KV cache per token, all layers, {kv_bytes:g} bytes per element (bytes)")
        ax.grid(axis="y", visible=False)
        kinds = [k for k in KIND_COLOUR if any(m.attention_kind == k for m in ms)]
        ax.legend(handles=[Patch(color=KIND_COLOUR[k], label=k) for k in kinds], loc="lower right",
                  frameon=True, framealpha=0.9)
        ax.set_title("KV cache one token adds")
    lo, hi = int(np.argmin(vals)), int(np.argmax(vals))
    fig.alt_text = (f"Bars of KV-cache bytes per token for {len(ms)} models coloured by attention "
                    f"kind, from {fmt_b(vals[lo])} ({ms[lo].name}, {ms[lo].attention_kind}) to "
                    f"{fmt_b(vals[hi])} ({ms[hi].name}, {ms[hi].attention_kind}).")
    fig.numbers = {m.name: v for m, v in zip(ms, vals, strict=False)}
    settle_legend(ax)
    return fig


def attention_flops_share(model_list, contexts=None, context=None):
    """Attention's share of one new token's forward FLOPs against the context it attends to.

    One line per model: ``attention / (2 N_mm + attention)`` from
    :meth:`~llmmath.models.Model.flops_per_token`, drawn up to the model's longest context.
    A dot marks where attention equals the matmul FLOPs (share 50%,
    :func:`llmmath.models.attention_crossover_context`) when the model supports that
    context; ``context`` draws a vertical line at one context and labels each share there.
    """
    model_list = list(model_list)
    if not model_list:
        raise ValueError("model_list: give at least one model")
    contexts = (np.geomspace(256, 1_048_576, 200) if contexts is None
                else np.asarray(contexts, float))
    fig, ax = new_axes((6.4, 4.2))
    with house_style():
        shares_at = []
        for m in model_list:
            color = model_colour(m)
            s = contexts[contexts <= (m.max_context or np.inf)]
            att = m.attention_flops_per_token(s)
            share = att / (2.0 * m.matmul_params_active + att)
            ax.plot(s, 100 * share, color=color, label=m.name)
            x = attention_crossover_context(m)
            if np.isfinite(x) and x <= s.max():
                ax.plot([x], [50], "o", color=color, ms=6)
            if context is not None and context <= (m.max_context or np.inf):
                a = float(m.attention_flops_per_token(context))
                shares_at.append((m.name, a / (2.0 * m.matmul_params_active + a)))
        ax.axhline(50, color=PALETTE["grey"], lw=1, ls="--")
        ax.text(contexts[0], 51.5, "attention = matmuls", fontsize=SMALL, color=PALETTE["grey"])
        if context is not None:
            ax.axvline(context, color=PALETTE["black"], lw=1, ls=":")
            ax.set_title("Attention's share of forward FLOPs; line at "
                         f"{fmt_tokens_binary(context)} tokens")
        else:
            ax.set_title("Attention's share of forward FLOPs per new token")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(fmt_tokens_binary))
        ax.set_xlabel("context attended to, S (tokens)")
        ax.set_ylabel("attention share of FLOPs (%)")
        ax.set_ylim(0, 100)
        ax.legend(loc="upper left", fontsize=SMALL)
    crossing = "; ".join(
        f"{m.name} at {fmt_count(attention_crossover_context(m))} tokens"
        for m in model_list if np.isfinite(attention_crossover_context(m)))
    alt = (f"Attention's share of forward FLOPs per token against context for "
           f"{', '.join(m.name for m in model_list)}; it reaches half (attention equals the "
           f"matmuls) for {crossing or 'none of them'}.")
    if shares_at:
        alt += (" At the marked context: "
                + ", ".join(f"{n} {fmt_percent(v)}" for n, v in shares_at) + ".")
    fig.alt_text = alt
    settle_legend(ax)
    return fig


def attention_crossover(model_list=None):
    """Bar chart: the context where attention FLOPs equal the matmul FLOPs, in units of D.

    A shaded band marks 6 D to 7 D, the dense MHA/GQA rule of thumb. Models whose capped
    (sparse) attention never gets there are listed as 'never'.
    """
    model_list = list(model_list) if model_list is not None else _models.all_models()
    vals = np.array([attention_crossover_context(m) / m.d_model for m in model_list])
    fig, ax = new_axes((6.4, 0.32 * len(model_list) + 1.6))
    with house_style():
        y = np.arange(len(model_list))
        ax.axvspan(6, 7, color=PALETTE["grey"], alpha=0.2, lw=0)
        finite = np.where(np.isfinite(vals), vals, 0.0)
        colors = [ROLE["weights"] if m.is_moe else ROLE["compute"] for m in model_list]
        ax.barh(y, finite, color=colors)
        for yi, v in zip(y, vals, strict=True):
            ax.text(v if np.isfinite(v) else 0, yi,
                    f" {v:.1f} D" if np.isfinite(v) else " never (top-k)",
                    va="center", fontsize=SMALL)
        ax.set_yticks(y, [m.name for m in model_list])
        ax.invert_yaxis()
        ax.grid(axis="y", visible=False)
        ax.set_xlim(0, np.nanmax(np.where(np.isfinite(vals), vals, np.nan)) * 1.25)
        ax.set_xlabel("crossover context (multiples of the width D)")
        ax.set_title("Context where attention FLOPs equal matmul FLOPs")
        ax.legend(handles=[Patch(color=ROLE["compute"], label="dense"),
                           Patch(color=ROLE["weights"], label="MoE"),
                           Patch(color=PALETTE["grey"], alpha=0.2, label="6–7 D")],
                  loc="upper center", bbox_to_anchor=(0.5, -0.09 - 0.6 / len(model_list)), ncol=3,
                  fontsize=SMALL, frameon=False)
    fin = [(m.name, v) for m, v in zip(model_list, vals, strict=True) if np.isfinite(v)]
    lo, hi = min(fin, key=lambda t: t[1]), max(fin, key=lambda t: t[1])
    fig.alt_text = ("Bar chart of the context, in multiples of the model width D, at which "
                    f"attention FLOPs equal the matmul FLOPs for {len(model_list)} models; dense "
                    f"MHA/GQA models sit at 6–7 D, the range runs from {lo[1]:.1f} D ({lo[0]}) to "
                    f"{hi[1]:.1f} D ({hi[0]}).")
    settle_legend(ax)
    return fig

"""Figures: mixture of experts across a scale-up domain (chapter 7).

Every builder draws what ``llmmath.moe`` computes: the largest model each scale-up domain
holds, the all-to-all of one MoE layer against the EP degree (inside and across domains), the
busiest chip's load under random routing, and the bytes per chip of an expert-parallel layout.
"""

from __future__ import annotations

import numpy as np

from .. import moe as _moe
from ..roofline import decode_step
from ..units import fmt_bytes, fmt_count, fmt_time
from .explore import BATCHES, chip_picker, dropdown, explorer, model_picker, snap, steps
from .figure import as_list, builder, chip_of, model_of
from .labels import fmt_b, fmt_count_tick, fmt_n, fmt_t, loglim, set_log
from .style import CYCLE, PALETTE, ROLE, VENDOR_COLOUR, chip_colour

__all__ = ["domain_capacity", "all_to_all_vs_chips", "imbalance_vs_chips", "ep_memory_per_chip"]


def _domain_name(name):
    """A catalogue domain name in ASCII ("4096 x TPU v4") as the book writes it: 4,096× TPU v4."""
    n, sep, chip = name.partition(" x ")
    return f"{int(n):,}× {chip}" if sep and n.isdigit() else name.replace(" x ", " × ")


_EP = np.array([8, 16, 24, 32, 48, 64, 72, 96, 128, 144, 192, 256, 288], dtype=float)


def _vendor_colour(domain):
    name = domain.name
    for vendor, key in (("NVIDIA", ("H100", "H200", "A100", "B200", "GB200", "B300", "Rubin")),
                        ("AMD", ("MI3",)), ("Google", ("TPU",))):
        if any(k in name for k in key):
            return VENDOR_COLOUR[vendor]
    return PALETTE["purple"]


def _domains_size(values):
    n = len(values["domains"]) if values.get("domains") is not None else len(_moe.all_domains())
    return (6.4, 0.3 * n + 1.6)


@builder(figsize=_domains_size)
def domain_capacity(p, domains=None, weight_bytes=1, kv_fraction=0.5, mark_params=None):
    """Largest total parameter count each scale-up domain holds, with ``kv_fraction`` of its HBM
    kept for the KV cache, at ``weight_bytes`` per weight (bars, log scale).

    ``domains``: ``llmmath.moe.ScaleUpDomain`` entries or catalogue chips (default: every
    catalogue chip's domain and the announced ones, ``llmmath.moe.all_domains()``).
    ``mark_params``: a reference line (a model's total parameters).
    """
    ds = [_moe.domain_of(d) if not isinstance(d, _moe.ScaleUpDomain) else d
          for d in (as_list(domains, []) if domains is not None else _moe.all_domains())]
    if not ds:
        raise ValueError("domains: got an empty list")
    ax = p.ax
    vals = np.array([_moe.max_total_params(d, weight_bytes=weight_bytes, kv_fraction=kv_fraction)
                     for d in ds])
    y = np.arange(len(ds))
    p.add(ax.barh(y, vals, color=[_vendor_colour(d) for d in ds], height=0.65))
    ax.set_yticks(y, [_domain_name(d.name) for d in ds])
    ax.set_ylim(len(ds) - 0.5, -0.5)
    set_log(ax, x=fmt_count_tick)
    ax.set_xlim(*loglim(np.concatenate([vals, [mark_params or vals.min()]]), pad=2.0))
    ax.set_xlabel(r"largest total parameters $N_\mathrm{tot}$")
    ax.grid(axis="y", visible=False)
    if mark_params is not None:
        p.vline(float(mark_params), f"{fmt_count(float(mark_params), 3)}", color=ROLE["reference"],
                y=0.995)
    ax.set_title(f"Largest model per scale-up domain\n({weight_bytes:g} byte/weight, "
                 f"{kv_fraction:.0%} of HBM kept for KV)")
    big, small = int(np.argmax(vals)), int(np.argmin(vals))
    p.numbers = {d.name: float(v) for d, v in zip(ds, vals, strict=True)}
    return ("Horizontal bar chart, log scale, of the largest total parameter count each of "
            f"{len(ds)} scale-up domains holds at {weight_bytes:g} byte per weight with "
            f"{kv_fraction:.0%} of HBM kept for the KV cache: from {fmt_count(vals[small], 2)} for "
            f"{ds[small].name} to {fmt_count(vals[big], 2)} for {ds[big].name}.")


def _layout_numbers(model, chip, tokens_per_chip, ep, redundant_experts):
    """An EP layout's numbers at fp8: the decode step bound without communication (an MoE's
    chips each read what they hold under data-parallel attention,
    ``moe.expert_parallel_decode_step``), and for an MoE model the placement and the routing
    imbalance."""
    dt, _ = chip.resolve_dtype("fp8")
    if model.is_moe:
        s = _moe.expert_parallel_decode_step(model, chip, tokens_per_chip * ep, 0, ep,
                                             redundant_experts=redundant_experts, weight_bytes=1,
                                             dtype=dt)
    else:
        s = decode_step(model, chip, tokens_per_chip * ep, 0, n_chips=ep, weight_bytes=1,
                        dtype=dt)
    out = {"is_moe": model.is_moe, "step_time": s.time, "bound": s.bound}
    if model.is_moe:
        pl = _moe.expert_placement(model, ep, redundant_experts=redundant_experts, weight_bytes=1)
        out.update(experts_per_chip=pl.experts_per_chip, idle_chips=pl.idle_chips,
                   weight_bytes_per_chip=pl.weight_bytes_per_chip,
                   kv_room_per_chip=max(chip.hbm_capacity - pl.weight_bytes_per_chip, 0.0),
                   imbalance=_moe.imbalance_factor(tokens_per_chip, ep, model.experts_per_token))
    return out


@builder(marked=("redundant_experts",))
def all_to_all_vs_chips(p, model, chip_list=("H100-SXM", "GB200"), tokens_per_chip=128,
                        chip_counts=None, dispatch_bytes=1, combine_bytes=2, mark_chips=None,
                        redundant_experts=0, kernels="normal"):
    """Dispatch + combine time of one MoE layer per chip against the EP degree, one line per chip.

    Inside the chip's scale-up domain the all-to-all rides the fast network; past it, copies
    leave the domain over the scale-out network and the time jumps (dotted line: the domain
    size). ``kernels`` as in ``llmmath.moe.expert_all_to_all`` ("normal": forwarded once per
    domain; "low-latency": one copy per token and expert, decode's). ``mark_chips`` marks the
    first chip's curve at that EP degree; ``fig.numbers`` then also gives that layout on the
    first chip (fp8 weights, ``redundant_experts`` extra slots): its experts and bytes per chip,
    the routing imbalance and the decode step bound.
    """
    model = model_of(model)
    cl = [chip_of(c) for c in as_list(chip_list, [])]
    layout = {}
    if mark_chips is not None and cl:
        layout = _layout_numbers(model, cl[0], tokens_per_chip, mark_chips, redundant_experts)
    n = _EP if chip_counts is None else np.unique(np.asarray(chip_counts, dtype=float))
    ax = p.ax
    ax.set_xlabel("chips in the expert-parallel group (EP degree)")
    ax.set_ylabel("all-to-all per MoE layer (s)")
    if not model.is_moe:
        ax.set_xscale("log")
        ax.set_xlim(n.min() / 1.15, n.max() * 1.15)
        p.note("dense model: no experts, no all-to-all", loc=(0.5, 0.5), ha="center", va="center")
        ax.set_title(f"{model.name}: dense, no expert parallelism")
        p.numbers = dict(layout)
        return f"Empty plot: {model.name} is a dense model, so it has no expert all-to-all."
    ys = []
    grids = []
    for c in cl:  # each chip in its colour across the book
        d = float(c.scale_up_domain)  # past the domain, whole domains only
        nc = np.unique(np.concatenate([n[n <= d], d * np.arange(2, n.max() // d + 1)]))
        grids.append(nc)
        a = _moe.expert_all_to_all(model, tokens_per_chip, nc, c, dispatch_bytes=dispatch_bytes,
                                   combine_bytes=combine_bytes, kernels=kernels)
        y = np.asarray(a.time, dtype=float)
        ys.append(y)
        p.add(ax.plot(nc, y, "-", color=chip_colour(c.name),
                      label=f"{c.name} (domain {c.scale_up_domain})")[0])
        dots = np.isin(nc, n)
        p.add(ax.plot(nc[dots], y[dots], "o", color=chip_colour(c.name), ms=4)[0])
        if n.min() <= c.scale_up_domain < n.max():
            p.vline(c.scale_up_domain, "", color=chip_colour(c.name))
    set_log(ax, x=lambda v: f"{v:g}", y=fmt_t)
    ax.set_xticks([8, 16, 32, 64, 144, 288], ["8", "16", "32", "64", "144", "288"])
    ax.set_xlim(n.min() / 1.15, n.max() * 1.15)
    ax.set_ylim(*loglim(np.concatenate(ys), pad=2.5))
    p.add(ax.legend(loc="upper left"))
    with p.marking():
        if mark_chips is not None and cl:
            m = float(mark_chips)
            a = _moe.expert_all_to_all(model, tokens_per_chip, m, cl[0],
                                       dispatch_bytes=dispatch_bytes, combine_bytes=combine_bytes,
                                       kernels=kernels)
            p.point(m, a.time, f"EP{m:g}: {fmt_t(a.time)}", offset=(8, -14), ha="left")
            p.numbers = {"time": a.time, "scale_up_time": a.scale_up_time,
                         "scale_out_time": a.scale_out_time,
                         "time_per_step": a.time * model.n_moe_layers, **layout}
    ax.set_title(f"{model.name}: dispatch + combine, {fmt_n(tokens_per_chip)} tokens per chip"
                 f"\n({kernels} kernels)")
    jumps = []
    for c, y, nc in zip(cl, ys, grids, strict=True):
        inside = y[nc <= c.scale_up_domain]
        outside = y[nc > c.scale_up_domain]
        if inside.size and outside.size:
            jumps.append(f"{c.name} {fmt_t(inside[-1])} inside its {c.scale_up_domain}-chip "
                         f"domain, {fmt_t(outside[0])} just past it")
    p.numbers.update(max_time=float(np.max(np.concatenate(ys))))
    return (f"Log-log plot of the dispatch and combine time of one {model.name} MoE layer against "
            f"the number of chips in the expert-parallel group, at {fmt_n(tokens_per_chip)} tokens "
            "per chip: "
            + ("; ".join(jumps) if jumps else "one line per chip") + ".")


@builder()
def imbalance_vs_chips(p, tokens_per_chip=(16, 128, 1024), experts_per_token=8, chip_counts=None,
                       mark_chips=None, mark_tokens=128):
    """Busiest chip's load over the mean (uniform random routing) against the EP degree, one line
    per tokens-per-chip value: more chips raise it, more tokens per chip lower it.

    ``mark_chips`` marks the line of ``mark_tokens`` tokens per chip at that chip count.
    """
    ts = [float(t) for t in np.atleast_1d(tokens_per_chip)]
    n = (np.array([2, 4, 8, 16, 32, 64, 72, 128, 144, 256, 512], dtype=float) if chip_counts is None
         else np.unique(np.asarray(chip_counts, dtype=float)))
    ax = p.ax
    allv = []
    for i, t in enumerate(ts):
        f = np.asarray(_moe.imbalance_factor(t, n, experts_per_token), dtype=float)
        allv.append(f)
        p.add(ax.plot(n, f, "o-", ms=4, color=CYCLE[i % len(CYCLE)],
                      label=f"{fmt_n(t)} tokens per chip")[0])
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(lambda v, _: f"{v:g}")
    ax.set_xlim(n.min() / 1.2, n.max() * 1.2)
    top = float(np.max(np.concatenate(allv)))
    ax.set_ylim(1.0, 1.0 + (top - 1.0) * 1.3 + 0.05)
    ax.set_xlabel("chips in the expert-parallel group")
    ax.set_ylabel("busiest chip / mean load (ratio)")
    p.add(ax.legend(loc="upper left"))
    with p.marking():
        if mark_chips is not None:
            m = float(mark_chips)
            f = float(_moe.imbalance_factor(float(mark_tokens), m, experts_per_token))
            p.point(m, f, f"{m:g} chips, {fmt_n(mark_tokens)} tokens: {f:.2f}×", offset=(8, 10),
                    ha="left")
            p.numbers = {"factor": f}
    ax.set_title(f"Random routing, top-{experts_per_token}: the slowest chip sets the step")
    p.numbers.update({f"at_{int(n.max())}_{int(t)}": float(v[-1])
                      for t, v in zip(ts, allv, strict=True)})
    return ("Plot of the expected load of the busiest chip over the mean load against the number "
            f"of chips, for uniform top-{experts_per_token} routing: at {fmt_n(n.max())} chips "
            + ", ".join(f"{v[-1]:.2f}× with {fmt_n(t)} tokens per chip"
                        for t, v in zip(ts, allv, strict=True))
            + "; the factor grows with chips and shrinks with tokens per chip.")


@builder()
def ep_memory_per_chip(p, model, chip, chip_counts=None, redundant_experts=0, weight_bytes=1,
                       mark_chips=None):
    """Weight bytes per chip against the EP degree: the replicated part (attention, dense layers,
    shared experts, embeddings, held by every chip under data-parallel attention) stays; the routed
    experts divide (``ceil((E + r)/n)`` slots per chip). The gap to the chip's HBM is what is left
    for the KV cache.
    """
    model, chip = model_of(model), chip_of(chip)
    n = _EP if chip_counts is None else np.unique(np.asarray(chip_counts, dtype=float))
    ax = p.ax

    def place(count):
        if model.is_moe:
            return _moe.expert_placement(model, count, redundant_experts=redundant_experts,
                                         weight_bytes=weight_bytes)
        whole = model.total_params * float(weight_bytes)  # dense: nothing to divide
        return _moe.ExpertPlacement(count, 0.0, 0.0, 0.0, count, 0.0, 0.0, whole, whole)

    pl = place(n)
    rep = np.broadcast_to(np.asarray(pl.replicated_bytes, dtype=float), n.shape)
    rout = np.broadcast_to(np.asarray(pl.routed_bytes, dtype=float), n.shape)
    tot = np.broadcast_to(np.asarray(pl.weight_bytes_per_chip, dtype=float), n.shape)
    if model.is_moe:
        p.add(ax.plot(n, rout, "o-", ms=4, color=ROLE["weights"], label="routed experts")[0])
        p.add(ax.plot(n, rep, "-", color=ROLE["reference"],
                      label="replicated (attention, shared)")[0])
    else:
        p.note("dense model: no experts to divide", loc=(0.02, 0.97), va="top")
    p.add(ax.plot(n, tot, "-", lw=3, alpha=0.6, color=ROLE["total"], label="all weights")[0])
    set_log(ax, x=lambda v: f"{v:g}", y=fmt_b)
    ax.set_xticks([8, 16, 32, 64, 144, 288], ["8", "16", "32", "64", "144", "288"])
    ax.set_xlim(n.min() / 1.15, n.max() * 1.15)
    ax.set_ylim(*loglim(np.concatenate([rout[rout > 0], tot, [chip.hbm_capacity]]), pad=1.6))
    p.hline(chip.hbm_capacity, f"{chip.name} HBM: {fmt_b(chip.hbm_capacity)}",
            color=ROLE["capacity"], x=0.99, ha="right", va="bottom", ls="-")
    ax.set_xlabel("chips in the expert-parallel group (EP degree)")
    ax.set_ylabel("weights per chip (bytes)")
    p.add(ax.legend(loc="lower left"))
    with p.marking():
        if mark_chips is not None:
            m = float(mark_chips)
            q = place(m)
            p.point(m, q.weight_bytes_per_chip, f"EP{m:g}: {fmt_b(q.weight_bytes_per_chip)}",
                    offset=(6, -14), ha="left")
            p.numbers = {"weights": q.weight_bytes_per_chip, "experts_per_chip": q.experts_per_chip,
                         "kv_room": chip.hbm_capacity - q.weight_bytes_per_chip}
    ax.set_title(f"{model.name}: {model.n_experts} + {redundant_experts:g} expert slots, "
                 f"{weight_bytes:g} byte/weight" if model.is_moe else
                 f"{model.name}: dense, every chip holds every weight")
    p.numbers.update(replicated=float(rep[0]))
    if not model.is_moe:
        return ("Log-log plot of the weight bytes each chip holds against the expert-parallel "
                f"degree for the dense model {model.name}: every chip holds all {fmt_b(tot[0])}, "
                f"against {fmt_b(chip.hbm_capacity)} of {chip.name} HBM.")
    return ("Log-log plot of the weight bytes each chip holds against the expert-parallel degree "
            f"for {model.name} at {weight_bytes:g} byte per weight: the routed experts fall from "
            f"{fmt_b(rout[0])} at {n[0]:g} chips to {fmt_b(rout[-1])} at {n[-1]:g}, while the "
            f"replicated {fmt_b(rep[0])} stays, against {fmt_b(chip.hbm_capacity)} of {chip.name} "
            "HBM.")


# ----- the chapter's explorer --------------------------------------------------------------------

EP_DEGREES = [8, 16, 32, 64, 72, 128, 144, 256, 288]


@explorer(main="batch", sweep=BATCHES)
def moe_explorer(model="DeepSeek-V3", chip="GB200", batch=128, expert_parallel=72,
                 redundant_experts=0, kernels="low-latency"):
    """Expert parallelism over a scale-up domain: the all-to-all of one MoE layer against the EP
    degree (it jumps where the group leaves the chip's domain), with the layout's experts and
    bytes per chip, the routing imbalance and the step bound beside it (``kernels``: DeepEP's
    "low-latency" kernels of decode by default, or "normal"). ``batch`` is the tokens
    each chip holds per decode step."""
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "expert_parallel": dropdown("EP chips", EP_DEGREES, snap(expert_parallel, EP_DEGREES)),
        "redundant_experts": dropdown("redundant", [0, 16, 32, 64], redundant_experts),
        "batch": steps("tokens/chip", BATCHES, batch),
        "kernels": dropdown("kernels", list(_moe.ALL_TO_ALL_KERNELS), kernels),
    }

    def figure(v):
        return all_to_all_vs_chips, dict(model=model_of(v["model"]),
                                         chip_list=(chip_of(v["chip"]),),
                                         tokens_per_chip=v["batch"],
                                         mark_chips=v["expert_parallel"],
                                         redundant_experts=v["redundant_experts"],
                                         kernels=v["kernels"])

    return controls, figure, _moe_readout


def _moe_readout(n):
    step = [("step bound, no comm (fp8)", fmt_time(n["step_time"])), ("bound", n["bound"])]
    if not n["is_moe"]:
        return [("model", "dense: no experts to place"),
                ("step bound (fp8)", fmt_time(n["step_time"])), ("bound", n["bound"])]
    return [("experts per chip", f"{n['experts_per_chip']:g} ({n['idle_chips']:g} chips idle)"),
            ("weights per chip (fp8)", fmt_bytes(n["weight_bytes_per_chip"])),
            ("left for KV per chip", fmt_bytes(n["kv_room_per_chip"])),
            ("all-to-all per MoE layer", f"{fmt_time(n['time'])} ({fmt_time(n['scale_up_time'])} "
                                         f"up, {fmt_time(n['scale_out_time'])} out)"),
            ("all-to-all per step", fmt_time(n["time_per_step"])),
            ("busiest chip / mean (random routing)", f"{n['imbalance']:.2f}×"), *step]

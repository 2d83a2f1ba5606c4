"""Figures: partitioning a model (collectives, tensor parallelism, Pope et al.'s layouts,
chip counts)."""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import FuncFormatter, LogLocator

from .. import chips as _chips
from .. import models as _models
from ..collectives import STEP_LATENCIES, collective_time, latency_bandwidth_crossover, torus_dims
from ..parallel import KV_SHARD_CHOICES, best_tensor_parallel, ffn_comm_time, sharded_decode
from ..units import fmt_bytes, fmt_count, fmt_time
from .explore import (
    BATCHES,
    CONTEXTS,
    chip_picker,
    dropdown,
    explorer,
    model_picker,
    or_dash,
    steps,
)
from .figure import builder, chip_of, grid, mask, model_of
from .labels import (
    fmt_b,
    fmt_count_tick,
    fmt_n,
    fmt_t,
    loglim,
    point_candidates,
    set_log,
    with_notes,
)
from .style import PALETTE, ROLE, SMALL, batch_colour

__all__ = ["collective_time_vs_bytes", "tp_step_vs_chips", "ffn_layouts_vs_tokens",
           "latency_cost_vs_chips"]

_NVLS_STEP = STEP_LATENCIES["NVLink SHARP step (H100, NCCL)"][0]

_RING_STEP = STEP_LATENCIES["NVLink ring step (A100, NCCL)"][0]
_TOPO_COLOUR = {"switch": PALETTE["blue"], "ring": PALETTE["vermillion"], "torus": PALETTE["green"]}


def _chip(c):
    return _chips.get(c) if isinstance(c, str) else c


def _model(m):
    return _models.get(m) if isinstance(m, str) else m


def _legend_below(ax, ncol=2):
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=ncol, frameon=False)


def _pow2_axis(ax):
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))


@builder()
def collective_time_vs_bytes(p, chip="H100-SXM", n_chips=8, kind="all-reduce",
                             hop_latency=_RING_STEP,
                             topologies=("switch", "ring", "torus"), sizes=None, mark_bytes=None):
    """Time of one collective against bytes per chip on several topologies (alpha-beta model).

    A flat floor of ``steps x hop_latency`` for small messages, then the bandwidth line
    ``f D / bw``; the knee of the ring curve is marked.
    """
    chip = _chip(chip)
    n = int(n_chips)
    bw = chip.scale_up_bandwidth
    D = grid(sizes, 1e3, 1e10, integer=False)
    ax = p.ax
    ys = []
    for topo in topologies:
        y = np.asarray(collective_time(kind, D, n, bw, hop_latency, topo))
        ys.append(y)
        dims = "×".join(str(d) for d in torus_dims(n)) if topo == "torus" else ""
        p.add(ax.plot(*mask(D, y), color=_TOPO_COLOUR[topo], lw=2.2,
                      label=f"{topo} {dims}".strip())[0])
    bw_only = np.asarray(collective_time(kind, D, n, bw))
    p.add(ax.plot(*mask(D, bw_only), color=ROLE["reference"], ls=":", lw=1.5,
                  label="bandwidth only (Pope et al.)")[0])
    set_log(ax, x=fmt_b, y=fmt_t)
    ax.set_xlim(D.min(), D.max())
    ax.set_ylim(*loglim(np.concatenate(ys + [bw_only]), pad=1.5))
    ax.set_xlabel("message size per chip D (bytes)")
    ax.set_ylabel(f"{kind} time (s)")
    _legend_below(ax)
    knee = float(latency_bandwidth_crossover(kind, n, bw, hop_latency, "ring"))
    p.vline(knee, f"ring knee\n{fmt_b(knee)}", color=_TOPO_COLOUR["ring"], y=0.6)
    with p.marking():
        if mark_bytes is not None:
            d = float(mark_bytes)
            t = float(collective_time(kind, d, n, bw, hop_latency, "ring"))
            p.point(d, t, f"{fmt_b(d)}: {fmt_t(t)}")
            p.numbers = {"ring_time": t}
    ax.set_title(f"{kind} over {n} × {chip.name}, {fmt_t(hop_latency)} a step")
    p.numbers.update(ring_knee=knee)
    return (f"Log-log plot of the time of one {kind} over {n} {chip.name} chips against bytes per "
            f"chip, for {', '.join(topologies)} topologies with {fmt_t(hop_latency)} per step: "
            "flat at the latency floor for small messages, then rising with bytes; on a ring the "
            f"two terms are equal at {fmt_b(knee)} per chip.")


def _tp_setup(p):
    ax = p.ax
    p.l_step, = ax.plot([], [], "o-", color=ROLE["bound"], lw=3.2, alpha=0.55,
                        label="step bound (chapters 3–5)")
    p.l_comm, = ax.plot([], [], "o-", color=PALETTE["purple"], lw=2, label="communication")
    p.l_tot, = ax.plot([], [], "o-", color=ROLE["total"], lw=2.8, label="bound + communication")
    set_log(ax, y=fmt_t)
    ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    _pow2_axis(ax)
    ax.set_xlabel("tensor-parallel chips n (count)")
    ax.set_ylabel("decode step time (s)")
    _legend_below(ax, ncol=2)


@builder(setup=_tp_setup)
def tp_step_vs_chips(p, model="Llama-3-70B", chip="H100-SXM", batch=8, context=4096,
                     hop_latency=_RING_STEP,
                     topology="ring", kv_shard="auto", weight_bytes=2, kv_bytes=2, dtype="bf16",
                     chip_counts=None, mark_chips=None):
    """Decode step of a tensor-parallel replica against its chip count: the bound of chapters 3-5
    (falls as 1/n), the all-reduces' time (rises with n once latency matters) and their sum;
    the fastest count that fits is marked, counts that do not fit are greyed."""
    model, chip = _model(model), _chip(chip)
    dt, dnote = chip.resolve_dtype(dtype)
    context, cnote = model.cap_context(context)
    top = chip.scale_up_domain or 8
    ns = grid(chip_counts if chip_counts is not None
              else [2 ** i for i in range(0, 11) if 2 ** i <= min(top, 256)],
              1, 256)
    kw = dict(kv_shard=kv_shard, weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt)
    runs = [sharded_decode(model, chip, batch, context, int(n), hop_latency, topology, **kw)
            for n in ns]
    step = np.array([r.step.time for r in runs])
    comm = np.array([r.comm for r in runs])
    tot = np.array([r.time for r in runs])
    fits = np.array([bool(r.fits) for r in runs])
    p.l_step.set_data(*mask(ns, step))
    p.l_comm.set_data(*mask(ns, comm))
    p.l_tot.set_data(*mask(ns, tot))
    ax = p.ax
    ax.set_xlim(ns.min() / 1.4, ns.max() * 1.4)
    ax.set_ylim(*loglim(np.concatenate([step, tot, comm[comm > 0]]), pad=1.6))
    if not fits[0]:
        last = ns[~fits].max()
        p.nofit(ns.min() / 1.4, last * 1.2, "does not fit")
    best = None
    if fits.any():
        i = int(np.argmin(np.where(fits, tot, np.inf)))
        best = float(ns[i])
        p.vline(best, f"fastest: n = {best:g}", color=ROLE["total"], y=0.95)
    with p.marking():
        if mark_chips is not None:
            m = float(mark_chips)
            r = sharded_decode(model, chip, batch, context, int(m), hop_latency, topology, **kw)
            if ns.min() <= m <= ns.max():
                p.point(m, r.time, f"n={m:g}: {fmt_t(r.time)}")
            else:
                p.note(f"n = {m:g} is outside this plot (up to "
                       f"{ns.max():g}): {fmt_t(r.time)} a step",
                       loc=(0.98, 0.03), ha="right")
            p.numbers = {"time": r.time, "step": r.step.time, "comm": r.comm,
                         "tp_comm": r.tp_comm, "kv_comm": r.kv_comm, "kv_shard": r.kv_shard,
                         "time_overlapped": r.time_overlapped, "kv_replicas": r.kv_replicas,
                         "hbm_per_chip": r.weights_per_chip + r.kv_per_chip, "fits": r.fits,
                         "chip_seconds_per_token": r.chip_seconds_per_token}
    ax.set_title(with_notes(f"{model.name} on {chip.name}, batch {fmt_n(batch)}, {topology}, "
                            f"{fmt_t(hop_latency)}/step", dnote, cnote))
    p.numbers.update(best_chips=best, best_time=float(tot[ns == best][0]) if best else None)
    if mark_chips is not None:  # the fastest count in the whole scale-up domain, not the plot's
        fastest, _ = best_tensor_parallel(model, chip, batch, context, hop_latency=hop_latency,
                                          topology=topology, **kw)
        p.numbers.update(fastest_chips=fastest)
    return (f"Log-log plot of the decode step of {model.name} at batch {fmt_n(batch)} against "
            "tensor-parallel chips: the step bound falls as 1/n while the all-reduce time on a "
            f"{topology} with {fmt_t(hop_latency)} per step grows; their sum is smallest at "
            + (f"{best:g} chips." if best else "no count that fits."))


_LAYOUT_COLOUR = (PALETTE["vermillion"], PALETTE["orange"], PALETTE["green"], PALETTE["purple"])
_LAYOUT_NAMES = {"1d-ws": "1D weight-stationary", "2d-ws": "2D weight-stationary",
                 "wg-xyz": "XYZ weight-gathered", "wg-opt": "weight-gathered, best n_wg"}


@builder()
def ffn_layouts_vs_tokens(p, model="PaLM-540B", chip="TPU v4", n_chips=64, tokens=None,
                          weight_bytes=2,
                          layouts=("1d-ws", "2d-ws", "wg-xyz"), dtype="bf16", mark_tokens=None):
    """Communication time of one feed-forward layer against tokens per batch under Pope et al.'s
    layouts (§3.2), beside the layer's matmul time at peak; the WS/WG crossover is marked. The
    weight gathers move the model's own ``D x F`` matrices (3 for a gated MLP, where Pope et al.'s
    closed forms count 2)."""
    model, chip = _model(model), _chip(chip)
    dt, dnote = chip.resolve_dtype(dtype)
    n = int(n_chips)
    bw = chip.scale_up_bandwidth
    T = grid(tokens, 1, 2 ** 21, integer=False)
    E, F = model.d_model, model.d_ff
    axes = torus_dims(n)
    mats = 3 if model.gated_mlp else 2   # the weight gathers move every D x F matrix
    ax = p.ax
    ys = {}
    for i, lay in enumerate(layouts):
        y = np.asarray(ffn_comm_time(lay, T, E, F, n, bw, weight_bytes=weight_bytes, axes=axes,
                                     n_mats=mats))
        ys[lay] = y
        p.add(ax.plot(*mask(T, y), color=_LAYOUT_COLOUR[i % 4], lw=2.2,
                      label=_LAYOUT_NAMES.get(lay, lay))[0])
    comp = 2.0 * T * mats * E * F / (n * chip.peak(dt))
    p.add(ax.plot(*mask(T, comp), color=ROLE["compute"], ls="--", lw=1.8,
                  label="matmul time at peak")[0])
    set_log(ax, x=fmt_count_tick, y=fmt_t)
    ax.set_xlim(T.min(), T.max())
    ax.set_ylim(*loglim(np.concatenate(list(ys.values()) + [comp]), pad=1.5))
    ax.set_xlabel("tokens per batch (count)")
    ax.set_ylabel("time per feed-forward layer (s)")
    _legend_below(ax)
    cross = None
    if "2d-ws" in ys and "wg-xyz" in ys:
        # both are a + b T: solve a_wg + b_wg T = b_ws T exactly
        f = {lay: [float(ffn_comm_time(lay, t, E, F, n, bw, weight_bytes=weight_bytes, axes=axes,
                                       n_mats=mats))
                   for t in (1.0, 2.0)]
             for lay in ("2d-ws", "wg-xyz")}
        slope = {lay: v[1] - v[0] for lay, v in f.items()}
        icpt = f["wg-xyz"][0] - slope["wg-xyz"]
        if slope["2d-ws"] > slope["wg-xyz"]:
            cross = icpt / (slope["2d-ws"] - slope["wg-xyz"])
            if T.min() <= cross <= T.max():
                p.vline(cross, f"WG wins above\n{fmt_count(cross)} tokens", color=PALETTE["grey"],
                        y=0.95)
    with p.marking():
        if mark_tokens is not None:
            t = float(mark_tokens)
            v = float(ffn_comm_time("2d-ws", t, E, F, n, bw, weight_bytes=weight_bytes))
            p.point(t, v, f"{fmt_n(t)} tokens")
            p.numbers = {"2d_ws": v}
    ax.set_title(with_notes(f"{model.name} feed-forward layer on {n} × "
                            f"{chip.name} ({'×'.join(map(str, axes))})",
                            dnote))
    p.numbers.update(crossover_tokens=cross)
    return (f"Log-log plot of one feed-forward layer's communication time for {model.name} on {n} "
            f"{chip.name} chips against tokens per batch, for "
            f"{', '.join(_LAYOUT_NAMES.get(x, x) for x in layouts)}, with the matmul time at peak: "
            "weight-stationary grows in proportion to tokens, weight-gathered as their square root"
            + (f", so weight-gathering wins above about {fmt_n(cross)} tokens." if cross else "."))


@builder()
def latency_cost_vs_chips(p, model="Llama-3-70B", chip="GB200", batches=(1, 8, 64, 256),
                          context=4096, hop_latency=_NVLS_STEP, topology="switch", kv_shard="auto",
                          weight_bytes=2, kv_bytes=2,
                          dtype="bf16", chip_counts=None, mark_chips=None, mark_batch=None):
    """Latency per token against cost (chip-seconds per token) as the chip count grows, one curve
    per batch: the frontier a planner chooses from. Points are 1, 2, 4, ... chips (those that fit);
    each curve's fastest point is ringed: beyond it more chips cost more and are slower."""
    model, chip = _model(model), _chip(chip)
    dt, dnote = chip.resolve_dtype(dtype)
    context, cnote = model.cap_context(context)
    kw = dict(kv_shard=kv_shard, weight_bytes=weight_bytes, kv_bytes=kv_bytes, dtype=dt)
    top = chip.scale_up_domain or 8
    ns = [int(n) for n in (chip_counts if chip_counts is not None
                           else [2 ** i for i in range(11) if 2 ** i <= min(top, 256)])]
    ax = p.ax
    xs_all, ys_all, best = [], [], {}
    for b in batches:
        runs = [sharded_decode(model, chip, b, context, n, hop_latency, topology, **kw) for n in ns]
        pts = [(n, r.time, r.chip_seconds_per_token)
               for n, r in zip(ns, runs, strict=True) if bool(r.fits)]
        if not pts:
            continue
        x = np.array([q[1] for q in pts])
        y = np.array([q[2] for q in pts])
        xs_all.append(x)
        ys_all.append(y)
        p.add(ax.plot(x, y, "o-", color=batch_colour(b), lw=2, ms=5,
                      label=f"batch {fmt_n(b)}")[0])
        j = int(np.argmin(x))
        best[float(b)] = pts[j][0]
        p.add(ax.plot([x[j]], [y[j]], "o", ms=12, mfc="none", mec=batch_colour(b), mew=2)[0])
        p.label(x[j], y[j], f"n={pts[j][0]}", point_candidates((-9, 0), "right", "center"),
                color=batch_colour(b), fontsize=SMALL)
    set_log(ax, x=fmt_t, y=lambda v: f"{v:.2g}")
    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
    if xs_all:
        allx, ally = np.concatenate(xs_all), np.concatenate(ys_all)
        ax.set_xlim(*loglim(allx, pad=1.6))
        ax.set_ylim(*loglim(ally, pad=1.8))
    ax.set_xlabel("time per token (s)")
    ax.set_ylabel("cost (chip-seconds per token)")
    _legend_below(ax, ncol=4)
    with p.marking():
        if mark_chips is not None:
            mb = batches[0] if mark_batch is None else mark_batch
            r = sharded_decode(model, chip, mb, context, int(mark_chips), hop_latency, topology,
                               **kw)
            x0, x1 = ax.get_xlim()
            y0, y1 = ax.get_ylim()
            label = f"n={float(mark_chips):g}, B={float(mb):g}"
            if x0 <= r.time <= x1 and y0 <= r.chip_seconds_per_token <= y1:
                p.point(r.time, r.chip_seconds_per_token, label)
            else:
                p.note(f"{label}: {fmt_t(r.time)}, {r.chip_seconds_per_token:.2g} "
                       "chip-s/token (off the plot)",
                       loc=(0.98, 0.03), ha="right")
            p.numbers = {"time": r.time, "cost": r.chip_seconds_per_token}
    ax.set_title(with_notes(f"{model.name} on {chip.name}: chips 1 to {max(ns)}, {topology}, "
                            f"{fmt_t(hop_latency)}/step", dnote, cnote))
    p.numbers.update(fastest_chips=best)
    return ("Log-log plot of cost in chip-seconds per token against time per token for "
            f"{model.name} on {chip.name}, one curve per batch, points at 1, 2, 4 ... chips: more "
            "chips first cut latency at little extra cost, then communication makes them slower "
            "and dearer; the fastest counts are "
            + ", ".join(f"{n} at batch {fmt_n(b)}" for b, n in best.items()) + ".")


# ----- the chapter's explorer --------------------------------------------------------------------

_LATENCIES = [("0 (bandwidth only)", 0.0), ("1 µs", 1e-6), ("2.4 µs (NVLink ring)", 2.4e-6),
              ("3 µs (NVLink SHARP)", 3e-6), ("10 µs", 1e-5), ("77 µs (InfiniBand)", 77e-6)]


@explorer(main="n_chips", sweep=[1, 2, 4, 8, 16, 32, 64])
def partition_explorer(model="Llama-3-70B", chip="H100-SXM", batch=8, context=4096, n_chips=8,
                       topology="ring", hop_latency=2.4e-6, kv_shard="auto"):
    """Tensor parallelism with its communication: the decode step bound falls as 1/n while the
    all-reduces (alpha-beta model, ``hop_latency`` per step on ``topology``) do not; the panel gives
    the parts of the step, the cost per token and the fastest chip count."""
    controls = {
        "model": model_picker(model), "chip": chip_picker(chip),
        "batch": steps("batch B", BATCHES, batch),
        "context": steps("context", CONTEXTS, context),
        "topology": dropdown("topology", ["switch", "ring", "torus"], topology),
        "hop_latency": dropdown("per step", _LATENCIES, hop_latency),
        "kv_shard": dropdown("KV split by", list(KV_SHARD_CHOICES), kv_shard),
        "n_chips": steps("chips n", [1, 2, 4, 8, 16, 32, 64, 128, 256], n_chips),
    }

    def figure(v):
        m, c = model_of(v["model"]), chip_of(v["chip"])
        ctx, _ = m.cap_context(v["context"])
        return tp_step_vs_chips, dict(model=m, chip=c, batch=v["batch"], context=ctx,
                                      hop_latency=v["hop_latency"], topology=v["topology"],
                                      kv_shard=v["kv_shard"], mark_chips=v["n_chips"])

    return controls, figure, _partition_readout


def _partition_readout(n):
    return [("step bound (ch. 3-5)", fmt_time(n["step"])),
            ("tensor-parallel all-reduces", fmt_time(n["tp_comm"])),
            ("KV split by", str(n["kv_shard"])),
            ("attention resharding", fmt_time(n["kv_comm"])),
            ("step, not overlapped", fmt_time(n["time"])),
            ("step, fully overlapped", fmt_time(n["time_overlapped"])),
            ("KV copies read", f"{n['kv_replicas']:.3g}"),
            ("HBM per chip", fmt_bytes(n["hbm_per_chip"])),
            ("fits", "yes" if n["fits"] else "no"),
            ("chip-seconds per token", f"{n['chip_seconds_per_token']:.3g}"),
            ("fastest count in the domain", or_dash(n["fastest_chips"], lambda x: f"{x:g}"))]

"""Collectives with a fixed cost per step: the latency-plus-bandwidth (alpha-beta) model.

A collective over ``n`` chips moves ``D`` bytes per chip through a network whose per-chip,
one-direction bandwidth is ``bw`` (``Chip.scale_up_bandwidth``, all of a chip's links together),
in a number of sequential **steps**, each paying a fixed cost ``alpha`` (launch, synchronisation,
one link traversal):

    ``t = steps(kind, topology, n) x alpha + f(kind, topology, n) x D / bw``.

``D`` is the per-chip size Pope et al. (2022, App. A.1) use: the *output* of an all-gather, the
*input* of a reduce-scatter, the buffer of an all-reduce, the bytes each chip holds for an
all-to-all (of which the share ``(n-1)/n`` leaves it). Bandwidth factors ``f``:

- all-gather, reduce-scatter: ``(n-1)/n`` on every topology here (a bidirectional ring, a
  switch or a torus can all keep every link busy); all-reduce twice that.
- all-to-all: ``(n-1)/n`` through a switch; on a ring or torus each byte crosses several links,
  so ``f = sum_i s(d_i)/d_i`` with ``s(d) = floor(d^2/4)`` the sum of the hop distances from one
  chip to all others on a ring of ``d`` (``n/4`` on one ring, growing as the diameter does).

Steps ``alpha`` is paid for (the standard algorithms):

- ``"switch"`` (NVSwitch): the direct algorithm, every chip writing to every other at once:
  1 step (2 for an all-reduce, a reduce-scatter then an all-gather).
- ``"ring"``: ``n-1`` steps (``2(n-1)`` for an all-reduce), the ring algorithm NCCL uses.
- ``"torus"`` with sides ``dims``: a ring along each dimension in turn, ``sum_i (d_i - 1)``
  steps (twice that for an all-reduce). An all-to-all takes the same count of pairwise steps.

With ``hop_latency=0`` every topology gives Pope et al.'s bandwidth-only times (all-to-all on a
ring or torus excepted), which is why :mod:`llmmath.parallel` keeps ``topology="switch"`` and
``hop_latency=0`` as its defaults. Everything is a lower bound: no congestion, no protocol
overhead (NCCL reaches about 80% of NVLink's line rate), no overlap with compute assumed.

All sizes in bytes, bandwidths in bytes/s, times in seconds; ``bytes_per_chip`` broadcasts.
"""

from __future__ import annotations

import math

import numpy as np

from ._check import choice, positive
from ._check import n_chips as n_chips_check
from ._check import scalar_or_array as _out

__all__ = [
    "COLLECTIVES",
    "TOPOLOGIES",
    "STEP_LATENCIES",
    "NCCL_NVLINK_EFFICIENCY",
    "torus_dims",
    "collective_steps",
    "bandwidth_factor",
    "collective_time",
    "latency_bandwidth_crossover",
]

#: The four collectives, by name.
COLLECTIVES = ("all-gather", "reduce-scatter", "all-reduce", "all-to-all")
#: Network shapes :func:`collective_time` knows.
TOPOLOGIES = ("switch", "ring", "torus")

#: Measured fixed costs per collective step (seconds), with their sources. Change them to try
#: other hardware; the book quotes them, never types them.
STEP_LATENCIES = {
    # nccl-tests issue 123: ring all-reduce of <= 128 B over 8 A100s on NVLink (DGX A100,
    # NCCL_ALGO=Ring, one channel): 33.7 us for 2 x (8 - 1) = 14 steps, 2.4 us a step.
    "NVLink ring step (A100, NCCL)": (33.7e-6 / 14, "nccl_tests_latency"),
    # NCCL issue 1259: NVLink SHARP (NVLS) all-reduce on 2 H100s of an HGX node, about 6 us for
    # a small message: a switch all-reduce, 2 steps of about 3 us.
    "NVLink SHARP step (H100, NCCL)": (6e-6 / 2, "nccl_nvls_latency"),
    # DeepEP's low-latency dispatch of 128 tokens across InfiniBand to 8 GPUs on other nodes
    # (H800, ConnectX-7): one scale-out exchange, 77 us (also the pipelining chapter's hop).
    "InfiniBand exchange (DeepEP, EP8)": (77e-6, "deepseek_deepep"),
}

#: Bus bandwidth NCCL reaches on NVLink 4 over the 450 GB/s line rate: about 370 GB/s
#: ("protocol overhead ~20%", nccl-tests issue 212, ``nccl_nvlink_busbw``).
NCCL_NVLINK_EFFICIENCY = 370 / 450


def torus_dims(n_chips, k=3):
    """The most nearly cubic ``k`` sides (largest first) whose product is ``n_chips``.

    ``torus_dims(64) == (4, 4, 4)``, ``torus_dims(32) == (4, 4, 2)``,
    ``torus_dims(8, 2) == (4, 2)``.
    """
    n = int(n_chips_check(n_chips))
    k = int(positive("k", k, integer=True, maximum=6))
    best = None
    def search(rest, parts):
        nonlocal best
        if len(parts) == k - 1:
            cand = tuple(sorted(parts + [rest], reverse=True))
            if best is None or (max(cand) - min(cand), cand) < (max(best) - min(best), best):
                best = cand
            return
        for d in range(1, rest + 1):
            if rest % d == 0:
                search(rest // d, parts + [d])
    search(n, [])
    return best


def _dims(n, topology, dims):
    """Ring lengths the collective runs along: (n,) for a ring, the torus sides for a torus."""
    if topology == "ring":
        return (n,)
    if dims is None:
        return torus_dims(n)
    sides = tuple(int(positive(f"dims[{i}]", d, integer=True)) for i, d in enumerate(dims))
    if math.prod(sides) != n:
        raise ValueError(f"dims: got {dims!r}, whose product is "
                         f"{math.prod(sides)}; it must equal n_chips={n}")
    return sides


def _ring_distance_sum(d):
    """Sum of shortest hop counts from one chip to all others on a bidirectional ring of d."""
    return (d * d) // 4


def _scalar_n(n):
    n = n_chips_check(n)
    if type(n) is not float:
        raise TypeError(f"n_chips: got an array {n!r}; ring and torus step counts take one chip "
                        "count (loop over counts, or use topology='switch')")
    return int(n)


def collective_steps(kind, n_chips, topology="switch", dims=None):
    """How many sequential steps (each paying the per-step latency) a collective takes.

    Switch: 1 (all-reduce 2). Ring: ``n-1`` (all-reduce ``2(n-1)``). Torus: ``sum_i (d_i - 1)``
    (all-reduce twice that). One chip: 0.
    """
    choice("kind", kind, COLLECTIVES)
    choice("topology", topology, TOPOLOGIES)
    twice = 2 if kind == "all-reduce" else 1
    if topology == "switch":
        n = n_chips_check(n_chips)
        return _out(np.where(np.asarray(n) > 1, float(twice), 0.0))
    n = _scalar_n(n_chips)
    return float(twice * sum(d - 1 for d in _dims(n, topology, dims)))


def bandwidth_factor(kind, n_chips, topology="switch", dims=None):
    """``f`` in ``t_bw = f D / bw``: ``(n-1)/n`` (twice for all-reduce); an all-to-all on a ring or
    torus ``sum_i floor(d_i^2/4)/d_i`` (bytes cross several links on the way)."""
    choice("kind", kind, COLLECTIVES)
    choice("topology", topology, TOPOLOGIES)
    if kind != "all-to-all" or topology == "switch":
        n = n_chips_check(n_chips)
        f = (np.asarray(n) - 1.0) / n
        return _out(2.0 * f if kind == "all-reduce" else f)
    n = _scalar_n(n_chips)
    return float(sum(_ring_distance_sum(d) / d for d in _dims(n, topology, dims)))


def collective_time(kind, bytes_per_chip, n_chips, bandwidth, hop_latency=0.0, topology="switch",
                    dims=None):
    """Time of one collective: ``steps x hop_latency + f x D / bandwidth`` (seconds).

    ``kind`` one of :data:`COLLECTIVES`; ``bytes_per_chip`` is ``D`` (see the module docstring);
    ``bandwidth`` per chip, one direction (B/s); ``hop_latency`` the fixed cost of one step (s; see
    :data:`STEP_LATENCIES`); ``topology`` one of :data:`TOPOLOGIES`, with the torus sides ``dims``
    (default: the most nearly cubic 3D torus of ``n_chips``).
    """
    d = positive("bytes_per_chip", bytes_per_chip, allow_zero=True)
    bw = positive("bandwidth", bandwidth)
    alpha = positive("hop_latency", hop_latency, allow_zero=True)
    steps = collective_steps(kind, n_chips, topology, dims)
    f = bandwidth_factor(kind, n_chips, topology, dims)
    return _out(np.asarray(steps) * alpha + np.asarray(f) * d / bw)


def latency_bandwidth_crossover(kind, n_chips, bandwidth, hop_latency, topology="switch",
                                dims=None):
    """The message size ``D*`` (bytes per chip) at which the latency and bandwidth terms are equal:
    ``D* = steps x alpha x bw / f``. Below it a collective is latency-bound."""
    bw = positive("bandwidth", bandwidth)
    alpha = positive("hop_latency", hop_latency)
    steps = np.asarray(collective_steps(kind, n_chips, topology, dims))
    f = np.asarray(bandwidth_factor(kind, n_chips, topology, dims))
    with np.errstate(divide="ignore", invalid="ignore"):
        return _out(np.where(f > 0, steps * alpha * bw / np.where(f > 0, f, 1.0), 0.0))

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

Steps ``alpha`` is paid for, by **algorithm** (``algorithm=None`` takes the topology's own, the
first of each line):

- ``"direct"`` on a ``"switch"`` (NVSwitch): every chip writes to every other at once: 1 step
  (2 for an all-reduce, a reduce-scatter then an all-gather: the "two-shot" all-reduce; NVLink
  SHARP's measured small all-reduce is two such steps, ``nccl_nvls_latency``).
- ``"ring"``: ``n-1`` steps (``2(n-1)`` for an all-reduce), the ring algorithm of NCCL and MPI
  (Thakur et al. 2005, ``thakur2005collectives``); the default on a ``"ring"``, and it runs on a
  switch too (the measured NVLink ring step of :data:`STEP_LATENCIES` is one, on an NVSwitch).
- on a ``"torus"`` with sides ``dims``: a ring along each dimension in turn, ``sum_i (d_i - 1)``
  steps (twice that for an all-reduce), Pope et al.'s (2022, App. A.1) collectives. An all-to-all
  takes the same count of pairwise steps.
- ``"tree"`` (all-reduce only, any topology): NCCL's double binary tree, a reduce up and a
  broadcast down, ``2 ceil(log2 n)`` steps. Each chip is an inner node of one of the two trees
  and a leaf of the other and sends about twice the buffer, ``f = 2`` (a ring's ``2(n-1)/n``
  rounded up). NCCL added trees "for small and medium size messages" at scale
  (``nccl_tree_release``); inside one node it rarely picks them (``vllm_custom_allreduce``).
- ``"one-shot"`` (all-reduce only, a switch or full mesh): every chip reads (or writes) every
  other chip's whole buffer and sums locally: 1 step, but ``f = n-1``. The custom all-reduces of
  vLLM (below 256 kB on 8 GPUs, ``vllm_custom_allreduce``) and TensorRT-LLM (its ``ONESHOT``
  strategy, ``flashinfer_trtllm_allreduce``) use it for decode-size messages.

With ``hop_latency=0`` every topology gives Pope et al.'s bandwidth-only times (all-to-all on a
ring or torus, and the tree and one-shot factors, excepted), which is why :mod:`llmmath.parallel`
keeps ``topology="switch"``, ``algorithm=None`` and ``hop_latency=0`` as its defaults. Everything is
a lower bound: no congestion, no protocol overhead (NCCL reaches about 80% of NVLink's line rate;
its LL and LL128 protocols trade bandwidth for a shorter step), no bidirectional rings on a torus
(half the steps), no overlap with compute assumed.

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
    "ALGORITHMS",
    "default_algorithm",
    "STEP_LATENCIES",
    "NCCL_NVLINK_EFFICIENCY",
    "NCCL_NVLINK3_EFFICIENCY",
    "NCCL_NVLINK_EFFICIENCY_BY_CHIP",
    "VLLM_ONE_SHOT_BYTES",
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
#: Collective algorithms (see the module docstring); ``algorithm=None`` is the topology's own.
ALGORITHMS = ("direct", "ring", "tree", "one-shot")
_OWN = {"switch": "direct", "ring": "ring", "torus": "ring"}

#: Measured fixed costs per collective step (seconds), with their sources. Change them to try
#: other hardware; the book quotes them, never types them.
STEP_LATENCIES = {
    # nccl-tests issue 123: ring all-reduce of <= 128 B over 8 A100s on NVLink (DGX A100,
    # NCCL_ALGO=Ring, one channel): 33.7 us for 2 x (8 - 1) = 14 steps, 2.4 us a step. One
    # measurement of one GPU generation on one channel stands for every ring the book prices
    # (H100, GB200, the TPU torus): say so where it is used.
    "NVLink ring step (A100, NCCL)": (33.7e-6 / 14, "nccl_tests_latency"),
    # NCCL issue 1259: NVLink SHARP (NVLS) all-reduce on 2 H100s of an HGX node, about 6 us for
    # a small message: a switch all-reduce, 2 steps of about 3 us.
    "NVLink SHARP step (H100, NCCL)": (6e-6 / 2, "nccl_nvls_latency"),
    # DeepEP's low-latency dispatch of 128 tokens across InfiniBand to 8 GPUs on other nodes
    # (H800, ConnectX-7): one scale-out exchange, 77 us (also the pipelining chapter's hop).
    "InfiniBand exchange (DeepEP, EP8)": (77e-6, "deepseek_deepep"),
}

#: Messages below which vLLM's custom all-reduce runs its one-shot kernel on 5 to 8 GPUs (bytes):
#: ``bytes < 256 * 1024`` in csrc/custom_all_reduce.cuh (512 KiB on up to 4 GPUs; two GPUs always
#: one-shot), ``vllm_custom_allreduce``. Above it, two-shot (a reduce-scatter then an all-gather).
VLLM_ONE_SHOT_BYTES = 256 * 1024

#: Bus bandwidth NCCL reaches on NVLink 4 over the 450 GB/s line rate: about 370 GB/s
#: ("protocol overhead ~20%", nccl-tests issue 212, ``nccl_nvlink_busbw``).
NCCL_NVLINK_EFFICIENCY = 370 / 450

#: The same on an A100's NVLink 3 (12 links of 25 GB/s each way, 300 GB/s): a maintainer, "Each
#: NVLink has a line rate of 25GB/s (in each direction) which converts to ~20GB/s effective
#: bandwidth with a 128B payload size ... The total effective bandwidth should therefore be
#: 240GB/s on A100, but some other bottlenecks on the GPUs limits it to ~230GB/s" (nccl-tests
#: issue 149, ``nccl_a100_busbw``): 230 of 300 GB/s.
NCCL_NVLINK3_EFFICIENCY = 230 / 300

#: NCCL's NVLink efficiency by chip name, where a measurement of that generation is cited; other
#: chips take :data:`NCCL_NVLINK_EFFICIENCY` (H100's).
NCCL_NVLINK_EFFICIENCY_BY_CHIP = {"A100-SXM-80GB": NCCL_NVLINK3_EFFICIENCY}


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


def default_algorithm(topology="switch"):
    """The algorithm ``algorithm=None`` stands for: ``"direct"`` on a switch, ``"ring"`` on a ring
    or torus (a ring along each axis)."""
    return _OWN[choice("topology", topology, TOPOLOGIES)]


def _algorithm(kind, topology, algorithm):
    """Validate ``kind``, ``topology`` and ``algorithm``; return the algorithm (None resolved)."""
    choice("kind", kind, COLLECTIVES)
    choice("topology", topology, TOPOLOGIES)
    if algorithm is None:
        return _OWN[topology]
    choice("algorithm", algorithm, ALGORITHMS)
    if algorithm in ("tree", "one-shot") and kind != "all-reduce":
        raise ValueError(f"algorithm: got {algorithm!r} for kind={kind!r}; it is an all-reduce "
                         "algorithm (use algorithm=None or 'ring' for other collectives)")
    if algorithm in ("direct", "one-shot") and topology != "switch":
        raise ValueError(f"algorithm: got {algorithm!r} on topology={topology!r}; it needs "
                         "every chip one hop from every other (topology='switch')")
    if kind == "all-to-all" and algorithm != _OWN[topology]:
        raise ValueError(f"algorithm: got {algorithm!r} for an all-to-all on {topology!r}; an "
                         f"all-to-all takes the topology's own ({_OWN[topology]!r}, or None)")
    return algorithm


def collective_steps(kind, n_chips, topology="switch", dims=None, algorithm=None):
    """How many sequential steps (each paying the per-step latency) a collective takes.

    Direct (a switch's own): 1 (all-reduce 2). Ring: ``n-1`` (all-reduce ``2(n-1)``). Torus:
    ``sum_i (d_i - 1)`` (all-reduce twice that). Tree (all-reduce): ``2 ceil(log2 n)``. One-shot
    (all-reduce): 1. One chip: 0. ``algorithm=None`` is the topology's own
    (:func:`default_algorithm`).
    """
    alg = _algorithm(kind, topology, algorithm)
    twice = 2 if kind == "all-reduce" else 1
    if alg in ("direct", "one-shot", "tree") or (alg == "ring" and topology == "switch"):
        n = np.asarray(n_chips_check(n_chips))
        per = {"direct": float(twice), "one-shot": 1.0,
               "tree": 2.0 * np.ceil(np.log2(np.maximum(n, 1.0))),
               "ring": twice * (n - 1.0)}[alg]
        return _out(np.where(n > 1, per, 0.0))
    n = _scalar_n(n_chips)
    return float(twice * sum(d - 1 for d in _dims(n, topology, dims)))


def bandwidth_factor(kind, n_chips, topology="switch", dims=None, algorithm=None):
    """``f`` in ``t_bw = f D / bw``: ``(n-1)/n`` (twice for all-reduce); an all-to-all on a ring or
    torus ``sum_i floor(d_i^2/4)/d_i`` (bytes cross several links on the way); a tree all-reduce
    2; a one-shot all-reduce ``n-1`` (every chip receives every other's whole buffer)."""
    alg = _algorithm(kind, topology, algorithm)
    if alg in ("tree", "one-shot"):
        n = np.asarray(n_chips_check(n_chips))
        return _out(np.where(n > 1, 2.0 if alg == "tree" else n - 1.0, 0.0))
    if kind != "all-to-all" or topology == "switch":
        n = n_chips_check(n_chips)
        f = (np.asarray(n) - 1.0) / n
        return _out(2.0 * f if kind == "all-reduce" else f)
    n = _scalar_n(n_chips)
    return float(sum(_ring_distance_sum(d) / d for d in _dims(n, topology, dims)))


def collective_time(kind, bytes_per_chip, n_chips, bandwidth, hop_latency=0.0, topology="switch",
                    dims=None, algorithm=None):
    """Time of one collective: ``steps x hop_latency + f x D / bandwidth`` (seconds).

    ``kind`` one of :data:`COLLECTIVES`; ``bytes_per_chip`` is ``D`` (see the module docstring);
    ``bandwidth`` per chip, one direction (B/s); ``hop_latency`` the fixed cost of one step (s; see
    :data:`STEP_LATENCIES`); ``topology`` one of :data:`TOPOLOGIES`, with the torus sides ``dims``
    (default: the most nearly cubic 3D torus of ``n_chips``); ``algorithm`` one of
    :data:`ALGORITHMS`, default the topology's own (direct on a switch, rings on a ring or torus).
    """
    d = positive("bytes_per_chip", bytes_per_chip, allow_zero=True)
    bw = positive("bandwidth", bandwidth)
    alpha = positive("hop_latency", hop_latency, allow_zero=True)
    steps = collective_steps(kind, n_chips, topology, dims, algorithm)
    f = bandwidth_factor(kind, n_chips, topology, dims, algorithm)
    return _out(np.asarray(steps) * alpha + np.asarray(f) * d / bw)


def latency_bandwidth_crossover(kind, n_chips, bandwidth, hop_latency, topology="switch",
                                dims=None, algorithm=None):
    """The message size ``D*`` (bytes per chip) at which the latency and bandwidth terms are equal:
    ``D* = steps x alpha x bw / f``. Below it a collective is latency-bound."""
    bw = positive("bandwidth", bandwidth)
    alpha = positive("hop_latency", hop_latency)
    steps = np.asarray(collective_steps(kind, n_chips, topology, dims, algorithm))
    f = np.asarray(bandwidth_factor(kind, n_chips, topology, dims, algorithm))
    with np.errstate(divide="ignore", invalid="ignore"):
        return _out(np.where(f > 0, steps * alpha * bw / np.where(f > 0, f, 1.0), 0.0))

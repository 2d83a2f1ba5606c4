"""The alpha-beta collective model (llmmath.collectives), against hand-computed values.

Every expected number below is worked by hand in the comment beside it: steps x alpha plus a
bandwidth factor x D / bw, with the hop-distance sums of a ring counted chip by chip.
"""

import numpy as np
import pytest

from llmmath import models
from llmmath.collectives import (
    STEP_LATENCIES,
    bandwidth_factor,
    collective_steps,
    collective_time,
    latency_bandwidth_crossover,
    torus_dims,
)
from llmmath.parallel import all_gather_time, all_reduce_time, all_to_all_time, reduce_scatter_time

D, BW = 1e6, 100e9


def test_ring_all_reduce_by_hand():
    # 8 chips: 2 x 7 = 14 steps of 2 us = 28 us; bandwidth 2 x 7/8 x 1 MB / 100 GB/s = 17.5 us
    assert collective_time("all-reduce", D, 8, BW, 2e-6, "ring") == pytest.approx(45.5e-6)
    assert collective_steps("all-reduce", 8, "ring") == 14


def test_switch_all_gather_by_hand():
    # one direct step: 2 us + 7/8 x 10 us = 10.75 us; an all-reduce takes two steps
    assert collective_time("all-gather", D, 8, BW, 2e-6, "switch") == pytest.approx(10.75e-6)
    assert collective_steps("all-reduce", 8, "switch") == 2
    assert collective_steps("all-gather", 1, "switch") == 0


def test_torus_all_reduce_by_hand():
    # 4x4x4: rings of 4 along each axis, 3 + 3 + 3 = 9 steps each way, 18 in all; 1 us a step
    assert collective_steps("all-reduce", 64, "torus") == 18
    assert collective_time("all-reduce", D, 64, BW, 1e-6, "torus", dims=(4, 4, 4)) == pytest.approx(
        18e-6 + 2 * 63 / 64 * 1e-5)
    assert collective_steps("all-gather", 32, "torus", dims=(8, 4, 1)) == 7 + 3


@pytest.mark.parametrize("n, topology, dims, expected", [
    (4, "switch", None, 3 / 4),            # (n-1)/n
    (4, "ring", None, 1.0),               # distances 1, 2, 1 -> 4; 4 / 4
    (8, "ring", None, 2.0),               # 1+2+3+4+3+2+1 = 16; 16 / 8
    (5, "ring", None, 6 / 5),             # 1+2+2+1 = 6 (odd ring)
    (8, "torus", (2, 2, 2), 1.5),         # 3 at 1 hop, 3 at 2, 1 at 3: 12 / 8
    (64, "torus", (4, 4, 4), 3.0),        # each axis 4/4 = 1
])
def test_all_to_all_bandwidth_factor_by_hand(n, topology, dims, expected):
    assert bandwidth_factor("all-to-all", n, topology, dims) == pytest.approx(expected)


def test_crossover_by_hand():
    # ring all-reduce, 8 chips, 2 us, 100 GB/s: D* = 14 x 2 us x 100 GB/s / 1.75 = 1.6 MB
    d = latency_bandwidth_crossover("all-reduce", 8, BW, 2e-6, "ring")
    assert d == pytest.approx(1.6e6)
    assert collective_time("all-reduce", d, 8, BW, 2e-6, "ring") == pytest.approx(2 * 28e-6)


def test_torus_dims():
    assert torus_dims(64) == (4, 4, 4)
    assert torus_dims(32) == (4, 4, 2)
    assert torus_dims(8, 2) == (4, 2)
    assert torus_dims(1) == (1, 1, 1)


def test_defaults_keep_popes_times():
    # parallel.* with no latency and a switch are Pope et al.'s bandwidth-only formulas, unchanged
    for n in (2, 8, 64):
        assert all_gather_time(D, n, BW) == pytest.approx(D / BW * (n - 1) / n)
        assert all_reduce_time(D, n, BW) == pytest.approx(2 * D / BW * (n - 1) / n)
        # with zero latency, ring and torus all-gathers and all-reduces equal the switch's
        for topo in ("ring", "torus"):
            assert all_reduce_time(D, n, BW, 0.0, topo) == pytest.approx(all_reduce_time(D, n, BW))
    assert reduce_scatter_time(D, 8, BW, 1e-6, "ring") == pytest.approx(7e-6 + 7 / 8 * 1e-5)
    assert all_to_all_time(D, 8, BW, 1e-6, "ring") == pytest.approx(7e-6 + 2 * 1e-5)


def test_step_latencies_are_the_cited_measurements():
    # nccl-tests issue 123: 33.7 us for a ring all-reduce over 8 A100s = 14 steps -> 2.41 us
    t, key = STEP_LATENCIES["NVLink ring step (A100, NCCL)"]
    assert t == pytest.approx(2.41e-6, rel=0.01) and key
    assert all(key for _, key in STEP_LATENCIES.values())


def test_broadcasts_over_bytes():
    t = collective_time("all-reduce", np.array([1e3, 1e6, 1e9]), 8, BW, 2e-6, "ring")
    assert t.shape == (3,) and np.all(np.diff(t) > 0)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="topology"):
        collective_time("all-reduce", D, 8, BW, 0.0, "mesh")
    with pytest.raises(ValueError, match="kind"):
        collective_time("broadcast", D, 8, BW)
    with pytest.raises(ValueError, match="dims"):
        collective_time("all-gather", D, 8, BW, 0.0, "torus", dims=(2, 2, 3))
    with pytest.raises(ValueError, match="hop_latency"):
        collective_time("all-gather", D, 8, BW, -1e-6)
    with pytest.raises(TypeError, match="n_chips"):
        collective_time("all-gather", D, np.array([4, 8]), BW, 1e-6, "ring")
    with pytest.raises(ValueError, match="n_chips"):
        collective_time("all-gather", D, 2.5, BW)
    with pytest.raises(TypeError, match="bytes_per_chip"):
        collective_time("all-gather", "1 MB", 8, BW)


def test_model_is_not_a_collective_argument():
    with pytest.raises(TypeError):
        collective_time("all-gather", models.get("PaLM-540B"), 8, BW)


# ----- the edges and the wiring (issue 20: what the mutation run found untested) ---------------

def test_defaults_are_a_switch_and_no_latency():
    # an all-gather of 1 MB a chip over 8 chips at 1 GB/s: 7/8 x 1e6 / 1e9 = 875 us, no latency
    assert collective_time("all-gather", 1e6, 8, 1e9) == pytest.approx(875e-6, rel=1e-12)
    assert collective_steps("all-reduce", 8) == 2.0
    assert latency_bandwidth_crossover("all-gather", 8, 1e9, 1e-6) == pytest.approx(
        1 * 1e-6 * 1e9 / (7 / 8), rel=1e-12)
    # nothing to send: only the steps' latency, 2 x 5 us for an all-reduce
    assert collective_time("all-reduce", 0, 8, 1e9, hop_latency=5e-6) == pytest.approx(10e-6)


def test_given_torus_sides_are_used():
    # 16 chips as an 8 x 2 torus: an all-to-all crosses floor(64/4)/8 + floor(4/4)/2 = 2.5
    # links' worth; as the default 4 x 2 x 2 torus, 4/4 + 1/2 + 1/2 = 2; steps 7 + 1 = 8 vs 5
    assert bandwidth_factor("all-to-all", 16, "torus", dims=(8, 2)) == 2.5
    assert bandwidth_factor("all-to-all", 16, "torus") == 2.0
    assert collective_steps("all-gather", 16, "torus", dims=(8, 2)) == 8.0
    assert collective_steps("all-gather", 16, "torus") == 5.0
    # 1 MB a chip at 1 GB/s and 1 us a step: 8 us + 2.5 ms
    assert collective_time("all-to-all", 1e6, 16, 1e9, 1e-6, "torus", dims=(8, 2)) == \
        pytest.approx(8e-6 + 2.5e-3, rel=1e-12)
    # crossover: 8 steps x 1 us x 1 GB/s / 2.5 = 3,200 B a chip
    assert latency_bandwidth_crossover("all-to-all", 16, 1e9, 1e-6, "torus", dims=(8, 2)) == \
        pytest.approx(3200.0, rel=1e-12)


def test_one_chip_has_no_crossover():
    assert latency_bandwidth_crossover("all-gather", 1, 1e9, 1e-6) == 0.0
    assert list(latency_bandwidth_crossover("all-gather", np.array([1, 2]), 1e9, 1e-6)) == [
        0.0, pytest.approx(2e3)]


def test_torus_dims_edges():
    assert torus_dims(64, 6) == (2, 2, 2, 2, 2, 2)  # six sides is the most allowed
    assert torus_dims(12, 1) == (12,)
    for bad in (7, 2.5, 0):
        with pytest.raises(ValueError, match="^k"):
            torus_dims(64, bad)


@pytest.mark.parametrize("call, error, match", [
    (lambda: collective_steps("all-reduce", 16, "torus", dims=(2.5, 2)), ValueError, r"^dims\[0\]"),
    (lambda: collective_steps("all-reduce", 16, "torus", dims=(8, 3)), ValueError,
     r"^dims: got \(8, 3\), whose product is 24; it must equal n_chips=16$"),
    (lambda: collective_steps("all-gather", np.array([4, 8]), "ring"), TypeError,
     r"^n_chips: got an array .*; ring and torus step counts take one chip count \(loop over "
     r"counts, or use topology='switch'\)$"),
    (lambda: collective_steps("broadcast", 8), ValueError, "^kind"),
    (lambda: collective_steps("all-gather", 8, "mesh"), ValueError, "^topology"),
    (lambda: bandwidth_factor("broadcast", 8), ValueError, "^kind"),
    (lambda: bandwidth_factor("all-gather", 8, "mesh"), ValueError, "^topology"),
    (lambda: collective_time("all-gather", -1, 8, 1e9), ValueError, "^bytes_per_chip"),
    (lambda: collective_time("all-gather", 1, 8, 0), ValueError, "^bandwidth"),
    (lambda: collective_time("all-gather", 1, 8, 1e9, -1), ValueError, "^hop_latency"),
    (lambda: latency_bandwidth_crossover("all-gather", 8, 0, 1e-6), ValueError, "^bandwidth"),
    (lambda: latency_bandwidth_crossover("all-gather", 8, 1e9, 0), ValueError, "^hop_latency"),
])
def test_bad_input_names_its_argument(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ----- algorithms beside the topology's own (issue 31: tree and one-shot all-reduces) ----------

def test_tree_all_reduce_by_hand():
    # NCCL's double binary tree: a reduce up and a broadcast down, 2 ceil(log2 n) steps; each chip
    # sends about twice the buffer. 8 chips: 2 x 3 = 6 steps of 2 us = 12 us, plus
    # 2 x 1 MB / 100 GB/s = 20 us: 32 us
    assert collective_steps("all-reduce", 8, "switch", algorithm="tree") == 6
    assert bandwidth_factor("all-reduce", 8, "switch", algorithm="tree") == 2
    assert collective_time("all-reduce", D, 8, BW, 2e-6, "switch",
                           algorithm="tree") == pytest.approx(32e-6)
    # 5 chips: ceil(log2 5) = 3 levels, 6 steps; 64 chips on a torus: 2 x 6 = 12 (the tree does
    # not follow the axes); one chip: nothing
    assert collective_steps("all-reduce", 5, "ring", algorithm="tree") == 6
    assert collective_steps("all-reduce", 64, "torus", algorithm="tree") == 12
    assert collective_steps("all-reduce", 1, "switch", algorithm="tree") == 0
    assert bandwidth_factor("all-reduce", 1, "switch", algorithm="tree") == 0


def test_one_shot_all_reduce_by_hand():
    # every chip reads the 7 other buffers and adds locally: 1 step of 2 us + 7 x 10 us = 72 us
    assert collective_steps("all-reduce", 8, "switch", algorithm="one-shot") == 1
    assert bandwidth_factor("all-reduce", 8, "switch", algorithm="one-shot") == 7
    assert collective_time("all-reduce", D, 8, BW, 2e-6, "switch",
                           algorithm="one-shot") == pytest.approx(72e-6)
    # arrays of chip counts: 2 and 8 chips, 1 step each; factors 1 and 7
    assert list(collective_steps("all-reduce", np.array([1, 2, 8]), "switch",
                                 algorithm="one-shot")) == [0, 1, 1]
    assert list(bandwidth_factor("all-reduce", np.array([2, 8]), "switch",
                                 algorithm="one-shot")) == [1, 7]
    # one-shot (a + 7 Q/W) against two-shot (2a + 1.75 Q/W) at 3 us and 450 GB/s: equal at
    # Q = 3 us x 450 GB/s / (7 - 1.75) = 257,142.9 B
    q = 3e-6 * 450e9 / 5.25
    assert collective_time("all-reduce", q, 8, 450e9, 3e-6, "switch", algorithm="one-shot") == \
        pytest.approx(collective_time("all-reduce", q, 8, 450e9, 3e-6, "switch"))
    # its latency knee: Q* = 1 x 3 us x 450 GB/s / 7 = 192,857 B
    assert latency_bandwidth_crossover("all-reduce", 8, 450e9, 3e-6, "switch",
                                       algorithm="one-shot") == pytest.approx(1.35e6 / 7)


def test_ring_algorithm_on_a_switch_and_defaults():
    # NCCL's ring over an NVSwitch: n - 1 steps a pass, as on a ring; arrays allowed here
    assert list(collective_steps("all-reduce", np.array([1, 2, 8]), "switch",
                                 algorithm="ring")) == [0, 2, 14]
    assert collective_time("all-reduce", D, 8, BW, 2e-6, "switch", algorithm="ring") == \
        pytest.approx(collective_time("all-reduce", D, 8, BW, 2e-6, "ring"))
    assert collective_steps("all-gather", 8, "switch", algorithm="ring") == 7
    # None is the topology's own: direct on a switch, rings on a ring or a torus
    from llmmath.collectives import ALGORITHMS, default_algorithm
    assert ALGORITHMS == ("direct", "ring", "tree", "one-shot")
    assert [default_algorithm(t) for t in ("switch", "ring", "torus")] == ["direct", "ring",
                                                                         "ring"]
    assert default_algorithm() == "direct"
    for topo, alg in (("switch", "direct"), ("ring", "ring"), ("torus", "ring")):
        assert collective_time("all-reduce", D, 64, BW, 1e-6, topo, algorithm=alg) == \
            collective_time("all-reduce", D, 64, BW, 1e-6, topo)
    # the all-reduce wrapper passes it on
    assert all_reduce_time(D, 8, BW, 2e-6, "switch", algorithm="one-shot") == \
        pytest.approx(72e-6)


@pytest.mark.parametrize("kind, topology, algorithm, says", [
    ("all-gather", "switch", "tree", "all-reduce algorithm"),
    ("all-to-all", "switch", "one-shot", "all-reduce algorithm"),
    ("all-reduce", "ring", "one-shot", "topology='switch'"),
    ("all-reduce", "torus", "direct", "topology='switch'"),
    ("all-to-all", "switch", "ring", "topology's own"),
    ("all-reduce", "switch", "butterfly", "allowed values"),
])
def test_algorithm_bad_combinations(kind, topology, algorithm, says):
    with pytest.raises(ValueError, match=f"^algorithm: .*{says}"):
        collective_time(kind, D, 8, BW, 1e-6, topology, algorithm=algorithm)
    with pytest.raises(ValueError, match="^topology"):
        from llmmath.collectives import default_algorithm
        default_algorithm("mesh")

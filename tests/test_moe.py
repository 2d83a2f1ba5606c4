"""Unit tests of llmmath.moe with hand-computed values (and one Monte Carlo check).

Expected numbers are worked by hand below each assertion from catalogue figures (the chip
datasheets cited in references.bib) and DeepSeek's published layout (deepseek2025inference:
256 routed + 32 redundant experts, EP144 decode -> 2 per GPU, EP32 prefill -> 9 per GPU).
"""

from __future__ import annotations

import math
import re
from types import SimpleNamespace

import numpy as np
import pytest

from llmmath import chips, models, moe
from llmmath.chips import Chip

DSV3 = models.get("DeepSeek-V3")
LLAMA = models.get("Llama-3-70B")
H100, GB200 = chips.get("H100-SXM"), chips.get("GB200")
# A made-up chip with a scale-up domain but no network figures (and conftest.py's
# no_scale_up_chip, "no-domain", with no scale-up domain at all).
NO_LINKS = Chip(name="no-links", flops={"bf16": 1e15}, hbm_bandwidth=1e12, hbm_capacity=80e9,
                scale_up_domain=8)
# A duck-typed "chip" with none of the attributes: the functions read them with getattr, so it
# must get the same ValueError (naming what is missing) as a catalogue chip, not an AttributeError.
BARE = SimpleNamespace()


def _max_of_binomials(N, n):
    """E[max] of n independent Binomial(N, 1/n) counts, sum_m (1 - F(m)^n): the model that
    expected_max_load documents, computed apart from the library. The pmf comes from the ratio
    pmf(j+1)/pmf(j) = (N - j)/(j + 1) p/(1 - p) walked out from the mode (no log-gamma), is
    normalised to sum to 1, and the tail P(X > m) is summed from the top, so 1 - F(m)^n =
    -expm1(n log1p(-P(X > m))) keeps its digits at every n. Below lo (15 sd under the mean) F^n
    is 0, above hi the tail is below 1e-40."""
    p = 1.0 / n
    ratio = p / (1.0 - p)
    mode = int((N + 1) * p)
    sd = math.sqrt(N * p * (1.0 - p))
    lo, hi = max(0, int(mode - 15 * sd) - 10), min(N, int(mode + 15 * sd) + 60)
    w = {mode: 1.0}
    for j in range(mode, hi):
        w[j + 1] = w[j] * (N - j) / (j + 1) * ratio
    for j in range(mode, lo, -1):
        w[j - 1] = w[j] * j / ((N - j + 1) * ratio)
    total = math.fsum(w.values())
    above, e = 0.0, float(lo)
    for m in range(hi, lo - 1, -1):  # m from the top: `above` is sum of w[j] for j > m
        tail = above / total  # P(X > m); rounding can lift it to 1 at the bottom
        e += 1.0 if tail >= 1.0 else -math.expm1(n * math.log1p(-tail))
        above += w[m]
    return e


def test_domain_memory_and_max_total_params():
    # GB200 NVL72: 72 x 186 GB = 13.392 TB; at fp8 with half kept for KV: 6.696e12 parameters.
    assert moe.domain_memory(GB200) == pytest.approx(13.392e12)
    assert moe.max_total_params(GB200, weight_bytes=1, kv_fraction=0.5) == pytest.approx(6.696e12)
    # HGX H100: 8 x 80 GB = 640 GB; bf16, nothing for KV: 320e9 parameters.
    assert moe.max_total_params(H100) == pytest.approx(320e9)
    assert moe.max_total_params(H100, n_chips=16, memory_fraction=0.5) == pytest.approx(320e9)
    with pytest.raises(ValueError, match="kv_fraction"):
        moe.max_total_params(H100, kv_fraction=1.0)
    with pytest.raises(TypeError, match="weight_bytes"):
        moe.max_total_params(H100, weight_bytes="2")


def test_a_chip_without_a_domain_is_named(no_scale_up_chip):
    # The error names the chip by its name (not the whole record) and says what to do.
    with pytest.raises(ValueError, match="^n_chips: 'no-domain' has no scale_up_domain figure; "
                                         "pass n_chips$"):
        moe.domain_memory(no_scale_up_chip)
    with pytest.raises(ValueError, match="^chip: 'no-domain' has no scale_up_domain figure$"):
        moe.domain_of(no_scale_up_chip)
    # an object with no attributes at all is shown as it is (its repr: "namespace()")
    with pytest.raises(ValueError, match=re.escape("n_chips: namespace() has no scale_up_domain "
                                                   "figure; pass n_chips")):
        moe.max_total_params(BARE)
    with pytest.raises(ValueError, match=re.escape("chip: namespace() has no scale_up_domain "
                                                   "figure")):
        moe.domain_of(BARE)
    # with n_chips given the domain figure is not needed: 2 x 80 GB = 160 GB
    assert moe.domain_memory(no_scale_up_chip, n_chips=2) == pytest.approx(160e9)


def test_domain_of_carries_the_catalogue_figures():
    # GB200 NVL72 (nvidia_gb200_nvl72): 72 GPUs of 186 GB, NVLink 5 at 900 GB/s one way per GPU,
    # a 400 Gb/s (50 GB/s) NIC per GPU, 2024.
    d = moe.domain_of(GB200)
    assert (d.name, d.scale_up_domain, d.hbm_capacity) == ("72 x GB200", 72, 186e9)
    assert (d.scale_up_bandwidth, d.scale_out_bandwidth) == (900e9, 50e9)
    assert (d.year, d.source) == (2024, "nvidia_gb200_nvl72")
    # TPU v4's catalogue entry has no scale-out figure: 0.0, the domain's "unknown"
    assert moe.domain_of(chips.get("TPU v4")).scale_out_bandwidth == 0.0
    assert moe.domain_of(chips.get("TPU v4")).scale_up_bandwidth == 270e9
    # a chip with a domain but no network figures: both unknown (0.0)
    e = moe.domain_of(NO_LINKS)
    assert (e.scale_up_bandwidth, e.scale_out_bandwidth, e.year, e.source) == (0.0, 0.0, None, "")
    # a domain is its own domain
    cm = moe.ANNOUNCED_DOMAINS[0]
    assert moe.domain_of(cm) is cm


@pytest.mark.whole_catalogue
def test_all_domains_lists_the_catalogue_then_the_announced():
    # one domain per catalogue chip with a domain figure, and the two announced systems
    with_domain = [c for c in chips.all_chips() if c.scale_up_domain]
    names = [d.name for d in moe.all_domains()]
    assert len(names) == len(with_domain) + 2
    assert "72 x GB200" in names and "8 x H100-SXM" in names
    assert "CloudMatrix384 (Ascend 910C)" in names
    assert "Rubin Ultra NVL576 (144 packages, announced)" in names
    own = [d.name for d in moe.all_domains(include_announced=False)]
    assert len(own) == len(with_domain) and "CloudMatrix384 (Ascend 910C)" not in own


def test_announced_domains_are_cited():
    for d in moe.ANNOUNCED_DOMAINS:
        assert d.source and d.scale_up_domain > 0 and d.hbm_capacity > 0
    # CloudMatrix384: 384 x 128 GB = 49.152 TB.
    cm = moe.ANNOUNCED_DOMAINS[0]
    assert moe.domain_memory(cm) == pytest.approx(49.152e12)
    # its UB (392 GB/s) over RDMA (50 GB/s) is 7.84: the episode's "about 8x"
    assert moe.scale_up_over_scale_out(cm) == pytest.approx(7.84)
    mems = [d.scale_up_domain * d.hbm_capacity for d in moe.all_domains()]
    assert mems == sorted(mems)


def test_active_params_from_cost():
    # H100 at $3.00/h, fp8 peak 1978.9e12, e = 0.5: $0.10 per Mtok -> 1e-7 $/token
    # N_act = 1e-7 x 1978.9e12 x 0.5 / (2 x 3/3600) = 59.367e9.
    assert moe.max_active_params(H100, 0.10, dtype="fp8", compute_efficiency=0.5) == pytest.approx(
        59.367e9)
    # inverse: 37e9 active on the same terms costs 1e6 x 2 x 37e9 x (3/3600) / (989.45e12) $
    c = moe.compute_cost_per_million_tokens(37e9, H100, dtype="fp8", compute_efficiency=0.5)
    assert c == pytest.approx(1e6 * 2 * 37e9 * (3 / 3600) / (1978.9e12 * 0.5))
    assert moe.max_active_params(H100, c, dtype="fp8", compute_efficiency=0.5) == pytest.approx(
        37e9)
    with pytest.raises(ValueError, match="price_per_hour"):
        moe.max_active_params(GB200, 0.1)  # no catalogue price
    assert moe.max_active_params(GB200, 0.1, price_per_chip_hour=6.0) > 0
    # The same example to the last digit: 1e-7 x 1978.9e12 x 0.5 / (2 x 3/3600) = 59.367e9 exactly
    # (H100 fp8 dense peak 1978.9 TFLOP/s, nvidia_h100_datasheet; catalogue price $3.00/h).
    assert moe.max_active_params(H100, 0.10, dtype="fp8", compute_efficiency=0.5) == pytest.approx(
        59.367e9, rel=1e-12)


def test_compute_cost_at_a_given_price():
    # 37e9 active at bf16 (989.4e12 FLOP/s), e = 1, $6/h instead of the catalogue's $3/h:
    # 1e6 x 2 x 37e9 x (6/3600) / 989.4e12 = 0.12465 $ per million tokens.
    assert moe.compute_cost_per_million_tokens(37e9, H100, price_per_chip_hour=6.0) == (
        pytest.approx(1e6 * 2 * 37e9 * (6 / 3600) / 989.4e12, rel=1e-12))
    # GB200 has no catalogue price: a given one is used, none is an error naming it
    assert moe.compute_cost_per_million_tokens(37e9, GB200, price_per_chip_hour=6.0) == (
        pytest.approx(1e6 * 2 * 37e9 * (6 / 3600) / 2.5e15, rel=1e-12))
    with pytest.raises(ValueError, match="price_per_chip_hour"):
        moe.compute_cost_per_million_tokens(37e9, GB200)


def test_critical_batch_for_sparsity():
    # H100 bf16: 989.4e12 / 3.35e12 = 295.3 FLOP/byte; b_w = 2 -> B* = 295.3 x s.
    assert moe.critical_batch_for_sparsity(H100, 1.0) == pytest.approx(295.34, rel=1e-3)
    assert moe.critical_batch_for_sparsity(H100, 8.0) == pytest.approx(8 * 295.34, rel=1e-3)
    with pytest.raises(ValueError, match="sparsity"):
        moe.critical_batch_for_sparsity(H100, 0.5)


def test_expert_placement_published_layouts():
    # The episode: 256 experts on a 72-GPU rack -> 4 per GPU on 64 GPUs, 8 idle.
    p = moe.expert_placement(DSV3, 72)
    assert (p.experts_per_chip, p.chips_used, p.idle_chips) == (4, 64, 8)
    # DeepSeek decode: (256 + 32)/144 = 2 per GPU; prefill (256 + 32)/32 = 9 per GPU.
    assert moe.expert_placement(DSV3, 144, redundant_experts=32).experts_per_chip == 2
    assert moe.expert_placement(DSV3, 32, redundant_experts=32).experts_per_chip == 9
    # Bytes: one expert 3 x 7168 x 2048 = 44,040,192 weights; 58 MoE layers; fp8.
    q = moe.expert_placement(DSV3, 144, redundant_experts=32, weight_bytes=1)
    assert q.routed_bytes == pytest.approx(2 * 58 * 44_040_192)
    assert q.replicated_bytes == pytest.approx(DSV3.total_params - 58 * 256 * 44_040_192)
    with pytest.raises(ValueError, match="dense"):
        moe.expert_placement(LLAMA, 8)
    with pytest.raises(ValueError, match="redundant_experts"):
        moe.expert_placement(DSV3, 8, redundant_experts=1.5)


def test_expert_placement_every_field_by_hand():
    # DeepSeek decode, bf16 weights: n = 144, slots = 256 + 32 = 288, 2 per GPU on all 144 GPUs.
    # Routed bytes: 2 experts x 58 layers x 44,040,192 weights x 2 B; the rest of the 671.03e9
    # parameters (671,026,419,200 - 58 x 256 x 44,040,192) is replicated, at 2 B.
    q = moe.expert_placement(DSV3, 144, redundant_experts=32, weight_bytes=2)
    assert (q.n_chips, q.slots, q.experts_per_chip, q.chips_used, q.idle_chips,
            q.spare_slots) == (144, 288, 2, 144, 0, 0)
    routed = 2 * 58 * 44_040_192 * 2
    replicated = (671_026_419_200 - 58 * 256 * 44_040_192) * 2
    assert q.routed_bytes == pytest.approx(routed, rel=1e-12)
    assert q.replicated_bytes == pytest.approx(replicated, rel=1e-12)
    assert q.weight_bytes_per_chip == pytest.approx(routed + replicated, rel=1e-12)
    # 256 + 1 slots on 72 chips: ceil(257/72) = 4 per chip, ceil(257/4) = 65 chips used, 7 idle,
    # 65 x 4 - 257 = 3 free slots
    r = moe.expert_placement(DSV3, 72, redundant_experts=1)
    assert (r.n_chips, r.slots, r.experts_per_chip, r.chips_used, r.idle_chips,
            r.spare_slots) == (72, 257, 4, 65, 7, 3)


def test_expected_max_load_against_simulation():
    # Independent check: the mean of the maximum of simulated multinomial counts.
    rng = np.random.default_rng(7)
    # Tolerance: 1% from ten assignments per chip, 3% at one per chip (independent marginals).
    for N, n, tol in ((1000, 8, 0.01), (147_456, 144, 0.01), (640, 64, 0.01), (64, 64, 0.03)):
        sims = rng.multinomial(N, [1.0 / n] * n, size=4000).max(axis=1).mean()
        assert moe.expected_max_load(N, n) == pytest.approx(sims, rel=tol), (N, n)
        assert moe.expected_max_load(N, n) <= sims * 1.003, (N, n)  # an under-estimate
    assert moe.expected_max_load(100, 1) == 100.0
    # N = 2, n = 2 by hand under the stated approximation: each count is Binomial(2, 1/2),
    # F(0) = 1/4, F(1) = 3/4; E = (1 - F(0)^2) + (1 - F(1)^2) = 15/16 + 7/16 = 1.375
    # (the exact multinomial value is 1.5: at two chips the approximation is poor, and the
    # book uses it only from 8 chips and 10 assignments per chip).
    assert moe.expected_max_load(2, 2) == pytest.approx(1.375, rel=1e-9)


def test_expected_max_load_few_assignments():
    # No assignments: every chip is idle.
    assert moe.expected_max_load(0, 8) == 0.0
    # One assignment on 4 chips, under the stated approximation: F(0) = 3/4, F(1) = 1,
    # E = 1 - (3/4)^4 = 175/256 (the exact value is 1: far below one assignment per chip the
    # independent-marginals model is poor, and the book does not use it there).
    assert moe.expected_max_load(1, 4) == pytest.approx(175 / 256, rel=1e-12)
    # 10 assignments on 1,000 chips, by hand under the same model: F(0) = 0.999^10,
    # F(1) = F(0) + 10 x 0.001 x 0.999^9, F(2) = F(1) + 45 x 0.001^2 x 0.999^8; the terms from
    # m = 3 add about 1,000 x C(10, 4) 1e-12 = 2e-7. Close to the birthday problem's
    # 1 + P(a shared chip) = 1 + 0.0441.
    f0 = 0.999**10
    f1 = f0 + 10 * 0.001 * 0.999**9
    f2 = f1 + 45 * 0.001**2 * 0.999**8
    by_hand = (1 - f0**1000) + (1 - f1**1000) + (1 - f2**1000)
    assert moe.expected_max_load(10, 1000) == pytest.approx(by_hand, rel=1e-6)
    assert moe.expected_max_load(10, 1000) == pytest.approx(_max_of_binomials(10, 1000), rel=1e-9)
    # 300 assignments on 10 million chips: a collision costs one more, with chance
    # 1 - exp(-C(300, 2)/1e7) = 0.004475
    assert moe.expected_max_load(300, 10**7) == pytest.approx(1 + 0.004475, rel=1e-6)
    # arrays broadcast, an empty one included
    assert moe.expected_max_load(np.array([], dtype=float), 8).shape == (0,)
    assert np.array_equal(moe.expected_max_load(np.array([0, 100]), np.array([8, 1])), [0, 100])


def test_expected_max_load_many_chips():
    # One assignment per chip on 100,000 chips (a Poisson(1) load, maximum near 7.8): the sum over
    # the binomial tail has to keep its digits where F(m)^n multiplies F's error by n.
    assert moe.expected_max_load(10**5, 10**5) == pytest.approx(_max_of_binomials(10**5, 10**5),
                                                                rel=5e-5)


def test_expected_max_load_at_large_counts():
    # Past about 250,000 x n assignments the binomial is replaced by a normal: E[max of 2
    # standard normals] = 1/sqrt(pi) by hand; the switch is continuous; simulation agrees.
    assert moe._expected_max_std_normal(2) == pytest.approx(1 / np.sqrt(np.pi), rel=1e-6)
    n, p = 144, 1 / 144
    below = moe.expected_max_load(int(499**2 / (p * (1 - p))), n) / (499**2 / (p * (1 - p)) / n)
    above = moe.expected_max_load(int(501**2 / (p * (1 - p))), n) / (501**2 / (p * (1 - p)) / n)
    assert above == pytest.approx(below, rel=1e-4)
    N = 40_000_000
    sims = np.random.default_rng(3).multinomial(N, [1.0 / n] * n, size=1000).max(axis=1).mean()
    assert moe.expected_max_load(N, n) == pytest.approx(sims, rel=2e-4)
    assert np.isfinite(moe.imbalance_factor(1e30, 8, 8))


def test_expected_max_load_either_side_of_the_normal_switch():
    # E[max of n standard normals] by hand: 1/sqrt(pi) (n = 2), 3/(2 sqrt(pi)) (n = 3).
    c2, c3 = 1 / math.sqrt(math.pi), 3 / (2 * math.sqrt(math.pi))
    # 4e6 assignments on 2 chips: mean 2e6, sd sqrt(4e6 x 1/2 x 1/2) = 1000 (past the switch)
    assert moe.expected_max_load(4_000_000, 2) - 2e6 == pytest.approx(1000 * c2, rel=1e-9)
    # 3 chips, sd = sqrt(1,127,000 x 2/9) = 500.44, just past 500: the normal, mu + sd c3
    N = 1_127_000
    assert moe.expected_max_load(N, 3) - N / 3 == pytest.approx(math.sqrt(N * 2 / 9) * c3,
                                                                abs=1e-3)
    # At sd = 500 exactly (5 chips, 1,562,500 x 1/5 x 4/5 = 250,000) the binomial sum is still
    # used: it matches the binomial model to 1e-3 of a token, where the normal is 0.08 off
    # (the binomial's skew).
    N = 1_562_500
    assert moe.expected_max_load(N, 5) - N / 5 == pytest.approx(_max_of_binomials(N, 5) - N / 5,
                                                                abs=1e-3)


def test_expected_max_of_many_normals():
    # E[max of 100,000 standard normals] = int z n phi(z) Phi(z)^(n-1) dz (the density form, not
    # the library's 1 - Phi^n form), by Simpson's rule on [0, 10] at step 1e-3 (the density below
    # 0 is Phi(0)^99999 ~ 0): 4.38431940311.
    n, h = 10**5, 1e-3
    z = np.arange(0, 10 + h / 2, h)
    tail = 0.5 * np.vectorize(math.erfc)(z / math.sqrt(2))
    f = z * n * np.exp(-z * z / 2) / math.sqrt(2 * math.pi) * np.exp((n - 1) * np.log1p(-tail))
    simpson = h / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum())
    assert moe._expected_max_std_normal(n) == pytest.approx(simpson, rel=1e-9)


def test_imbalance_factor_shape():
    # more chips -> worse; more tokens -> better; always >= 1
    f = moe.imbalance_factor(128, np.array([8, 72, 144, 512]), 8)
    assert np.all(np.diff(f) > 0) and np.all(f >= 1)
    g = moe.imbalance_factor(np.array([16, 128, 1024]), 144, 8)
    assert np.all(np.diff(g) < 0)


def test_all_to_all_by_hand():
    # DeepSeek decode on H800-like nodes (H100 figures): 128 tokens/GPU, D = 7168, k = 8,
    # n = 144 GPUs in g = 18 nodes of 8. Off-node copies per token = 17 (1 - (17/18)^8);
    # bytes = 128 x 7168 x (1 + 2) x copies; time over 400 Gb/s = 50 GB/s.
    copies = 17 * (1 - (17 / 18) ** 8)
    a = moe.expert_all_to_all(DSV3, 128, 144, H100)
    assert a.off_domain_copies == pytest.approx(copies)
    assert a.scale_out_bytes == pytest.approx(128 * 7168 * 3 * copies)
    assert a.scale_out_time == pytest.approx(128 * 7168 * 3 * copies / 50e9)
    # in-node: 7 (1 - (143/144)^8) copies over 450 GB/s
    assert a.scale_up_time == pytest.approx(128 * 7168 * 3 * 7 * (1 - (143 / 144) ** 8) / 450e9)
    assert a.time == max(a.scale_up_time, a.scale_out_time)
    # One GB200 rack, EP72: nothing leaves the rack.
    b = moe.expert_all_to_all(DSV3, 128, 72, GB200)
    assert b.scale_out_time == 0.0 and b.off_domain_copies == 0.0
    assert b.time == pytest.approx(128 * 7168 * 3 * 71 * (1 - (71 / 72) ** 8) / 900e9)
    with pytest.raises(ValueError, match="dense"):
        moe.expert_all_to_all(LLAMA, 128, 8, H100)
    with pytest.raises(ValueError, match="scale_out_bandwidth"):
        moe.expert_all_to_all(DSV3, 128, 8192, chips.get("TPU v7"), domain=4096)


def test_all_to_all_bytes_and_edge_cases():
    per_token = 7168 * (1 + 2)  # D numbers out at 1 B (fp8), back at 2 B (bf16)
    # DeepSeek decode layout on H100 nodes, as above: the in-node bytes
    a = moe.expert_all_to_all(DSV3, 128, 144, H100)
    assert a.scale_up_bytes == pytest.approx(128 * per_token * 7 * (1 - (143 / 144) ** 8))
    # 12 GPUs = 1.5 nodes of 8: g = 1.5, off-node copies 0.5 (1 - (1 - 1/1.5)^8),
    # in-node 7 (1 - (11/12)^8)
    b = moe.expert_all_to_all(DSV3, 128, 12, H100)
    assert b.off_domain_copies == pytest.approx(0.5 * (1 - (1 / 3) ** 8))
    assert b.scale_out_time == pytest.approx(128 * per_token * 0.5 * (1 - (1 / 3) ** 8) / 50e9)
    assert b.scale_up_bytes == pytest.approx(128 * per_token * 7 * (1 - (11 / 12) ** 8))
    # No tokens: no bytes, no time; a token would still leave the node 17 (1 - (17/18)^8) times.
    c = moe.expert_all_to_all(DSV3, 0, 144, H100)
    assert (c.scale_up_bytes, c.scale_out_bytes, c.time) == (0.0, 0.0, 0.0)
    assert c.off_domain_copies == pytest.approx(17 * (1 - (17 / 18) ** 8))
    # Traffic is linear in the (average) tokens per chip down to any fraction: 1e-6 tokens per
    # GPU sends 1e-6 x 21,504 x 6.88 = 0.148 bytes off-node, 3.0e-12 s at 50 GB/s.
    copies = 17 * (1 - (17 / 18) ** 8)
    d = moe.expert_all_to_all(DSV3, 1e-6, 144, H100)
    assert d.scale_out_time == pytest.approx(1e-6 * per_token * copies / 50e9)
    # TPU v7 has no scale-out figure, and needs none while the group fits its 9,216-chip pod:
    # EP64, 63 (1 - (63/64)^8) copies over 600 GB/s ICI.
    e = moe.expert_all_to_all(DSV3, 128, 64, chips.get("TPU v7"))
    assert e.scale_out_time == 0.0
    assert e.time == pytest.approx(128 * per_token * 63 * (1 - (63 / 64) ** 8) / 600e9)


def test_scale_up_over_scale_out(no_scale_up_chip):
    assert moe.scale_up_over_scale_out(H100) == pytest.approx(450e9 / 50e9)   # 9
    assert moe.scale_up_over_scale_out(GB200) == pytest.approx(900e9 / 50e9)  # 18
    with pytest.raises(ValueError, match="TPU v4"):
        moe.scale_up_over_scale_out(chips.get("TPU v4"))
    # the chip is named by its name, and the message says which figure is missing
    with pytest.raises(ValueError, match="^chip: 'no-domain' lacks a scale-up or scale-out "
                                         "bandwidth figure$"):
        moe.scale_up_over_scale_out(no_scale_up_chip)
    with pytest.raises(ValueError, match=re.escape("chip: namespace() lacks a scale-up or "
                                                   "scale-out bandwidth figure")):
        moe.scale_up_over_scale_out(BARE)


def test_two_batch_overlap():
    # 58 layers, compute 0.5 ms, comm 0.3 ms: serial 46.4 ms; overlapped 58 x 0.5 + 0.15 = 29.15 ms
    assert moe.two_batch_overlap_time(0.5e-3, 0.3e-3, 58) == pytest.approx(29.15e-3)
    assert moe.two_batch_overlap_time(0.0, 1.0) == 1.0
    # nothing to hide: 2 layers of 1 s compute and no communication take 2 s
    assert moe.two_batch_overlap_time(1.0, 0.0, 2) == 2.0
    with pytest.raises(ValueError, match="n_layers"):
        moe.two_batch_overlap_time(1.0, 1.0, 0)


def test_low_latency_all_to_all_by_hand():
    # DeepEP's low-latency kernels (decode): one copy per (token, expert), no forwarding.
    # EP144 over 18 nodes of 8: 8 (1 - 8/144) = 7.556 copies leave the node (against the 6.24 of
    # forwarding); 128 x 7168 x 3 x 7.556 = 20.80 MB per GPU per layer at 50 GB/s = 416 us,
    # x 58 MoE layers = 24.1 ms. In the node 8 x 7/144 = 0.389 copies over 450 GB/s.
    a = moe.expert_all_to_all(DSV3, 128, 144, H100, kernels="low-latency")
    copies = 8 * (1 - 8 / 144)
    assert a.off_domain_copies == pytest.approx(copies) and abs(copies - 7.5556) < 1e-4
    assert a.scale_out_time == pytest.approx(128 * 7168 * 3 * copies / 50e9)
    assert a.scale_up_time == pytest.approx(128 * 7168 * 3 * 8 * 7 / 144 / 450e9)
    assert 58 * a.time == pytest.approx(24.12e-3, rel=1e-3)
    # the default is the normal kernels (forwarding): 6.24 copies, 19.9 ms a step
    assert 58 * moe.expert_all_to_all(DSV3, 128, 144, H100).time == pytest.approx(19.92e-3,
                                                                                rel=1e-3)
    # one NVL72 rack: 8 x 71/72 = 7.89 copies over NVLink, none out
    b = moe.expert_all_to_all(DSV3, 128, 72, GB200, kernels="low-latency")
    assert b.scale_out_time == 0.0
    assert b.time == pytest.approx(128 * 7168 * 3 * 8 * 71 / 72 / 900e9)
    with pytest.raises(ValueError, match="kernels"):
        moe.expert_all_to_all(DSV3, 128, 144, H100, kernels="fast")


# DeepSeek-V3 typed from config.json [hf_deepseek_v3]: 671,026,419,200 parameters; 61 layers, the
# first 3 dense; 256 routed experts of 3 x 7168 x 2048 = 44,040,192 weights in each of 58 MoE
# layers, 8 per token; vocabulary 129,280 x 7168 (untied); MLA latent 512 + RoPE 64, 128 heads.
_DS_TOT = 671_026_419_200
_DS_EXPERT = 3 * 7168 * 2048
_DS_ROUTED = 58 * 256 * _DS_EXPERT                  # 653,908,770,816
_DS_EMBED = 129_280 * 7168                          # 926,679,040, a gather
_DS_REPL = _DS_TOT - _DS_ROUTED                     # 17,117,648,384, replicated under DP attention
_DS_NORMS = 2 * 61 * 7168 + 7168                    # RMSNorm scales, not multiplied
_DS_NMM = _DS_TOT - 58 * 248 * _DS_EXPERT - _DS_EMBED - _DS_NORMS   # 36,624,736,768
_DS_ATTN = 61 * 128 * 2 * (576 + 512)              # absorbed MLA FLOP per cached token
_DS_ROW = 61 * 576 * 2                              # bf16 MLA cache bytes per token


def test_expert_parallel_decode_step_ep144_by_hand():
    # DeepSeek's decode layout: EP144 on H800s (H100 figures: 1,978.9 TFLOP/s fp8, 989.4 bf16,
    # 3.35 TB/s, 80 GB), 288 slots (32 redundant), 128 sequences per GPU at 4,989 tokens, fp8
    # weights, bf16 cache. Each GPU reads what it holds:
    #   replicated, less the input embedding: 17,117,648,384 - 926,679,040 = 16,190,969,344 B
    #   its 128 embedding rows: 128 x 7168 = 917,504 B
    #   its 2 expert slots: 2 x 58 x 44,040,192 = 5,108,662,272 B (every slot reached: 18,432
    #   tokens x 8 among 288 slots)
    #   its cache: 128 x 4,989 x 70,272 = 44,875,137,024 B
    # = 66,175,686,144 B at 3.35 TB/s = 19.754 ms. Compute: 128 x 2 x 36,624,736,768 FLOP at
    # fp8 = 4.738 ms, plus 128 x 4,989 x 16,990,208 FLOP of attention at bf16 = 10.966 ms:
    # 15.704 ms. Memory-bound at 19.75 ms (decode_step, every weight over 144 GPUs: 18.1 ms).
    assert _DS_REPL == 17_117_648_384 and _DS_NMM == 36_624_736_768
    s = moe.expert_parallel_decode_step(DSV3, H100, 128 * 144, 4989, 144, redundant_experts=32,
                                        weight_bytes=1, kv_bytes=2, dtype="fp8")
    weights = _DS_REPL - _DS_EMBED + 128 * 7168 + 2 * 58 * _DS_EXPERT
    assert weights == 21_300_549_120
    kv = 128 * 4989 * _DS_ROW
    assert s.weight_time == pytest.approx(weights / 3.35e12, rel=1e-9)
    assert s.kv_time == pytest.approx(kv / 3.35e12, rel=1e-12)
    assert s.memory_time == pytest.approx(19.754e-3, rel=1e-4)
    assert s.matmul_time == pytest.approx(128 * 2 * _DS_NMM / 1978.9e12, rel=1e-12)
    assert s.attention_time == pytest.approx(128 * 4989 * _DS_ATTN / 989.4e12, rel=1e-12)
    assert s.compute_time == pytest.approx(15.704e-3, rel=1e-4)
    assert s.bound == "memory" and s.time == s.memory_time
    # held: replicated + 2 slots + cache = 22,226,310,656 + 44,875,137,024 = 67.1 GB <= 80 GB
    assert s.held_per_chip == pytest.approx(_DS_REPL + 2 * 58 * _DS_EXPERT + kv, rel=1e-12)
    assert s.fits
    assert s.weight_bytes_read == pytest.approx(144 * weights, rel=1e-9)
    assert s.tokens == s.batch == 128 * 144 and s.n_chips == 144


def test_expert_parallel_critical_batch_ep144_by_hand():
    # Per GPU, b sequences: b x 2 N_mm / C = bytes read / W with bytes read =
    # 16,190,969,344 + 5,108,662,272 + 7168 b (fp8, every slot reached). One sequence's compute
    # time is worth 2 x 36,624,736,768 x 3.35e12 / 1.9789e15 = 124,000,604 B of reads, so
    # b = 21,299,631,616 / (124,000,604 - 7168) = 171.78 per GPU, 24,736 for the 144-GPU replica
    # (every weight spread over the chips, roofline.critical_batch: 5,404 per replica).
    slack = 2 * _DS_NMM * 3.35e12 / 1978.9e12
    per_gpu = (_DS_REPL - _DS_EMBED + 2 * 58 * _DS_EXPERT) / (slack - 7168)
    got = moe.expert_parallel_critical_batch(DSV3, H100, 144, redundant_experts=32,
                                             weight_bytes=1, dtype="fp8")
    assert per_gpu == pytest.approx(171.78, abs=0.01)
    assert got == pytest.approx(144 * per_gpu, rel=1e-9)
    # at the critical batch the two times meet
    s = moe.expert_parallel_decode_step(DSV3, H100, got, 0, 144, redundant_experts=32,
                                        weight_bytes=1, dtype="fp8")
    assert s.compute_time == pytest.approx(s.memory_time, rel=1e-9)
    # the replicated weights are amortised over one chip's sequences: B* grows with n
    b72 = moe.expert_parallel_critical_batch(DSV3, H100, 72, weight_bytes=1, dtype="fp8")
    assert b72 < got
    # past the critical context no batch balances
    with pytest.raises(ValueError, match="context"):
        moe.expert_parallel_critical_batch(DSV3, H100, 144, context=131072, weight_bytes=1,
                                           dtype="fp8", kv_bytes=8)
    with pytest.raises(ValueError, match="dense"):
        moe.expert_parallel_critical_batch(LLAMA, H100, 8)


def test_expert_parallel_prefill_step_by_hand():
    # DeepSeek's prefill layout: EP32 (288 slots: 9 a GPU), 4 prompts of 4,096 tokens a GPU, fp8.
    # Per GPU: compute 16,384 x 2 x 36,624,736,768 FLOP at fp8 = 606.5 ms plus causal attention;
    # reads 16,190,969,344 + 16,384 x 7168 + 9 x 58 x 44,040,192 B of weights and writes
    # 4 x 4,096 x 70,272 B of cache: far below the compute (compute-bound).
    s = moe.expert_parallel_prefill_step(DSV3, H100, 4 * 32, 4096, 32, redundant_experts=32,
                                         weight_bytes=1, dtype="fp8")
    weights = _DS_REPL - _DS_EMBED + 16384 * 7168 + 9 * 58 * _DS_EXPERT
    assert s.weight_time == pytest.approx(weights / 3.35e12, rel=1e-9)
    assert s.kv_time == pytest.approx(4 * 4096 * _DS_ROW / 3.35e12, rel=1e-12)
    assert s.matmul_time == pytest.approx(16384 * 2 * _DS_NMM / 1978.9e12, rel=1e-12)
    assert s.bound == "compute" and s.tokens == 4 * 32 * 4096
    assert s.held_per_chip == pytest.approx(_DS_REPL + 9 * 58 * _DS_EXPERT
                                            + 4 * 4096 * _DS_ROW, rel=1e-12)
    # one GPU's prompts at a time: the slots a few tokens reach are read, not all of them
    few = moe.expert_parallel_prefill_step(DSV3, H100, 1, 1, 32, weight_bytes=1)
    # 1 token, 8 of 256 slots: 8 x 8/256 per GPU = 0.25 slot x 58 x 44,040,192 expected
    assert few.weight_time == pytest.approx(
        (_DS_REPL - _DS_EMBED + 7168 / 32 + 8 * (8 / 256) * 58 * _DS_EXPERT) / 3.35e12, rel=1e-9)


def test_expert_parallel_steps_broadcast_and_refuse():
    s = moe.expert_parallel_decode_step(DSV3, H100, np.array([1024.0, 18432.0]), 4096,
                                        np.array([8, 144]), weight_bytes=1, dtype="fp8")
    assert s.time.shape == (2,) and s.fits.tolist() == [False, True]
    with pytest.raises(ValueError, match="dense"):
        moe.expert_parallel_decode_step(LLAMA, H100, 64, 4096, 8)
    with pytest.raises(ValueError, match="n_chips"):
        moe.expert_parallel_decode_step(DSV3, H100, 64, 4096, 0)
    with pytest.raises(ValueError, match="redundant_experts"):
        moe.expert_parallel_prefill_step(DSV3, H100, 64, 4096, 8, redundant_experts=-1)

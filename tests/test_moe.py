"""Unit tests of llmmath.moe with hand-computed values (and one Monte Carlo check).

Expected numbers are worked by hand below each assertion from catalogue figures (the chip
datasheets cited in references.bib) and DeepSeek's published layout (deepseek2025inference:
256 routed + 32 redundant experts, EP144 decode -> 2 per GPU, EP32 prefill -> 9 per GPU).
"""

from __future__ import annotations

import numpy as np
import pytest

from llmmath import chips, models, moe

DSV3 = models.get("DeepSeek-V3")
LLAMA = models.get("Llama-3-70B")
H100, GB200 = chips.get("H100-SXM"), chips.get("GB200")


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


def test_scale_up_over_scale_out():
    assert moe.scale_up_over_scale_out(H100) == pytest.approx(450e9 / 50e9)   # 9
    assert moe.scale_up_over_scale_out(GB200) == pytest.approx(900e9 / 50e9)  # 18
    with pytest.raises(ValueError, match="TPU v4"):
        moe.scale_up_over_scale_out(chips.get("TPU v4"))


def test_two_batch_overlap():
    # 58 layers, compute 0.5 ms, comm 0.3 ms: serial 46.4 ms; overlapped 58 x 0.5 + 0.15 = 29.15 ms
    assert moe.two_batch_overlap_time(0.5e-3, 0.3e-3, 58) == pytest.approx(29.15e-3)
    assert moe.two_batch_overlap_time(0.0, 1.0) == 1.0
    with pytest.raises(ValueError, match="n_layers"):
        moe.two_batch_overlap_time(1.0, 1.0, 0)

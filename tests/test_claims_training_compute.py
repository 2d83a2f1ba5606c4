"""The rules of thumb of chapter 11 ("Training compute, time and utilisation",
book/training_compute.ipynb), asserted over the whole chip and model catalogues.

When a rule fails for some chip or model, the chapter's prose changes (its scope), not the test.

Sources: Kaplan et al. 2020 (kaplan2020scaling) for 6 N D; Korthikanti et al. 2022
(korthikanti2022reducing) for 34 D + 5 n_q S bytes per token per layer; Rajbhandari et al. 2020
(rajbhandari2020zero) for the ZeRO stages; the ring all-reduce 2 (n-1)/n bytes / W, run in two
phases across servers of n_dom chips with a port per chip (NCCL, nccl_multi_nic). Expected values
are derived by hand from those formulas, never read off the library.
"""

from __future__ import annotations

import math

import pytest
from claims import each, from_scratch

from llmmath import chips, models
from llmmath import training as tr

CHIPS = chips.all_chips()
MODELS = models.all_models()
DENSE = [m for m in MODELS if not m.is_moe]
MOE = [m for m in MODELS if m.is_moe]
NET = [(c, net) for c in CHIPS for net in ("scale_up", "scale_out")
       if getattr(c, f"{net}_bandwidth") and "bf16" in c.flops]


# Claim: "training costs 6 N_act D_pre FLOP; 8 with full recomputation" for every model.
@each("m", MODELS, ids=lambda m: m.name)
def test_six_and_eight_per_active_parameter(m):
    assert tr.training_flops(m, 1e12) == pytest.approx(6 * m.active_params * 1e12, rel=1e-12)
    assert tr.training_flops(m, 1e12, recompute=True) == pytest.approx(
        8 * m.active_params * 1e12, rel=1e-12)


# Claim: "a mixture of experts pays for its active parameters only": N_tot / N_act times less
# than if every parameter were active.
@each("m", MOE, ids=lambda m: m.name)
def test_moe_trains_on_active_parameters(m):
    ratio = tr.training_flops(m.total_params, 1e12) / tr.training_flops(m, 1e12)
    assert ratio == pytest.approx(m.total_params / m.active_params, rel=1e-12)
    assert ratio > 2


# Claim: attention's share of training FLOPs is about L n_q d_h S / N_act relative to 6 N_act, and
# grows with S. Exact (up to the causal (S+1)/S) for models whose every layer attends to the whole
# sequence with ordinary heads (no MLA, no sliding window, no sparse attention).
@each("m", MODELS, ids=lambda m: m.name)
def test_attention_share_formula_and_growth(m):
    lengths = [S for S in (1024, 2048, 4096, 8192, 32768, 131072) if S <= m.max_context]
    shares = [tr.attention_training_share(m, S) for S in lengths]
    assert all(b > a for a, b in zip(shares, shares[1:], strict=False)), m.name
    plain = m.kv_lora_rank is None and not m.n_sliding_layers and m.sparse_attention_topk is None
    if plain:
        for S in lengths:
            ratio = m.n_layers * m.n_heads * m.head_dim * (S + 1) / m.active_params
            got = tr.attention_training_flops_per_token(m, S) / (6 * m.active_params)
            assert got == pytest.approx(ratio, rel=1e-9), (m.name, S)


# Claim: "attention is small while the sequence is short compared with twelve times the width":
# at S = D every full-attention dense model of the catalogue spends under 10% on attention.
@each("m", DENSE, ids=lambda m: m.name)
def test_attention_small_below_twelve_widths(m):
    S = min(m.d_model, m.max_context)
    assert tr.attention_training_share(m, S) < 0.10, m.name


# Claim: "training state is 16 bytes per parameter, over total parameters", and the fewest chips
# is the state over one chip's HBM, rounded up.
@each("c", CHIPS, ids=lambda c: c.name)
def test_fewest_chips_hold_sixteen_bytes_per_parameter(c):
    for m in MODELS:
        n = tr.min_training_chips(m, c)
        assert n == math.ceil(16 * m.total_params / c.hbm_capacity), (m.name, c.name)
        assert tr.zero_memory_per_chip(m, n, 3) <= c.hbm_capacity * (1 + 1e-12)


# Claim (ZeRO table): stage 3 <= 2 <= 1 <= 0 per chip; stages 1 and 2 level off at 4 and 2 bytes
# per parameter; only stage 3 falls as 1/n.
@each("m", MODELS, ids=lambda m: m.name)
def test_zero_stages_order_and_limits(m):
    N = m.total_params
    for n in (2, 8, 64, 1024, 16384):
        z = [tr.zero_memory_per_chip(m, n, s) for s in (0, 1, 2, 3)]
        assert z[0] > z[1] > z[2] > z[3]
        assert z[3] == pytest.approx(16 * N / n)
    big = 10**6
    assert tr.zero_memory_per_chip(m, big, 1) == pytest.approx(4 * N, rel=1e-4)
    assert tr.zero_memory_per_chip(m, big, 2) == pytest.approx(2 * N, rel=1e-4)


# Claim: "T* = (n - n_dom)/n (b_g/3) (C / (n_dom W_out)) N_tot/N_act (the longer of the network
# and NVLink phases, a port per chip; their sum when serial) does not depend on the model's size,
# only on the chip's FLOP rate against its server's pooled network bandwidth, and the sparsity";
# one port per server multiplies the network term by n_dom; scale_up is a flat ring.
@each("c,net", NET, ids=lambda x: getattr(x, "name", x))
def test_dp_threshold_formula(c, net):
    C, up, out, dom = c.peak("bf16"), c.scale_up_bandwidth, c.scale_out_bandwidth, c.scale_up_domain
    for n in (8, 1024):
        if net == "scale_up":
            dense = {"overlapped": (n - 1) / n * (2 / 3) * C / up}
            dense["serial"] = dense["overlapped"]
            one_port = dense["overlapped"]
        else:
            d = min(n, dom)
            t_out = (n - d) / n * (2 / 3) * C / (d * out)  # a port per chip
            t_up = (d - 1) / d * (2 / 3) * C / up
            dense = {"overlapped": max(t_out, t_up), "serial": t_out + t_up}
            one_port = max(t_out * d, t_up)
        for m in MODELS:
            s = m.total_params / m.active_params
            for phase, hand in dense.items():
                got = tr.dp_critical_tokens(m, c, n, net, scale_up_phase=phase)
                assert got == pytest.approx(hand * s, rel=1e-9), (m.name, n, phase)
            got = tr.dp_critical_tokens(m, c, n, net, nics_per_domain=1)
            assert got == pytest.approx(one_port * s, rel=1e-9), (m.name, n)


# Claim: "on an H100 the network phase is the longer one": 1,636 tokens per GPU over 1,024 GPUs
# ((1024 - 8)/1024 x 2/3 x 989.4e12 / (8 x 50e9)), 2,919 with serial phases (+ 7/8 x 2/3 x
# 989.4e12 / 450e9 = 1,283), 13.1k through one port per server; "faster chips need bigger
# per-chip batches" (B200: 3.7k to 5.2k); DeepSeek-V3 needs its sparsity times more (29k to 52k).
def test_dp_threshold_numbers_by_hand():
    m, ds = models.get("Llama-3.1-405B"), models.get("DeepSeek-V3")
    h100, b200 = chips.get("H100-SXM"), chips.get("B200")
    net = (1024 - 8) / 1024 * 2 / 3 * 989.4e12 / (8 * 50e9)
    nvl = 7 / 8 * 2 / 3 * 989.4e12 / 450e9
    assert net > nvl
    assert tr.dp_critical_tokens(m, h100, 1024) == pytest.approx(net, rel=1e-9)
    assert tr.dp_critical_tokens(m, h100, 1024, scale_up_phase="serial") == pytest.approx(
        net + nvl, rel=1e-9)
    assert tr.dp_critical_tokens(m, h100, 1024, nics_per_domain=1) == pytest.approx(8 * net,
                                                                                  rel=1e-9)
    assert b200.scale_out_bandwidth == h100.scale_out_bandwidth  # same 400 Gb/s port
    assert tr.dp_critical_tokens(m, b200, 1024) > 2 * tr.dp_critical_tokens(m, h100, 1024)
    assert 3.6e3 < tr.dp_critical_tokens(m, b200, 1024) < 3.8e3
    assert 5.1e3 < tr.dp_critical_tokens(m, b200, 1024, scale_up_phase="serial") < 5.3e3
    s = ds.total_params / ds.active_params
    assert tr.dp_critical_tokens(ds, h100, 1024) == pytest.approx(net * s, rel=1e-9)  # 29.2k
    assert 52e3 < tr.dp_critical_tokens(ds, h100, 1024, scale_up_phase="serial") < 53e3


# Claim: Llama 3's replicas of 128 GPUs (TP8 in a server x PP16) each processed 2^24 / 128 =
# 131,072 tokens per step; each GPU all-reduces its 1/128 shard over the 128 replicas through its
# own port, so per replica T* = 127/128 x 2/3 x 989.4e12/50e9 = 13.1k: 10 times, and 4.4 times
# once the sync may overlap only the backward pass (x1.5) and moves FSDP's traffic (x1.5).
def test_llama3_replicas_hide_the_sync():
    from llmmath.parallel import all_reduce_time
    m, h100 = models.get("Llama-3.1-405B"), chips.get("H100-SXM")
    assert (h100.peak("bf16"), h100.scale_out_bandwidth) == (989.4e12, 50e9)  # as typed below
    t_rep_hand = 127 / 128 * 2 / 3 * 989.4e12 / 50e9 * m.total_params / m.active_params
    sync = all_reduce_time(m.total_params * 2 / 128, 128, 50e9)
    assert sync * 989.4e12 * 128 / (6 * m.active_params) == pytest.approx(t_rep_hand, rel=1e-9)
    per_replica = 2048 * 8192 / 128
    assert per_replica / t_rep_hand == pytest.approx(10.0, abs=0.05)
    assert per_replica / (2.25 * t_rep_hand) == pytest.approx(4.45, abs=0.05)


# Claim (takeaways): attention's share is r / (1 + r) with r = L n_q d_h S / N_act: 40% of
# Llama 3.1 405B's training FLOPs at 128k, where it adds 67% on top.
def test_attention_share_against_ratio():
    m = models.get("Llama-3.1-405B")
    r = 126 * 128 * 128 * 131073 / m.active_params  # causal: (S + 1) / 2 keys on average, x 2
    share = tr.attention_training_share(m, 131072)
    assert share == pytest.approx(r / (1 + r), rel=1e-9)
    assert share == pytest.approx(0.40, abs=0.005) and r == pytest.approx(0.667, abs=0.005)


# Claim (reality check): MFU over all reported chip-hours is below the MFU reported for steady
# training, for PaLM (46.2%) and Llama 3.1 405B (38-43%).
def test_mfu_over_chip_hours_below_reported():
    palm = tr.mfu_from_chip_hours(2527.2e21, 1200 * 6144 + 336 * 3072, chips.get("TPU v4"))
    llama = tr.mfu_from_chip_hours(3.8e25, 30.84e6, chips.get("H100-SXM"))
    assert palm < 0.462 and llama < 0.38
    assert 0.25 < palm and 0.30 < llama  # by hand: 0.304 and 0.346


# Claim: "full recomputation stores 17 times less than selective" (34 D over 2 D, for any model),
# and selective recomputation drops exactly the 5 n_q S term.
@each("m", MODELS, ids=lambda m: m.name)
def test_recomputation_ratios(m):
    S = min(8192, m.max_context)
    sel = tr.activation_bytes_per_token_per_layer(m, S, "selective")
    assert sel / tr.activation_bytes_per_token_per_layer(m, S, "full") == pytest.approx(17)
    assert tr.activation_bytes_per_token_per_layer(m, S) - sel == 5 * m.n_heads * S


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    # train_flops, train_days and dp_tokens_star against llmmath.training over every catalogue
    # model (dense and MoE) and every chip with a bf16 peak and a network bandwidth.
    from llmmath.training import dp_critical_tokens, training_flops, training_time
    for m in models.all_models():
        for D in (1e12, 15.6e12):
            for remat in (False, True):
                assert ns["train_flops"](m.active_params, D, remat) == pytest.approx(
                    training_flops(m, D, recompute=remat), rel=1e-12), (m.name, D, remat)
        for c in chips.all_chips():
            if "bf16" not in c.flops:
                continue
            days = ns["train_days"](m.active_params, 15e12, 4096, c.peak("bf16"), 0.4)
            assert days == pytest.approx(training_time(m, 15e12, c, 4096, 0.4) / 86400, rel=1e-12)
            up, out = c.scale_up_bandwidth, c.scale_out_bandwidth
            for n in (8, 1024):
                # a flat scale-up ring is one domain of all n chips
                got = ns["dp_tokens_star"](m.total_params, m.active_params, c.peak("bf16"),
                                           1.0, up, n, n)
                assert got == pytest.approx(dp_critical_tokens(m, c, n, "scale_up"),
                                            rel=1e-12), (m.name, c.name, n)
                if not out:
                    continue
                got = ns["dp_tokens_star"](m.total_params, m.active_params, c.peak("bf16"),
                                           out, up, n, c.scale_up_domain)
                assert got == pytest.approx(dp_critical_tokens(m, c, n, "scale_out"),
                                            rel=1e-12), (m.name, c.name, n)

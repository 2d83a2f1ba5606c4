"""Laying out a training run (llmmath.layout), worked by hand on a toy model and a toy chip.

Every expected value is worked in the comment beside it, or is a published figure with its
tolerance (Daly 2006's optimum intervals).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmmath import Chip, Model, chips, models
from llmmath.layout import (
    IN_FLIGHT,
    LLAMA3_INTERRUPTIONS,
    Cluster,
    Layout,
    check_layout,
    checkpoint_interval,
    explain,
    goodput,
    memory_per_chip,
    plan,
    step_time,
)

# checks physics: make mutate runs it
pytestmark = pytest.mark.physics

TOY_CHIP = Chip(name="toy chip", flops={"bf16": 1e15}, hbm_bandwidth=1e12, hbm_capacity=1e12,
                scale_up_bandwidth=1e11, scale_up_domain=8, scale_out_bandwidth=1e10)
# Dense toy: 4 layers, D 1024, gated MLP F 4096, 8 heads of 128 (MHA), tied vocabulary 32000.
# Per layer: attention 4 D^2 = 4,194,304; MLP 3 D F = 12,582,912; norms 2 D = 2,048.
# Four layers 67,117,056; tied embedding 32,768,000; final norm 1,024: 99,886,080 in all.
TOY = Model(name="toy", n_layers=4, d_model=1024, d_ff=4096, n_heads=8, vocab_size=32000,
            tied_embeddings=True)
# Attention per trained token at S = 1024: forward per layer per (query, key) pair 2 x 2 x
# n_q d_h = 4,096 FLOP over 1024 x 1025 / 2 = 524,800 causal pairs, 4 layers: 8,598,323,200 per
# sequence; forward + backward is 3 times that, per token / 1024: 25,190,400 FLOP.
ATTN = 25_190_400
LAYOUT = Layout(dp=2, tp=2, pp=2)  # 8 chips, ZeRO-1, micro-batch 1, 1F1B, selective, SP
ROUND = dict(matmul_efficiency=0.5, attention_efficiency=0.5, link_efficiency=1.0,
             hop_latency=0.0)


def test_toy_counts_are_the_hand_counts():
    assert TOY.total_params == 99_886_080 == TOY.active_params
    from llmmath.training import attention_training_flops_per_token
    assert attention_training_flops_per_token(TOY, 1024) == pytest.approx(ATTN)


# ----- validation ------------------------------------------------------------------------------

def test_check_layout_returns_the_micro_batches():
    # 8 sequences over dp 2 at micro-batch 1: 4 micro-batches per replica per step
    assert check_layout(TOY, LAYOUT, 8, global_batch=8, sequence_length=1024) == 4
    assert check_layout(TOY, Layout(dp=2, tp=2, pp=2, micro_batch=2), 8, 8) == 2


@pytest.mark.parametrize("layout, n, match", [
    (Layout(dp=2, tp=2, pp=2), 16, "not n_chips=16"),            # 8 chips laid out, 16 given
    (Layout(dp=1, tp=16), 16, "heads do not divide by tp=16"),   # 8 heads
    (Layout(dp=1, pp=8), 8, "layers cannot fill"),               # 4 layers, 8 stages
    (Layout(dp=2, ep=2), 2, "dense model"),                      # no experts to spread
    (Layout(dp=1, pp=4, schedule="interleaved", virtual_stages=2), 4, "layers cannot fill"),
])
def test_bad_layouts_are_refused_by_name(layout, n, match):
    with pytest.raises(ValueError, match=f"layout:.*{match}"):
        check_layout(TOY, layout, n)


def test_batch_and_sequence_must_divide():
    with pytest.raises(ValueError, match="global_batch.*dp x micro_batch = 4"):
        check_layout(TOY, Layout(dp=2, tp=2, pp=2, micro_batch=2), 8, global_batch=6)
    with pytest.raises(ValueError, match="sequence_length.*cp=2"):
        check_layout(TOY, Layout(dp=1, cp=2), 2, sequence_length=1001)


def test_layout_fields_are_checked():
    with pytest.raises(ValueError, match="virtual_stages"):
        Layout(dp=1, virtual_stages=2)                 # chunks need the interleaved schedule
    with pytest.raises(ValueError, match="schedule"):
        Layout(dp=1, schedule="chimera")
    with pytest.raises(ValueError, match="recompute"):
        Layout(dp=1, recompute="some")
    with pytest.raises(TypeError, match="zero_stage"):
        Layout(dp=1, zero_stage=True)
    with pytest.raises(ValueError, match="tp"):
        Layout(dp=1, tp=0)


def test_expert_parallelism_folds_into_a_stage():
    moe = TOY.replace(name="toy moe", n_experts=4, experts_per_token=1, d_ff_expert=1024)
    # ep 4 divides a stage's tp cp dp = 2 x 1 x 2 = 4 chips: allowed though ep > dp
    assert check_layout(moe, Layout(dp=2, tp=2, pp=2, ep=4), 8) is None
    with pytest.raises(ValueError, match="ep=4 does not divide a stage's tp cp dp = 2"):
        check_layout(moe, Layout(dp=2, tp=1, pp=4, ep=4), 8)
    with pytest.raises(ValueError, match="4 experts do not divide by ep=8"):
        check_layout(moe, Layout(dp=8, ep=8), 8)


# ----- memory ----------------------------------------------------------------------------------

# States: 99,886,080 / (tp 2 x pp 2) = 24,971,520 parameters per chip; ZeRO-1 over dp 2:
# (2 + 2 + 12/2) B = 10 B each: 249,715,200 B.
STATES = 249_715_200


def test_memory_per_chip_by_hand():
    mem = memory_per_chip(TOY, LAYOUT, 1024, global_batch=8)
    assert mem.states == pytest.approx(STATES)
    assert mem.weights == pytest.approx(2 * 24_971_520)
    # Selective: 34 D = 34,816 B per token per layer, / tp 2 (sequence parallel) = 17,408;
    # L/pp = 2 layers, 1F1B holds min(pp, m) = min(2, 4) = 2 micro-batches of 1,024 tokens:
    # 2 x 2 x 1,024 x 17,408 = 71,303,168 B.
    assert mem.in_flight == 2
    assert mem.activations == pytest.approx(71_303_168)
    assert mem.total == pytest.approx(STATES + 71_303_168)


@pytest.mark.parametrize("changes, acts", [
    # no sequence parallelism: 10 D = 10,240 whole + 24 D / 2 = 12,288: 22,528 per token-layer,
    # 4 x 1,024 x 22,528 = 92,274,688
    (dict(sequence_parallel=False), 92_274_688),
    # full recomputation keeps 2 D = 2,048 per token-layer whatever tp: 4 x 1,024 x 2,048
    (dict(recompute="full"), 8_388_608),
    # nothing recomputed, unfused attention: (34 D + 5 n_q S) / 2 = (34,816 + 40,960) / 2 =
    # 37,888; x 4,096
    (dict(recompute="none", fused_attention=False), 155_189_248),
    # nothing recomputed, fused attention (the default) stores no S x S scores: 34 D / 2 =
    # 17,408, x 4,096 = 71,303,168, what selective recomputation keeps
    (dict(recompute="none"), 71_303_168),
    # GPipe holds all m = 4 micro-batches: twice 1F1B's 71,303,168
    (dict(schedule="gpipe"), 142_606_336),
    # interleaved, 2 chunks: 2 (1 + (2-1)/(2 x 2)) = 2.5 micro-batches: 2.5 x 2 x 1,024 x 17,408
    (dict(schedule="interleaved", virtual_stages=2), 89_128_960),
    # ZB-H2 up to 2p - 1 = 3 micro-batches: 3 x 2 x 1,024 x 17,408
    (dict(schedule="zb-h2"), 106_954_752),
])
def test_activations_by_schedule_and_recomputation(changes, acts):
    lay = Layout(**{**dict(dp=2, tp=2, pp=2), **changes})
    assert memory_per_chip(TOY, lay, 1024, global_batch=8).activations == pytest.approx(acts)


def test_zero_3_shards_everything_and_keeps_no_weights():
    mem = memory_per_chip(TOY, Layout(dp=2, tp=2, pp=2, zero_stage=3), 1024, 8)
    assert mem.states == pytest.approx(16 / 2 * 24_971_520)   # 16 B over dp 2
    assert mem.weights == 0


def test_context_parallelism_divides_the_tokens():
    # cp 2 on the same 8 chips (dp 1): 512 tokens per chip per micro-batch, m = 8 / 1 = 8,
    # ZeRO over dp cp = 2 as before: activations 2 x 2 x 512 x 17,408 = 35,651,584
    mem = memory_per_chip(TOY, Layout(dp=1, tp=2, pp=2, cp=2), 1024, 8)
    assert mem.activations == pytest.approx(35_651_584)
    assert mem.states == pytest.approx(STATES)


def test_expert_states_shard_over_their_own_group():
    moe = TOY.replace(name="toy moe", n_experts=4, experts_per_token=1, d_ff_expert=1024)
    # routed experts: 4 layers x 4 experts x 3 x 1024 x 1024 = 50,331,648 params, each layer's
    # MLP replaced; the rest N_tot - that. Experts per chip 50,331,648 / (ep 4 x pp 2) =
    # 6,291,456, ZeRO-1 over tp cp dp / ep = 1 chip: 16 B each = 100,663,296 B
    n_exp = 4 * 4 * 3 * 1024 * 1024
    dense = (moe.total_params - n_exp) / 4                      # / (tp 2 x pp 2)
    mem = memory_per_chip(moe, Layout(dp=2, tp=2, pp=2, ep=4), 1024, 8)
    assert mem.states == pytest.approx(10 * dense + 16 * n_exp / 8)


def test_fits_compares_with_hbm():
    mem = memory_per_chip(TOY, LAYOUT, 1024, 8)
    small = Chip(name="small", flops={"bf16": 1e15}, hbm_bandwidth=1e12,
                 hbm_capacity=mem.total * 0.99)
    assert mem.fits(TOY_CHIP) and not mem.fits(small)
    assert not mem.fits(TOY_CHIP, memory_fraction=mem.total / 1e12 * 0.99)


def test_in_flight_table():
    # the first stage's peak, p = 4 stages, m = 16 micro-batches, v = 2 chunks
    assert IN_FLIGHT["1f1b"](4, 16, 1) == 4 and IN_FLIGHT["gpipe"](4, 16, 1) == 16
    assert IN_FLIGHT["interleaved"](4, 16, 2) == pytest.approx(4 * (1 + 3 / 8))
    assert IN_FLIGHT["zb-h2"](4, 16, 1) == 7 and IN_FLIGHT["1f1b"](4, 2, 1) == 2
    assert IN_FLIGHT["dualpipe"](16, 120, 1) == 17 and IN_FLIGHT["dualpipe"](16, 10, 1) == 10


# ----- step time -------------------------------------------------------------------------------

# 8 sequences of 1,024 = 8,192 tokens, 8 chips, m = 4. Model FLOPs per token 6 x 99,886,080 +
# 25,190,400 = 624,506,880; the step's 8,192 x that = 5,115,960,360,960.
MODEL_FLOPS = 8192 * (6 * 99_886_080 + ATTN)
# Per micro-batch and chip: 1,024 tokens, the work split over tp 2, so 512 tokens' worth.
# A layer: 6 x 16,779,520 = 100,677,120 matmul FLOP per token (its 16,779,520 parameters: the
# 99,886,080 less the tied 32,768,000 embedding, over 4 layers) plus attention 25,190,400 / 4 x
# 4/3 (selective) = 8,396,800: 512 x 109,073,920 / 0.5e15 = 1.1169169408e-4 s.
C_LAYER = 512 * (100_677_120 + 8_396_800) / 0.5e15
# The LM head on the last rank: 6 x 32,768,000 = 196,608,000 FLOP per token, 2.01326592e-4 s.
C_HEAD = 512 * 196_608_000 / 0.5e15
# compute: the mean rank's arithmetic, m (4 C_LAYER + C_HEAD) / 2 = 1.29618673664e-3 s, the
# same as the step's FLOPs over all chips: 1,024 x (6 x 99,886,080 + 4/3 ATTN) / 0.5e15.
COMPUTE = 4 * (4 * C_LAYER + C_HEAD) / 2
# elementwise per layer and token (sequence parallel, fused attention, selective): norms 10 x
# 1,024 / 2 = 5,120 B, MLP activation 2 x 4,096 / 2 = 4,096 B, each moved 2 + 3 = 5 times:
# 46,080 B; 1,024 tokens at 1e12 B/s x 3,000/3,350 (FlashMLA's read rate): 5.269094e-5 s.
E_LAYER = 1024 * 46_080 / (1e12 * 3000 / 3350)
# TP: per layer 2 all-reduces of 1,024 x 1,024 x 2 = 2,097,152 B over 2 chips at 1e11:
# 2 x (1/2) x 2,097,152 / 1e11 = 2.097152e-5 each, 2 passes: 8.388608e-5 s a layer;
# 2 layers per rank, 4 micro-batches: 6.7108864e-4 s.
TP_LAYER = 2 * 2 * 2.097152e-5
TP = 4 * 2 * TP_LAYER
# PP: 8 chips fill one domain (scale-up 1e11); each hop sends 1,024 / 2 tokens x 1,024 x 2 B =
# 1,048,576 B = 1.048576e-5 s; 2 per micro-batch, 4 micro-batches: 8.388608e-5 s.
PP = 8 * 1.048576e-5
# the ranks hold 2 and 2 layers; the last also the head, so it is the slowest:
# 2 (C_LAYER + E_LAYER + TP_LAYER) + C_HEAD; the mean rank is C_HEAD / 2 faster, and the
# stages term is m x C_HEAD / 2 = 2 C_HEAD = 4.02653184e-4 s.
SLOWEST = 2 * (C_LAYER + E_LAYER + TP_LAYER) + C_HEAD
STAGES = 4 * C_HEAD / 2
BUSY = 4 * (SLOWEST + PP / 4)
# bubble: (p-1)/(m+p-1) = 1/5 of the step, busy x (1/5)/(4/5)
BUBBLE = BUSY / 4
# DP: 24,971,520 bf16 gradients all-reduced over 2 chips on scale-up at 1e11:
# 2 x (1/2) x 49,943,040 / 1e11 = 4.994304e-4 s, less the last micro-batch's backward
# (2/3 of COMPUTE / 4 = 2.1603112277e-4 s)
DP_TOTAL = 49_943_040 / 1e11
DP = DP_TOTAL - COMPUTE / 4 * 2 / 3
# optimizer: ZeRO-1 over dp 2, each chip updates 24,971,520 / 2 = 12,485,760 parameters at 28 B
# (Adam's reads and writes) = 349,601,280 B at 8.955e11 B/s: 3.903880e-4 s.
OPTIMIZER = 12_485_760 * 28 / (1e12 * 3000 / 3350)
TIME = BUSY + BUBBLE + DP + OPTIMIZER
CLUSTER = Cluster(TOY_CHIP, 8)


def test_step_time_by_hand():
    st = step_time(TOY, LAYOUT, CLUSTER, 8, 1024, **ROUND)
    assert st.micro_batches == 4 and st.bubble_fraction == pytest.approx(0.2)
    assert st.compute == pytest.approx(COMPUTE, rel=1e-9)
    assert st.compute == pytest.approx(1.29618673664e-3, rel=1e-9)
    assert st.elementwise == pytest.approx(4 * 2 * E_LAYER, rel=1e-9)
    assert E_LAYER == pytest.approx(5.269094e-5, rel=1e-6)
    assert st.tp == pytest.approx(TP, rel=1e-9)
    assert st.pp == pytest.approx(PP, rel=1e-9)
    assert st.ep == 0 and st.cp == 0
    assert st.stages == pytest.approx(STAGES, rel=1e-9)
    assert st.stages == pytest.approx(4.02653184e-4, rel=1e-9)
    assert st.bubble == pytest.approx(BUBBLE, rel=1e-9)
    assert st.dp_total == pytest.approx(DP_TOTAL, rel=1e-9)
    assert st.dp == pytest.approx(DP, rel=1e-9)
    assert st.optimizer == pytest.approx(OPTIMIZER, rel=1e-9)
    assert st.optimizer == pytest.approx(3.903880e-4, rel=1e-6)
    assert st.time == pytest.approx(TIME, rel=1e-9)
    assert sum(st.terms().values()) == pytest.approx(st.time, rel=1e-12)
    assert st.model_flops == pytest.approx(MODEL_FLOPS, rel=1e-12)
    assert st.mfu == pytest.approx(MODEL_FLOPS / (TIME * 8 * 1e15), rel=1e-9)
    # HFU counts the recomputed attention forward: 8,192 x 632,903,680 FLOP
    assert st.hardware_flops == pytest.approx(8192 * (6 * 99_886_080 + 4 * ATTN / 3))
    assert st.hfu == pytest.approx(st.hardware_flops / (TIME * 8 * 1e15), rel=1e-9)


# Kernel rates by shape on a chip NVIDIA's aiconfigurator tables cover (nvidia_aiconfigurator_gemm,
# the medians llmmath.estimate vendors): an H100 SXM's bf16 GEMMs reach 0.758 of the 989.4
# TFLOP/s peak at 1,024 rows and 0.784 at 2,048; its context attention 0.239 at 1,024 tokens.
H100 = chips.get("H100-SXM")
H100_PEAK = 989.4e12


def test_step_time_charges_the_measured_rates_by_shape():
    # TOY on 8 H100s, micro-batch 1 of S = 1,024: every dense GEMM has 1,024 rows (0.758) and
    # attention spans 1,024 tokens (0.239). Per chip 8 x 1,024 / 8 = 1,024 tokens of 6 N =
    # 599,316,480 matmul FLOP and 4/3 x 25,190,400 = 33,587,200 attention FLOP (selective).
    st = step_time(TOY, LAYOUT, Cluster(H100, 8), 8, 1024, link_efficiency=1.0, hop_latency=0.0)
    by_hand = 1024 * (599_316_480 / (H100_PEAK * 0.758) + 33_587_200 / (H100_PEAK * 0.239))
    assert st.compute == pytest.approx(by_hand, rel=1e-9)       # 9.6375e-4 s
    assert st.compute == pytest.approx(9.6375e-4, rel=1e-4)


def test_gemm_rows_are_the_micro_batch_on_one_context_shard():
    # micro-batch 3 of 1,024 tokens split over cp = 2: 1,536 rows, between the table's 1,024
    # (0.758) and 2,048 (0.784) rows, linear in log2: 0.758 + log2(1.5) x 0.026 = 0.7732090.
    # Attention spans the whole sequence, 1,024 tokens (0.239), not the 512 of one shard.
    # Per chip 6 x 1,024 / 8 = 768 tokens.
    lay = Layout(dp=2, tp=2, cp=2, micro_batch=3)
    st = step_time(TOY, lay, Cluster(H100, 8), 6, 1024, link_efficiency=1.0, hop_latency=0.0)
    rate = 0.758 + math.log2(1.5) * (0.784 - 0.758)
    assert rate == pytest.approx(0.7732090, abs=1e-7)
    by_hand = 768 * (599_316_480 / (H100_PEAK * rate) + 33_587_200 / (H100_PEAK * 0.239))
    assert st.compute == pytest.approx(by_hand, rel=1e-9)


def test_chips_outside_the_tables_keep_the_best_case_constants():
    # The toy chip (1e15 FLOP/s) is in no table: matmuls and attention at FlashAttention-3's
    # 740 of 989.4 TFLOP/s (shah2024flashattention3), 1,024 tokens per chip.
    st = step_time(TOY, LAYOUT, CLUSTER, 8, 1024, link_efficiency=1.0, hop_latency=0.0)
    assert st.compute == pytest.approx(1024 * (599_316_480 + 33_587_200) / (1e15 * 740 / 989.4),
                                       rel=1e-9)


def test_explicit_efficiencies_win_over_the_tables():
    # matmul_efficiency given: the dense GEMMs at 0.5, attention still at the measured 0.239
    st = step_time(TOY, LAYOUT, Cluster(H100, 8), 8, 1024, matmul_efficiency=0.5)
    by_hand = 1024 * (599_316_480 / (H100_PEAK * 0.5) + 33_587_200 / (H100_PEAK * 0.239))
    assert st.compute == pytest.approx(by_hand, rel=1e-9)
    both = step_time(TOY, LAYOUT, Cluster(H100, 8), 8, 1024, **ROUND)
    assert both.compute == pytest.approx(1024 * (599_316_480 + 33_587_200) / (H100_PEAK * 0.5),
                                         rel=1e-9)


def test_latent_attention_keeps_the_attention_constant():
    # The attention tables hold head dimension 128 only; MLA's 192 is not among them, so
    # DeepSeek-V3's attention stays at FlashAttention-3's 740/989.4 on an H100.
    v3 = models.get("DeepSeek-V3")
    lay, cl = Layout(dp=8, ep=8), Cluster(H100, 8)
    default = step_time(v3, lay, cl, 8, 4096)
    constant = step_time(v3, lay, cl, 8, 4096, attention_efficiency=740 / 989.4)
    assert default.compute == pytest.approx(constant.compute, rel=1e-12)
    # a GQA model's attention does take the table's rate (0.419 at 4,096 tokens): slower
    llama = models.get("Llama-3-8B")
    lay = Layout(dp=8)
    assert step_time(llama, lay, cl, 8, 4096).compute > step_time(
        llama, lay, cl, 8, 4096, attention_efficiency=740 / 989.4).compute


def test_full_recomputation_adds_a_forward_and_a_pass_of_collectives():
    st = step_time(TOY, Layout(dp=2, tp=2, pp=2, recompute="full"), CLUSTER, 8, 1024, **ROUND)
    # the layers' 67,118,080 parameters run 8 x (forward twice), the tied LM head's 32,768,000
    # only 6 x (never recomputed, Narayanan et al. 2021's appendix), attention 4/3: per token
    # 536,944,640 + 196,608,000 + 33,587,200 = 767,139,840, 1,024 tokens, at 0.5e15
    assert st.compute == pytest.approx(1024 * (8 * 67_118_080 + 6 * 32_768_000
                                               + 4 * ATTN / 3) / 0.5e15)
    assert st.hardware_flops == pytest.approx(8192 * 767_139_840)
    assert st.tp == pytest.approx(TP * 3 / 2)            # 3 passes instead of 2
    # MFU's numerator never counts recomputation
    assert st.model_flops == pytest.approx(MODEL_FLOPS)


def test_no_recomputation_runs_attention_once():
    st = step_time(TOY, Layout(dp=2, tp=2, pp=2, recompute="none"), CLUSTER, 8, 1024, **ROUND)
    assert st.compute == pytest.approx(1024 * (6 * 99_886_080 + ATTN) / 0.5e15)


def test_scale_out_carries_what_leaves_the_domain():
    # 16 chips in domains of 8: dp 4 spans two domains, the pipeline hop leaves them.
    big = Cluster(TOY_CHIP, 16)
    st = step_time(TOY, Layout(dp=4, tp=2, pp=2), big, 16, 1024, **ROUND)
    # hops at 1e10: 1,048,576 B = 1.048576e-4 s, 2 per micro-batch, m = 16 / 4 = 4
    assert st.pp == pytest.approx(8 * 1.048576e-4)
    # DP over 4 chips, 4 per domain (8 / tp 2): one domain holds the whole group, so only the
    # scale-up phase is paid: 2 (4-1)/4 x 49,943,040 / 1e11 = 7.4914560e-4 s
    assert st.dp_total == pytest.approx(2 * 3 / 4 * 49_943_040 / 1e11)


def test_tensor_parallelism_stays_on_scale_up_when_context_parallelism_leaves_it():
    # tp 2 x cp 8 = 16 chips over two domains of 8: the TP pairs are inside a domain (1e11),
    # the CP ring is not (1e10). TP per micro-batch as in TP above but on 1024 / 8 = 128 tokens:
    # 2 passes x 4 layers x 2 all-reduces of 128 x 1,024 x 2 = 262,144 B, 2 x (1/2) x 262,144 /
    # 1e11 = 2.62144e-6 s each; m = 1 micro-batch (1 sequence, dp 1)
    st = step_time(TOY, Layout(dp=1, tp=2, cp=8), Cluster(TOY_CHIP, 16), 1, 1024, **ROUND)
    assert st.tp == pytest.approx(16 * 2.62144e-6)


def test_context_parallel_exchange_beyond_attention():
    # cp 2, tp 1 on 2 chips (dp 1), 2 sequences of 1,024, m = 2. K and V per token per layer
    # 2 x 8 x 128 = 2,048 numbers; one sequence's: 1,024 x 2,048 x 2 B = 4,194,304 B gathered,
    # (1/2) x 4,194,304 / 1e11 = 2.097152e-5 s each, 3 per layer (forward all-gather, backward
    # all-gather and reduce-scatter): 6.291456e-5 s. The layer's attention on 512 tokens:
    # 4/3 x 25,190,400 / 4 layers x 512 / 0.5e15 = 8.597...e-6 s. Exposed per layer the
    # difference; 4 layers, 2 micro-batches.
    st = step_time(TOY, Layout(dp=1, cp=2), Cluster(TOY_CHIP, 2), 2, 1024, **ROUND)
    attn_layer = 4 / 3 * ATTN / 4 * 512 / 0.5e15
    assert st.cp == pytest.approx(2 * 4 * (3 * 2.097152e-5 - attn_layer))


def test_expert_all_to_all_by_hand():
    moe = TOY.replace(name="toy moe", n_experts=4, experts_per_token=1, d_ff_expert=1024)
    # ep 2 inside one domain, tp 1: each chip holds 1,024 tokens of its micro-batch; its one
    # expert sits on the other chip with probability 1/2: (2-1)(1 - (1 - 1/2)^1) = 0.5 copies
    # per token of 1,024 x (2 + 2) B = 4,096 B: 2,097,152 B at 1e11 = 2.097152e-5 s per layer;
    # 2 passes x 4 MoE layers x m = 2 micro-batches: 16 x 2.097152e-5
    st = step_time(moe, Layout(dp=2, ep=2), Cluster(TOY_CHIP, 2), 4, 1024, **ROUND)
    assert st.ep == pytest.approx(16 * 2.097152e-5)


def test_bigger_micro_batches_shrink_the_bubble():
    a = step_time(TOY, LAYOUT, CLUSTER, 64, 1024, **ROUND)   # m = 32: (1/33)
    assert a.bubble_fraction == pytest.approx(1 / 33)
    assert a.mfu > step_time(TOY, LAYOUT, CLUSTER, 8, 1024, **ROUND).mfu


# ----- the planner ------------------------------------------------------------------------------

def test_plan_ranks_fitting_layouts_fastest_first():
    found = plan(TOY, CLUSTER, 8, 1024)
    assert found, "the toy fits many ways"
    times = [e.step.time for e in found]
    assert times == sorted(times)
    assert all(e.memory.total <= TOY_CHIP.hbm_capacity for e in found)
    assert all(e.layout.tp <= 8 and e.layout.n_chips == 8 for e in found)
    # the hand-worked layout is among the candidates, so the winner is no slower
    assert found[0].step.time <= step_time(TOY, LAYOUT, CLUSTER, 8, 1024).time


def test_plan_keeps_only_what_fits():
    tiny = Chip(name="tiny", flops={"bf16": 1e15}, hbm_bandwidth=1e12, hbm_capacity=1e8,
                scale_up_bandwidth=1e11, scale_up_domain=8, scale_out_bandwidth=1e10)
    # ZeRO-3 over 8 chips still holds 16 x 99,886,080 / 8 = 199,772,160 B > 1e8: none fits
    assert plan(TOY, Cluster(tiny, 8), 8, 1024) == []
    assert "No layout fits" in explain([])


def test_slow_scale_out_pushes_data_parallelism_inside_the_domain():
    # two domains of 8 joined by 1 MB/s: gradients (25-100 MB) must not cross it, a pipeline
    # hop (1 MB per micro-batch) is the cheapest thing to send, so the cut between domains is a
    # pipeline boundary: every winner has pp a multiple of 2 and its DP group in one domain.
    slow = Cluster(TOY_CHIP, 16, scale_out_bandwidth=1e6)
    best = plan(TOY, slow, 16, 1024)[0].layout
    assert best.pp % 2 == 0 and best.dp * best.tp * best.cp <= 8


def test_critical_batch_bounds_the_global_batch():
    with pytest.raises(ValueError, match="critical_batch_tokens"):
        plan(TOY, CLUSTER, 8, 1024, critical_batch_tokens=4096)   # 8,192 tokens > 4,096
    assert plan(TOY, CLUSTER, 8, 1024, critical_batch_tokens=8192)


def test_explain_names_the_winner_and_its_terms():
    found = plan(TOY, CLUSTER, 8, 1024)
    text = explain(found)
    assert str(found[0].layout) in text and "per step" in text and "compute" in text
    with pytest.raises(TypeError, match="plan"):
        explain("DP8")


# ----- failures ----------------------------------------------------------------------------------

@pytest.mark.parametrize("mtbf_h, published_min, tol", [
    (24, 117, 0.5), (6, 57, 0.5), (0.25, 9.1, 0.05)])
def test_daly_interval_matches_his_published_optima(mtbf_h, published_min, tol):
    # Daly 2006, Figs. 3-5 captions: delta = 5 min, M = 24 h, 6 h, 15 min -> "The new model
    # predicts tau_opt = 117 min", "57 min", "9.1 min" (rounded as printed).
    got = checkpoint_interval(mtbf_h * 3600, 300) / 60
    assert got == pytest.approx(published_min, abs=tol)


def test_young_interval_by_hand():
    # sqrt(2 x 5 min x 1,440 min) = sqrt(14,400) = 120 min
    assert checkpoint_interval(24 * 3600, 300, method="young") == pytest.approx(120 * 60)
    # Daly past delta >= 2M: checkpoint once per MTBF
    assert checkpoint_interval(100.0, 300.0) == pytest.approx(100.0)
    assert np.allclose(checkpoint_interval(np.array([24 * 3600, 100.0]), 300.0),
                       [checkpoint_interval(24 * 3600, 300.0), 100.0])


def test_goodput_by_hand():
    # tau 1 h, delta 0.1 h, M 10 h, R 0: 1 / (10 (e^0.11 - 1)) = 1 / 1.1627807 = 0.8600
    assert goodput(3600, 360, 36000) == pytest.approx(1 / (10 * math.expm1(0.11)))
    assert goodput(3600, 360, 36000) == pytest.approx(0.8600, abs=1e-4)
    # no failures: tau / (tau + delta)
    assert goodput(3600, 360, 1e12) == pytest.approx(3600 / 3960, rel=1e-6)
    # a restart of R = M ln 2 doubles the expected time: half the goodput
    assert goodput(3600, 360, 36000, 36000 * math.log(2)) == pytest.approx(0.4300, abs=1e-4)


def test_daly_interval_is_near_the_minimum_of_his_complete_model():
    # Daly's Fig. 3 case (M 24 h, R 10 min, delta 5 min): the interval that maximises goodput,
    # searched on a 0.1-minute grid, is the estimate's 117 minutes within a minute.
    taus = np.arange(60.0, 200.0, 0.1) * 60
    best = taus[np.argmax(goodput(taus, 300.0, 24 * 3600.0, 600.0))] / 60
    assert best == pytest.approx(checkpoint_interval(24 * 3600.0, 300.0) / 60, abs=1.0)


def test_llama3_interruptions_worked_example():
    # 419 unexpected interruptions in 54 days: the job's MTBF is 54 x 24 / 419 = 3.093 h.
    r = LLAMA3_INTERRUPTIONS
    assert r["planned"] + r["unexpected"] == r["interruptions"] == 466
    mtbf = r["days"] * 86400 / r["unexpected"]
    assert mtbf / 3600 == pytest.approx(3.093, abs=1e-3)
    # With a one-minute checkpoint (an assumption: the paper prints no write time), Young's
    # interval is sqrt(2 x 60 x 11,134 s) = 1,155.9 s = 19.3 min
    assert checkpoint_interval(mtbf, 60, "young") == pytest.approx(math.sqrt(2 * 60 * mtbf))
    assert checkpoint_interval(mtbf, 60, "young") / 60 == pytest.approx(19.27, abs=0.01)


def test_checkpoint_inputs_are_refused_by_name():
    for fn, args, name in ((checkpoint_interval, (-1.0, 60.0), "mtbf"),
                           (checkpoint_interval, (3600.0, 0.0), "checkpoint_time"),
                           (goodput, (0.0, 60.0, 3600.0), "interval")):
        with pytest.raises(ValueError, match=name):
            fn(*args)
    with pytest.raises(ValueError, match="method"):
        checkpoint_interval(3600.0, 60.0, method="guess")


def test_real_catalogue_layout_runs():
    # Llama 3.1 405B on 16,384 H100s at TP8 PP16 (its published degrees [llama3_herd]):
    # a smoke test that the catalogue's units go through; the numbers are tests/test_layout_runs.
    m, h = models.get("Llama-3.1-405B"), chips.get("H100-SXM")
    st = step_time(m, Layout(dp=128, tp=8, pp=16, schedule="interleaved", virtual_stages=4),
                   Cluster(h, 16384), 2048, 8192)
    assert 0 < st.mfu < 0.748


# ----- the terms a GPT layer on A100s measures (Korthikanti et al. 2022) -----------------------

# Korthikanti et al. 2022 (korthikanti2022reducing), Table 3: the 22B model, 48 layers, hidden
# 6144, 64 heads, TP 8 on 8 A100s, micro-batch 4, sequence 2048, vocabulary 51,200. Table 4, ms
# per transformer layer (forward + backward): no recompute 19.6, sequence parallelism 19.0,
# full recompute 27.2, selective 20.9, selective + sequence parallelism 20.3. Megatron-LM then
# ran attention unfused (a batched matmul, a fused scale-mask-softmax, dropout, a batched matmul).
GPT22 = Model(name="gpt 22b", n_layers=48, d_model=6144, d_ff=4 * 6144, n_heads=64,
              vocab_size=51200, tied_embeddings=True, gated_mlp=False, attention_bias=True,
              mlp_bias=True)
TABLE4_MS = [("none", False, 19.6), ("none", True, 19.0), ("full", False, 27.2),
             ("selective", False, 20.9), ("selective", True, 20.3)]


def _gpt22_layer_ms(recompute, sp):
    a100 = chips.get("A100-SXM-80GB")
    lay = Layout(dp=1, tp=8, recompute=recompute, zero_stage=0, micro_batch=4,
                 sequence_parallel=sp, fused_attention=False)
    st = step_time(GPT22, lay, Cluster(a100, 8), 4, 2048)
    # the LM head is not in a layer's time: 8,192 / 8 tokens x 6 x 51,200 x 6,144 FLOP at the
    # A100 table's 0.840 of 312 TFLOP/s (8,192 rows)
    head = 8192 / 8 * 6 * 51200 * 6144 / (312e12 * 0.840)
    return (st.compute - head + st.elementwise + st.tp) / 48 * 1e3


def test_a_gpt_layer_is_within_15_percent_below_korthikantis_measured_times():
    # The estimate is a bound (no launch gaps, no intermediates Korthikanti does not store), so
    # it must stay below each measured time, and within 15% of it on all five rows. Without the
    # elementwise term it was 28% short (14.2 of 19.6 ms with no recompute).
    for recompute, sp, measured in TABLE4_MS:
        est = _gpt22_layer_ms(recompute, sp)
        assert 0.85 * measured <= est <= measured, (recompute, sp, est, measured)


def test_elementwise_bytes_by_hand():
    # GPT22 at TP 8, S 2048, no SP, unfused, no recompute, per token per layer:
    # norms 10 x 6,144 = 61,440 B (whole on every chip); GeLU output 2 x 24,576 / 8 = 6,144 B;
    # scores 5 x 64 x 2,048 / 8 = 81,920 B; each moved 2 + 3 = 5 times: 747,520 B.
    from llmmath.layout import _elementwise_bytes
    lay = Layout(dp=1, tp=8, recompute="none", sequence_parallel=False, fused_attention=False)
    assert _elementwise_bytes(GPT22, lay, 2048) == pytest.approx(747_520)
    # sequence parallel: norms 61,440 / 8 = 7,680; (7,680 + 6,144 + 81,920) x 5 = 478,720
    sp = Layout(dp=1, tp=8, recompute="none", fused_attention=False)
    assert _elementwise_bytes(GPT22, sp, 2048) == pytest.approx(478_720)
    # fused attention never writes the scores: (7,680 + 6,144) x 5 = 69,120
    assert _elementwise_bytes(GPT22, Layout(dp=1, tp=8, recompute="none"), 2048) == \
        pytest.approx(69_120)
    # selective recomputation re-runs the scores' forward (2 more passes): 478,720 + 163,840
    sel = Layout(dp=1, tp=8, recompute="selective", fused_attention=False)
    assert _elementwise_bytes(GPT22, sel, 2048) == pytest.approx(642_560)
    # full recomputation re-runs all of it: 95,744 x 7 = 670,208
    full = Layout(dp=1, tp=8, recompute="full", fused_attention=False)
    assert _elementwise_bytes(GPT22, full, 2048) == pytest.approx(670_208)


def test_stage_layers_follow_the_layout():
    from llmmath.layout import _stage_layers
    llama = models.get("Llama-3.1-405B")
    # Llama 3 (llama3_herd, Sec. 3.3.2): one layer fewer on the first and last of 16 stages:
    # 7 + 14 x 8 + 7 = 126
    ranks = _stage_layers(llama, Layout(dp=1, tp=8, pp=16, first_stage_layers=7,
                                        last_stage_layers=7))
    assert ranks == [7] + [8] * 14 + [7]
    # the even split of 126 over 16: 126 = 16 x 7 + 14, the first 14 ranks take 8
    assert _stage_layers(llama, Layout(dp=1, pp=16)) == [8] * 14 + [7] * 2
    with pytest.raises(ValueError, match="first_stage_layers"):
        Layout(dp=8, first_stage_layers=3)
    with pytest.raises(ValueError, match="layers"):
        check_layout(TOY, Layout(dp=2, tp=2, pp=2, first_stage_layers=3, last_stage_layers=3), 8)


def test_the_lm_head_makes_the_last_rank_slowest():
    # TOY on two ranks of 2 layers: the head (C_HEAD) sits on the last; moving one layer off the
    # last rank (3 + 1) makes the first the slowest by 3 - 2 = 1 layer instead
    even = step_time(TOY, LAYOUT, CLUSTER, 8, 1024, **ROUND)
    assert even.stages == pytest.approx(4 * C_HEAD / 2, rel=1e-9)
    lay = Layout(dp=2, tp=2, pp=2, first_stage_layers=3, last_stage_layers=1)
    st = step_time(TOY, lay, CLUSTER, 8, 1024, **ROUND)
    layer = C_LAYER + E_LAYER + TP_LAYER
    # slowest 3 layers; mean (4 layers + head) / 2
    assert st.stages == pytest.approx(4 * (3 * layer - (4 * layer + C_HEAD) / 2), rel=1e-9)


def test_zero3_gathers_and_reduce_scatters_every_micro_batch():
    # FULL_SHARD (pytorch_fsdp_api): per micro-batch two all-gathers of the weight shard and one
    # reduce-scatter of its gradients, each half an all-reduce (DP_TOTAL = 4.994304e-4 s), so
    # 1.5 DP_TOTAL per micro-batch; m = 4 micro-batches: 6 DP_TOTAL = 2.9965824e-3 s
    lay = Layout(dp=2, tp=2, pp=2, zero_stage=3, dp_overlap=False)
    st = step_time(TOY, lay, CLUSTER, 8, 1024, **ROUND)
    assert st.dp_total == pytest.approx(6 * DP_TOTAL, rel=1e-9)
    assert st.dp == pytest.approx(2.9965824e-3, rel=1e-9)
    # without resharding after the forward, one all-gather: 1.0 DP_TOTAL per micro-batch
    kept = step_time(TOY, Layout(dp=2, tp=2, pp=2, zero_stage=3, dp_overlap=False,
                                 reshard_after_forward=False), CLUSTER, 8, 1024, **ROUND)
    assert kept.dp_total == pytest.approx(4 * DP_TOTAL, rel=1e-9)
    # overlapped (FSDP's prefetch): each micro-batch hides behind its own compute, COMPUTE / 4 =
    # 3.2404668416e-4 s, leaving 7.491456e-4 - 3.2404668416e-4 = 4.2509891584e-4 s, x 4
    on = step_time(TOY, Layout(dp=2, tp=2, pp=2, zero_stage=3), CLUSTER, 8, 1024, **ROUND)
    assert on.dp == pytest.approx(4 * 4.2509891584e-4, rel=1e-9)


def test_zero3_without_reshard_keeps_the_stage_weights():
    # ZeRO-3: 16 B / dp 2 = 8 B per parameter of the chip's 24,971,520: 199,772,160 B; kept
    # gathered from forward to backward: + 2 B x 24,971,520 = 49,943,040 B
    sharded = memory_per_chip(TOY, Layout(dp=2, tp=2, pp=2, zero_stage=3), 1024, 8)
    kept = memory_per_chip(TOY, Layout(dp=2, tp=2, pp=2, zero_stage=3,
                                       reshard_after_forward=False), 1024, 8)
    assert sharded.states == pytest.approx(199_772_160) and sharded.weights == 0
    assert kept.states == pytest.approx(199_772_160 + 49_943_040)


def test_dualpipe_holds_two_stages_per_chip():
    # two stages per chip (DeepSeek-V3 Table 2, "2x" parameters): 2 x 24,971,520 = 49,943,040
    # parameters, their holders a data-parallel group of 2 x dp = 4; ZeRO-1: (2 + 2) B each plus
    # 12 B / 4: 4 x 49,943,040 + 3 x 49,943,040 = 349,601,280 B
    lay = Layout(dp=2, tp=2, pp=2, schedule="dualpipe")
    mem = memory_per_chip(TOY, lay, 1024, 8)
    assert mem.states == pytest.approx(349_601_280)
    # activations of pp + 1 = 3 micro-batches (Table 2): 3 x 2 x 1,024 x 17,408
    assert mem.in_flight == 3 and mem.activations == pytest.approx(106_954_752)
    with pytest.raises(ValueError, match="even pp"):
        check_layout(TOY, Layout(dp=2, tp=1, pp=3, schedule="dualpipe"), 6)
    with pytest.raises(ValueError, match="global_batch"):      # 6 / 2 = 3 micro-batches
        check_layout(TOY, lay, 8, global_batch=6)


def test_a100_tensor_parallel_links_at_nccl_a100_rate():
    # nccl_a100_busbw: ~230 of 300 GB/s on an A100's NVLink, not H100's 370 of 450
    a100 = Cluster(chips.get("A100-SXM-80GB"), 8)
    lay = Layout(dp=1, tp=8)
    default = step_time(TOY, lay, a100, 8, 1024)
    assert default.tp == pytest.approx(step_time(TOY, lay, a100, 8, 1024,
                                                 link_efficiency=230 / 300).tp, rel=1e-12)
    assert default.tp != pytest.approx(step_time(TOY, lay, a100, 8, 1024,
                                                 link_efficiency=370 / 450).tp, rel=1e-3)


def test_dp_overlap_off_exposes_the_whole_sync():
    st = step_time(TOY, Layout(dp=2, tp=2, pp=2, dp_overlap=False), CLUSTER, 8, 1024, **ROUND)
    assert st.dp == pytest.approx(DP_TOTAL, rel=1e-9)
    assert st.time == pytest.approx(TIME - DP + DP_TOTAL, rel=1e-9)

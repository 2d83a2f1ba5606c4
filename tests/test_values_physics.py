"""Value tests for the physics modules' public functions (issue 20).

Each expected number is worked by hand in the comment above it, from round toy figures or from
published model sizes, never from the library's output:
- Llama-3-8B (Meta model card): 32 layers, D 4096, 32 query / 8 KV heads of 128, SwiGLU 14336,
  vocabulary 128,256, untied. Embedding = head = 128,256 x 4096 = 525,336,576; attention
  32 x (2 x 4096^2 + 2 x 4096 x 1024) = 1,342,177,280; MLP 32 x 3 x 4096 x 14336
  = 5,637,144,576; norm scales 65 x 4096 = 266,240. Total 8,030,261,248 (the card's 8.03e9);
  matmul parameters (the head, not the gathered embedding) 7,504,658,432. KV in bf16:
  32 x 2 x 8 x 128 x 2 = 131,072 B per token.
- the toy chip (``toy_chip`` in tests/conftest.py): 1 PFLOP/s in bf16, 1 TB/s, 100 GB (so the
  ridge is 1000 FLOP/B).
"""

import numpy as np
import pytest

from llmmath import chips, models
from llmmath.balance import (
    critical_batch,
    critical_context,
    decode_balance,
    implied_kv_bytes_per_token,
)
from llmmath.capacity import (
    drain_time,
    fits_in_memory,
    max_batch,
    max_context,
    memory_held,
    min_chips,
)
from llmmath.chips import Chip
from llmmath.collectives import bandwidth_factor, collective_time, latency_bandwidth_crossover
from llmmath.cost import price_per_chip_second
from llmmath.intensity import (
    arithmetic_intensity,
    attainable_flops,
    elementwise_intensity,
    matmul_ridge_batch,
)
from llmmath.models import kaplan_params
from llmmath.moe import domain_memory, domain_of
from llmmath.parallel import reduce_scatter_time, tensor_parallel_layer_comm_time
from llmmath.prices import PriceSheet, kv_bytes_from_price_ratio
from llmmath.speculative import (
    speculative_critical_batch,
    speculative_step,
    speculative_tokens_per_step,
)
from llmmath.step import decode_step, serial_step
from llmmath.training import (
    compute_optimal_model,
    compute_optimal_tokens,
    dp_compute_time,
    inference_mfu,
    training_memory,
)

# checks physics: make mutate and make unit-baseline run it (tests/conftest.py)
pytestmark = pytest.mark.physics

L8 = models.get("Llama-3-8B")
L70 = models.get("Llama-3-70B")
H100 = chips.get("H100-SXM")
N_TOT, N_MM, KV = 8_030_261_248, 7_504_658_432, 131_072


def test_serial_step_adds_compute_and_memory(toy_chip):
    # Batch 128 at context 0 on the toy chip: compute 128 x 2 x 7,504,658,432 / 1e15
    # = 1.921193 ms; memory (7,504,658,432 + 266,240 norms + 128 x 4096 embedding rows) x 2 B
    # / 1e12 = 15.010898 ms. The bound is the larger, 15.010898 ms; with no overlap 16.932091 ms.
    s = decode_step(L8, toy_chip, 128, 0)
    assert s.time == pytest.approx(15.010898e-3, rel=1e-6)
    assert serial_step(s).time == pytest.approx(16.932091e-3, rel=1e-6)
    assert serial_step(s).tokens == 128


def test_price_per_chip_second(toy_chip):
    # $7.20 per chip-hour is $0.002 per chip-second; a chip with no price and no price given is
    # an error naming the argument.
    assert price_per_chip_second(toy_chip, 7.2) == pytest.approx(0.002, rel=1e-12)
    assert price_per_chip_second(H100) == pytest.approx(H100.price_per_hour / 3600, rel=1e-12)
    with pytest.raises(ValueError, match="price_per_chip_hour"):
        price_per_chip_second(toy_chip)


def test_tensor_parallel_layer_comm_time():
    # Llama-3-70B (D 8192, sequential blocks: 2 all-reduces a layer), 64 tokens in bf16 on 8
    # chips behind a 450 GB/s switch: each all-reduce moves 64 x 8192 x 2 = 1,048,576 B per chip,
    # 2 x 7/8 x 1,048,576 / 450e9 = 4.0778 us; two of them 8.1556 us. With 1 us of hop
    # latency a switch all-reduce pays 2 steps: + 2 x 2 x 1 us = 12.1556 us.
    t = tensor_parallel_layer_comm_time(L70, 64, 8, 450e9)
    assert t == pytest.approx(8.1556e-6, rel=1e-4)
    t = tensor_parallel_layer_comm_time(L70, 64, 8, 450e9, hop_latency=1e-6)
    assert t == pytest.approx(12.1556e-6, rel=1e-4)
    # PaLM's parallel block does one all-reduce a layer (18432 wide, 64 tokens, 8 chips):
    # 64 x 18432 x 2 = 2,359,296 B, 2 x 7/8 x 2,359,296 / 450e9 = 9.1750 us
    t = tensor_parallel_layer_comm_time(models.get("PaLM-540B"), 64, 8, 450e9)
    assert t == pytest.approx(9.1750e-6, rel=1e-4)


def test_reduce_scatter_time():
    # 1 GB per chip reduced and scattered over 8 chips at 100 GB/s: 1e9 / 100e9 x 7/8 = 8.75 ms;
    # a switch takes one latency step, a ring of 8 seven.
    assert reduce_scatter_time(1e9, 8, 100e9) == pytest.approx(8.75e-3, rel=1e-12)
    assert reduce_scatter_time(1e9, 8, 100e9, hop_latency=1e-6) == pytest.approx(
        8.75e-3 + 1e-6, rel=1e-12)
    assert reduce_scatter_time(1e9, 8, 100e9, hop_latency=1e-6, topology="ring") == (
        pytest.approx(8.75e-3 + 7e-6, rel=1e-12))
    assert reduce_scatter_time(1e9, 1, 100e9, hop_latency=1e-6) == 0


def test_bandwidth_factor_and_crossover():
    # (n-1)/n = 7/8 for gather and scatter, twice for all-reduce. An all-to-all on a ring of 8
    # sends each byte floor(8^2/4)/8 = 2 links on average; on a 4 x 4 torus 2 x floor(16/4)/4 = 2.
    assert bandwidth_factor("all-gather", 8) == pytest.approx(0.875)
    assert bandwidth_factor("reduce-scatter", 8) == pytest.approx(0.875)
    assert bandwidth_factor("all-reduce", 8) == pytest.approx(1.75)
    assert bandwidth_factor("all-to-all", 8, topology="ring") == pytest.approx(2.0)
    assert bandwidth_factor("all-to-all", 16, topology="torus", dims=(4, 4)) == pytest.approx(2.0)
    # Crossover D* = steps x alpha x bw / f: all-gather on a ring of 8, alpha 1 us, 100 GB/s:
    # 7 x 1e-6 x 100e9 / 0.875 = 800,000 B; there both terms are 7 us.
    d = latency_bandwidth_crossover("all-gather", 8, 100e9, 1e-6, topology="ring")
    assert d == pytest.approx(800_000, rel=1e-12)
    assert collective_time("all-gather", 800_000, 8, 100e9, hop_latency=1e-6,
                           topology="ring") == pytest.approx(14e-6, rel=1e-12)


def test_memory_held():
    # bf16 weights 2 x 8,030,261,248 = 16,060,522,496 B plus 4 sequences of 8192 tokens at
    # 131,072 B: 4,294,967,296 B; int8 KV halves the second term.
    assert memory_held(L8, 4, 8192) == 20_355_489_792
    assert memory_held(L8, 4, 8192, kv_bytes=1) == 16_060_522_496 + 2_147_483_648
    assert memory_held(L8, 4, 8192, weight_bytes=1) == 8_030_261_248 + 4_294_967_296


def test_decode_balance(toy_chip):
    # One sequence at 8192 tokens on the toy chip: KV read 8192 x 131,072 / 1e12 = 1.07374 ms;
    # its matmuls 2 x 7,504,658,432 / 1e15 = 15.0093 us, its attention 4 x 4096 x 8192 x 32
    # / 1e15 = 4.2950 us. Ratio 71.538 without attention FLOPs, 55.620 with.
    assert decode_balance(L8, toy_chip, 8192, attention_flops=False) == pytest.approx(71.538,
                                                                                 rel=1e-4)
    assert decode_balance(L8, toy_chip, 8192) == pytest.approx(55.620, rel=1e-4)
    # int8 KV halves the read (attention still at the bf16 peak here): 35.769
    assert decode_balance(L8, toy_chip, 8192, kv_bytes=1, attention_flops=False) == pytest.approx(
        35.769, rel=1e-4)


def test_elementwise_intensity():
    # z = x + y in bf16: 1 FLOP per (2 + 1) x 2 B = 1/6; 2 FLOP over 3 inputs and 1 output
    # of 4 B: 2/16.
    assert elementwise_intensity() == pytest.approx(1 / 6)
    assert elementwise_intensity(2, 3, 1, 4) == pytest.approx(0.125)
    # a write alone (inputs 0) or a read alone (outputs 0) of 2 B: 1 FLOP per 2 B
    assert elementwise_intensity(1, 0, 1) == pytest.approx(0.5)
    assert elementwise_intensity(1, 1, 0) == pytest.approx(0.5)
    assert np.allclose(elementwise_intensity(np.array([1.0, 3.0])), [1 / 6, 0.5])
    with pytest.raises(ValueError, match="inputs, outputs"):
        elementwise_intensity(1, 0, 0)


def test_kaplan_params():
    # 12 L D^2: 12 x 32 x 4096^2 = 6,442,450,944 (Kaplan et al. 2020, Sec. 2.1)
    assert kaplan_params(L8) == 6_442_450_944


def test_training_memory_and_chinchilla():
    # Mixed-precision Adam holds 2 + 2 + 4 + 4 + 4 = 16 B per parameter (ZeRO, Rajbhandari et
    # al. 2020): 16 x 8,030,261,248 = 128,484,179,968 B. SGD with momentum: 2 + 2 + 4 + 4 = 12.
    assert training_memory(L8) == pytest.approx(128_484_179_968, rel=1e-12)
    assert training_memory(L8, optimizer="sgd-momentum") == pytest.approx(12 * N_TOT, rel=1e-12)
    # Chinchilla (Hoffmann et al. 2022): 20 tokens a parameter, 160,605,224,960 tokens for 8B.
    assert compute_optimal_tokens(L8) == pytest.approx(160_605_224_960, rel=1e-12)
    # 5.76e23 FLOP (Chinchilla's budget): N = sqrt(5.76e23 / 120) = 69.28e9, D = 1.3856e12,
    # the paper's 70B parameters and 1.4T tokens.
    n, d = compute_optimal_model(5.76e23)
    assert n == pytest.approx(69.282e9, rel=1e-4)
    assert d == pytest.approx(1.38564e12, rel=1e-4)


def test_dp_compute_time_and_inference_mfu():
    # 6 x 8,030,261,248 x 1e6 tokens / (989.4e12 x 0.5) = 97.401 s on one H100 at 50% MFU
    assert dp_compute_time(L8, H100, 1e6, mfu=0.5) == pytest.approx(97.401, rel=1e-4)
    # 1000 tokens a second on one H100: 2 x 8,030,261,248 x 1000 / 989.4e12 = 1.6232%
    assert inference_mfu(L8, 1000, 1.0, H100) == pytest.approx(0.016232, rel=1e-4)
    assert inference_mfu(L8, 8000, 1.0, H100, n_chips=8) == pytest.approx(0.016232, rel=1e-4)


def test_scale_up_domain_memory():
    # An HGX H100 board: 8 chips of 80 GB = 640 GB (NVIDIA datasheet); 72 of them 5.76 TB.
    assert domain_memory(H100) == pytest.approx(8 * 80e9, rel=1e-12)
    assert domain_memory(H100, 72) == pytest.approx(5.76e12, rel=1e-12)
    d = domain_of(H100)
    assert (d.scale_up_domain, d.hbm_capacity) == (8, 80e9)
    assert domain_memory(d) == pytest.approx(640e9, rel=1e-12)


def test_memory_held_broadcasts():
    # two batches at once: 16,060,522,496 + B x 8192 x 131,072 for B = 1 and 2
    got = memory_held(L8, np.array([1, 2]), 8192)
    assert np.allclose(got, [16_060_522_496 + 1_073_741_824, 16_060_522_496 + 2_147_483_648],
                       rtol=1e-12)


# ----- intensity: every byte width on its own, the ridge's edge cases ------------------------

TOY8 = Chip(name="toy8", flops={"bf16": 1e15, "fp8": 2e15}, hbm_bandwidth=1e12,
            hbm_capacity=100e9)


def test_arithmetic_intensity_each_byte_width():
    # (100 x 200) @ (200 x 300): 2 x 100 x 200 x 300 = 12e6 FLOP over 100 x 200 b_in
    # + 200 x 300 b_w + 100 x 300 b_out bytes
    assert arithmetic_intensity(100, 200, 300, bytes_per_element=1, weight_bytes=2,
                                output_bytes=4) == pytest.approx(12e6 / 260_000)  # 46.15
    assert arithmetic_intensity(100, 200, 300, bytes_per_element=1,
                                weight_bytes=2) == pytest.approx(12e6 / 170_000)  # 70.59
    assert arithmetic_intensity(100, 200, 300, bytes_per_element=1,
                                output_bytes=4) == pytest.approx(12e6 / 200_000)  # 60


def test_matmul_ridge_batch_each_byte_width_and_format():
    # m = R k n b_w / (2 k n - R (k b_in + n b_out)) with R = 1000 on the toy chip:
    # k 1e4, n 2e4, b_in 1, b_w 2, b_out 4: 1000 x 2e8 x 2 / (4e8 - 9e7) = 1290.32
    assert matmul_ridge_batch(TOY8, 10_000, 20_000, bytes_per_element=1, weight_bytes=2,
                              output_bytes=4) == pytest.approx(1290.3226, rel=1e-6)
    # k = n = 1e4, b_in = b_out = 2, b_w = 1: 1000 x 1e8 / (2e8 - 4e7) = 625
    assert matmul_ridge_batch(TOY8, 10_000, 10_000, weight_bytes=1) == pytest.approx(625)
    # b_out = 1 alone: 1000 x 1e8 x 2 / (2e8 - 1000 x 3e4) = 1176.47
    assert matmul_ridge_batch(TOY8, 10_000, 10_000, output_bytes=1) == pytest.approx(
        1176.4706, rel=1e-6)
    # fp8 doubles the ridge to 2000: 2000 x 1e8 x 2 / (2e8 - 2000 x 4e4) = 3333.33
    assert matmul_ridge_batch(TOY8, 10_000, 10_000, dtype="fp8") == pytest.approx(
        3333.3333, rel=1e-6)


def test_matmul_ridge_batch_at_and_past_the_edge():
    # 1-byte values, R = 1000: k = n = 1000 gives 2 k n = R (k + n) exactly: the activations
    # alone carry the ridge's bytes, no batch reaches it (inf); k = 1e4, n = 1000:
    # 1000 x 1e7 / (2e7 - 1000 x 11,000) = 1111.11.
    got = matmul_ridge_batch(TOY8, np.array([1000.0, 10_000.0]), 1000, bytes_per_element=1)
    assert np.isinf(got[0]) and got[1] == pytest.approx(1111.1111, rel=1e-6)
    assert np.isinf(matmul_ridge_batch(TOY8, 500, 500, bytes_per_element=1))
    # Just past the edge, k = n = 1000.00025: m = R k / (2 (k - R)) = 1000 x 1000.00025
    # / 0.0005 = 2.0000005e9 (a denominator of 0.5, which must not be mistaken for none)
    assert matmul_ridge_batch(TOY8, 1000.00025, 1000.00025, bytes_per_element=1) == (
        pytest.approx(2.0000005e9, rel=1e-6))


def test_attainable_flops_in_fp8():
    # min(C, I W): fp8 peak 2e15; 500 FLOP/B x 1e12 B/s = 5e14 below it, 5000 above
    assert attainable_flops(TOY8, 500, dtype="fp8") == pytest.approx(5e14)
    assert attainable_flops(TOY8, 5000, dtype="fp8") == pytest.approx(2e15)
    assert attainable_flops(TOY8, 5000) == pytest.approx(1e15)


# ----- prices ----------------------------------------------------------------------------------

def test_kv_bytes_from_price_ratio_both_overlaps():
    # 100e9 active parameters, a step at 200k tokens, R = 600 FLOP/B: the corner is at
    # b_kv = 2 x 100e9 / (600 x 200e3) = 1666.67 B/token. A 1.5x price step: 1.5 x 1666.67
    # = 2500 under whole-step overlap, (1.5 - 1) x 1666.67 = 833.33 under per-op.
    assert kv_bytes_from_price_ratio(100e9, 200e3, 600, 1.5) == pytest.approx(2500, rel=1e-9)
    assert kv_bytes_from_price_ratio(100e9, 200e3, 600, 1.5, overlap="per-op") == (
        pytest.approx(833.3333, rel=1e-6))
    got = kv_bytes_from_price_ratio(100e9, 200e3, 600, np.array([1.0, 2.0]))
    assert np.allclose(got, [1666.6667, 3333.3333], rtol=1e-6)
    got = kv_bytes_from_price_ratio(100e9, 200e3, 600, np.array([1.5, 3.0]), overlap="per-op")
    assert np.allclose(got, [833.3333, 3333.3333], rtol=1e-6)
    with pytest.raises(ValueError, match="price_ratio: got 0.9"):
        kv_bytes_from_price_ratio(100e9, 200e3, 600, 0.9)
    with pytest.raises(ValueError, match="price_ratio: got 1 under overlap='per-op'"):
        kv_bytes_from_price_ratio(100e9, 200e3, 600, np.array([1.0, 2.0]), overlap="per-op")
    with pytest.raises(ValueError, match="overlap"):
        kv_bytes_from_price_ratio(100e9, 200e3, 600, 1.5, overlap="sum")


def test_price_sheet_ratios():
    # $2 in, $12 out, $0.20 cached: output 6x input, cached a tenth
    sheet = PriceSheet("m", input=2.0, output=12.0, cached_input=0.2)
    assert sheet.output_to_input == pytest.approx(6.0)
    assert sheet.cached_to_input == pytest.approx(0.1)


# ----- speculative decoding -------------------------------------------------------------------

def test_speculative_tokens_per_step():
    # (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, eq. 1): k = 3, a = 0.8 gives
    # (1 - 0.4096) / 0.2 = 2.952; a = 0 gives 1, a = 1 gives k + 1, k = 0 gives 1.
    assert speculative_tokens_per_step(3, 0.8) == pytest.approx(2.952, rel=1e-12)
    assert np.allclose(speculative_tokens_per_step(2, np.array([0.0, 0.5, 1.0])),
                       [1.0, 1.75, 3.0], rtol=1e-12)
    assert speculative_tokens_per_step(0, 0.7) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="acceptance: got 1.1"):
        speculative_tokens_per_step(3, 1.1)


def test_speculative_step_by_hand(toy_chip):
    # Llama-3-8B, batch 4, 3 drafts, context 1000, toy chip: 16 scored tokens. Compute
    # 16 x (2 x 7,504,658,432 + 4 x 4096 x 1000 x 32) / 1e15 = 0.248538 ms; memory: weights
    # read once, (7,504,658,432 + 266,240 + 16 x 4096) x 2 B, plus 4 caches of 1000 x 131,072 B:
    # 15,534,268,416 B / 1e12 = 15.534268 ms. Tokens: 4 x 2.952 = 11.808.
    s = speculative_step(L8, toy_chip, 4, 1000, 3, 0.8)
    # exactly (240,149,069,824 + 8,388,608,000) FLOP, nothing for an indexer this model lacks
    assert s.compute_time == pytest.approx(248.537677824e-6, rel=1e-13, abs=0)
    assert s.memory_time == pytest.approx(15.534268e-3, rel=1e-6)
    assert s.time == pytest.approx(15.534268e-3, rel=1e-6)
    assert s.tokens == pytest.approx(11.808, rel=1e-12)
    assert s.bound == "memory"


def test_speculative_critical_batch_by_hand(toy_chip):
    # Context 0, 3 drafts: B x 4 x 2 x 7,504,658,432 / 1e15 = ((7,504,924,672 + 4B x 4096)
    # x 2) / 1e12, so B = 15.009849e-3 / (60.037267e-6 - 32.768e-9) = 250.145.
    assert speculative_critical_batch(L8, toy_chip, 3) == pytest.approx(250.145, rel=1e-5)
    # Context 100 adds attention 4 x 4096 x 100 x 32 FLOP and 100 x 131,072 B a scored token
    # and sequence: B = 15.009849e-3 / (60.246982e-6 - 13.139968e-6) = 318.633.
    assert speculative_critical_batch(L8, toy_chip, 3, context=100) == pytest.approx(318.633,
                                                                                rel=1e-5)
    # At 1000 tokens the KV read (131 us a sequence) outgrows the compute (62 us): no batch
    with pytest.raises(ValueError, match="memory-bound at every batch"):
        speculative_critical_batch(L8, toy_chip, 3, context=1000)


# ----- capacity ---------------------------------------------------------------------------------

def test_fits_max_batch_max_context_min_chips_by_hand(toy_chip, small_chip):
    # Llama-3-8B on the 100 GB toy chip: bf16 weights 16,060,522,496 B; one 8192-token
    # sequence's KV 8192 x 131,072 = 1,073,741,824 B. 78 sequences: 99,812,384,768 B (fits),
    # 79: 100,886,126,592 B (does not). At 90% of the chip, 68 fit (89.07 GB), 69 do not
    # (90.15 GB); on 2 chips 171 fit (199.67 GB), 172 do not (200.74 GB).
    assert fits_in_memory(L8, toy_chip, 78, 8192) and not fits_in_memory(L8, toy_chip, 79, 8192)
    assert fits_in_memory(L8, toy_chip, 68, 8192, memory_fraction=0.9)
    assert not fits_in_memory(L8, toy_chip, 69, 8192, memory_fraction=0.9)
    assert fits_in_memory(L8, toy_chip, 171, 8192, n_chips=2)
    assert not fits_in_memory(L8, toy_chip, 172, 8192, n_chips=2)
    assert list(fits_in_memory(L8, toy_chip, np.array([78, 79]), 8192)) == [True, False]
    # max_batch, 2 chips at 90%, int8 weights: (180e9 - 8,030,261,248) / 1,073,741,824
    # = 160.16 -> 160
    assert max_batch(L8, toy_chip, 8192, n_chips=2, weight_bytes=1, memory_fraction=0.9) == 160
    # weights alone over a 10 GB chip: 16.06 GB need at least 2
    with pytest.raises(ValueError, match="at least 2 x small"):
        max_batch(L8, small_chip, 8192)
    # max_context, batch 4: 83,939,477,504 / (4 x 131,072) = 160,101.8 -> 160,101 tokens;
    # with 30% of HBM for KV (Pope et al. 2022's Table 1 rule) 30e9 / 524,288 = 57,220; two
    # replicas of each KV byte halve it: 28,610.
    assert max_context(L8, toy_chip, 4) == 160_101
    assert max_context(L8, toy_chip, 4, kv_fraction=0.3) == 57_220
    assert max_context(L8, toy_chip, 4, kv_fraction=0.3, kv_replicas=2) == 28_610
    # min_chips: (16.06e9 + 100 x 1.0737e9) / 100e9 = 1.234 -> 2; at 50%, 2.469 -> 3; the
    # weights alone -> 1
    assert min_chips(L8, toy_chip, 100, 8192) == 2
    assert min_chips(L8, toy_chip, 100, 8192, memory_fraction=0.5) == 3
    assert min_chips(L8, toy_chip) == 1
    # drain time: 100e9 B / 1e12 B/s = 0.1 s
    assert drain_time(toy_chip) == pytest.approx(0.1)


# ----- balance points -----------------------------------------------------------------------

def test_critical_batch_by_hand(toy_chip):
    # Llama-3-8B on the toy chip, context 0: B x 2 x 7,504,658,432 / 1e15
    # = (7,504,924,672 + 4096 B) x 2 / 1e12 (weights, norms and B embedding rows), so
    # B* = 15.009849e-3 / (15.009317e-6 - 8.192e-9) = 1000.58; int8 weights halve the right
    # side: 500.15.
    assert critical_batch(L8, toy_chip) == pytest.approx(1000.58, rel=1e-5)
    assert critical_batch(L8, toy_chip, weight_bytes=1) == pytest.approx(500.154, rel=1e-5)
    # At 50 tokens each sequence adds 4 x 4096 x 50 x 32 FLOP and 50 x 131,072 B:
    # B* = 15.009849e-3 / (15.035531e-6 - 6.561792e-6) = 1771.34
    assert critical_batch(L8, toy_chip, context=50) == pytest.approx(1771.34, rel=1e-5)
    # At 1000 tokens the KV read (131 us a sequence) outgrows the compute (15.5 us): none
    with pytest.raises(ValueError):
        critical_batch(L8, toy_chip, context=1000)


def test_critical_context_and_its_inverse_by_hand(toy_chip):
    # S* = 2 N_mm W / (C b_kv) = 2 x 7,504,658,432 x 1e12 / (1e15 x 131,072) = 114.512 tokens;
    # counting attention's 4 x 4096 x 32 FLOP per cached token: 15.009317e-6
    # / (131.072e-9 - 0.524288e-9) = 114.972; int8 KV doubles the first: 229.024.
    assert critical_context(L8, toy_chip, attention_flops=False) == pytest.approx(114.512, rel=1e-6)
    assert critical_context(L8, toy_chip) == pytest.approx(114.9719, rel=1e-6)
    assert critical_context(L8, toy_chip, kv_bytes=1, attention_flops=False) == pytest.approx(
        229.024, rel=1e-6)
    with pytest.raises(ValueError, match="overlap"):
        critical_context(L8, toy_chip, overlap="per-op")
    # read backwards, 114.512 tokens on the toy chip means 131,072 B a token
    assert implied_kv_bytes_per_token(N_MM, toy_chip, 114.512) == pytest.approx(131_072, rel=1e-6)


# ----- errors start with the argument's name; the edges the mutation run found --------------

# every call is given the toy chip (the fixture), whether it uses it or not
@pytest.mark.parametrize("call, name", [
    (lambda chip: arithmetic_intensity(0, 1, 1), "m"),
    (lambda chip: arithmetic_intensity(1, 0, 1), "k"),
    (lambda chip: arithmetic_intensity(1, 1, 0), "n"),
    (lambda chip: arithmetic_intensity(1, 1, 1, bytes_per_element=0), "bytes_per_element"),
    (lambda chip: arithmetic_intensity(1, 1, 1, weight_bytes=0), "weight_bytes"),
    (lambda chip: arithmetic_intensity(1, 1, 1, output_bytes=0), "output_bytes"),
    (lambda chip: attainable_flops(chip, 0), "intensity"),
    (lambda chip: elementwise_intensity(0), "flops_per_element"),
    (lambda chip: elementwise_intensity(1, -1), "inputs"),
    (lambda chip: elementwise_intensity(1, 1, -1), "outputs"),
    (lambda chip: elementwise_intensity(1, 1, 1, 0), "bytes_per_element"),
    (lambda chip: elementwise_intensity(1, 0, 0), "inputs, outputs"),
    (lambda chip: matmul_ridge_batch(chip, 0, 1), "k"),
    (lambda chip: matmul_ridge_batch(chip, 1, 0), "n"),
    (lambda chip: matmul_ridge_batch(chip, 1, 1, bytes_per_element=0), "bytes_per_element"),
    (lambda chip: matmul_ridge_batch(chip, 1, 1, weight_bytes=0), "weight_bytes"),
    (lambda chip: matmul_ridge_batch(chip, 1, 1, output_bytes=0), "output_bytes"),
    (lambda chip: kv_bytes_from_price_ratio(0, 1, 1, 1.5), "active_params"),
    (lambda chip: kv_bytes_from_price_ratio(1, 0, 1, 1.5), "context"),
    (lambda chip: kv_bytes_from_price_ratio(1, 1, 0, 1.5), "ops_per_byte"),
    (lambda chip: kv_bytes_from_price_ratio(1, 1, 1, 0), "price_ratio"),
    (lambda chip: kv_bytes_from_price_ratio(1, 1, 1, 1.5, overlap="x"), "overlap"),
    (lambda chip: speculative_tokens_per_step(-1, 0.5), "draft_tokens"),
    (lambda chip: speculative_tokens_per_step(1, -0.5), "acceptance"),
    (lambda chip: speculative_step(L8, chip, 0, 10, 1), "batch"),
    (lambda chip: speculative_step(L8, chip, 1, -1, 1), "context"),
    (lambda chip: speculative_step(L8, chip, 1, 10, -1), "draft_tokens"),
    (lambda chip: speculative_critical_batch(L8, chip, -1), "draft_tokens"),
    (lambda chip: speculative_critical_batch(L8, chip, 1, context=-1), "context"),
    (lambda chip: speculative_critical_batch(L8, chip, 1, weight_bytes=0), "weight_bytes"),
    (lambda chip: speculative_critical_batch(L8, chip, 1, kv_bytes=0), "kv_bytes"),
])
def test_errors_start_with_the_arguments_name(call, name, toy_chip):
    with pytest.raises(ValueError) as e:
        call(toy_chip)
    assert str(e.value).startswith(f"{name}: "), str(e.value)


def test_error_messages_in_full():
    with pytest.raises(ValueError, match=r"^inputs, outputs: at least one operand must be read "
                                         r"or written$"):
        elementwise_intensity(1, 0, 0)
    with pytest.raises(ValueError, match=r"a price step is >= 1 \(the long-context price over "
                                         r"the short-context one\)$"):
        kv_bytes_from_price_ratio(1, 1, 1, 0.5)
    with pytest.raises(ValueError, match=r"without a corner a flat price implies no KV bytes at "
                                         r"all \(give a ratio > 1\)$"):
        kv_bytes_from_price_ratio(1, 1, 1, 1.0, overlap="per-op")


def test_intensity_and_price_edges():
    # half-byte values: 1 FLOP over (2 + 1) x 0.5 B = 2/3 FLOP/B; a 0.5 B write alone, 2
    assert elementwise_intensity(1, 2, 1, 0.5) == pytest.approx(2 / 3)
    assert elementwise_intensity(1, 0, 1, 0.5) == pytest.approx(2.0)
    # a 2x step under per-op: (2 - 1) x 1666.67 B
    assert kv_bytes_from_price_ratio(100e9, 200e3, 600, 2.0, overlap="per-op") == (
        pytest.approx(1666.6667, rel=1e-6))


def test_speculative_edges_by_hand(toy_chip):
    # whole draft counts only, zero allowed (then it is a decode step: 1 token a sequence)
    for bad in (1.5, np.array([1, 2.5])):
        with pytest.raises(ValueError, match="^draft_tokens: "):
            speculative_tokens_per_step(bad, 0.5)
        with pytest.raises(ValueError, match="^draft_tokens: "):
            speculative_step(L8, toy_chip, 4, 100, bad)
    with pytest.raises(ValueError, match="^draft_tokens: "):
        speculative_critical_batch(L8, toy_chip, 1.5)
    with pytest.raises(TypeError, match="^kv_bytes: "):
        speculative_critical_batch(L8, toy_chip, 1, kv_bytes=np.array([1.0, 2.0]))
    assert speculative_tokens_per_step(0, 0.0) == 1.0
    # k = 0: critical_batch's 1000.58 (the decode step); draft_tokens 0 is decode_step, DeepSeek
    # V3.2's indexer included
    assert speculative_critical_batch(L8, toy_chip, 0) == pytest.approx(1000.58, rel=1e-5)
    v32 = models.get("DeepSeek-V3.2")
    a, b = speculative_step(v32, H100, 8, 50_000, 0), decode_step(v32, H100, 8, 50_000)
    for f in ("compute_time", "memory_time", "time", "tokens"):
        assert getattr(a, f) == pytest.approx(getattr(b, f), rel=1e-12), f
    a, b = speculative_step(v32, H100, 8, 50_000, 2), decode_step(v32, H100, 24, 50_000)
    assert a.compute_time == pytest.approx(b.compute_time, rel=1e-12)  # 3 scored per sequence
    # acceptance defaults to 1: every draft accepted, k + 1 tokens a sequence
    s = speculative_step(L8, toy_chip, 4, 1000, 3)
    assert s.tokens == pytest.approx(16.0)
    assert (s.kind, s.overlap, s.model.name) == ("decode", "step", "Llama-3-8B")
    assert speculative_step(L8, toy_chip, 4, 1000, 3, overlap="per-op").overlap == "per-op"
    # no attention FLOPs: exactly 16 x 2 x 7,504,658,432 FLOP = 240.1490698e9 at 1e15 FLOP/s
    s = speculative_step(L8, toy_chip, 4, 1000, 3, attention_flops=False)
    assert s.compute_time == pytest.approx(240.149069824e-6, rel=1e-13, abs=0)
    assert s.attention_time == 0
    # ... and the critical batch without them, at 100 tokens:
    # 15.009849e-3 / (60.037267e-6 - (32.768e-9 + 13.1072e-6)) = 320.058
    assert speculative_critical_batch(L8, toy_chip, 3, context=100, attention_flops=False) == (
        pytest.approx(320.058, rel=1e-5))
    # An fp8 step with int8 KV: the KV read halves (4 x 1000 x 65,536 B); attention dequantises
    # and runs at the bf16 1e15 by default: 16 x 4 x 4096 x 1000 x 32 / 1e15 = 8.388608 us;
    # asked for fp8 arithmetic, at 2e15: 4.194304 us.
    s = speculative_step(L8, TOY8, 4, 1000, 3, kv_bytes=1, dtype="fp8")
    assert s.kv_time == pytest.approx(262.144e-6, rel=1e-9)
    assert s.attention_time == pytest.approx(8.388608e-6, rel=1e-9)
    s = speculative_step(L8, TOY8, 4, 1000, 3, kv_bytes=1, dtype="fp8", attention_dtype="fp8")
    assert s.attention_time == pytest.approx(4.194304e-6, rel=1e-9)
    s = speculative_step(L8, TOY8, 4, 1000, 3, dtype="fp8")
    assert s.attention_time == pytest.approx(8.388608e-6, rel=1e-9)


def test_speculative_critical_batch_formats_and_small_batches(toy_chip):
    # int8 weights: B = 7.504925e-3 / (60.037267e-6 - 16.384e-9) = 125.04
    assert speculative_critical_batch(L8, toy_chip, 3, weight_bytes=1) == pytest.approx(125.04,
                                                                                   rel=1e-4)
    # int8 KV at 100 tokens: B = 15.009849e-3 / (60.246982e-6 - 6.586368e-6) = 279.72
    assert speculative_critical_batch(L8, toy_chip, 3, context=100, kv_bytes=1) == pytest.approx(
        279.72, rel=1e-4)
    # fp8 compute doubles C: B = 15.009849e-3 / (30.018634e-6 - 32.768e-9) = 500.57
    assert speculative_critical_batch(L8, TOY8, 3, dtype="fp8") == pytest.approx(500.564,
                                                                                 rel=1e-4)
    # a chip 10,000x slower than its memory: B* well below one sequence,
    # 15.009849e-3 / (8 x 7,504,658,432 / 1e11 - 32.768e-9) = 0.025002
    slow = Chip(name="slow", flops={"bf16": 1e11}, hbm_bandwidth=1e12, hbm_capacity=100e9)
    assert speculative_critical_batch(L8, slow, 3) == pytest.approx(0.0250009, rel=1e-5)


def test_speculative_tokens_per_step_warns_nothing():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert speculative_tokens_per_step(3, np.array([0.5, 1.0]))[1] == 4.0

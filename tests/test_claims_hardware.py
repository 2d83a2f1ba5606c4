"""Claims of chapter 1 ("Hardware in numbers"), asserted over the whole catalogue.

Each test states a rule of thumb the chapter prints and checks it for every chip (and, where a
model enters, every model width) in the catalogues, not only the chapter's examples. When a
catalogue entry breaks a claim, the prose changes, not the test.
"""

from __future__ import annotations

import numpy as np
import pytest
from claims import each, from_scratch

from llmmath import chips, models
from llmmath.roofline import (
    arithmetic_intensity,
    attainable_flops,
    elementwise_intensity,
    matmul_ridge_batch,
)

ALL = chips.all_chips()
BF16 = [c for c in ALL if "bf16" in c.flops]
BYTES = {"bf16": 2.0, "fp8": 1.0, "int8": 1.0, "fp4": 0.5}


@pytest.mark.whole_catalogue
def test_bf16_ridge_range_over_catalogue():
    # Chapter: "the bf16 ratio runs from 153 (A100) to 560 (TPU v6e)". Datasheets: references.bib
    # keys in each Chip.source (nvidia_a100_datasheet 312 TFLOPS / 2,039 GB/s; google_tpu_v6e_docs
    # 918 TFLOPS / 1,638 GB/s).
    r = {c.name: c.ops_per_byte("bf16") for c in BF16}
    assert min(r, key=r.get) == "A100-SXM-80GB" and 150 <= min(r.values()) <= 156
    assert max(r, key=r.get) == "TPU v6e" and 555 <= max(r.values()) <= 565


@pytest.mark.whole_catalogue
def test_gpus_since_2022_are_near_300():
    # Chapter: "every NVIDIA and AMD GPU from 2022 on sits between ~206 (H200) and ~312".
    recent = [c for c in BF16 if c.vendor in ("NVIDIA", "AMD") and c.year >= 2022]
    assert len(recent) >= 5
    for c in recent:
        assert 200 <= c.ops_per_byte("bf16") <= 320, c.name
    # and the A100 is not in that band: "about 300" does not hold before Hopper
    assert chips.get("A100-SXM-80GB").ops_per_byte("bf16") < 200



@pytest.mark.whole_catalogue
def test_about_300_holds_for_h100_and_blackwell_not_a100_or_h200():
    # Takeaway: '"About 300" holds for the H100 and the Blackwell GPUs, not for the A100 (153),
    # nor for the H200 (206), a Hopper whose memory upgrade alone lowered it.' Datasheets: H100
    # 989.4 TFLOP/s / 3.35 TB/s = 295; B200 2,250 / 8,000 = 281; GB200 and B300 (per GPU of an
    # NVL72) 2,500 / 8,000 = 312; A100 312 / 2.039 = 153; H200 989.4 / 4.8 = 206.
    near = [c for c in BF16 if c.vendor == "NVIDIA" and c.year >= 2022 and c.name != "H200"]
    assert {"H100-SXM", "B200", "GB200", "B300"} <= {c.name for c in near}
    for c in near:
        assert abs(c.ops_per_byte("bf16") / 300 - 1) <= 0.07, c.name
    for name, hand in (("A100-SXM-80GB", 312e12 / 2.039e12), ("H200", 989.4e12 / 4.8e12)):
        assert chips.get(name).ops_per_byte("bf16") == pytest.approx(hand, rel=0.005)
        assert chips.get(name).ops_per_byte("bf16") < 0.7 * 300, name


@pytest.mark.whole_catalogue
def test_episode_300_two_readings_coincide_when_fp4_is_twice_fp8():
    # Chapter: the episode's "300" is C_fp4 b_w / (2W) with b_w = 1/2 (a batch), or multiply-adds
    # per byte in fp8, C_fp8 / (2W); "the two readings are one number whenever fp4 runs at twice
    # fp8", and part on the B300. By hand: B200 9 PFLOP/s fp4 x 0.5 / (2 x 8 TB/s) = 281 and
    # 4.5 PFLOP/s fp8 / 16 TB/s = 281; B300 (per GPU) 15 x 0.5 / 16 = 469 against 10 / 16 = 312.
    b200, b300 = chips.get("B200"), chips.get("B300")
    assert b200.peak("fp4") * 0.5 / (2 * b200.hbm_bandwidth) == pytest.approx(9e15 * 0.5 / 16e12,
                                                                              rel=0.01)
    assert b200.peak("fp8") / (2 * b200.hbm_bandwidth) == pytest.approx(4.5e15 / 16e12, rel=0.01)
    assert b300.peak("fp4") * 0.5 / (2 * b300.hbm_bandwidth) == pytest.approx(469, rel=0.01)
    assert b300.peak("fp8") / (2 * b300.hbm_bandwidth) == pytest.approx(312, rel=0.01)
    for c in ALL:
        if "fp4" in c.flops and "fp8" in c.flops:
            batch = c.peak("fp4") * 0.5 / (2 * c.hbm_bandwidth)
            madds = c.peak("fp8") / (2 * c.hbm_bandwidth)
            if c.name == "B300":
                assert batch > 1.4 * madds
            else:
                assert batch == pytest.approx(madds, rel=0.01), c.name


def test_mfu_example_by_hand():
    # The chapter's worked MFU: 2 x 540B x 1,048,576 / (64 x 275 TFLOP/s x 85.2 s) (Pope et al.
    # Table 2: 512 prompts of 2,048 tokens on 64 TPU v4 in 85.2 s; PaLM 540.35B parameters,
    # TPU v4 275 TFLOP/s bf16) = 1.1332e21 / 1.4995e18 = 0.756; the paper reports 76%.
    from llmmath.training import POPE2022_N_CHIPS, POPE2022_TABLE2, inference_mfu
    hand = 2 * 540.35e9 * 512 * 2048 / (64 * 275e12 * 85.2)
    assert hand == pytest.approx(0.7557, rel=1e-3)
    pope = POPE2022_TABLE2["high-throughput prefill"]
    tokens = pope["batch"] * pope["tokens"]
    assert (tokens, pope["seconds"], POPE2022_N_CHIPS) == (1_048_576, 85.2, 64)
    lib = inference_mfu(models.get("PaLM-540B"), tokens=pope["batch"] * pope["tokens"],
                        time=pope["seconds"], chip=chips.get("TPU v4"), n_chips=POPE2022_N_CHIPS)
    assert lib == pytest.approx(hand, rel=1e-3)
    assert round(100 * lib) == round(100 * pope["mfu"]) == 76

def test_h100_to_b200_ratio_stable_a100_to_h100_not():
    a, h, b = (chips.get(n) for n in ("A100-SXM-80GB", "H100-SXM", "B200"))
    assert h.ops_per_byte() / a.ops_per_byte() > 1.8            # roughly doubled
    assert abs(b.ops_per_byte() / h.ops_per_byte() - 1) < 0.10   # within 10%
    assert b.peak() / h.peak() > 2 and b.hbm_bandwidth / h.hbm_bandwidth > 2


def test_memory_only_upgrade_lowers_ridge():
    h, h200 = chips.get("H100-SXM"), chips.get("H200")
    assert h200.peak() == h.peak() and h200.hbm_bandwidth > h.hbm_bandwidth
    assert h200.ops_per_byte() < h.ops_per_byte()


@each("model", models.all_models(), ids=lambda m: m.name)
def test_matmul_intensity_is_about_batch_in_bf16(model):
    # Chapter: I(B) ~ B FLOP/byte in bf16 while B is under 5% of the matrix dimensions.
    d = model.d_model
    batches = np.arange(1, int(0.05 * d) + 1)
    ratio = arithmetic_intensity(batches, d, d, 2) / batches
    assert np.all(ratio <= 1.0) and np.all(ratio >= 0.9)
    # ...and the approximation fails well beyond that (so the test can fail)
    assert arithmetic_intensity(d, d, d, 2) / d < 0.7


def test_batch_one_is_memory_bound_on_every_chip_and_dtype():
    # A matrix-vector product (batch 1) uses under 1% of peak on every chip, in every format.
    for c in ALL:
        for dt in c.flops:
            i = arithmetic_intensity(1, 8192, 8192, BYTES[dt])
            assert attainable_flops(c, i, dt) / c.peak(dt) < 0.01, (c.name, dt)


def test_vector_add_share_of_peak():
    # Chapter: z = x + y in bf16 is 1/6 FLOP/byte, well under 0.1% of an H100's peak.
    h = chips.get("H100-SXM")
    assert elementwise_intensity() == pytest.approx(1 / 6)
    assert attainable_flops(h, elementwise_intensity()) / h.peak() < 1e-3


@pytest.mark.whole_catalogue
def test_fp8_is_twice_bf16_everywhere():
    both = [c for c in ALL if "fp8" in c.flops and "bf16" in c.flops]
    assert len(both) >= 8
    for c in both:
        assert c.peak("fp8") / c.peak("bf16") == pytest.approx(2.0, rel=0.01), c.name


def test_fp4_is_twice_fp8_except_b300():
    # Chapter: "fp4 is twice fp8 on most chips that have it, with one exception: the B300 (3x)"
    # (nvidia_gb300_nvl72: FP4 1,100 PF dense vs FP8 720 PF sparse per rack).
    for c in ALL:
        if "fp4" in c.flops and "fp8" in c.flops:
            want = 3.0 if c.name == "B300" else 2.0
            assert c.peak("fp4") / c.peak("fp8") == pytest.approx(want, rel=0.01), c.name


def test_knee_batch_does_not_depend_on_dtype_when_rates_double():
    # Chapter: lower precision doubles throughput but the batch where a weight matmul meets the
    # roof stays put (B300 fp4 is the exception: fp4 is 3x fp8 there).
    for c in ALL:
        dts = [d for d in ("bf16", "fp8", "fp4") if d in c.flops]
        knees = {d: matmul_ridge_batch(c, 8192, 8192, d, BYTES[d]) for d in dts}
        for d in dts:
            if c.name == "B300" and d == "fp4":
                assert knees[d] > 1.4 * knees["fp8"]
            elif len(dts) > 1:
                assert knees[d] == pytest.approx(knees[dts[0]], rel=0.01), (c.name, d)


def test_knee_batch_is_near_the_ridge_for_bf16():
    # Chapter: the 8192 x 8192 bf16 matmul reaches the ridge "a little above" C/W, because the
    # activations cost bytes too: 4-8% above for GPUs, 16% for TPU v6e (the highest ridge).
    for c in BF16:
        k = matmul_ridge_batch(c, 8192, 8192, "bf16")
        assert c.ops_per_byte() <= k <= 1.2 * c.ops_per_byte(), c.name


@pytest.mark.whole_catalogue
def test_drain_time_tens_of_ms_everywhere():
    # Chapter: "from 13 ms (Rubin) to 39 ms (A100)": every chip between 10 and 40 ms.
    d = {c.name: c.drain_time for c in ALL}
    for name, t in d.items():
        assert 0.010 <= t <= 0.040, name
    assert min(d, key=d.get) == "Rubin" and max(d, key=d.get) == "A100-SXM-80GB"


def test_rubin_flashcard_drain_time():
    # Flashcard 9 (episode): Rubin 288 GB / 20 TB/s = 14.4 ms; catalogue uses 22 TB/s
    # (nvidia_vera_rubin).
    from llmmath.chips import Chip
    r = Chip(name="Rubin (episode)", flops={"fp4": 35e15}, hbm_bandwidth=20e12, hbm_capacity=288e9)
    assert r.drain_time == pytest.approx(0.0144)
    assert chips.get("Rubin").drain_time == pytest.approx(288 / 22 * 1e-3)


def test_flashcard_7_ratios():
    # Flashcard 7: H100 989/3.35 = 295, B200 2250/8 = 281.
    assert chips.get("H100-SXM").ops_per_byte() == pytest.approx(295, abs=1)
    assert chips.get("B200").ops_per_byte() == pytest.approx(281, abs=1)


def test_reality_check_shares():
    # shah2024flashattention3: 740 TFLOP/s FP16 on H100 = "75% utilization";
    # deepseek_flashmla: 3000 GB/s memory-bound, 660 TFLOP/s compute-bound (H800 SXM5, assumed
    # equal to H100 SXM in peak and HBM); deepseek_deepgemm: 1350+ FP8 TFLOP/s on Hopper.
    h = chips.get("H100-SXM")
    assert 0.72 <= 740e12 / h.peak("bf16") <= 0.78
    assert 0.85 <= 3000e9 / h.hbm_bandwidth <= 0.92
    assert 0.60 <= 660e12 / h.peak("bf16") <= 0.70
    assert 0.65 <= 1350e12 / h.peak("fp8") <= 0.72
    # measured compute is derated more than bandwidth, so the measured ridge is lower
    assert (740e12 / 3000e9) < h.ops_per_byte()


# ----- the chapter's from-scratch cell (CONTRIBUTING.md, the chapter standard) ----------------

@pytest.mark.whole_catalogue
def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    # matmul_time(B, d_in, d_out, peak_flops, bandwidth, bytes_per_value) against the library's
    # roofline, for every chip and dtype of the catalogue, small and large batches, two shapes.
    matmul_time = ns["matmul_time"]
    width = {"bf16": 2, "fp8": 1, "int8": 1, "fp4": 0.5}
    for chip in chips.all_chips():
        for dtype, peak in chip.flops.items():
            b = width[dtype]
            for batch in (1, 16, 300, 4096):
                for d_in, d_out in ((8192, 8192), (4096, 14336)):
                    i = arithmetic_intensity(batch, d_in, d_out, bytes_per_element=b)
                    lib = 2 * batch * d_in * d_out / attainable_flops(chip, i, dtype)
                    got = matmul_time(batch, d_in, d_out, peak, chip.hbm_bandwidth, b)
                    assert got == pytest.approx(lib, rel=1e-9), (chip.name, dtype, batch)
            assert peak / chip.hbm_bandwidth == pytest.approx(chip.ops_per_byte(dtype), rel=1e-12)


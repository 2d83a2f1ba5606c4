"""Chip catalogue: sources, published figures,
dense-vs-sparse sanity and the book's rules of thumb."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from llmmath import chips
from llmmath.chips import Chip

ROOT = Path(__file__).resolve().parents[1]
REQUIRED = ["A100-SXM-80GB", "H100-SXM", "H200", "B200", "GB200", "B300", "Rubin", "MI300X",
            "MI355X", "TPU v4", "TPU v5e", "TPU v5p", "TPU v6e", "TPU v7"]
GPUS = [c for c in chips.all_chips() if c.vendor in ("NVIDIA", "AMD")]


def bib_keys() -> set[str]:
    """Citation keys in every _bibparts/*.bib file and references.bib (if present)."""
    files = list((ROOT / "_bibparts").glob("*.bib")) + list(ROOT.glob("references.bib"))
    keys = set()
    for f in files:
        keys |= set(re.findall(r"@\w+\s*\{\s*([^,\s]+)\s*,", f.read_text(encoding="utf-8")))
    return keys


@pytest.mark.whole_catalogue
def test_required_chips_present():
    missing = [n for n in REQUIRED if n not in chips.names()]
    assert not missing, f"catalogue lacks {missing}"


@pytest.mark.parametrize("chip", chips.all_chips(), ids=lambda c: c.name)
def test_sources_are_cited(chip):
    keys = bib_keys()
    assert chip.source, f"{chip.name} has no source"
    assert chip.source in keys, f"{chip.name}: source {chip.source!r} not in any .bib"
    if chip.price_per_hour is not None:
        assert re.fullmatch(r"20\d\d-(0[1-9]|1[0-2])", chip.price_date or ""), chip.price_date
        assert chip.price_source in keys, (f"{chip.name}: price_source "
                                           f"{chip.price_source!r} not in any .bib")


@pytest.mark.parametrize("chip", chips.all_chips(), ids=lambda c: c.name)
def test_dense_fp8_is_twice_bf16(chip):
    # Every current tensor engine doubles throughput from 16-bit to 8-bit. A ratio near 4 would
    # mean a "with sparsity" fp8 figure slipped in next to a dense bf16 one (or vice versa).
    if "fp8" not in chip.flops or "bf16" not in chip.flops:
        pytest.skip("needs both bf16 and fp8")
    assert chip.flops["fp8"] / chip.flops["bf16"] == pytest.approx(2.0, rel=0.05)


FP4_RATIO = {
    # NVIDIA B200 / GB200 (HGX and NVL72 spec tables) and AMD MI355X: dense FP4 = 2x dense FP8.
    "B200": 2.0, "GB200": 2.0, "MI355X": 2.0,
    # Blackwell Ultra raised only NVFP4 throughput: GB300 NVL72 prints 1,100 PF dense FP4 against
    # 720 PF FP8 *with sparsity* (360 dense), i.e. 3x.
    "B300": 3.0,
}


@pytest.mark.parametrize("chip",
                         [c for c in chips.all_chips() if "fp4" in c.flops and "fp8" in c.flops],
                         ids=lambda c: c.name)
def test_fp4_over_fp8(chip):
    assert chip.name in FP4_RATIO, f"{chip.name}: add its published fp4/fp8 ratio to FP4_RATIO"
    assert chip.flops["fp4"] / chip.flops["fp8"] == pytest.approx(FP4_RATIO[chip.name], rel=0.05)


# The book's rule of thumb: a GPU's bf16 FLOP/s per byte/s of HBM is about 300 (200..600).
RIDGE_EXEMPT = {
    # A100: 312 TFLOPS / 2.039 TB/s = 153. Ampere predates the ~300 rule; reported to the lead.
    "A100-SXM-80GB": "153 FLOP/byte: Ampere-era ratio, below the rule of thumb",
    # Rubin: NVIDIA has announced only FP4 figures, so there is no bf16 ratio to check
    # (its FP4 ratio is checked in test_fp4_ridge_in_episode_units).
    "Rubin": "no published dense bf16 figure",
}


@pytest.mark.parametrize("chip", GPUS, ids=lambda c: c.name)
def test_gpu_ridge_about_300_in_bf16(chip):
    if chip.name in RIDGE_EXEMPT:
        # An exempt chip must still be outside the band or lack bf16, or the exemption is stale.
        if "bf16" in chip.flops:
            assert not 200 <= chip.ops_per_byte("bf16") <= 600, (
                f"{chip.name} no longer needs its exemption")
        return
    assert 200 <= chip.ops_per_byte("bf16") <= 600, (f"{chip.name}: "
                                                     f"{chip.ops_per_byte('bf16'):.0f} FLOP/byte")


@pytest.mark.parametrize("chip", [c for c in chips.all_chips() if "fp4" in c.flops],
                         ids=lambda c: c.name)
def test_fp4_ridge_in_episode_units(chip):
    # The episode counts FP4 multiplies (FLOP/2) against weights of 0.5 byte:
    # (FLOP/s / 2 * 0.5) / (B/s) "is about 300" (GB200: 10 PF dense FP4, 8 TB/s -> 312).
    ratio = chip.flops["fp4"] / 2 * 0.5 / chip.hbm_bandwidth
    assert 200 <= ratio <= 600, f"{chip.name}: {ratio:.0f}"


@pytest.mark.parametrize("chip", chips.all_chips(), ids=lambda c: c.name)
def test_hbm_drain_time_10_to_50_ms(chip):
    # Reading all of HBM once takes tens of milliseconds on every chip
    # (the episode's "about 20 ms").
    assert 10e-3 <= chip.drain_time <= 50e-3, f"{chip.name}: {chip.drain_time * 1e3:.1f} ms"


@pytest.mark.parametrize("chip", chips.all_chips(), ids=lambda c: c.name)
def test_network_is_one_direction_and_scale_out_slower(chip):
    # Scale-up per chip one way is below the HBM bandwidth, and scale-out (where listed) is at
    # least 4x slower than scale-up (the episode's "about 1/8").
    if chip.scale_up_bandwidth is not None:
        assert chip.scale_up_bandwidth < chip.hbm_bandwidth
        assert chip.scale_up_domain and chip.scale_up_domain >= 8
    if chip.scale_out_bandwidth is not None and chip.scale_up_bandwidth is not None:
        assert chip.scale_out_bandwidth * 4 <= chip.scale_up_bandwidth


# ---- published figures, each with its source -----------------------------------------------

def test_h100_published():
    # NVIDIA H100 datasheet (nvidia_h100_datasheet): SXM BF16 1,979 TFLOPS with sparsity ->
    # 989 dense, 80 GB HBM3, 3.35 TB/s, NVLink 900 GB/s bidirectional, HGX 8 GPUs,
    # ConnectX-7 400 Gb/s per GPU.
    h = chips.get("H100-SXM")
    assert h.peak("bf16") == pytest.approx(989e12, rel=0.01)
    assert h.hbm_bandwidth == pytest.approx(3.35e12)
    assert h.hbm_capacity == 80e9 and h.capacity_unit == "GB"
    assert h.scale_up_bandwidth == pytest.approx(450e9) and h.scale_up_domain == 8
    assert h.scale_out_bandwidth == pytest.approx(400e9 / 8)


def test_a100_published():
    # NVIDIA A100 datasheet (nvidia_a100_datasheet): BF16 312 TFLOPS dense, 80 GB HBM2e
    # at 2,039 GB/s.
    a = chips.get("A100-SXM-80GB")
    assert a.peak("bf16") == pytest.approx(312e12)
    assert a.hbm_bandwidth == pytest.approx(2.039e12)
    assert a.hbm_capacity == 80e9


def test_tpu_v4_matches_pope_2022():
    # Pope et al. 2022 sec. 4 (pope2022efficiently): 275 TFLOPS bf16 and int8, 32 GiB HBM (GiB!),
    # 1,200 GB/s, ICI 270 GB/s per chip; Google's v4 docs: 4,096 chips per pod.
    t = chips.get("TPU v4")
    assert t.peak("bf16") == t.peak("int8") == pytest.approx(275e12)
    assert t.hbm_capacity == 32 * 1024**3 and t.capacity_unit == "GiB"
    assert t.hbm_bandwidth == pytest.approx(1.2e12)
    assert t.scale_up_bandwidth == pytest.approx(270e9)
    assert t.scale_up_domain == 4096
    # Derived in sources/episode_and_paper.md: FLOP/byte 229, HBM drain 28.6 ms.
    assert t.ops_per_byte() == pytest.approx(229, abs=1)
    assert t.drain_time == pytest.approx(28.6e-3, abs=0.1e-3)


def test_tpu_v5e_published():
    # Google Cloud TPU v5e docs (google_tpu_v5e_docs): 197 TFLOPS bf16, 394 TOPS int8, 16 GB,
    # 819 GB/s, 256-chip pods.
    t = chips.get("TPU v5e")
    assert t.peak("bf16") == pytest.approx(197e12)
    assert t.peak("int8") == pytest.approx(394e12, rel=0.005)
    assert t.hbm_bandwidth == pytest.approx(819e9)
    assert t.hbm_capacity == 16e9
    assert t.scale_up_domain == 256


def test_gb200_per_gpu_from_rack():
    # NVIDIA GB200 NVL72 (nvidia_gb200_nvl72): FP4 1,440 PF with sparsity per 72 GPUs -> 10 PF dense
    # per GPU; NVLink 130 TB/s per rack -> 1.8 TB/s bidirectional, 0.9 TB/s each way per GPU.
    g = chips.get("GB200")
    assert g.flops["fp4"] == pytest.approx(1440e15 / 2 / 72, rel=0.01)
    assert g.scale_up_bandwidth == pytest.approx(130e12 / 72 / 2, rel=0.02)
    assert g.scale_up_domain == 72


def test_rubin_is_marked_announced():
    # NVIDIA Vera Rubin NVL72 announcement (nvidia_vera_rubin): 288 GB HBM4 at 22 TB/s per GPU.
    r = chips.get("Rubin")
    assert "ANNOUNCED" in r.notes
    assert r.hbm_capacity == 288e9 and r.hbm_bandwidth == pytest.approx(22e12)


def test_gib_capacities_are_binary():
    # Google quotes v4 / v5p / Ironwood HBM in GiB; stored bytes must be multiples of 2**30.
    for c in chips.all_chips():
        if c.capacity_unit == "GiB":
            assert (c.hbm_capacity / 1024**3).is_integer(), c.name


# ---- lookup and validation -----------------------------------------------------------------

@pytest.mark.parametrize("query", ["h100 sxm", "H100_SXM", "h100-sxm", " H100 SXM"])
def test_get_is_case_and_punctuation_insensitive(query):
    assert chips.get(query) is chips.get("H100-SXM")


def test_get_tpu_loosely():
    assert chips.get("tpu-v5e").name == "TPU v5e"
    assert chips.get("tpuv4").name == "TPU v4"


def test_unknown_chip_lists_close_matches():
    with pytest.raises(KeyError) as err:
        chips.get("H100 PCIe")
    assert "H100-SXM" in str(err.value)


def base_kwargs(**over):
    kw = dict(name="x", flops={"bf16": 1e15}, hbm_bandwidth=1e12, hbm_capacity=1e10)
    kw.update(over)
    return kw


@pytest.mark.parametrize("field,value", [
    ("hbm_bandwidth", 0), ("hbm_bandwidth", -1.0), ("hbm_capacity", 0), ("hbm_capacity", -5e9),
    ("scale_up_bandwidth", -1.0), ("scale_out_bandwidth", 0), ("price_per_hour", -2.0),
    ("scale_up_domain", 0),
])
def test_chip_rejects_non_positive(field, value):
    with pytest.raises(ValueError, match=field):
        Chip(**base_kwargs(**{field: value}))


def test_chip_rejects_non_positive_flops():
    with pytest.raises(ValueError, match=r"flops\['fp8'\]"):
        Chip(**base_kwargs(flops={"bf16": 1e15, "fp8": 0}))


def test_chip_rejects_bad_capacity_unit():
    with pytest.raises(ValueError, match="capacity_unit"):
        Chip(**base_kwargs(capacity_unit="TB"))


def test_peak_unknown_dtype_names_allowed():
    h = chips.get("H100-SXM")
    with pytest.raises(ValueError) as err:
        h.peak("fp64")
    msg = str(err.value)
    for dtype in h.flops:
        assert dtype in msg


def test_user_chip_works():
    v5e = Chip(name="my v5e", flops={"bf16": 1.97e14, "int8": 3.94e14}, hbm_bandwidth=8.2e11,
               hbm_capacity=16e9)
    assert v5e.ops_per_byte() == pytest.approx(240.2, abs=0.1)
    assert "my v5e" not in chips.names()


def test_achievable_fractions_are_the_measured_over_the_datasheet():
    # FlashAttention-3 740 TFLOP/s over the H100 SXM's dense 989.4 bf16 TFLOP/s; FlashMLA's
    # 3,000 GB/s over 3.35 TB/s (chapter 1's reality check)
    from llmmath.chips import achievable_fraction
    assert achievable_fraction("compute") == pytest.approx(740 / 989.4)
    assert achievable_fraction("memory") == pytest.approx(3000 / 3350)
    with pytest.raises(ValueError, match="kind"):
        achievable_fraction("network")

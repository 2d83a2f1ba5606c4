"""Accelerators as three numbers (FLOP/s, bytes/s, bytes) plus their network, with sources.

A :class:`Chip` holds one accelerator's datasheet figures in SI units. The catalogue
(``CATALOGUE``, :func:`get`, :func:`names`) lists real chips, each entry citing its
source by a key of ``references.bib``. Build your own ``Chip(...)`` for hypothetical hardware.

Conventions:

- ``flops[dtype]`` is the **dense** peak (not the "with sparsity" figure vendors print
  beside it), in FLOP/s, one multiply-add counted as 2 FLOP.
- ``hbm_capacity`` is bytes. Vendors quote NVIDIA/AMD HBM in decimal GB and Google TPU HBM in
  GiB; ``capacity_unit`` records which the source meant and the value is converted to bytes.
- ``scale_up_bandwidth`` and ``scale_out_bandwidth`` are per chip, **one direction**
  (egress) in bytes/s: the number collective-time formulas divide by. NVIDIA quotes NVLink as
  the bidirectional total (900 GB/s on H100 = 450 GB/s each way).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ._check import choice, index_by_name, lookup, positive
from ._summary import SummaryRow
from .units import fmt_time

#: The order in which a chip's number formats stand in for one it does not list
#: (:meth:`Chip.resolve_dtype`): the widest format first.
DTYPE_PREFERENCE = ("bf16", "fp8", "int8", "fp4")


@dataclass(frozen=True)
class Chip:
    """One accelerator. All figures SI: FLOP/s, bytes/s, bytes, USD per chip-hour."""

    name: str
    flops: dict  # dtype -> dense peak FLOP/s
    hbm_bandwidth: float  # B/s
    hbm_capacity: float  # B
    scale_up_bandwidth: float | None = None  # B/s per chip, one direction
    scale_up_domain: int | None = None  # chips in one scale-up (NVLink / ICI) domain
    scale_out_bandwidth: float | None = None  # B/s per chip, one direction
    price_per_hour: float | None = None  # USD per chip-hour, typical rental
    price_date: str | None = None  # when that price was seen, YYYY-MM
    vendor: str = ""
    year: int | None = None  # first availability
    capacity_unit: str = "GB"  # what the vendor's capacity figure means: "GB" or "GiB"
    source: str = ""  # citation key in references.bib for the datasheet figures
    price_source: str = ""  # citation key for the rental price
    notes: str = ""
    extra: dict = field(default_factory=dict, compare=False)

    def __post_init__(self):
        if not self.name:
            raise ValueError("name: got an empty string; a chip needs a name")
        if not isinstance(self.flops, dict) or not self.flops:
            raise ValueError(f"flops: got {self.flops!r}; expected a dict like {{'bf16': 9.89e14}}")
        for dtype, value in self.flops.items():
            positive(f"flops[{dtype!r}]", value)
        positive("hbm_bandwidth", self.hbm_bandwidth)
        positive("hbm_capacity", self.hbm_capacity)
        for name in ("scale_up_bandwidth", "scale_out_bandwidth", "price_per_hour"):
            if getattr(self, name) is not None:
                positive(name, getattr(self, name))
        if self.scale_up_domain is not None:
            positive("scale_up_domain", self.scale_up_domain, integer=True)
        choice("capacity_unit", self.capacity_unit, ["GB", "GiB"])

    def peak(self, dtype: str = "bf16") -> float:
        """Dense peak FLOP/s at `dtype`; ValueError naming the dtypes this chip has."""
        choice(f"dtype (for chip {self.name!r})", dtype, list(self.flops))
        return float(self.flops[dtype])

    def resolve_dtype(self, dtype: str = "bf16") -> tuple[str, str]:
        """The number format this chip runs for a request of ``dtype``, and a note saying why.

        ``(dtype, "")`` when the chip lists ``dtype``; otherwise its widest listed format (in the
        order of :data:`DTYPE_PREFERENCE`) and a note for a figure title or a readout, for
        example ``"TPU v4 lists no fp8: bf16 peak"``. The one rule plots, explorers and tests use.
        """
        if dtype in self.flops:
            return dtype, ""
        used = next((d for d in DTYPE_PREFERENCE if d in self.flops), next(iter(self.flops)))
        return used, f"{self.name} lists no {dtype}: {used} peak"

    def ops_per_byte(self, dtype: str = "bf16") -> float:
        """Ridge point of the roofline: peak FLOP/s / HBM bytes/s (FLOP per byte)."""
        return self.peak(dtype) / self.hbm_bandwidth

    @property
    def drain_time(self) -> float:
        """Seconds to read the whole HBM once: capacity / bandwidth."""
        return self.hbm_capacity / self.hbm_bandwidth

    @property
    def price_per_second(self) -> float:
        """USD per chip-second; ValueError when the chip has no price."""
        if self.price_per_hour is None:
            raise ValueError(f"price_per_hour: chip {self.name!r} "
                             "has none; pass a price explicitly")
        return self.price_per_hour / 3600.0


def _index(entries) -> dict[str, Chip]:
    return index_by_name("chip", entries)


def get(name: str) -> Chip:
    """The catalogue chip called `name`; KeyError with close matches if there is none."""
    return lookup("chip", name, CATALOGUE)


def names() -> list[str]:
    """Catalogue chip names, in catalogue order."""
    return list(CATALOGUE)


def all_chips() -> list[Chip]:
    """Every catalogue chip."""
    return list(CATALOGUE.values())


from ._chip_catalogue import CHIPS  # noqa: E402  (plain data; imports Chip from here)

#: The catalogue, name -> entry, built from the plain tuple in ``_chip_catalogue``.
CATALOGUE: dict[str, Chip] = _index(CHIPS)


#: The best published kernel measurements on an H100-class GPU (FLOP/s and bytes/s), the
#: "achievable ceilings" chapters derate the datasheet with (the hardware chapter's reality check):
#: FlashAttention-3's FP16 forward at up to 740 TFLOP/s on an H100 SXM, "75% utilization"
#: [shah2024flashattention3]; DeepGEMM's FP8 GEMMs at up to 1,350 TFLOP/s and FlashMLA's
#: decoding kernel at up to 3,000 GB/s (and 660 TFLOP/s when compute-bound) on an H800 SXM5,
#: which has the H100 SXM's compute and HBM [deepseek_deepgemm, deepseek_flashmla].
MEASURED_H100 = {
    "bf16_matmul": 740e12,
    "fp8_gemm": 1350e12,
    "mla_decode_flops": 660e12,
    "hbm_read": 3000e9,
}


def achievable_fraction(kind: str) -> float:
    """An H100 SXM's measured ceiling over its datasheet peak: ``"compute"`` (bf16 matmul,
    about 0.75) or ``"memory"`` (HBM read, about 0.90), from :data:`MEASURED_H100`: the
    ``compute_efficiency`` / ``memory_efficiency`` the chapters use for "achievable ceilings".
    """
    choice("kind", kind, ("compute", "memory"))
    chip = get("H100-SXM")
    if kind == "compute":
        return MEASURED_H100["bf16_matmul"] / chip.peak("bf16")
    return MEASURED_H100["hbm_read"] / chip.hbm_bandwidth


#: FlashAttention-2's utilisation of an H100 (forward pass), the starting point FlashAttention-3
#: improves on: "only 35% utilization on the H100 GPU" [shah2024flashattention3, abstract].
FLASHATTENTION2_H100_UTILISATION = 0.35

#: Dense fp4 FLOP/s per GPU of the 8-GPU HGX B300 board, a little below the GB300 NVL72 rack's
#: per-GPU share in the catalogue's ``B300``: 108 PFLOP/s dense for 8 GPUs on NVIDIA's HGX
#: platform page [nvidia_hgx_b200].
HGX_B300_FP4_DENSE = 13.5e15

#: NVIDIA's "inference" NVFP4 headline for one Rubin GPU (the catalogue's ``Rubin`` keeps the
#: 35 PFLOP/s training figure) [nvidia_vera_rubin].
RUBIN_FP4_INFERENCE_HEADLINE = 50e15

#: The Rubin HBM bandwidth the episode uses, 20 TB/s, before NVIDIA announced 22 TB/s (the
#: catalogue's ``Rubin``) [dwarkesh2026pope].
EPISODE_RUBIN_HBM_BANDWIDTH = 20e12


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("hardware", "ridge point (FLOP per byte)", r"I^* = C / W", "H100, bf16",
               lambda lm: lm.chip("H100-SXM").ops_per_byte("bf16"),
               lambda r: f"{r:,.0f} FLOP/byte",
               by_formula=lambda lm: (c := lm.chip("H100-SXM")).peak("bf16") / c.hbm_bandwidth),
    SummaryRow("hardware", "HBM drain time", r"t_\text{drain} = M / W", "H100",
               lambda lm: lm.capacity.drain_time(lm.chip("H100-SXM")), fmt_time,
               by_formula=lambda lm: (c := lm.chip("H100-SXM")).hbm_capacity / c.hbm_bandwidth),
)

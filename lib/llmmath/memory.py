"""Memory tiers and prompt caching: what it costs to keep a KV cache and bring it back.

A prompt cache keeps a sequence's KV cache (``kv_held(S)`` bytes, see
:meth:`llmmath.models.Model.kv_cache_bytes`) somewhere between requests, so the next request
skips the prefill. Each place it can wait is a :class:`MemoryTier`: one device with a
capacity ``M`` (B), a read bandwidth ``W`` (B/s) and a price ``p`` (USD per device-second).
Holding ``b`` bytes for ``t`` seconds and reading them back once costs at least

    ``b p max(t / M, 1 / W)``

a roofline in the lifetime ``t``: below the tier's drain time ``M / W`` one pays for
bandwidth, above it for capacity. Fetching an entry back into a GPU is capped twice: by the
devices it is striped over (``devices x W``) and by the link into the GPU (a host's DRAM and
drives reach a GPU over PCIe, ``PCIE_GEN5_X16_BANDWIDTH`` each way, however many DIMMs or
drives sit behind it): :func:`fetch_bandwidth`. The catalogue ``MEMORY_TIERS`` has HBM (an H100's,
rented), DRAM, flash and disk, each figure with its source; purchase prices are amortised
over the device's life with nothing added for power, hosts or margin, so every cost here is
a floor.

All sizes in bytes, times in seconds, prices in USD; arguments broadcast.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import chips
from ._check import n_chips as n_chips_check
from ._check import positive
from ._check import scalar_or_array as _out
from .units import hour, year

__all__ = [
    "PCIE_GEN5_X16_BANDWIDTH",
    "MemoryTier",
    "amortised_price_per_hour",
    "MEMORY_TIERS",
    "memory_tiers",
    "cache_hold_cost",
    "fetch_bandwidth",
    "cache_fetch_time",
    "cache_cost",
    "cheapest_tier",
    "tier_crossover",
    "kv_transfer_time",
]


# ----- memory tiers ----------------------------------------------------------------------------

#: One direction of a PCIe Gen5 x16 link (B/s): how a host's DRAM and drives reach one GPU.
#: NVIDIA lists "PCIe Gen5: 128 GB/s" for the H100 SXM, both directions together
#: [nvidia_h100_datasheet]; 32 GT/s x 16 lanes with 128b/130b coding is 63 GB/s of payload each
#: way, and measured host-to-GPU copies reach less (about 55 GB/s), so this is a ceiling.
PCIE_GEN5_X16_BANDWIDTH = 64e9

@dataclass(frozen=True)
class MemoryTier:
    """One storage device a KV cache can wait in: capacity, read bandwidth and cost, SI units.

    ``price_per_hour`` is what one device costs per hour: a rental price for HBM (the whole
    accelerator, since HBM cannot be rented alone) or a purchase price amortised over
    ``lifetime_years`` for DRAM, flash and disk (no power, host, network or margin: a floor).
    ``link_bandwidth`` is the link the tier reaches one GPU through, one direction (B/s): PCIe for
    a host's DRAM and drives, ``None`` for the GPU's own HBM.
    """

    name: str
    capacity: float  # B per device
    bandwidth: float  # B/s per device (sequential read)
    price_per_hour: float  # USD per device-hour
    device: str = ""  # the device the figures describe
    date: str = ""  # when the price was seen, YYYY-MM
    source: str = ""  # citation key(s) for capacity and bandwidth
    price_source: str = ""  # citation key(s) for the price
    notes: str = ""
    link_bandwidth: float | None = None  # B/s into one GPU, one direction; None: on the GPU

    def __post_init__(self):
        positive("capacity", self.capacity)
        positive("bandwidth", self.bandwidth)
        positive("price_per_hour", self.price_per_hour)
        if self.link_bandwidth is not None:
            positive("link_bandwidth", self.link_bandwidth)

    @property
    def drain_time(self) -> float:
        """Seconds to read the whole device once: ``capacity / bandwidth``."""
        return self.capacity / self.bandwidth

    @property
    def price_per_second(self) -> float:
        return self.price_per_hour / 3600.0

    @property
    def hold_price(self) -> float:
        """USD per byte-second of capacity: ``device $/s / capacity`` (the episode's hold rate)."""
        return self.price_per_second / self.capacity

    @property
    def read_price(self) -> float:
        """USD per byte read, if the device did nothing but read: ``device $/s / bandwidth``."""
        return self.price_per_second / self.bandwidth

    @classmethod
    def from_chip(cls, chip, price_per_hour=None):
        """The HBM of an accelerator as a tier,
        priced at the chip's rental price (or the one given)."""
        price = price_per_hour if price_per_hour is not None else chip.price_per_hour
        if price is None:
            raise ValueError(f"price_per_hour: chip {chip.name!r} "
                             "has no price; pass one in USD per hour")
        return cls(name="HBM", capacity=chip.hbm_capacity, bandwidth=chip.hbm_bandwidth,
                   price_per_hour=price, device=f"{chip.name} HBM (whole GPU rented)",
                   date=chip.price_date or "", source=chip.source, price_source=chip.price_source)


def amortised_price_per_hour(purchase_price, lifetime_years=5.0):
    """A purchase price spread evenly over ``lifetime_years`` (USD per hour)."""
    p = positive("purchase_price", purchase_price)
    y = positive("lifetime_years", lifetime_years)
    return _out(p / (y * year / hour))


def _tiers():
    # pragma: no mutate block  (catalogue data run once at import, before mutmut can switch a
    # mutant on; test_memory checks each figure against its source instead)
    return {
        "HBM": MemoryTier.from_chip(chips.get("H100-SXM")),
        "DRAM": MemoryTier(
            name="DRAM", capacity=32e9, bandwidth=5200e6 * 8,
            price_per_hour=amortised_price_per_hour(325.99, 5), device="one 32 GB DDR5-5200 module",
            date="2026-01", source="jedec_ddr5", price_source="techradar2026ddr5",
            notes=("Bandwidth: 5,200 MT/s x 8 bytes per transfer (a 64-bit channel) = 41.6 GB/s. "
                   "Price: $325.99 retail for a 32 GB DDR5-5200 module (Jan 2026, during the "
                   "2025-26 DRAM price rise), amortised over 5 years."),
            link_bandwidth=PCIE_GEN5_X16_BANDWIDTH),
        "flash": MemoryTier(
            name="flash", capacity=30.72e12, bandwidth=14e9,
            price_per_hour=amortised_price_per_hour(10950, 5),
            device="one 30.72 TB PCIe Gen5 NVMe SSD",
            date="2026-03", source="storagereview2025micron9550", price_source="vdura2026ssdprices",
            notes=("Micron 9550 PRO class: up to 14 GB/s sequential read over PCIe Gen5 x4, 30.72 "
                   "TB top capacity, 5-year warranty. Price: $10,950 for a 30 TB TLC SSD in Q1 "
                   "2026 (up from $3,062 in Q2 2025), amortised over 5 years."),
            link_bandwidth=PCIE_GEN5_X16_BANDWIDTH),
        "disk": MemoryTier(
            name="disk", capacity=24e12, bandwidth=285e6,
            price_per_hour=amortised_price_per_hour(24e3 * 0.014 * 1.35, 5),
            device="one 24 TB 7,200 rpm hard disk", date="2026-03",
            source="blocksandfiles2023exosx24",
            price_source="backblaze2022hddcost,vdura2026ssdprices",
            notes=("Seagate Exos X24: 24 TB, 285 MB/s maximum sustained rate, 5-year warranty. "
                   "Price: Backblaze's bulk $0.014/GB (Nov 2022) raised by the 35% HDD rise of Q2 "
                   "2025-Q1 2026, for 24 TB, amortised over 5 years. Random reads cost a ~10 ms "
                   "seek each."),
            link_bandwidth=PCIE_GEN5_X16_BANDWIDTH),
    }


MEMORY_TIERS: dict = _tiers()


def memory_tiers() -> list:
    """The four tiers, fastest first: HBM (an H100's), DRAM, flash, disk."""
    return list(MEMORY_TIERS.values())


# ----- holding and fetching a cache -----------------------------------------------------------

def cache_hold_cost(nbytes, seconds, tier):
    """USD to keep ``nbytes`` in ``tier`` for ``seconds``:
    ``bytes x time x (device $/s / capacity)``.

    The episode's hold cost: it charges capacity only and assumes the device's bandwidth is
    not the binding constraint (true when ``seconds`` exceeds the tier's drain time).
    """
    b = positive("nbytes", nbytes, allow_zero=True)
    t = positive("seconds", seconds, allow_zero=True)
    return _out(b * t * tier.hold_price)


def fetch_bandwidth(tier, devices=1, n_chips=1):
    """Bytes per second at which an entry comes back from ``tier`` into ``n_chips`` GPUs.

    ``min(devices x W_tier, n_chips x W_link)``: the entry is striped over ``devices`` devices of
    the tier, and each GPU receives it over its own link (``tier.link_bandwidth``; a GPU's own
    HBM has none). A server's DRAM may read hundreds of GB/s, but one GPU takes it in at PCIe
    rate (:data:`PCIE_GEN5_X16_BANDWIDTH`).
    """
    devices = positive("devices", devices, integer=True)
    n_chips = n_chips_check(n_chips)
    read = devices * tier.bandwidth
    if tier.link_bandwidth is None:
        return _out(read)
    return _out(np.minimum(read, n_chips * tier.link_bandwidth))


def cache_fetch_time(nbytes, tier, devices=1, n_chips=1):
    """Seconds to read ``nbytes`` back from ``tier`` into ``n_chips`` GPUs.

    ``bytes /`` :func:`fetch_bandwidth`: ``devices`` devices read at full bandwidth, and each
    GPU's link caps what it takes in.
    """
    return _out(positive("nbytes", nbytes, allow_zero=True)
                / fetch_bandwidth(tier, devices, n_chips))


def cache_cost(nbytes, seconds, tier):
    """USD to hold ``nbytes`` for ``seconds`` in ``tier`` and read them back once.

    A device full of such data must both store it and deliver it: per byte it needs
    ``max(1/M, 1/(W t))`` devices, so the cost is ``bytes x device $/s x max(t/M, 1/W)``:
    a roofline in the lifetime ``t``. Below the drain time ``M/W`` the cost is flat (paying
    for bandwidth); above it, it grows with ``t`` (paying for capacity, the episode's
    :func:`cache_hold_cost`).
    """
    b = positive("nbytes", nbytes, allow_zero=True)
    t = positive("seconds", seconds, allow_zero=True)
    return _out(b * tier.price_per_second * np.maximum(t / tier.capacity, 1.0 / tier.bandwidth))


def cheapest_tier(seconds, tiers=None):
    """Name of the tier with the lowest :func:`cache_cost` for a cache entry living ``seconds``."""
    tiers = list(tiers) if tiers is not None else memory_tiers()
    t = np.asarray(positive("seconds", seconds), dtype=float)
    costs = np.stack([np.broadcast_to(cache_cost(1.0, t, tier), t.shape) for tier in tiers])
    names = np.array([tier.name for tier in tiers])
    best = names[np.argmin(costs, axis=0)]
    return str(best) if best.ndim == 0 else best


def tier_crossover(tier_a, tier_b):
    """Lifetime (s) beyond which ``tier_b`` holds-and-returns a byte more cheaply than ``tier_a``.

    Each tier's :func:`cache_cost` per byte is ``max(t h, r)`` with ``h`` its hold price and
    ``r`` its read price. If ``b`` is cheaper on both counts it wins at every lifetime (0);
    if it is dearer to hold it never wins (``inf``); otherwise ``a``'s rising capacity cost
    meets ``b``'s flat bandwidth floor at ``t = r_b / h_a``.
    """
    if tier_b.hold_price >= tier_a.hold_price:
        return float("inf")
    if tier_b.read_price <= tier_a.read_price:
        return 0.0
    return float(tier_b.read_price / tier_a.hold_price)


# ----- moving a cache between chips -----------------------------------------------------------

def kv_transfer_time(model, prompt, bandwidth, kv_bytes=2):
    """Seconds to ship one prompt's KV cache from a prefill node to a decode node.

    ``kv_held(P) / bandwidth``: the price of disaggregating prefill and decode onto different
    chips. ``bandwidth`` in bytes/s (e.g. a chip's ``scale_out_bandwidth`` times the chips sending).
    """
    kv_bytes = positive("kv_bytes", kv_bytes)
    prompt = model.check_context(positive("prompt", prompt), "prompt")  # within the model's window
    return _out(model.kv_cache_bytes(prompt, kv_bytes) / positive("bandwidth", bandwidth))

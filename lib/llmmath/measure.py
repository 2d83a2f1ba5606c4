"""Measure your own roofline: a matmul's FLOP/s and a streaming copy's bandwidth on this machine.

The physics is three lines, kept apart from the clocks so it can be checked by hand:

- an (m x k) @ (k x n) matmul does ``matmul_flops(m, k, n) = 2 m k n`` FLOP (a multiply and an
  add per term), and its arithmetic intensity is :func:`llmmath.roofline.arithmetic_intensity`;
- copying ``nbytes`` moves ``copy_bytes(nbytes) = 2 nbytes``: each byte read once and written once
  (a cache that reads a line before overwriting it moves a third more; this counts what must
  move, like every bound in the book);
- the ridge of a roofline is ``ridge_point(flops, bandwidth) = flops / bandwidth`` FLOP per byte,
  here from two measured ceilings instead of a datasheet.

The measuring helpers time the best of ``repeats`` runs after one warm-up (the best, not the
mean: the roof is what the machine can do, and a run slowed by another process says nothing
about it). ``backend="numpy"`` measures the CPU in fp32 (numpy's BLAS); ``backend="torch"``
measures a CUDA GPU in bf16 when PyTorch and a GPU are present (never required).
:func:`roofline_run` measures both ceilings over a few sizes and returns a
:class:`RooflineRun`, which saves to and loads from CSV with the conditions it ran under.
"""

from __future__ import annotations

import csv
import dataclasses
import os
import platform
import time
from pathlib import Path

import numpy as np

from ._check import number, positive
from .intensity import arithmetic_intensity

__all__ = ["matmul_flops", "copy_bytes", "ridge_point", "Measurement", "RooflineRun",
           "time_matmul", "time_copy", "roofline_run", "machine_conditions", "BACKENDS"]

#: Where the measurements run: numpy on the CPU (fp32), PyTorch on a CUDA GPU (bf16).
BACKENDS = ("numpy", "torch")
_DTYPE = {"numpy": ("fp32", 4), "torch": ("bf16", 2)}
_MAX_N = 16384  # a 16384^2 fp32 matrix is 1 GiB: larger is a typo on a reader's laptop
_MAX_COPY = 4e9  # bytes per copy (two buffers of this size are allocated)
_MAX_REPEATS = 1000


def matmul_flops(m, k, n):
    """FLOP of an (m x k) @ (k x n) matmul: ``2 m k n`` (one multiply and one add per term)."""
    m, k, n = (positive(a, v) for a, v in (("m", m), ("k", k), ("n", n)))
    return 2.0 * m * k * n


def copy_bytes(nbytes):
    """Bytes a copy of ``nbytes`` must move: ``2 nbytes`` (read once, written once)."""
    return 2.0 * positive("nbytes", nbytes)


def ridge_point(flops, bandwidth):
    """The ridge of a roofline, FLOP per byte: ``flops`` (FLOP/s) over ``bandwidth`` (B/s)."""
    return positive("flops", flops) / positive("bandwidth", bandwidth)


def _backend(backend):
    if not isinstance(backend, str):
        raise TypeError(f"backend: got {backend!r}; allowed values are {', '.join(BACKENDS)}")
    if backend not in BACKENDS:
        raise ValueError(f"backend: got {backend!r}; allowed values are {', '.join(BACKENDS)}")
    if backend == "torch":
        try:
            import torch
        except ImportError:
            raise ValueError("backend: got 'torch' but PyTorch is not importable; "
                             "use backend='numpy'") from None
        if not torch.cuda.is_available():
            raise ValueError("backend: got 'torch' but no CUDA GPU is available; "
                             "use backend='numpy'")
        return torch
    return None


def _count(name, value, maximum):
    return int(positive(name, value, integer=True, maximum=maximum, single=True))


def _best(run, sync, repeats):
    run()  # warm-up: first-touch page faults, BLAS thread start, CUDA kernel selection
    sync()
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        sync()
        best = min(best, time.perf_counter() - t0)
    return max(best, 1e-9)


def time_matmul(n=256, repeats=3, backend="numpy"):
    """Best time (seconds) of ``repeats`` square (n x n) @ (n x n) matmuls, after a warm-up."""
    n = _count("n", n, _MAX_N)
    repeats = _count("repeats", repeats, _MAX_REPEATS)
    torch = _backend(backend)
    if torch is None:
        rng = np.random.default_rng(0)
        a, b = (rng.standard_normal((n, n), dtype=np.float32) for _ in range(2))
        out = np.empty((n, n), dtype=np.float32)
        return _best(lambda: np.matmul(a, b, out=out), lambda: None, repeats)
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    return _best(lambda: torch.matmul(a, b), torch.cuda.synchronize, repeats)


def time_copy(nbytes=8e6, repeats=3, backend="numpy"):
    """Best time (seconds) of ``repeats`` copies of an ``nbytes`` buffer into another."""
    nbytes = _count("nbytes", nbytes, _MAX_COPY)
    repeats = _count("repeats", repeats, _MAX_REPEATS)
    torch = _backend(backend)
    if torch is None:
        src = np.ones(nbytes, dtype=np.uint8)
        dst = np.zeros_like(src)
        return _best(lambda: np.copyto(dst, src), lambda: None, repeats)
    src = torch.ones(nbytes, dtype=torch.uint8, device="cuda")
    dst = torch.zeros_like(src)
    return _best(lambda: dst.copy_(src), torch.cuda.synchronize, repeats)


@dataclasses.dataclass(frozen=True)
class Measurement:
    """One timed operation: ``kind`` "matmul" (``size`` = n) or "copy" (``size`` = bytes)."""

    kind: str
    size: float
    flop: float  # FLOP it does (0 for a copy)
    nbytes: float  # bytes it must move
    seconds: float  # best measured time

    @property
    def flops_per_second(self) -> float:
        return self.flop / self.seconds

    @property
    def bytes_per_second(self) -> float:
        return self.nbytes / self.seconds

    @property
    def intensity(self) -> float:
        """FLOP per byte moved (0 for a copy)."""
        return self.flop / self.nbytes


COLUMNS = ("kind", "size", "flop", "bytes", "seconds", "flops_per_second", "bytes_per_second",
           "intensity")


@dataclasses.dataclass(frozen=True)
class RooflineRun:
    """A measured roofline: the timings, the two ceilings, the ridge and the conditions.

    ``flops`` is the best matmul rate; ``bandwidth`` the rate of the largest copy (the one that
    streams from main memory; smaller copies may run from cache and read higher); ``ridge`` is
    :func:`ridge_point` of the two.
    """

    measurements: tuple
    flops: float
    bandwidth: float
    ridge: float
    dtype: str
    conditions: dict = dataclasses.field(default_factory=dict, compare=False)

    @classmethod
    def from_measurements(cls, measurements, dtype, conditions=None):
        mm = [m for m in measurements if m.kind == "matmul"]
        cp = [m for m in measurements if m.kind == "copy"]
        if not mm or not cp:
            raise ValueError("measurements: a roofline needs at least one matmul and one copy")
        flops = max(m.flops_per_second for m in mm)
        bandwidth = max(cp, key=lambda m: m.size).bytes_per_second
        return cls(tuple(measurements), flops, bandwidth, ridge_point(flops, bandwidth), dtype,
                   dict(conditions or {}))

    def rows(self) -> list[dict]:
        """One dict per measurement with the columns of ``COLUMNS``."""
        return [{"kind": m.kind, "size": m.size, "flop": m.flop, "bytes": m.nbytes,
                 "seconds": m.seconds, "flops_per_second": m.flops_per_second,
                 "bytes_per_second": m.bytes_per_second, "intensity": m.intensity}
                for m in self.measurements]

    def to_csv(self, path) -> None:
        """Write the run as CSV: ``# key: value`` lines for the conditions, then the rows."""
        path = Path(path)
        with path.open("w", newline="", encoding="utf-8") as f:
            for key, value in {**self.conditions, "dtype": self.dtype}.items():
                f.write(f"# {key}: {value}\n")
            w = csv.DictWriter(f, fieldnames=COLUMNS, lineterminator="\n")
            w.writeheader()
            for row in self.rows():
                w.writerow({k: (v if isinstance(v, str) else f"{v:.6g}") for k, v in row.items()})

    @classmethod
    def from_csv(cls, path) -> RooflineRun:
        """Read a run written by :meth:`to_csv` (the committed reference run, for example)."""
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"path: got {path!r}; expected a file path")
        path = Path(path)
        if not path.is_file():
            raise ValueError(f"path: got {str(path)!r}; no such file")
        conditions, lines = {}, []
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("# "):
                key, _, value = line[2:].partition(": ")
                conditions[key] = value
            elif line.strip():
                lines.append(line)
        reader = csv.DictReader(lines)
        if tuple(reader.fieldnames or ()) != COLUMNS:
            raise ValueError(f"path: {str(path)!r} has columns {reader.fieldnames}; "
                             f"expected {list(COLUMNS)}")
        ms = [Measurement(r["kind"], float(r["size"]), float(r["flop"]), float(r["bytes"]),
                          float(r["seconds"])) for r in reader]
        dtype = conditions.pop("dtype", "fp32")
        return cls.from_measurements(ms, dtype, conditions)


def machine_conditions(backend="numpy") -> dict:
    """What a run depends on: CPU model, cores, numpy and its BLAS (and the GPU, for torch)."""
    torch = _backend(backend)
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        blas = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # numpy builds differ in what they report
        blas = "unknown"
    out = {"cpu": cpu, "cores": os.cpu_count(), "numpy": np.__version__, "blas": blas,
           "backend": backend}
    if hasattr(os, "getloadavg"):  # other work on the machine slows the measurement
        out["load_average_1min"] = round(os.getloadavg()[0], 2)
    if torch is not None:
        out.update(gpu=torch.cuda.get_device_name(0), torch=torch.__version__)
    return out


def _sizes(name, values, maximum):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or len(values) == 0:
        raise TypeError(f"{name}: got {values!r}; expected a non-empty list of sizes")
    arr = number(name, list(values))
    arr = positive(name, np.atleast_1d(arr), integer=True, maximum=maximum)
    return [int(v) for v in np.atleast_1d(arr)]


def roofline_run(matmul_sizes=(64, 128, 256), copy_sizes=(1e6, 8e6), repeats=3,
                 backend="numpy"):
    """Measure both ceilings: square matmuls of ``matmul_sizes`` and copies of ``copy_sizes``.

    Returns a :class:`RooflineRun` (fp32 on the CPU with numpy, bf16 with torch on a GPU).
    """
    ns = _sizes("matmul_sizes", matmul_sizes, _MAX_N)
    bs = _sizes("copy_sizes", copy_sizes, _MAX_COPY)
    repeats = _count("repeats", repeats, _MAX_REPEATS)
    _backend(backend)
    dtype, width = _DTYPE[backend]
    ms = []
    for n in ns:
        flop = matmul_flops(n, n, n)
        moved = flop / arithmetic_intensity(n, n, n, bytes_per_element=width)
        ms.append(Measurement("matmul", n, flop, moved, time_matmul(n, repeats, backend)))
    for b in bs:
        ms.append(Measurement("copy", b, 0.0, copy_bytes(b), time_copy(b, repeats, backend)))
    return RooflineRun.from_measurements(ms, dtype, machine_conditions(backend))

"""Measure your own roofline (the lab): operations on both sides of the ridge, timed with numpy.

The physics is kept apart from the clocks so it can be checked by hand:

- an (m x k) @ (k x n) matmul does ``matmul_flops(m, k, n) = 2 m k n`` FLOP and moves at least
  ``(m k + k n + m n) b`` bytes (:func:`llmmath.roofline.arithmetic_intensity`); a batch of B
  vectors times a k x n weight matrix is the matmul with ``m = B``, a decode step in miniature;
- a vector operation over n numbers does ``f n`` FLOP and moves ``(inputs + outputs) n b`` bytes
  (:data:`VECTOR_OPS`: ``y += x`` and ``y = a x + y``), far left of any ridge;
- :func:`fit_roofline` fits the two ceilings to measured points as the least roof above them
  (the best FLOP/s any point reached, the best bytes/s any point moved), and :class:`Roof` gives
  the ridge ``flops / bandwidth`` and the batch ``knee_batch`` at which a weight matmul reaches it
  (:func:`llmmath.roofline.matmul_ridge_batch`, about ``ridge x b_w / 2``).

:func:`roofline_sweep` and :func:`batch_sweep` time each operation ``repeats`` times after
``warmup`` runs that are discarded, and return a :class:`Sweep` that keeps every repeat: the
spread is part of the measurement (its median, its min-max, the ridge of each repeat). numpy
only, fp32 on the CPU; pin the BLAS threads (:data:`THREAD_VARIABLES`) before numpy is imported,
as the lab's first cell does. ``LLMMATH_LAB_REPLAY=1`` in the environment makes both sweeps
return the book's recorded reference instead of timing (:func:`reference_sweep`): how the
committed notebook stays the same on every machine that executes it.
"""

from __future__ import annotations

import csv
import ctypes
import dataclasses
import datetime
import glob
import os
import platform
import time
from pathlib import Path

import numpy as np

from ._check import choice, positive
from .chips import Chip
from .intensity import arithmetic_intensity, elementwise_intensity, matmul_ridge_batch

__all__ = ["matmul_flops", "ridge_point", "fit_roofline", "Roof", "Op", "Sweep",
           "roofline_sweep", "batch_sweep", "reference_sweep", "machine_conditions",
           "VECTOR_OPS", "THREAD_VARIABLES", "LAB", "REPLAY_VARIABLE", "REFERENCE"]

#: y += x and y = a x + y: (FLOP per element, operands read, operands written).
VECTOR_OPS = {"add": (1, 2, 1), "axpy": (2, 2, 1)}
#: The environment variables that set the BLAS threads; read once, when numpy loads its BLAS.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: The lab's sizes. The vectors (64 MiB each in fp32) and the 4096 x 4096 weights (64 MiB) are
#: larger than a laptop's last-level cache, so they stream from main memory.
LAB = {"vector_elements": 2**24, "squares": (256, 512, 1024, 2048),
       "batches": (1, 2, 4, 8, 16, 32, 64, 128, 256, 512), "k": 4096, "n": 4096,
       "repeats": 7, "warmup": 2}
#: Set to 1 to replay the reference run instead of measuring (the committed notebook).
REPLAY_VARIABLE = "LLMMATH_LAB_REPLAY"
#: The reference run, recorded by scripts/record_lab_reference.py; installed with the library.
REFERENCE = Path(__file__).resolve().parent / "data" / "lab_reference.csv"
_DTYPE, _WIDTH = "fp32", 4
_MAX_ELEMENTS = 2**28  # 1 GiB per fp32 vector: larger is a typo on a laptop
_MAX_DIM = 16384
_MAX_REPEATS = 1000
_CHUNK = 2**16  # y = a x + y in chunks: the product a x stays in cache, not in main memory


def matmul_flops(m, k, n):
    """FLOP of an (m x k) @ (k x n) matmul: ``2 m k n`` (one multiply and one add per term)."""
    m, k, n = (positive(a, v) for a, v in (("m", m), ("k", k), ("n", n)))
    return 2.0 * m * k * n


def ridge_point(flops, bandwidth):
    """The ridge of a roofline, FLOP per byte: ``flops`` (FLOP/s) over ``bandwidth`` (B/s)."""
    return positive("flops", flops) / positive("bandwidth", bandwidth)


@dataclasses.dataclass(frozen=True)
class Roof:
    """A roofline from two measured ceilings: ``flops`` (FLOP/s) and ``bandwidth`` (B/s)."""

    flops: float
    bandwidth: float

    def __post_init__(self):
        positive("flops", self.flops, single=True)
        positive("bandwidth", self.bandwidth, single=True)

    @property
    def ridge(self) -> float:
        """FLOP per byte where the ceilings meet: :func:`ridge_point`."""
        return ridge_point(self.flops, self.bandwidth)

    def chip(self) -> Chip:
        """The roof as a :class:`~llmmath.chips.Chip` (fp32), for the library's roofline
        functions; its memory capacity is not measured (1 byte stands in)."""
        return Chip(name="measured roof", flops={_DTYPE: self.flops},
                    hbm_bandwidth=self.bandwidth, hbm_capacity=1.0,
                    notes="measured by llmmath.measure; capacity not measured")

    def knee_batch(self, k, n, bytes_per_element=_WIDTH):
        """Batch B at which (B x k) @ (k x n) reaches this roof's ridge, about
        ``ridge x bytes_per_element / 2`` for large k and n: below it a step's time is the
        weights' read, flat in B; above it the arithmetic, growing with B."""
        return matmul_ridge_batch(self.chip(), k, n, dtype=_DTYPE,
                                  bytes_per_element=bytes_per_element)


def fit_roofline(intensity, achieved):
    """The least roof above measured points: each at ``intensity`` (FLOP/byte) reached
    ``achieved`` (FLOP/s). The compute ceiling is the best ``achieved``; the bandwidth the best
    ``achieved / intensity`` (bytes/s). Returns a :class:`Roof`.

    Every point then lies on or under ``min(flops, intensity x bandwidth)``, and points
    planted on a roof (one on each side of its ridge at least) give that roof back.
    """
    i = np.atleast_1d(positive("intensity", intensity)).astype(float)
    a = np.atleast_1d(positive("achieved", achieved)).astype(float)
    if i.shape != a.shape:
        raise ValueError(f"intensity, achieved: got {i.size} and {a.size} points; "
                         "give one achieved FLOP/s per intensity")
    return Roof(float(a.max()), float((a / i).max()))


@dataclasses.dataclass(frozen=True)
class Op:
    """One timed operation: ``op`` "add" or "axpy" over ``n`` numbers (``m = k = 1``), or
    "matmul" (m x k) @ (k x n); fp32 (4 bytes per element)."""

    op: str
    m: int
    k: int
    n: int

    def __post_init__(self):
        choice("op", self.op, [*VECTOR_OPS, "matmul"])
        for name in ("m", "k", "n"):
            top = _MAX_ELEMENTS if (name == "n" and self.op != "matmul") else _MAX_DIM
            positive(name, getattr(self, name), integer=True, maximum=top, single=True)
        if self.op != "matmul" and (self.m, self.k) != (1, 1):
            raise ValueError(f"m, k: got {self.m}, {self.k}; a vector op has m = k = 1")

    @property
    def flop(self) -> float:
        if self.op == "matmul":
            return matmul_flops(self.m, self.k, self.n)
        return float(VECTOR_OPS[self.op][0] * self.n)

    @property
    def intensity(self) -> float:
        """FLOP per byte that must move."""
        if self.op == "matmul":
            return float(arithmetic_intensity(self.m, self.k, self.n, bytes_per_element=_WIDTH))
        f, inputs, outputs = VECTOR_OPS[self.op]
        return float(elementwise_intensity(f, inputs, outputs, bytes_per_element=_WIDTH))

    @property
    def nbytes(self) -> float:
        """Bytes that must move: every operand read once, every result written once."""
        return self.flop / self.intensity

    @property
    def label(self) -> str:
        if self.op == "matmul":
            return f"({self.m} x {self.k}) @ ({self.k} x {self.n})"
        return {"add": "y += x", "axpy": "y = a x + y"}[self.op] + f", n = {self.n}"


def _runner(op: Op):
    """A function that runs ``op`` once on buffers allocated here (so allocation is not timed)."""
    rng = np.random.default_rng(0)
    if op.op == "matmul":
        a = rng.standard_normal((op.m, op.k), dtype=np.float32)
        b = rng.standard_normal((op.k, op.n), dtype=np.float32)
        out = np.empty((op.m, op.n), dtype=np.float32)
        return lambda: np.matmul(a, b, out=out)
    x, y = np.ones(op.n, dtype=np.float32), np.zeros(op.n, dtype=np.float32)
    if op.op == "add":
        return lambda: np.add(y, x, out=y)
    a, tmp = np.float32(0.5), np.empty(min(_CHUNK, op.n), dtype=np.float32)

    def axpy():
        for s in range(0, op.n, _CHUNK):
            t = tmp[: min(_CHUNK, op.n - s)]
            np.multiply(x[s:s + _CHUNK], a, out=t)
            np.add(y[s:s + _CHUNK], t, out=y[s:s + _CHUNK])
    return axpy


def _time(op: Op, repeats: int, warmup: int) -> tuple:
    run = _runner(op)
    for _ in range(warmup):  # first-touch page faults, BLAS thread start, caches: discarded
        run()
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run()
        out.append(max(time.perf_counter() - t0, 1e-9))
    return tuple(out)


@dataclasses.dataclass(frozen=True)
class Sweep:
    """Timed operations: ``ops`` (:class:`Op`), ``times`` (per op, the seconds of each repeat,
    warm-ups discarded) and the ``conditions`` they ran under."""

    ops: tuple
    times: tuple
    conditions: dict = dataclasses.field(default_factory=dict, compare=False)

    def __post_init__(self):
        if len(self.ops) != len(self.times) or not self.ops:
            raise ValueError(f"times: got {len(self.times)} rows for {len(self.ops)} ops; "
                             "expected one row of repeats per op, at least one op")
        if len({len(t) for t in self.times}) != 1:
            raise ValueError("times: every op needs the same number of repeats")

    def __add__(self, other: Sweep) -> Sweep:
        """Both sweeps' ops (their repeats paired by index); this one's conditions."""
        return Sweep(self.ops + other.ops, self.times + other.times, dict(self.conditions))

    @property
    def repeats(self) -> int:
        return len(self.times[0])

    def seconds(self) -> np.ndarray:
        """(ops x repeats) array of measured seconds."""
        return np.array(self.times, dtype=float)

    def intensities(self) -> np.ndarray:
        return np.array([o.intensity for o in self.ops])

    def flop(self) -> np.ndarray:
        return np.array([o.flop for o in self.ops])

    def achieved(self) -> np.ndarray:
        """(ops x repeats) FLOP/s each repeat reached."""
        return self.flop()[:, None] / self.seconds()

    def roof(self) -> Roof:
        """The roof fitted to each op's median rate (:func:`fit_roofline`)."""
        return fit_roofline(self.intensities(), np.median(self.achieved(), axis=1))

    def ridges(self) -> np.ndarray:
        """The ridge of each repeat's own fitted roof: the spread of the measured ridge."""
        a = self.achieved()
        return np.array([fit_roofline(self.intensities(), a[:, r]).ridge
                         for r in range(self.repeats)])

    def select(self, op=None, k=None, n=None) -> Sweep:
        """The ops of one kind and/or weight shape (the batch sweep: ``op="matmul", k, n``)."""
        keep = [i for i, o in enumerate(self.ops) if (op is None or o.op == op)
                and (k is None or o.k == k) and (n is None or o.n == n)]
        if not keep:
            raise ValueError(f"op, k, n: got {op!r}, {k!r}, {n!r}; no such op in this sweep")
        return Sweep(tuple(self.ops[i] for i in keep), tuple(self.times[i] for i in keep),
                     dict(self.conditions))

    def measured_knee(self, k, n) -> float:
        """Batch where the measured asymptotes of ``(B x k) @ (k x n)`` cross: the smallest
        batch's step time (memory-bound: the weights' read) over the largest batch's time per
        token (compute-bound). Compare with :meth:`Roof.knee_batch`, the roof's prediction."""
        sw = self.select(op="matmul", k=k, n=n)
        t = np.median(sw.seconds(), axis=1)
        small, large = int(np.argmin([o.m for o in sw.ops])), int(np.argmax([o.m for o in sw.ops]))
        return float(t[small] / (t[large] / sw.ops[large].m))

    def to_csv(self, path) -> None:
        """``# key: value`` lines for the conditions, then one row per op and repeat."""
        with Path(path).open("w", newline="", encoding="utf-8") as f:
            for key, value in self.conditions.items():
                f.write(f"# {key}: {value}\n")
            w = csv.writer(f, lineterminator="\n")
            w.writerow(_COLUMNS)
            for o, ts in zip(self.ops, self.times, strict=True):
                for r, t in enumerate(ts):
                    w.writerow([o.op, o.m, o.k, o.n, r, f"{t:.6g}"])

    @classmethod
    def from_csv(cls, path) -> Sweep:
        """A sweep written by :meth:`to_csv` (the reference run, for example)."""
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
        reader = csv.reader(lines)
        if tuple(next(reader, ())) != _COLUMNS:
            raise ValueError(f"path: {str(path)!r} does not start with the columns {_COLUMNS}")
        ops, times = [], {}
        for op, m, k, n, _, t in reader:
            o = Op(op, int(m), int(k), int(n))
            if o not in times:
                ops.append(o)
                times[o] = []
            times[o].append(float(t))
        return cls(tuple(ops), tuple(tuple(times[o]) for o in ops), conditions)


_COLUMNS = ("op", "m", "k", "n", "repeat", "seconds")


def reference_sweep() -> Sweep:
    """The book's reference run (both sweeps), recorded with :data:`LAB`'s sizes by
    scripts/record_lab_reference.py, with the conditions it ran under."""
    return Sweep.from_csv(REFERENCE)


def _blas_threads():
    """Threads numpy's bundled OpenBLAS runs, where it can be asked (else None)."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__) + ".libs", "*openblas*"))
    for lib in libs:
        try:
            dll = ctypes.CDLL(lib)
        except OSError:
            continue
        for symbol in ("scipy_openblas_get_num_threads64_", "openblas_get_num_threads64_",
                       "openblas_get_num_threads"):
            if hasattr(dll, symbol):
                return int(getattr(dll, symbol)())
    return None


def machine_conditions() -> dict:
    """What a run depends on: CPU, cores, numpy and its BLAS, the BLAS threads (the pinning
    variables and, where numpy's OpenBLAS says, the threads it runs), the load, the date."""
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
           "blas_threads": _blas_threads() or "unknown",
           **{v: os.environ.get(v, "unset") for v in THREAD_VARIABLES},
           "dtype": _DTYPE, "date": datetime.date.today().isoformat()}
    if hasattr(os, "getloadavg"):  # other work on the machine slows the measurement
        out["load_average_1min"] = round(os.getloadavg()[0], 2)
    return out


def _count(name, value, maximum, allow_zero=False):
    return int(positive(name, value, integer=True, maximum=maximum, single=True,
                        allow_zero=allow_zero))


def _dims(name, values, maximum):
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__") or len(values) == 0:
        raise TypeError(f"{name}: got {values!r}; expected a non-empty list of sizes")
    arr = positive(name, list(values), integer=True, maximum=maximum)
    return [int(v) for v in np.atleast_1d(arr)]


def _run(ops, repeats, warmup) -> Sweep:
    if os.environ.get(REPLAY_VARIABLE) == "1":
        ref = reference_sweep()
        missing = [o.label for o in ops if o not in ref.ops]
        if missing:
            raise ValueError(f"{REPLAY_VARIABLE}=1 replays the reference run, which has the "
                             f"lab's sizes only (measure.LAB); not {missing[:3]}")
        rows = [ref.ops.index(o) for o in ops]
        return Sweep(tuple(ops), tuple(ref.times[i] for i in rows),
                     {**ref.conditions, "replayed": REFERENCE.name})
    times = tuple(_time(o, repeats, warmup) for o in ops)
    return Sweep(tuple(ops), times, machine_conditions())


def roofline_sweep(vector_elements=LAB["vector_elements"], squares=LAB["squares"],
                   repeats=LAB["repeats"], warmup=LAB["warmup"]) -> Sweep:
    """The ceilings: ``y += x`` and ``y = a x + y`` over ``vector_elements`` fp32 numbers
    (memory-bound), and square matmuls of each size in ``squares`` (compute-bound), each
    timed ``repeats`` times after ``warmup`` discarded runs."""
    n = _count("vector_elements", vector_elements, _MAX_ELEMENTS)
    sq = _dims("squares", squares, _MAX_DIM)
    repeats = _count("repeats", repeats, _MAX_REPEATS)
    warmup = _count("warmup", warmup, _MAX_REPEATS, allow_zero=True)
    ops = [Op(v, 1, 1, n) for v in VECTOR_OPS] + [Op("matmul", s, s, s) for s in sq]
    return _run(ops, repeats, warmup)


def batch_sweep(batches=LAB["batches"], k=LAB["k"], n=LAB["n"], repeats=LAB["repeats"],
                warmup=LAB["warmup"]) -> Sweep:
    """A decode step in miniature: ``batch`` vectors times one (k x n) fp32 weight matrix,
    ``(batch x k) @ (k x n)``, for each batch in ``batches``, each timed ``repeats`` times
    after ``warmup`` discarded runs."""
    bs = _dims("batches", batches, _MAX_DIM)
    k = _count("k", k, _MAX_DIM)
    n = _count("n", n, _MAX_DIM)
    repeats = _count("repeats", repeats, _MAX_REPEATS)
    warmup = _count("warmup", warmup, _MAX_REPEATS, allow_zero=True)
    return _run([Op("matmul", b, k, n) for b in bs], repeats, warmup)

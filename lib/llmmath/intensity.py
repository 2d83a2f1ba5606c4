"""Operation intensity, the classic roofline: FLOP per byte of a matmul or an element-wise op,
the FLOP/s a chip reaches at an intensity, and the rows at which a matmul reaches the ridge.
"""

from __future__ import annotations

import numpy as np

from ._check import positive
from ._check import scalar_or_array as _out

__all__ = ["arithmetic_intensity", "attainable_flops", "elementwise_intensity",
           "matmul_ridge_batch"]

def arithmetic_intensity(m, k, n, bytes_per_element=2, weight_bytes=None, output_bytes=None):
    """FLOP per byte of an (m x k) @ (k x n) matmul reading both inputs, writing the output once.

    ``I = 2 m k n / (m k b_in + k n b_w + m n b_out)``; ``weight_bytes`` and
    ``output_bytes`` default to ``bytes_per_element``. With ``m`` = tokens, ``k = n = D`` and
    ``m << D`` it is about ``2m / b_w``: one multiply-add per weight per token.
    """
    m = positive("m", m)
    k = positive("k", k)
    n = positive("n", n)
    b_in = positive("bytes_per_element", bytes_per_element)
    b_w = b_in if weight_bytes is None else positive("weight_bytes", weight_bytes)
    b_out = b_in if output_bytes is None else positive("output_bytes", output_bytes)
    return _out(2.0 * m * k * n / (m * k * b_in + k * n * b_w + m * n * b_out))


def attainable_flops(chip, intensity, dtype="bf16"):
    """Roofline: FLOP/s reachable at ``intensity`` FLOP/byte: ``min(C, I x W)``."""
    intensity = positive("intensity", intensity)
    return _out(np.minimum(chip.peak(dtype), intensity * chip.hbm_bandwidth))


def elementwise_intensity(flops_per_element=1, inputs=2, outputs=1, bytes_per_element=2):
    """FLOP per byte of an elementwise op over vectors (``z = x + y`` by default).

    ``I = f / ((inputs + outputs) b)``: each element does ``flops_per_element`` FLOP and reads
    ``inputs`` and writes ``outputs`` values of ``bytes_per_element`` bytes, each exactly once.
    ``z = x + y`` in bf16 is 1 FLOP per 6 bytes; a copy (``inputs=1, outputs=1``) with 0 FLOP is the
    pure bandwidth test (pass ``flops_per_element`` > 0 to place it on a roofline).
    """
    f = positive("flops_per_element", flops_per_element)
    n_in = positive("inputs", inputs, allow_zero=True)
    n_out = positive("outputs", outputs, allow_zero=True)
    b = positive("bytes_per_element", bytes_per_element)
    moved = (n_in + n_out) * b
    if np.any(np.asarray(moved) <= 0):
        raise ValueError("inputs, outputs: at least one operand must be read or written")
    return _out(f / moved)


def matmul_ridge_batch(chip, k, n, dtype="bf16", bytes_per_element=2, weight_bytes=None,
                       output_bytes=None):
    """Rows ``m`` (tokens) at which an (m x k) @ (k x n) matmul reaches ``chip``'s ridge point.

    Solves ``arithmetic_intensity(m, k, n, ...) = chip.ops_per_byte(dtype)`` for ``m``:
    ``m = I* k n b_w / (2 k n - I* (k b_in + n b_out))`` with ``I* = C/W`` the ridge
    (FLOP/byte). For ``k, n >> I*`` it is about ``I* b_w / 2``: the batch that amortises each
    weight read (Llama 3 70B's 8192 x 28672 up-projection on an H100 in bf16: 310). Below it
    the matmul is memory-bound, above it compute-bound. Returns ``inf`` where the matmul never
    reaches the ridge (the activations alone carry too many bytes: ``k`` or ``n`` too small).
    """
    k = positive("k", k)
    n = positive("n", n)
    b_in = positive("bytes_per_element", bytes_per_element)
    b_w = b_in if weight_bytes is None else positive("weight_bytes", weight_bytes)
    b_out = b_in if output_bytes is None else positive("output_bytes", output_bytes)
    ridge = chip.ops_per_byte(dtype)
    denom = 2.0 * k * n - ridge * (k * b_in + n * b_out)
    with np.errstate(divide="ignore"):
        m = np.where(denom > 0, ridge * k * n * b_w / np.where(denom > 0, denom, 1.0), np.inf)
    return _out(m)

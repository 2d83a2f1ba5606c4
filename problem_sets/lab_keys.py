"""Keys to the lab's "Try this" questions (book/lab_roofline.ipynb): instructor kit only.

A student's numbers are their machine's, so each key gives the reasoning a full answer needs and
the reference run's numbers to hold the student's against (computed here by the library from
``lib/llmmath/data/lab_reference.csv``, as the lab computes them). ``keys()`` maps each
question's number to its key; the student edition keeps only the questions
(tests/test_measure.py holds the two lists to the same length).

    python problem_sets/lab_keys.py          # prints the key as markdown (the kit's lab_keys.md)
"""

from __future__ import annotations

import sys

import numpy as np

import llmmath as lm
from llmmath.units import fmt_bandwidth, fmt_flops_rate, fmt_time

K = N = lm.measure.LAB["k"]


def _reference():
    ref = lm.measure.reference_sweep()
    roof = ref.roof()
    batch = ref.select(op="matmul", k=K, n=N)
    t = np.median(batch.seconds(), axis=1)
    bw = np.array([o.nbytes for o in batch.ops]) / t  # bytes each batch's step moved per second
    return ref, roof, batch, t, bw


def keys() -> dict[int, str]:
    """{question number: key}, in the notebook's order."""
    ref, roof, batch, t, bw = _reference()
    ridges = ref.ridges()
    predicted, measured = roof.knee_batch(K, N), ref.measured_knee(K, N)
    b1, b2 = batch.ops[0], batch.ops[1]
    h100 = lm.chip("H100-SXM")
    knee_bf16 = roof.knee_batch(K, N, bytes_per_element=2)
    knee_h100 = lm.intensity.matmul_ridge_batch(h100, K, N, dtype="bf16", bytes_per_element=2)
    ridge_h100 = h100.ops_per_byte("bf16")
    decode_i = lm.intensity.arithmetic_intensity(1, 8192, 8192, bytes_per_element=2)
    return {
        1: (f"Reference run: predicted B* = {predicted:.2g} (ridge {roof.ridge:.3g} x 4 / 2), "
            f"measured asymptotes cross at B = {measured:.2g}, a factor "
            f"{measured / predicted:.2g}. The batch-1 point sits below the sloped roof: it "
            f"moves {fmt_bandwidth(bw[0])} where the fitted bandwidth is "
            f"{fmt_bandwidth(roof.bandwidth)} ({100 * bw[0] / roof.bandwidth:.0f}%), so its "
            "flat floor is higher by the inverse of that share and meets the compute line that "
            "much later; the large-batch FLOP/s sits close to the compute ceiling "
            f"({fmt_flops_rate(lm.measure.matmul_flops(batch.ops[-1].m, K, N) / t[-1])} of "
            f"{fmt_flops_rate(roof.flops)}), so it explains little. Full marks: the factor, and "
            "the bandwidth the small-batch kernel reaches named as the cause."),
        2: ("More threads raise the compute ceiling nearly in proportion to the cores used (each "
            "core has its own vector units) and the bandwidth much less (one core already "
            "draws a large share of what the memory controllers give), so the ridge and the "
            "predicted knee rise, roughly by the compute ceiling's factor. The spread widens on a "
            "machine where other programs run: every thread now competes with them. Reference "
            f"(1 thread): ridge {roof.ridge:.3g}, {ridges.min():.3g} to {ridges.max():.3g} over "
            f"{ref.repeats} repeats. Full marks: which ceiling moved, the ridge and knee moving "
            "with it, the spread quoted."),
        3: (f"B* = ridge x 2 / 2 = ridge: {knee_bf16:.2g} on the reference roof (exact form; "
            f"half the fp32 knee of {predicted:.2g}); an H100 in bf16 has a ridge of "
            f"{ridge_h100:.0f} FLOP/byte, so B* = {knee_h100:.0f} for a 4096 x 4096 matrix "
            "(lm.intensity.matmul_ridge_batch). A GPU server must batch a few hundred sequences "
            "before the arithmetic, not the weight reads, sets a token's cost; a CPU core "
            "reaches that point at a handful."),
        4: (f"Batch 1 ({fmt_time(t[0])}) moves {fmt_bandwidth(bw[0])}; batch 2 "
            f"({fmt_time(t[1])}) moves {fmt_bandwidth(bw[1])}. Both are left of the ridge "
            f"(intensity {b1.intensity:.2g} and {b2.intensity:.2g} FLOP/byte < "
            f"{roof.ridge:.2g}): both fall short of bandwidth, not of arithmetic. Batch 2 falls "
            "further short: numpy's BLAS streams the weights more slowly for two rows than for "
            "one. The roofline bounds the time; it does not say how well a library's kernel "
            "for a given shape streams its operands."),
        5: (f"A batch-1 matrix-vector product in bf16 has an intensity of about "
            f"{decode_i:.2f} FLOP/byte (lm.intensity.arithmetic_intensity(1, 8192, 8192, 2)): "
            f"left of any ridge here (reference {roof.ridge:.2g}), so decoding at batch 1 is "
            "memory-bound: time per token about the model's weight bytes over the measured "
            f"bandwidth (a 7B-parameter model in bf16, 14 GB, at {fmt_bandwidth(roof.bandwidth)}: "
            f"{fmt_time(14e9 / roof.bandwidth)} per token as a lower bound)."),
    }


def markdown() -> str:
    """The key as a markdown page."""
    ref = lm.measure.reference_sweep()
    c = ref.conditions
    lines = ["# Lab: measure your own roofline, keys to \"Try this\"", "",
             f"Reference numbers from the run recorded on {c['cpu']} ({c['cores']} cores, numpy "
             f"{c['numpy']}, {c['blas']}, {c['blas_threads']} BLAS thread, {c['date']}, "
             f"load {c['load_average_1min']}). A student's numbers are their machine's: grade "
             "the reasoning and that their numbers are consistent with their own run.", ""]
    for q, text in keys().items():
        lines += [f"{q}. {text}", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.stdout.write(markdown())

"""How close the estimate comes to published measurements: the calibration report.

Usage: ``PYTHONPATH=lib python scripts/calibration_report.py``

For every row of the calibration set (``lib/llmmath/data/measured_latency.csv``) it computes the
per-operation lower bound and the estimate of :func:`llmmath.estimate.estimate_step` (summed over
the steps the measurement spans), then prints, for dense and MoE rows and for the fit and held-out
halves: the distribution (min, median, max) of measured/bound and measured/estimate, the share of
rows whose estimate is within 30% of the measurement (|estimate - measured| <= 0.3 measured), and
each term's median share of the bound, so one sees which term does the work. Last, the distribution
of measured/estimate by engine and kind (both halves), which shows where the remaining gap lives.
"""


from __future__ import annotations

import numpy as np

from llmmath import _calibration


def _dist(x):
    x = np.asarray(x, dtype=float)
    return f"min {x.min():5.2f}  median {np.median(x):5.2f}  max {x.max():5.2f}"


def main():
    rows = _calibration.load()
    results = [(r, _calibration.evaluate(r)) for r in rows]
    print(f"{len(rows)} rows from {len({r['source'] for r in rows})} sources\n")
    print("row by row (measured / bound, measured / estimate):")
    for r, e in results:
        print(f"  {r['split']:4} {r['kind']:5} {r['catalogue_model']:13} {r['chip']:8} "
              f"n={r['n_chips']} B={r['batch']:<5} {r['input_tokens']:>5}/{r['output_tokens']:<5} "
              f"{r['phase']:8}  m/bound {r['measured_s'] / e['bound']:5.2f}  "
              f"m/est {r['measured_s'] / e['estimate']:5.2f}")
    for split in ("fit", "test", "all"):
        for kind in ("dense", "moe", "all"):
            sel = [(r, e) for r, e in results
                   if (split == "all" or r["split"] == split)
                   and (kind == "all" or r["kind"] == kind)]
            if not sel:
                continue
            m = np.array([r["measured_s"] for r, _ in sel])
            b = np.array([e["bound"] for _, e in sel])
            est = np.array([e["estimate"] for _, e in sel])
            within = np.abs(est - m) <= 0.3 * m
            within_b = np.abs(b - m) <= 0.3 * m
            half = "both halves" if split == "all" else f"{split} half"
            print(f"\n[{half}, {kind} rows: {len(sel)}]")
            print(f"  measured / bound    {_dist(m / b)}   within 30%: {within_b.sum()}/{len(sel)}")
            print(f"  measured / estimate {_dist(m / est)}   within 30%: {within.sum()}/{len(sel)}")
            print("  term / bound (median over rows; max):")
            for term in _calibration.TERMS[1:]:
                share = np.array([e[term] / e["bound"] for _, e in sel])
                print(f"    {term:28s} {np.median(share):5.2f}  (max {share.max():5.2f})")

    print("\n[by engine and kind, both halves: measured / estimate]")
    groups = {}
    for r, e in results:
        engine = r["engine"].split(" (")[0]
        groups.setdefault((engine, r["kind"]), []).append(r["measured_s"] / e["estimate"])
    for (engine, kind), ratios in sorted(groups.items()):
        within = sum(abs(1 / x - 1) <= 0.3 for x in ratios)
        print(f"  {engine:32s} {kind:5s} {len(ratios):2d} rows  {_dist(ratios)}   "
              f"within 30%: {within}/{len(ratios)}")


if __name__ == "__main__":
    main()

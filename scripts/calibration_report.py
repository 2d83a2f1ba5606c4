"""How close the estimate comes to published measurements: the calibration report.

Usage: ``PYTHONPATH=lib python scripts/calibration_report.py [--split fit|test|all]``

By default it shows the ``fit`` sources only: the ``test`` sources are the held-out check, and
nobody choosing a term of the estimate should look at them (``data/calibration/README.md``).

For the chosen rows it prints, row by row, measured/bound and measured/estimate; then, by phase
(decode, prefill, generate) and kind (dense, MoE), three predictors side by side: the estimate of
:func:`llmmath.estimate.estimate_step`, the fair baseline (the bound times one constant per kind
fitted on the other publishers' rows, leave one publisher out) and the bound itself, each as
the share within a factor of 1.3 either way, the geometric-mean error and the median
measured/predicted; then each term's median share of the bound, and measured/estimate by engine
and kind.
"""

from __future__ import annotations

import argparse

import numpy as np

from llmmath import _calibration


def _dist(x):
    x = np.asarray(x, dtype=float)
    return f"min {x.min():5.2f}  median {np.median(x):5.2f}  max {x.max():5.2f}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("fit", "test", "all"), default="fit")
    split = ap.parse_args(argv).split
    every = _calibration.load()
    rows = [r for r in every if split == "all" or r["split"] == split]
    results = [(r, _calibration.evaluate(r)) for r in rows]
    print(f"{split} rows: {len(rows)} from {len({r['source'] for r in rows})} sources "
          f"(whole set: {len(every)} rows, {len({r['source'] for r in every})} sources)\n")
    print("row by row (measured / bound, measured / estimate):")
    for r, e in results:
        print(f"  {r['source'][:24]:24} {r['kind']:5} {r['catalogue_model'][:15]:15} "
              f"{r['chip'][:8]:8} n={r['n_chips']} B={r['batch']:<5} "
              f"{r['input_tokens']:>5}/{r['output_tokens']:<5} {r['phase']:8}  "
              f"m/bound {r['measured_s'] / e['bound']:5.2f}  "
              f"m/est {r['measured_s'] / e['estimate']:5.2f}")

    scores = _calibration.score(every, split=None if split == "all" else split)
    print("\n[within 1.3x either way | geometric-mean error | median measured/predicted]")
    print(f"  {'phase':9}{'kind':6}{'rows':>5}   {'estimate':26}{'baseline (LOSO)':26}bound")
    for (phase, kind), s in scores.items():
        cells = "".join(f"{x.within:3d} ({x.share:4.0%}) {x.gm_error:5.2f}x {x.median_ratio:5.2f}  "
                        for x in (s["estimate"], s["baseline"], s["bound"]))
        print(f"  {phase:9}{kind:6}{s['estimate'].n:5d}   {cells}")

    print("\nterm / bound (median over rows; max):")
    for term in _calibration.TERMS[1:]:
        share = np.array([e[term] / e["bound"] for _, e in results])
        print(f"    {term:28s} {np.median(share):5.2f}  (max {share.max():5.2f})")

    print("\n[by engine and kind: measured / estimate]")
    groups = {}
    for r, e in results:
        engine = r["engine"].split(" (")[0]
        groups.setdefault((engine, r["kind"]), []).append(r["measured_s"] / e["estimate"])
    for (engine, kind), ratios in sorted(groups.items()):
        r = np.asarray(ratios)
        f = _calibration.WITHIN_FACTOR
        within = int(((r >= 1 / f) & (r <= f)).sum())
        print(f"  {engine:32s} {kind:5s} {len(r):3d} rows  {_dist(r)}   within: {within}/{len(r)}")


if __name__ == "__main__":
    main()

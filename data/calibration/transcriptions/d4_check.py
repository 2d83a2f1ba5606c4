"""Recompute every d4 row's measured_s from its `reported` text, by the conversion d4.md states.

Both sources print vLLM benchmark_latency.py's "Avg latency: X seconds" for one static batch
(prefill then decode, a `generate` row): measured_s is X. The batch and tensor-parallel degree in
`reported` must match the row's columns.

Run: PYTHONPATH=lib python data/calibration/transcriptions/d4_check.py (exit 1 on any mismatch).
"""
import math
import pathlib
import re
import sys

import llmmath as lm
import llmmath._calibration as cal

PATH = pathlib.Path(__file__).with_name("d4.csv")
NUMBER = r"([0-9]+(?:\.[0-9]+)?)"


def expected(row):
    text = row["reported"]
    if row["source"] == "vllm_pr3240_a100_tp2":
        m = re.fullmatch(r"BS: ([0-9]+), Avg latency: " + NUMBER + " seconds", text)
        assert int(m.group(1)) == row["batch"], (text, row["batch"])
        return float(m.group(2))
    if row["source"] == "vllm_pr4002_mixtral8x22b":
        pattern = r"TP([0-9]+) with config, bs ([0-9]+), Avg latency: " + NUMBER + " seconds"
        m = re.fullmatch(pattern, text)
        assert int(m.group(1)) == row["tp"] and int(m.group(2)) == row["batch"], text
        return float(m.group(3))
    raise KeyError(f"source {row['source']!r}: no conversion known")


def main():
    rows = cal.load(PATH)
    bad = 0
    for i, r in enumerate(rows, start=2):
        lm.models.get(r["catalogue_model"])
        lm.chips.get(r["chip"])
        assert r["tp"] * r["ep"] * r["pp"] == r["n_chips"], f"line {i}: tp x ep x pp != n_chips"
        assert r["phase"] == "generate" and r["split"] == "new", f"line {i}"
        want = expected(r)
        if not math.isclose(r["measured_s"], want, rel_tol=1e-12):
            print(f"line {i}: measured_s {r['measured_s']} but reported gives {want}")
            bad += 1
    print(f"{len(rows)} rows, {bad} mismatches")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Recompute every d4 row's measured_s from its `reported` text, by the conversion d4.md states.

Both sources print vLLM benchmark_latency.py's "Avg latency: X seconds" for one static batch
(prefill then decode, a `generate` row): measured_s is X. The batch and tensor-parallel degree in
`reported` must match the row's columns.

Run: PYTHONPATH=lib python data/calibration/transcriptions/d4_check.py (exit 1 on any mismatch).
"""
import pathlib
import re
import sys

from _transcription import check  # the shared loop, beside this file

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
    return check(PATH, expected, rel_tol=1e-12,
                 row_rule=lambda r: r["phase"] == "generate" and r["split"] == "new")


if __name__ == "__main__":
    sys.exit(main())

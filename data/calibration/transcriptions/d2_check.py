"""Recomputes every row's measured_s in d2.csv from its `reported` text and conditions, by the
conversion d2.md describes for its source; exits non-zero on any mismatch.

Run: PYTHONPATH=lib .venv/bin/python data/calibration/transcriptions/d2_check.py
"""

import math
import pathlib
import re
import sys

from llmmath import _calibration

CSV = pathlib.Path(__file__).with_name("d2.csv")
GPUS_PER_NODE = 8  # the LMSYS blog's nodes: "12 nodes, each with 8 H100 GPUs"


def number(text):
    """The first number printed in `reported`, thousands separators dropped."""
    return float(re.match(r"[\d,]+(\.\d+)?", text).group(0).replace(",", ""))


def expected(r):
    x, rep = number(r["reported"]), r["reported"]
    if rep.endswith("out tok/s/GPU"):  # static batch: batch x output / (tok/s/GPU x GPUs)
        return r["batch"] * r["output_tokens"] / (x * r["n_chips"])
    if rep.endswith("ms 1st token latency"):  # time to first token
        return x / 1000
    if "tokens/s per node" in rep and r["phase"] == "prefill":  # tokens per node per step / rate
        return r["batch"] * r["input_tokens"] / r["n_chips"] * GPUS_PER_NODE / x
    if "tokens/s per node" in rep and r["phase"] == "decode":  # sequences per node / rate
        return r["batch"] / r["n_chips"] * GPUS_PER_NODE / x
    if rep.endswith(" tok/s") and r["batch"] == 1 and r["phase"] == "decode":  # 1 / decode rate
        return 1 / x
    raise ValueError(f"no conversion for reported={rep!r}")


bad = 0
rows = _calibration.load(CSV)
for n, r in enumerate(rows, start=2):
    want = expected(r)
    if not math.isclose(r["measured_s"], want, rel_tol=1e-9):
        bad += 1
        print(f"line {n}: measured_s {r['measured_s']} but {r['reported']!r} gives {want}")
print(f"{len(rows)} rows, {bad} mismatches")
sys.exit(1 if bad else 0)

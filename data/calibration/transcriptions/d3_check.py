"""Check data/calibration/transcriptions/d3.csv: every row loads, names a catalogue model and
chip, and its measured_s follows from its `reported` figure by the conversion d3.md describes.

- rocm_vllm_devdocker_mi300x: "<seconds> s MI300X Latency (sec)" -> measured_s = seconds (a whole
  static batch, phase generate).
- pope2022efficiently: "<seconds>s latency (prefill of 2048 tokens | decode of 64 tokens), MFU <m>%"
  -> prefill: measured_s = seconds; decode: measured_s = seconds / 64 (one step). The printed MFU
  checks the transcription: 2 N tokens / (n_chips x 275 TFLOP/s x seconds), with the paper's
  definition (sec. 2) and the catalogue's parameter count, must come within one point of it for
  some time that rounds to the printed seconds (6.0 s is 5.95 to 6.05 s). One point, not half:
  the paper's FLOP count is not reproduced to the last digit (Table 3's 20.2 s prefill gives 73.6
  to 73.9% against a printed 73%), and a mistyped figure lands far outside anyway.

This never computes the estimate or the bound (the blind rule). Run:
    PYTHONPATH=lib .venv/bin/python data/calibration/transcriptions/d3_check.py
"""

import math
import pathlib
import re

import llmmath as lm
from llmmath import _calibration

CSV = pathlib.Path(__file__).with_name("d3.csv")
TPU_V4_PEAK = 275e12  # FLOP/s per chip, Pope et al. 2022 sec. 4 (bf16 and int8 alike)
DECODE_TOKENS = 64  # Tables 2 and 3 time the generation of 64 tokens


def measured_from_reported(row):
    """(measured_s, printed MFU or None, half a unit of the printed seconds' last digit)
    recomputed from the row's `reported` text."""
    if row["source"] == "rocm_vllm_devdocker_mi300x":
        m = re.fullmatch(r"([0-9.]+) s MI300X Latency \(sec\)", row["reported"])
        return float(m.group(1)), None, None
    if row["source"] == "pope2022efficiently":
        pattern = r"([0-9.]+)s latency \((prefill of 2048|decode of 64) tokens\), MFU (\d+)%"
        m = re.fullmatch(pattern, row["reported"])
        seconds, what, mfu = float(m.group(1)), m.group(2), int(m.group(3))
        half_unit = 0.5 * 10 ** -len(m.group(1).partition(".")[2])
        steps = 1 if what.startswith("prefill") else DECODE_TOKENS
        return seconds / steps, mfu, half_unit
    raise KeyError(f"source {row['source']!r} has no conversion here")


def check():
    rows = _calibration.load(CSV)
    for i, row in enumerate(rows):
        lm.models.get(row["catalogue_model"])
        lm.chips.get(row["chip"])
        assert row["split"] == "new", (i, row["split"])
        assert row["tp"] * row["ep"] * row["pp"] == row["n_chips"], i
        measured, mfu, half_unit = measured_from_reported(row)
        assert math.isclose(row["measured_s"], measured, rel_tol=1e-12), (i, row["measured_s"])
        if mfu is not None:
            n = lm.models.get(row["catalogue_model"]).published_params
            per_sequence = row["input_tokens"] if row["phase"] == "prefill" else DECODE_TOKENS
            tokens = row["batch"] * per_sequence
            seconds = row["measured_s"] * (1 if row["phase"] == "prefill" else DECODE_TOKENS)
            # the MFU over the interval of times that print as `seconds` (slowest, fastest)
            low, high = (100 * 2 * n * tokens / (row["n_chips"] * TPU_V4_PEAK * t)
                         for t in (seconds + half_unit, seconds - half_unit))
            assert low - 1 <= mfu <= high + 1, (i, row["table"], low, high, mfu)
    return rows


if __name__ == "__main__":
    rows = check()
    by_source = {}
    for r in rows:
        by_source[r["source"]] = by_source.get(r["source"], 0) + 1
    print(len(rows), "rows ok:", by_source)

"""Recompute every d1 row's measured_s from its `reported` text, by the conversion d1.md states.

- LLM-Inference-Bench (generate and prefill rows): the figure is the printed latency in seconds
  ("Latency 0.93... s", "latency 0.76... s"): measured_s is that number; for the generate rows the
  printed throughput must equal batch x (input + output) / latency, as the benchmark script
  computes it.
- gpt-fast (decode rows at batch 1): measured_s = 1 / (tokens/s).

Run: PYTHONPATH=lib python data/calibration/transcriptions/d1_check.py (exit 1 on any mismatch).
"""
import math
import pathlib
import re
import sys

from _transcription import check  # the shared loop, beside this file

PATH = pathlib.Path(__file__).with_name("d1.csv")
NUMBER = r"([0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?)"


def expected(row):
    text = row["reported"]
    if row["source"] == "chitty2024llminferencebench":
        latency = float(re.match(r"[Ll]atency " + NUMBER + " s", text).group(1))
        if row["phase"] == "generate":
            tput = float(re.search(r"[Tt]hroughput " + NUMBER + " tok/s", text).group(1))
            tokens = row["batch"] * (row["input_tokens"] + row["output_tokens"])
            assert math.isclose(tokens / latency, tput, rel_tol=1e-9), (text, tokens / latency)
        return latency
    if row["source"] == "gptfast_readme_2024":
        return 1.0 / float(re.match(NUMBER + " tokens/s", text).group(1))
    raise KeyError(f"source {row['source']!r}: no conversion known")


def main():
    return check(PATH, expected, rel_tol=1e-9)


if __name__ == "__main__":
    sys.exit(main())

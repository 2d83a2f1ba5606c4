"""Rebuild the calibration set from its transcriptions.

Usage: ``PYTHONPATH=lib python scripts/merge_calibration.py [--check]``

``lib/llmmath/data/measured_latency.csv`` is the first six sources' rows (kept as they are, all
``fit``: both halves were looked at while the estimate's terms were chosen) followed by every
transcription under ``data/calibration/transcriptions/*.csv`` (one file per batch of sources,
each with its README paragraph ``*.md`` and a ``*_check.py`` that recomputes every
``measured_s`` from the figure the source printed). A transcribed row's ``split`` is its whole
source's, by the rule fixed before any was collected (``data/calibration/README.md``): the first
hex digit of the SHA-256 of the ``source`` key, 0-7 ``fit``, 8-f ``test``. ``--check`` only
compares: exit 1 if the package CSV is not what this script would write.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_CSV = ROOT / "lib" / "llmmath" / "data" / "measured_latency.csv"
TRANSCRIPTIONS = ROOT / "data" / "calibration" / "transcriptions"
#: The sources of the set before issue 32, whose rows this script keeps as they are.
ORIGINAL_SOURCES = ("nvidia_trtllm_perf_v090", "nvidia_nim_llm_benchmarks",
                    "oracle2024mi300x_llama405b", "sglang_v041post2_dsv3",
                    "nvidia_trtllm_dsr1_bestperf", "vllm_nightly_latency")


def split_of(source: str) -> str:
    """The split rule for sources added from issue 32 on: a hash nobody can steer."""
    return "fit" if hashlib.sha256(source.encode("utf-8")).hexdigest()[0] in "01234567" else "test"


def _read(path: Path) -> tuple[list[str], list[dict]]:
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames), list(reader)


def merged() -> str:
    """The package CSV's text, rebuilt."""
    header, rows = _read(PACKAGE_CSV)
    out = [dict(r, split="fit") for r in rows if r["source"] in ORIGINAL_SOURCES]
    for path in sorted(TRANSCRIPTIONS.glob("*.csv")):
        cols, new = _read(path)
        if cols != header:
            raise ValueError(f"{path.name}: columns differ from the package CSV's")
        clash = {r["source"] for r in new} & set(ORIGINAL_SOURCES)
        if clash:
            raise ValueError(f"{path.name}: rows of an original source {sorted(clash)}")
        out += [dict(r, split=split_of(r["source"])) for r in new]
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    w.writeheader()
    w.writerows(out)
    return buf.getvalue()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    text = merged()
    if ap.parse_args(argv).check:
        return 0 if PACKAGE_CSV.read_text(encoding="utf-8") == text else 1
    PACKAGE_CSV.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Record the lab's reference run (data/lab/reference_run.csv) on this machine.

Run it on a quiet machine (nothing else running: the load average is written into the file), with
the sizes the lab measures (book/lab_roofline.ipynb) and more repeats, each the best of its runs:
    .venv/bin/python scripts/record_lab_reference.py
"""

from __future__ import annotations

from pathlib import Path

from llmmath import measure

OUT = Path(__file__).resolve().parents[1] / "data" / "lab" / "reference_run.csv"

if __name__ == "__main__":
    run = measure.roofline_run(matmul_sizes=(64, 128, 256, 512),
                               copy_sizes=(1e6, 4e6, 16e6, 64e6), repeats=20)
    run.to_csv(OUT)
    print(OUT.read_text())

"""Record the lab's reference run (lib/llmmath/data/lab_reference.csv) on this machine.

Both sweeps of the lab (book/lab_roofline.ipynb) at its sizes (``measure.LAB``), with one BLAS
thread (set here before numpy loads), warm-ups discarded and every repeat kept. The file's header
says the CPU, numpy and its BLAS, the threads, the date and the one-minute load average: run it
when ``uptime`` shows a load under about 1.5 (this waits up to ``--wait`` seconds for one):

    .venv/bin/python scripts/record_lab_reference.py [--wait 600] [--threads 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", default="1", help="BLAS threads (default 1, as the lab)")
    ap.add_argument("--wait", type=float, default=600.0,
                    help="seconds to wait for a load average under --load (default 600)")
    ap.add_argument("--load", type=float, default=1.5)
    a = ap.parse_args(argv)
    for v in THREAD_VARIABLES:  # before numpy (imported by llmmath) loads its BLAS
        os.environ[v] = a.threads
    os.environ.pop("LLMMATH_LAB_REPLAY", None)  # measure, never replay

    from llmmath import measure

    assert measure.THREAD_VARIABLES == THREAD_VARIABLES
    deadline = time.monotonic() + a.wait
    while os.getloadavg()[0] >= a.load and time.monotonic() < deadline:
        time.sleep(10)
    run = measure.roofline_sweep() + measure.batch_sweep()
    run.to_csv(measure.REFERENCE)
    roof, ridges = run.roof(), run.ridges()
    print(f"wrote {measure.REFERENCE}: load {run.conditions.get('load_average_1min')}, "
          f"roof {roof.flops:.4g} FLOP/s, {roof.bandwidth:.4g} B/s, ridge {roof.ridge:.3g} "
          f"(repeats {ridges.min():.3g} to {ridges.max():.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The loop every transcription check shares: load the rows, resolve their model and chip, and
compare each row's measured_s with what its `reported` text gives (`expected(row)`)."""

import math

import llmmath as lm
import llmmath._calibration as cal


def check(path, expected, rel_tol, row_rule=None):
    """Print each mismatch and a count; return the exit status (1 on any mismatch).
    ``row_rule(row)``: a further assertion every row must pass (None: none)."""
    rows = cal.load(path)
    bad = 0
    for i, r in enumerate(rows, start=2):
        lm.models.get(r["catalogue_model"])
        lm.chips.get(r["chip"])
        assert r["tp"] * r["ep"] * r["pp"] == r["n_chips"], f"line {i}: tp x ep x pp != n_chips"
        if row_rule is not None:
            assert row_rule(r), f"line {i}"
        want = expected(r)
        if not math.isclose(r["measured_s"], want, rel_tol=rel_tol):
            print(f"line {i}: measured_s {r['measured_s']} but reported gives {want}")
            bad += 1
    print(f"{len(rows)} rows, {bad} mismatches")
    return 1 if bad else 0

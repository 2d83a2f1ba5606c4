"""The lab's measuring module (issue 15): its physics by hand, its timers on a tiny known case,
the committed reference run's shape, and the lab's figure builder."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest

from llmmath import measure
from llmmath.measure import Measurement, RooflineRun

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "data" / "lab" / "reference_run.csv"


def test_the_physics_by_hand():
    # a (2 x 3) @ (3 x 4) matmul: 2 x 3 x 4 = 24 multiply-adds, 48 FLOP
    assert measure.matmul_flops(2, 3, 4) == 48
    # copying 1 MB reads 1 MB and writes 1 MB
    assert measure.copy_bytes(1e6) == 2e6
    # an H100-like roof: 989 TFLOP/s over 3.35 TB/s is a ridge of 295 FLOP/byte
    assert measure.ridge_point(989e12, 3.35e12) == pytest.approx(295.2, abs=0.1)


def test_a_tiny_run_counts_what_it_should():
    """n = 6 in fp32: 2 x 6^3 = 432 FLOP over 3 x 36 x 4 = 432 bytes (intensity 1); a 1000-byte
    copy moves 2000 bytes and does no FLOP."""
    run = measure.roofline_run(matmul_sizes=[6], copy_sizes=[1000], repeats=1)
    mm, cp = run.measurements
    assert (mm.kind, mm.size, mm.flop, mm.nbytes, mm.intensity) == ("matmul", 6, 432, 432, 1)
    assert (cp.kind, cp.size, cp.flop, cp.nbytes) == ("copy", 1000, 0, 2000)
    assert mm.seconds > 0 and cp.seconds > 0
    assert run.flops == mm.flops_per_second and run.bandwidth == cp.bytes_per_second
    assert run.ridge == pytest.approx(run.flops / run.bandwidth)
    assert run.dtype == "fp32" and run.conditions["backend"] == "numpy"
    assert {"cpu", "cores", "numpy", "blas"} <= set(run.conditions)


def test_the_ceilings_are_the_best_matmul_and_the_largest_copy():
    ms = [Measurement("matmul", 64, 100.0, 10.0, 1.0), Measurement("matmul", 128, 800.0, 40.0, 2.0),
          Measurement("copy", 1e6, 0.0, 2e6, 1e-4), Measurement("copy", 1e8, 0.0, 2e8, 0.1)]
    run = RooflineRun.from_measurements(ms, "fp32")
    assert run.flops == 400.0  # 800 FLOP in 2 s beats 100 in 1 s
    assert run.bandwidth == 2e9  # the 100 MB copy (from memory), not the 1 MB one (cache)
    assert run.ridge == pytest.approx(2e-7)
    with pytest.raises(ValueError, match="measurements"):
        RooflineRun.from_measurements(ms[:2], "fp32")


def test_a_run_survives_csv(tmp_path):
    run = measure.roofline_run(matmul_sizes=[8, 16], copy_sizes=[4096], repeats=1)
    run.to_csv(tmp_path / "run.csv")
    back = RooflineRun.from_csv(tmp_path / "run.csv")
    assert back.ridge == pytest.approx(run.ridge, rel=1e-5)
    assert back.conditions["cpu"] == run.conditions["cpu"]
    assert [m.kind for m in back.measurements] == ["matmul", "matmul", "copy"]


def test_the_committed_reference_run_has_the_right_shape():
    run = RooflineRun.from_csv(REFERENCE)
    rows = run.rows()
    assert tuple(rows[0]) == measure.COLUMNS
    assert {r["kind"] for r in rows} == {"matmul", "copy"}
    for r in rows:
        assert r["seconds"] > 0 and r["bytes"] > 0 and r["size"] > 0
        assert (r["flop"] > 0) == (r["kind"] == "matmul")
    assert math.isfinite(run.ridge) and run.ridge > 0
    for key in ("cpu", "cores", "numpy", "blas", "backend", "load_average_1min"):
        assert run.conditions.get(key), key


@pytest.mark.parametrize("kwargs, arg", [
    ({"n": 0}, "n"), ({"n": 2.5}, "n"), ({"n": 10**6}, "n"), ({"n": [64, 128]}, "n"),
    ({"repeats": 0}, "repeats"), ({"backend": "cuda"}, "backend"), ({"backend": 3}, "backend"),
])
def test_bad_timer_arguments_are_refused_by_name(kwargs, arg):
    with pytest.raises((ValueError, TypeError), match=arg):
        measure.time_matmul(**kwargs)


def test_bad_run_arguments_are_refused_by_name(tmp_path):
    with pytest.raises(TypeError, match="matmul_sizes"):
        measure.roofline_run(matmul_sizes=[])
    with pytest.raises(ValueError, match="copy_sizes"):
        measure.roofline_run(copy_sizes=[-1])
    with pytest.raises(ValueError, match="path"):
        RooflineRun.from_csv(tmp_path / "missing.csv")
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="path"):
        RooflineRun.from_csv(tmp_path / "bad.csv")


def _cuda():
    if importlib.util.find_spec("torch") is None:
        return False
    import torch
    return torch.cuda.is_available()


@pytest.mark.skipif(_cuda(), reason="a GPU is present: the torch backend runs")
def test_the_torch_backend_says_why_it_cannot_run():
    with pytest.raises(ValueError, match="backend"):
        measure.time_copy(backend="torch")


@pytest.mark.skipif(not _cuda(), reason="needs PyTorch and a CUDA GPU")
def test_the_torch_backend_measures_a_gpu():
    run = measure.roofline_run(matmul_sizes=[1024, 4096], copy_sizes=[1e8], repeats=3,
                               backend="torch")
    assert run.dtype == "bf16" and run.conditions["gpu"]
    assert run.flops > 1e12 and run.bandwidth > 1e11  # any CUDA GPU of the last decade


def test_the_lab_figure_draws_both_runs():
    from llmmath.plots.hardware import roofline_of_this_machine

    ref = RooflineRun.from_csv(REFERENCE)
    mine = {"flops": 2 * ref.flops, "bandwidth": ref.bandwidth / 2,
            "points": [(10.0, ref.flops, 64)]}
    fig = roofline_of_this_machine(mine, reference=ref)
    ax = fig.axes[0]
    assert len(ax.get_legend().get_texts()) == 2
    assert "ridge" in fig.alt_text and f"{4 * ref.ridge:.3g}" in fig.alt_text

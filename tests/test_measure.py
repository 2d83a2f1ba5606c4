"""The lab's measuring module (issue 34): its physics by hand, the fit and the knee on planted
numbers, the committed reference run (both sides of its ridge, its conditions, served with the
library), the timers' bookkeeping on tiny cases, replay, the figures and the lab's keys.

No test asserts a timing: speed belongs in `make bench`."""

from __future__ import annotations

import fnmatch
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import llmmath
from llmmath import measure
from llmmath.measure import LAB, Op, Roof, Sweep

ROOT = Path(__file__).resolve().parents[1]
K, N = LAB["k"], LAB["n"]


def test_the_physics_by_hand():
    # a (2 x 3) @ (3 x 4) matmul: 2 x 3 x 4 = 24 multiply-adds, 48 FLOP
    assert measure.matmul_flops(2, 3, 4) == 48
    # an H100-like roof: 989 TFLOP/s over 3.35 TB/s is a ridge of 295 FLOP/byte
    assert measure.ridge_point(989e12, 3.35e12) == pytest.approx(295.2, abs=0.1)
    # y += x: 1 FLOP over x, y read and y written, 3 x 4 bytes; y = a x + y: 2 FLOP, 12 bytes
    assert Op("add", 1, 1, 1000).intensity == pytest.approx(1 / 12, rel=1e-12)
    assert Op("add", 1, 1, 1000).nbytes == pytest.approx(12_000, rel=1e-12)
    assert Op("axpy", 1, 1, 1000).intensity == pytest.approx(1 / 6, rel=1e-12)
    # a batch of 1 times 4096 x 4096 fp32 weights: 2 x 4096^2 FLOP over
    # 4 (4096 + 4096^2 + 4096) = 4 x 16,785,408 = 67,141,632 bytes: 0.49976 FLOP/byte
    b1 = Op("matmul", 1, 4096, 4096)
    assert b1.flop == 33_554_432 and b1.nbytes == pytest.approx(67_141_632, rel=1e-12)
    assert b1.intensity == pytest.approx(0.49976, abs=1e-5)
    # a 2048 square: 2 x 2048^3 over 12 x 2048^2 bytes = 2048 / 6 = 341.33 FLOP/byte
    assert Op("matmul", 2048, 2048, 2048).intensity == pytest.approx(341.333, abs=1e-3)


def test_the_knee_prediction_by_hand():
    """(Planted: knee_batch's default bytes_per_element 2 instead of fp32's 4 gives 10 and
    fails.) A roof of 100 GFLOP/s and 10 GB/s has a ridge of 10 FLOP/byte; fp32 weights put
    the knee at about ridge x 4 / 2 = 20. Exactly, (B x 4096) @ (4096 x 4096) reaches 10 FLOP/byte
    where 2 B 4096^2 = 10 x 4 (4096 B + 4096^2 + 4096 B): B = 40 x 4096 / (2 x 4096 - 80)
    = 163,840 / 8,112 = 20.197."""
    roof = Roof(100e9, 10e9)
    assert roof.ridge == pytest.approx(10.0, rel=1e-12)
    assert roof.knee_batch(4096, 4096) == pytest.approx(163_840 / 8_112, rel=1e-9)
    assert roof.knee_batch(4096, 4096) == pytest.approx(20, rel=0.01)  # ridge x b_w / 2
    # bf16 weights halve the knee: 2 B 4096^2 = 10 x 2 (2 x 4096 B + 4096^2) -> B = 10.05
    assert roof.knee_batch(4096, 4096, bytes_per_element=2) == pytest.approx(
        10 * 4096 / (4096 - 20), rel=1e-9)


def test_the_fit_recovers_a_planted_roofline():
    """(Planted: the bandwidth fitted as the best FLOP/s over the largest intensity, or the
    compute ceiling as the median rate, fails.) Points drawn under a roof of 150 GFLOP/s and
    40 GB/s (ridge 3.75), at 30% to 100% of it, with one point on each ceiling."""
    rng = np.random.default_rng(7)
    i = np.geomspace(0.05, 300, 25)
    roof = np.minimum(150e9, 40e9 * i)
    eff = rng.uniform(0.3, 1.0, i.size)
    eff[[2, 20]] = 1.0  # 2: intensity 0.1, on the slope; 20: intensity 74, under the flat roof
    fit = measure.fit_roofline(i, roof * eff)
    assert fit.flops == pytest.approx(150e9, rel=1e-12)
    assert fit.bandwidth == pytest.approx(40e9, rel=1e-12)
    assert fit.ridge == pytest.approx(3.75, rel=1e-12)
    # every point lies on or under the fitted roof
    assert np.all(roof * eff <= np.minimum(fit.flops, fit.bandwidth * i) * (1 + 1e-12))
    with pytest.raises(ValueError, match="intensity, achieved"):
        measure.fit_roofline([1.0, 2.0], [1e9])


def test_the_reference_sweep_crosses_its_own_ridge():
    """(Planted: a reference recorded without the vector operations and batches 1 to 4 fails.)
    On the committed run the ridge is fitted from the points themselves; the sweep must put
    operations well on both sides of it: the vector ops and batch 1 left, the squares and large
    batches right, and the batch sweep walking across."""
    ref = measure.reference_sweep()
    roof = ref.roof()
    x = ref.intensities()
    assert x.min() < roof.ridge / 5 and x.max() > roof.ridge * 5
    assert (x < roof.ridge).sum() >= 3 and (x > roof.ridge).sum() >= 3
    batch = ref.select(op="matmul", k=K, n=N)
    bx = batch.intensities()
    assert bx.min() < roof.ridge < bx.max()
    for o in ref.ops:
        if o.op != "matmul":
            assert o.intensity < roof.ridge, o.label


def test_the_reference_run_is_the_labs_with_its_conditions():
    ref = measure.reference_sweep()
    want = {Op(v, 1, 1, LAB["vector_elements"]) for v in measure.VECTOR_OPS}
    want |= {Op("matmul", s, s, s) for s in LAB["squares"]}
    want |= {Op("matmul", b, K, N) for b in LAB["batches"]}
    assert set(ref.ops) == want
    assert ref.repeats == LAB["repeats"] >= 5
    assert np.all(ref.seconds() > 0)
    c = ref.conditions
    for key in ("cpu", "cores", "numpy", "blas", "blas_threads", "date", "load_average_1min",
                *measure.THREAD_VARIABLES):
        assert c.get(key) not in (None, "", "unset"), key
    assert {c[v] for v in measure.THREAD_VARIABLES} == {str(c["blas_threads"])}  # pinned
    ridges = ref.ridges()
    assert ridges.size == ref.repeats and np.all(ridges > 0)


def test_the_reference_ships_with_the_library():
    """The student edition imports the installed library: the reference must be its package
    data (pyproject's package-data globs), not a file of the repository only."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+ (the compat lane runs 3.10 too)
    here = Path(llmmath.__file__).resolve().parent
    assert measure.REFERENCE.is_file() and measure.REFERENCE.parent == here / "data"
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["llmmath"]
    rel = measure.REFERENCE.relative_to(here).as_posix()
    assert any(fnmatch.fnmatch(rel, g) for g in globs), (rel, globs)


def test_warmups_are_run_and_discarded(monkeypatch):
    """(Planted: timing the warm-ups too gives 5 times and fails.)"""
    calls = []
    monkeypatch.setattr(measure, "_runner", lambda op: (lambda: calls.append(op)))
    times = measure._time(Op("add", 1, 1, 8), repeats=3, warmup=2)
    assert len(calls) == 5 and len(times) == 3 and all(t > 0 for t in times)


def test_a_tiny_sweep_keeps_every_repeat_and_survives_csv(tmp_path, monkeypatch):
    monkeypatch.delenv(measure.REPLAY_VARIABLE, raising=False)
    run = measure.roofline_sweep(vector_elements=1000, squares=[8], repeats=3, warmup=0)
    assert [o.op for o in run.ops] == ["add", "axpy", "matmul"]
    assert run.seconds().shape == (3, 3)
    b = measure.batch_sweep(batches=[1, 2], k=16, n=8, repeats=3, warmup=1)
    both = run + b
    assert both.select(op="matmul", k=16, n=8).ops == b.ops
    both.to_csv(tmp_path / "run.csv")
    back = Sweep.from_csv(tmp_path / "run.csv")
    assert back.ops == both.ops
    np.testing.assert_allclose(back.seconds(), both.seconds(), rtol=1e-5)
    assert back.conditions["blas"] == both.conditions["blas"]


def test_replay_returns_the_reference(monkeypatch):
    """LLMMATH_LAB_REPLAY=1 (the committed notebook) returns the reference's timings."""
    monkeypatch.setenv(measure.REPLAY_VARIABLE, "1")
    ref = measure.reference_sweep()
    got = measure.batch_sweep()
    assert got == ref.select(op="matmul", k=K, n=N) and "replayed" in got.conditions
    with pytest.raises(ValueError, match=measure.REPLAY_VARIABLE):
        measure.batch_sweep(batches=[3])


def test_the_measured_knee_by_hand():
    """Batch 1 takes 2 ms (the weights' read), batch 100 takes 50 ms (0.5 ms a token): the two
    asymptotes cross at B = 2 / 0.5 = 4."""
    sw = Sweep((Op("matmul", 1, 64, 64), Op("matmul", 100, 64, 64)),
               ((2e-3, 2e-3), (50e-3, 50e-3)))
    assert sw.measured_knee(64, 64) == pytest.approx(4.0, rel=1e-12)


@pytest.mark.parametrize("call, arg", [
    (lambda: measure.roofline_sweep(vector_elements=0), "vector_elements"),
    (lambda: measure.roofline_sweep(squares=[]), "squares"),
    (lambda: measure.roofline_sweep(repeats=0), "repeats"),
    (lambda: measure.roofline_sweep(warmup=-1), "warmup"),
    (lambda: measure.batch_sweep(batches=[1, 2.5]), "batches"),
    (lambda: measure.batch_sweep(k=10**6), "k"),
    (lambda: Op("copy", 1, 1, 8), "op"),
    (lambda: Op("add", 2, 1, 8), "m, k"),
    (lambda: Sweep.from_csv("no/such/file.csv"), "path"),
])
def test_bad_arguments_are_refused_by_name(call, arg):
    with pytest.raises((ValueError, TypeError), match=re.escape(arg)):
        call()


def test_the_lab_figures_draw_both_runs_and_both_sides():
    from llmmath import plots

    ref = measure.reference_sweep()
    fig = plots.lab_roofline()
    roof = ref.roof()
    assert fig.numbers["ridge"] == pytest.approx(roof.ridge)
    assert fig.numbers["points_left_of_ridge"] >= 3 and fig.numbers["points_right_of_ridge"] >= 3
    # a reader's run half as fast draws a second roof beside the reference
    slow = Sweep(ref.ops, tuple(tuple(2 * t for t in ts) for ts in ref.times), {})
    fig2 = plots.lab_roofline(slow, reference=ref)
    texts = [t.get_text() for t in fig2.legends[0].get_texts()] if fig2.legends else [
        t.get_text() for t in fig2.axes[0].get_legend().get_texts()]
    assert any(t.startswith("your run") for t in texts)
    assert any(t.startswith("reference run") for t in texts)
    b = plots.lab_batch_sweep()
    assert b.numbers["knee_batch"] == pytest.approx(roof.knee_batch(K, N))
    assert b.numbers["measured_knee"] == pytest.approx(ref.measured_knee(K, N))


def _try_this(nb_path):
    import json

    cells = json.loads(nb_path.read_text(encoding="utf-8"))["cells"]
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    section = text.split("## Try this", 1)[1].split("```", 1)[0]
    return re.findall(r"(?m)^(\d+)\. ", section), text


def test_every_try_this_question_has_a_key_in_the_kit_only():
    """(Planted: a sixth question in the notebook without its key fails.) The instructor kit
    packs problem_sets/lab_keys.py; the notebook (and so the student edition) has the
    questions only."""
    pytest.importorskip("nbformat")  # the kit's toolchain, not the library's (compat lane)
    sys.path.insert(0, str(ROOT / "problem_sets"))
    try:
        import instructor_kit
        import lab_keys
    finally:
        sys.path.remove(str(ROOT / "problem_sets"))
    questions, text = _try_this(ROOT / "book" / "lab_roofline.ipynb")
    keys = lab_keys.keys()
    assert [int(q) for q in questions] == sorted(keys) and len(keys) >= 4
    assert "lab_keys.py" in instructor_kit.GRADER_FILES
    for key in keys.values():  # no key sentence is printed in the lab
        assert key[:60] not in text

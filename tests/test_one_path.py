"""One implementation of each bound, for scalars and arrays alike (issue 29).

``decode_step``, ``prefill_step`` and ``critical_batch`` run the same arithmetic on Python floats
and on arrays. Two things can still differ between a scalar call and an array call: the model's
scalar branch calls Python's ``math`` (``expm1``, ``log1p``, ``exp``) where the array branch calls
numpy, whose SIMD kernels differ from ``math`` by one ulp on some inputs on AVX-512 machines
(none on AVX2-only ones). So the two are compared within a stated number of ulps, never bit
for bit:

- a step's fields: :data:`STEP_ULPS`. One ulp of ``expm1`` in the experts an MoE batch touches
  reaches the weight bytes after a product and a sum; each further operation may round once more.
- a critical batch: :data:`BATCH_ULPS`. Newton's method stops when a step no longer moves B, so
  two paths whose ``h(B)`` differ by an ulp may stop a few roundings apart: over this file's
  cases the largest difference on an AVX-512 machine was 8 ulps (gpt-oss-120b: 2.547378573414276
  against 2.5473785734142798), and 0 under numpy's baseline dispatch; 64 leaves a margin of 8.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import numpy as np
import pytest
from claims import each

from llmmath import _check, chips, models
from llmmath.balance import critical_batch
from llmmath.step import Step, decode_step, prefill_step

# checks physics: make mutate and make unit-baseline run it (tests/conftest.py)
pytestmark = pytest.mark.physics

STEP_ULPS = 8
BATCH_ULPS = 64

MODELS = models.all_models()
CHIPS = [chips.get("H100-SXM"), chips.get("A100-SXM-80GB"), chips.get("B200")]  # fp8 / none / fp4
# 10 FLOP a byte: critical batches of a few dozen, where an MoE's batch touches only some experts
# and Newton's method takes several steps (on real chips it touches every expert at once)
SLOW = chips.Chip(name="slow", flops={"bf16": 1e14}, hbm_bandwidth=1e13, hbm_capacity=80e9)
NUMBERS = [f.name for f in dataclasses.fields(Step)
           if f.name not in ("kind", "overlap", "model", "chip")]
# every token uses every expert; a tied embedding with sliding-window layers; a tied MoE
EXTRA = [models.get("Mixtral-8x7B").replace(name="all-experts", experts_per_token=8),
         models.get("Llama-3-8B").replace(name="tied-sliding", tied_embeddings=True,
                                           sliding_window=1024, n_sliding_layers=16),
         models.get("DeepSeek-V3").replace(name="tied-moe", tied_embeddings=True)]


def _contexts(model):
    top = model.max_context or 131072
    return sorted({c for c in (0, 100, 2047, 40000) if c < top} | {top})


def _agree(scalar, array, ulps=STEP_ULPS):
    """A scalar step's fields are Python floats, within ``ulps`` of a one-element array step's."""
    for name in NUMBERS:
        value = getattr(scalar, name)
        assert type(value) is float, (name, type(value))
        np.testing.assert_array_max_ulp(value, np.ravel(getattr(array, name))[0], maxulp=ulps)
    assert type(scalar.bound) is str
    if scalar.compute_time != scalar.memory_time:  # a tie may go either way by an ulp
        assert scalar.bound == np.ravel(array.bound)[0]


@each("model", MODELS + EXTRA, ids=lambda m: m.name)
def test_a_scalar_decode_step_is_the_array_steps_element(model):
    for chip, batch, context, kv_bytes, overlap, attention in itertools.product(
            CHIPS[:2], (37, 4096.5), _contexts(model), (2, 1), ("step", "per-op"), (True, False)):
        kw = dict(n_chips=8, kv_bytes=kv_bytes, weight_bytes=1, overlap=overlap,
                  attention_flops=attention, kv_replicas=2, compute_efficiency=0.75,
                  memory_efficiency=0.9)
        _agree(decode_step(model, chip, batch, context, **kw),
               decode_step(model, chip, np.array([batch]), np.array([context]), **kw))


@each("model", MODELS + EXTRA, ids=lambda m: m.name)
def test_a_scalar_prefill_step_is_the_array_steps_element(model):
    top = model.max_context or 131072
    # (P, past): a past of one token, one inside a 1,024-token window, and past the window
    prompts = ((1, 0), (512, 0), (300, 1), (300, 50), (top // 4, top // 8 + 1),
               (top // 2, top // 2 - 7))
    for chip, (prompt, past), kv_bytes, overlap, attention in itertools.product(
            CHIPS[1:], prompts, (2, 1), ("step", "per-op"), (True, False)):
        kw = dict(n_chips=4, kv_bytes=kv_bytes, overlap=overlap, attention_flops=attention,
                  dtype="fp4" if chip.name == "B200" else "bf16")
        _agree(prefill_step(model, chip, 3, prompt, past=past, **kw),
               prefill_step(model, chip, np.array([3]), np.array([prompt]),
                            past=np.array([past]), **kw))


@each("model", MODELS + EXTRA, ids=lambda m: m.name)
def test_a_scalar_critical_batch_is_the_arrays_element(model):
    """Over an array Newton's method runs on every element at once: an element that has
    converged stays where it is while the others go on, so each ends where its own scalar
    iteration ends (within the ulps above)."""
    widths = np.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0])
    for chip, context, kv_bytes, attention in itertools.product(
            CHIPS + [SLOW], (0, 100, 3000), (2, 1), (True, False)):
        kw = dict(context=context, kv_bytes=kv_bytes, attention_flops=attention)
        try:
            got = critical_batch(model, chip, widths, **kw)
        except ValueError as exc:  # no critical batch here: each scalar call says the same
            for w in widths:
                with pytest.raises(ValueError) as info:
                    critical_batch(model, chip, float(w), **kw)
                assert str(info.value) == str(exc)
            continue
        scalars = [critical_batch(model, chip, float(w), **kw) for w in widths]
        assert all(type(s) is float for s in scalars)
        np.testing.assert_array_max_ulp(got, scalars, maxulp=BATCH_ULPS)


def test_numpy_scalars_are_scalars():
    """Python and NumPy numbers give the same Python-float step."""
    llama, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    expected = decode_step(llama, h100, 64, 4096, n_chips=8).time
    for batch in (64, 64.0, np.int64(64), np.float64(64.0), np.float32(64.0), np.uint16(64)):
        got = decode_step(llama, h100, batch, np.int32(4096), n_chips=np.int64(8)).time
        assert type(got) is float and got == expected
    assert type(prefill_step(llama, h100, np.float64(2), 512, past=np.int16(100)).time) is float
    assert type(critical_batch(llama, h100, np.float64(2.0), context=np.int64(100))) is float


@pytest.mark.parametrize("bad, error, words", [
    (dict(batch=True), TypeError, "batch"),
    (dict(batch=np.bool_(True)), TypeError, "batch"),
    (dict(batch=0), ValueError, "batch"),
    (dict(batch=float("nan")), ValueError, "batch"),
    (dict(context=-1), ValueError, "context"),
    (dict(context=10**400), OverflowError, "int too large"),
    (dict(context=1e9), ValueError, "supports at most"),
    (dict(n_chips=2.5), ValueError, "whole number"),
    (dict(n_chips=0), ValueError, "n_chips"),
    (dict(n_chips=_check.MAX_CHIPS + 1), ValueError, "n_chips: .* at most"),
    (dict(weight_bytes=9), ValueError, "weight_bytes"),
    (dict(kv_bytes=float("inf")), ValueError, "kv_bytes"),
    (dict(compute_efficiency=1.5), ValueError, "compute_efficiency"),
    (dict(memory_efficiency=0), ValueError, "memory_efficiency"),
    (dict(kv_replicas=-2), ValueError, "kv_replicas"),
    (dict(dtype="fp4"), ValueError, "dtype"),
    (dict(overlap="perop"), ValueError, "overlap"),
    (dict(overlap=None), ValueError, "overlap"),
])
def test_bad_decode_arguments_are_named(bad, error, words):
    kw = dict(model=models.get("Llama-3-70B"), chip=chips.get("H100-SXM"), batch=8, context=1024)
    with pytest.raises(error, match=words):
        decode_step(**{**kw, **bad})


NO_WINDOW = models.get("Llama-3-8B").replace(name="no-window", max_context=None)


@pytest.mark.parametrize("bad, name", [
    (dict(batch=0), "batch"),
    (dict(prompt=0), "prompt"),
    (dict(past=-1), "past"),
    (dict(prompt=10**6), "past + prompt"),  # Llama-3-8B's window is 8,192 tokens
    (dict(n_chips=0), "n_chips"),
    (dict(weight_bytes=0), "weight_bytes"),
    (dict(kv_bytes=0), "kv_bytes"),
    (dict(compute_efficiency=0), "compute_efficiency"),
    (dict(compute_efficiency=1.5), "compute_efficiency"),
    (dict(memory_efficiency=0), "memory_efficiency"),
    (dict(memory_efficiency=1.5), "memory_efficiency"),
    # a model with no context limit: an infinite past is still refused, and so is a product
    # batch x prompt (the step's ``tokens``) that overflows or underflows to zero
    (dict(model=NO_WINDOW, past=float("inf")), "past"),
    (dict(model=NO_WINDOW, batch=1e200, prompt=1e200), "batch x prompt"),
    (dict(batch=1e-200, prompt=1e-200), "batch x prompt"),
])
def test_bad_prefill_arguments_are_named(bad, name):
    kw = dict(model=models.get("Llama-3-8B"), chip=chips.get("H100-SXM"), batch=1, prompt=512)
    with pytest.raises(ValueError) as info:
        prefill_step(**{**kw, **bad})
    assert info.value.args[0].startswith(name), info.value.args[0]


def test_bound_is_read_from_the_two_times():
    llama, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    batch, context = np.array([1.0, 64.0, 4096.0]), np.array([[0.0], [8000.0]])
    step = decode_step(llama, h100, batch, context)
    # by hand: batch 1 reads 141 GB of weights for 141 GFLOP, memory-bound; batch 4096 at no
    # context does 4096 x 141 GFLOP against one weight read, compute-bound (H100: 295 FLOP/B)
    assert step.bound[0, 0] == "memory" and step.bound[0, 2] == "compute"
    assert (step.bound == np.where(step.compute_time >= step.memory_time,
                                   "compute", "memory")).all()
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.bound = "memory"
    # a changed time changes the bound with it: it is never stored apart from the times
    slower = dataclasses.replace(step, compute_time=step.compute_time * 1e6)
    assert (slower.bound == "compute").all()
    assert Step(1.0, 1.0, 1.0, 2.0, 2.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0).bound == "memory"


def test_bound_of_numpy_scalars_is_one_name():
    step = decode_step(models.get("Llama-3-70B"), chips.get("H100-SXM"), 1, 0)
    held = dataclasses.replace(step, compute_time=np.float64(2.0), memory_time=np.float32(1.0))
    assert held.bound == "compute" and type(held.bound) is str


def test_a_tie_is_compute_bound():
    """Exactly at the balance (compute time equal to memory time, the critical batch) the step
    is named compute-bound, as the documentation says (compute_time >= memory_time)."""
    tie = Step(1.0, 0.5, 0.5, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0)
    assert tie.compute_time == tie.memory_time and tie.bound == "compute"
    grid = Step(np.array([1.0, 2.0]), 0.5, 0.5, np.array([1.0, 1.0]), 1.0, 1.0, 1.0, 1.0, 1.0,
                1.0, 1.0)
    assert grid.bound.tolist() == ["compute", "compute"]


def test_the_physics_marker_is_by_rule_and_never_a_browser_test():
    # `make unit-baseline` and `make mutate` run `-m physics`: a chapter's claims and a physics
    # module's own tests, never the browser suite, even where a page test shares a module's name
    # (tests/browser/test_layout.py and llmmath.layout)
    import importlib.util

    tests = Path(__file__).resolve().parent
    # by path: under xdist the name "conftest" can be the browser suite's
    spec = importlib.util.spec_from_file_location("_tests_conftest", tests / "conftest.py")
    conftest = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conftest)
    is_physics_test = conftest.is_physics_test
    assert is_physics_test(tests / "test_claims_bound_to_estimate.py")
    assert is_physics_test(tests / "test_layout.py")  # llmmath.layout's own tests would be
    assert not is_physics_test(tests / "browser" / "test_layout.py")
    assert not is_physics_test(tests / "test_figure_quality.py")

"""The scalar fast paths of decode_step, prefill_step and critical_batch (issue 12).

Scalar arguments that pass every check take a path of plain Python floats that reads the model's
numbers once (``step._scalar_constants``) and repeats the checked path's arithmetic in the same
order. Three things are checked here, over the whole model catalogue and chips with and without
fp8: (1) the fast path gives the same numbers as the vectorised path (one-element arrays) to
1e-12 relative; (2) it gives the checked scalar path's numbers to the last bit (0-d arrays are
not in ``SCALAR_TYPES``, so they take the checked path and reach the model's own methods); (3)
it is taken for Python and NumPy scalars, and bad scalars still get the checked path's errors.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from llmmath import _check, chips, models
from llmmath.balance import critical_batch
from llmmath.step import Step, decode_step, prefill_step

MODELS = models.all_models()
CHIPS = [chips.get("H100-SXM"), chips.get("A100-SXM-80GB"), chips.get("B200")]  # fp8 / none / fp4
# 10 FLOP a byte: critical batches of a few dozen, where an MoE's batch touches only some experts
# and the critical-batch solver takes several Newton steps (on the real chips a catalogue MoE's
# critical batch touches every expert and the first step is the answer)
SLOW = chips.Chip(name="slow", flops={"bf16": 1e14}, hbm_bandwidth=1e13, hbm_capacity=80e9)
# 10^6 FLOP a byte: critical batches of about a million, past every vocabulary (all embedding
# rows read, the read no longer growing with the batch)
FAST = chips.Chip(name="fast", flops={"bf16": 1e18}, hbm_bandwidth=1e12, hbm_capacity=80e9)
NUMBERS = [f.name for f in dataclasses.fields(Step) if f.name not in ("kind", "overlap", "model",
                                                                        "chip", "bound")]
# A model whose every token uses every expert (Model._weight_params_read's k >= E branch), one
# with a tied embedding and sliding-window layers, and an MoE with a tied embedding (its critical
# batch is solved by Newton's method with no embedding rows).
ALL_EXPERTS = models.get("Mixtral-8x7B").replace(name="all-experts", experts_per_token=8)
TIED_SLIDING = models.get("Llama-3-8B").replace(name="tied-sliding", tied_embeddings=True,
                                                 sliding_window=1024, n_sliding_layers=16)
TIED_MOE = models.get("DeepSeek-V3").replace(name="tied-moe", tied_embeddings=True)
EXTRA = [ALL_EXPERTS, TIED_SLIDING, TIED_MOE]


def _contexts(model):
    top = model.max_context or 131072
    return sorted({c for c in (0, 100, 2047, 40000) if c < top} | {top})


def _same(fast, other, rel):
    """Every number of two Steps equal to ``rel`` (0: bit for bit), and the bound the same."""
    for name in NUMBERS:
        a, b = float(np.ravel(getattr(fast, name))[0]), float(np.ravel(getattr(other, name))[0])
        assert type(getattr(fast, name)) is float, name
        if rel == 0:
            assert a == b, (name, a, b)
        else:
            assert a == pytest.approx(b, rel=rel, abs=0), (name, a, b)
    assert fast.bound == str(np.ravel(other.bound)[0])
    assert (fast.kind, fast.overlap) == (other.kind, other.overlap)
    assert fast.model is other.model and fast.chip is other.chip


@pytest.mark.parametrize("model", MODELS + EXTRA, ids=lambda m: m.name)
def test_decode_fast_path_matches_the_checked_and_vectorised_paths(model):
    for chip, batch, context, kv_bytes, overlap, attention in itertools.product(
            CHIPS[:2], (37, 4096.5), _contexts(model), (2, 1), ("step", "per-op"), (True, False)):
        kw = dict(n_chips=8, kv_bytes=kv_bytes, weight_bytes=1, overlap=overlap,
                  attention_flops=attention, kv_replicas=2, compute_efficiency=0.75,
                  memory_efficiency=0.9)
        fast = decode_step(model, chip, batch, context, **kw)
        _same(fast, decode_step(model, chip, np.array(float(batch)), context, **kw), 0)
        _same(fast, decode_step(model, chip, np.array([batch]), np.array([context]), **kw), 1e-12)


@pytest.mark.parametrize("model", MODELS + EXTRA, ids=lambda m: m.name)
def test_prefill_fast_path_matches_the_checked_and_vectorised_paths(model):
    top = model.max_context or 131072
    # (P, past): a past of one token, one inside a 1,024-token window, and past the window
    prompts = ((1, 0), (512, 0), (300, 1), (300, 50), (top // 4, top // 8 + 1),
               (top // 2, top // 2 - 7))
    for chip, batch, (prompt, past), kv_bytes, overlap, attention in itertools.product(
            CHIPS[1:], (3,), prompts, (2, 1), ("step", "per-op"), (True, False)):
        kw = dict(n_chips=4, kv_bytes=kv_bytes, overlap=overlap, attention_flops=attention,
                  past=past, dtype="fp4" if chip.name == "B200" else "bf16")
        fast = prefill_step(model, chip, batch, prompt, **kw)
        _same(fast, prefill_step(model, chip, batch, np.array(float(prompt)), **kw), 0)
        vec = dict(kw, past=np.array([past]))
        _same(fast, prefill_step(model, chip, np.array([batch]), np.array([prompt]), **vec), 1e-12)


@pytest.mark.parametrize("model", MODELS + EXTRA, ids=lambda m: m.name)
def test_critical_batch_fast_path_matches_the_checked_and_vectorised_paths(model):
    for chip, context, kv_bytes, weight_bytes, overlap, attention in itertools.product(
            CHIPS + [SLOW, FAST], (0, 100, 3000), (2, 1), (2, 0.5), ("step", "per-op"),
            (True, False)):
        kw = dict(context=context, kv_bytes=kv_bytes, overlap=overlap, attention_flops=attention)
        try:
            fast = critical_batch(model, chip, weight_bytes, **kw)
        except ValueError:  # no critical batch here: the checked path must say so too
            with pytest.raises(ValueError):
                critical_batch(model, chip, np.array(float(weight_bytes)), **kw)
            continue
        assert type(fast) is float
        assert fast == critical_batch(model, chip, np.array(float(weight_bytes)), **kw)
        vec = critical_batch(model, chip, np.array([weight_bytes]), **kw)
        assert fast == pytest.approx(float(vec[0]), rel=1e-12, abs=0)


@pytest.mark.parametrize("model", [m for m in MODELS if m.is_moe], ids=lambda m: m.name)
def test_critical_batch_over_an_array_is_each_elements_scalar_answer(model):
    """Over an array of weight widths Newton's method runs on every element at once: an element
    that has converged must stay where it is while the others go on, so each element ends where
    its own scalar iteration ends, to the last bit."""
    widths = np.array([0.25, 0.5, 1.0, 2.0, 4.0, 8.0])
    for chip in (SLOW, CHIPS[1]):
        try:
            got = critical_batch(model, chip, widths)
        except ValueError:  # no critical batch on this chip
            continue
        assert got.tolist() == [critical_batch(model, chip, float(w)) for w in widths]


def test_the_fast_path_is_taken_for_python_and_numpy_scalars(monkeypatch):
    """With the checked path's checks made to fail, plain scalars still get their bound."""
    llama, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    expected = decode_step(llama, h100, 64, 4096, n_chips=8).time

    def refuse(*args, **kwargs):
        raise AssertionError("the checked path ran")

    for module in ("llmmath.step", "llmmath.balance"):
        monkeypatch.setattr(f"{module}.positive", refuse)
    for batch in (64, 64.0, np.int64(64), np.float64(64.0), np.float32(64.0), np.uint16(64)):
        assert decode_step(llama, h100, batch, np.int32(4096), n_chips=np.int64(8)).time == expected
    prefill_step(llama, h100, np.float64(2), 512, past=np.int16(100))
    critical_batch(llama, h100, np.float64(2.0), context=np.int64(100))


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
def test_bad_scalars_get_the_checked_paths_errors(bad, error, words):
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
    (dict(model=NO_WINDOW, batch=1e200, prompt=1e200), "tokens"),
    (dict(batch=1e-200, prompt=1e-200), "tokens"),
])
def test_bad_prefill_scalars_get_the_checked_paths_errors(bad, name):
    kw = dict(model=models.get("Llama-3-8B"), chip=chips.get("H100-SXM"), batch=1, prompt=512)
    with pytest.raises(ValueError) as info:
        prefill_step(**{**kw, **bad})
    assert info.value.args[0].startswith(name), info.value.args[0]


def test_bound_over_arrays_is_worked_out_when_first_read():
    """Step.bound over a grid is computed on first read: the same names as computing it at once."""
    llama, h100 = models.get("Llama-3-70B"), chips.get("H100-SXM")
    batch, context = np.array([1.0, 64.0, 4096.0]), np.array([[0.0], [8000.0]])
    step = decode_step(llama, h100, batch, context)
    expected = np.where(np.asarray(step.compute_time) >= np.asarray(step.memory_time),
                        "compute", "memory")
    # by hand: batch 1 reads 141 GB of weights for 141 GFLOP, memory-bound; batch 4096 at no
    # context does 4096 x 141 GFLOP against one weight read, compute-bound (H100: 295 FLOP/B)
    assert step.bound[0, 0] == "memory" and step.bound[0, 2] == "compute"
    assert step.bound.dtype == expected.dtype and (step.bound == expected).all()
    assert step.bound is step.bound  # kept once worked out
    # what the API reference shows for the field
    assert vars(Step)["bound"].__doc__.startswith('``"compute"`` or ``"memory"``: the resource')
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.bound = "memory"
    assert (dataclasses.replace(step, n_chips=2.0).bound == expected).all()
    import pickle

    assert (pickle.loads(pickle.dumps(decode_step(llama, h100, batch, 0))).bound
            == np.array(["memory", "memory", "compute"])).all()
    with pytest.raises(TypeError, match="bound"):  # still a required field
        Step(1.0, 1.0, 1.0, 1.0, 1.0)
    assert Step(1.0, 1.0, 1.0, 1.0, 1.0, "memory", 1.0, 1.0, 1.0, 1.0, 1.0, 1.0).bound == "memory"


@pytest.mark.parametrize("model", MODELS + EXTRA, ids=lambda m: m.name)
def test_every_valid_scalar_call_takes_the_fast_path(model, monkeypatch):
    """A fast path that declines a valid call still gives the right number (the checked path
    answers), only slower: so refuse the checked path and call at the edges of every range
    (byte widths 0.5 to the largest, context 0 to the model's window, one and many chips)."""
    top = model.max_context or 131072
    big = _check.MAX_BYTES_PER_ELEMENT
    cases = []
    for chip, S, (wb, kb), attention in itertools.product(
            CHIPS[:2], (0, 1, top), ((big, big), (1, 1), (0.5, 2)), (True, False)):
        cases.append(("decode", chip, dict(batch=3, context=S, weight_bytes=wb, kv_bytes=kb,
                                           attention_flops=attention, n_chips=8,
                                           compute_efficiency=1.0, memory_efficiency=1.0)))
        cases.append(("prefill", chip, dict(batch=1, prompt=max(S, 1) - (S == top),
                                            past=int(S == top), weight_bytes=wb, kv_bytes=kb,
                                            attention_flops=attention,
                                            n_chips=1 if S else _check.MAX_CHIPS)))
        kw = dict(weight_bytes=wb, kv_bytes=kb, context=S, attention_flops=attention)
        try:
            critical_batch(model, chip, **kw)
        except ValueError:  # memory-bound at every batch here: no fast path to take
            continue
        cases.append(("critical", chip, kw))
    expected = [_call(model, chip, kind, kw) for kind, chip, kw in cases]

    def refuse(*args, **kwargs):
        raise AssertionError("the checked path ran")

    for module in ("llmmath.step", "llmmath.balance"):
        monkeypatch.setattr(f"{module}.positive", refuse)
    for (kind, chip, kw), want in zip(cases, expected, strict=True):
        assert _call(model, chip, kind, kw) == want, (kind, chip.name, kw)


def test_a_critical_batch_with_under_a_byte_of_slack_takes_the_fast_path(monkeypatch):
    """Just inside the critical context a sequence leaves under a byte of slack a step; that
    is still a critical batch, and the fast path finds it. On this chip a token's matmuls and
    100 tokens of Llama-3-8B's cache take 1 s each: 2^-20 tokens inside, 1/8 byte of slack."""
    l8 = models.get("Llama-3-8B")
    edge = chips.Chip(name="edge", flops={"bf16": 2.0 * l8.matmul_params_active},
                      hbm_bandwidth=100 * l8.kv_bytes_per_token(2), hbm_capacity=80e9)
    kw = dict(context=100.0 - 2.0**-20, attention_flops=False)
    want = critical_batch(l8, edge, 1.0, **kw)

    def refuse(*args, **kwargs):
        raise AssertionError("the checked path ran")

    monkeypatch.setattr("llmmath.balance.positive", refuse)
    assert critical_batch(l8, edge, 1.0, **kw) == want


def _call(model, chip, kind, kw):
    if kind == "decode":
        return decode_step(model, chip, **kw).time
    if kind == "prefill":
        return prefill_step(model, chip, **kw).time
    return critical_batch(model, chip, **kw)

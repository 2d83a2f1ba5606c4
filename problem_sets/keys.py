"""The answer keys of the problem sets, computed by the library at grading time.

This file ships with the autograder only (``autograder_files`` in each set's ASSIGNMENT
CONFIG), never to students. ``key(part, question, seed)`` is the expected value;
``grade(part, question, seed, answer)`` is what each hidden test calls: it passes when
``llmmath.exercises.check`` says "right" (within 5%) and otherwise fails with check's verdict,
slip hint included, which the student reads in the graded report. The solutions in the source
notebooks work by hand from the catalogue's fields, not through these calls, so a solution that
passes is a second, independent computation of each key.
"""

from __future__ import annotations

from pset import problem

import llmmath as lm
from llmmath import collectives, moe, pipeline, training
from llmmath.exercises import check

DAY = 86400.0


def _part1(q, p):
    chip, model = lm.chip(p.chip), lm.model(p.model)
    if q == "q1":  # seconds to read the whole HBM once
        return chip.hbm_capacity / chip.hbm_bandwidth
    if q == "q2":  # square bf16 matmul whose intensity (linear in n) reaches the ridge
        return chip.ops_per_byte("bf16") / lm.intensity.arithmetic_intensity(1, 1, 1)
    if q == "q3":
        return model.total_params
    if q == "q4":  # tokens of KV cache that fit beside the bf16 weights
        free = p.n_chips * chip.hbm_capacity - 2 * model.total_params
        return free / model.kv_bytes_per_token(bytes_per_element=p.kv_bytes)
    raise KeyError(q)


def _part2(q, p):
    chip, model = lm.chip(p.chip), lm.model(p.model)
    step = lm.decode_step(model, chip, batch=p.batch, context=p.context, n_chips=p.n_chips)
    if q == "q1":
        return lm.cost.tokens_per_second(step)
    if q == "q2":
        return lm.cost.cost_per_million_tokens(step)
    if q == "q3":  # the context at which the KV reads take as long as the weight reads
        return p.context * step.weight_time / step.kv_time  # kv_time is linear in context
    if q == "q4":
        return lm.prefill_step(model, chip, batch=1, prompt=p.prompt, n_chips=p.n_chips).time
    raise KeyError(q)


def _part3(q, p):
    chip, model = lm.chip(p.chip), lm.model(p.model)
    if q == "q1":  # tensor parallelism: two all-reduces of the activations per layer
        per = collectives.collective_time("all-reduce", p.batch * model.d_model * 2, p.tp_chips,
                                          p.link_bandwidth, p.hop_latency, topology="switch")
        return 2 * model.n_layers * per
    if q == "q2":  # bytes of weights one decode step must read at this batch, bf16
        return 2 * model.weight_params_read(tokens=p.batch)
    if q == "q3":
        return pipeline.hop_time(p.micro_batch, model.d_model, p.scale_out_bandwidth,
                                 latency=p.stage_latency)
    if q == "q4":
        return moe.compute_cost_per_million_tokens(model.active_params, chip,
                                                   compute_efficiency=p.compute_efficiency)
    raise KeyError(q)


def _part4(q, p):
    chip, model = lm.chip(p.chip), lm.model(p.model)
    if q == "q1":  # chips (unrounded) that train on p.tokens in p.days at p.mfu
        one_chip = lm.training.training_time(model, p.tokens, chip, n_chips=1, mfu=p.mfu)
        return one_chip / (p.days * DAY)
    if q == "q2":
        return training.compute_optimal_model(p.compute)[0]
    if q == "q3":
        return training.zero_memory_per_chip(model, p.dp_chips, zero_stage=p.zero_stage)
    if q == "q4":  # inference compute over pre-training compute
        served = p.tokens_per_second * p.serve_days * DAY
        return 2 * model.active_params * served / training.training_flops(model, p.tokens)
    raise KeyError(q)


_PARTS = {"part1": _part1, "part2": _part2, "part3": _part3, "part4": _part4}
QUESTIONS = ("q1", "q2", "q3", "q4")  # a part's questions
_WEEK_KEYS = {}  # week -> (its questions, key(q, p)), registered by @_week below


def _week(name, questions=("q1", "q2", "q3")):
    """Register a week's keys: ``key(q, p)`` answers question ``q`` of variant ``p``."""
    def register(fn):
        _WEEK_KEYS[name] = (tuple(questions), fn)
        return fn
    return register


# ---- weeks 1-6 (chapters 1-6), registered with @_week("weekNN") ----


# ---- weeks 7-12 (chapters 7-13) ----


def questions(part: str) -> tuple[str, ...]:
    """The question names of a set: q1-q4 for a part, a week's own list for a week."""
    if part in _PARTS:
        return QUESTIONS
    if part in _WEEK_KEYS:
        return _WEEK_KEYS[part][0]
    raise KeyError(f"part: got {part!r}; allowed values are "
                   f"{', '.join(tuple(_PARTS) + tuple(_WEEK_KEYS))}")


def key(part: str, question: str, seed: int) -> float:
    """The expected answer to ``question`` of ``part``'s variant ``seed`` (SI units)."""
    if question not in questions(part):
        raise KeyError(f"question: got {question!r}; {part} has {', '.join(questions(part))}")
    p = problem(part, seed)
    if part in _WEEK_KEYS:
        return float(_WEEK_KEYS[part][1](question, p))
    return float(_PARTS[part](question, p))


def grade(part: str, question: str, seed: int, answer) -> None:
    """A hidden test: passes when check says "right", else fails with check's verdict."""
    verdict = check(answer, key(part, question, seed), quiet=True)
    assert verdict == "right", f"{question}: {verdict}"

"""The answer keys of the problem sets, computed by the library at grading time.

This file ships with the autograder only (``autograder_files`` in each set's ASSIGNMENT
CONFIG), never to students. ``key(part, question, seed)`` is the expected value;
``grade(part, question, seed, answer)`` is what each hidden test calls: it passes when
``llmmath.exercises.check`` says "right" (within ``pset.TOLERANCE``, the course guide's 10%) and
otherwise fails with check's verdict, slip hint included. The grader (grader.py) computes the same
keys in its own process; these hidden tests serve ``otter grade`` in its container. The solutions
in the source notebooks work by hand from the catalogue's fields, not through these calls, so a
solution that passes is a second, independent computation of each key.
"""

from __future__ import annotations

from pset import TOLERANCE, problem

import llmmath as lm
from llmmath import collectives, layout, moe, pipeline, training
from llmmath._solve import bisect  # the library's one root-finder (increasing f)
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
    if q == "q5":  # the estimate's kernel launches over the bound's step (batch, no context)
        est = lm.estimate.estimate_step(model, chip, p.batch, 0, n_chips=p.tp_chips)
        return est.layer_overhead_time / est.bound.time
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
    if q == "q5":  # the pipeline sends of one step (interleaved, micro-batches of one sequence)
        lay = layout.Layout(dp=p.layout_dp, tp=p.layout_tp, pp=p.layout_pp,
                            schedule="interleaved", virtual_stages=p.layout_v)
        cluster = layout.Cluster(lm.chip(p.layout_chip), lay.n_chips)
        return layout.step_time(model, lay, cluster, p.layout_dp * p.micro_batches,
                                p.sequence_length).pp
    raise KeyError(q)


_PARTS = {"part1": _part1, "part2": _part2, "part3": _part3, "part4": _part4}
QUESTIONS = ("q1", "q2", "q3", "q4")  # a part's questions
# parts 3 and 4 ask a fifth: chapter 10 (bound_to_estimate) and chapter 12 (training_layout)
_PART_QUESTIONS = {"part3": QUESTIONS + ("q5",), "part4": QUESTIONS + ("q5",)}
_WEEK_KEYS = {}  # week -> (its questions, key(q, p)), registered by @_week below


def _week(name, questions=("q1", "q2", "q3")):
    """Register a week's keys: ``key(q, p)`` answers question ``q`` of variant ``p``."""
    def register(fn):
        _WEEK_KEYS[name] = (tuple(questions), fn)
        return fn
    return register


# ---- weeks 1-6 (chapters 1-6), registered with @_week("weekNN") ----


def _linear_in_batch(model, chip, context, n_chips, **kw):
    """(memory a + b B, compute c B) of a dense model's decode step, from two library steps."""
    one = lm.decode_step(model, chip, 1, context, n_chips=n_chips, **kw)
    two = lm.decode_step(model, chip, 2, context, n_chips=n_chips, **kw)
    b = two.memory_time - one.memory_time
    return one.memory_time - b, b, one.compute_time


@_week("week01", questions=("q1", "q2", "q3", "q4"))
def _week01(q, p):
    chip, model = lm.chip(p.chip), lm.model(p.model)
    if q == "q1":  # FLOP per element that bring an element-wise kernel to the bf16 ridge
        return chip.ops_per_byte("bf16") / lm.intensity.elementwise_intensity(
            1, inputs=p.inputs, outputs=1)
    if q == "q2":  # weight-only 1-byte quantisation: the up-projection's ridge batch
        return lm.intensity.matmul_ridge_batch(chip, model.d_model, model.d_ff, weight_bytes=1)
    if q == "q3":  # an unfused SiLU-and-multiply kernel over the two projections' time
        B, D, F = p.batch, model.d_model, model.d_ff
        proj_flops = 2 * B * D * F
        proj = proj_flops / lm.intensity.attainable_flops(
            chip, lm.intensity.arithmetic_intensity(B, D, F))
        act = lm.intensity.elementwise_intensity(4, inputs=2, outputs=1)
        return (4 * B * F / lm.intensity.attainable_flops(chip, act)) / (2 * proj)
    if q == "q4":  # the largest square bf16 matmul whose three matrices fill the HBM
        n = (chip.hbm_capacity / 6) ** 0.5
        flops = 2 * n**3
        return flops / lm.intensity.attainable_flops(chip,
                                                     lm.intensity.arithmetic_intensity(n, n, n))
    raise KeyError(q)


@_week("week02")
def _week02(q, p):
    model, moe_model = lm.model(p.model), lm.model(p.moe)
    if q == "q1":  # attention's share of one layer's weights
        attn = model.attention_params_per_layer
        return attn / (attn + model.dense_mlp_params)
    if q == "q2":  # most full-attention layers (the rest windowed) within the cache budget
        for full in range(model.n_layers, -1, -1):
            hybrid = model.replace(sliding_window=p.window,
                                   n_sliding_layers=model.n_layers - full)
            if hybrid.kv_cache_bytes(p.context) <= p.kv_budget:
                return full
    if q == "q3":  # forward FLOPs of one MoE token at a context
        return moe_model.flops_per_token(p.moe_context)
    raise KeyError(q)


@_week("week03")
def _week03(q, p):
    model, chip = lm.model(p.model), lm.chip(p.chip)
    if q == "q1":
        return lm.critical_batch(model, chip, context=p.short_context)
    if q == "q2":  # chips (unrounded) for the step bound to meet the target: both terms go as 1/n
        return lm.decode_step(model, chip, p.batch, p.context).time / p.step_target
    if q == "q3":  # fp8 weights and arithmetic (bf16 cache) against bf16
        fp8 = lm.chip(p.fp8_chip)
        kw = dict(n_chips=p.n_chips)
        bf16 = lm.decode_step(model, fp8, p.batch, p.context, **kw)
        quant = lm.decode_step(model, fp8, p.batch, p.context, weight_bytes=1, dtype="fp8", **kw)
        return bf16.time / quant.time
    raise KeyError(q)


@_week("week04")
def _week04(q, p):
    model, chip = lm.model(p.model), lm.chip(p.chip)
    n = p.n_chips
    if q == "q1":  # price at the largest whole batch that keeps the promise and fits
        target = 1 / p.user_speed
        a, b, c = _linear_in_batch(model, chip, p.context, n)
        on_time = int(min((target - a) / b, target / c))  # whole sequences, rounded down
        batch = min(on_time, lm.max_batch(model, chip, p.context, n_chips=n))
        return lm.cost.cost_per_million_tokens(lm.decode_step(model, chip, batch, p.context,
                                                              n_chips=n))
    if q == "q2":  # per-user speed-up of speculative decoding at this batch
        spec = lm.speculative.speculative_step(model, chip, p.batch, p.context, p.draft_tokens,
                                               p.acceptance, n_chips=n)
        plain = lm.decode_step(model, chip, p.batch, p.context, n_chips=n)
        per_seq = lm.speculative.speculative_tokens_per_step(p.draft_tokens, p.acceptance)
        return per_seq * plain.time / spec.time
    if q == "q3":  # per-user speed with the HBM full of caches
        batch = lm.max_batch(model, chip, p.full_context, n_chips=n)
        return 1 / lm.decode_step(model, chip, batch, p.full_context, n_chips=n).time
    raise KeyError(q)


@_week("week05")
def _week05(q, p):
    model, chip = lm.model(p.model), lm.chip(p.chip)
    if q == "q1":  # chips (unrounded) whose HBM holds the weights and the caches
        return lm.capacity.memory_held(model, p.batch, p.context) / chip.hbm_capacity
    if q == "q2":  # fp8 weights and cache against bf16: how many more sequences fit
        fp8 = lm.max_batch(model, chip, p.fp8_context, n_chips=p.n_chips, weight_bytes=1,
                           kv_bytes=1)
        return fp8 / lm.max_batch(model, chip, p.fp8_context, n_chips=p.n_chips)
    if q == "q3":  # the longest context at which the critical batch still fits
        return lm.max_context(model, chip, lm.critical_batch(model, chip), n_chips=p.n_chips)
    raise KeyError(q)


@_week("week06")
def _week06(q, p):
    model, chip = lm.model(p.model), lm.chip(p.chip)
    if q == "q1":  # long-context price multiple, per-operation reading, attention FLOPs left out
        long = lm.model(p.long_model)
        corner = lm.prices.kv_bytes_from_price_step(long.active_params, p.long_context,
                                                    chip.ops_per_byte("bf16"))
        return 1 + long.kv_bytes_per_token(p.kv_bytes) / corner
    if q == "q2":  # per-chip link bandwidth that ships the prompt's cache in its prefill time
        nbytes = lm.memory.kv_transfer_time(model, p.prompt, 1.0)  # seconds at 1 byte/s
        prefill = lm.prefill_step(model, chip, 1, p.prompt, n_chips=p.n_chips).time
        return nbytes / prefill / p.n_chips
    if q == "q3":  # output over input price on one replica
        return lm.cost.input_output_cost(model, chip, p.prompt, p.batch, p.context,
                                         n_chips=p.n_chips).output_to_input
    raise KeyError(q)


# ---- weeks 7-12 (chapters 7-13) ----


@_week("week07")
def _week07(q, p):
    chip, model = lm.chip(p.chip), lm.model(p.model)
    if q == "q1":  # chips whose HBM holds every expert, kv_fraction kept for the cache
        one = moe.max_total_params(chip, n_chips=1, weight_bytes=p.weight_bytes,
                                   kv_fraction=p.kv_fraction)
        return -(-model.total_params // one)  # rounded up
    if q == "q2":  # the sparsity at which both of the episode's bounds bind on one node
        total = moe.max_total_params(chip, n_chips=8, weight_bytes=p.weight_bytes,
                                     kv_fraction=p.kv_fraction)
        return total / moe.max_active_params(chip, p.cost_per_million_tokens,
                                             compute_efficiency=p.compute_efficiency)
    if q == "q3":  # fp8 weight bytes per chip with redundant experts
        return moe.expert_placement(model, p.ep_chips, redundant_experts=p.redundant_experts,
                                    weight_bytes=1).weight_bytes_per_chip
    raise KeyError(q)


@_week("week08")
def _week08(q, p):
    if q == "q1":  # interleaved 1F1B: the step is the work over its busy share
        work = p.micro_batches * 3 * p.forward_time
        return work / (1 - pipeline.bubble_fraction(p.stages, p.micro_batches, "interleaved",
                                                    p.virtual_stages))
    if q == "q2":  # longest context with P micro-batches in flight (memory is linear in it)
        model, chip = lm.model(p.model), lm.chip(p.chip)
        # the question splits every weight evenly over a stage's chips (replicated_params=0)
        one = pipeline.pipeline_memory(model, p.micro_batch, 1, 8, p.pp_stages,
                                       replicated_params=0)
        return (chip.hbm_capacity - one.weights) / one.kv
    if q == "q3":  # pipelined time between tokens over the same chips' one-domain step
        model, chip = lm.model(p.dense_model), lm.chip(p.gpu)
        pipe = pipeline.pipeline_decode(model, chip, p.decode_micro_batch, p.context, 8,
                                        p.pp_racks, hop_latency=p.hop_latency)
        one = lm.decode_step(model, chip, p.decode_micro_batch, p.context,
                             n_chips=8 * p.pp_racks)
        return pipe.token_latency / one.time
    raise KeyError(q)


@_week("week09")
def _week09(q, p):
    if q == "q1":  # an all-to-all on a 3D torus
        n = p.torus[0] * p.torus[1] * p.torus[2]
        return collectives.collective_time("all-to-all", p.buffer_bytes, n,
                                           lm.chip(p.tpu).scale_up_bandwidth, p.hop_latency,
                                           topology="torus", dims=p.torus)
    if q == "q2":  # degree where the all-reduces' fixed cost equals the weight read (batch 1)
        model, chip = lm.model(p.dense_model), lm.chip(p.gpu)
        one_chip = lm.decode_step(model, chip, 1, 1).weight_time
        fixed = collectives.collective_time("all-reduce", 0.0, 2, chip.scale_up_bandwidth,
                                            p.switch_latency, topology="switch")
        return one_chip / (2 * model.n_layers * fixed)
    if q == "q3":  # weight-gathered feed-forward layers at their best group size, all layers
        model = lm.model(p.ffn_model)
        one = lm.parallel.ffn_comm_time("wg-opt", p.tokens, model.d_model, model.d_ff,
                                        p.n_chips, lm.chip(p.tpu).scale_up_bandwidth,
                                        n_mats=3 if model.gated_mlp else 2)
        return model.n_layers * one
    raise KeyError(q)


@_week("week10")
def _week10(q, p):
    if q == "q1":  # the estimate of a tensor-parallel decode step, default coefficients
        model, chip = lm.model(p.model), lm.chip(p.chip)
        return lm.estimate.estimate_step(model, chip, p.batch, p.context,
                                         n_chips=p.n_chips).time
    if q == "q2":  # batch at which a layer touches touched_share of its routed experts
        model = lm.model(p.moe_model)

        def gap(b):  # expected share of experts touched at batch b, over the target
            return model.experts_touched(b) / model.n_experts - p.touched_share
        return bisect(gap, 1e-9, 1e6)
    if q == "q3":  # the estimate's expert-parallel all-to-all term
        model, chip = lm.model(p.ep_model), lm.chip(p.ep_chip)
        return lm.estimate.estimate_step(model, chip, p.ep_batch, 1024, n_chips=p.ep_chips,
                                         expert_parallel=p.ep_chips).ep_comm_time
    raise KeyError(q)


@_week("week11", questions=("q1", "q2", "q3", "q4", "q5", "q6", "q7"))
def _week11(q, p):
    model, chip = lm.model(p.model), lm.chip(p.chip)
    if q == "q1":  # sequence length at which attention takes attention_share of training FLOPs
        def gap(s):  # attention's share of the training FLOPs at length s, over the target
            return training.attention_training_share(model, s) - p.attention_share
        return bisect(gap, 1.0, float(model.max_context))
    if q == "q2":  # tokens of selective-recompute activations beside the ZeRO-3 state
        left = chip.hbm_capacity - training.zero_memory_per_chip(model, p.dp_chips, zero_stage=3)
        return left / training.activation_memory(model, 1, 2048, recompute="selective")
    # the problem's network: one flat ring, every chip on its own scale-out port (chapter 9's
    # all-reduce), 1.5 times the traffic under ZeRO-3; not training.dp_gradient_sync_time, whose
    # scale-out default pools each server's ports behind an NVLink phase
    sync = (lm.parallel.all_reduce_time(model.total_params * 2, p.dp_chips,
                                        chip.scale_out_bandwidth)
            * (1.5 if p.zero_stage == 3 else 1.0))
    if q == "q3":
        return sync
    if q == "q4":  # the MFU a step reports when its traffic does not overlap compute
        step = (training.dp_compute_time(model, chip, p.tokens_per_chip, mfu=p.busy_efficiency)
                + sync)
        return training.mfu(model, p.tokens_per_chip * p.dp_chips, step, chip,
                            n_chips=p.dp_chips)
    # q5-q7: chapter 12 (training_layout), a dense model on TP x PP x DP, 1F1B, micro-batch 1
    big = lm.model(p.layout_model)
    lay = layout.Layout(dp=p.layout_dp, tp=p.layout_tp, pp=p.layout_pp, zero_stage=p.layout_zero)
    if q == "q5":  # first-stage bytes per chip: training state and activations in flight
        return layout.memory_per_chip(big, lay, p.sequence_length).total
    if q == "q6":  # one step's tensor-parallel all-reduces on a chip
        cluster = layout.Cluster(lm.chip(p.layout_chip), lay.n_chips)
        return layout.step_time(big, lay, cluster, p.layout_dp * p.micro_batches,
                                p.sequence_length).tp
    if q == "q7":  # goodput at Daly's interval, Llama 3's interruption rate per GPU
        li = layout.LLAMA3_INTERRUPTIONS
        mtbf = li["days"] * DAY * li["gpus"] / (li["unexpected"] * p.job_chips)
        write = training.zero_memory_per_chip(big, 1, zero_stage=0) / p.storage_bandwidth
        return layout.goodput(layout.checkpoint_interval(mtbf, write, "daly"), write, mtbf,
                              restart_time=p.restart_time)
    raise KeyError(q)


@_week("week12", questions=("q1", "q2", "q3", "q4"))
def _week12(q, p):
    if q == "q1":  # tokens the small model needs for the big one's compute-optimal loss
        big = lm.model(p.big_model).active_params
        loss = lm.lifetime.scaling_loss(big, training.compute_optimal_tokens(big))
        return lm.lifetime.tokens_for_loss(lm.model(p.small_model).active_params, loss)
    if q == "q2":  # inference's share of lifetime compute (the model's size cancels)
        served = lm.lifetime.served_tokens(p.tokens_per_second, p.serve_days * DAY)
        life = lm.lifetime.lifetime_compute(1e9, p.pretrain_tokens, p.rl_tokens, served,
                                            decode_efficiency=p.decode_efficiency)
        return life.shares[2]
    if q == "q3":  # seconds a prompt's cache can wait in the tier before recomputing is cheaper
        return lm.tradeoffs.max_hold_time(lm.model(p.model), lm.chip(p.chip),
                                          lm.memory.MEMORY_TIERS[p.tier], prompt=p.prompt,
                                          n_chips=p.n_chips)
    if q == "q4":  # a step that rebuilds the cache over one that reads it
        model, chip = lm.model(p.dense_model), lm.chip(p.dense_chip)
        return lm.tradeoffs.store_or_recompute(model, chip, p.batch, p.context,
                                               n_chips=p.dense_chips).time_ratio
    raise KeyError(q)


def questions(part: str) -> tuple[str, ...]:
    """The question names of a set: q1-q4 for a part, a week's own list for a week."""
    if part in _PARTS:
        return _PART_QUESTIONS.get(part, QUESTIONS)
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
    verdict = check(answer, key(part, question, seed), rtol=TOLERANCE, quiet=True)
    assert verdict == "right", f"{question}: {verdict}"

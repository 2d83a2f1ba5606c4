"""Every physics function's defaults are the documented ones, and bad input names its argument.

Issue 20's mutation run found these unguarded across modules: a default changed (``mfu=1.0`` to
2.0, ``recompute="none"`` to a name that does not exist) or an argument's name in an error
message changed, and no test noticed. Each default below is the one the function's docstring
and signature document, typed here by hand; each error must start with the argument's name
(the library's rule for bad input).
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from llmmath import (
    chips,
    estimate,
    lifetime,
    models,
    moe,
    parallel,
    pipeline,
    speculative,
    tradeoffs,
    training,
)
from llmmath.memory import MEMORY_TIERS

# checks physics: make mutate and make unit-baseline run it (tests/conftest.py)
pytestmark = pytest.mark.physics

L70, L8 = models.get("Llama-3-70B"), models.get("Llama-3-8B")
DSV3, V32 = models.get("DeepSeek-V3"), models.get("DeepSeek-V3.2")
H100, GB200 = chips.get("H100-SXM"), chips.get("GB200")


def _same(a, b):
    """Equal results: numbers, arrays, tuples, named tuples and dataclasses field by field."""
    if dataclasses.is_dataclass(a):
        assert type(a) is type(b)
        for f in dataclasses.fields(a):
            _same(getattr(a, f.name), getattr(b, f.name))
    elif isinstance(a, tuple | list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, dict):
        assert a.keys() == b.keys()
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, np.ndarray | float | int | np.floating):
        assert np.array_equal(np.asarray(a), np.asarray(b), equal_nan=True), (a, b)
    else:
        assert a == b, (a, b)


TIER = MEMORY_TIERS["DRAM"]
# (name, call with the defaults left out, the same call with the documented defaults spelled out)
DEFAULTS = [
    ("training_flops", lambda: training.training_flops(L70, 1e12),
     lambda: training.training_flops(L70, 1e12, recompute=False)),
    ("training_time", lambda: training.training_time(L70, 1e12, H100, 64, 0.4),
     lambda: training.training_time(L70, 1e12, H100, 64, 0.4, dtype="bf16")),
    ("mfu", lambda: training.mfu(L70, 1e12, 1e6, H100),
     lambda: training.mfu(L70, 1e12, 1e6, H100, n_chips=1, dtype="bf16", flops_per_param=6)),
    ("inference_mfu", lambda: training.inference_mfu(L70, 1e9, 1e3, H100),
     lambda: training.inference_mfu(L70, 1e9, 1e3, H100, n_chips=1, dtype="bf16")),
    ("training_memory_per_param", lambda: training.training_memory_per_param(),
     lambda: training.training_memory_per_param(optimizer="adam", mixed_precision=True)),
    ("training_memory", lambda: training.training_memory(L70),
     lambda: training.training_memory(L70, optimizer="adam", mixed_precision=True)),
    ("compute_optimal_tokens", lambda: training.compute_optimal_tokens(L70),
     lambda: training.compute_optimal_tokens(L70, tokens_per_param=20.0)),
    ("compute_optimal_model", lambda: training.compute_optimal_model(1e24),
     lambda: training.compute_optimal_model(1e24, tokens_per_param=20.0)),
    ("overtraining_factor", lambda: training.overtraining_factor(L70, 15e12),
     lambda: training.overtraining_factor(L70, 15e12, tokens_per_param=20.0)),
    ("activation_bytes_per_token_per_layer",
     lambda: training.activation_bytes_per_token_per_layer(L70, 4096),
     lambda: training.activation_bytes_per_token_per_layer(L70, 4096, recompute="none")),
    ("activation_memory", lambda: training.activation_memory(L70, 8192, 4096),
     lambda: training.activation_memory(L70, 8192, 4096, recompute="none")),
    ("zero_memory_per_chip", lambda: training.zero_memory_per_chip(L70, 64),
     lambda: training.zero_memory_per_chip(L70, 64, zero_stage=0, optimizer="adam",
                                           mixed_precision=True)),
    ("min_training_chips", lambda: training.min_training_chips(L70, H100),
     lambda: training.min_training_chips(L70, H100, activation_bytes=0.0, optimizer="adam",
                                         mixed_precision=True)),
    ("dp_gradient_sync_time", lambda: training.dp_gradient_sync_time(L70, H100, 64),
     # nics_per_domain: one port per GPU of the H100's 8-GPU server by default
     lambda: training.dp_gradient_sync_time(L70, H100, 64, network="scale_out", grad_bytes=2,
                                            zero_stage=0, nics_per_domain=8,
                                            scale_up_phase="overlapped")),
    ("dp_compute_time", lambda: training.dp_compute_time(L70, H100, 4096),
     lambda: training.dp_compute_time(L70, H100, 4096, mfu=1.0, dtype="bf16")),
    ("dp_critical_tokens", lambda: training.dp_critical_tokens(L70, H100, 64),
     lambda: training.dp_critical_tokens(L70, H100, 64, network="scale_out", grad_bytes=2,
                                         mfu=1.0, dtype="bf16", zero_stage=0, nics_per_domain=8,
                                         scale_up_phase="overlapped")),
    ("mfu_from_chip_hours", lambda: training.mfu_from_chip_hours(1e24, 1e6, H100),
     lambda: training.mfu_from_chip_hours(1e24, 1e6, H100, dtype="bf16")),
    ("all_gather_time", lambda: parallel.all_gather_time(1e6, 8, 1e11),
     lambda: parallel.all_gather_time(1e6, 8, 1e11, hop_latency=0.0, topology="switch",
                                      dims=None, algorithm=None)),
    ("reduce_scatter_time", lambda: parallel.reduce_scatter_time(1e6, 8, 1e11),
     lambda: parallel.reduce_scatter_time(1e6, 8, 1e11, hop_latency=0.0, topology="switch",
                                          dims=None, algorithm=None)),
    ("all_reduce_time", lambda: parallel.all_reduce_time(1e6, 8, 1e11),
     lambda: parallel.all_reduce_time(1e6, 8, 1e11, hop_latency=0.0, topology="switch",
                                      dims=None, algorithm=None)),
    ("all_to_all_time", lambda: parallel.all_to_all_time(1e6, 8, 1e11),
     lambda: parallel.all_to_all_time(1e6, 8, 1e11, hop_latency=0.0, topology="switch",
                                      dims=None, algorithm=None)),
    ("tensor_parallel_layer_comm_time",
     lambda: parallel.tensor_parallel_layer_comm_time(L70, 64, 8, 1e11),
     lambda: parallel.tensor_parallel_layer_comm_time(L70, 64, 8, 1e11, activation_bytes=2,
                                                      hop_latency=0.0, topology="switch",
                                                      dims=None, algorithm=None)),
    ("tensor_parallel_comm_time", lambda: parallel.tensor_parallel_comm_time(L70, 64, 8, 1e11),
     lambda: parallel.tensor_parallel_comm_time(L70, 64, 8, 1e11, activation_bytes=2,
                                                hop_latency=0.0, topology="switch", dims=None,
                                                algorithm=None)),
    ("expert_parallel_comm_time", lambda: parallel.expert_parallel_comm_time(DSV3, 64, 8, 1e11),
     lambda: parallel.expert_parallel_comm_time(DSV3, 64, 8, 1e11, activation_bytes=2,
                                                hop_latency=0.0, topology="switch", dims=None)),
    ("kv_replicas", lambda: parallel.kv_replicas(L70, 8, 8),
     lambda: parallel.kv_replicas(L70, 8, 8, kv_shard="batch")),
    ("sharded_decode", lambda: parallel.sharded_decode(L70, H100, 64, 4096, 8),
     lambda: parallel.sharded_decode(L70, H100, 64, 4096, 8, hop_latency=0.0, topology="switch",
                                     dims=None, kv_shard="auto", weight_bytes=2, kv_bytes=2,
                                     activation_bytes=2, dtype="bf16", bandwidth=None,
                                     attention_flops=True, algorithm=None)),
    ("ring_optimal_chips", lambda: parallel.ring_optimal_chips(L70, H100, 8, 4096),
     lambda: parallel.ring_optimal_chips(L70, H100, 8, 4096, hop_latency=33.7e-6 / 14,
                                         weight_bytes=2, kv_bytes=2, dtype="bf16")),
    ("pipeline_memory_per_chip", lambda: parallel.pipeline_memory_per_chip(DSV3, 64, 4096, 8, 4),
     lambda: parallel.pipeline_memory_per_chip(DSV3, 64, 4096, 8, 4, weight_bytes=2,
                                               kv_bytes=2)),
    ("scaleup_vs_scaleout_ratio", lambda: parallel.scaleup_vs_scaleout_ratio(8, 4),
     lambda: parallel.scaleup_vs_scaleout_ratio(8, 4, scale_out_over_up=0.125)),
    ("all_domains", lambda: moe.all_domains(), lambda: moe.all_domains(include_announced=True)),
    ("domain_memory", lambda: moe.domain_memory(GB200),
     lambda: moe.domain_memory(GB200, n_chips=None)),
    ("max_total_params", lambda: moe.max_total_params(GB200),
     lambda: moe.max_total_params(GB200, n_chips=None, weight_bytes=2, kv_fraction=0.0,
                                  memory_fraction=1.0)),
    ("max_active_params", lambda: moe.max_active_params(H100, 1.0),
     lambda: moe.max_active_params(H100, 1.0, dtype="bf16", compute_efficiency=1.0,
                                   price_per_chip_hour=None)),
    ("compute_cost_per_million_tokens", lambda: moe.compute_cost_per_million_tokens(37e9, H100),
     lambda: moe.compute_cost_per_million_tokens(37e9, H100, dtype="bf16", compute_efficiency=1.0,
                                                 price_per_chip_hour=None)),
    ("critical_batch_for_sparsity", lambda: moe.critical_batch_for_sparsity(H100, 18),
     lambda: moe.critical_batch_for_sparsity(H100, 18, weight_bytes=2, dtype="bf16")),
    ("expert_placement", lambda: moe.expert_placement(DSV3, 64),
     lambda: moe.expert_placement(DSV3, 64, redundant_experts=0, weight_bytes=1)),
    ("imbalance_factor", lambda: moe.imbalance_factor(128, 32),
     lambda: moe.imbalance_factor(128, 32, experts_per_token=8)),
    ("expert_all_to_all", lambda: moe.expert_all_to_all(DSV3, 128, 64, H100),
     lambda: moe.expert_all_to_all(DSV3, 128, 64, H100, domain=None, dispatch_bytes=1,
                                   combine_bytes=2)),
    ("two_batch_overlap_time", lambda: moe.two_batch_overlap_time(1e-3, 2e-3),
     lambda: moe.two_batch_overlap_time(1e-3, 2e-3, n_layers=1)),
    ("bubble_fraction", lambda: pipeline.bubble_fraction(8, 16),
     lambda: pipeline.bubble_fraction(8, 16, schedule="1f1b", virtual_stages=1, forward=1.0,
                                      backward_input=1.0, backward_weight=1.0)),
    ("micro_batches_for_bubble", lambda: pipeline.micro_batches_for_bubble(8, 0.1),
     lambda: pipeline.micro_batches_for_bubble(8, 0.1, schedule="1f1b", virtual_stages=1)),
    ("micro_batches_for_bubble interleaved",
     lambda: pipeline.micro_batches_for_bubble(8, 0.1, "interleaved"),
     lambda: pipeline.micro_batches_for_bubble(8, 0.1, "interleaved", virtual_stages=1)),
    ("schedule_timeline", lambda: pipeline.schedule_timeline(4, 8),
     lambda: pipeline.schedule_timeline(4, 8, schedule="1f1b", forward=1.0, backward=2.0)),
    ("pipeline_memory", lambda: pipeline.pipeline_memory(L70, 8, 4096, 8, 4),
     lambda: pipeline.pipeline_memory(L70, 8, 4096, 8, 4, micro_batches=None, weight_bytes=2,
                                      kv_bytes=2)),
    ("stages_to_fit", lambda: pipeline.stages_to_fit(L70, H100, 8, 4096, 1),
     lambda: pipeline.stages_to_fit(L70, H100, 8, 4096, 1, weight_bytes=2, kv_bytes=2,
                                    memory_fraction=1.0)),
    ("bubble_fraction interleaved", lambda: pipeline.bubble_fraction(8, 16, "interleaved"),
     lambda: pipeline.bubble_fraction(8, 16, "interleaved", virtual_stages=1)),
    ("hop_time", lambda: pipeline.hop_time(64, 8192, 50e9),
     lambda: pipeline.hop_time(64, 8192, 50e9, latency=0.0, activation_bytes=2)),
    ("pipeline_decode", lambda: pipeline.pipeline_decode(L70, H100, 8, 4096, 8, 2),
     lambda: pipeline.pipeline_decode(L70, H100, 8, 4096, 8, 2, micro_batches=None,
                                      hop_latency=0.0, weight_bytes=2, kv_bytes=2, dtype="bf16",
                                      activation_bytes=2, scale_out_bandwidth=None)),
    ("lifetime_compute", lambda: lifetime.lifetime_compute(L70, 15e12, 1e12, 1e14),
     lambda: lifetime.lifetime_compute(L70, 15e12, 1e12, 1e14, decode_efficiency=1 / 3,
                                       rl_flops_per_param=3.0)),
    ("equal_spend_tokens", lambda: lifetime.equal_spend_tokens(1e14),
     lambda: lifetime.equal_spend_tokens(1e14, decode_efficiency=1 / 3, rl_flops_per_param=3.0)),
    ("equal_spend_overtraining", lambda: lifetime.equal_spend_overtraining(L70, 1e14),
     lambda: lifetime.equal_spend_overtraining(L70, 1e14, decode_efficiency=1 / 3,
                                               tokens_per_param=20.0)),
    ("scaling_loss", lambda: lifetime.scaling_loss(70e9, 15e12),
     lambda: lifetime.scaling_loss(70e9, 15e12, fit="hoffmann")),
    ("compute_optimal_ratio", lambda: lifetime.compute_optimal_ratio(1e24),
     lambda: lifetime.compute_optimal_ratio(1e24, fit="hoffmann")),
    ("loss_gap", lambda: lifetime.loss_gap(1e24, 200), lambda: lifetime.loss_gap(1e24, 200,
                                                                                fit="hoffmann")),
    ("tokens_for_loss", lambda: lifetime.tokens_for_loss(70e9, 2.0),
     lambda: lifetime.tokens_for_loss(70e9, 2.0, fit="hoffmann")),
    ("lifetime_optimum", lambda: lifetime.lifetime_optimum(2.0, 1e14),
     lambda: lifetime.lifetime_optimum(2.0, 1e14, decode_efficiency=1 / 3, fit="hoffmann")),
    ("store_or_recompute", lambda: tradeoffs.store_or_recompute(L70, H100, 8, 4096),
     lambda: tradeoffs.store_or_recompute(L70, H100, 8, 4096, n_chips=1, weight_bytes=2,
                                          kv_bytes=2, dtype="bf16")),
    ("recompute_intensity", lambda: tradeoffs.recompute_intensity(L70),
     lambda: tradeoffs.recompute_intensity(L70, kv_bytes=2)),
    ("recompute_crossover", lambda: tradeoffs.recompute_crossover(L70, H100),
     lambda: tradeoffs.recompute_crossover(L70, H100, batch=1, n_chips=1, weight_bytes=2,
                                           kv_bytes=2, dtype="bf16")),
    ("checkpoint_price", lambda: tradeoffs.checkpoint_price(L70, 8192, 8192),
     lambda: tradeoffs.checkpoint_price(L70, 8192, 8192, recompute="none")),
    ("max_hold_time", lambda: tradeoffs.max_hold_time(L70, H100, TIER),
     lambda: tradeoffs.max_hold_time(L70, H100, TIER, prompt=8192, n_chips=1, weight_bytes=2,
                                     kv_bytes=2, dtype="bf16", price_per_chip_hour=None)),
    # a 16-token prompt's prefill is memory-bound, so the weights' bytes show in its price
    ("max_hold_time, short prompt", lambda: tradeoffs.max_hold_time(L70, H100, TIER, prompt=16),
     lambda: tradeoffs.max_hold_time(L70, H100, TIER, prompt=16, weight_bytes=2, kv_bytes=2,
                                     dtype="bf16")),
    ("speculative_step", lambda: speculative.speculative_step(L70, H100, 8, 4096, 3),
     lambda: speculative.speculative_step(L70, H100, 8, 4096, 3, acceptance=1.0, n_chips=1,
                                          weight_bytes=2, kv_bytes=2, dtype="bf16",
                                          overlap="step", compute_efficiency=1.0,
                                          memory_efficiency=1.0, attention_flops=True)),
    ("speculative_critical_batch", lambda: speculative.speculative_critical_batch(L70, H100, 3),
     lambda: speculative.speculative_critical_batch(L70, H100, 3, context=0, weight_bytes=2,
                                                    kv_bytes=2, dtype="bf16",
                                                    attention_flops=True)),
    ("estimate_step", lambda: estimate.estimate_step(L70, H100, 8, 4096),
     lambda: estimate.estimate_step(L70, H100, 8, 4096, n_chips=1, phase="decode",
                                    weight_bytes=2, kv_bytes=2, dtype="bf16", expert_parallel=1,
                                    activation_bytes=2, overheads=estimate.DEFAULT_OVERHEADS)),
    ("estimate_step (8 chips, EP 8)", lambda: estimate.estimate_step(DSV3, H100, 64, 4096, 8,
                                                                     expert_parallel=8),
     lambda: estimate.estimate_step(DSV3, H100, 64, 4096, 8, phase="decode", weight_bytes=2,
                                    kv_bytes=2, dtype="bf16", expert_parallel=8,
                                    activation_bytes=2, overheads=estimate.DEFAULT_OVERHEADS)),
    ("padded_rows", lambda: estimate.padded_rows(100), lambda: estimate.padded_rows(100, 64)),
    ("Model.flops_per_token", lambda: L70.flops_per_token(), lambda: L70.flops_per_token(0)),
    ("Model.prefill_indexer_flops", lambda: V32.prefill_indexer_flops(1024),
     lambda: V32.prefill_indexer_flops(1024, past=0)),
]


@pytest.mark.parametrize("name, default, explicit", DEFAULTS, ids=[d[0] for d in DEFAULTS])
def test_defaults_are_the_documented_ones(name, default, explicit):
    _same(default(), explicit())


# (call with one bad argument, the name its error must start with)
NAMES = [
    (lambda: training.training_flops(L70, 0), "tokens"),
    (lambda: training.training_time(L70, 1e12, H100, 64, 1.5), "mfu"),
    (lambda: training.training_memory_per_param(optimizer="sgd2"), "optimizer"),
    (lambda: training.compute_optimal_tokens(L70, tokens_per_param=0), "tokens_per_param"),
    (lambda: training.compute_optimal_model(0), "compute"),
    (lambda: training.compute_optimal_model(1e24, tokens_per_param=0), "tokens_per_param"),
    (lambda: training.overtraining_factor(L70, 0), "tokens"),
    (lambda: training.attention_training_flops_per_token(L70, 0), "sequence_length"),
    (lambda: training.attention_training_flops_per_token(L8, 10**6), "sequence_length"),
    (lambda: training.activation_bytes_per_token_per_layer(L70, 0), "sequence_length"),
    (lambda: training.activation_bytes_per_token_per_layer(L8, 10**6), "sequence_length"),
    (lambda: training.activation_bytes_per_token_per_layer(L70, 4096, recompute="half"),
     "recompute"),
    (lambda: training.activation_memory(L70, 0, 4096), "tokens"),
    (lambda: training.zero_memory_per_chip(L70, 64, zero_stage=4), "zero_stage"),
    (lambda: training.min_training_chips(L70, H100, activation_bytes=-1), "activation_bytes"),
    (lambda: training.dp_gradient_sync_time(L70, H100, 64, network="wifi"), "network"),
    (lambda: training.dp_compute_time(L70, H100, 0), "tokens_per_chip"),
    (lambda: training.dp_compute_time(L70, H100, 4096, mfu=0), "mfu"),
    (lambda: training.dp_critical_tokens(L70, H100, 64, mfu=2), "mfu"),
    (lambda: training.mfu_from_chip_hours(0, 1e6, H100), "compute"),
    (lambda: training.mfu_from_chip_hours(1e24, 0, H100), "chip_hours"),
    (lambda: training.attention_training_flops_per_token(70e9, 4096), "model"),
    (lambda: training.training_flops(-7e9, 1e12), "model"),
    (lambda: training.mfu(L70, 0, 1e6, H100), "tokens"),
    (lambda: training.mfu(L70, 1e12, 0, H100), "time"),
    (lambda: training.mfu(L70, 1e12, 1e6, H100, flops_per_param=0), "flops_per_param"),
    (lambda: training.dp_gradient_sync_time(L70, H100, 64, grad_bytes=0), "grad_bytes"),
    (lambda: training.dp_gradient_sync_time(L70, H100, 64, zero_stage=5), "zero_stage"),
    (lambda: training.dp_gradient_sync_time(L70, H100, 64, nics_per_domain=0), "nics_per_domain"),
    (lambda: training.dp_critical_tokens(L70, H100, 64, scale_up_phase="x"), "scale_up_phase"),
    (lambda: lifetime.served_tokens(0, 86400), "tokens_per_second"),
    (lambda: lifetime.served_tokens(50e6, 0), "seconds"),
    (lambda: lifetime.lifetime_compute(L70, 15e12, 1e12, 1e14, rl_flops_per_param=0),
     "rl_flops_per_param"),
    (lambda: lifetime.lifetime_compute(L70, 15e12, -1, 1e14), "rl_tokens"),
    (lambda: lifetime.lifetime_compute(L70, 15e12, 1e12, 0), "inference_tokens"),
    (lambda: lifetime.lifetime_compute(L70, 0, 1e12, 1e14), "pretrain_tokens"),
    (lambda: lifetime.equal_spend_tokens(0), "inference_tokens"),
    (lambda: lifetime.equal_spend_tokens(1e14, decode_efficiency=0), "decode_efficiency"),
    (lambda: lifetime.equal_spend_tokens(1e14, rl_flops_per_param=0), "rl_flops_per_param"),
    (lambda: lifetime.scaling_loss(0, 15e12), "active_params"),
    (lambda: lifetime.scaling_loss(70e9, 0), "tokens"),
    (lambda: lifetime.scaling_loss(70e9, 15e12, fit="kaplan"), "fit"),
    (lambda: lifetime.compute_optimal_ratio(0), "compute"),
    (lambda: lifetime.loss_gap(0, 200), "compute"),
    (lambda: lifetime.loss_gap(1e24, 0), "tokens_per_param"),
    (lambda: lifetime.tokens_for_loss(0, 2.0), "active_params"),
    (lambda: lifetime.tokens_for_loss(70e9, 0), "loss"),
    (lambda: lifetime.lifetime_optimum(0, 1e14), "loss"),
    (lambda: lifetime.lifetime_optimum(1.69, 1e14), "loss"),  # E itself (Hoffmann et al. eq. 10)
    (lambda: lifetime.lifetime_optimum(2.0, 0), "inference_tokens"),
    (lambda: lifetime.lifetime_optimum(2.0, 1e14, decode_efficiency=2), "decode_efficiency"),
    (lambda: lifetime.lifetime_optimum(2.0, 1e14, decode_efficiency=np.array([0.3, 0.2])),
     "decode_efficiency"),
    (lambda: parallel.all_gather_time(-1, 8, 1e11), "bytes_per_chip_out"),
    (lambda: parallel.reduce_scatter_time(-1, 8, 1e11), "bytes_per_chip_in"),
    (lambda: parallel.pipeline_memory_per_chip(DSV3, 0, 4096, 8, 4), "micro_batch"),
    (lambda: parallel.pipeline_memory_per_chip(DSV3, 64, 4096, 0, 4), "expert_parallel"),
    (lambda: parallel.pipeline_memory_per_chip(DSV3, 64, 4096, 8, 0), "stages"),
    (lambda: parallel.all_gather_time(1e6, 0, 1e11), "n_chips:"),
    (lambda: parallel.all_reduce_time(1e6, 8, 0), "bandwidth"),
    (lambda: parallel.all_reduce_time(-1, 8, 1e11), "bytes_per_chip"),
    (lambda: parallel.all_to_all_time(-1, 8, 1e11), "bytes_per_chip"),
    (lambda: parallel.all_gather_time(1e6, 8, 1e11, topology="mesh"), "topology"),
    (lambda: parallel.tensor_parallel_layer_comm_time(L70, 0, 8, 1e11), "tokens"),
    (lambda: parallel.tensor_parallel_layer_comm_time(L70, 64, 8, 1e11, activation_bytes=0),
     "activation_bytes"),
    (lambda: moe.max_total_params(H100, weight_bytes=0), "weight_bytes"),
    (lambda: moe.max_total_params(H100, kv_fraction="0.5"), "kv_fraction"),
    (lambda: moe.max_total_params(H100, kv_fraction=-0.5), "kv_fraction"),
    (lambda: moe.max_total_params(H100, memory_fraction=0), "memory_fraction"),
    (lambda: moe.max_active_params(H100, 0), "cost_per_million_tokens"),
    (lambda: moe.max_active_params(H100, 1.0, compute_efficiency=0), "compute_efficiency"),
    (lambda: moe.compute_cost_per_million_tokens(0, H100), "active_params"),
    (lambda: moe.compute_cost_per_million_tokens(37e9, H100, compute_efficiency=2),
     "compute_efficiency"),
    (lambda: moe.critical_batch_for_sparsity(H100, 0), "sparsity"),
    (lambda: moe.critical_batch_for_sparsity(H100, 8, weight_bytes=0), "weight_bytes"),
    (lambda: moe.expert_placement(DSV3, 72, redundant_experts=-1), "redundant_experts"),
    (lambda: moe.expert_placement(DSV3, 72, weight_bytes=0), "weight_bytes"),
    (lambda: moe.expected_max_load(-1, 8), "assignments"),
    (lambda: moe.expected_max_load(1.5, 8), "assignments"),
    (lambda: moe.imbalance_factor(0, 8), "tokens_per_chip"),
    (lambda: moe.imbalance_factor(128, 8, experts_per_token=0), "experts_per_token"),
    (lambda: moe.imbalance_factor(128, 8, experts_per_token=1.5), "experts_per_token"),
    (lambda: moe.expert_all_to_all(DSV3, -1, 72, GB200), "tokens_per_chip"),
    (lambda: moe.expert_all_to_all(DSV3, 128, 72, GB200, domain=0), "domain"),
    (lambda: moe.expert_all_to_all(DSV3, 128, 72, GB200, dispatch_bytes=0), "dispatch_bytes"),
    (lambda: moe.expert_all_to_all(DSV3, 128, 72, GB200, combine_bytes=0), "combine_bytes"),
    (lambda: moe.two_batch_overlap_time(-1, 1), "compute_time"),
    (lambda: moe.two_batch_overlap_time(1, -1), "comm_time"),
    (lambda: moe.two_batch_overlap_time(1, 1, 0), "n_layers"),
    (lambda: moe.two_batch_overlap_time(1, 1, 1.5), "n_layers"),
    (lambda: pipeline.bubble_fraction(0, 8), "stages"),
    (lambda: pipeline.bubble_fraction(2.5, 8), "stages"),
    (lambda: pipeline.bubble_fraction(1_000_001, 8), "stages"),
    (lambda: pipeline.bubble_fraction(4, 2.5), "micro_batches"),
    (lambda: pipeline.bubble_fraction(4, 8, "pipedream"), "schedule"),
    (lambda: pipeline.bubble_fraction(4, 8, virtual_stages=1.5), "virtual_stages"),
    (lambda: pipeline.bubble_fraction(4, 8, forward=0), "forward"),
    (lambda: pipeline.bubble_fraction(4, 8, backward_input=0), "backward_input"),
    (lambda: pipeline.bubble_fraction(4, 8, backward_weight=-1), "backward_weight"),
    (lambda: pipeline.micro_batches_for_bubble(4, 0), "bubble"),
    (lambda: pipeline.micro_batches_for_bubble(4, 1.0), "bubble"),
    (lambda: pipeline.micro_batches_for_bubble(4, 0.1, "zb-h1"), "schedule"),
    (lambda: pipeline.micro_batches_for_bubble(4, 0.1, "interleaved", virtual_stages=0),
     "virtual_stages"),
    (lambda: pipeline.micro_batches_for_bubble(4, 0.1, "interleaved", virtual_stages=1.5),
     "virtual_stages"),
    (lambda: pipeline.schedule_timeline(np.array([2, 4]), 8), "stages"),
    (lambda: pipeline.schedule_timeline(65, 1), "stages"),
    (lambda: pipeline.schedule_timeline(4, np.array([2, 4])), "micro_batches"),
    (lambda: pipeline.schedule_timeline(4, 2.5), "micro_batches"),
    (lambda: pipeline.schedule_timeline(4, 4097), "micro_batches"),
    (lambda: pipeline.schedule_timeline(4, 8, "zb-h1"), "schedule"),
    (lambda: pipeline.schedule_timeline(4, 8, forward=np.array([1.0, 2.0])), "forward"),
    (lambda: pipeline.schedule_timeline(4, 8, forward=0), "forward"),
    (lambda: pipeline.schedule_timeline(4, 8, backward=np.array([1.0, 2.0])), "backward"),
    (lambda: pipeline.schedule_timeline(4, 8, backward=0), "backward"),
    (lambda: pipeline.pipeline_memory(DSV3, -1, 4096, 8, 4), "micro_batch"),
    (lambda: pipeline.pipeline_memory(DSV3, 64, 4096, 2.5, 4), "chips_per_stage"),
    (lambda: pipeline.pipeline_memory(DSV3, 64, 4096, 8, 4, micro_batches=0), "micro_batches"),
    (lambda: pipeline.pipeline_memory(DSV3, 64, 4096, 8, 4, micro_batches=2.5),
     "micro_batches"),
    (lambda: pipeline.stages_to_fit(DSV3, H100, -1, 4096, 8), "micro_batch"),
    (lambda: pipeline.stages_to_fit(DSV3, H100, 64, 4096, 2.5), "chips_per_stage"),
    (lambda: pipeline.stages_to_fit(DSV3, H100, 64, 4096, 8, memory_fraction=1.5),
     "memory_fraction"),
    (lambda: pipeline.hop_time(0, 7168, 50e9), "tokens"),
    (lambda: pipeline.hop_time(64, 0, 50e9), "d_model"),
    (lambda: pipeline.hop_time(64, 7168, 0.0), "bandwidth"),
    (lambda: pipeline.hop_time(64, 7168, 50e9, latency=-1), "latency"),
    (lambda: pipeline.hop_time(64, 7168, 50e9, activation_bytes=0), "activation_bytes"),
    (lambda: pipeline.pipeline_decode(DSV3, H100, -1, 4096, 8, 4), "micro_batch"),
    (lambda: pipeline.pipeline_decode(DSV3, H100, 64, 4096, 2.5, 4), "chips_per_stage"),
    (lambda: pipeline.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, micro_batches=0),
     "micro_batches"),
    (lambda: pipeline.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, micro_batches=2.5),
     "micro_batches"),
    (lambda: pipeline.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, hop_latency=-1),
     "hop_latency"),
    (lambda: pipeline.pipeline_decode(DSV3, H100, 64, 4096, 8, 4, scale_out_bandwidth=0),
     "scale_out_bandwidth"),
    (lambda: pipeline.pipeline_decode(DSV3, chips.get("TPU v4"), 64, 4096, 8, 2),
     "scale_out_bandwidth"),
    (lambda: pipeline.boundary_ratio(DSV3, chips.get("TPU v4"), 4), "chip"),
    (lambda: parallel.scaleup_vs_scaleout_ratio(0, 4), "experts_per_token"),
    (lambda: parallel.scaleup_vs_scaleout_ratio(8, 0), "layers_per_stage"),
    (lambda: parallel.scaleup_vs_scaleout_ratio(8, 4, scale_out_over_up=0), "scale_out_over_up"),
    (lambda: estimate.estimate_step(L8, H100, 1, 128, phase="generate"), "phase"),
    (lambda: estimate.estimate_step(L8, H100, 1, 128, overheads={"step_overhead": 0}),
     "overheads"),
    (lambda: estimate.estimate_step(L8, H100, 0, 128), "batch"),
    (lambda: estimate.estimate_step(L8, H100, 1, -1), "context"),
    (lambda: estimate.estimate_step(L8, H100, 1, 128, n_chips=0), "n_chips"),
    (lambda: estimate.estimate_step(L8, H100, 1, 128, expert_parallel=0), "expert_parallel"),
    (lambda: estimate.estimate_step(L8, H100, 1, 128, n_chips=4, expert_parallel=3),
     "expert_parallel"),
    (lambda: estimate.estimate_step(L8, H100, 1, 128, activation_bytes=0), "activation_bytes"),
    (lambda: estimate.estimate_step(L8, H100, 1, 128, activation_bytes=9), "activation_bytes"),
    (lambda: estimate.padded_rows(0), "tokens"),
    (lambda: estimate.padded_rows(8, tile_m=0), "tile_m"),
    (lambda: estimate.padded_rows(8, tile_m=4097), "tile_m"),
    (lambda: tradeoffs.store_or_recompute(L70, H100, 0, 100), "batch"),
    (lambda: tradeoffs.store_or_recompute(L70, H100, 1, -1), "context"),
    (lambda: tradeoffs.store_or_recompute(L70, H100, 1, 8192), "context + 1"),
    (lambda: tradeoffs.recompute_intensity(L70, kv_bytes=0), "kv_bytes"),
    (lambda: tradeoffs.recompute_crossover(L70, H100, batch=0), "batch"),
    (lambda: tradeoffs.recompute_crossover(L70, H100, n_chips=[1, 2]), "n_chips"),
    (lambda: tradeoffs.recompute_crossover(L70, H100, weight_bytes=[1, 2]), "weight_bytes"),
    (lambda: tradeoffs.recompute_crossover(L70, H100, kv_bytes=[1, 2]), "kv_bytes"),
    (lambda: tradeoffs.checkpoint_price(L70, 0, 4096), "tokens"),
    (lambda: tradeoffs.checkpoint_price(L70, 4096, 4096, recompute="half"), "recompute"),
    (lambda: tradeoffs.max_hold_time(L70, H100, TIER, prompt=0), "prompt"),
    (lambda: L70.flops_per_token(-1), "context"),
    (lambda: V32.prefill_indexer_flops(0), "prompt"),
    (lambda: V32.prefill_indexer_flops(1024, past=10**7), "past"),
    (lambda: models.get("Llama-4-9000"), "name"),
    (lambda: L8.kv_bytes_per_token(0), "bytes_per_element"),
    (lambda: L8.kv_cache_bytes(100, 0), "bytes_per_element"),
    (lambda: L8.kv_read_bytes(100, 0), "bytes_per_element"),
    (lambda: L8.prefill_attention_flops(0), "prompt"),
    (lambda: L8.prefill_attention_flops(10, past=-1), "past"),
    (lambda: L8.prefill_attention_flops(8000, past=1000), "past + prompt"),  # window 8,192
]


# the same on a chip with a scale-out link but no scale-up domain (conftest.py's no_scale_up_chip)
NAMES_NO_SCALE_UP = [
    (lambda chip: training.dp_gradient_sync_time(L70, chip, 8, network="scale_up"), "network"),
    (lambda chip: moe.domain_memory(chip), "n_chips"),
    (lambda chip: moe.domain_of(chip), "chip"),
    (lambda chip: moe.expert_all_to_all(DSV3, 128, 8, chip, domain=1), "chip"),
    (lambda chip: moe.scale_up_over_scale_out(chip), "chip"),
    (lambda chip: estimate.estimate_step(L8, chip, 1, 128, n_chips=2), "chip"),
]


def _error_starts_with(call, name):
    with pytest.raises((ValueError, KeyError, TypeError)) as info:
        call()
    message = info.value.args[0]
    assert message.startswith(name), message


@pytest.mark.parametrize("call, name", NAMES, ids=[n for _, n in NAMES])
def test_bad_input_names_its_argument(call, name):
    _error_starts_with(call, name)


@pytest.mark.parametrize("call, name", NAMES_NO_SCALE_UP, ids=[n for _, n in NAMES_NO_SCALE_UP])
def test_bad_input_on_a_chip_without_scale_up_names_its_argument(call, name, no_scale_up_chip):
    _error_starts_with(lambda: call(no_scale_up_chip), name)


@pytest.mark.whole_catalogue
def test_model_lookup_and_the_catalogue():
    assert models.get("llama-3-70b") is L70  # names are matched whatever their case
    assert models.all_models() == list(models.CATALOGUE.values())
    assert [m.name for m in models.all_models()] == models.names()
    assert models.parameter_breakdown(L70).model == "Llama-3-70B"
    with pytest.raises(TypeError, match="^model: got 70000000000.0; expected an llmmath Model "
                                        "\\(from llmmath.models\\), not a plain parameter "
                                        "count$"):
        training.attention_training_flops_per_token(70e9, 4096)

"""The keys of the chapters' check cells: instructor kit only, never on a page students see.

Each chapter's check cell (``lm.exercises.check(my_answer, sealed="label:digest")``) carries its
key sealed (``llmmath.exercises.seal``), not the expression that computes it, which would print the
answer. Here each key is computed by the library, with the same call the chapter made before
sealing: ``key(label)``; ``rtol(label)`` is the tolerance its cell checks with.
tests/test_instructor_kit.py holds every check cell's seal to these keys, so a library change that
moves a key fails until the cell is resealed:

    python problem_sets/chapter_keys.py          # prints every label with its current seal
"""

from __future__ import annotations

import sys

import llmmath as lm
from llmmath import lifetime as life
from llmmath import moe, pipeline
from llmmath.exercises import seal


def _keys():
    h100, b300 = lm.chip("H100-SXM"), lm.chip("B300")
    ds, l8 = lm.model("DeepSeek-V3"), lm.model("Llama-3-8B")
    l70, l405 = lm.model("Llama-3-70B"), lm.model("Llama-3.1-405B")
    served = life.served_tokens(50e6, 60 * 86400)
    ck = lm.tradeoffs.checkpoint_price
    # label: (the key, the check cell's rtol)
    return {
        "hardware-ex-ratio": (lambda: h100.ops_per_byte("bf16"), 0.05),
        "counting-ex-params": (lambda: lm.model("LLaMA-2-7B").total_params, 0.05),
        "counting-ex-gqa": (lambda: l70.kv_bytes_per_token(2), 0.05),
        "decode-ex-floor": (lambda: lm.roofline.min_latency(l70, h100, n_chips=8,
                                                            weight_bytes=1), 0.05),
        "batching-ex-deepseek": (lambda: lm.critical_batch(ds, h100, weight_bytes=1,
                                                           dtype="fp8"), 0.1),
        "kv-ex-llama8b": (lambda: 32 * l8.kv_cache_bytes(8192, 2), 0.05),
        "prefill-ex-kvbytes": (lambda: lm.prices.kv_bytes_from_price_step(100e9, 200e3, 600),
                               0.05),
        "moe-ex-rack": (lambda: moe.max_total_params(b300, weight_bytes=0.5, kv_fraction=0.4),
                        0.05),
        "pipelining-ex-bubble": (lambda: pipeline.bubble_fraction(8, 24), 0.05),
        "partitioning-ex-allreduce": (lambda: lm.collectives.collective_time(
            "all-reduce", 1e6, 8, 450e9, 2.4e-6, "ring"), 0.05),
        "partitioning-ex-nstar": (lambda: (0.040 / (2 * 160 * 2.4e-6)) ** 0.5, 0.05),
        "estimate-ex-launch": (lambda: 32 * 9 * lm.estimate.KERNEL_OVERHEAD, 0.05),
        "estimate-ex-touched": (lambda: 256 * (1 - (1 - 8 / 256) ** 32), 0.05),
        "estimate-ex-allreduce": (lambda: 160 * 14 * 2.41e-6, 0.05),
        "training-ex-six": (lambda: lm.training_flops(4096 * 4096, 1), 0.05),
        "training-ex-70b": (lambda: lm.training_time(l70, 15e12, h100, 4096, 0.4) / 86400, 0.05),
        "training-ex-dp": (lambda: lm.training.dp_critical_tokens(l70, lm.chip("B200"), 2048,
                                                                  "scale_out"), 0.05),
        "overtraining-ex-served": (lambda: served, 0.05),
        "overtraining-ex-factor": (lambda: life.equal_spend_overtraining(100e9, served, 1 / 3),
                                   0.05),
        "overtraining-ex-rl": (lambda: served / 2, 0.05),
        "recompute-ex-intensity": (lambda: lm.tradeoffs.recompute_intensity(l8), 0.05),
        "recompute-ex-free": (lambda: lm.tradeoffs.recompute_crossover(l70, h100, batch=4,
                                                                       n_chips=8), 0.05),
        "recompute-ex-mfu": (lambda: lm.training.KORTHIKANTI2022_530B["mfu_selective"] * 6 / 8,
                             0.05),
        "recompute-ex-reversible": (
            lambda: ck(l405, 8192, 8192, "full").activation_bytes
            / ck(l405, 8192, 8192, "reversible").activation_bytes, 0.05),
        # ZeRO-1 on TP8 PP4 DP32: 4 bytes kept per parameter, 12 sharded over the replicas
        "layout-ex-state": (lambda: 70e9 / (8 * 4) * (4 + 12 / 32), 0.02),
        "layout-ex-bubble": (lambda: pipeline.bubble_fraction(16, 32, "interleaved", 4), 0.02),
        "layout-ex-young": (lambda: lm.layout.checkpoint_interval(3 * 3600, 60, "young"), 0.02),
    }


KEYS = _keys()


def key(label: str) -> float:
    """The key of the check cell of exercise ``label``."""
    if label not in KEYS:
        raise KeyError(f"label: got {label!r}; check cells exist for {', '.join(KEYS)}")
    return float(KEYS[label][0]())


def rtol(label: str) -> float:
    key(label)  # the same KeyError for an unknown label
    return KEYS[label][1]


def main() -> int:
    for label in KEYS:
        print(f"{label:28} {seal(key(label), label)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

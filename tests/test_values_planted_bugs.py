"""Value tests for bugs an audit planted that survived the suite (issue 20).

Every expected number is worked by hand below from a toy chip with round figures (``toy_chip``
in tests/conftest.py: 1 PFLOP/s bf16, 1 TB/s, 100 GB, so the ridge is 1000 FLOP/B) and published
model sizes, never from the code:
- Llama-3-8B (Meta model card): 8.03e9 parameters, 32 layers, 8 KV heads of 128, untied
  128,256 x 4096 embedding and head, so KV = 32 x 2 x 8 x 128 x 2 B = 131,072 B/token in bf16
  and about 7.5e9 matmul parameters (8.03e9 minus the 0.525e9 embedding table). A decode step
  streams those 15.0 GB (bf16); the embedding table is gathered one row per token, not read.
- Mixtral-8x7B (Mistral AI): 46.7e9 total parameters, 12.9e9 active per token.
"""

import dataclasses

import pytest

from llmmath import cost, models, roofline

# checks physics: make mutate and make unit-baseline run it (tests/conftest.py)
pytestmark = pytest.mark.physics


def test_matmul_ridge_batch_counts_output_writes(toy_chip):
    # (m x 1e4) @ (1e4 x 1e4), 2 B each: intensity m k n / (m k + k n + m n) = 1000 gives
    # 1e8 m = 1000 (2e4 m + 1e8), so m = 1e11 / 8e7 = 1250. Without the output write: 1111.
    assert roofline.matmul_ridge_batch(toy_chip, 10_000, 10_000) == pytest.approx(1250, rel=1e-6)


def test_max_batch_uses_kv_bytes(toy_chip):
    # Free HBM: 100e9 - 2 x 8.03e9 = 83.94e9 B. One 8192-token sequence holds
    # 8192 x 131,072 = 1.074e9 B in bf16 (B = 78.2 -> 78) and half that in int8 (156.4 -> 156).
    m = models.get("Llama-3-8B")
    assert roofline.max_batch(m, toy_chip, 8192, kv_bytes=2) == 78
    assert roofline.max_batch(m, toy_chip, 8192, kv_bytes=1) == 156


def test_chunked_prefill_tokens_scales_with_batch(toy_chip):
    # Batch 8 at context 128: memory time (15.0e9 + 8 x 16.8e6) / 1e12 = 15.13 ms; each token
    # costs 2 x 7.5e9 / 1e15 = 15 us of compute, so the step could compute 15.13 ms / 15 us
    # = 1009 tokens, 8 of which are the decode's: about 1001 prompt tokens (3% for the
    # attention FLOPs and the parameter count). Forgetting the batch gives ~125.
    m = models.get("Llama-3-8B")
    got = cost.chunked_prefill_tokens(m, toy_chip, 8, 128)
    assert got == pytest.approx(1001, rel=0.03)


def test_latency_cost_frontier_fit_counts_all_experts(toy_chip):
    # Mixtral stores all 46.7e9 weights: 93.4 GB in bf16 exceed one 80 GB chip (active
    # weights, 25.8 GB, would fit), and fit in two (160 GB > 93.4 + 0.54 GB of KV).
    m = models.get("Mixtral-8x7B")
    chip = dataclasses.replace(toy_chip, hbm_capacity=80e9)  # the toy chip with 80 GB
    one = cost.latency_cost_frontier(m, chip, [1], 4096, price_per_chip_hour=1.0)
    two = cost.latency_cost_frontier(m, chip, [1], 4096, n_chips=2, price_per_chip_hour=1.0)
    assert not one.fits[0]
    assert two.fits[0]


def test_chip_seconds_per_token_counts_chips(toy_chip):
    # Batch 1 at context 128 on 4 toy chips: (15.0e9 + 16.8e6) B / 4e12 B/s = 3.754 ms per
    # token; chip-seconds per token = 4 x 3.754 ms = 15.02 ms (1% for the parameter count).
    step = roofline.decode_step(models.get("Llama-3-8B"), toy_chip, 1, 128, n_chips=4)
    assert cost.chip_seconds_per_token(step) == pytest.approx(15.02e-3, rel=0.01)


def test_prefill_reads_cached_past_kv(toy_chip):
    # 100 new tokens after 1000 cached ones (Llama-3-8B, bf16 KV, 131,072 B/token): the step
    # writes 100 tokens' KV and reads the 1000 cached ones: 1100 x 131,072 = 144,179,200 B.
    step = roofline.prefill_step(models.get("Llama-3-8B"), toy_chip, 1, 100, past=1000)
    assert step.kv_bytes_read == pytest.approx(1100 * 131_072, rel=1e-9)


def test_expected_experts_touched_by_two_tokens():
    # Mixtral-8x7B (E = 8, k = 2, 32 MoE layers, expert = 3 x 4096 x 14336 = 176,160,768):
    # two tokens touch 8 (1 - (1 - 2/8)^2) = 3.5 experts per layer on average, one token 2.
    # The second token adds 32 x 1.5 x 176,160,768 expert weights plus one 4096-wide
    # embedding row: 8,455,720,960 parameters.
    m = models.get("Mixtral-8x7B")
    extra = m.weight_params_read(2) - m.weight_params_read(1)
    assert extra == pytest.approx(8_455_720_960, rel=1e-9)


def test_mla_attention_params_per_layer_deepseek_v3():
    # DeepSeek-V3 config.json: D = 7168, 128 heads, q_lora 1536, kv_lora 512, nope 128,
    # rope 64, v 128. Q: 7168 x 1536 + 1536 (norm) + 1536 x 128 x 192 = 48,760,320;
    # KV down: 7168 x 576 + 512 (norm) = 4,129,280; KV up (keys and values):
    # 512 x 128 x (128 + 128) = 16,777,216; output: 128 x 128 x 7168 = 117,440,512.
    m = models.get("DeepSeek-V3")
    assert m.attention_params_per_layer == 187_107_328

"""The multi-head twins that chapters 2 and 5 compare KV caches against (one definition each).

Expected values are worked by hand from the configs, not read off the code:

- DeepSeek-V3 (config.json: 61 layers, 128 heads, kv_lora_rank 512, qk_rope_head_dim 64,
  qk_nope_head_dim = v_head_dim = 128). MLA caches 512 + 64 = 576 numbers per layer; the MHA
  twin of DeepSeek-V2's Table 1 caches 2 x 128 x 128 = 32,768. Ratio 32,768 / 576 = 56.89.
  In bf16: 61 x 32,768 x 2 = 3,997,696 B (about 4.0 MB) per token against 61 x 576 x 2 = 70,272 B.
- Llama 3 70B: 64 query heads over 8 KV heads, so the twin holds 64 / 8 = 8 times more:
  2 x 80 x 64 x 128 x 2 = 2,621,440 B per token in bf16.
- PaLM 540B, Pope et al. 2022 Table 1: 64 heads of 128 over 118 layers,
  2 x 118 x 64 x 128 x 2 = 3,866,624 B per token in bf16, against multi-query PaLM's
  2 x 118 x 256 x 2 = 120,832 B: 32 times. At batch 512 and context 2048 that is
  3,866,624 x 1,048,576 = 4.05e12 B, "over 3 TB" as Sec. 2.1 says.
"""

import pytest

from llmmath import models
from llmmath.models import MhaEquivalent, mha_equivalent, palm_multihead_baseline

# checks physics: make mutate and make unit-baseline run it (tests/conftest.py)
pytestmark = pytest.mark.physics


def test_deepseek_v3_twin_is_deepseek_v2_table1():
    twin, ratio = mha_equivalent(models.get("DeepSeek-V3"))
    assert twin.attention_kind == "MHA"
    assert twin.kv_elements_per_token_per_layer == 32_768
    assert twin.kv_bytes_per_token(2) == 3_997_696
    assert ratio == pytest.approx(32_768 / 576, rel=1e-12)
    assert ratio == pytest.approx(56.89, abs=0.01)


def test_twin_leaves_out_the_decoupled_rope_key():
    # The ch5 slip this replaces: K and V both 192 wide gave 2 x 128 x 192 = 49,152 (85x).
    twin, ratio = mha_equivalent(models.get("DeepSeek-V3"))
    assert twin.kv_elements_per_token_per_layer != 2 * 128 * 192
    assert ratio < 60


def test_gqa_twin_multiplies_by_the_group_size():
    llama = models.get("Llama-3-70B")
    twin, ratio = mha_equivalent(llama)
    assert (twin.n_kv_heads, twin.head_dim) == (64, 128)
    assert twin.kv_bytes_per_token(2) == 2_621_440
    assert ratio == pytest.approx(8.0, rel=1e-12)
    assert twin.total_params > llama.total_params  # more K/V weights: a twin, not the model


def test_mha_model_is_its_own_twin():
    gpt3 = models.get("GPT-3-175B")
    result = mha_equivalent(gpt3)
    assert isinstance(result, MhaEquivalent)
    assert result.model is gpt3 and result.kv_ratio == 1.0


@pytest.mark.parametrize("model", models.all_models(), ids=lambda m: m.name)
def test_every_twin_is_mha_and_never_smaller(model):
    twin, ratio = mha_equivalent(model)
    assert twin.attention_kind == "MHA"
    assert twin.n_layers == model.n_layers and twin.n_heads == model.n_heads
    assert ratio >= 1.0


def test_palm_baseline_is_pope_table1():
    twin, ratio = palm_multihead_baseline()
    assert (twin.n_kv_heads, twin.head_dim, twin.n_layers) == (64, 128, 118)
    assert twin.kv_bytes_per_token(2) == 3_866_624
    assert ratio == pytest.approx(32.0, rel=1e-12)
    kv = 512 * twin.kv_cache_bytes(2048, 2)
    assert kv == pytest.approx(4.054e12, rel=1e-3)
    assert kv > 3e12  # Pope et al. Sec. 2.1: "over 3TB"


def test_bad_input_names_the_argument():
    with pytest.raises(TypeError, match="model"):
        mha_equivalent("DeepSeek-V3")
    odd = models.get("DeepSeek-V3").replace(v_head_dim=192)
    with pytest.raises(ValueError, match="v_head_dim"):
        mha_equivalent(odd)

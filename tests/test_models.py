"""Tests of llmmath.models: published parameter counts, KV bytes, FLOPs and argument checks.

Published figures and their sources:
- Every catalogue entry carries ``published_params`` / ``published_active_params`` and the
  citation key ``source`` (see _bibparts/models.bib); the parametrised tests below check the
  counts against them.
- KV bytes per token: Llama 3 70B from its config (80 layers, 8 KV heads of 128; llama3_herd
  Table 3); PaLM 540B from Pope et al. 2022 (pope2022efficiently, Table D.1: 118 layers, one KV
  head of 256); DeepSeek-V3's MLA latent (deepseek_v3, Sec. 2.1.1: kv_lora_rank 512 plus a
  64-wide decoupled RoPE key, 61 layers).
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llmmath import models
from llmmath.models import Model

ROOT = Path(__file__).resolve().parents[1]
ALL = models.all_models()
IDS = [m.name for m in ALL]
MOE = [m for m in ALL if m.is_moe]
DENSE = [m for m in ALL if not m.is_moe]

REQUIRED = [
    "GPT-3-175B", "PaLM-8B", "PaLM-62B", "PaLM-540B", "LLaMA-2-7B", "LLaMA-2-13B", "LLaMA-2-70B",
    "Llama-3-8B", "Llama-3-70B", "Llama-3.1-405B", "Mixtral-8x7B", "Mixtral-8x22B", "DeepSeek-V3",
    "Qwen3-235B-A22B", "gpt-oss-120b",
]

# Attention kind of each entry, as its paper describes it (not read from the entry).
ATTENTION_KIND = {
    "GPT-3-175B": "MHA",  # brown2020gpt3: standard multi-head attention
    "MT-NLG-530B": "MHA",  # pope2022efficiently Table D.1: "multihead"
    "BLOOM-176B": "MHA",  # hf_bloom: "112 attention heads", one K and V per head
    "PaLM-8B": "MQA", "PaLM-62B": "MQA", "PaLM-540B": "MQA",  # chowdhery2022palm Sec. 2
    "LLaMA-2-7B": "MHA", "LLaMA-2-13B": "MHA",  # touvron2023llama2: GQA only for 34B/70B
    "LLaMA-2-70B": "GQA",
    "Llama-3-8B": "GQA", "Llama-3-70B": "GQA", "Llama-3.1-405B": "GQA",  # llama3_herd Table 3
    "Mixtral-8x7B": "GQA", "Mixtral-8x22B": "GQA",  # 8 KV heads
    "DeepSeek-V3": "MLA", "DeepSeek-V3.2": "MLA",  # deepseek_v3 Sec. 2.1.1
    "Qwen3-235B-A22B": "GQA", "Qwen3-30B-A3B": "GQA",  # qwen3_report Table 2: 64/4, 32/4 heads
    "gpt-oss-120b": "GQA",  # gptoss_modelcard: grouped-query, group size 8
}

# Published active counts that leave the input embedding out (a gather, not a multiply).
# gpt-oss model card (gptoss_modelcard) Sec. 2: "Active Parameters 5.13B" = MLP (4 of 128
# experts) + attention + unembedding; the same holds for gpt-oss-20b's 3.61B. Our active_params
# includes the embedding, as the other vendors' figures do (Mixtral's 12.9B, Qwen3's 22B/3.3B).
ACTIVE_EXCLUDES_INPUT_EMBEDDING = {"gpt-oss-120b"}


def _unit_of_last_digit(x: float) -> float:
    """One unit in the last significant digit of a published figure: 37e9 -> 1e9,
    116.83e9 -> 1e7."""
    return float(10 ** Decimal(repr(float(x))).normalize().as_tuple().exponent)


def _matches_published(count: float, published: float) -> bool:
    """Within 1 %, or consistent with the figure as stated (rounded or truncated to its last digit).

    Several sources state two significant figures ("37B", "3.3B"); such a statement only says
    the count lies in [p - u/2, p + u) with u one unit in the last digit, which can be wider
    than 1 %.
    """
    if abs(count / published - 1) <= 0.01:
        return True
    u = _unit_of_last_digit(published)
    return published - u / 2 <= count < published + u


@pytest.mark.whole_catalogue
def test_required_entries_present():
    for name in REQUIRED:
        assert name in models.names()


def test_unit_of_last_digit():
    assert _unit_of_last_digit(37e9) == 1e9
    assert _unit_of_last_digit(3.3e9) == pytest.approx(1e8)
    assert _unit_of_last_digit(116.83e9) == pytest.approx(1e7)
    assert not _matches_published(39.0e9, 37e9)
    assert not _matches_published(36.4e9, 37e9)
    assert _matches_published(37.6e9, 37e9)  # "37B" truncated
    assert not _matches_published(5.71e9, 5.13e9)


# ----- published totals ------------------------------------------------------------------

@pytest.mark.parametrize("model", ALL, ids=IDS)
def test_total_params_reproduce_published(model: Model):
    # Source: model.source (paper or model card; see _bibparts/models.bib and model.notes).
    assert model.published_params, f"{model.name} has no published total"
    assert _matches_published(model.total_params, model.published_params), (
        f"{model.name}: counted {model.total_params / 1e9:.3f}B vs published "
        f"{model.published_params / 1e9:.3f}B ({model.source})"
    )


@pytest.mark.parametrize("model", ALL, ids=IDS)
def test_active_params_reproduce_published(model: Model):
    # Source: model.source; see ACTIVE_EXCLUDES_INPUT_EMBEDDING for the one convention change.
    assert model.published_active_params
    count = model.active_params
    if model.name in ACTIVE_EXCLUDES_INPUT_EMBEDDING:
        count -= model.vocab_size * model.d_model
    assert _matches_published(count, model.published_active_params), (
        f"{model.name}: counted {count / 1e9:.3f}B active vs published "
        f"{model.published_active_params / 1e9:.3f}B ({model.source})"
    )


def _bib_keys() -> set[str]:
    keys = set()
    for path in [ROOT / "references.bib", *sorted((ROOT / "_bibparts").glob("*.bib"))]:
        if path.exists():
            keys |= set(re.findall(r"@\w+\{([^,\s]+),", path.read_text()))
    return keys


@pytest.mark.parametrize("model", ALL, ids=IDS)
def test_entry_is_cited(model: Model):
    assert model.source in _bib_keys(), f"{model.name}: source {model.source!r} not in any .bib"
    assert model.year and 2017 <= model.year <= 2026
    assert model.max_context and model.notes


def test_exact_counts_by_hand():
    """Independent arithmetic from the papers' tables, not from the counting code."""
    # PaLM 540B (chowdhery2022palm Table 1; episode_and_paper.md sec. 4): SwiGLU MLP, Q and O of
    # 18432 x 48*256, K and V of 18432 x 256, tied 256k embedding; one norm per parallel block
    # plus the final norm.
    palm = models.get("PaLM-540B")
    L, D, F = 118, 18432, 73728
    by_hand = L * (3 * D * F + 2 * D * 48 * 256 + 2 * D * 256) + 256000 * D + (L + 1) * D
    assert palm.total_params == by_hand
    # GPT-3 (brown2020gpt3): 12 L D^2, the linear layers' biases (Q, K, V, O: 4D; MLP: 4D + D),
    # two norm scales per layer and a final one, and the tied embedding.
    gpt3 = models.get("GPT-3-175B")
    L, D = 96, 12288
    assert gpt3.total_params == 12 * L * D**2 + 9 * L * D + (2 * L + 1) * D + 50257 * D
    # BLOOM 176B (hf_bloom): GPT-3's form at L 70, D 14336, tied 250880 x 14336 embedding
    # (the card's "3,596,615,680 embedding parameters"). The card's exact "176,247,271,424" adds
    # what the count leaves out: each layer's two LayerNorm biases, the final norm's bias and
    # the embedding LayerNorm's scale and bias, (2 L + 1 + 2) D = 143 x 14336 = 2,050,048.
    bloom = models.get("BLOOM-176B")
    L, D = 70, 14336
    assert 250880 * D == 3_596_615_680
    assert bloom.total_params == 12 * L * D**2 + 9 * L * D + (2 * L + 1) * D + 250880 * D
    assert bloom.total_params + (2 * L + 3) * D == 176_247_271_424
    # Mixtral 8x7B active (jiang2024mixtral): 2 of 8 experts of 3*4096*14336 in 32 layers.
    mix = models.get("Mixtral-8x7B")
    idle = 32 * 6 * 3 * 4096 * 14336
    assert mix.total_params - mix.active_params == idle


def test_dense_active_equals_total():
    for m in DENSE:
        assert m.active_params == m.total_params, m.name
        assert m.sparsity == 1


def test_moe_active_below_total():
    for m in MOE:
        assert m.active_params < m.total_params, m.name
        assert m.sparsity > 1
    # DeepSeek-V3: N_tot / N_act = 671 / 37 ~ 18 (episode_and_paper.md sec. 1.1)
    assert models.get("DeepSeek-V3").sparsity == pytest.approx(671 / 37, rel=0.02)


@pytest.mark.parametrize("model", ALL, ids=IDS)
def test_attention_kind(model: Model):
    assert model.attention_kind == ATTENTION_KIND[model.name]


# ----- KV cache ------------------------------------------------------------------------

def test_kv_bytes_per_token_published():
    assert models.get("Llama-3-70B").kv_bytes_per_token(2) == 80 * 2 * 8 * 128 * 2 == 327_680
    # Pope et al. 2022 (pope2022efficiently): MQA, one K and one V head of 256, 118 layers.
    assert models.get("PaLM-540B").kv_bytes_per_token(2) == 2 * 118 * 256 * 2 == 120_832
    # DeepSeek-V3 (deepseek_v3): latent 512 + RoPE key 64 per layer, 61 layers.
    assert models.get("DeepSeek-V3").kv_bytes_per_token(2) == 61 * 576 * 2 == 70_272
    # gpt-oss-120b config: 36 layers, 8 KV heads of 64.
    assert models.get("gpt-oss-120b").kv_bytes_per_token(2) == 36 * 2 * 8 * 64 * 2


def test_kv_bytes_scale_with_element_size():
    m = models.get("Llama-3-8B")
    assert m.kv_bytes_per_token(1) * 2 == m.kv_bytes_per_token(2)
    assert m.kv_cache_bytes(1000, 1) == pytest.approx(1000 * m.kv_bytes_per_token(1))


def test_mqa_and_mla_shrink_the_cache():
    palm = models.get("PaLM-540B")
    mha = palm.replace(name="PaLM-540B-MHA", n_kv_heads=48)
    assert mha.kv_bytes_per_token() == 48 * palm.kv_bytes_per_token()  # Pope et al. sec. 3.3


def test_sliding_window_caps_gpt_oss():
    m = models.get("gpt-oss-120b")
    per_layer = 2 * 8 * 64 * 2  # K and V, 8 heads of 64, bf16
    for s in (1, 64, 128):  # inside the window every layer holds every token
        assert m.kv_cache_bytes(s) == s * m.kv_bytes_per_token(2)
    for s in (129, 1000, 131072):  # beyond it the 18 sliding layers hold 128 tokens
        assert m.kv_cache_bytes(s) == (18 * s + 18 * 128) * per_layer
        assert m.kv_cache_bytes(s) < s * m.kv_bytes_per_token(2)
    # the slope beyond the window is half the full per-token bytes
    assert m.kv_cache_bytes(20001) - m.kv_cache_bytes(20000) == m.kv_bytes_per_token(2) / 2


def test_sparse_attention_reads_top_k():
    v32, v3 = models.get("DeepSeek-V3.2"), models.get("DeepSeek-V3")
    s = 100_000
    assert v3.kv_cache_bytes(s) == s * 70_272  # 61 layers x 576 latent elements x 2 B
    # the indexer's own key cache: 61 layers x (128 fp8 values + a 4 B fp32 scale)
    assert v32.kv_cache_bytes(s) == s * (70_272 + 61 * 132)
    assert v32.kv_read_bytes(s) == 2048 * 70_272 + s * 61 * 132 < v32.kv_cache_bytes(s)
    assert v32.kv_read_bytes(1000) == v32.kv_cache_bytes(1000)  # below top-k: all of it
    assert v3.kv_read_bytes(s) == v3.kv_cache_bytes(s)


@settings(max_examples=60, deadline=None)
@given(a=st.integers(0, 131072), b=st.integers(0, 131072))
def test_kv_monotone_and_read_le_held(a, b):
    lo, hi = sorted((a, b))
    for name in ("gpt-oss-120b", "DeepSeek-V3.2", "Llama-3.1-405B"):
        m = models.get(name)
        assert m.kv_cache_bytes(lo) <= m.kv_cache_bytes(hi)
        assert m.kv_read_bytes(lo) <= m.kv_read_bytes(hi)
        assert m.kv_read_bytes(hi) <= m.kv_cache_bytes(hi)


# ----- weights read per step ----------------------------------------------------------

@pytest.mark.parametrize("model", MOE, ids=[m.name for m in MOE])
def test_moe_weights_read_at_batch_one(model: Model):
    # One token: everything but the idle routed experts and the embedding table, plus one row.
    shared = (
        model.lm_head_params + model.norm_params
        + model.n_layers * model.attention_params_per_layer
        + model.n_dense_layers * model.dense_mlp_params
        + model.n_moe_layers * (model.shared_expert_params + model.router_params)
    )
    if model.tied_embeddings:
        shared += model.embedding_params
    k_experts = model.n_moe_layers * model.experts_per_token * model.expert_params
    one_row = 0 if model.tied_embeddings else model.d_model
    assert model.weight_params_read(1) == pytest.approx(shared + k_experts + one_row, rel=1e-12)
    # equivalently: the active parameters without the embedding table, plus the row
    assert model.weight_params_read(1) == pytest.approx(
        model.active_params - model.embedding_params + model.d_model, rel=1e-12)
    assert model.weight_params_read(1) < 0.5 * model.total_params


@pytest.mark.parametrize("model", MOE, ids=[m.name for m in MOE])
def test_moe_weights_read_tend_to_total(model: Model):
    assert model.weight_params_read(1e9) == pytest.approx(model.total_params, rel=1e-9)
    # below V tokens every expert is touched but only `tokens` embedding rows are gathered
    t = model.vocab_size // 2
    gathered = model.embedding_params - t * model.d_model
    assert model.weight_params_read(t) == pytest.approx(model.total_params - gathered, rel=1e-6)


def test_expected_distinct_experts_matches_simulation():
    """E (1 - (1 - k/E)^B) distinct experts, checked against uniform top-k routing."""
    m = models.get("Mixtral-8x7B")
    rng = np.random.default_rng(0)
    E, k, trials = 8, 2, 20000
    for batch in (1, 2, 3, 8):
        picks = np.argsort(rng.random((trials, batch, E)), axis=-1)[..., :k]
        distinct = np.array([len(np.unique(p)) for p in picks])
        routed = (m.weight_params_read(batch) - m.weight_params_read(1) - (batch - 1) * m.d_model)
        expected = k + routed / (m.n_moe_layers * m.expert_params)
        assert expected == pytest.approx(distinct.mean(), rel=0.02), batch


@settings(max_examples=80, deadline=None)
@given(a=st.floats(1, 1e7), b=st.floats(1, 1e7))
def test_weights_read_monotone_in_tokens(a, b):
    lo, hi = sorted((a, b))
    for name in ("DeepSeek-V3", "Mixtral-8x7B", "gpt-oss-120b", "Llama-3-70B", "PaLM-8B"):
        m = models.get(name)
        r_lo, r_hi = m.weight_params_read(lo), m.weight_params_read(hi)
        assert r_lo <= r_hi * (1 + 1e-12)
        assert r_hi <= m.total_params * (1 + 1e-12)


def test_dense_weights_read():
    m = models.get("Llama-3-70B")
    assert m.weight_params_read(1) == m.total_params - m.embedding_params + m.d_model
    tied = models.get("PaLM-540B")  # tied: the table is the LM head, read in full
    assert tied.weight_params_read(1) == tied.total_params


# ----- FLOPs ---------------------------------------------------------------------------

@pytest.mark.parametrize("model", ALL, ids=IDS)
def test_flops_at_zero_context(model: Model):
    assert model.flops_per_token(0) == 2 * model.matmul_params_active
    assert model.attention_flops_per_token(0) == 0
    # the untied input embedding is a gather; a tied table is the LM head and is multiplied
    gather = 0 if model.tied_embeddings else model.vocab_size * model.d_model
    assert model.active_params - model.matmul_params_active == gather + model.norm_params


def test_attention_flops_formula():
    # GQA: QK^T and AV over n_q heads of d_h, 2 FLOP per multiply-add, all layers
    assert models.get("Llama-3-70B").attention_flops_per_token(1000) == 4 * 80 * 64 * 128 * 1000
    # MLA, absorbed decode form: scores over 512 + 64, values over 512, 128 heads, 61 layers
    v3 = models.get("DeepSeek-V3")
    assert v3.attention_flops_per_token(1000) == 2 * 128 * (2 * 512 + 64) * 61 * 1000


@pytest.mark.parametrize("model",
                         [m for m in ALL if not m.n_sliding_layers and not m.sparse_attention_topk],
                         ids=[m.name for m in ALL
                              if not m.n_sliding_layers and not m.sparse_attention_topk])
def test_attention_flops_linear_in_context(model: Model):
    s = np.array([1, 100, 1000, model.max_context // 2, model.max_context])
    f = model.attention_flops_per_token(s)
    assert np.allclose(f / s, f[0])
    assert model.flops_per_token(model.max_context) > model.flops_per_token(0)


def test_attention_flops_window_and_topk():
    oss = models.get("gpt-oss-120b")
    slope_full = oss.attention_flops_per_token(2) - oss.attention_flops_per_token(1)
    slope_far = oss.attention_flops_per_token(10_001) - oss.attention_flops_per_token(10_000)
    assert slope_far == pytest.approx(slope_full / 2)  # only the 18 global layers keep growing
    v32 = models.get("DeepSeek-V3.2")
    assert v32.attention_flops_per_token(100_000) == v32.attention_flops_per_token(2048)


def test_mla_prefill_uses_the_unabsorbed_form():
    # Prefill expands the latent into per-head K and V once per token and attends with ordinary
    # heads: 2 x 128 heads x (192 + 128) = 81,920 FLOP per pair per layer, not the absorbed
    # decode form's 2 x 128 x (2 x 512 + 64) = 278,528.
    v3 = models.get("DeepSeek-V3")
    assert v3.prefill_attention_flops(1000) == pytest.approx(61 * 1000 * 1001 / 2 * 81_920)
    assert v3.attention_flops_per_token(1000) == pytest.approx(61 * 1000 * 278_528)
    # after 5000 cached tokens, 7 new ones: attending to the 5000 latents absorbed
    # (7 x 5000 pairs x 278,528) is cheaper than expanding them (5000 x 2 x 512 x 128 x 256)
    past_pairs, expand = 7 * 5000 * (278_528 - 81_920), 5000 * 2 * 512 * 128 * 256
    new = (5007 * 5008 - 5000 * 5001) / 2 * 81_920
    assert v3.prefill_attention_flops(7, 5000) == pytest.approx(
        61 * (new + min(past_pairs, expand)))
    # 2,000 new ones: expanding is cheaper
    past_pairs, expand = 2000 * 5000 * (278_528 - 81_920), 5000 * 2 * 512 * 128 * 256
    new = (7000 * 7001 - 5000 * 5001) / 2 * 81_920
    assert past_pairs > expand
    assert v3.prefill_attention_flops(2000, 5000) == pytest.approx(61 * (new + expand))


def test_indexer_flops_score_every_cached_token():
    v32 = models.get("DeepSeek-V3.2")
    # 64 heads x 128 wide dot products, then a weighted sum over the 64 heads: 2 x 64 x 129
    assert v32.indexer_flops_per_token(10_000) == pytest.approx(61 * 10_000 * 2 * 64 * 129)
    assert v32.prefill_indexer_flops(100) == pytest.approx(61 * 100 * 101 / 2 * 2 * 64 * 129)
    assert models.get("DeepSeek-V3").indexer_flops_per_token(10_000) == 0


@pytest.mark.parametrize("name", ["Llama-3-8B", "gpt-oss-120b"])
def test_prefill_is_sum_of_decode_steps(name):
    m = models.get(name)
    for past, prompt in ((0, 300), (100, 50), (2000, 200), (5000, 7)):
        steps = sum(m.attention_flops_per_token(past + i) for i in range(1, prompt + 1))
        assert m.prefill_attention_flops(prompt, past) == pytest.approx(steps, rel=1e-12)


# Chapter 2's rule of thumb: for a dense MHA/GQA transformer, attention's FLOPs per token
# (4 L n_q d_h S) equal the matmul FLOPs (2 N, N ~ 12 L D^2 for a plain MHA model) at a context
# of about 6 D. Measured crossovers (S* / D): GPT-3 6.0, MT-NLG 6.0, LLaMA-2 7B/13B/70B
# 6.2/6.1/6.4, Llama 3 8B/70B/405B 7.0/6.5/6.0. MQA with wide heads (PaLM, not asserted here)
# lands at 7-10 D; MoE models cross far earlier relative to D because few parameters are
# active (Qwen3-235B-A22B ~3.4 D, DeepSeek-V3 ~0.6 D with MLA's latent-space attention).
DENSE_MHA_GQA = [m for m in DENSE if m.attention_kind in ("MHA", "GQA")]


def crossover_context(model: Model) -> float:
    """Context at which attention FLOPs per token equal the matmul FLOPs (2 N_matmul)."""
    per_context_token = model.attention_flops_per_token(1000) / 1000
    return model.flops_per_token(0) / per_context_token


@pytest.mark.parametrize("model", DENSE_MHA_GQA, ids=[m.name for m in DENSE_MHA_GQA])
def test_attention_matmul_crossover_is_a_few_d_model(model: Model):
    ratio = crossover_context(model) / model.d_model
    assert 5.5 <= ratio <= 7.5, f"{model.name}: S*/D = {ratio:.2f}"


def test_crossover_closed_form_plain_mha():
    # 2 * 12 L D^2 / (4 L D) = 6 D, up to the embedding and biases
    gpt3 = models.get("GPT-3-175B")
    assert crossover_context(gpt3) == pytest.approx(6 * 12288, rel=0.01)


def test_moe_crosses_over_earlier():
    for m in MOE:
        dense_like = 2 * m.total_params / (m.attention_flops_per_token(1000) / 1000)
        assert crossover_context(m) < dense_like


# ----- argument checks -----------------------------------------------------------------

def _toy(**changes):
    args = dict(name="toy", n_layers=4, d_model=256, d_ff=1024, n_heads=8, n_kv_heads=2,
                vocab_size=1000, max_context=4096)
    args.update(changes)
    return Model(**args)


def test_toy_model_is_valid():
    toy = _toy()
    assert toy.attention_kind == "GQA" and toy.head_dim == 32


@pytest.mark.parametrize("changes, argument", [
    (dict(d_model=-256), "d_model"),
    (dict(n_layers=0), "n_layers"),
    (dict(vocab_size=10.5), "vocab_size"),
    (dict(n_kv_heads=3), "n_kv_heads"),
    (dict(n_experts=4, experts_per_token=8, d_ff_expert=128), "experts_per_token"),
    (dict(n_experts=4, experts_per_token=2), "d_ff_expert"),
    (dict(experts_per_token=2), "n_experts"),
    (dict(n_dense_layers=5), "n_dense_layers"),
    (dict(n_sliding_layers=2), "sliding_window"),
    (dict(max_context=-1), "max_context"),
])
def test_bad_fields_raise_naming_the_field(changes, argument):
    with pytest.raises(ValueError, match=argument):
        _toy(**changes)


def test_bad_call_arguments_raise_naming_the_argument():
    m = models.get("Llama-3-70B")
    with pytest.raises(ValueError, match="context"):
        m.kv_cache_bytes(8193)  # beyond max_context 8192
    with pytest.raises(ValueError, match="context"):
        m.attention_flops_per_token(-1)
    with pytest.raises(ValueError, match="context"):
        m.kv_read_bytes(np.array([10, 10**6]))
    with pytest.raises(ValueError, match="bytes_per_element"):
        m.kv_bytes_per_token(-2)
    with pytest.raises(ValueError, match="tokens"):
        m.weight_params_read(0)
    with pytest.raises(ValueError, match="past"):
        m.prefill_attention_flops(8000, past=1000)
    with pytest.raises(ValueError, match="prompt"):
        m.prefill_attention_flops(-5)
    assert m.kv_cache_bytes(8192) == 8192 * 327_680  # the limit itself is fine


def test_replace_drops_published_totals():
    m = models.get("Llama-3-70B").replace(name="Llama-3-70B-MQA", n_kv_heads=1)
    assert m.published_params is None and m.attention_kind == "MQA"
    assert m.kv_bytes_per_token() == 80 * 2 * 128 * 2


# ----- lookup ---------------------------------------------------------------------------

@pytest.mark.parametrize("spelling, name", [
    ("llama-3-70b", "Llama-3-70B"),
    ("LLAMA 3 70B", "Llama-3-70B"),
    ("llama3_70b", "Llama-3-70B"),
    ("deepseekv3", "DeepSeek-V3"),
    ("GPT_OSS_120B", "gpt-oss-120b"),
    ("mixtral 8x7b", "Mixtral-8x7B"),
])
def test_get_is_case_and_punctuation_insensitive(spelling, name):
    assert models.get(spelling) is models.get(name)


def test_unknown_model_raises_with_close_matches():
    with pytest.raises(KeyError, match="Llama-3-70B"):
        models.get("Llama-3-80B")
    with pytest.raises(KeyError, match="unknown model"):
        models.get("no such model")


def test_catalogue_index_rejects_duplicate_names():
    with pytest.raises(ValueError, match="^name: model 'PaLM-8B' appears twice in the catalogue$"):
        models._index([models.get("PaLM-8B"), models.get("PaLM-8B")])


@pytest.mark.parametrize("name", models.names())
def test_context_for_read_span_inverts_the_read_span(name):
    m = models.get(name)
    contexts = np.array([1.0, 100.0, 5000.0, 60000.0])
    capped = np.minimum(contexts, m.max_context or np.inf)

    def attention_reads(c):  # the read span is attention's (an indexer's keys are not in it)
        return m.kv_read_bytes(c, 2) - m.indexer_cache_bytes(c)

    span = attention_reads(capped) / (2 * m.kv_elements_per_token_per_layer)
    s, ok = m.context_for_read_span(span)
    assert np.all(ok)
    np.testing.assert_allclose(attention_reads(s), attention_reads(capped))


def test_context_for_read_span_dense_by_hand_and_unreachable():
    m = models.get("Llama-3-70B")
    s, ok = m.context_for_read_span(80 * 4096)  # every layer reads S tokens: S = span / L
    assert bool(ok) and float(s) == pytest.approx(4096)
    capped = m.replace(name="windowed", sliding_window=1024, n_sliding_layers=80)
    s, ok = capped.context_for_read_span(80 * 2048)  # every read capped at 1024 tokens
    assert not bool(ok) and float(s) == 0.0


def test_experts_touched_by_hand():
    # Mixtral-8x7B routes 2 of 8: one token touches 2 experts; two tokens miss a given expert
    # with probability (6/8)^2 = 0.5625, so touch 8 x 0.4375 = 3.5; a huge batch touches all 8.
    m = models.get("Mixtral-8x7B")
    assert m.experts_touched(1) == pytest.approx(2.0, rel=1e-12)
    assert m.experts_touched(2) == pytest.approx(3.5, rel=1e-12)
    assert np.allclose(m.experts_touched(np.array([1.0, 2.0, 1e6])), [2.0, 3.5, 8.0], rtol=1e-12)
    # DeepSeek-V3, 8 of 256: 100 tokens touch 256 (1 - (248/256)^100) = 245.32
    assert models.get("DeepSeek-V3").experts_touched(100) == pytest.approx(
        256 * (1 - (248 / 256) ** 100), rel=1e-12)
    assert models.get("Llama-3-8B").experts_touched(64) == 0.0  # dense: no routed experts
    with pytest.raises(ValueError, match="tokens"):
        m.experts_touched(-1)


# ----- edges the mutation run found untested (issue 20) -----------------------------------------

def test_attention_crossover_with_an_indexer_by_hand():
    # DeepSeek-V3.2: 2 x 36,624,736,768 = 73,249,473,536 matmul FLOP a token; per cached token and
    # layer attention (absorbed MLA) does 2 x 128 x (2 x 512 + 64) = 278,528 FLOP over its top
    # 2048 and the indexer 16,512 over every token, on 61 layers. At 2048 tokens that is
    # 61 x 2048 x 295,040 = 36,858,757,120 FLOP, below the matmuls'; past 2048 only the indexer
    # grows: S* = 2048 + (73,249,473,536 - 36,858,757,120) / (61 x 16,512) = 38,177.4
    v32 = models.get("DeepSeek-V3.2")
    full = 2 * 36_624_736_768
    at_k = 61 * 2048 * (278_528 + 16_512)
    assert models.attention_crossover_context(v32) == pytest.approx(
        2048 + (full - at_k) / (61 * 16_512), rel=1e-12)
    # with a top-8192 the crossing comes before the cap, where attention grows as
    # 61 x (278,528 + 16,512) a token: S* = full / 17,997,440 = 4,069.97
    wide = v32.replace(sparse_attention_topk=8192)
    assert models.attention_crossover_context(wide) == pytest.approx(
        full / (61 * (278_528 + 16_512)), rel=1e-12)


def test_context_for_read_span_with_two_caps_by_hand(deepseek_v32_windowed):
    # DeepSeek-V3.2 with 31 of its 61 layers windowed at 512 (30 global, top-2048):
    # f(S) = 30 min(S, 2048) + 31 min(S, 512); f(512) = 31,232, f(2048) = 77,312
    m = deepseek_v32_windowed
    s, ok = m.context_for_read_span(np.array([10_000.0, 50_000.0, 77_312.0, 80_000.0]))
    assert list(ok) == [True, True, True, False]
    assert s == pytest.approx([10_000 / 61, 512 + (50_000 - 31_232) / 30, 2048, 0.0], rel=1e-12)


def test_cap_context_by_hand():
    m = models.get("Llama-3-8B")  # 8,192-token window
    assert m.cap_context(100) == (100.0, "")
    assert m.cap_context(0) == (0.0, "")
    assert m.cap_context(8192) == (8192.0, "")  # the window itself is not capped
    got = m.cap_context(10_000)
    assert got == (8192.0, "context capped at 8.19k") and type(got[0]) is float
    assert models.get("Llama-3-8B").replace(max_context=None).cap_context(1e7) == (1e7, "")
    with pytest.raises(ValueError, match="^context"):
        m.cap_context(-1)


def test_mha_twins_are_plain_multihead_models():
    v3 = models.mha_equivalent(models.get("DeepSeek-V3"))
    t = v3.model
    assert t.name == "DeepSeek-V3 as MHA"
    assert (t.kv_lora_rank, t.q_lora_rank, t.qk_nope_head_dim, t.qk_rope_head_dim,
            t.v_head_dim) == (None,) * 5
    assert (t.n_kv_heads, t.head_dim) == (128, 128)
    # 2 x 128 x 128 numbers a layer against MLA's 512 + 64: 56.9x
    assert v3.kv_ratio == pytest.approx(2 * 128 * 128 / 576, rel=1e-12)
    l8 = models.mha_equivalent(models.get("Llama-3-8B"))
    assert l8.model.name == "Llama-3-8B as MHA" and l8.model.n_kv_heads == 32
    assert l8.kv_ratio == 4.0  # 32 query heads over 8 KV heads
    palm = models.palm_multihead_baseline()
    assert palm.model.name == "PaLM 540B, multihead (Pope et al. 2022)"
    assert (palm.model.n_heads, palm.model.n_kv_heads, palm.model.head_dim) == (64, 64, 128)
    assert palm.kv_ratio == 2 * 64 * 128 / (2 * 1 * 256)  # against one K/V head of 256: 32x


_BASE = dict(name="m", n_layers=4, d_model=256, d_ff=1024, n_heads=8, vocab_size=1000)
_MOE = dict(_BASE, n_experts=8, experts_per_token=2, d_ff_expert=128)
_V32 = models.get("DeepSeek-V3.2")


@pytest.mark.parametrize("fields, name", [
    *[(dict(_BASE, **{f: 2.5}), f) for f in ("n_layers", "d_model", "d_ff", "n_heads",
                                              "vocab_size")],
    (dict(_BASE, n_kv_heads=2.5), "n_kv_heads"),
    (dict(_BASE, n_kv_heads=3), "n_kv_heads"),  # does not divide 8 heads
    (dict(_BASE, d_model=250, n_heads=5, n_kv_heads=2.5), "n_kv_heads"),  # 5 / 2.5 is whole
    (dict(_BASE, head_dim=0), "head_dim"),
    (dict(_MOE, experts_per_token=1.5), "experts_per_token"),
    (dict(_MOE, experts_per_token=9), "experts_per_token"),
    (dict(_MOE, d_ff_expert=None), "d_ff_expert"),
    (dict(_MOE, d_ff_expert=64.5), "d_ff_expert"),
    (dict(_BASE, experts_per_token=2), "n_experts"),
    (dict(_BASE, n_dense_layers=5), "n_dense_layers"),
    (dict(_BASE, kv_lora_rank=64, qk_nope_head_dim=32.5, qk_rope_head_dim=16, v_head_dim=32),
     "qk_nope_head_dim"),
    (dict(_BASE, n_sliding_layers=5, sliding_window=64), "n_sliding_layers"),
    (dict(_BASE, n_sliding_layers=2), "sliding_window"),
    (dict(_BASE, sliding_window=64.5, n_sliding_layers=2), "sliding_window"),
    (dict(_BASE, max_context=0.5), "max_context"),
    (dict(_BASE, index_n_heads=4, index_head_dim=32, index_key_bytes=40), "index_n_heads"),
    (dict(_BASE, sparse_attention_topk=64, index_n_heads=4, index_head_dim=32.5,
          index_key_bytes=40), "index_head_dim"),
    (dict(_BASE, sparse_attention_topk=64, index_n_heads=4, index_head_dim=32,
          index_key_bytes=0), "index_key_bytes"),
])
def test_a_model_with_a_bad_field_is_refused_by_name(fields, name):
    with pytest.raises(ValueError) as info:
        Model(**fields)
    assert info.value.args[0].startswith(name), info.value.args[0]


def test_model_defaults_and_edges_that_are_allowed():
    m = Model(**_BASE)
    assert (m.n_kv_heads, m.head_dim) == (8, 32) and type(m.head_dim) is int  # 256 // 8
    assert Model(**_BASE, n_dense_layers=4).n_dense_layers == 4  # every layer dense
    assert Model(**dict(_MOE, experts_per_token=8)).experts_per_token == 8  # every expert
    assert Model(**dict(_MOE, n_dense_layers=4)).n_moe_layers == 0
    with pytest.raises(ValueError, match="^sliding_window: n_sliding_layers > 0 needs a window "
                                         "size$"):
        Model(**_BASE, n_sliding_layers=2)
    with pytest.raises(ValueError, match=r"^index_n_heads, index_head_dim, index_key_bytes: an "
                                         r"indexer needs all three and sparse_attention_topk "
                                         r"\(the tokens it selects\)$"):
        Model(**_BASE, sparse_attention_topk=64, index_n_heads=4, index_head_dim=32)
    with pytest.raises(ValueError, match=r"^d_ff_expert: an MoE model \(n_experts > 0\) needs the "
                                         r"expert MLP width$"):
        Model(**dict(_MOE, d_ff_expert=None))
    with pytest.raises(ValueError, match="^n_experts: got 0 but experts_per_token/"
                                         "n_shared_experts are set; set n_experts$"):
        Model(**_BASE, n_shared_experts=1)
    # replace() drops the published totals (they describe the original) unless given
    assert models.get("Llama-3-8B").replace(n_layers=16).published_params is None
    assert models.get("Llama-3-8B").replace(n_layers=16, published_params=1).published_params == 1


@pytest.mark.parametrize("name", ["Llama-3-8B", "Mixtral-8x7B", "DeepSeek-V3", "TIED"])
def test_weight_params_read_slope_is_the_derivative(name):
    """The slope the critical-batch solver uses, against a centred finite difference of
    weight_params_read (an independent computation): embedding rows below the vocabulary
    (none for a tied model, none past V), and experts still untouched for an MoE."""
    m = (models.get("Llama-3-8B").replace(tied_embeddings=True) if name == "TIED"
         else models.get(name))
    for tokens in (1.0, 7.0, 100.0, 5000.0, 200_000.0):
        h = tokens * 1e-4
        fd = (m.weight_params_read(tokens + h) - m.weight_params_read(tokens - h)) / (2 * h)
        assert m._weight_params_read_slope(tokens) == pytest.approx(fd, rel=1e-5, abs=1e-3)
        arr = m._weight_params_read_slope(np.array([tokens]))
        assert float(np.ravel(arr)[0]) == pytest.approx(fd, rel=1e-5, abs=1e-3)
    if name == "Llama-3-8B":  # exactly D below the vocabulary, 0 past it
        assert m._weight_params_read_slope(100.0) == 4096
        assert m._weight_params_read_slope(200_000.0) == 0.0
        # at the vocabulary itself every row is read: a further token reads no new row
        assert m._weight_params_read_slope(128_256.0) == 0.0
        assert m._weight_params_read_slope(np.array([128_255.0, 128_256.0])).tolist() == [4096, 0]
    # a Python float in, a Python number out, no numpy (the critical-batch solver's scalar path)
    assert type(m._weight_params_read_slope(7.0)) in (int, float)


def test_experts_touched_default_is_one_token():
    assert models.get("Mixtral-8x7B").experts_touched() == pytest.approx(2.0, rel=1e-12)
    with pytest.raises(ValueError, match="^tokens"):
        models.get("Llama-3-8B").experts_touched(0)


def test_experts_touched_keeps_the_callers_type():
    # Python float in, Python float out; an array in, the same shape out, also when every token
    # uses every expert (Mixtral with 8 of 8 routed: 8 experts at any batch)
    m, every = models.get("Mixtral-8x7B"), models.get("Mixtral-8x7B").replace(experts_per_token=8)
    assert type(m.experts_touched(2.0)) is float and type(every.experts_touched(2.0)) is float
    assert every.experts_touched(3.0) == 8.0
    got = every.experts_touched(np.array([1.0, 5.0, 1e6]))
    assert isinstance(got, np.ndarray) and got.tolist() == [8.0, 8.0, 8.0]


def test_flops_per_token_adds_the_indexer_by_hand():
    # DeepSeek-V3.2 at 4,096 tokens (numbers as in
    # test_attention_crossover_with_an_indexer_by_hand):
    # 2 x 36,624,736,768 matmul FLOP, attention over its top 2,048 (278,528 FLOP a token and
    # layer) and the indexer's scoring of all 4,096 (16,512 a token and layer), on 61 layers
    v32 = models.get("DeepSeek-V3.2")
    assert v32.flops_per_token(4096) == pytest.approx(
        2 * 36_624_736_768 + 61 * 2048 * 278_528 + 61 * 4096 * 16_512, rel=1e-12)


def test_mla_twin_has_a_kv_head_per_query_head_whatever_n_kv_heads_says():
    # MLA caches a latent, so its n_kv_heads field plays no part; the twin still gets 128 K/V
    # heads of 128 (2 x 128 x 128 numbers a layer, against 512 + 64 for the latent)
    v3 = models.get("DeepSeek-V3").replace(name="V3, one KV head", n_kv_heads=1)
    twin = models.mha_equivalent(v3)
    assert (twin.model.n_kv_heads, twin.model.head_dim) == (128, 128)
    assert twin.kv_ratio == pytest.approx(2 * 128 * 128 / 576, rel=1e-12)


def test_sparse_mla_prefill_by_hand():
    # DeepSeek-V3.2 (V3's MLA: 128 heads, latent 512, 81,920 FLOP a pair un-absorbed, 278,528
    # absorbed) with a top-2048 selection, after 5,000 cached tokens: every new query attends to
    # 2,048 keys. 100 new tokens: 204,800 pairs, all cheaper absorbed than expanding the 2,048
    # selected latents (2,048 x 2 x 512 x 128 x 256 = 68,719,476,736 FLOP).
    v32 = models.get("DeepSeek-V3.2")
    assert v32.prefill_attention_flops(100, 5000) == pytest.approx(
        61 * 100 * 2048 * 278_528, rel=1e-12)
    # 4,000 new tokens: 8,192,000 pairs un-absorbed, plus expanding the 2,048 selected latents
    # once (not all 5,000 cached ones)
    assert v32.prefill_attention_flops(4000, 5000) == pytest.approx(
        61 * (4000 * 2048 * 81_920 + 2048 * 2 * 512 * 128 * 256), rel=1e-12)

"""The model catalogue: architectures from public configs and papers, with the published totals.

Every entry is data: the field values come from the model's public ``config.json`` (Hugging
Face field names are mapped in :mod:`llmmath.models`) or, for models without one, from the
architecture table of the paper; ``published_params`` / ``published_active_params`` are the
figures the cited paper or model card states, and ``tests/test_models.py`` checks that the
counting in :class:`~llmmath.models.Model` reproduces them within 1 %. ``notes`` says what
is approximate or left out.
"""

from .models import Model

_PALM_NOTES = (
    "Chowdhery et al. 2022, Table 1: multi-query attention (one K/V head of 256), "
    "head_dim 256 for all sizes, d_ff = 4 d_model with SwiGLU (3 matrices), parallel "
    "attention/MLP block (one LayerNorm per layer), no biases, RoPE, tied input/output "
    "embeddings, SentencePiece vocabulary 256000, training context 2048."
)

    #: Every catalogue entry, in catalogue order: plain data, indexed by name in
    #: :mod:`llmmath.models`.
MODELS: tuple[Model, ...] = (
    # ----- GPT-3 and other multi-head-attention models ---------------------------------------

    Model(
        name="GPT-3-175B", n_layers=96, d_model=12288, d_ff=49152, n_heads=96, head_dim=128,
        vocab_size=50257, tied_embeddings=True, gated_mlp=False, attention_bias=True, mlp_bias=True,
        max_context=2048, published_params=175.0e9, published_active_params=175.0e9,
        source="brown2020gpt3", year=2020,
        notes=(
            "Brown et al. 2020, Table 2.1: 96 layers, d_model 12288, 96 heads of 128, context "
            "2048; d_ff = 4 d_model. GPT-2 style: plain GELU MLP, biases everywhere, input and "
            "output embeddings tied, BPE vocabulary 50257. Learned position embeddings (2048 x "
            "12288 = 25M, 0.014%) and LayerNorm biases are not counted. Alternating dense and "
            "locally banded sparse attention layers are treated as dense."
        ),
    ),

    Model(
        name="MT-NLG-530B", n_layers=105, d_model=20480, d_ff=81920, n_heads=128, head_dim=160,
        vocab_size=51200, tied_embeddings=True, gated_mlp=False, attention_bias=True, mlp_bias=True,
        max_context=2048, published_params=530e9, published_active_params=530e9,
        source="smith2022mtnlg", year=2022,
        notes=(
            "Megatron-Turing NLG (Smith et al. 2022; Pope et al. 2022 Table D.1): 105 layers, "
            "d_model 20480, 128 heads of 160, d_ff 4 d_model, multi-head attention, serial block, "
            "plain GELU MLP with biases. Vocabulary: GPT-2 BPE padded to 51200 (Megatron default), "
            "tied; learned position embeddings (2048 x 20480 = 42M) not counted."
        ),
    ),

    Model(
        name="BLOOM-176B", n_layers=70, d_model=14336, d_ff=57344, n_heads=112, head_dim=128,
        vocab_size=250880, tied_embeddings=True, gated_mlp=False, attention_bias=True,
        mlp_bias=True, max_context=2048, published_params=176_247_271_424,
        published_active_params=176_247_271_424, source="hf_bloom", year=2022,
        notes=(
            "Model card of bigscience/bloom [hf_bloom]: '176,247,271,424 parameters', of them "
            "'3,596,615,680 embedding parameters' (= 250880 x 14336: one table, input and output "
            "embeddings tied; the training notes print the embedding as '250880*14336' "
            "[bigscience_tr11_176b]), '70 layers, 112 attention heads', 'Hidden layers are "
            "14336-dimensional', 'Sequence length of 2048 tokens used', ALiBi positional "
            "encodings with GeLU. d_ff = 4 d_model is fixed in the code (BloomMLP's "
            "dense_h_to_4h), plain GELU MLP, biases on every linear layer. ALiBi has no "
            "parameters. The count is 2,050,048 (143 x 14336, 0.001%) below the card's: the "
            "LayerNorm biases and the embedding LayerNorm are not counted. Training: 384 A100 "
            "80GB, TP 4 PP 12 DP 8 [bigscience_tr11_176b]."
        ),
    ),

    # ----- PaLM: multi-query attention, parallel block, tied 256k vocabulary ------------------

    Model(
        name="PaLM-8B", n_layers=32, d_model=4096, d_ff=16384, n_heads=16, n_kv_heads=1,
        head_dim=256, vocab_size=256000, tied_embeddings=True, parallel_block=True,
        max_context=2048, published_params=8.63e9, published_active_params=8.63e9,
        source="chowdhery2022palm", year=2022, notes=_PALM_NOTES,
    ),
    Model(
        name="PaLM-62B", n_layers=64, d_model=8192, d_ff=32768, n_heads=32, n_kv_heads=1,
        head_dim=256, vocab_size=256000, tied_embeddings=True, parallel_block=True,
        max_context=2048, published_params=62.50e9, published_active_params=62.50e9,
        source="chowdhery2022palm", year=2022, notes=_PALM_NOTES,
    ),
    Model(
        name="PaLM-540B", n_layers=118, d_model=18432, d_ff=73728, n_heads=48, n_kv_heads=1,
        head_dim=256, vocab_size=256000, tied_embeddings=True, parallel_block=True,
        max_context=2048, published_params=540.35e9, published_active_params=540.35e9,
        source="chowdhery2022palm", year=2022,
        notes=_PALM_NOTES + (
            " Pope et al. 2022 pad the 48 heads to 64 for serving (+18B parameters); this entry "
            "is the unpadded model."
        ),
    ),

    # ----- Llama 2 and Llama 3 ------------------------------------------------------------

    Model(
        name="LLaMA-2-7B", n_layers=32, d_model=4096, d_ff=11008, n_heads=32, vocab_size=32000,
        max_context=4096, published_params=6.74e9, published_active_params=6.74e9,
        source="touvron2023llama2", year=2023,
        notes=(
            "config.json of meta-llama/Llama-2-7b-hf [hf_llama2_7b]: multi-head attention (32 "
            "heads of 128), SwiGLU d_ff 11008, untied vocabulary 32000, context 4096. Published: "
            "the '7B' of Touvron et al. 2023 Table 1 is nominal; 6.74e9 is the released "
            "checkpoint's count (safetensors index total_size 13,476,839,424 B at 2 B per "
            "parameter), and LLaMA-1 7B, of the same shape, is '6.7B' in Touvron et al. 2023a "
            "Table 2."
        ),
    ),
    Model(
        name="LLaMA-2-13B", n_layers=40, d_model=5120, d_ff=13824, n_heads=40, vocab_size=32000,
        max_context=4096, published_params=13.0e9, published_active_params=13.0e9,
        source="touvron2023llama2", year=2023,
        notes=(
            "config.json of meta-llama/Llama-2-13b-hf [hf_llama2_13b]: multi-head attention (40 "
            "heads of 128), "
            "SwiGLU d_ff 13824, untied vocabulary 32000, context 4096. Same shape as LLaMA-1 13B, "
            "whose paper (Touvron et al. 2023a, Table 2) states 13.0B; exact count 13.02e9."
        ),
    ),
    Model(
        name="LLaMA-2-70B", n_layers=80, d_model=8192, d_ff=28672, n_heads=64, n_kv_heads=8,
        vocab_size=32000, max_context=4096, published_params=68.98e9,
        published_active_params=68.98e9, source="touvron2023llama2", year=2023,
        notes=(
            "config.json of meta-llama/Llama-2-70b-hf [hf_llama2_70b]: grouped-query attention (64 "
            "query heads, 8 KV heads of 128), SwiGLU d_ff 28672, untied vocabulary 32000, context "
            "4096. The paper's '70B' is nominal (the count is 1.5% below it); 68.98e9 is the "
            "released checkpoint's count as the model page reports it ('69B')."
        ),
    ),
    Model(
        name="Llama-3-8B", n_layers=32, d_model=4096, d_ff=14336, n_heads=32, n_kv_heads=8,
        vocab_size=128256, max_context=8192, published_params=8.03e9,
        published_active_params=8.03e9, source="llama3_herd", year=2024,
        notes=(
            "Dubey et al. 2024 Table 3 and config.json of meta-llama/Meta-Llama-3-8B "
            "[hf_llama3_8b]: 32 layers, GQA 32/8 heads of 128, SwiGLU d_ff 14336, untied "
            "vocabulary 128256 (128000 + 256 special). Context 8192 (Llama 3.1-8B: same weights "
            "shape, 131072). Published 8.03e9 is the model card's exact count."
        ),
    ),
    Model(
        name="Llama-3-70B", n_layers=80, d_model=8192, d_ff=28672, n_heads=64, n_kv_heads=8,
        vocab_size=128256, max_context=8192, published_params=70.6e9,
        published_active_params=70.6e9, source="llama3_herd", year=2024,
        notes=(
            "Dubey et al. 2024 Table 3 and config.json of meta-llama/Meta-Llama-3-70B "
            "[hf_llama3_70b]: 80 layers, GQA 64/8 heads of 128, SwiGLU d_ff 28672, untied "
            "vocabulary 128256. Context 8192 (Llama 3.1-70B: 131072). Published 70.6e9 is the "
            "model card's count."
        ),
    ),
    Model(
        name="Llama-3.1-405B", n_layers=126, d_model=16384, d_ff=53248, n_heads=128, n_kv_heads=8,
        vocab_size=128256, max_context=131072, published_params=405e9,
        published_active_params=405e9, source="llama3_herd", year=2024,
        notes=(
            "Dubey et al. 2024 Table 3 and config.json of meta-llama/Llama-3.1-405B "
            "[hf_llama31_405b]: 126 layers, d_model 16384, GQA 128/8 heads of 128, SwiGLU d_ff "
            "53248, untied vocabulary 128256, context 128K. Published: the paper's 405B (exact "
            "count 405.85e9)."
        ),
    ),

    # ----- Mixtral: 8 experts, top 2 ------------------------------------------------------

    Model(
        name="Mixtral-8x7B", n_layers=32, d_model=4096, d_ff=14336, n_heads=32, n_kv_heads=8,
        vocab_size=32000, n_experts=8, experts_per_token=2, d_ff_expert=14336,
        max_context=32768, published_params=46.7e9, published_active_params=12.9e9,
        source="jiang2024mixtral", year=2024,
        notes=(
            "config.json of mistralai/Mixtral-8x7B-v0.1 [hf_mixtral_8x7b] (Jiang et al. 2024 Table "
            "1): 32 layers, GQA 32/8 heads of 128, every layer an MoE of 8 SwiGLU experts of width "
            "14336, top-2, untied vocabulary 32000, context 32768. Published 46.7B total / 12.9B "
            "active (Mistral AI announcement; the paper rounds to 47B / 13B). The router has no "
            "bias (the count adds 8 per layer: negligible)."
        ),
    ),
    Model(
        name="Mixtral-8x22B", n_layers=56, d_model=6144, d_ff=16384, n_heads=48, n_kv_heads=8,
        vocab_size=32000, n_experts=8, experts_per_token=2, d_ff_expert=16384,
        max_context=65536, published_params=141e9, published_active_params=39e9,
        source="mistral2024mixtral8x22b", year=2024,
        notes=(
            "config.json of mistralai/Mixtral-8x22B-v0.1 [hf_mixtral_8x22b]: 56 layers, d_model "
            "6144, GQA 48/8 heads of 128, 8 SwiGLU experts of width 16384 per layer, top-2, untied "
            "vocabulary 32000 (32768 in the Instruct release), context 65536. Published 141B total "
            "/ 39B active (Mistral AI announcement)."
        ),
    ),

    # ----- DeepSeek: multi-head latent attention + fine-grained MoE ----------------------------

    Model(
        name="DeepSeek-V3", n_layers=61, d_model=7168, d_ff=18432, n_heads=128, vocab_size=129280,
        n_experts=256, experts_per_token=8, n_shared_experts=1, d_ff_expert=2048, n_dense_layers=3,
        kv_lora_rank=512, q_lora_rank=1536, qk_nope_head_dim=128, qk_rope_head_dim=64,
        v_head_dim=128, max_context=131072, published_params=671e9, published_active_params=37e9,
        source="deepseek_v3", year=2024,
        notes=(
            "config.json of deepseek-ai/DeepSeek-V3 [hf_deepseek_v3] (Technical Report Sec. 4.2): "
            "61 layers, the first 3 dense (d_ff 18432), the rest MoE with 1 shared + 256 routed "
            "experts of width 2048, 8 routed per token; MLA with 128 heads, kv_lora_rank 512, "
            "q_lora_rank 1536, nope/rope/v head dims 128/64/128; untied vocabulary 129280. The "
            "published 671B/37B exclude the 14B multi-token-prediction module (the 685B checkpoint "
            "includes it), and so does this entry. The active count is 37.55B with both embedding "
            "tables (36.63B without the input one); the stated '37B' fits either reading. Context "
            "128K (config max_position_embeddings 163840). Node-limited routing (groups) does not "
            "change the counts."
        ),
    ),
    Model(
        name="DeepSeek-V3.2", n_layers=61, d_model=7168, d_ff=18432, n_heads=128, vocab_size=129280,
        n_experts=256, experts_per_token=8, n_shared_experts=1, d_ff_expert=2048, n_dense_layers=3,
        kv_lora_rank=512, q_lora_rank=1536, qk_nope_head_dim=128, qk_rope_head_dim=64,
        v_head_dim=128,
        sparse_attention_topk=2048, index_n_heads=64, index_head_dim=128, index_key_bytes=132,
        max_context=131072, published_params=671e9, published_active_params=37e9,
        source="deepseek_v32", year=2025,
        notes=(
            "DeepSeek-V3.2 (DeepSeek Sparse Attention): the V3 architecture plus a lightning "
            "indexer that picks the top 2048 cached tokens each query attends to "
            "(config.json of deepseek-ai/DeepSeek-V3.2 [hf_deepseek_v32]: index_topk 2048, "
            "index_n_heads 64, index_head_dim 128). The indexer keeps its own key cache in FP8, "
            "128 values plus one FP32 scale per token per layer (132 B; the inference code's "
            "k_cache and k_scale_cache buffers, block size 128), and at every step scores every "
            "cached token (64 heads x 128 wide, in FP8): both are counted in the KV bytes held and "
            "read and in the attention FLOPs. Left out: the indexer's weights (~14M per layer, "
            "0.13% of the total); the parameter counts are those of V3."
        ),
    ),

    # ----- Qwen3 MoE ----------------------------------------------------------------------

    Model(
        name="Qwen3-235B-A22B", n_layers=94, d_model=4096, d_ff=12288, n_heads=64, n_kv_heads=4,
        head_dim=128, vocab_size=151936, n_experts=128, experts_per_token=8, d_ff_expert=1536,
        max_context=131072, published_params=235e9, published_active_params=22e9,
        source="qwen3_report", year=2025,
        notes=(
            "config.json of Qwen/Qwen3-235B-A22B [hf_qwen3_235b] (Qwen3 Technical Report Table 2): "
            "94 layers, d_model 4096, GQA 64/4 heads of 128 (so n_heads x head_dim = 8192 != "
            "d_model), every layer an MoE of 128 SwiGLU experts of width 1536, top-8, no shared "
            "expert, untied vocabulary 151936. Context 32768 native, 131072 with YaRN (model "
            "card). QK-norm scales (256 per layer) and the router's missing bias are negligible. "
            "Published 235B / 22B (report and model card)."
        ),
    ),
    Model(
        name="Qwen3-30B-A3B", n_layers=48, d_model=2048, d_ff=6144, n_heads=32, n_kv_heads=4,
        head_dim=128, vocab_size=151936, n_experts=128, experts_per_token=8, d_ff_expert=768,
        max_context=131072, published_params=30.5e9, published_active_params=3.3e9,
        source="qwen3_report", year=2025,
        notes=(
            "config.json of Qwen/Qwen3-30B-A3B [hf_qwen3_30b]: 48 layers, d_model 2048, GQA 32/4 "
            "heads of 128, 128 SwiGLU experts of width 768 per layer, top-8, untied vocabulary "
            "151936. Context 32768 native, 131072 with YaRN. Published 30.5B total / 3.3B active "
            "(model card); the count gives 3.35B active, so the card truncates rather than rounds."
        ),
    ),

    # ----- gpt-oss ----------------------------------------------------------------------

    Model(
        name="gpt-oss-120b", n_layers=36, d_model=2880, d_ff=2880, n_heads=64, n_kv_heads=8,
        head_dim=64, vocab_size=201088, attention_bias=True, mlp_bias=True,
        n_experts=128, experts_per_token=4, d_ff_expert=2880,
        sliding_window=128, n_sliding_layers=18, max_context=131072,
        published_params=116.83e9, published_active_params=5.13e9,
        source="gptoss_modelcard", year=2025,
        notes=(
            "config.json of openai/gpt-oss-120b [hf_gptoss_120b] (model card Sec. 2): 36 layers, "
            "d_model 2880, GQA 64/8 heads of 64, 128 SwiGLU experts of width 2880 per layer, "
            "top-4, biases on the attention projections, the experts and the router; untied "
            "vocabulary 201088 (o200k harmony); layers alternate a 128-token sliding window and "
            "full attention; context 131072 (YaRN). Published 116.83B total / 5.13B active: the "
            "model card's active count leaves the input embedding out (0.58B; it counts the "
            "unembedding), whereas active_params includes it. Left out: the learned attention "
            "sinks (one scalar per head per layer, 2,304 in all) and the clamped-SwiGLU detail, "
            "which changes no count."
        ),
    ),
)

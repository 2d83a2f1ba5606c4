"""Every catalogue figure pinned to its cited value, exactly (issue 31).

Broad bands (a GPU's ridge "about 300", drain times 10-50 ms) let a 10% bandwidth typo or a
GB-for-GiB capacity through. Here each chip's datasheet figures and each model's config fields
are typed from the source the catalogue cites, in the unit and form the source prints them
("with sparsity" figures halved here, not in the catalogue), and compared exactly.
"""

import pytest

from llmmath import chips, models

T, P, G = 1e12, 1e15, 1e9
GIB = 2**30

# name: (dense FLOP/s by dtype, HBM B/s, HBM bytes, unit, scale-up B/s one way, domain,
#        scale-out B/s per chip or None, source key), each as the source prints it
CHIPS = {
    # NVIDIA A100 datasheet: BF16 312 TFLOPS (624 sparse), INT8 624 TOPS, 80 GB HBM2e 2,039 GB/s,
    # NVLink 600 GB/s bidirectional, 8 GPUs per HGX, one 200 Gb/s HDR NIC per GPU (DGX A100)
    "A100-SXM-80GB": ({"bf16": 312 * T, "int8": 624 * T}, 2039 * G, 80 * G, "GB", 600 * G / 2,
                      8, 200e9 / 8, "nvidia_a100_datasheet"),
    # H100 SXM datasheet: BF16 1,979 / FP8 3,958 TFLOPS "with sparsity" (NVIDIA's exact dense
    # figures 989.4 / 1,978.9), 80 GB at 3.35 TB/s, NVLink 900 GB/s bidirectional, 400 Gb/s NIC
    "H100-SXM": ({"bf16": 989.4 * T, "fp8": 1978.9 * T, "int8": 1978.9 * T}, 3.35 * T, 80 * G,
                 "GB", 900 * G / 2, 8, 400e9 / 8, "nvidia_h100_datasheet"),
    # H200 SXM datasheet: the H100's compute, 141 GB HBM3e at 4.8 TB/s
    "H200": ({"bf16": 989.4 * T, "fp8": 1978.9 * T, "int8": 1978.9 * T}, 4.8 * T, 141 * G, "GB",
             900 * G / 2, 8, 400e9 / 8, "nvidia_h200_datasheet"),
    # H800 SXM: the H100's die and tensor cores, so the H100 datasheet's dense figures; 80 GB at
    # "e.g., 3.35 TB/s"; NVLink "400 GB/s total aggregate bidirectional" [philisun_h800]; 8 GPUs
    # a node and "IB (50 GB/s)" a GPU (DeepSeek-V3 Sec. 3.1, 3.2.2)
    "H800": ({"bf16": 989.4 * T, "fp8": 1978.9 * T}, 3.35 * T, 80 * G, "GB", 400 * G / 2, 8,
             50 * G, "philisun_h800"),
    # HGX B200 (8 GPUs): FP4 144 PF sparse, FP8 72 PF sparse, BF16 36 PF sparse, 1,440 GB HBM3e,
    # 64 TB/s; NVLink 5 1.8 TB/s bidirectional per GPU
    "B200": ({"bf16": 36 * P / 2 / 8, "fp8": 72 * P / 2 / 8, "int8": 72 * P / 2 / 8,
              "fp4": 144 * P / 2 / 8}, 64 * T / 8, 1440 * G / 8, "GB", 1.8 * T / 2, 8, 400e9 / 8,
             "nvidia_hgx_b200"),
    # GB200 NVL72 (72 GPUs): FP4 1,440 PF, FP8 720 PF, BF16 360 PF, INT8 720 POPS sparse;
    # 13.4 TB HBM3e (186 GB a GPU as NVIDIA lists it) at 576 TB/s; NVLink 130 TB/s a rack
    "GB200": ({"bf16": 360 * P / 2 / 72, "fp8": 720 * P / 2 / 72, "int8": 720 * P / 2 / 72,
               "fp4": 1440 * P / 2 / 72}, 576 * T / 72, 186 * G, "GB", 1.8 * T / 2, 72,
              400e9 / 8, "nvidia_gb200_nvl72"),
    # GB300 NVL72: FP8 720 PF and BF16 360 PF sparse a rack; Blackwell Ultra "15 PFLOPS dense
    # NVFP4" a GPU; 288 GB at 8 TB/s a GPU; ConnectX-8 800 Gb/s a GPU
    "B300": ({"bf16": 360 * P / 2 / 72, "fp8": 720 * P / 2 / 72, "fp4": 15 * P},
             576 * T / 72, 288 * G, "GB", 1.8 * T / 2, 72, 800e9 / 8, "nvidia_gb300_nvl72"),
    # Vera Rubin NVL72 (announced, CES 2026): NVFP4 35 PF training a GPU, HBM4 288 GB at 22 TB/s,
    # NVLink 6 3.6 TB/s bidirectional, ConnectX-9 1.6 Tb/s
    "Rubin": ({"fp4": 35 * P}, 22 * T, 288 * G, "GB", 3.6 * T / 2, 72, 1.6e12 / 8,
              "nvidia_vera_rubin"),
    # AMD MI300X datasheet: BF16 1,307.4 / FP8 2,614.9 TFLOPS dense, 192 GB HBM3 at 5.3 TB/s,
    # Infinity Fabric 7 x 128 GB/s bidirectional
    "MI300X": ({"bf16": 1307.4 * T, "fp8": 2614.9 * T, "int8": 2614.9 * T}, 5.3 * T, 192 * G,
               "GB", 7 * 128 * G / 2, 8, 400e9 / 8, "amd_mi300x_datasheet"),
    # AMD MI355X: BF16 2.5 PF, FP8 5.0 PF, MXFP4 10 PF dense, 288 GB HBM3E at 8 TB/s,
    # Infinity Fabric 7 x 153.6 GB/s bidirectional
    "MI355X": ({"bf16": 2.5 * P, "fp8": 5 * P, "fp4": 10 * P}, 8 * T, 288 * G, "GB",
               7 * 153.6 * G / 2, 8, 400e9 / 8, "amd_mi355x_specs"),
    # TPU v4 as Pope et al. 2022 use it: 275 TFLOPS bf16/int8, 32 GiB at 1,200 GB/s, ICI 270 GB/s
    "TPU v4": ({"bf16": 275 * T, "int8": 275 * T}, 1200 * G, 32 * GIB, "GiB", 270 * G, 4096,
               None, "pope2022efficiently"),
    # Cloud TPU v5e: 197 TFLOPS bf16, 394 TOPS int8, 16 GB HBM2 at 819 GB/s, ICI 400 GB/s
    # bidirectional, 2 x 100 Gb/s DCN per 8-chip host
    "TPU v5e": ({"bf16": 197 * T, "int8": 394 * T}, 819 * G, 16 * G, "GB", 400 * G / 2, 256,
                2 * 100e9 / 8 / 8, "google_tpu_v5e_docs"),
    # Cloud TPU v5p: 459 TFLOPS bf16, 918 TOPS int8, 95 GiB HBM2e at 2,765 GB/s, ICI 1,200 GB/s
    # bidirectional, 8,960-chip pods, DCN 50 Gb/s a chip
    "TPU v5p": ({"bf16": 459 * T, "int8": 918 * T}, 2765 * G, 95 * GIB, "GiB", 1200 * G / 2,
                8960, 50e9 / 8, "google_tpu_v5p_docs"),
    # Cloud TPU v6e (Trillium): 918 TFLOPS bf16, 1,836 TOPS int8, 32 GiB at 1,638 GB/s, ICI
    # 800 GB/s bidirectional, 4 x 200 Gb/s DCN per 8-chip host
    "TPU v6e": ({"bf16": 918 * T, "int8": 1836 * T}, 1638 * G, 32 * GIB, "GiB", 800 * G / 2, 256,
                4 * 200e9 / 8 / 8, "google_tpu_v6e_docs"),
    # TPU7x (Ironwood): 2,307 TFLOPS bf16, 4,614 fp8, 192 GiB HBM3e at 7.37 TB/s, ICI 1.2 TB/s
    # bidirectional, 9,216-chip pods
    "TPU v7": ({"bf16": 2307 * T, "fp8": 4614 * T}, 7.37 * T, 192 * GIB, "GiB", 1.2 * T / 2, 9216,
               None, "google_tpu7x_docs"),
}


@pytest.mark.whole_catalogue
def test_every_chip_is_pinned():
    assert set(CHIPS) == set(chips.names())


@pytest.mark.parametrize("name", sorted(CHIPS))
def test_chip_figures_are_the_cited_ones(name):
    flops, bw, cap, unit, up, domain, out, source = CHIPS[name]
    c = chips.get(name)
    assert c.source == source
    assert set(c.flops) == set(flops), name
    for dtype, value in flops.items():
        assert c.flops[dtype] == pytest.approx(value, rel=1e-12), (name, dtype)
    assert c.hbm_bandwidth == pytest.approx(bw, rel=1e-12)
    assert c.hbm_capacity == pytest.approx(cap, rel=1e-12)
    assert c.capacity_unit == unit
    assert c.scale_up_bandwidth == pytest.approx(up, rel=1e-12)
    assert c.scale_up_domain == domain
    if out is None:
        assert c.scale_out_bandwidth is None
    else:
        assert c.scale_out_bandwidth == pytest.approx(out, rel=1e-12)


# name: config fields as each model's config.json (or paper table) prints them:
# (layers, hidden, intermediate, heads, kv heads, head dim, vocab, max positions)
DENSE = {
    "GPT-3-175B": (96, 12288, 49152, 96, 96, 128, 50257, 2048),       # Brown et al. 2020 Table 2.1
    "MT-NLG-530B": (105, 20480, 81920, 128, 128, 160, 51200, 2048),   # Smith et al. 2022
    # BLOOM model card: 70 layers, 112 heads, hidden 14336, 2048 tokens; embedding 250880 x 14336
    "BLOOM-176B": (70, 14336, 4 * 14336, 112, 112, 128, 250880, 2048),
    "PaLM-8B": (32, 4096, 16384, 16, 1, 256, 256000, 2048),           # Chowdhery et al. Table 1
    "PaLM-62B": (64, 8192, 32768, 32, 1, 256, 256000, 2048),
    "PaLM-540B": (118, 18432, 73728, 48, 1, 256, 256000, 2048),
    "LLaMA-2-7B": (32, 4096, 11008, 32, 32, 128, 32000, 4096),        # Llama-2 config.json files
    "LLaMA-2-13B": (40, 5120, 13824, 40, 40, 128, 32000, 4096),
    "LLaMA-2-70B": (80, 8192, 28672, 64, 8, 128, 32000, 4096),
    "Llama-3-8B": (32, 4096, 14336, 32, 8, 128, 128256, 8192),        # Meta-Llama-3 config.json
    "Llama-3-70B": (80, 8192, 28672, 64, 8, 128, 128256, 8192),
    "Llama-3.1-405B": (126, 16384, 53248, 128, 8, 128, 128256, 131072),
}
# MoE: the dense fields above plus (experts, experts per token, expert width, shared experts,
# dense layers first)
MOE = {
    "Mixtral-8x7B": ((32, 4096, 14336, 32, 8, 128, 32000, 32768), (8, 2, 14336, 0, 0)),
    "Mixtral-8x22B": ((56, 6144, 16384, 48, 8, 128, 32000, 65536), (8, 2, 16384, 0, 0)),
    "Qwen3-235B-A22B": ((94, 4096, 12288, 64, 4, 128, 151936, 131072), (128, 8, 1536, 0, 0)),
    "Qwen3-30B-A3B": ((48, 2048, 6144, 32, 4, 128, 151936, 131072), (128, 8, 768, 0, 0)),
    "gpt-oss-120b": ((36, 2880, 2880, 64, 8, 64, 201088, 131072), (128, 4, 2880, 0, 0)),
}
# DeepSeek-V3 config.json: 61 layers, hidden 7168, intermediate 18432, 128 heads, vocab 129,280,
# 256 routed experts of 2048, 8 per token, 1 shared, first 3 layers dense, kv_lora_rank 512,
# q_lora_rank 1536, qk_nope 128, qk_rope 64, v 128; V3.2 adds index_topk 2048, 64 index heads of
# 128 (its fp8 key with one fp32 scale: 132 B)
MLA = (61, 7168, 18432, 128, 129280, (256, 8, 2048, 1, 3), (512, 1536, 128, 64, 128))


@pytest.mark.parametrize("name", sorted(DENSE) + sorted(MOE))
def test_model_config_is_the_cited_one(name):
    m = models.get(name)
    fields = DENSE.get(name) or MOE[name][0]
    got = (m.n_layers, m.d_model, m.d_ff, m.n_heads, m.n_kv_heads, m.head_dim, m.vocab_size,
           m.max_context)
    assert got == fields, name
    if name in MOE:
        E, k, F_e, shared, dense = MOE[name][1]
        assert (m.n_experts, m.experts_per_token, m.d_ff_expert) == (E, k, F_e)
        assert (m.n_shared_experts or 0, m.n_dense_layers or 0) == (shared, dense)


@pytest.mark.parametrize("name", ["DeepSeek-V3", "DeepSeek-V3.2"])
def test_mla_config_is_the_cited_one(name):
    m = models.get(name)
    L, D, F, nq, V, (E, k, F_e, shared, dense), (r, q_r, nope, rope, v) = MLA
    assert (m.n_layers, m.d_model, m.d_ff, m.n_heads, m.vocab_size) == (L, D, F, nq, V)
    assert (m.n_experts, m.experts_per_token, m.d_ff_expert, m.n_shared_experts,
            m.n_dense_layers) == (E, k, F_e, shared, dense)
    assert (m.kv_lora_rank, m.q_lora_rank, m.qk_nope_head_dim, m.qk_rope_head_dim,
            m.v_head_dim) == (r, q_r, nope, rope, v)
    assert m.max_context == 131072
    if name == "DeepSeek-V3.2":
        assert (m.sparse_attention_topk, m.index_n_heads, m.index_head_dim,
                m.index_key_bytes) == (2048, 64, 128, 128 + 4)
    else:
        assert m.sparse_attention_topk is None and m.index_key_bytes is None


def test_gpt_oss_windows_are_the_cited_ones():
    # gpt-oss model card: alternating banded (128-token) and dense layers, 18 of each
    m = models.get("gpt-oss-120b")
    assert (m.sliding_window, m.n_sliding_layers) == (128, 18)


# The published parameter counts the catalogue cites (papers' tables, model cards), in the form
# they print them
PUBLISHED = {
    "GPT-3-175B": (175e9, 175e9), "MT-NLG-530B": (530e9, 530e9), "PaLM-8B": (8.63e9, 8.63e9),
    "PaLM-62B": (62.50e9, 62.50e9), "PaLM-540B": (540.35e9, 540.35e9),
    "LLaMA-2-7B": (6.74e9, 6.74e9), "LLaMA-2-13B": (13.0e9, 13.0e9),
    "LLaMA-2-70B": (68.98e9, 68.98e9), "Llama-3-8B": (8.03e9, 8.03e9),
    "Llama-3-70B": (70.6e9, 70.6e9), "Llama-3.1-405B": (405e9, 405e9),
    "Mixtral-8x7B": (46.7e9, 12.9e9), "Mixtral-8x22B": (141e9, 39e9),
    "DeepSeek-V3": (671e9, 37e9), "DeepSeek-V3.2": (671e9, 37e9),
    "Qwen3-235B-A22B": (235e9, 22e9), "Qwen3-30B-A3B": (30.5e9, 3.3e9),
    "gpt-oss-120b": (116.83e9, 5.13e9),
    "BLOOM-176B": (176_247_271_424, 176_247_271_424),  # hf_bloom: "176,247,271,424 parameters"
}


@pytest.mark.whole_catalogue
def test_every_model_is_pinned():
    assert set(PUBLISHED) == set(models.names())
    assert set(DENSE) | set(MOE) | {"DeepSeek-V3", "DeepSeek-V3.2"} == set(models.names())


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_published_counts_are_the_cited_ones(name):
    m = models.get(name)
    assert (m.published_params, m.published_active_params) == pytest.approx(PUBLISHED[name],
                                                                           rel=1e-12)

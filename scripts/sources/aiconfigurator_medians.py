"""Medians vendored into llmmath.estimate from NVIDIA's measured kernel tables (issue 32).

Reproduces GEMM_EFFICIENCY_BY_ROWS and CONTEXT_ATTENTION_EFFICIENCY (first part) and
FP8_GEMM_MEMORY_EFFICIENCY (second part) from ai-dynamo/aiconfigurator at commit
095f58a51c4ca8e61b66ec108d86f223f8d559ce (references.bib: nvidia_aiconfigurator_gemm). Not run by
the tests (it needs the tables): fetch the repository, export the parquet files named in FILES
(gemm_perf, context_attention_perf, and the fp8 scale-computation tables as <chip>_sxm_cs.csv) to
CSV under ./aic/, then run it with pandas installed; it prints the medians the module quotes.
"""
# ruff: noqa

import pandas as pd, numpy as np
MS = [64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
PK = {"bfloat16": {"h100": 989.4e12, "h200": 989.4e12, "a100": 312e12}, "fp8": {"h100": 1978.9e12, "h200": 1978.9e12}}
FILES = {"h100": "h100_sxm_gemm_trtllm_1.3.0rc10", "h200": "h200_sxm_gemm_trtllm_1.3.0rc10", "a100": "a100_sxm_gemm_trtllm_1.0.0"}
for chip, f in FILES.items():
    d = pd.read_csv(f"aic/{f}_gemm_perf.csv")
    d = d[(d.n >= 1024) & (d.n <= 16384) & (d.k >= 1024) & (d.k <= 16384) & (d.n * d.k >= 2**24) & d.m.isin(MS)]
    for dt in ("bfloat16", "fp8"):
        if chip not in PK[dt]: continue
        g = d[d.gemm_dtype == dt]
        if dt == "fp8":
            cs = pd.read_csv(f"aic/{chip}_sxm_cs.csv").groupby(["m", "k"], as_index=False).latency.median().rename(columns={"latency": "cs"})
            n0 = len(g); g = g.merge(cs, on=["m", "k"], how="inner"); assert len(g) == n0, (n0, len(g))
            g = g.assign(latency=g.latency - g.cs)
        eff = 2.0 * g.m * g.n * g.k / (g.latency * 1e-3) / PK[dt][chip]
        nshape = g.groupby("m").size().to_dict()
        print(chip, dt, "shapes per M", set(nshape.values()), "dev", g.device.iloc[0])
        print("   ", tuple((m, round(float(eff[g.m == m].median()), 3)) for m in MS))
        print("    q25-q75", tuple((m, round(float(eff[g.m == m].quantile(.25)), 2), round(float(eff[g.m == m].quantile(.75)), 2)) for m in MS))
ISL = [128, 256, 512, 1024, 2048, 4096, 8192, 16384]
for chip, f in {"h100": "h100_sxm_attention_trtllm_1.3.0rc10", "h200": "h200_sxm_attention_trtllm_1.3.0rc10", "a100": "a100_sxm_attention_trtllm_1.0.0"}.items():
    d = pd.read_csv(f"aic/{f}_context_attention_perf.csv")
    d = d[(d.head_dim == 128) & (d.attn_dtype.isin(["bfloat16", "float16"])) & (d.kv_cache_dtype.isin(["bfloat16", "float16"])) & (d.batch_size <= 64)]
    if "window_size" in d: d = d[d.window_size == 0]
    d = d[d.num_heads >= 8]
    fl = 2.0 * d.num_heads * 128 * d.isl * (d.isl + 1) * d.batch_size
    e = fl / (d.latency * 1e-3) / PK["bfloat16"][chip]
    print(chip, "attn", d.attn_dtype.unique(), d.kernel_source.unique(), len(d), d.device.iloc[0])
    print("   ", tuple((s, round(float(e[d.isl == s].median()), 3)) for s in ISL))
    print("    q25-q75", tuple((s, round(float(e[d.isl == s].quantile(.25)), 2), round(float(e[d.isl == s].quantile(.75)), 2)) for s in ISL))

# ----- fp8 weight streaming at decode-sized M (FP8_GEMM_MEMORY_EFFICIENCY) -----
BW = {"h100": 3.35e12, "h200": 4.8e12, "a100": 2.039e12}; WB = {"bfloat16": 2, "fp8": 1}
for chip, f in FILES.items():
    d = pd.read_csv(f"aic/{f}_gemm_perf.csv")
    d = d[(d.n >= 1024) & (d.n <= 16384) & (d.k >= 1024) & (d.k <= 16384) & (d.n * d.k >= 2**24) & d.m.isin([1, 8, 16])]
    for dt in ("bfloat16", "fp8"):
        g = d[d.gemm_dtype == dt]
        if g.empty: continue
        if dt == "fp8":
            cs = pd.read_csv(f"aic/{chip}_sxm_cs.csv").groupby(["m", "k"], as_index=False).latency.median().rename(columns={"latency": "cs"})
            g = g.merge(cs, on=["m", "k"]); g = g.assign(latency=g.latency - g.cs)
        fr = g.n * g.k * WB[dt] / (g.latency * 1e-3) / BW[chip]
        print(chip, dt, len(g), "weight-stream fraction median", round(float(fr.median()), 3), "q25-75", round(float(fr.quantile(.25)), 2), round(float(fr.quantile(.75)), 2))

# ----- the tensor-parallel all-reduce (ALL_REDUCE_LATENCY_MS; references.bib nvidia_aiconfigurator_allreduce) -----
# export <gpu>/comm/trtllm/<version>/custom_allreduce_perf.parquet as aic/<chip>_sxm_ar.csv
for chip, ver in {"h100": "1.3.0rc10", "h200": "1.3.0rc10", "a100": "1.0.0"}.items():
    d = pd.read_csv(f"aic/{chip}_sxm_ar.csv")
    assert set(d.version.astype(str)) == {ver} and set(d.allreduce_dtype) == {"bfloat16"}
    d = d[d.message_size.isin([2**k for k in range(8, 29)])]
    for n in (2, 4, 8):
        g = d[d.num_gpus == n].sort_values("message_size")
        assert len(g) == 21
        print(chip, n, tuple(round(float(x), 6) for x in g.latency))

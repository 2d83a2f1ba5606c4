"""The chip catalogue: datasheet figures with sources (keys of references.bib).

Conventions (see :mod:`llmmath.chips`): ``flops`` are **dense** peaks (vendors' "with sparsity"
figures halved where only those are printed); bandwidths are bytes/s; ``scale_up_bandwidth`` and
``scale_out_bandwidth`` are per chip and **one direction** (vendors' bidirectional totals halved);
capacities are bytes, with ``capacity_unit`` saying whether the vendor meant GB or GiB.

Prices are typical on-demand rental prices per chip-hour at ``price_date``; they move fast, so
treat them as an order of magnitude and pass your own price to the cost functions.
``price_date`` is the month the price was observed: the month a dated source reports it (the GPU
prices: dated surveys, blog posts and research notes), or, for a live list-price page that carries
no date of its own (Google's Cloud TPU pricing page), the month the page was read. That is why the
TPU prices are dated 2026-12 beside GPU prices of 2026-03 to 2026-05: they are Google's current list
prices, read from the vendor's undated page, not a survey's snapshot.
"""

from .chips import Chip
from .units import GB, PFLOPS, TFLOPS, GBps, Gbps, GiB, TBps

#: Every catalogue entry, in catalogue order: plain data, indexed by name in :mod:`llmmath.chips`.
CHIPS: tuple[Chip, ...] = (
    # --------------------------------------------------------------------------------------------
    # NVIDIA
    # --------------------------------------------------------------------------------------------

    Chip(
        name="A100-SXM-80GB", vendor="NVIDIA", year=2020,
        flops={"bf16": 312 * TFLOPS, "int8": 624 * TFLOPS},
        hbm_bandwidth=2039 * GBps, hbm_capacity=80 * GB, capacity_unit="GB",
        scale_up_bandwidth=300 * GBps, scale_up_domain=8, scale_out_bandwidth=200 * Gbps,
        price_per_hour=1.30, price_date="2026-05",
        source="nvidia_a100_datasheet", price_source="mercatus2026gpupricing",
        notes=("Datasheet: BF16 312 TFLOPS dense (624 with sparsity), INT8 624 TOPS dense, HBM2e "
               "80 GB at 2,039 GB/s, NVLink 600 GB/s bidirectional (300 GB/s each way), HGX/DGX "
               "A100 with 8 GPUs. No FP8. Scale-out: DGX A100 has one 200 Gb/s HDR InfiniBand NIC "
               "per GPU. FLOP/byte = 153 in bf16, below the ~300 of later GPUs. Price: midpoint of "
               "the $1.10-1.50/h 'specialty cloud' on-demand range reported in May 2026."),
    ),

    Chip(
        name="H100-SXM", vendor="NVIDIA", year=2022,
        flops={"bf16": 989.4 * TFLOPS, "fp8": 1978.9 * TFLOPS, "int8": 1978.9 * TFLOPS},
        hbm_bandwidth=3.35 * TBps, hbm_capacity=80 * GB, capacity_unit="GB",
        scale_up_bandwidth=450 * GBps, scale_up_domain=8, scale_out_bandwidth=400 * Gbps,
        price_per_hour=3.00, price_date="2026-05",
        source="nvidia_h100_datasheet", price_source="mercatus2026gpupricing",
        notes=("Datasheet prints BF16 1,979 / FP8 3,958 TFLOPS 'with sparsity'; dense is half. "
               "HBM3 80 GB at 3.35 TB/s; NVLink 900 GB/s bidirectional = 450 GB/s each way; HGX "
               "H100 = 8 GPUs; one ConnectX-7 400 Gb/s NIC per GPU. Price: midpoint of the "
               "$2.50-3.50/h specialty-cloud on-demand range (May 2026); hyperscalers list "
               "$3.50-5.00, marketplaces ~$2."),
    ),

    Chip(
        name="H200", vendor="NVIDIA", year=2024,
        flops={"bf16": 989.4 * TFLOPS, "fp8": 1978.9 * TFLOPS, "int8": 1978.9 * TFLOPS},
        hbm_bandwidth=4.8 * TBps, hbm_capacity=141 * GB, capacity_unit="GB",
        scale_up_bandwidth=450 * GBps, scale_up_domain=8, scale_out_bandwidth=400 * Gbps,
        price_per_hour=4.00, price_date="2026-05",
        source="nvidia_h200_datasheet", price_source="mercatus2026gpupricing",
        notes=("H200 SXM: same GH100 compute as H100 SXM (dense BF16 989 TFLOPS), HBM3e 141 GB at "
               "4.8 TB/s, NVLink 900 GB/s bidirectional, HGX H200 = 8 GPUs, 400 Gb/s NIC per GPU. "
               "Price: midpoint of the $3.50-4.50/h specialty-cloud range (May 2026)."),
    ),

    Chip(
        name="H800", vendor="NVIDIA", year=2023,
        flops={"bf16": 989.4 * TFLOPS, "fp8": 1978.9 * TFLOPS},
        hbm_bandwidth=3.35 * TBps, hbm_capacity=80 * GB, capacity_unit="GB",
        scale_up_bandwidth=200 * GBps, scale_up_domain=8, scale_out_bandwidth=50 * GBps,
        source="philisun_h800",
        notes=("H800 SXM, the export-limited H100: the same Hopper die, 'the foundational CUDA "
               "core and Tensor Core arrays', so the H100 SXM datasheet's dense BF16 989.4 and "
               "FP8 1,978.9 TFLOPS [nvidia_h100_datasheet]; HBM3 80 GB (SXM), bandwidth 'e.g., "
               "3.35 TB/s, largely consistent' with the H100; NVLink cut to 400 GB/s aggregate "
               "bidirectional (200 GB/s each way) [philisun_h800]. No INT8 figure is stated for "
               "the H800, so none is listed. DeepSeek-V3 Sec. 3.1-3.2 [deepseek_v3]: 'Each node "
               "in the H800 cluster contains 8 GPUs connected by NVLink and NVSwitch'; Sec. "
               "3.2.2: 'NVLink offers a bandwidth of 160 GB/s, roughly 3.2 times that of IB (50 "
               "GB/s)' - 50 GB/s of InfiniBand per GPU is the scale-out entry (a 400 Gb/s NIC), "
               "160 GB/s an achieved NVLink rate below the 200 GB/s line rate. Launched March "
               "2023 [aiwiki_h800]. No NVIDIA datasheet for the H800 was found in the stored "
               "corpora. No price: sold only in restricted markets, no public rental listing "
               "found."),
        extra={"datasheet": "nvidia_h100_datasheet", "measured_source": "deepseek_v3"},
    ),

    Chip(
        name="B200", vendor="NVIDIA", year=2024,
        flops={"bf16": 2.25 * PFLOPS, "fp8": 4.5 * PFLOPS, "int8": 4.5 * PFLOPS, "fp4": 9 * PFLOPS},
        hbm_bandwidth=8 * TBps, hbm_capacity=180 * GB, capacity_unit="GB",
        scale_up_bandwidth=900 * GBps, scale_up_domain=8, scale_out_bandwidth=400 * Gbps,
        price_per_hour=5.25, price_date="2026-03",
        source="nvidia_hgx_b200", price_source="lyceum2026b200pricing",
        notes=("HGX B200 (1,000 W) per GPU = platform figures / 8: FP4 144|72 PF, FP8 72 PF "
               "sparse, BF16 36 PF sparse per 8 GPUs -> dense 9 / 4.5 / 2.25 PF per GPU. HBM3e "
               "1,440 GB per 8 GPUs = 180 GB (early material said 192 GB), 8 TB/s per GPU. NVLink "
               "5: 1.8 TB/s bidirectional = 900 GB/s each way; 8 GPUs per NVSwitch domain; "
               "ConnectX-7 400 Gb/s per GPU. Price: midpoint of the $4.50-6.00/h specialty-cloud "
               "on-demand range (March 2026)."),
    ),

    Chip(
        name="GB200", vendor="NVIDIA", year=2024,
        flops={"bf16": 2.5 * PFLOPS, "fp8": 5 * PFLOPS, "int8": 5 * PFLOPS, "fp4": 10 * PFLOPS},
        hbm_bandwidth=8 * TBps, hbm_capacity=186 * GB, capacity_unit="GB",
        scale_up_bandwidth=900 * GBps, scale_up_domain=72, scale_out_bandwidth=400 * Gbps,
        source="nvidia_gb200_nvl72",
        notes=("Per Blackwell GPU in a GB200 NVL72 rack (1,200 W): rack figures / 72. NVIDIA "
               "prints FP4 1,440 PF, FP8 720 PF, BF16 360 PF, INT8 720 POPS 'with sparsity' -> "
               "dense 10 / 5 / 2.5 / 5 P per GPU. HBM3e up to 13.4 TB at 576 TB/s -> 186 GB, 8 "
               "TB/s per GPU. NVLink 130 TB/s per rack = 1.8 TB/s bidirectional per GPU = 900 GB/s "
               "each way, 72 GPUs in one domain. Scale-out 400 Gb/s per GPU (ConnectX-7) is the "
               "usual build, not a rack spec. No price: sold as whole racks or multi-GPU nodes; "
               "public per-GPU rental prices vary widely."),
    ),

    Chip(
        name="B300", vendor="NVIDIA", year=2025,
        flops={"bf16": 2.5 * PFLOPS, "fp8": 5 * PFLOPS, "fp4": 15 * PFLOPS},
        hbm_bandwidth=8 * TBps, hbm_capacity=288 * GB, capacity_unit="GB",
        scale_up_bandwidth=900 * GBps, scale_up_domain=72, scale_out_bandwidth=800 * Gbps,
        source="nvidia_gb300_nvl72",
        notes=("Blackwell Ultra per GPU as in a GB300 NVL72 rack (1,400 W): rack figures / 72. "
               "NVIDIA prints FP4 1,100 PF dense (1,400 sparse), FP8 720 PF and BF16 360 PF with "
               "sparsity -> dense ~15 / 5 / 2.5 PF per GPU. Dense FP4 is 3x FP8 (not 2x): "
               "Blackwell Ultra raised NVFP4 throughput only. INT8 and FP64 were cut sharply, so "
               "no int8 entry. HBM3e 288 GB, 8 TB/s (576 TB/s per rack). NVLink 5: 900 GB/s each "
               "way, 72-GPU domain. ConnectX-8 800 Gb/s per GPU. HGX B300 (8-GPU boards) lists "
               "slightly lower per-GPU compute (BF16 2.25, FP4 ~13.5 PF dense)."),
    ),

    Chip(
        name="Rubin", vendor="NVIDIA", year=2026,
        flops={"fp4": 35 * PFLOPS},
        hbm_bandwidth=22 * TBps, hbm_capacity=288 * GB, capacity_unit="GB",
        scale_up_bandwidth=1.8 * TBps, scale_up_domain=72, scale_out_bandwidth=1600 * Gbps,
        source="nvidia_vera_rubin",
        notes=("ANNOUNCED figures (CES 2026, Vera Rubin NVL72), not a shipping datasheet. Per "
               "Rubin GPU (VR200): NVFP4 50 PF for inference (NVIDIA's headline, relying on its "
               "'adaptive compression') and 35 PF for training; the catalogue uses 35 PF as the "
               "dense FP4 figure. HBM4 288 GB at 22 TB/s (GTC 2025 had announced 13 TB/s). NVLink "
               "6: 3.6 TB/s bidirectional per GPU = 1.8 TB/s each way; 72 GPUs per rack (first "
               "announced as 'NVL144', counting dies). ConnectX-9 1.6 Tb/s per GPU. NVIDIA has not "
               "published dense BF16/FP8 per-GPU figures found here, so only fp4 is listed."),
        extra={"fp4_inference_headline": 50 * PFLOPS, "announced": True},
    ),

    # --------------------------------------------------------------------------------------------
    # AMD
    # --------------------------------------------------------------------------------------------

    Chip(
        name="MI300X", vendor="AMD", year=2023,
        flops={"bf16": 1307.4 * TFLOPS, "fp8": 2614.9 * TFLOPS, "int8": 2614.9 * TFLOPS},
        hbm_bandwidth=5.3 * TBps, hbm_capacity=192 * GB, capacity_unit="GB",
        scale_up_bandwidth=448 * GBps, scale_up_domain=8, scale_out_bandwidth=400 * Gbps,
        price_per_hour=1.85, price_date="2026-05",
        source="amd_mi300x_datasheet", price_source="cliffcenter2026amd",
        notes=("AMD datasheet: peak BF16 1,307.4 TFLOPS and FP8 2,614.9 TFLOPS dense (sparsity "
               "doubles them), HBM3 192 GB at 5.3 TB/s. Infinity Fabric: 7 links x 128 GB/s "
               "bidirectional per GPU = 896 GB/s, 448 GB/s each way, fully connecting an 8-GPU "
               "platform. Scale-out: 400 Gb/s per GPU is the usual build (platform-dependent). "
               "Price: Vultr's on-demand $1.85/h in a research note dated 2026-05-18 (TensorWave "
               "$1.50, Crusoe spot $1.71 in the same note); an undated price tracker "
               "(gpublog_mi300x, read 2026-12) lists the same $1.85/h at Vultr."),
    ),

    Chip(
        name="MI355X", vendor="AMD", year=2025,
        flops={"bf16": 2.5 * PFLOPS, "fp8": 5.0 * PFLOPS, "fp4": 10.0 * PFLOPS},
        hbm_bandwidth=8 * TBps, hbm_capacity=288 * GB, capacity_unit="GB",
        scale_up_bandwidth=537.6 * GBps, scale_up_domain=8, scale_out_bandwidth=400 * Gbps,
        source="amd_mi355x_specs",
        notes=("AMD MI355X (CDNA 4, 1,400 W): dense FP16/BF16 2.5 PF, FP8 5.0 PF, MXFP4/MXFP6 10 "
               "PF; HBM3E 288 GB at 8 TB/s. Infinity Fabric: 7 links x 153.6 GB/s bidirectional = "
               "1,075 GB/s, 537.6 GB/s each way (best-known published figure, not rechecked "
               "against the AMD page here); 8-GPU platform. Scale-out 400 Gb/s per GPU (AMD "
               "Pollara 400). No price: few public on-demand listings."),
    ),

    # --------------------------------------------------------------------------------------------
    # Google TPU (HBM capacities are GiB where Google says GiB)
    # --------------------------------------------------------------------------------------------

    Chip(
        name="TPU v4", vendor="Google", year=2021,
        flops={"bf16": 275 * TFLOPS, "int8": 275 * TFLOPS},
        hbm_bandwidth=1200 * GBps, hbm_capacity=32 * GiB, capacity_unit="GiB",
        scale_up_bandwidth=270 * GBps, scale_up_domain=4096,
        price_per_hour=3.22, price_date="2026-12",
        source="pope2022efficiently", price_source="google_tpu_pricing",
        notes=("Figures as used by Pope et al. 2022 (sec. 4) and Google's TPU v4 page: 275 TFLOPS "
               "bf16 or int8, 32 GiB HBM2 at 1,200 GB/s, 4,096-chip pods in a 3D torus. ICI 270 "
               "GB/s per chip is the paper's figure (6 links x 45 GB/s one way); keep it so the "
               "paper's tables reproduce. GiB, not GB: reproducing the paper's Table 1 needs 32 "
               "GiB. Cloud availability 2021-22 (deployed internally from 2020). Price: Google's "
               "on-demand list price per chip-hour, us-central2, read 2026-12 from the undated "
               "live pricing page."),
        extra={"ici_topology": "3D torus", "datasheet": "google_tpu_v4_docs"},
    ),

    Chip(
        name="TPU v5e", vendor="Google", year=2023,
        flops={"bf16": 197 * TFLOPS, "int8": 394 * TFLOPS},
        hbm_bandwidth=819 * GBps, hbm_capacity=16 * GB, capacity_unit="GB",
        scale_up_bandwidth=200 * GBps, scale_up_domain=256, scale_out_bandwidth=25 * Gbps,
        price_per_hour=1.20, price_date="2026-12",
        source="google_tpu_v5e_docs", price_source="google_tpu_pricing",
        notes=("Cloud docs: 197 TFLOPS bf16, 393-394 TOPS int8, HBM2 16 GB at 819 GB/s, "
               "bidirectional ICI 400 GB/s per chip (200 GB/s each way) over 4 ports, 256-chip "
               "pods in a 2D torus. DCN: 2 x 100 Gb/s NICs per 8-chip host = 25 Gb/s per chip. "
               "Price: Google's on-demand list price per chip-hour, read 2026-12 from the undated "
               "live pricing page."),
        extra={"ici_topology": "2D torus"},
    ),

    Chip(
        name="TPU v5p", vendor="Google", year=2023,
        flops={"bf16": 459 * TFLOPS, "int8": 918 * TFLOPS},
        hbm_bandwidth=2765 * GBps, hbm_capacity=95 * GiB, capacity_unit="GiB",
        scale_up_bandwidth=600 * GBps, scale_up_domain=8960, scale_out_bandwidth=50 * Gbps,
        price_per_hour=4.20, price_date="2026-12",
        source="google_tpu_v5p_docs", price_source="google_tpu_pricing",
        notes=("Cloud docs: 459 TFLOPS bf16 (FP8 listed at the same 459), 918 TOPS int8, 95 GiB "
               "HBM2e at 2,765 GB/s, bidirectional ICI 1,200 GB/s per chip (600 GB/s each way; "
               "older page: 4,800 Gbps), 8,960-chip pod in a 3D torus (largest single slice 6,144 "
               "chips), DCN 50 Gb/s per chip. Price: Google's on-demand list price per chip-hour, "
               "read 2026-12 from the undated live pricing page."),
        extra={"ici_topology": "3D torus"},
    ),

    Chip(
        name="TPU v6e", vendor="Google", year=2024,
        flops={"bf16": 918 * TFLOPS, "int8": 1836 * TFLOPS},
        hbm_bandwidth=1638 * GBps, hbm_capacity=32 * GiB, capacity_unit="GiB",
        scale_up_bandwidth=400 * GBps, scale_up_domain=256, scale_out_bandwidth=100 * Gbps,
        price_per_hour=2.70, price_date="2026-12",
        source="google_tpu_v6e_docs", price_source="google_tpu_pricing",
        notes=("Trillium. Cloud docs: 918 TFLOPS bf16, 1,836 TOPS int8, 32 GiB HBM at 1,638 GB/s "
               "(the v6e page says '32 GB'; Google's TPU7x comparison table labels it GiB), "
               "bidirectional ICI 800 GB/s per chip (400 GB/s each way) over 4 ports, 256-chip "
               "pods in a 2D torus. DCN: 4 x 200 Gb/s per 8-chip host = 100 Gb/s per chip. Price: "
               "Google's on-demand list price per chip-hour, read 2026-12 from the undated live "
               "pricing page."),
        extra={"ici_topology": "2D torus"},
    ),

    Chip(
        name="TPU v7", vendor="Google", year=2025,
        flops={"bf16": 2307 * TFLOPS, "fp8": 4614 * TFLOPS},
        hbm_bandwidth=7.37 * TBps, hbm_capacity=192 * GiB, capacity_unit="GiB",
        scale_up_bandwidth=600 * GBps, scale_up_domain=9216,
        source="google_tpu7x_docs",
        notes=("Ironwood (TPU7x). Cloud docs: 2,307 TFLOPS bf16, 4,614 TFLOPS fp8, 192 GiB HBM3e; "
               "HBM bandwidth 7.37 TB/s and 1.2 TB/s bidirectional ICI per chip (600 GB/s each "
               "way) as announced by Google (Hot Chips 2025 reports 7.3 TB/s); 9,216-chip pods. No "
               "public on-demand price or per-chip DCN figure found."),
        extra={"ici_topology": "3D torus"},
    ),
)

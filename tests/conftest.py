"""Shared by every unit test: the sentinel catalogue of ``make check``, and the made-up test
chips and toy models that several test files use, each defined once as a fixture (issue 29).

``make check`` sets ``LLMMATH_SENTINELS=1``: the tests that sweep the whole catalogue
(``chips.all_chips()``, ``models.all_models()``, their ``names()``) then sweep a few chips and
models that between them take every branch of the library (no fp8, fp8, fp4; a 72-chip scale-up
domain; a TPU and an AMD chip; MHA, GQA, MLA, a sparse-attention indexer, sliding windows, dense
and MoE), so the edit loop stays under a
minute. A test of a fact about the whole catalogue (its range of ridge points, say) is marked
``whole_catalogue`` and skipped there. ``make test`` never sets it: CI sweeps everything.

The shared chips and models are fixtures: a test takes one by naming it as an argument (never
``from conftest import``: ``tests/browser/conftest.py`` is imported under that module name too).
A chip is built afresh for each test (its ``flops`` is a dict a test could change); a model is
frozen, so one serves the whole session, which lets hypothesis's property tests take it (they
refuse function-scoped fixtures). The hand computations that use their figures stay in comments
next to the tests.
"""

from __future__ import annotations

import os
import pathlib

import pytest

import llmmath
from llmmath import chips, models
from llmmath.chips import Chip
from llmmath.models import Model

SENTINEL_CHIPS = ("A100-SXM-80GB", "H100-SXM", "B200", "GB200", "MI300X", "TPU v5e")
SENTINEL_MODELS = ("GPT-3-175B", "Llama-3-8B", "Llama-3-70B", "Mixtral-8x7B", "DeepSeek-V3",
                   "DeepSeek-V3.2", "gpt-oss-120b")

if os.environ.get("LLMMATH_SENTINELS"):
    # before any test module is imported: their module-level lists read these functions
    chips.all_chips = lambda: [chips.get(name) for name in SENTINEL_CHIPS]
    models.all_models = lambda: [models.get(name) for name in SENTINEL_MODELS]
    chips.names = lambda: list(SENTINEL_CHIPS)
    models.names = lambda: list(SENTINEL_MODELS)


def pytest_report_header(config):
    if os.environ.get("LLMMATH_SENTINELS"):
        return (f"sentinel catalogue (LLMMATH_SENTINELS): {len(SENTINEL_CHIPS)} chips, "
                f"{len(SENTINEL_MODELS)} models")
    return None


def is_physics_test(path) -> bool:
    """The unit tests that check the physics, by rule: a chapter's claims
    (``test_claims_<chapter>.py``), a physics module's own tests (``test_<module>.py``), and any
    file that says ``pytestmark = pytest.mark.physics``. ``make mutate`` and
    ``make unit-baseline`` run these (``-m physics``); a new chapter's files join by their names.
    The browser suite is never physics, whatever its files are called (``tests/browser/
    test_layout.py`` is the page layout, not :mod:`llmmath.layout`)."""
    path = pathlib.Path(path)
    if "browser" in path.parts:
        return False
    name = path.stem
    return name.startswith("test_claims_") or name[len("test_"):] in llmmath.physics_modules()


def pytest_collection_modifyitems(config, items):
    for item in items:
        if is_physics_test(item.path):
            item.add_marker(pytest.mark.physics)
    if not os.environ.get("LLMMATH_SENTINELS"):
        return
    skip = pytest.mark.skip(reason="a fact about the whole catalogue: make test runs it")
    for item in items:
        if "whole_catalogue" in item.keywords:
            item.add_marker(skip)


# ----- shared test chips and toy models ----------------------------------------------------------

@pytest.fixture
def toy_chip():
    """Round numbers (1 PFLOP/s bf16, 1 TB/s, 100 GB; no price, no links): hand-checkable times."""
    return Chip(name="toy", flops={"bf16": 1e15}, hbm_bandwidth=1e12, hbm_capacity=100e9)


@pytest.fixture
def small_chip():
    """The toy chip with 10 GB instead of 100 GB: too small for Llama-3-8B's 16 GB of weights."""
    return Chip(name="small", flops={"bf16": 1e15}, hbm_bandwidth=1e12, hbm_capacity=10e9)


@pytest.fixture
def no_scale_up_chip():
    """A chip (1 PFLOP/s, 1 TB/s, 80 GB) with a 50 GB/s scale-out link but no scale-up domain."""
    return Chip(name="no-domain", flops={"bf16": 1e15}, hbm_bandwidth=1e12, hbm_capacity=80e9,
                scale_out_bandwidth=50e9)


@pytest.fixture(scope="session")
def toy_moe():
    """A small MoE (8 layers, 64 experts of 512, 4 a token, one shared, tied) for property tests."""
    return Model(name="toy-moe", n_layers=8, d_model=1024, d_ff=4096, n_heads=8, n_kv_heads=2,
                 vocab_size=1000, tied_embeddings=True, n_experts=64, experts_per_token=4,
                 d_ff_expert=512, n_shared_experts=1)


@pytest.fixture(scope="session")
def deepseek_v32_windowed():
    """DeepSeek-V3.2 with 31 of its 61 layers windowed at 512 tokens: two context caps at once."""
    return models.get("DeepSeek-V3.2").replace(sliding_window=512, n_sliding_layers=31)


@pytest.fixture(scope="session")
def deepseek_v32_no_indexer():
    """DeepSeek-V3.2 without its indexer: its top-k reads alone, which stop growing with context."""
    return models.get("DeepSeek-V3.2").replace(index_n_heads=None, index_head_dim=None,
                                               index_key_bytes=None)

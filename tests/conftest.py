"""Shared by every unit test: the sentinel catalogue of ``make check``.

``make check`` sets ``LLMMATH_SENTINELS=1``: the tests that sweep the whole catalogue
(``chips.all_chips()``, ``models.all_models()``) then sweep a few chips and models that between
them take every branch of the library (no fp8, fp8, fp4; a TPU and an AMD chip; MHA, GQA, MLA,
a sparse-attention indexer, sliding windows, dense and MoE), so the edit loop stays under a
minute. A test of a fact about the whole catalogue (its range of ridge points, say) is marked
``whole_catalogue`` and skipped there. ``make test`` never sets it: CI sweeps everything.
"""

from __future__ import annotations

import os

import pytest

from llmmath import chips, models

SENTINEL_CHIPS = ("A100-SXM-80GB", "H100-SXM", "B200", "MI300X", "TPU v5e")
SENTINEL_MODELS = ("GPT-3-175B", "Llama-3-8B", "Llama-3-70B", "Mixtral-8x7B", "DeepSeek-V3",
                   "DeepSeek-V3.2", "gpt-oss-120b")

if os.environ.get("LLMMATH_SENTINELS"):
    # before any test module is imported: their module-level lists read these functions
    chips.all_chips = lambda: [chips.get(name) for name in SENTINEL_CHIPS]
    models.all_models = lambda: [models.get(name) for name in SENTINEL_MODELS]


def pytest_report_header(config):
    if os.environ.get("LLMMATH_SENTINELS"):
        return (f"sentinel catalogue (LLMMATH_SENTINELS): {len(SENTINEL_CHIPS)} chips, "
                f"{len(SENTINEL_MODELS)} models")
    return None


def pytest_collection_modifyitems(config, items):
    if not os.environ.get("LLMMATH_SENTINELS"):
        return
    skip = pytest.mark.skip(reason="a fact about the whole catalogue: make test runs it")
    for item in items:
        if "whole_catalogue" in item.keywords:
            item.add_marker(skip)

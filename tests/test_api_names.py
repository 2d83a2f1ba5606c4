"""One name per concept (issue 12): every public argument name is in lib/README.md's table.

The callables are discovered, not listed: every function in the ``__all__`` of every public
``llmmath`` module (figures and explorers included) and the public methods of ``Model`` and
``Chip``. Classes are records (their fields mirror configs and results) and are not walked.
A name missing from the table fails, and so does a spelling the table lists as "not spelled"
for a concept that has another name.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
from collections import defaultdict
from pathlib import Path

import pytest

import llmmath
from llmmath import Chip, Model, roofline

README = Path(__file__).resolve().parents[1] / "lib" / "README.md"

# Spellings that differ from the table, in code owned elsewhere, to rename there; each entry is
# (name, where). Strict where the callable exists: once it stops using the name, the test
# fails until the entry is removed here.
KNOWN_DEVIATIONS = {
}


def _table():
    """{name: meaning} and {other spelling: name} from the README's table."""
    names, others = {}, {}
    in_table = False
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("## One name per concept"):
            in_table = True
            continue
        if in_table and line.startswith("## "):
            break
        if not (in_table and line.startswith("| `")):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        row_names = re.findall(r"`([^`]+)`", cells[0])
        for n in row_names:
            assert n not in names, f"{n!r} appears twice in the table"
            names[n] = cells[1]
        for other in re.findall(r"`([^`]+)`", cells[2] if len(cells) > 2 else ""):
            assert other not in others, f"{other!r} is listed as a spelling of two names"
            others[other] = row_names[0]
    return names, others


def _public_arguments():
    """{argument name: {"module.callable", ...}} over every discovered public callable."""
    used = defaultdict(set)
    modules = [i.name for i in pkgutil.iter_modules(llmmath.__path__) if not i.name.startswith("_")]
    for mod_name in modules:
        mod = importlib.import_module(f"llmmath.{mod_name}")
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.isclass(obj) or not callable(obj):
                continue
            for p in inspect.signature(obj).parameters.values():
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    used[p.name].add(f"{mod_name}.{name}")
    for cls in (Model, Chip):
        for name, fn in vars(cls).items():
            if name.startswith("_") or not inspect.isfunction(fn):
                continue
            for p in list(inspect.signature(fn).parameters.values())[1:]:  # after self
                if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                    used[p.name].add(f"{cls.__name__}.{name}")
    return used


NAMES, OTHERS = _table()
USED = _public_arguments()


def test_the_table_is_read():
    assert {"n_chips", "batch", "context", "prompt", "weight_bytes", "kv_bytes", "dtype",
            "price_per_chip_hour"} <= set(NAMES)
    assert OTHERS["chips"] == "n_chips" and OTHERS["price_per_hour"] == "price_per_chip_hour"
    assert not set(NAMES) & set(OTHERS), "a name cannot also be another name's other spelling"


def test_the_walk_finds_the_public_api():
    assert len(USED) > 80
    assert "step.decode_step" in USED["n_chips"] and "Model.kv_cache_bytes" in USED["context"]
    assert any(w.startswith("plots.") for w in USED["model"])  # figures are walked too


@pytest.mark.parametrize("name", sorted(USED))
def test_every_argument_name_is_in_the_table(name):
    where = sorted(USED[name])
    if name in OTHERS:
        known = {w for w in where if (name, w) in KNOWN_DEVIATIONS}
        assert known == set(where), (
            f"{name!r} ({', '.join(where)}) is spelled {OTHERS[name]!r} everywhere else: "
            f"rename it (lib/README.md, 'One name per concept')")
        return
    assert name in NAMES or _derived(name), (
        f"argument {name!r} ({', '.join(where)}) is not in lib/README.md's 'One name per "
        "concept' table (nor mark_<name> or <name>s of one): use the table's name for its "
        "concept, or add a row saying what it means")


def _derived(name):
    """Names the table's rule derives from one of its names: ``mark_<name>`` (the value a figure
    marks) and ``<name>s`` (a sweep of it)."""
    return (name.startswith("mark_") and name[len("mark_"):] in NAMES) or \
        (name.endswith("s") and name[:-1] in NAMES)


def test_derived_names_by_hand():
    assert _derived("mark_batch") and _derived("contexts") and _derived("mark_bandwidth")
    assert not _derived("mark_gpu") and not _derived("gpus") and not _derived("bandwidth_list")


def test_known_deviations_still_exist():
    """Strict: a fixed deviation must leave KNOWN_DEVIATIONS."""
    walked = set().union(*USED.values())
    for name, where in KNOWN_DEVIATIONS:
        if where in walked:  # the callable exists on this branch
            assert where in USED.get(name, set()), f"{name!r} in {where} is gone: remove it here"


def test_roofline_gathers_exactly_its_parts():
    parts = [n for part in roofline.PARTS for n in part.__all__]
    assert roofline.__all__ == parts
    for n in parts:
        assert getattr(roofline, n) is getattr(importlib.import_module(
            next(p.__name__ for p in roofline.PARTS if n in p.__all__)), n)


def _stem(name):
    """A name without the decorations that make one concept look like two."""
    name = re.sub(r"^(n_|num_)", "", name)
    return re.sub(r"(_name|_size|_len|_length|_count)$", "", name)


def test_no_two_used_names_differ_only_in_decoration():
    """``chips`` / ``n_chips``, ``chip`` / ``chip_name``, ``batch`` / ``batch_size``: caught even
    where the table's last column forgot them."""
    by_stem = defaultdict(set)
    for name in USED:
        by_stem[_stem(name)].add(name)
    known = {n for n, _ in KNOWN_DEVIATIONS}
    clashes = {s: sorted(ns) for s, ns in by_stem.items() if len(ns - known) > 1}
    assert not clashes, f"one concept, two spellings: {clashes}"


def _api_page():
    pytest.importorskip("sphinx")  # the page's extension is build tooling: make compat has none
    path = README.parents[1] / "_ext" / "api_page.py"
    spec = importlib.util.spec_from_file_location("api_page", path)
    page = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(page)
    return page


def test_the_api_page_has_a_section_for_every_module_but_gathered_parts():
    """book/api.md is generated (_ext/api_page.py): every module the package finds, once."""
    listed = _api_page().modules()
    parts = {p.__name__.rsplit(".", 1)[1] for p in roofline.PARTS}
    assert set(listed) == (set(llmmath.physics_modules()) | set(llmmath.PRESENTATION)) - parts
    assert len(listed) == len(set(listed)) and "roofline" in listed and "moe" in listed
    assert listed.index("plots") > listed.index("units")  # physics first, then presentation


def test_the_api_page_documents_each_part_under_the_gathering_module():
    page = _api_page()
    for part in roofline.PARTS:
        rst = "\n".join(page._part_rst("llmmath.roofline", part))
        documented = re.findall(r"\.\. auto(?:function|class):: (\w+)", rst)
        assert documented == part.__all__, part.__name__
        assert ".. currentmodule:: llmmath.roofline" in rst


def test_the_api_page_lists_a_modules_all():
    cost = importlib.import_module("llmmath.cost")
    assert _api_page()._members(cost).split(":members: ")[1].split(", ") == cost.__all__
    assert _api_page()._members(importlib.import_module("llmmath.units")).strip() == ":members:"

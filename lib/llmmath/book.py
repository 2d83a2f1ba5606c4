"""Helpers for the chapter notebooks: glue computed text into the prose.

``myst_nb.glue`` stores a value's ``repr``, so a glued string would show in quotes.
:func:`glue` stores text that prints as itself, so ``{glue:}`name``` shows ``989 TFLOP/s``.
"""

from __future__ import annotations


class Text:
    """A string whose repr is itself (so glued prose has no quotes)."""

    def __init__(self, text: str):
        self.text = str(text)

    def __repr__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text

    def _repr_pretty_(self, p, cycle):  # IPython's plain-text printer
        p.text(self.text)


def glue(name: str, text, display: bool = False):
    """Glue `text` (already formatted, e.g. by :mod:`llmmath.units`) under `name` for ``{glue:}``.

    Returns None, so a cell of glue calls prints nothing.
    """
    from myst_nb import glue as _glue

    _glue(name, Text(text), display=display)


class Table:
    """A table rendered as MyST markdown (so ``{cite}`` roles in it work) with a plain-text twin."""

    def __init__(self, headers: list[str], rows: list[list[str]], caption: str = ""):
        self.headers, self.rows, self.caption = headers, rows, caption

    def _repr_markdown_(self) -> str:
        def line(cells):
            return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"

        out = [line(self.headers), "|" + "---|" * len(self.headers)] + [line(r) for r in self.rows]
        if self.caption:
            out = [self.caption, ""] + out
        return "\n".join(out)

    def __repr__(self) -> str:
        table = [self.headers, *self.rows]
        widths = [max(len(str(r[i])) for r in table) for i in range(len(self.headers))]
        return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True))
                         for r in table)

    def _repr_pretty_(self, p, cycle):
        p.text(repr(self))


def chip_table(dtype: str = "bf16") -> Table:
    """Every catalogue chip: the three numbers, the network and the price, with sources."""
    from . import chips
    from .units import fmt_bandwidth, fmt_bytes, fmt_flops_rate, fmt_time, fmt_usd

    rows = []
    for c in chips.all_chips():
        peak = fmt_flops_rate(c.peak(dtype)) if dtype in c.flops else "-"
        ratio = f"{c.ops_per_byte(dtype):.0f}" if dtype in c.flops else "-"
        cap = fmt_bytes(c.hbm_capacity, binary=c.capacity_unit == "GiB")
        up = (f"{fmt_bandwidth(c.scale_up_bandwidth)} × {c.scale_up_domain}"
              if c.scale_up_bandwidth and c.scale_up_domain else "-")
        price = f"{fmt_usd(c.price_per_hour)} ({c.price_date})" if c.price_per_hour else "-"
        cite = f"{{cite:p}}`{c.source}`" if c.source else ""
        rows.append([c.name, peak, fmt_bandwidth(c.hbm_bandwidth), cap, ratio,
                     fmt_time(c.drain_time), up, price, cite])
    headers = ["chip", f"dense {dtype}", "HBM bandwidth", "HBM capacity", "FLOP/byte", "drain time",
               "scale-up (one way) × domain", "price per chip-hour", "source"]
    return Table(headers, rows)


def model_table() -> Table:
    """Every catalogue model: shape, counted vs published parameters, KV bytes per token."""
    from . import models
    from .units import fmt_bytes, fmt_count

    rows = []
    for m in models.all_models():
        if m.kv_lora_rank is not None:  # MLA has no K/V heads: a latent and a RoPE key
            shape = (f"L={m.n_layers}, D={m.d_model}, MLA {m.n_heads} heads, latent "
                     f"{m.kv_lora_rank} + RoPE {m.qk_rope_head_dim}")
        else:
            shape = (f"L={m.n_layers}, D={m.d_model}, {m.attention_kind} "
                     f"{m.n_heads}/{m.n_kv_heads}×{m.head_dim}")
        if m.is_moe:
            shape += f", E={m.n_experts}, k={m.experts_per_token}"
        # four digits: LLaMA-2's paper prints 68.98B for its "70B" (three would say 69B)
        pub = fmt_count(m.published_params, digits=4) if m.published_params else "-"
        cite = f"{{cite:p}}`{m.source}`" if m.source else ""
        rows.append([m.name, shape, fmt_count(m.total_params), pub, fmt_count(m.active_params),
                     fmt_bytes(m.kv_bytes_per_token(2)), cite])
    headers = ["model", "shape", r"$N_\text{tot}$ (counted)", "published",
               r"$N_\text{act}$ (counted)",
               "KV bytes/token (bf16)", "source"]
    return Table(headers, rows)


def chapters(toc=None) -> list[str]:
    """The numbered chapters' document names (``book/<name>.ipynb``) in the book's order, read from
    ``_toc.yml`` (``toc``; by default the first found from the working folder upward, so a
    notebook in ``book/`` finds the repository's)."""
    from pathlib import Path

    import yaml

    if toc is None:
        here = Path.cwd().resolve()
        found = [d / "_toc.yml" for d in (here, *here.parents) if (d / "_toc.yml").is_file()]
        if not found:
            raise FileNotFoundError(f"toc: no _toc.yml in {here} or any folder above it")
        toc = found[0]
    parts = yaml.safe_load(Path(toc).read_text(encoding="utf-8"))["parts"]
    return [Path(c["file"]).name for p in parts if p.get("numbered")
            for c in p.get("chapters", [])]


SKIP_CALLS = ("widgets", "frames")  # explorers and their kernel-free twins: no figure of their own


def _root_name(node) -> str:
    import ast

    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ""


def figure_label(cell) -> str | None:
    """A code cell's figure label (``mystnb.figure.name``), the name cross-references use."""
    return cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")


def chapter_figures(notebook):
    """Run a chapter notebook's code in this process and yield ``(label, figure)`` for each
    labelled figure cell, as its builder drew it (matplotlib's Agg backend, glue off).

    Explorer cells (``widgets.*`` / ``frames.*`` calls) and the cells after the last figure
    (exercise keys, answer checks) are skipped. A labelled cell that does not draw exactly one
    figure is a ``RuntimeError``. Runs in the notebook's folder; the figures stay open for
    the caller (``plt.close`` them).
    """
    import ast
    import json
    import os
    from pathlib import Path

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    path = Path(notebook).resolve()
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    labelled = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and figure_label(c)]
    ns: dict = {"__name__": "__main__", "display": lambda *a, **k: None}
    here, glued = os.getcwd(), globals()["glue"]
    globals()["glue"] = lambda *args, **kwargs: None  # the prose is not rebuilt here
    os.chdir(path.parent)
    try:
        for i, cell in enumerate(cells[: labelled[-1] + 1] if labelled else []):
            if cell["cell_type"] != "code":
                continue
            where = f"{path.name} cell {i}"
            tree = ast.parse("".join(cell["source"]), filename=where)
            if tree.body and all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                                 and _root_name(s.value) in SKIP_CALLS for s in tree.body):
                continue
            label = figure_label(cell)
            before = set(plt.get_fignums())
            last = None
            if tree.body and isinstance(tree.body[-1], ast.Expr):
                exec(compile(ast.Module(body=tree.body[:-1], type_ignores=[]), where, "exec"), ns)
                last = eval(compile(ast.Expression(tree.body[-1].value), where, "eval"), ns)
            else:
                exec(compile(tree, where, "exec"), ns)
            if label:
                figs = ([last] if isinstance(last, Figure)
                        else [plt.figure(n) for n in set(plt.get_fignums()) - before])
                if len(figs) != 1:
                    raise RuntimeError(f"{where} ({label}) drew {len(figs)} figures; expected "
                                       "exactly one")
                yield label, figs[0]
    finally:
        globals()["glue"] = glued
        os.chdir(here)

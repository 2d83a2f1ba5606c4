"""The house style: palette, fonts, opaque backgrounds, and one colour map for every figure.

Every builder takes its colours from here: a colour per role (:data:`ROLE`: compute, weights,
KV, memory, bound, cost, capacity ...), per attention kind, and per chip or model in a list
(:func:`series_colour`), so the same quantity looks the same in every chapter. Figures are drawn
on an opaque white background (``STYLE``), which stays legible in the site's dark mode.

:data:`PHONE` holds the rcParams a phone rendition overrides (bigger text, thicker lines);
``house_style(phone=True)`` applies them on top of :data:`STYLE`.
"""

from __future__ import annotations

import contextvars
from contextlib import contextmanager

import matplotlib as mpl
import matplotlib.pyplot as plt
from matplotlib.backends.backend_agg import FigureCanvasAgg

__all__ = ["PALETTE", "CYCLE", "ROLE", "KIND_COLOUR", "NOFIT", "STYLE", "PHONE", "series_colour",
           "chip_colour", "model_colour",
           "batch_colour", "house_style", "setup_notebook", "offscreen",
           "legend_outside"]

# Okabe-Ito, colour-blind safe; black last for reference lines.
PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "ochre": "#A08600",  # Okabe-Ito yellow darkened to 3.6:1 on white, for lines and bars
    "black": "#000000",
    "grey": "#7F7F7F",
}
#: Colours of the chips or models of one figure, in list order.
CYCLE = [PALETTE[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "ochre",
                              "black")]
#: Roles, so every figure colours the same quantity the same way.
ROLE = {
    "compute": PALETTE["blue"],
    "weights": PALETTE["orange"],
    "kv": PALETTE["green"],
    "memory": PALETTE["orange"],  # weights + KV, drawn with the weights' colour
    "total": PALETTE["black"],
    "bound": PALETTE["black"],  # the step bound: the max of the parts
    "cost": PALETTE["vermillion"],
    "capacity": PALETTE["grey"],  # a reference level (HBM, a price): never a model's colour
    "reference": PALETTE["grey"],
    "prefill": PALETTE["sky"],  # prefill per prompt token (compute-bound)
    "decode": PALETTE["purple"],  # decode per output token (memory-bound at small batch)
    "idle": "#f2b38f",  # routed experts a token does not use (a light vermillion)
    "router": PALETTE["ochre"],
    "overhead": PALETTE["ochre"],  # engine overheads of the estimate (chapter 10)
}
#: Colours a line or bar may have below 3:1 contrast on white: Okabe-Ito orange (2.2:1) and sky
#: blue (2.3:1) carry roles and models in every chapter and are drawn at least 2 pt wide or
#: as filled bars; yellow (1.3:1) is not drawn at all (``ochre`` replaces it).
LOW_CONTRAST_OK = (PALETTE["orange"], PALETTE["sky"])
#: One colour per batch size in every figure that draws series per batch.
BATCH_COLOUR = {1: PALETTE["blue"], 8: PALETTE["sky"], 16: PALETTE["green"],
                64: PALETTE["orange"], 256: PALETTE["vermillion"], 512: PALETTE["purple"],
                1024: PALETTE["black"]}
#: Attention kinds (KV-cache figures).
KIND_COLOUR = {"MHA": PALETTE["vermillion"], "GQA": PALETTE["blue"], "MQA": PALETTE["green"],
               "MLA": PALETTE["purple"]}
#: Chip vendors (scatter plots of the catalogue); others get ``PALETTE["purple"]``.
VENDOR_COLOUR = {"NVIDIA": PALETTE["green"], "AMD": PALETTE["vermillion"],
                 "Google": PALETTE["blue"]}
#: Memory tiers, in the same colours in every figure (HBM, DRAM, flash, disk).
TIER_COLOUR = [PALETTE["blue"], PALETTE["orange"], PALETTE["green"], PALETTE["purple"]]
NOFIT = "#d9d9d9"  # grey for "does not fit in memory"

#: One colour per chip in every figure (chips drawn together in the book get different colours).
CHIP_COLOUR = {
    "A100-SXM-80GB": PALETTE["sky"], "H100-SXM": PALETTE["blue"], "H200": PALETTE["purple"],
    "B200": PALETTE["green"], "GB200": PALETTE["green"], "B300": PALETTE["black"],
    "Rubin": PALETTE["grey"], "MI300X": PALETTE["vermillion"], "MI355X": PALETTE["vermillion"],
    "TPU v4": PALETTE["ochre"], "TPU v5e": PALETTE["orange"], "TPU v5p": PALETTE["black"],
    "TPU v6e": PALETTE["purple"], "TPU v7": PALETTE["grey"],
}
#: One colour per model in every figure (models drawn together in the book get different colours;
#: a variant such as Llama-3.1-70B takes its architecture's colour).
MODEL_COLOUR = {
    "Llama-3-8B": PALETTE["sky"], "Llama-3-70B": PALETTE["blue"], "Llama-3.1-70B": PALETTE["blue"],
    "Llama-3.1-405B": PALETTE["purple"], "LLaMA-2-13B": PALETTE["black"],
    "Qwen3-235B-A22B": PALETTE["green"], "DeepSeek-V3": PALETTE["vermillion"],
    "DeepSeek-V3.2": PALETTE["sky"], "gpt-oss-120b": PALETTE["orange"],
    "GPT-3-175B": PALETTE["black"], "MT-NLG-530B": PALETTE["grey"], "PaLM-8B": PALETTE["sky"],
    "PaLM-62B": PALETTE["green"], "PaLM-540B": PALETTE["vermillion"], "LLaMA-2-7B": PALETTE["sky"],
    "LLaMA-2-70B": PALETTE["blue"], "Mixtral-8x7B": PALETTE["green"],
    "Mixtral-8x22B": PALETTE["vermillion"], "Qwen3-30B-A3B": PALETTE["orange"],
}


def series_colour(i: int) -> str:
    """Colour of the ``i``-th series of a figure that is neither a chip nor a model (number
    formats, draft lengths ...)."""
    return CYCLE[i % len(CYCLE)]


def _by_name(table, name, kind):
    name = getattr(name, "name", name)
    if not isinstance(name, str):
        raise TypeError(f"{kind}: expected a name or an object with .name, got {name!r}")
    if name in table:
        return table[name]
    # a chip or model outside the map (a reader's own): a stable colour from its name
    return CYCLE[sum(map(ord, name)) % len(CYCLE)]


def batch_colour(batch) -> str:
    """The colour of a batch size in every figure (others: a stable colour from the number)."""
    return BATCH_COLOUR.get(int(batch), CYCLE[int(batch) % len(CYCLE)])


def chip_colour(chip) -> str:
    """The colour of a chip (name or :class:`~llmmath.chips.Chip`) in every figure."""
    return _by_name(CHIP_COLOUR, chip, "chip")


def model_colour(model) -> str:
    """The colour of a model (name or :class:`~llmmath.models.Model`) in every figure."""
    return _by_name(MODEL_COLOUR, model, "model")


def distinct_styles(colours):
    """(colour, line style) per series: a colour already used in the figure gets a dashed, then
    dotted line, so series that share a book-wide colour stay apart."""
    seen: dict = {}
    out = []
    for c in colours:
        k = seen.get(c, 0)
        seen[c] = k + 1
        out.append((c, ("-", "--", ":", "-.")[k % 4]))
    return out


STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.transparent": False,
    "font.size": 12,
    "axes.titlesize": 12.5,
    "axes.labelsize": 12,
    "xtick.labelsize": 11.5,
    "ytick.labelsize": 11.5,
    "legend.fontsize": 11.5,
    "legend.title_fontsize": 11.5,
    "legend.frameon": False,
    "lines.linewidth": 2.0,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "axes.prop_cycle": mpl.cycler(color=CYCLE),
    "figure.constrained_layout.use": True,
    "svg.hashsalt": "roofline-book",  # deterministic ids if anyone saves SVG
}
#: The text column of a 390 px phone screen, in CSS px, and the smallest text a figure shown at
#: that width may carry (px): figures are 6.4 in wide at 100 dpi (640 CSS px on a desktop).
PHONE_COLUMN_PX = 358
MIN_PHONE_PX = 8.9
#: Size (pt) of the smallest text of a figure (annotations, ticks, legends): 11.5 pt is 8.9 px
#: when a 6.4 in figure is shown 358 px wide.
SMALL = 11.5
#: What a phone rendition changes on top of :data:`STYLE` (the hook for narrow screens).
PHONE = {
    "font.size": 13,
    "axes.titlesize": 13,
    "axes.labelsize": 13,
    "xtick.labelsize": 12,
    "ytick.labelsize": 12,
    "legend.fontsize": 11,
    "lines.linewidth": 2.6,
}

_OFFSCREEN = contextvars.ContextVar("llmmath_plots_offscreen", default=False)


@contextmanager
def house_style(phone: bool = False):
    """Apply the book's rcParams inside a ``with`` block (``phone=True``: the phone rendition)."""
    with mpl.rc_context({**STYLE, **PHONE} if phone else STYLE):
        yield


@contextmanager
def offscreen():
    """Inside this block builders make figures outside pyplot (not shown by the notebook's
    inline backend, never leaked): what explorers and kernel-free frames use."""
    token = _OFFSCREEN.set(True)
    try:
        yield
    finally:
        _OFFSCREEN.reset(token)


_LEGEND_OUTSIDE = contextvars.ContextVar("llmmath_plots_legend_outside", default=False)


@contextmanager
def legend_outside():
    """Inside this block every settled legend goes below the axes, whatever the data: the frames
    of one slider then keep their legend in one place (:mod:`llmmath.frames`)."""
    token = _LEGEND_OUTSIDE.set(True)
    try:
        yield
    finally:
        _LEGEND_OUTSIDE.reset(token)


def is_legend_outside() -> bool:
    """Whether builders are inside :func:`legend_outside`."""
    return _LEGEND_OUTSIDE.get()


def is_offscreen() -> bool:
    """Whether builders are inside :func:`offscreen`."""
    return _OFFSCREEN.get()


def setup_notebook():
    """Call once at the top of a chapter: sharp (2x) PNG figures with the house style.

    Inside a Jupyter kernel it also selects the inline backend, so figures show (and nbval
    sees them) even where MPLBACKEND=Agg is set in the environment.
    """
    mpl.rcParams.update(STYLE)
    try:  # only inside IPython
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None and getattr(shell, "kernel", None) is not None:
            shell.run_line_magic("matplotlib", "inline")
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("retina")
    except Exception:  # pragma: no cover - outside a kernel nothing to configure
        pass


def new_figure(figsize, figure_class):
    """A house-style figure of ``figure_class``: in pyplot, or (inside :func:`offscreen`) on its
    own Agg canvas."""
    with house_style():
        if _OFFSCREEN.get():
            fig = figure_class(figsize=figsize)
            FigureCanvasAgg(fig)
        else:
            fig = plt.figure(figsize=figsize, FigureClass=figure_class)
    return fig

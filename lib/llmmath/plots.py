"""Figure builders with one house style. Every chapter figure comes from here.

Each builder takes the model, chip and workload as arguments and returns a matplotlib
``Figure``, so a reader can rebuild any figure for their own hardware. The house style
(:func:`house_style`) is applied by the builders themselves: readable on a phone, a
colour-blind-safe palette (Okabe and Ito 2008), an opaque white background that stays
legible in the site's dark mode, labelled axes with units.
"""

from __future__ import annotations

from contextlib import contextmanager

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np

from . import chips as _chips
from .units import fmt_si

# Okabe-Ito, colour-blind safe; black last for reference lines.
PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
    "grey": "#7F7F7F",
}
CYCLE = [PALETTE[k] for k in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "black")]
# Roles, so every figure colours the same quantity the same way.
ROLE = {
    "compute": PALETTE["blue"],
    "weights": PALETTE["orange"],
    "kv": PALETTE["green"],
    "total": PALETTE["black"],
    "cost": PALETTE["vermillion"],
    "capacity": PALETTE["purple"],
}

STYLE = {
    "figure.figsize": (6.4, 4.0),
    "figure.dpi": 100,
    "savefig.dpi": 200,
    "figure.facecolor": "white",
    "savefig.facecolor": "white",
    "axes.facecolor": "white",
    "savefig.transparent": False,
    "font.size": 11,
    "axes.titlesize": 12,
    "axes.labelsize": 11,
    "xtick.labelsize": 10,
    "ytick.labelsize": 10,
    "legend.fontsize": 9.5,
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


@contextmanager
def house_style():
    """Apply the book's rcParams inside a ``with`` block."""
    with mpl.rc_context(STYLE):
        yield


def setup_notebook():
    """Call once at the top of a chapter: sharp (2x) PNG figures with the house style."""
    mpl.rcParams.update(STYLE)
    try:  # only inside IPython
        from matplotlib_inline.backend_inline import set_matplotlib_formats

        set_matplotlib_formats("retina")
    except Exception:  # pragma: no cover - outside a kernel nothing to configure
        pass


def _new(figsize=None):
    with house_style():
        fig, ax = plt.subplots(figsize=figsize or STYLE["figure.figsize"])
    return fig, ax


def chip_balance(chip_list=None, dtype: str = "bf16"):
    """Bar chart of each chip's FLOP per byte of HBM bandwidth (the roofline's ridge point).

    Chips without `dtype` are left out. Returns the Figure.
    """
    chip_list = list(chip_list) if chip_list is not None else _chips.all_chips()
    shown = [c for c in chip_list if dtype in c.flops]
    if not shown:
        raise ValueError(f"dtype: no chip in the list has {dtype!r}")
    ratios = np.array([c.ops_per_byte(dtype) for c in shown])
    with house_style():
        fig, ax = plt.subplots(figsize=(6.4, 0.32 * len(shown) + 1.2))
        y = np.arange(len(shown))
        ax.barh(y, ratios, color=ROLE["compute"])
        ax.set_yticks(y, [c.name for c in shown])
        ax.invert_yaxis()
        ax.set_xlabel(f"peak {dtype} FLOP/s per byte/s of HBM bandwidth (FLOP/byte)")
        for yi, r in zip(y, ratios):
            ax.text(r, yi, f" {r:.0f}", va="center", fontsize=9)
        ax.grid(axis="y", visible=False)
        ax.set_xlim(0, ratios.max() * 1.15)
        ax.set_title("Ridge point: FLOPs a chip can do per byte it reads")
    return fig


def label_si(value, unit: str) -> str:
    """Short SI label for annotations."""
    return fmt_si(value, unit)

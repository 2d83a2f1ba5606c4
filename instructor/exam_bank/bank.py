"""The exam bank: questions as data, keys from ``llmmath`` (instructor kit only, never served).

Each :class:`Question` has a part, a chapter (its slug in ``_toc.yml``), a kind (one-step,
multi-step or derivation), a difficulty (1-3) and a ``make(rng)`` that draws one variant: the
model, chip and numbers, the question text, the constants it states (:class:`Given`), the answers
and a worked key. :func:`variants` draws two different variants per question from a seed.

Two routes to every answer, kept apart on purpose:

- the **key** is the library call the chapter uses, on the catalogue's exact figures;
- the **hand route** (``hand=``) is a function of the *stated* constants only (it receives
  nothing else), rounded as the question prints them: what a closed-book student computes.

``tests/test_exam_bank.py`` holds the two within the course guide's 10% (``TOLERANCE``), which
is what makes "every constant the key needs is stated" a checked fact rather than a hope. The
worked key prints the hand route beside the key and says where they differ.

Hypothetical exam inputs (batch sizes, prices, token counts, latencies) are drawn from short
lists below; every hardware and model figure comes from the catalogue (with its source there).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

import llmmath as lm
from llmmath import (
    collectives,
    estimate,
    layout,
    lifetime,
    moe,
    parallel,
    pipeline,
    prices,
    roofline,
    tradeoffs,
    training,
)
from llmmath.units import (
    fmt_bandwidth,
    fmt_bytes,
    fmt_count,
    fmt_flops,
    fmt_flops_rate,
    fmt_percent,
    fmt_time,
)

#: Full credit within this relative error (book/course_guide.md, "Grading").
TOLERANCE = 0.10
PARTS = {1: "Foundations", 2: "Serving", 3: "Scaling out", 4: "Training"}
#: The chapters of each Part, as _toc.yml lists them (training_layout joins Part IV after
#: training_compute, issue 33).
CHAPTERS = {
    1: ("hardware", "counting"),
    2: ("decode_roofline", "batching_cost", "kv_cache", "prefill_prices"),
    3: ("moe_rack", "pipelining", "partitioning", "bound_to_estimate"),
    4: ("training_compute", "training_layout", "overtraining", "memory_for_compute"),
}
KINDS = ("one-step", "multi-step", "derivation")

#: Chips the bank draws: the cheat sheet's table (book/cheat_sheet.ipynb), so a closed-book
#: student has every C, W and M twice, in the question and on the sheet.
CHIPS = ("A100-SXM-80GB", "H100-SXM", "H200", "GB200", "MI355X", "TPU v5e", "TPU v6e", "TPU v7")
GPUS = ("A100-SXM-80GB", "H100-SXM", "H200", "GB200", "MI355X")
#: Dense models with plain (GQA or MHA) attention and a gated MLP: the config route to the
#: parameter count holds for them.
DENSE = ("LLaMA-2-7B", "LLaMA-2-13B", "LLaMA-2-70B", "Llama-3-8B", "Llama-3-70B",
         "Llama-3.1-405B")
#: Mixtures of experts with GQA attention (no sliding windows, no latent attention).
MOE = ("Mixtral-8x7B", "Mixtral-8x22B", "Qwen3-30B-A3B", "Qwen3-235B-A22B")
#: Every model with full GQA/MHA attention in every layer.
PLAIN = DENSE + MOE


# ----- the data ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class Given:
    """A constant the question states: ``symbol`` (the book's notation), ``value`` as printed
    (rounded as ``text`` shows it, SI) and ``text``. ``sheet=True``: the value is the cheat
    sheet's and the question points there instead of printing it (``text`` is the sheet's
    phrase, found in its rendered text)."""

    symbol: str
    value: float
    text: str
    sheet: bool = False


@dataclass(frozen=True)
class Answer:
    """One part of a key: ``label``, ``key`` (the library's value, SI, or a word such as
    "memory"), ``hand`` (the same from the stated constants only) and ``fmt`` to print it."""

    label: str
    key: float | str
    hand: float | str
    fmt: Callable = str

    def shown(self, value=None) -> str:
        v = self.key if value is None else value
        return v if isinstance(v, str) else self.fmt(v)


@dataclass(frozen=True)
class Variant:
    """One drawn version of a question: ``text`` (Markdown), ``givens``, ``answers``,
    ``worked`` (the worked key, one step per line) and ``marking`` (what earns credit)."""

    qid: str
    text: str
    givens: tuple
    answers: tuple
    worked: tuple
    marking: str = ""


@dataclass(frozen=True)
class Question:
    qid: str
    part: int
    chapter: str
    kind: str
    difficulty: int
    minutes: int
    title: str
    make: Callable = field(repr=False)


QUESTIONS: list[Question] = []


def question(qid, part, chapter, kind, difficulty, minutes, title):
    """Register ``make(rng) -> Variant`` as a question of the bank."""
    if chapter not in CHAPTERS[part]:
        raise ValueError(f"chapter: got {chapter!r}; Part {part} has {CHAPTERS[part]}")
    if kind not in KINDS or difficulty not in (1, 2, 3):
        raise ValueError(f"kind, difficulty: got {kind!r}, {difficulty!r}; allowed {KINDS}, 1-3")

    def register(make):
        QUESTIONS.append(Question(qid, part, chapter, kind, difficulty, minutes, title, make))
        return make
    return register


class _Sheet:
    """Builds a variant: ``g(...)`` states a constant and returns it as printed; ``answer(...)``
    pairs a key with its hand route, which is called with the stated values only."""

    def __init__(self, qid):
        self.qid, self.givens, self.answers = qid, [], []

    def g(self, symbol, value, fmt, digits=3, sheet_text=None):
        value = float(value)
        stated = float(f"{value:.{digits}g}") if digits else value
        text = sheet_text or fmt(stated)
        self.givens.append(Given(symbol, stated, text, sheet=sheet_text is not None))
        return text

    def capacity(self, chip):
        """A chip's HBM as the cheat sheet prints it (GiB for the TPUs that quote GiB)."""
        if chip.capacity_unit == "GiB":
            gib = float(f"{chip.hbm_capacity / 2**30:.3g}")
            self.givens.append(Given("M", gib * 2**30, fmt_bytes(gib * 2**30, binary=True)))
            return self.givens[-1].text
        return self.g("M", chip.hbm_capacity, fmt_bytes)

    def chip(self, chip, *what):
        """State a chip's bf16 peak ``C``, bandwidth ``W`` and capacity ``M`` (those asked)."""
        said = {"C": lambda: self.g("C", chip.peak("bf16"), fmt_flops_rate),
                "W": lambda: self.g("W", chip.hbm_bandwidth, fmt_bandwidth),
                "M": lambda: self.capacity(chip)}
        return ", ".join(f"${s}$ = {said[s]()}" for s in what)

    @property
    def v(self):
        return {g.symbol: g.value for g in self.givens}

    def answer(self, label, key, hand, fmt=str):
        h = hand(dict(self.v))  # the hand route sees the stated constants, nothing else
        self.answers.append(Answer(label, key if isinstance(key, str) else float(key),
                                   h if isinstance(h, str) else float(h), fmt))
        return self.answers[-1]

    def done(self, text, worked, marking=""):
        return Variant(self.qid, " ".join(text.split()) if "\n\n" not in text else text,
                       tuple(self.givens), tuple(self.answers), tuple(worked), marking)


def _n(x):
    """An exact count as printed: 8,192."""
    return f"{x:,.0f}"


def _usd(x):
    """Dollars without a dollar sign, which Markdown renderers take for math: "1.50 USD"."""
    return f"{x:.2f} USD" if x >= 1 else f"{x:.3g} USD"


def _a(name):
    """The article before a name read letter by letter: "an H100-SXM", "a GB200"."""
    return "an" if name[0] in "AEFHILMNORSX" else "a"


def _chips(n, name):
    """ "one H100-SXM" or "8 H100-SXMs"."""
    return f"one {name}" if n == 1 else f"{n} {name}s"


def _pick(rng, seq):
    return seq[rng.randrange(len(seq))]


def _bound(compute, memory):
    return "compute" if compute >= memory else "memory"


def _plain(x):
    """Three significant figures, whole numbers from 1,000 up (no exponent on a key)."""
    return f"{x:,.0f}" if abs(x) >= 1000 else f"{x:.3g}"


# ----- Part I: Foundations -----------------------------------------------------------------------

@question("p1-ridge", 1, "hardware", "one-step", 1, 5, "A chip's ridge point")
def _ridge(rng):
    chip = lm.chip(_pick(rng, CHIPS))
    i_op = _pick(rng, (8, 16, 32, 64, 128, 256, 512, 1024))
    s = _Sheet("p1-ridge")
    spec = s.chip(chip, "C", "W")
    s.g("I", i_op, _n, digits=None)
    ridge = s.answer("(a) ridge point $C/W$ (FLOP/byte)", chip.ops_per_byte("bf16"),
                     lambda v: v["C"] / v["W"], _plain)
    att = lm.roofline.attainable_flops(chip, i_op)
    s.answer("(b) attainable FLOP/s of the kernel", att,
             lambda v: min(v["C"], v["I"] * v["W"]), fmt_flops_rate)
    s.answer("(b) which resource binds", "compute" if i_op >= ridge.key else "memory",
             lambda v: "compute" if v["I"] >= v["C"] / v["W"] else "memory")
    return s.done(
        f"{_a(chip.name).capitalize()} {chip.name} does dense bf16 arithmetic at {spec}. (a) "
        "What is its ridge point, in FLOP "
        f"per byte? (b) A kernel does {_n(i_op)} FLOP per byte it moves: what FLOP/s can it reach "
        "at best, and which resource binds?",
        [f"Ridge: $C/W$ = {ridge.shown(ridge.hand)} FLOP/byte (library: {ridge.shown()}).",
         f"Roofline: $\\min(C, I W)$ = {s.answers[1].shown(s.answers[1].hand)}; the kernel is "
         f"{s.answers[2].key}-bound because its {_n(i_op)} FLOP/byte is "
         f"{'above' if s.answers[2].key == 'compute' else 'below'} the ridge."],
        "Full credit for the ridge and the direction of the comparison.")


@question("p1-drain", 1, "hardware", "one-step", 1, 5, "Drain time")
def _drain(rng):
    chip = lm.chip(_pick(rng, CHIPS))
    s = _Sheet("p1-drain")
    spec = s.chip(chip, "M", "W")
    t = s.answer("(a) drain time $M/W$", lm.roofline.drain_time(chip),
                 lambda v: v["M"] / v["W"], fmt_time)
    s.answer("(b) whole-memory reads per second", 1.0 / lm.roofline.drain_time(chip),
             lambda v: v["W"] / v["M"], _plain)
    return s.done(
        f"{_a(chip.name).capitalize()} {chip.name} has {spec}. (a) How long does it take to "
        "read its whole memory once? "
        "(b) How many times a second can a decode step that reads the whole memory run, at best?",
        [f"$t_\\text{{drain}} = M/W$ = {t.shown(t.hand)} (library: {t.shown()}).",
         "A decode step that reads everything it holds runs at most $1/t_\\text{drain}$ = "
         f"{s.answers[1].shown(s.answers[1].hand)} times a second: memory capacity bounds "
         "latency."])


@question("p1-matmul", 1, "hardware", "multi-step", 2, 10, "A matmul on the roofline")
def _matmul(rng):
    chip = lm.chip(_pick(rng, CHIPS))
    b = _pick(rng, (8, 16, 32, 64, 128, 256, 512, 1024, 2048))
    k = _pick(rng, (4096, 8192, 12288, 16384))
    s = _Sheet("p1-matmul")
    spec = s.chip(chip, "C", "W")
    s.g("B", b, _n, None), s.g("K", k, _n, None)
    i = lm.roofline.arithmetic_intensity(b, k, k)

    def hand_i(v):
        B, K = v["B"], v["K"]
        return 2 * B * K * K / (2 * (B * K + K * K + B * K))

    ia = s.answer("(a) arithmetic intensity (FLOP/byte)", i, hand_i, _plain)
    s.answer("(b) attainable FLOP/s", lm.roofline.attainable_flops(chip, i),
             lambda v: min(v["C"], hand_i(v) * v["W"]), fmt_flops_rate)
    s.answer("(c) which resource binds", "compute" if i >= chip.ops_per_byte("bf16") else "memory",
             lambda v: "compute" if hand_i(v) >= v["C"] / v["W"] else "memory")
    return s.done(
        f"On {_a(chip.name)} {chip.name} ({spec}) a bf16 matmul multiplies a batch of {_n(b)} "
        "activations of "
        f"width {_n(k)} by a {_n(k)} x {_n(k)} weight matrix, writing a {_n(b)} x {_n(k)} "
        "output. (a) What is its arithmetic intensity? (b) What FLOP/s can it reach? "
        "(c) Which resource binds?",
        [f"FLOPs $2BK^2$; bytes $2(BK + K^2 + BK)$ (input, weights, output at 2 bytes): "
         f"$I$ = {ia.shown(ia.hand)} FLOP/byte, just under $B$ while $B \\ll K$ "
         f"(library: {ia.shown()}).",
         f"Roofline: $\\min(C, I W)$ = {s.answers[1].shown(s.answers[1].hand)} "
         f"(library: {s.answers[1].shown()}); {s.answers[2].key}-bound."],
        "Deduct for counting the weight bytes only when B is comparable to K.")


@question("p1-elementwise", 1, "hardware", "one-step", 1, 5, "An elementwise kernel")
def _elementwise(rng):
    chip = lm.chip(_pick(rng, CHIPS))
    name, flops, inputs = _pick(rng, (("adds two vectors", 1, 2), ("scales a vector", 1, 1),
                                      ("computes a*x + y", 2, 2)))
    width = _pick(rng, (("bf16", 2), ("fp32", 4)))
    s = _Sheet("p1-elementwise")
    spec = s.chip(chip, "C", "W")
    s.g("f", flops, _n, None), s.g("r", inputs, _n, None), s.g("b", width[1], _n, None)
    i = lm.roofline.elementwise_intensity(flops, inputs, 1, width[1])
    ia = s.answer("(a) intensity (FLOP/byte)", i,
                  lambda v: v["f"] / ((v["r"] + 1) * v["b"]), lambda x: f"{x:.3g}")
    att = lm.roofline.attainable_flops(chip, i)
    s.answer("(b) attainable FLOP/s", att,
             lambda v: min(v["C"], v["f"] / ((v["r"] + 1) * v["b"]) * v["W"]), fmt_flops_rate)
    s.answer("(c) share of peak", att / chip.peak("bf16"),
             lambda v: min(1.0, v["f"] / ((v["r"] + 1) * v["b"]) * v["W"] / v["C"]),
             fmt_percent)
    return s.done(
        f"A kernel {name} of {width[0]} values ({flops} FLOP per element, {inputs} input "
        f"vector{'s' if inputs > 1 else ''} read and one written, {width[1]} bytes per value) "
        f"runs on {_a(chip.name)} {chip.name} ({spec}). (a) What is its arithmetic intensity? "
        "(b) What FLOP/s "
        "can it reach? (c) What share of the peak is that?",
        [f"$I = f / ((r + 1) b)$ = {ia.shown(ia.hand)} FLOP/byte (library: {ia.shown()}).",
         f"$I W$ = {s.answers[1].shown(s.answers[1].hand)}, "
         f"{s.answers[2].shown(s.answers[2].hand)} of $C$: elementwise work is always "
         "memory-bound; fuse it into the matmul that precedes it."])


@question("p1-ridge-batch", 1, "hardware", "derivation", 2, 15, "The batch that reaches the ridge")
def _ridge_batch(rng):
    chip = lm.chip(_pick(rng, CHIPS))
    m = lm.model(_pick(rng, DENSE))
    k, n = m.d_model, m.d_ff
    s = _Sheet("p1-ridge-batch")
    spec = s.chip(chip, "C", "W")
    s.g("k", k, _n, None), s.g("n", n, _n, None)

    def hand(v):
        r = v["C"] / v["W"]
        return r * v["k"] * v["n"] / (v["k"] * v["n"] - r * (v["k"] + v["n"]))

    a = s.answer("(b) rows $m$ at the ridge", lm.roofline.matmul_ridge_batch(chip, k, n),
                 hand, lambda x: f"{x:,.0f}")
    return s.done(
        f"(a) Derive the number of rows $m$ (tokens) at which an $(m \\times k)$ by "
        "$(k \\times n)$ bf16 matmul, reading its input and weights and writing its output at 2 "
        "bytes per value, reaches a chip's ridge point $I^* = C/W$; show that it tends to $I^*$ "
        f"when $k, n \\gg I^*$. (b) Evaluate it for {m.name}'s up-projection ($k$ = {_n(k)}, "
        f"$n$ = {_n(n)}) on {_a(chip.name)} {chip.name} ({spec}).",
        ["FLOPs $2mkn$; bytes $2(mk + kn + mn)$; so $I = mkn/(mk + kn + mn)$.",
         "Set $I = I^*$: $mkn = I^*(mk + kn + mn)$, so $m = I^* kn / (kn - I^*(k + n))$.",
         "When $k, n \\gg I^*$ the denominator is about $kn$ and $m \\to I^*$: each weight byte "
         "must be used by $I^*$ rows (at 2 bytes per weight and 2 FLOP per multiply-add).",
         f"Here $I^*$ = {_plain(s.v['C'] / s.v['W'])} FLOP/byte, so $m$ = {a.shown(a.hand)} "
         f"(library: {a.shown()})."],
        "Half credit for the derivation, half for the number; the approximation $m \\approx "
        "I^*$ alone earns the number's half only when within 10%.")


@question("p1-params", 1, "counting", "multi-step", 2, 15, "Counting a dense model")
def _params(rng):
    m = lm.model(_pick(rng, DENSE))
    chip = lm.chip(_pick(rng, GPUS))
    s = _Sheet("p1-params")
    for sym, x in (("L", m.n_layers), ("D", m.d_model), ("F", m.d_ff), ("n_q", m.n_heads),
                   ("n_kv", m.n_kv_heads), ("d_h", m.head_dim), ("V", m.vocab_size)):
        s.g(sym, x, _n, None)
    mem = s.capacity(chip)

    def hand(v):
        layer = 2 * v["D"] * v["n_q"] * v["d_h"] + 2 * v["D"] * v["n_kv"] * v["d_h"] \
            + 3 * v["D"] * v["F"]
        return v["L"] * layer + 2 * v["V"] * v["D"]

    n = s.answer("(a) parameters $N_\\text{tot}$", m.total_params, hand, fmt_count)
    s.answer(f"(b) {chip.name}s to hold the bf16 weights", roofline.min_chips(m, chip),
             lambda v: math.ceil(2 * hand(v) / v["M"]), _n)
    return s.done(
        f"{m.name} has {m.n_layers} layers of width $D$ = {_n(m.d_model)}, a gated MLP of width "
        f"$F$ = {_n(m.d_ff)}, {m.n_heads} query heads and {m.n_kv_heads} KV heads of "
        f"{m.head_dim} dimensions, no biases, and an untied vocabulary of {_n(m.vocab_size)} "
        f"tokens. (a) Count its parameters (norms may be neglected). (b) How many {chip.name}s "
        f"($M$ = {mem}) does it take, at the least, to hold its weights in bf16?",
        ["Per layer: attention $2 D n_q d_h + 2 D n_{kv} d_h$, gated MLP $3DF$; plus the input "
         "embedding and the LM head, $2VD$.",
         f"$N_\\text{{tot}}$ = {n.shown(n.hand)} (library, norms included: {n.shown()}).",
         f"$\\lceil 2 N_\\text{{tot}} / M \\rceil$ = {s.answers[1].shown(s.answers[1].hand)} "
         f"(library: {s.answers[1].shown()}); the cache needs room on top."],
        "Deduct for a missing factor 3 (gated MLP) or a single embedding matrix.")


@question("p1-kv", 1, "counting", "one-step", 1, 5, "KV bytes per token")
def _kv(rng):
    m = lm.model(_pick(rng, PLAIN))
    b = _pick(rng, (1, 2))
    ctx = _pick(rng, (4096, 8192, 32768))
    ctx = min(ctx, m.max_context)
    s = _Sheet("p1-kv")
    for sym, x in (("L", m.n_layers), ("n_kv", m.n_kv_heads), ("d_h", m.head_dim), ("b", b),
                   ("S", ctx)):
        s.g(sym, x, _n, None)
    per = s.answer("(a) $b_\\text{kv}$ per token", m.kv_bytes_per_token(b),
                   lambda v: 2 * v["L"] * v["n_kv"] * v["d_h"] * v["b"], fmt_bytes)
    s.answer("(b) cache of one sequence", m.kv_cache_bytes(ctx, b),
             lambda v: v["S"] * 2 * v["L"] * v["n_kv"] * v["d_h"] * v["b"], fmt_bytes)
    fmt_name = "fp8" if b == 1 else "bf16"
    return s.done(
        f"{m.name} has {m.n_layers} layers, each with {m.n_kv_heads} KV heads of {m.head_dim} "
        f"dimensions. Its cache is stored in {fmt_name} ({b} byte{'s' if b > 1 else ''} per "
        f"value). (a) How many bytes does one token's cache take, all layers together? (b) How "
        f"much for one sequence of {_n(ctx)} tokens?",
        [f"$b_\\text{{kv}} = 2 L n_{{kv}} d_h b$ (K and V) = {per.shown(per.hand)}.",
         f"$S b_\\text{{kv}}$ = {s.answers[1].shown(s.answers[1].hand)}."],
        "Deduct for a factor of 2 off (K and V).")


@question("p1-crossover", 1, "counting", "derivation", 3, 15, "When attention outgrows the matmuls")
def _crossover(rng):
    m = lm.model(_pick(rng, PLAIN))
    s = _Sheet("p1-crossover")
    s.g("N_mm", m.matmul_params_active, fmt_count)
    for sym, x in (("L", m.n_layers), ("n_q", m.n_heads), ("d_h", m.head_dim), ("D", m.d_model)):
        s.g(sym, x, _n, None)
    sx = lm.models.attention_crossover_context(m)
    a = s.answer("(b) context $S_\\times$ (tokens)", sx,
                 lambda v: v["N_mm"] / (2 * v["n_q"] * v["d_h"] * v["L"]), lambda x: f"{x:,.0f}")
    s.answer("(b) as a multiple of $D$", sx / m.d_model,
             lambda v: v["N_mm"] / (2 * v["n_q"] * v["d_h"] * v["L"]) / v["D"], _plain)
    return s.done(
        "(a) Derive the FLOPs one decoded token spends in attention (scores $QK^T$ and the "
        "weighted sum of $V$) over a context of $S$ tokens, and the context $S_\\times$ at which "
        f"they equal the matmul FLOPs $2 N_\\text{{mm}}$. (b) Evaluate it for {m.name}: "
        f"$N_\\text{{mm}}$ = {fmt_count(s.v['N_mm'])} parameters multiplied per token, "
        f"{m.n_layers} layers, {m.n_heads} query heads of {m.head_dim} dimensions, width "
        f"$D$ = {_n(m.d_model)}; give it also as a multiple of $D$.",
        ["Per layer and head, $q \\cdot k$ over $S$ keys is $2 d_h S$ FLOP and the weighted sum "
         "of values another $2 d_h S$: $4 n_q d_h L S$ per token.",
         "Equal to $2 N_\\text{mm}$ at $S_\\times = N_\\text{mm} / (2 n_q d_h L)$.",
         f"$S_\\times$ = {a.shown(a.hand)} tokens (library: {a.shown()}), "
         f"{s.answers[1].shown(s.answers[1].hand)} $D$: below it '2 FLOP per parameter' "
         "holds within a factor of 2."],
        "The derivation carries half the marks; a factor 2 slip (multiply-adds) loses a quarter.")


# ----- Part II: Serving ---------------------------------------------------------------------------

def _decode_givens(s, m, chip, batch, context, n):
    """State what a decode step needs: C, W, n, B, S, N_mm, N_read(B), a, b_kv (bf16)."""
    spec = s.chip(chip, "C", "W")
    s.g("n", n, _n, None), s.g("B", batch, _n, None), s.g("S", context, _n, None)
    s.g("N_mm", m.matmul_params_active, fmt_count)
    s.g("N_read", m.weight_params_read(batch), fmt_count)
    s.g("a", m.attention_flops_per_token(1), _n, None)
    s.g("b_kv", m.kv_bytes_per_token(2), fmt_bytes)
    return spec


def _decode_hand(v):
    compute = v["B"] * (2 * v["N_mm"] + v["a"] * v["S"]) / (v["n"] * v["C"])
    memory = (2 * v["N_read"] + v["B"] * v["S"] * v["b_kv"]) / (v["n"] * v["W"])
    return compute, memory


def _decode_text(m, chip, spec, batch, context, n, s):
    return (f"{m.name} is served on {_chips(n, chip.name)} ({spec}{' each' if n > 1 else ''}) in "
            f"bf16 (weights and cache), batch {_n(batch)}, each sequence holding {_n(context)} "
            f"tokens. Per token it multiplies $N_\\text{{mm}}$ = {fmt_count(s.v['N_mm'])} "
            f"parameters and spends $a$ = {_n(s.v['a'])} FLOP of attention per cached token; a "
            f"step reads $N_\\text{{read}}$ = {fmt_count(s.v['N_read'])} parameters (the input "
            "embedding is a lookup) and $b_\\text{kv}$ = "
            f"{fmt_bytes(s.v['b_kv'])} of cache per cached token.")


def _serving(rng, models=DENSE, chips=GPUS, share=0.7):
    """A (model, chip, n) whose bf16 weights take at most ``share`` of ``n`` chips' memory,
    with ``n`` the fewest of 1, 2, 4, 8, 16 that do (drawn again until one does)."""
    while True:
        m, chip = lm.model(_pick(rng, models)), lm.chip(_pick(rng, chips))
        for n in (1, 2, 4, 8, 16):
            if 2 * m.total_params <= share * n * chip.hbm_capacity:
                return m, chip, n


@question("p2-step", 2, "decode_roofline", "multi-step", 2, 15, "One decode step")
def _step(rng):
    m, chip, n = _serving(rng)
    batch, ctx = _pick(rng, (8, 16, 32, 64, 128)), min(_pick(rng, (2048, 4096, 8192)),
                                                       m.max_context)
    s = _Sheet("p2-step")
    spec = _decode_givens(s, m, chip, batch, ctx, n)
    st = lm.decode_step(m, chip, batch, ctx, n_chips=n)
    c = s.answer("(a) compute time", st.compute_time, lambda v: _decode_hand(v)[0], fmt_time)
    mm = s.answer("(a) memory time (weights and cache)", st.memory_time,
                  lambda v: _decode_hand(v)[1], fmt_time)
    t = s.answer("(b) the step's lower bound", st.time, lambda v: max(_decode_hand(v)), fmt_time)
    s.answer("(b) which resource binds", st.bound, lambda v: _bound(*_decode_hand(v)))
    return s.done(
        _decode_text(m, chip, spec, batch, ctx, n, s) + " (a) Give the compute time and the "
        "memory time of one decode step (every byte may overlap every FLOP). (b) Give the "
        "step's lower bound and the resource that binds.",
        [f"Compute: $B(2N_\\text{{mm}} + aS)/(nC)$ = {c.shown(c.hand)} (library: {c.shown()}).",
         f"Memory: $(N_\\text{{read}} b_w + B S b_\\text{{kv}})/(nW)$ = {mm.shown(mm.hand)} "
         f"(library: {mm.shown()}).",
         f"Bound: the larger, {t.shown(t.hand)}: {st.bound}-bound."],
        "Leaving out the cache read or attention's FLOPs loses a third.")


@question("p2-floor", 2, "decode_roofline", "one-step", 1, 5, "The latency floor")
def _floor(rng):
    m, chip, n = _serving(rng)
    s = _Sheet("p2-floor")
    spec = s.chip(chip, "W")
    s.g("n", n, _n, None)
    s.g("N_read", m.weight_params_read(1), fmt_count)
    t = lm.roofline.min_latency(m, chip, n_chips=n)
    a = s.answer("(a) latency floor per token", t, lambda v: 2 * v["N_read"] / (v["n"] * v["W"]),
                 fmt_time)
    s.answer("(b) tokens per second for one user, at best", 1 / t,
             lambda v: v["n"] * v["W"] / (2 * v["N_read"]), lambda x: f"{x:,.0f}")
    return s.done(
        f"{m.name} runs at batch 1 on {_chips(n, chip.name)} "
        f"({spec}{' each' if n > 1 else ''}) with "
        f"bf16 weights; one decode step reads $N_\\text{{read}}$ = {fmt_count(s.v['N_read'])} "
        "parameters. (a) What is the lowest possible time per token (ignore the cache and any "
        "communication)? (b) How many tokens per second can one user see at most?",
        [f"$t_\\text{{min}} = N_\\text{{read}} b_w/(nW)$ = {a.shown(a.hand)} "
         f"(library: {a.shown()}).",
         f"$1/t_\\text{{min}}$ = {s.answers[1].shown(s.answers[1].hand)} tokens/s."])


@question("p2-bstar", 2, "batching_cost", "multi-step", 2, 10,
          "The batch that pays for the weights")
def _bstar(rng):
    m = lm.model(_pick(rng, MOE))
    chip = lm.chip(_pick(rng, GPUS))
    s = _Sheet("p2-bstar")
    spec = s.chip(chip, "C", "W")
    s.g("N_tot", m.total_params, fmt_count), s.g("N_act", m.active_params, fmt_count)
    s.g("N_mm", m.matmul_params_active, fmt_count)
    b = s.answer("(a) critical batch $B^*$", lm.critical_batch(m, chip),
                 lambda v: v["C"] / v["W"] * v["N_tot"] / v["N_mm"], lambda x: f"{x:,.0f}")
    s.answer("(b) how many times a dense model's $B^*$", m.sparsity,
             lambda v: v["N_tot"] / v["N_act"], _plain)
    return s.done(
        f"{m.name} ($N_\\text{{tot}}$ = {fmt_count(s.v['N_tot'])}, $N_\\text{{act}}$ = "
        f"{fmt_count(s.v['N_act'])}, of which $N_\\text{{mm}}$ = {fmt_count(s.v['N_mm'])} are "
        f"multiplied per token: the input embedding is a lookup) decodes on {_a(chip.name)} "
        f"{chip.name} "
        f"({spec}) with bf16 weights. (a) Ignoring the KV cache and assuming a large batch "
        "touches every expert, at what batch does the step turn compute-bound? (b) How many "
        "times the batch of a dense model of the same total size is that, and why? Name one "
        "thing the estimate leaves out.",
        ["Weights: $N_\\text{tot} b_w / W$; compute $2 B N_\\text{mm}/C$. Equal at "
         "$B^* = (C/W)(b_w/2)(N_\\text{tot}/N_\\text{mm})$.",
         f"$B^*$ = {b.shown(b.hand)} (library, which solves with the weights a batch of $B^*$ "
         f"actually reads: {b.shown()}); with $N_\\text{{act}}$ for $N_\\text{{mm}}$ a few per "
         "cent lower, also full credit.",
         f"Sparsity {s.answers[1].shown(s.answers[1].hand)}: each token pays for its active "
         "parameters while the batch shares the read of all of them. Left out: the cache read, "
         "attention FLOPs, and that a small batch touches fewer experts."])


@question("p2-cost", 2, "batching_cost", "multi-step", 2, 15, "Price of a million tokens")
def _cost(rng):
    m, chip, n = _serving(rng)
    batch, ctx = _pick(rng, (16, 32, 64, 128)), min(_pick(rng, (1024, 2048, 4096)),
                                                    m.max_context)
    price = _pick(rng, (1.5, 2.0, 2.5, 3.0, 4.0))
    s = _Sheet("p2-cost")
    spec = _decode_givens(s, m, chip, batch, ctx, n)
    s.g("p", price, _usd, None)
    st = lm.decode_step(m, chip, batch, ctx, n_chips=n)
    tps = s.answer("(a) tokens per second of the replica", lm.tokens_per_second(st),
                   lambda v: v["B"] / max(_decode_hand(v)), lambda x: f"{x:,.0f}")
    usd = s.answer("(b) cost per million output tokens",
                   lm.cost_per_million_tokens(st, price_per_chip_hour=price),
                   lambda v: max(_decode_hand(v)) * v["n"] * v["p"] / 3600 / v["B"] * 1e6,
                   _usd)
    return s.done(
        _decode_text(m, chip, spec, batch, ctx, n, s) + f" A chip-hour costs {_usd(price)}. "
        "(a) At the lower bound of the step, how many tokens per second does the replica "
        "produce? (b) What does a million output tokens cost? (c) Would doubling the batch "
        "halve the cost? Say why or why not.",
        ["Step: $\\max(B(2N_\\text{mm} + aS)/(nC),\\ (N_\\text{read} b_w + B S "
         "b_\\text{kv})/(nW))$.",
         f"Tokens per second $B/t_\\text{{step}}$ = {tps.shown(tps.hand)} "
         f"(library: {tps.shown()}).",
         f"Cost $t_\\text{{step}}\\, n\\, p / B$ per token: {usd.shown(usd.hand)} per million "
         f"(library: {usd.shown()}).",
         "(c) Only while the weight read dominates: the cache read grows with $B$, so below "
         "$B^*$ cost falls less than 2x, and past the critical context not at all."])


@question("p2-critctx", 2, "kv_cache", "derivation", 3, 15, "The critical context")
def _critctx(rng):
    m = lm.model(_pick(rng, PLAIN))
    chip = lm.chip(_pick(rng, GPUS))
    s = _Sheet("p2-critctx")
    spec = s.chip(chip, "C", "W")
    s.g("N_mm", m.matmul_params_active, fmt_count)
    s.g("a", m.attention_flops_per_token(1), _n, None)
    s.g("b_kv", m.kv_bytes_per_token(2), fmt_bytes)
    full = s.answer("(b) $S^*$ with attention FLOPs", lm.critical_context(m, chip),
                    lambda v: 2 * v["N_mm"] / (v["C"] / v["W"] * v["b_kv"] - v["a"]),
                    lambda x: f"{x:,.0f}")
    first = s.answer("(b) $S^*$ without them", lm.critical_context(m, chip, attention_flops=False),
                     lambda v: 2 * v["N_mm"] * v["W"] / (v["C"] * v["b_kv"]),
                     lambda x: f"{x:,.0f}")
    return s.done(
        "(a) At a large batch the weights are amortised. Derive the context $S^*$ beyond which "
        "a decode step is memory-bound at any batch, per sequence: its cache read $S b_\\text{kv}"
        "/W$ against its compute $(2N_\\text{mm} + aS)/C$. "
        f"(b) Evaluate it for {m.name} on {_a(chip.name)} {chip.name} ({spec}) with a bf16 cache: "
        f"$N_\\text{{mm}}$ = {fmt_count(s.v['N_mm'])}, $a$ = {_n(s.v['a'])} FLOP per cached "
        f"token, $b_\\text{{kv}}$ = {fmt_bytes(s.v['b_kv'])}; and again with $a = 0$. "
        "(c) Why does the batch not matter past $S^*$?",
        ["Per sequence: $S b_\\text{kv}/W = (2N_\\text{mm} + aS)/C$, so "
         "$S^* = 2N_\\text{mm}/(I^* b_\\text{kv} - a)$ with $I^* = C/W$.",
         f"With attention: {full.shown(full.hand)} tokens (library: {full.shown()}); "
         f"without ($a = 0$): {first.shown(first.hand)} (library: {first.shown()}).",
         "(c) Both sides grow with $B$: every sequence brings its own cache, so batching "
         "amortises the weights only."],
        "Half for the derivation (with the sign of $a$ right), half for the two numbers.")


@question("p2-maxbatch", 2, "kv_cache", "one-step", 2, 10, "How many sequences fit")
def _maxbatch(rng):
    m, chip, n = _serving(rng, share=0.6)
    ctx = min(_pick(rng, (2048, 4096, 8192, 32768)), m.max_context)
    s = _Sheet("p2-maxbatch")
    mem = s.capacity(chip)
    s.g("n", n, _n, None), s.g("S", ctx, _n, None)
    s.g("N_tot", m.total_params, fmt_count), s.g("b_kv", m.kv_bytes_per_token(2), fmt_bytes)
    b = s.answer("(a) largest batch", lm.max_batch(m, chip, ctx, n_chips=n),
                 lambda v: math.floor((v["n"] * v["M"] - 2 * v["N_tot"]) / (v["S"] * v["b_kv"])),
                 _n)
    return s.done(
        f"{m.name} ($N_\\text{{tot}}$ = {fmt_count(s.v['N_tot'])}, $b_\\text{{kv}}$ = "
        f"{fmt_bytes(s.v['b_kv'])} per token in bf16) is served on {_chips(n, chip.name)} "
        f"($M$ = {mem}{' each' if n > 1 else ''}) with bf16 weights and cache, "
        f"every sequence at {_n(ctx)} tokens. (a) How many sequences fit? (b) Name two changes "
        "that would double it and what each costs.",
        [f"$B_\\text{{max}} = \\lfloor (nM - N_\\text{{tot}} b_w)/(S b_\\text{{kv}}) \\rfloor$ = "
         f"{b.shown(b.hand)} (library: {b.shown()}).",
         "(b) An 8-bit cache halves $b_\\text{kv}$ (accuracy to check); more chips per replica "
         "(cost per token rises unless the batch fills them); fp8 weights free room too."])


@question("p2-prefill", 2, "prefill_prices", "multi-step", 2, 15, "Prefilling a prompt")
def _prefill(rng):
    m, chip, n = _serving(rng)
    prompt = min(_pick(rng, (1024, 2048, 4096, 8192)), m.max_context)
    s = _Sheet("p2-prefill")
    spec = s.chip(chip, "C", "W")
    s.g("n", n, _n, None), s.g("P", prompt, _n, None)
    s.g("N_mm", m.matmul_params_active, fmt_count)
    s.g("N_tot", m.total_params, fmt_count)
    s.g("a", m.attention_flops_per_token(1), _n, None)
    st = lm.prefill_step(m, chip, 1, prompt, n_chips=n)

    def compute(v):  # causal: token i attends to i tokens, P(P+1)/2 pairs
        return (2 * v["P"] * v["N_mm"] + v["a"] * v["P"] * (v["P"] + 1) / 2) / (v["n"] * v["C"])

    c = s.answer("(a) compute time", st.compute_time, compute, fmt_time)
    t = s.answer("(b) time to first token, lower bound", st.time,
                 lambda v: max(compute(v), 2 * v["N_tot"] / (v["n"] * v["W"])), fmt_time)
    s.answer("(b) which resource binds", st.bound,
             lambda v: _bound(compute(v), 2 * v["N_tot"] / (v["n"] * v["W"])))
    return s.done(
        f"{m.name} prefills one prompt of {_n(prompt)} tokens on {_chips(n, chip.name)} "
        f"({spec}{' each' if n > 1 else ''}), bf16 throughout. Per token it "
        f"multiplies $N_\\text{{mm}}$ = {fmt_count(s.v['N_mm'])} parameters, and attention "
        f"costs $a$ = {_n(s.v['a'])} FLOP per (query, key) pair (causal: token $i$ attends to "
        f"$i$ tokens); the weights are $N_\\text{{tot}}$ = {fmt_count(s.v['N_tot'])} "
        "parameters. (a) What is the compute time? (b) What bounds the time to first token, "
        "and why is prefill so unlike decode?",
        ["Pairs: $P(P+1)/2$. Compute: $(2 P N_\\text{mm} + a P(P+1)/2)/(nC)$ = "
         f"{c.shown(c.hand)} (library: {c.shown()}).",
         f"Weights read once: $N_\\text{{tot}} b_w/(nW)$, far smaller; the bound is "
         f"{t.shown(t.hand)} (library: {t.shown()}), {st.bound}-bound: {_n(prompt)} tokens "
         "share each weight read, like a decode batch of that size."])


@question("p2-pricestep", 2, "prefill_prices", "derivation", 2, 10,
          "KV bytes from a price step")
def _pricestep(rng):
    chip = lm.chip(_pick(rng, GPUS))
    n_act = _pick(rng, (12e9, 17e9, 22e9, 37e9, 70e9, 100e9))
    ctx = _pick(rng, (32768, 128000, 200000, 272000))
    s = _Sheet("p2-pricestep")
    spec = s.chip(chip, "C", "W")
    s.g("N_act", n_act, fmt_count), s.g("S", ctx, _n, None)
    b = s.answer("(b) implied $b_\\text{kv}$", prices.kv_bytes_from_price_step(
        n_act, ctx, chip.ops_per_byte("bf16")),
        lambda v: 2 * v["N_act"] / (v["C"] / v["W"] * v["S"]), fmt_bytes)
    return s.done(
        "(a) A provider raises its output price for contexts beyond $S$. Assume the step is "
        "where one sequence's cache read starts to outlast its compute at a large batch. "
        "Derive the KV bytes per token $b_\\text{kv}$ this implies, from $N_\\text{act}$, "
        f"$S$ and the chip's $C/W$. (b) Evaluate it for $N_\\text{{act}}$ = "
        f"{fmt_count(n_act)}, $S$ = {_n(ctx)} on {_a(chip.name)} {chip.name} ({spec}). (c) "
        "Name two reasons "
        "the real figure may differ.",
        ["Per sequence: $S b_\\text{kv}/W = 2 N_\\text{act}/C$, so "
         "$b_\\text{kv} = 2 N_\\text{act} / (I^* S)$.",
         f"$b_\\text{{kv}}$ = {b.shown(b.hand)} (library: {b.shown()}).",
         "(c) Prices carry margins and a round step; attention FLOPs, fp8 arithmetic or a "
         "different chip move $I^*$; a cache in fp8 halves the bytes."])


# ----- Part III: Scaling out ----------------------------------------------------------------------

@question("p3-rack", 3, "moe_rack", "one-step", 1, 5, "What a scale-up domain holds")
def _rack(rng):
    chip = lm.chip(_pick(rng, ("H100-SXM", "H200", "GB200", "MI355X")))
    wb = _pick(rng, ((2, "bf16"), (1, "fp8")))
    kv = _pick(rng, (0.0, 0.2, 0.25, 0.5))
    s = _Sheet("p3-rack")
    mem = s.capacity(chip)
    s.g("n", chip.scale_up_domain, _n, None), s.g("b_w", wb[0], _n, None)
    s.g("f", kv, lambda x: fmt_percent(x) if x else "none", None)
    a = s.answer("largest total parameter count", moe.max_total_params(
        chip, chip.scale_up_domain, wb[0], kv_fraction=kv),
        lambda v: v["n"] * v["M"] * (1 - v["f"]) / v["b_w"], fmt_count)
    return s.done(
        f"A scale-up domain holds {chip.scale_up_domain} {chip.name}s of $M$ = {mem} each. "
        f"Keeping {fmt_percent(kv) if kv else 'none'} of the memory for the KV cache, what is "
        "the largest model "
        f"(total parameters) whose {wb[1]} weights ({wb[0]} byte{'s' if wb[0] > 1 else ''} "
        "each) fit in one domain? Why does this bound a mixture of experts' total size but not "
        "its active size?",
        [f"$N_\\text{{tot,max}} = n M (1 - f)/b_w$ = {a.shown(a.hand)} (library: {a.shown()}).",
         "Every expert must be stored, used or not; the active size is set by compute and price."])


@question("p3-touched", 3, "moe_rack", "multi-step", 2, 10, "Experts a batch touches")
def _touched(rng):
    m = lm.model(_pick(rng, MOE + ("DeepSeek-V3", "gpt-oss-120b")))
    b = _pick(rng, (1, 4, 8, 16, 32, 64, 128, 256))
    s = _Sheet("p3-touched")
    s.g("E", m.n_experts, _n, None), s.g("k", m.experts_per_token, _n, None)
    s.g("B", b, _n, None)
    t = s.answer("(a) experts touched per layer", m.experts_touched(b),
                 lambda v: v["E"] * (1 - (1 - v["k"] / v["E"]) ** v["B"]), _plain)
    s.answer("(b) share of the routed experts read", m.experts_touched(b) / m.n_experts,
             lambda v: 1 - (1 - v["k"] / v["E"]) ** v["B"], fmt_percent)
    return s.done(
        f"Each MoE layer of {m.name} routes every token to $k$ = {m.experts_per_token} of its "
        f"$E$ = {m.n_experts} experts. A decode step carries {_n(b)} tokens, routed "
        "independently and uniformly. (a) How many distinct experts does one layer touch, on "
        "average? (b) What share of the routed expert weights does the step read? (c) What does "
        "skewed routing do to (b)?",
        ["An expert is missed by one token with probability $1 - k/E$, by all $B$ with "
         "$(1 - k/E)^B$; touched: $E(1 - (1 - k/E)^B)$.",
         f"{t.shown(t.hand)} experts (library: {t.shown()}), "
         f"{s.answers[1].shown(s.answers[1].hand)} of them.",
         "(c) Skew touches fewer distinct experts (less read) but loads the busiest chip more."])


@question("p3-sparsity", 3, "moe_rack", "derivation", 2, 10, "Sparsity and the critical batch")
def _sparsity(rng):
    chip = lm.chip(_pick(rng, CHIPS))
    sp = _pick(rng, (4, 8, 16, 32))
    wb = _pick(rng, ((2, "bf16"), (1, "fp8")))
    s = _Sheet("p3-sparsity")
    spec = s.chip(chip, "C", "W")
    s.g("s", sp, _n, None), s.g("b_w", wb[0], _n, None)
    b = s.answer("(b) $B^*$", moe.critical_batch_for_sparsity(chip, sp, wb[0]),
                 lambda v: v["C"] / v["W"] * v["b_w"] / 2 * v["s"], lambda x: f"{x:,.0f}")
    return s.done(
        "(a) A mixture of experts has sparsity $s = N_\\text{tot}/N_\\text{act}$. Assuming a "
        "batch touches every expert and ignoring the cache, derive the batch $B^*$ at which a "
        "decode step's compute equals its weight read. (b) Evaluate it for $s$ = "
        f"{sp} with {wb[1]} weights ($b_w$ = {wb[0]}) and bf16 arithmetic on {_a(chip.name)} "
        f"{chip.name} "
        f"({spec}). (c) Why is serving a sparse model cheaply a matter of large batches?",
        ["Compute $2 B N_\\text{act}/C$; weights $N_\\text{tot} b_w / W$; equal at "
         "$B^* = (C/W)(b_w/2)\\, s$.",
         f"$B^*$ = {b.shown(b.hand)} (library: {b.shown()}).",
         "(c) Below $B^*$ the step costs the weight read whatever the batch: each user is "
         "nearly free until the batch reaches $B^*$, which sparsity multiplies."])


@question("p3-bubble", 3, "pipelining", "multi-step", 2, 10, "A pipeline's bubble")
def _bubble(rng):
    p = _pick(rng, (4, 6, 8, 12, 16))
    mb = _pick(rng, (8, 16, 24, 32, 48))
    v_ = _pick(rng, (2, 4))
    target = _pick(rng, (0.05, 0.1))
    s = _Sheet("p3-bubble")
    s.g("p", p, _n, None), s.g("m", mb, _n, None), s.g("v", v_, _n, None)
    s.g("f", target, fmt_percent, None)
    a = s.answer("(a) bubble, 1F1B", pipeline.bubble_fraction(p, mb),
                 lambda v: (v["p"] - 1) / (v["m"] + v["p"] - 1), fmt_percent)
    b = s.answer("(b) bubble, interleaved", pipeline.bubble_fraction(p, mb, "interleaved", v_),
                 lambda v: (v["p"] - 1) / (v["v"] * v["m"] + v["p"] - 1), fmt_percent)
    c = s.answer("(c) micro-batches for the target (1F1B)",
                 pipeline.micro_batches_for_bubble(p, target),
                 lambda v: math.ceil((v["p"] - 1) * (1 - v["f"]) / v["f"] - 1e-9), _n)
    return s.done(
        f"A training pipeline has {p} stages and runs {mb} micro-batches per step. (a) What "
        "fraction of the step is bubble under the one-forward-one-backward (1F1B) schedule? "
        f"(b) Under the interleaved schedule with {v_} model chunks per chip? (c) How many "
        f"micro-batches bring the 1F1B bubble to {fmt_percent(target)} or less, and what does "
        "raising the count cost?",
        [f"$f = (p - 1)/(m + p - 1)$ = {a.shown(a.hand)}.",
         f"Interleaved: $(p - 1)/(v m + p - 1)$ = {b.shown(b.hand)}, paid for with $v$ times "
         "the pipeline sends.",
         f"$m \\ge (p - 1)(1 - f)/f$: {c.shown(c.hand)}. More micro-batches at a fixed global "
         "batch are smaller (slower matmuls), or the global batch grows (an optimisation "
         "question)."])


@question("p3-hop", 3, "pipelining", "one-step", 1, 5, "One pipeline hop")
def _hop(rng):
    m = lm.model(_pick(rng, DENSE))
    tokens = _pick(rng, (1, 8, 64, 4096, 8192))
    bw = _pick(rng, (25e9, 50e9, 100e9))
    lat = _pick(rng, (5e-6, 10e-6, 20e-6))
    s = _Sheet("p3-hop")
    s.g("T", tokens, _n, None), s.g("D", m.d_model, _n, None)
    s.g("W_out", bw, fmt_bandwidth), s.g("t_lat", lat, fmt_time)
    h = s.answer("(a) one hop", pipeline.hop_time(tokens, m.d_model, bw, lat),
                 lambda v: v["t_lat"] + v["T"] * v["D"] * 2 / v["W_out"], fmt_time)
    return s.done(
        f"A pipeline boundary of {m.name} (width $D$ = {_n(m.d_model)}) crosses the scale-out "
        f"network at {fmt_bandwidth(bw)} per chip with {fmt_time(lat)} of latency per message. "
        f"(a) How long does one hop of {_n(tokens)} tokens' bf16 activations take? (b) Which "
        "term dominates, and what does that say about pipelining decode (one token per "
        "sequence) against training micro-batches?",
        [f"$t_\\text{{lat}} + T D b_a / W_\\text{{out}}$ = {h.shown(h.hand)} "
         f"(library: {h.shown()}).",
         "(b) Small messages (decode) pay latency; large ones (training micro-batches) pay "
         "bandwidth, which overlaps with compute."])


@question("p3-allreduce", 3, "partitioning", "multi-step", 2, 10, "One all-reduce")
def _allreduce(rng):
    chip = lm.chip(_pick(rng, ("A100-SXM-80GB", "H100-SXM", "H200", "GB200", "MI355X")))
    n = _pick(rng, (4, 8) + ((16, 32, 72) if chip.scale_up_domain >= 72 else ()))
    q = _pick(rng, (1e6, 16e6, 64e6, 256e6))
    lat = _pick(rng, (1e-6, 2e-6, 3e-6, 5e-6))
    bw = chip.scale_up_bandwidth
    s = _Sheet("p3-allreduce")
    s.g("n", n, _n, None), s.g("Q", q, fmt_bytes), s.g("W_up", bw, fmt_bandwidth)
    s.g("t_lat", lat, fmt_time)
    t = s.answer("(a) ring all-reduce time",
                 collectives.collective_time("all-reduce", q, n, bw, lat, algorithm="ring"),
                 lambda v: 2 * (v["n"] - 1) * v["t_lat"]
                 + 2 * (v["n"] - 1) / v["n"] * v["Q"] / v["W_up"], fmt_time)
    x = s.answer("(b) buffer at which latency equals bandwidth",
                 collectives.latency_bandwidth_crossover("all-reduce", n, bw, lat,
                                                         algorithm="ring"),
                 lambda v: v["n"] * v["t_lat"] * v["W_up"], fmt_bytes)
    return s.done(
        f"{n} {chip.name}s, each with {fmt_bandwidth(bw)} of scale-up bandwidth each way, "
        f"all-reduce a {fmt_bytes(q)} buffer with the ring algorithm; every step costs "
        f"{fmt_time(lat)} of latency. (a) Estimate the time. (b) At what buffer size are the "
        "latency and bandwidth terms equal? Which regime is a decode step's all-reduce in?",
        ["Ring: a reduce-scatter then an all-gather, $2(n-1)$ steps, each chip moving "
         "$2(n-1)/n$ of the buffer.",
         f"$t = 2(n-1) t_\\text{{lat}} + 2(n-1)/n \\cdot Q/W_\\text{{up}}$ = {t.shown(t.hand)} "
         f"(library: {t.shown()}).",
         f"Equal at $Q^* = n\\, t_\\text{{lat}} W_\\text{{up}}$ = {x.shown(x.hand)}; a decode "
         "step's activations (kilobytes to a few megabytes) are latency-bound."])


@question("p3-tp", 3, "partitioning", "derivation", 3, 15, "Tensor parallelism's traffic")
def _tp(rng):
    m = lm.model(_pick(rng, DENSE))
    chip = lm.chip(_pick(rng, ("A100-SXM-80GB", "H100-SXM", "H200", "GB200")))
    n = _pick(rng, (2, 4, 8))
    batch = _pick(rng, (1, 16, 64, 256))
    lat = _pick(rng, (2e-6, 3e-6))
    bw = chip.scale_up_bandwidth
    s = _Sheet("p3-tp")
    for sym, x in (("L", m.n_layers), ("D", m.d_model), ("n", n), ("B", batch)):
        s.g(sym, x, _n, None)
    s.g("W_up", bw, fmt_bandwidth), s.g("t_lat", lat, fmt_time)
    t = s.answer("(b) communication per decode step",
                 parallel.tensor_parallel_comm_time(m, batch, n, bw, hop_latency=lat),
                 lambda v: v["L"] * 2 * (2 * v["t_lat"] + 2 * (v["n"] - 1) / v["n"]
                                         * v["B"] * v["D"] * 2 / v["W_up"]), fmt_time)
    bw_only = s.answer("(b) of which bandwidth",
                       parallel.tensor_parallel_comm_time(m, batch, n, bw),
                       lambda v: v["L"] * 2 * 2 * (v["n"] - 1) / v["n"] * v["B"] * v["D"] * 2
                       / v["W_up"], fmt_time)
    return s.done(
        "(a) Under Megatron-style tensor parallelism over $n$ chips, derive the communication "
        "of one decode step of a transformer with $L$ layers of width $D$ at batch $B$ "
        "(bf16 activations), with all-reduces through a switch that take two steps of "
        f"$t_\\text{{lat}}$ each. (b) Evaluate it for {m.name} ($L$ = {m.n_layers}, $D$ = "
        f"{_n(m.d_model)}) on $n$ = {n} {chip.name}s ($W_\\text{{up}}$ = {fmt_bandwidth(bw)} "
        f"each way, $t_\\text{{lat}}$ = {fmt_time(lat)}) at $B$ = {batch}; how much of it is "
        "bandwidth? (c) Why does latency, not bandwidth, bound tensor parallelism in decode?",
        ["Each layer all-reduces its $B \\times D$ activations twice (after attention, after "
         "the MLP): $2L$ sequential all-reduces per step.",
         "One all-reduce of $Q = 2BD$ bytes: $2 t_\\text{lat} + 2(n-1)/n \\cdot Q/W_\\text{up}$.",
         f"Total {t.shown(t.hand)} (library: {t.shown()}); bandwidth alone "
         f"{bw_only.shown(bw_only.hand)}.",
         "(c) $4 L t_\\text{lat}$ is paid whatever the batch, and the messages are small."],
        "Derivation half, numbers half; one all-reduce per layer loses a quarter.")


@question("p3-padding", 3, "bound_to_estimate", "one-step", 1, 5, "Tile padding")
def _padding(rng):
    tokens = _pick(rng, (1, 3, 8, 20, 33, 65, 100, 130, 200))
    tile = _pick(rng, (64, 128))
    s = _Sheet("p3-padding")
    s.g("T", tokens, _n, None), s.g("m", tile, _n, None)
    r = s.answer("(a) rows computed", estimate.padded_rows(tokens, tile),
                 lambda v: math.ceil(v["T"] / v["m"]) * v["m"], _n)
    s.answer("(b) share of the arithmetic that is useful", tokens / estimate.padded_rows(
        tokens, tile), lambda v: v["T"] / (math.ceil(v["T"] / v["m"]) * v["m"]), fmt_percent)
    return s.done(
        f"A matmul kernel computes rows in tiles of {tile}. A decode step sends {_n(tokens)} "
        "tokens through it. (a) How many rows does it compute? (b) What share of its arithmetic "
        "is useful? (c) Why does this not change a memory-bound step's time?",
        [f"$\\lceil T/m \\rceil m$ = {r.shown(r.hand)} rows; useful "
         f"{s.answers[1].shown(s.answers[1].hand)}.",
         "(c) Padding adds FLOPs, not bytes: below the ridge it is hidden behind the weight "
         "read."])


@question("p3-launch", 3, "bound_to_estimate", "multi-step", 2, 10, "Launch overheads")
def _launch(rng):
    m = lm.model(_pick(rng, ("LLaMA-2-7B", "LLaMA-2-13B", "Llama-3-8B")))
    chip = lm.chip(_pick(rng, ("H100-SXM", "H200", "GB200", "MI355X")))
    ctx = min(_pick(rng, (512, 1024, 2048, 4096)), m.max_context)
    e = lm.estimate_step(m, chip, 1, ctx)
    s = _Sheet("p3-launch")
    s.g("L", m.n_layers, _n, None), s.g("k", estimate.KERNELS_PER_LAYER, _n, None)
    s.g("t_launch", estimate.KERNEL_OVERHEAD, fmt_time)
    spec = s.chip(chip, "W")
    s.g("N_read", m.weight_params_read(1), fmt_count), s.g("b_kv", m.kv_bytes_per_token(2),
                                                           fmt_bytes)
    s.g("S", ctx, _n, None)
    lo = s.answer("(a) launch time per step", e.layer_overhead_time,
                  lambda v: v["L"] * v["k"] * v["t_launch"], fmt_time)
    s.answer("(b) as a share of the bound", e.layer_overhead_time / e.bound.time,
             lambda v: v["L"] * v["k"] * v["t_launch"]
             / ((2 * v["N_read"] + v["S"] * v["b_kv"]) / v["W"]), fmt_percent)
    return s.done(
        f"An engine runs {m.name} at batch 1 on one {chip.name} ({spec}) without CUDA graphs. "
        f"Each of its {m.n_layers} layers launches {estimate.KERNELS_PER_LAYER} kernels, and "
        f"each launch costs {fmt_time(s.v['t_launch'])} that nothing hides. (a) How long do the "
        "launches take per step? (b) Compare them with the step's lower bound, the bf16 read "
        f"of $N_\\text{{read}}$ = {fmt_count(s.v['N_read'])} parameters and the cache of "
        f"{_n(ctx)} tokens at {fmt_bytes(s.v['b_kv'])} each. (c) Which engine change removes "
        "the term?",
        [f"$L k t_\\text{{launch}}$ = {lo.shown(lo.hand)} (library: {lo.shown()}).",
         f"Bound $(N_\\text{{read}} b_w + S b_\\text{{kv}})/W$; the launches add "
         f"{s.answers[1].shown(s.answers[1].hand)} of it (library: {s.answers[1].shown()}).",
         "(c) CUDA graphs (replayed launches) or fusing kernels."])


# ----- Part IV: Training --------------------------------------------------------------------------

@question("p4-run", 4, "training_compute", "multi-step", 2, 10, "Compute and time of a run")
def _run(rng):
    m = lm.model(_pick(rng, PLAIN))
    chip = lm.chip(_pick(rng, GPUS))
    tokens = _pick(rng, (1e12, 2e12, 4e12, 15e12))
    n = _pick(rng, (1024, 2048, 4096, 8192, 16384))
    u = _pick(rng, (0.35, 0.4, 0.45, 0.5))
    s = _Sheet("p4-run")
    s.g("N_act", m.active_params, fmt_count), s.g("D", tokens, fmt_count)
    s.g("n", n, _n, None), s.chip(chip, "C"), s.g("MFU", u, fmt_percent, None)
    f = s.answer("(a) training FLOPs", training.training_flops(m, tokens),
                 lambda v: 6 * v["N_act"] * v["D"], fmt_flops)
    t = s.answer("(b) wall-clock time", training.training_time(m, tokens, chip, n, u),
                 lambda v: 6 * v["N_act"] * v["D"] / (v["n"] * v["C"] * v["MFU"]), fmt_time)
    return s.done(
        f"Suppose {m.name} ($N_\\text{{act}}$ = {fmt_count(s.v['N_act'])} active parameters) "
        "is trained "
        f"on {fmt_count(tokens)} tokens on {_n(n)} {chip.name}s ($C$ = "
        f"{fmt_flops_rate(s.v['C'])} bf16) at {fmt_percent(u)} MFU. (a) How many FLOPs? "
        "(b) How long? (c) Why is the 6 a lower bound on the FLOPs actually executed?",
        [f"$6 N_\\text{{act}} D$ = {f.shown(f.hand)} (library: {f.shown()}).",
         f"$6 N D / (n C\\, \\text{{MFU}})$ = {t.shown(t.hand)} (library: {t.shown()}).",
         "(c) Forward 2, backward 4 per parameter and token; recomputation adds a forward "
         "and attention grows with the sequence; MFU counts the 6 only."])


@question("p4-state", 4, "training_compute", "one-step", 1, 5, "Memory for the optimiser")
def _state(rng):
    m = lm.model(_pick(rng, PLAIN))
    chip = lm.chip(_pick(rng, GPUS))
    per = training.training_memory_per_param().total
    s = _Sheet("p4-state")
    s.g("N_tot", m.total_params, fmt_count)
    s.g("b_state", per, _n, None, sheet_text=f"{per:.0f} bytes per parameter")
    mem = s.capacity(chip)
    st = s.answer("(a) training state", training.training_memory(m),
                  lambda v: v["b_state"] * v["N_tot"], fmt_bytes)
    s.answer(f"(b) {chip.name}s at the least", training.min_training_chips(m, chip),
             lambda v: math.ceil(v["b_state"] * v["N_tot"] / v["M"]), _n)
    return s.done(
        f"{m.name} has $N_\\text{{tot}}$ = {fmt_count(s.v['N_tot'])} parameters and is trained "
        "with mixed-precision Adam (bytes per parameter: the cheat sheet's). (a) How many bytes "
        f"of training state (weights, gradients, optimiser; no activations)? (b) How many "
        f"{chip.name}s ($M$ = {mem}) does it take at the least, fully sharded? (c) Say where the "
        "bytes per parameter come from.",
        [f"$b_\\text{{state}} N_\\text{{tot}}$ = {st.shown(st.hand)}.",
         f"$\\lceil b_\\text{{state}} N/M \\rceil$ = {s.answers[1].shown(s.answers[1].hand)} "
         f"(library: {s.answers[1].shown()}), before any activation.",
         "(c) bf16 weights and gradients (2 + 2), fp32 master weights and two Adam moments "
         "(4 + 4 + 4)."])


@question("p4-mfu", 4, "training_compute", "one-step", 2, 10, "MFU from chip-hours")
def _mfu(rng):
    m = lm.model(_pick(rng, PLAIN))
    chip = lm.chip(_pick(rng, GPUS))
    tokens = _pick(rng, (1e12, 2e12, 15e12))
    flops = training.training_flops(m, tokens)
    hours = float(f"{flops / (3600 * chip.peak('bf16') * _pick(rng, (0.3, 0.38, 0.45))):.3g}")
    s = _Sheet("p4-mfu")
    s.g("N_act", m.active_params, fmt_count), s.g("D", tokens, fmt_count)
    s.g("H", hours, fmt_count), s.chip(chip, "C")
    u = s.answer("(a) MFU", training.mfu_from_chip_hours(flops, hours, chip),
                 lambda v: 6 * v["N_act"] * v["D"] / (v["H"] * 3600 * v["C"]), fmt_percent)
    return s.done(
        f"Suppose a run trains {m.name} ($N_\\text{{act}}$ = {fmt_count(s.v['N_act'])}) on "
        f"{fmt_count(tokens)} tokens in {fmt_count(hours)} {chip.name}-hours ($C$ = "
        f"{fmt_flops_rate(s.v['C'])} bf16). (a) What MFU does that imply? (b) Why is it lower "
        "than the MFU measured over the run's steady steps?",
        [f"$6 N D / (H \\cdot 3600 \\cdot C)$ = {u.shown(u.hand)} (library: {u.shown()}).",
         "(b) Chip-hours include restarts, evaluation, checkpoints and idle chips."])


def _layout_for(rng, m):
    tp = _pick(rng, tuple(t for t in (2, 4, 8) if m.n_heads % t == 0 and m.d_ff % t == 0))
    pp = _pick(rng, tuple(p for p in (1, 2, 4, 8) if m.n_layers >= p))
    dp = _pick(rng, (8, 16, 32, 64))
    return tp, pp, dp


@question("p4-zero", 4, "training_layout", "one-step", 1, 10, "State per chip under ZeRO")
def _zero(rng):
    m = lm.model(_pick(rng, DENSE))
    tp, pp, dp = _layout_for(rng, m)
    z = _pick(rng, (1, 2, 3))
    lay = layout.Layout(dp=dp, tp=tp, pp=pp, zero_stage=z)
    ctx = min(4096, m.max_context)
    s = _Sheet("p4-zero")
    s.g("N", m.total_params, fmt_count)
    for sym, x in (("tp", tp), ("pp", pp), ("dp", dp)):
        s.g(sym, x, _n, None)
    kept = {1: 4, 2: 2, 3: 0}[z]
    s.g("b_kept", kept, _n, None)
    st = s.answer("training state per chip", layout.memory_per_chip(m, lay, ctx).states,
                  lambda v: v["N"] / (v["tp"] * v["pp"])
                  * (v["b_kept"] + (16 - v["b_kept"]) / v["dp"]), fmt_bytes)
    return s.done(
        f"{m.name} ($N$ = {fmt_count(s.v['N'])} parameters) trains with mixed-precision Adam "
        "(16 bytes per parameter: 2 bf16 weights, 2 gradients, 12 of fp32 master weights and "
        f"moments) on TP{tp} PP{pp} DP{dp} under ZeRO-{z}, which leaves {kept} bytes per "
        "parameter unsharded and shards the rest over the data-parallel replicas. What is one "
        "chip's share of the training state, in bytes? What would ZeRO-3 change, and what "
        "does it cost?",
        [f"Each chip holds $N/(d_\\text{{TP}} d_\\text{{PP}})$ parameters, at $b_\\text{{kept}} + "
         f"(16 - b_\\text{{kept}})/d_\\text{{DP}}$ bytes: {st.shown(st.hand)} "
         f"(library: {st.shown()}).",
         "ZeRO-3 shards all 16 bytes, at the price of gathering the weights layer by layer in "
         "every pass (one more all-gather of the weights per forward and backward)."])


@question("p4-acts", 4, "training_layout", "multi-step", 2, 15, "Activations of the first stage")
def _acts(rng):
    m = lm.model(_pick(rng, ("Llama-3-8B", "Llama-3-70B", "LLaMA-2-70B", "Llama-3.1-405B")))
    tp, pp, dp = _layout_for(rng, m)
    ctx = min(_pick(rng, (2048, 4096, 8192)), m.max_context)
    chip = lm.chip(_pick(rng, ("H100-SXM", "H200", "GB200")))
    lay = layout.Layout(dp=dp, tp=tp, pp=pp, zero_stage=1)
    mem = layout.memory_per_chip(m, lay, ctx)
    s = _Sheet("p4-acts")
    for sym, x in (("L", m.n_layers), ("D", m.d_model), ("S", ctx), ("tp", tp), ("pp", pp),
                   ("dp", dp)):
        s.g(sym, x, _n, None)
    s.g("N", m.total_params, fmt_count)
    cap = s.capacity(chip)

    def acts(v):  # L/pp layers x pp micro-batches in flight x S tokens x 34 D / tp
        return v["L"] / v["pp"] * v["pp"] * v["S"] * 34 * v["D"] / v["tp"]

    def total(v):
        return v["N"] / (v["tp"] * v["pp"]) * (4 + 12 / v["dp"]) + acts(v)

    a = s.answer("(a) activations", mem.activations, acts, fmt_bytes)
    t = s.answer("(b) state (ZeRO-1) plus activations", mem.total, total, fmt_bytes)
    s.answer("(b) fits the chip", "yes" if mem.fits(chip) else "no",
             lambda v: "yes" if total(v) <= v["M"] else "no")
    return s.done(
        f"{m.name} ({m.n_layers} layers of width $D$ = {_n(m.d_model)}, $N$ = "
        f"{fmt_count(s.v['N'])}) trains on TP{tp} PP{pp} DP{dp} with sequences of {_n(ctx)} "
        "tokens, one sequence per micro-batch, sequence parallelism, selective recomputation "
        "(34 D bytes per token per layer, divided by the tensor-parallel degree) and the 1F1B "
        "schedule. (a) How many bytes of activations does a chip of the first stage hold? "
        "(b) With mixed-precision Adam under ZeRO-1 (4 bytes per parameter kept, 12 sharded "
        f"over the replicas), does {_a(chip.name)} {chip.name} ($M$ = {cap}) hold state and "
        "activations? "
        "(c) Why does the pipeline depth drop out of (a)?",
        ["Per token per layer $34D/d_\\text{TP}$; the first stage holds $L/d_\\text{PP}$ layers "
         "and, under 1F1B, $d_\\text{PP}$ micro-batches of $S$ tokens.",
         f"$M_\\text{{act}} = L S \\cdot 34 D / d_\\text{{TP}}$ = {a.shown(a.hand)} "
         f"(library: {a.shown()}).",
         f"Plus the state $N/(d_\\text{{TP}} d_\\text{{PP}}) (4 + 12/d_\\text{{DP}})$: "
         f"{t.shown(t.hand)} (library: {t.shown()}), which "
         f"{'fits' if mem.fits(chip) else 'does not fit'}.",
         "(c) Fewer layers per stage, but as many more micro-batches in flight."])


@question("p4-young", 4, "training_layout", "derivation", 2, 15, "How often to checkpoint")
def _young(rng):
    mtbf_h = _pick(rng, (1.5, 2.0, 3.0, 4.0, 6.0))
    delta = _pick(rng, (30.0, 60.0, 120.0, 300.0))
    restart = _pick(rng, (300.0, 600.0, 900.0))
    mtbf = mtbf_h * 3600
    s = _Sheet("p4-young")
    s.g("T_int", mtbf, fmt_time), s.g("delta", delta, fmt_time), s.g("R", restart, fmt_time)
    y = s.answer("(b) Young's interval", layout.checkpoint_interval(mtbf, delta, "young"),
                 lambda v: math.sqrt(2 * v["delta"] * v["T_int"]), fmt_time)
    tau = layout.checkpoint_interval(mtbf, delta)

    def daly(v):
        x = v["delta"] / (2 * v["T_int"])
        return math.sqrt(2 * v["delta"] * v["T_int"]) * (1 + math.sqrt(x) / 3 + x / 9) \
            - v["delta"]

    d = s.answer("(b) Daly's interval", tau, daly, fmt_time)
    g = s.answer("(c) goodput at Daly's interval", layout.goodput(tau, delta, mtbf, restart),
                 lambda v: daly(v) / (v["T_int"] * math.exp(v["R"] / v["T_int"])
                                      * math.expm1((daly(v) + v["delta"]) / v["T_int"])),
                 fmt_percent)
    return s.done(
        "(a) A job is interrupted on average every $T_\\text{int}$ and writes a checkpoint in "
        "$\\delta$. Derive, to first order, the compute time $\\tau$ between checkpoints that "
        "loses the least time (Young's rule). (b) Evaluate it for $T_\\text{int}$ = "
        f"{fmt_time(mtbf)} and $\\delta$ = {fmt_time(delta)}, and Daly's higher-order estimate "
        "$\\tau_\\text{Daly} = \\sqrt{2\\delta T}[1 + \\sqrt{\\delta/2T}/3 + (\\delta/2T)/9] - "
        "\\delta$. (c) With restarts costing $R$ = "
        f"{fmt_time(restart)}, what share of wall-clock time is kept training (goodput "
        "$\\tau/(T e^{R/T}(e^{(\\tau+\\delta)/T} - 1))$)?",
        ["Per unit of compute: checkpoints cost $\\delta/\\tau$; an interruption (rate "
         "$1/T_\\text{int}$) loses on average half an interval, $\\tau/2$: waste "
         "$\\delta/\\tau + \\tau/(2T_\\text{int})$.",
         "Minimise: $-\\delta/\\tau^2 + 1/(2T_\\text{int}) = 0$, so $\\tau = "
         "\\sqrt{2\\delta T_\\text{int}}$.",
         f"Young {y.shown(y.hand)}; Daly {d.shown(d.hand)} (library: {d.shown()}).",
         f"Goodput {g.shown(g.hand)} (library: {g.shown()})."],
        "Derivation half; the numbers and the goodput the other half.")


@question("p4-overtrain", 4, "overtraining", "one-step", 1, 5, "How far past compute-optimal")
def _overtrain(rng):
    m = lm.model(_pick(rng, PLAIN))
    tokens = _pick(rng, (2e12, 15e12, 18e12, 36e12))
    tpp = training.CHINCHILLA_TOKENS_PER_PARAM
    s = _Sheet("p4-overtrain")
    s.g("N_act", m.active_params, fmt_count), s.g("D", tokens, fmt_count)
    s.g("tpp", tpp, _n, None, sheet_text=f"about {tpp:.0f} tokens per parameter")
    opt = s.answer("(a) compute-optimal tokens", training.compute_optimal_tokens(m),
                   lambda v: v["tpp"] * v["N_act"], fmt_count)
    f = s.answer("(b) over-training factor", training.overtraining_factor(m, tokens),
                 lambda v: v["D"] / (v["tpp"] * v["N_act"]), _plain)
    return s.done(
        f"Suppose {m.name} ($N_\\text{{act}}$ = {fmt_count(s.v['N_act'])}) is trained on "
        f"{fmt_count(tokens)} tokens. (a) How many tokens would be compute-optimal (the cheat "
        "sheet's rule)? (b) By what factor does the run exceed it? (c) Why would anyone do that?",
        [f"$20 N$ = {opt.shown(opt.hand)}; factor $D/20N$ = {f.shown(f.hand)}.",
         "(c) Serving cost scales with the model's size: a smaller model trained longer is "
         "cheaper over a lifetime of inference tokens."])


@question("p4-equalspend", 4, "overtraining", "multi-step", 2, 15, "Equal spend")
def _equalspend(rng):
    m = lm.model(_pick(rng, PLAIN))
    rate = _pick(rng, (5e6, 1e7, 2e7, 5e7))
    days = _pick(rng, (60, 90, 180))
    u = _pick(rng, ((1 / 3, "1/3"), (0.25, "1/4"), (0.2, "1/5")))
    served = lifetime.served_tokens(rate, days * 86400)
    s = _Sheet("p4-equalspend")
    s.g("rate", rate, fmt_count), s.g("days", days, _n, None), s.g("u", u[0], lambda x: u[1], None)
    s.g("N_act", m.active_params, fmt_count)
    s.g("tpp", training.CHINCHILLA_TOKENS_PER_PARAM, _n, None,
        sheet_text=f"about {training.CHINCHILLA_TOKENS_PER_PARAM:.0f} tokens per parameter")
    d_inf = s.answer("(a) tokens served", served, lambda v: v["rate"] * v["days"] * 86400,
                     fmt_count)
    pre = s.answer("(b) pre-training tokens at equal spend",
                   lifetime.equal_spend_tokens(served, u[0]).pretrain_tokens,
                   lambda v: v["rate"] * v["days"] * 86400 / (3 * v["u"]), fmt_count)
    f = s.answer("(c) over-training factor", lifetime.equal_spend_overtraining(m, served, u[0]),
                 lambda v: v["rate"] * v["days"] * 86400 / (3 * v["u"]) / (v["tpp"] * v["N_act"]),
                 _plain)
    return s.done(
        f"A model like {m.name} ($N_\\text{{act}}$ = {fmt_count(s.v['N_act'])}) serves "
        f"{fmt_count(rate)} tokens per second for {days} days, decoding at a utilisation of "
        f"$u$ = {u[1]} (inference compute $2 N D_\\text{{inf}}/u$). (a) How many tokens does it "
        "serve? (b) How many pre-training tokens make pre-training cost the same compute as "
        "serving? (c) How many times compute-optimal (the cheat sheet's tokens per parameter) "
        "is that?",
        [f"$D_\\text{{inf}}$ = rate x time = {d_inf.shown(d_inf.hand)}.",
         "Equal spend: $6 N D_\\text{pre} = 2 N D_\\text{inf}/u$, so "
         f"$D_\\text{{pre}} = D_\\text{{inf}}/(3u)$ = {pre.shown(pre.hand)}: the size cancels.",
         f"Factor $D_\\text{{pre}}/(20N)$ = {f.shown(f.hand)} (library: {f.shown()})."])


@question("p4-recompute", 4, "memory_for_compute", "derivation", 2, 10,
          "Store or recompute the cache")
def _recompute(rng):
    m = lm.model(_pick(rng, PLAIN))
    chip = lm.chip(_pick(rng, CHIPS))
    s = _Sheet("p4-recompute")
    s.g("N_mm", m.matmul_params_active, fmt_count), s.g("b_kv", m.kv_bytes_per_token(2),
                                                        fmt_bytes)
    spec = s.chip(chip, "C", "W")
    i = tradeoffs.recompute_intensity(m)
    a = s.answer("(b) FLOP per byte to rebuild the cache", i,
                 lambda v: 2 * v["N_mm"] / v["b_kv"], lambda x: f"{x:,.0f}")
    s.answer("(b) times the ridge point", i / chip.ops_per_byte("bf16"),
             lambda v: 2 * v["N_mm"] / v["b_kv"] / (v["C"] / v["W"]), _plain)
    s.answer("(b) cheaper to", "read" if i > chip.ops_per_byte("bf16") else "recompute",
             lambda v: "read" if 2 * v["N_mm"] / v["b_kv"] > v["C"] / v["W"] else "recompute")
    return s.done(
        "(a) One token's keys and values cost its forward pass through the layers, and occupy "
        "$b_\\text{kv}$ bytes. Derive the FLOP spent per byte of cache rebuilt, and the "
        "condition under which rebuilding a cached prefix is faster than reading it back from "
        f"HBM. (b) Evaluate it for {m.name} ($N_\\text{{mm}}$ = {fmt_count(s.v['N_mm'])}, "
        f"$b_\\text{{kv}}$ = {fmt_bytes(s.v['b_kv'])} in bf16) on {_a(chip.name)} {chip.name} "
        f"({spec}).",
        ["Rebuild: $2 N_\\text{mm}$ FLOP per token; so $I_\\text{rb} = 2 "
         "N_\\text{mm}/b_\\text{kv}$ "
         "FLOP per byte.",
         "Reading a byte takes the time of $C/W$ FLOP: recompute only if $I_\\text{rb} < C/W$.",
         f"$I_\\text{{rb}}$ = {a.shown(a.hand)}, {s.answers[1].shown(s.answers[1].hand)} the "
         f"ridge: {s.answers[2].key} (library: {a.shown()})."])


# ----- drawing ------------------------------------------------------------------------------------

def by_id(qid: str) -> Question:
    for q in QUESTIONS:
        if q.qid == qid:
            return q
    raise KeyError(f"qid: got {qid!r}; the bank has {[q.qid for q in QUESTIONS]}")


def variants(seed: int, qid: str | None = None) -> dict:
    """Two different variants of each question (``{qid: (A, B)}``), drawn from ``seed``.

    Each question draws from its own stream (``seed`` and its id), so adding a question moves
    no other question's variants.
    """
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise TypeError(f"seed: got {seed!r}; expected an integer")
    out = {}
    for q in ([by_id(qid)] if qid else QUESTIONS):
        rng = random.Random(f"{seed}:{q.qid}")
        a = q.make(rng)
        for _ in range(200):  # redraw until B asks something else
            b = q.make(rng)
            if b.text != a.text and [x.key for x in b.answers] != [x.key for x in a.answers]:
                break
        else:
            raise RuntimeError(f"{q.qid}: no second variant in 200 draws (seed {seed})")
        out[q.qid] = (a, b)
    return out


def coverage() -> dict:
    """``{chapter: [qid, ...]}`` in the order of the Parts."""
    return {ch: [q.qid for q in QUESTIONS if q.chapter == ch]
            for part in CHAPTERS for ch in CHAPTERS[part]}

"""Transformers as counts: parameters, FLOPs per token and KV-cache bytes per token.

A :class:`Model` stores an architecture with field names that follow the public configs
(``num_hidden_layers`` -> ``n_layers``, ``hidden_size`` -> ``d_model``, ``intermediate_size``
-> ``d_ff``, ``num_key_value_heads`` -> ``n_kv_heads``, ``n_routed_experts`` -> ``n_experts``,
``num_experts_per_tok`` -> ``experts_per_token``, ``moe_intermediate_size`` -> ``d_ff_expert``,
``first_k_dense_replace`` -> ``n_dense_layers``, ``kv_lora_rank``, ``q_lora_rank``,
``qk_rope_head_dim``, ...). Everything else is counted from those fields.

Conventions (the book states them where it uses them):

- **Parameters** count every weight matrix, bias and norm the config implies; embeddings
  are included, as in published totals. ``active_params`` removes the routed experts a
  token does not use.
- **Matmul parameters** (``matmul_params_active``) drop the input embedding of an untied
  model: looking up a row is a gather, not a multiply. A tied embedding is counted once, as
  the LM head, which is a real matmul.
- **Forward FLOPs per token** are ``2 x matmul_params_active`` plus attention's
  ``QK^T`` and ``AV`` products, which grow with the context.
- **KV bytes per token** (``kv_bytes_per_token``) are K and V (or MLA's latent) for one
  token across all layers: the book's :math:`b_\\text{kv}`. Sliding-window layers hold at
  most ``sliding_window`` tokens; sparse attention (``sparse_attention_topk``) stores every
  token but reads only the top-k per step.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ._check import index_by_name, lookup, positive
from ._summary import SummaryRow
from .units import fmt_bytes, fmt_count, fmt_si

__all__ = [
    "Model", "ParameterBreakdown", "parameter_breakdown", "kaplan_params",
    "attention_crossover_context", "get", "names", "all_models", "MhaEquivalent",
    "mha_equivalent", "palm_multihead_baseline",
]


def _floats(x):
    """A Python float as it is (the scalar fast path), anything else as a float array."""
    return x if type(x) is float else np.asarray(x, dtype=float)


@dataclass(frozen=True)
class Model:
    """A decoder-only transformer: dense or MoE, MHA/GQA/MQA or MLA attention."""

    name: str
    n_layers: int  # L, num_hidden_layers
    d_model: int  # D, hidden_size
    d_ff: int  # F, intermediate_size of a dense MLP layer
    n_heads: int  # n_q, num_attention_heads
    vocab_size: int  # V
    n_kv_heads: int | None = None  # n_kv; None means n_heads (multi-head attention)
    head_dim: int | None = None  # d_h; None means d_model // n_heads
    tied_embeddings: bool = False  # tie_word_embeddings
    gated_mlp: bool = True  # SwiGLU/GeGLU (3 matrices) or plain GELU MLP (2 matrices)
    attention_bias: bool = False  # biases on Q, K, V (and O for biased models)
    mlp_bias: bool = False  # biases in the MLP / expert matrices (GPT-3, gpt-oss)
    # Mixture of experts.
    n_experts: int = 0  # E, routed experts per MoE layer (0: dense model)
    experts_per_token: int = 0  # k, routed experts each token uses
    n_shared_experts: int = 0  # experts every token uses (DeepSeek)
    d_ff_expert: int | None = None  # moe_intermediate_size
    d_ff_shared: int | None = None  # shared expert width; None means d_ff_expert
    n_dense_layers: int = 0  # first_k_dense_replace: leading layers with a dense MLP
    # Multi-head latent attention (DeepSeek-V2/V3).
    kv_lora_rank: int | None = None
    q_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    # Attention span.
    sliding_window: int | None = None  # window of the sliding-window layers
    n_sliding_layers: int = 0  # how many layers use the window (the rest attend globally)
    sparse_attention_topk: int | None = None  # tokens each query reads under sparse attention
    # The indexer that picks those tokens (DeepSeek Sparse Attention's "lightning indexer"): it
    # keeps its own key cache and scores every cached token at every step.
    index_n_heads: int | None = None  # index_n_heads
    index_head_dim: int | None = None  # index_head_dim
    # bytes of indexer key cache per token per layer (fp8 + scale)
    index_key_bytes: float | None = None
    max_context: int | None = None  # longest context the model supports
    parallel_block: bool = False  # attention and MLP side by side (PaLM, GPT-J)
    # Provenance: the published totals this entry must reproduce.
    published_params: float | None = None
    published_active_params: float | None = None
    source: str = ""  # citation key in references.bib
    year: int | None = None
    notes: str = ""

    def __post_init__(self):
        for name in ("n_layers", "d_model", "d_ff", "n_heads", "vocab_size"):
            positive(name, getattr(self, name), integer=True)
        if self.n_kv_heads is None:
            object.__setattr__(self, "n_kv_heads", self.n_heads)
        if self.head_dim is None:
            object.__setattr__(self, "head_dim", self.d_model // self.n_heads)
        positive("n_kv_heads", self.n_kv_heads, integer=True)
        positive("head_dim", self.head_dim, integer=True)
        if self.n_heads % self.n_kv_heads:
            raise ValueError(f"n_kv_heads: got {self.n_kv_heads}; "
                             f"it must divide n_heads={self.n_heads}")
        if self.n_experts:
            positive("experts_per_token", self.experts_per_token, integer=True)
            if self.experts_per_token > self.n_experts:
                raise ValueError(f"experts_per_token: got {self.experts_per_token}; "
                                 f"allowed 1..n_experts={self.n_experts}")
            if self.d_ff_expert is None:
                raise ValueError("d_ff_expert: an MoE model (n_experts "
                                 "> 0) needs the expert MLP width")
            positive("d_ff_expert", self.d_ff_expert, integer=True)
        elif self.experts_per_token or self.n_shared_experts:
            raise ValueError("n_experts: got 0 but experts_per_token/n_shared_experts "
                             "are set; set n_experts")
        if not 0 <= self.n_dense_layers <= self.n_layers:
            raise ValueError(f"n_dense_layers: got {self.n_dense_layers}; "
                             f"allowed 0..n_layers={self.n_layers}")
        if self.kv_lora_rank is not None:
            for name in ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
                positive(name, getattr(self, name), integer=True)
        if not 0 <= self.n_sliding_layers <= self.n_layers:
            raise ValueError(f"n_sliding_layers: got {self.n_sliding_layers}; "
                             f"allowed 0..n_layers={self.n_layers}")
        if self.n_sliding_layers and not self.sliding_window:
            raise ValueError("sliding_window: n_sliding_layers > 0 needs a window size")
        for name in ("sliding_window", "sparse_attention_topk", "max_context",
                     "index_n_heads", "index_head_dim"):
            if getattr(self, name) is not None:
                positive(name, getattr(self, name), integer=True)
        indexer = (self.index_n_heads, self.index_head_dim, self.index_key_bytes)
        if any(x is not None for x in indexer):
            if any(x is None for x in indexer) or self.sparse_attention_topk is None:
                raise ValueError("index_n_heads, index_head_dim, index_key_bytes: an indexer needs "
                                 "all three and sparse_attention_topk (the tokens it selects)")
            positive("index_key_bytes", self.index_key_bytes)

    # ----- kinds -------------------------------------------------------------------------
    @cached_property  # a frozen model: computed once (a scalar step reads it per call)
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def attention_kind(self) -> str:
        """'MLA', 'MQA' (one KV head), 'MHA' (a KV head per query head) or 'GQA'."""
        if self.kv_lora_rank is not None:
            return "MLA"
        if self.n_kv_heads == 1:
            return "MQA"
        if self.n_kv_heads == self.n_heads:
            return "MHA"
        return "GQA"

    def replace(self, **changes) -> Model:
        """A copy with some fields changed (the published totals are dropped unless given)."""
        changes.setdefault("published_params", None)
        changes.setdefault("published_active_params", None)
        return dataclasses.replace(self, **changes)

    # ----- parameters --------------------------------------------------------------------
    @cached_property  # a frozen model: computed once (a scalar step reads it per call)
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    @cached_property
    def embedding_params(self) -> int:
        """Input embedding (V x D); for a tied model it is also the LM head."""
        return self.vocab_size * self.d_model

    @property
    def lm_head_params(self) -> int:
        return 0 if self.tied_embeddings else self.vocab_size * self.d_model

    @property
    def attention_params_per_layer(self) -> int:
        """Q, K, V, O projections (MLA: the low-rank down/up projections and their norms)."""
        D, nq = self.d_model, self.n_heads
        if self.kv_lora_rank is not None:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = D * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * nq * qk
            else:
                q = D * nq * qk
            kv_down = D * (self.kv_lora_rank + self.qk_rope_head_dim) + self.kv_lora_rank
            kv_up = self.kv_lora_rank * nq * (self.qk_nope_head_dim + self.v_head_dim)
            out = nq * self.v_head_dim * D
            return q + kv_down + kv_up + out
        q_dim, kv_dim = nq * self.head_dim, self.n_kv_heads * self.head_dim
        weights = D * q_dim + 2 * D * kv_dim + q_dim * D
        bias = (q_dim + 2 * kv_dim + D) if self.attention_bias else 0
        return weights + bias

    def _mlp_params(self, width: int) -> int:
        matrices = 3 if self.gated_mlp else 2
        bias = ((matrices - 1) * width + self.d_model) if self.mlp_bias else 0
        return matrices * self.d_model * width + bias

    @property
    def dense_mlp_params(self) -> int:
        """One dense MLP layer: 3DF (gated) or 2DF."""
        return self._mlp_params(self.d_ff)

    @cached_property
    def expert_params(self) -> int:
        """One routed expert (an MLP of width d_ff_expert); 0 for a dense model."""
        return self._mlp_params(self.d_ff_expert) if self.is_moe else 0

    @property
    def shared_expert_params(self) -> int:
        """All shared experts of one MoE layer."""
        if not self.n_shared_experts:
            return 0
        return self.n_shared_experts * self._mlp_params(self.d_ff_shared or self.d_ff_expert)

    @property
    def router_params(self) -> int:
        """Router of one MoE layer: D x E (plus a bias per expert)."""
        return (self.d_model + 1) * self.n_experts if self.is_moe else 0

    @property
    def norm_params(self) -> int:
        """Two norms per layer (one in a parallel block) and a final norm (RMSNorm scales;
        LayerNorm biases are negligible)."""
        per_layer = 1 if self.parallel_block else 2
        return per_layer * self.d_model * self.n_layers + self.d_model

    @cached_property
    def total_params(self) -> int:
        """N_tot: every parameter, embeddings included."""
        n_mlp_dense = self.n_layers - self.n_moe_layers
        moe_layer = (self.n_experts * self.expert_params + self.shared_expert_params
                     + self.router_params)
        return int(
            self.embedding_params
            + self.lm_head_params
            + self.n_layers * self.attention_params_per_layer
            + n_mlp_dense * self.dense_mlp_params
            + self.n_moe_layers * moe_layer
            + self.norm_params
        )

    @cached_property
    def active_params(self) -> int:
        """N_act: parameters one token uses (routed experts not chosen are left out)."""
        idle = self.n_moe_layers * (self.n_experts - self.experts_per_token) * self.expert_params
        return self.total_params - idle

    @property
    def sparsity(self) -> float:
        """N_tot / N_act: 1 for a dense model."""
        return self.total_params / self.active_params

    @cached_property
    def matmul_params_active(self) -> int:
        """Active parameters that are multiplied per token:
        the untied input embedding is a gather."""
        gather = 0 if self.tied_embeddings else self.embedding_params
        return self.active_params - gather - self.norm_params

    def weight_params_read(self, tokens=1):
        """Expected parameters a step over `tokens` tokens must read from memory.

        Shared weights (attention, dense layers, shared experts, routers, LM head) are read
        once; the input embedding is a gather of one row per token (capped at V rows); of the
        E routed experts of a layer, tokens routed k at a time touch E (1 - (1 - k/E)^tokens)
        distinct ones on average. At one token that is k experts; at a large batch it tends to
        all E, and the total tends to N_tot.

        The expert count is an **expectation** under independent, uniform routing, not a bound:
        skewed routing (popular experts, correlated tokens of one sequence) touches fewer
        distinct experts and reads less. Summed over chips, it is the bytes read; when experts
        are spread over chips (expert parallelism) the busiest chip, not the mean, sets the
        step's time, so a time from it assumes the reads spread evenly.
        """
        return self._weight_params_read(positive("tokens", tokens))

    def _weight_params_read(self, tokens):
        """:meth:`weight_params_read` without the argument check."""
        lo = min if type(tokens) is float else np.minimum  # scalar: no numpy
        always = self._params_read_by_every_step
        rows = lo(tokens, self.vocab_size) * self.d_model if not self.tied_embeddings else 0.0
        routed_read = (self.n_moe_layers * self._experts_touched(tokens) * self.expert_params
                       if self.is_moe else 0.0)
        return always + rows + routed_read

    def experts_touched(self, tokens=1):
        """Expected distinct routed experts that ``tokens`` tokens touch in one MoE layer.

        Routed ``k`` at a time among ``E`` (uniform routing): ``E (1 - (1 - k/E)^T)``; ``k`` at one
        token, tending to ``E`` at a large batch. 0 for a dense model. An expectation, not a
        bound: skewed routing touches fewer (see :meth:`weight_params_read`).
        """
        tokens = positive("tokens", tokens)
        if not self.is_moe:
            return 0.0 * tokens
        return self._experts_touched(tokens)

    def _experts_touched(self, tokens):
        xp = math if type(tokens) is float else np  # scalar: no numpy
        E, k = self.n_experts, self.experts_per_token
        if k >= E:
            return E * np.ones_like(tokens) if xp is np else float(E)
        return E * -xp.expm1(tokens * xp.log1p(-k / E))

    def _weight_params_read_slope(self, tokens):
        """d N_read / d tokens (unchecked): one embedding row per token below the vocabulary
        size, and the routed experts a further token newly touches."""
        scalar = type(tokens) is float
        rows = 0.0
        if not self.tied_embeddings:
            rows = (self.d_model if tokens < self.vocab_size else 0.0) if scalar else \
                np.where(tokens < self.vocab_size, float(self.d_model), 0.0)
        if not self.is_moe or self.experts_per_token >= self.n_experts:
            return rows
        xp = math if scalar else np
        log_miss = xp.log1p(-self.experts_per_token / self.n_experts)  # log P(an expert missed)
        touched = -self.n_experts * log_miss * xp.exp(tokens * log_miss)
        return rows + self.n_moe_layers * touched * self.expert_params

    @cached_property
    def _params_read_by_every_step(self) -> int:
        """Shared weights every step reads whatever its tokens: all but the input embedding (a
        gather) and the routed experts."""
        gather = 0 if self.tied_embeddings else self.embedding_params
        return self.total_params - gather - self.n_moe_layers * self.n_experts * self.expert_params

    # ----- attention span and KV cache -----------------------------------------------------
    def check_context(self, context, argument="context"):
        """``context`` (tokens; a number or an array) if it is a valid context for this model:
        not negative and within its window; else a ValueError naming ``argument`` (the name the
        caller's reader passed it under: "prompt", "past + prompt" ...)."""
        name = argument
        context = positive(name, context, allow_zero=True)
        if self.max_context is None:
            return context
        if ((context > self.max_context) if type(context) is float
                else np.any(context > self.max_context)):
            raise ValueError(
                f"{name}: got {np.max(context):g} tokens; "
                f"{self.name} supports at most {self.max_context}"
            )
        return context

    def cap_context(self, context) -> tuple[float, str]:
        """``context`` capped at the model's window, and a note saying so (``""`` if not capped).

        The one rule plots and explorers use when a reader asks for more context than the
        model supports; the bounds themselves refuse such a context with a ValueError.
        """
        context = positive("context", context, allow_zero=True, single=True)
        if self.max_context is not None and context > self.max_context:
            return float(self.max_context), f"context capped at {fmt_count(self.max_context)}"
        return context, ""

    @cached_property
    def kv_elements_per_token_per_layer(self) -> int:
        """Cached numbers per token per layer: 2 n_kv d_h (K and V), or MLA's latent + RoPE key."""
        if self.kv_lora_rank is not None:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.n_kv_heads * self.head_dim

    def kv_row_bytes(self, bytes_per_element: float = 2):
        """Bytes one token's cache row takes in one layer, at ``bytes_per_element``.

        ``2 n_kv d_h b`` for K and V. MLA's latent quantised below 2 bytes keeps its RoPE key in
        bf16 and one fp32 scale per 128 latent values, DeepSeek's FlashMLA fp8 format
        (github.com/deepseek-ai/FlashMLA, README: "656 bytes per token" for V3's 512 + 64):
        ``r b + 2 d_rope + 4 r / 128``. At 2 bytes it is ``(r + d_rope) 2``, 1,152 B.
        """
        elems = self.kv_elements_per_token_per_layer
        if self.kv_lora_rank is None:
            return elems * bytes_per_element
        r, rope = self.kv_lora_rank, self.qk_rope_head_dim
        quantised = r * bytes_per_element + 2.0 * rope + 4.0 * r / 128
        if type(bytes_per_element) in (int, float):
            return quantised if bytes_per_element < 2 else elems * bytes_per_element
        b = np.asarray(bytes_per_element, dtype=float)
        return np.where(b < 2, quantised, elems * b)

    def kv_bytes_per_token(self, bytes_per_element: float = 2) -> float:
        """b_kv: KV-cache bytes one token adds across all layers (before any window cap).

        K and V (or MLA's latent, :meth:`kv_row_bytes`) at ``bytes_per_element``, plus an
        indexer's own key cache (its format is fixed by the model: fp8 with a scale), where the
        model has one.
        """
        positive("bytes_per_element", bytes_per_element)
        return (self.n_layers * self.kv_row_bytes(bytes_per_element)
                + self._n_global * (self.index_key_bytes or 0.0))

    @cached_property
    def _n_global(self) -> int:
        return self.n_layers - self.n_sliding_layers

    @cached_property  # a frozen model: computed once (a scalar step reads it per call)
    def has_indexer(self) -> bool:
        """True for sparse attention whose indexer scores every cached token (DeepSeek-V3.2)."""
        return self.index_key_bytes is not None

    def indexer_cache_bytes(self, context):
        """Bytes of the indexer's key cache for one sequence of ``context`` tokens (0 without one).

        The indexer scores every cached token at every decode step, so a step reads all of it:
        these bytes are both held and read (``n_global x S x index_key_bytes``).
        """
        context = _floats(self.check_context(context))
        return self._n_global * context * (self.index_key_bytes or 0.0)

    def _spans(self, context, read: bool):
        """Tokens held (read=False) or read per step (read=True) per layer group:
        (global, sliding)."""
        lo = min if type(context) is float else np.minimum  # scalar: no numpy
        held_global = context
        if read and self.sparse_attention_topk is not None:
            held_global = lo(context, self.sparse_attention_topk)
        sliding = lo(context, self.sliding_window) if self.n_sliding_layers else 0.0
        return self._n_global * held_global + self.n_sliding_layers * sliding

    def context_for_read_span(self, span):
        """Smallest context S (tokens) whose per-step read span reaches ``span`` token-layers.

        The read span is what :meth:`kv_read_bytes` counts per KV element:
        ``f(S) = n_global min(S, topk) + n_sliding min(S, window)`` (caps absent where the model
        has none), piecewise linear and non-decreasing in S. Returns ``(S, reachable)`` arrays;
        where the caps keep ``f`` below ``span`` at every context, ``reachable`` is False and
        ``S`` is 0. Used to invert balance conditions (critical context, attention crossover).
        """
        target = np.asarray(span, dtype=float)
        n_global = self.n_layers - self.n_sliding_layers
        terms = []
        if n_global:
            terms.append((n_global, float(self.sparse_attention_topk)
                          if self.sparse_attention_topk else np.inf))
        if self.n_sliding_layers:
            terms.append((self.n_sliding_layers, float(self.sliding_window)))
        caps = sorted({c for _, c in terms})
        result = np.full(target.shape, np.nan)
        start, f_start = 0.0, 0.0
        for cap in caps:
            slope = sum(a for a, c in terms if c >= cap)  # terms still growing below `cap`
            f_end = f_start + slope * (cap - start) if np.isfinite(cap) else np.inf
            hit = np.isnan(result) & (target <= f_end)
            with np.errstate(invalid="ignore", divide="ignore"):
                result = np.where(hit, start + (target - f_start) / slope, result)
            start, f_start = cap, f_end
        reachable = ~np.isnan(result)
        return np.where(reachable, result, 0.0), reachable

    def kv_cache_bytes(self, context, bytes_per_element: float = 2):
        """Bytes of KV cache one sequence of `context` tokens holds (sliding layers cap at the
        window).

        Includes an indexer's key cache (:meth:`indexer_cache_bytes`) where the model has one.
        """
        context = self.check_context(context)
        positive("bytes_per_element", bytes_per_element)
        return self._held_bytes(context, bytes_per_element)

    def _held_bytes(self, context, bytes_per_element):
        """:meth:`kv_cache_bytes` without the argument checks."""
        attn = self._spans(context, read=False) * self.kv_row_bytes(bytes_per_element)
        if self.has_indexer:
            attn = attn + self._n_global * _floats(context) * self.index_key_bytes
        return attn

    def kv_read_bytes(self, context, bytes_per_element: float = 2):
        """Bytes of KV cache one decode step reads for one sequence of `context` tokens.

        Equal to :meth:`kv_cache_bytes` except under sparse attention, where attention reads only
        the top-k tokens per query; the indexer that picks them still reads its key cache for
        every cached token (:meth:`indexer_cache_bytes`), which is counted.
        """
        context = self.check_context(context)
        positive("bytes_per_element", bytes_per_element)
        return self._read_bytes(context, bytes_per_element)

    def _read_bytes(self, context, bytes_per_element):
        """:meth:`kv_read_bytes` without the argument checks (any context, for root finding)."""
        attn = self._spans(context, read=True) * self.kv_row_bytes(bytes_per_element)
        if self.has_indexer:
            attn = attn + self._n_global * _floats(context) * self.index_key_bytes
        return attn

    def _decode_flops(self, context):
        """(attention, indexer) FLOPs for one decoded token over ``context``, unchecked."""
        attn = self._spans(context, read=True) * self._attention_flops_per_context_token
        idx = self._n_global * _floats(context) * self._index_flops_per_pair
        return attn, idx

    # ----- FLOPs ---------------------------------------------------------------------------
    # A lower bound charges each operation its cheapest valid algorithm. For MLA that differs
    # between decode and prefill: decode attends in the latent ("absorbed" form: no per-head
    # K/V is ever built, 2 n_h (2 r + d_rope) FLOP per pair); prefill builds per-head K and V
    # once per token (the kv_b_proj matmul, already in 2 N_mm) and attends with ordinary heads
    # (2 n_h (d_qk + d_v) per pair, 3.4x fewer for DeepSeek-V3).
    @cached_property
    def _attention_flops_per_context_token(self) -> float:
        """Decode FLOPs per (query, key) pair per layer: QK^T and AV, 2 FLOP per multiply-add."""
        if self.kv_lora_rank is not None:  # absorbed form: scores and values in the latent
            return 2 * self.n_heads * (2 * self.kv_lora_rank + self.qk_rope_head_dim)
        return 4 * self.n_heads * self.head_dim

    @cached_property  # a frozen model: computed once (a scalar step reads it per call)
    def _prefill_flops_per_pair(self) -> float:
        """Prefill FLOPs per (query, key) pair per layer (MLA un-absorbed: per-head K and V)."""
        if self.kv_lora_rank is not None:
            d_qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            return 2 * self.n_heads * (d_qk + self.v_head_dim)
        return 4 * self.n_heads * self.head_dim

    @cached_property  # a frozen model: computed once (a scalar step reads it per call)
    def _mla_expand_flops_per_token(self) -> float:
        """FLOPs per layer to expand one cached latent into per-head K (nope part) and V."""
        return 2.0 * self.kv_lora_rank * self.n_heads * (self.qk_nope_head_dim + self.v_head_dim)

    @cached_property
    def _index_flops_per_pair(self) -> float:
        """Indexer FLOPs per (query, cached token) per layer: h dot products of width d, then a
        ReLU-weighted sum over the h heads (2 h (d + 1)); 0 without an indexer."""
        if not self.has_indexer:
            return 0.0
        return 2.0 * self.index_n_heads * (self.index_head_dim + 1)

    def attention_flops_per_token(self, context):
        """Attention-kernel FLOPs (QK^T and AV) for one decoded token over `context` tokens (all
        layers).

        Sparse attention counts the top-k tokens attended; the indexer that picks them is
        :meth:`indexer_flops_per_token`.
        """
        context = self.check_context(context)
        return self._decode_flops(context)[0]

    def indexer_flops_per_token(self, context):
        """Indexer FLOPs for one decoded token: it scores every cached token in every global layer.

        The indexer computes in fp8 (DeepSeek-V3.2), so the bounds time these FLOPs at the chip's
        fp8 peak where it has one. 0 for a model without an indexer.
        """
        context = self.check_context(context)
        return self._decode_flops(context)[1]

    def flops_per_token(self, context=0):
        """Forward FLOPs for one decoded token: 2 N_matmul + attention (+ indexer)
        over `context` tokens."""
        return (2.0 * self.matmul_params_active + self.attention_flops_per_token(context)
                + self.indexer_flops_per_token(context))

    def _prefill_pairs(self, prompt, past, cap):
        """(query, key) pairs per layer when `prompt` tokens follow `past` ones, each query
        attending to at most `cap` keys (None: all earlier tokens, causal)."""
        def tri(n):  # sum_{i=1..n} i
            return n * (n + 1) / 2

        if cap is None:
            return tri(past + prompt) - tri(past)
        lo = min if type(prompt) is float and type(past) is float else np.minimum
        full = tri(lo(past + prompt, cap)) - tri(lo(past, cap))
        over = prompt - (lo(past + prompt, cap) - lo(past, cap))
        return full + over * cap

    def prefill_attention_flops(self, prompt, past=0):
        """Attention FLOPs to prefill `prompt` new tokens after `past` cached ones (causal).

        Token i of the prompt attends to past + i tokens; sliding layers to at most the window,
        sparse layers to the top-k. MLA pays the un-absorbed price per pair; pairs with the
        ``past`` tokens are charged the cheaper of (a) expanding each cached latent once and
        attending un-absorbed and (b) attending to the latents in the absorbed form. The indexer's
        FLOPs are :meth:`prefill_indexer_flops`.
        """
        prompt = positive("prompt", prompt)
        past = self.check_context(past, "past")
        self.check_context(prompt + past, "past + prompt")
        return self._prefill_attention_flops(prompt, past)

    def _prefill_attention_flops(self, prompt, past):
        """:meth:`prefill_attention_flops` without the argument checks (checked floats or
        arrays; the scalar fast path of ``step.prefill_step`` checks them once)."""
        lo = min if type(prompt) is float and type(past) is float else np.minimum
        pairs = self._prefill_pairs(prompt, past, self.sparse_attention_topk)
        flops = self._n_global * pairs * self._prefill_flops_per_pair
        if self.kv_lora_rank is not None:
            topk = self.sparse_attention_topk
            held = past if topk is None else lo(past, topk)
            past_pairs = lo(prompt * held, pairs)
            extra = lo(
                held * self._mla_expand_flops_per_token,
                past_pairs * (self._attention_flops_per_context_token
                              - self._prefill_flops_per_pair))
            flops = flops + self._n_global * extra
        if self.n_sliding_layers:
            flops = flops + (self.n_sliding_layers
                             * self._prefill_pairs(prompt, past, self.sliding_window)
                             * self._prefill_flops_per_pair)
        return flops

    def prefill_indexer_flops(self, prompt, past=0):
        """Indexer FLOPs to prefill `prompt` tokens after `past`:
        every query scores every earlier token."""
        prompt = positive("prompt", prompt)
        past = self.check_context(past, "past")
        return self._prefill_indexer_flops(prompt, past)

    def _prefill_indexer_flops(self, prompt, past):
        """:meth:`prefill_indexer_flops` without the argument checks."""
        return self._n_global * self._prefill_pairs(prompt, past, None) * self._index_flops_per_pair


# ----- where the parameters are ---------------------------------------------------------------
# Counting helpers: the parameters by part, the 12 L D^2 approximation, and the context at
# which attention's FLOPs catch up with the matmul FLOPs.


@dataclass(frozen=True)
class ParameterBreakdown:
    """Where one model's parameters are (all layers summed), as counted from its fields."""

    model: str
    embedding: int  # input embedding V x D (for a tied model also the LM head)
    lm_head: int  # untied output projection V x D; 0 when tied
    attention: int  # Q, K, V, O (or MLA's projections) of every layer
    dense_mlp: int  # the MLPs of the dense layers (all layers of a dense model)
    routed_experts: int  # every routed expert of every MoE layer
    routed_experts_active: int  # the k experts per MoE layer one token uses
    shared_experts: int  # shared experts of every MoE layer
    routers: int  # router weights of every MoE layer
    norms: int  # norm scales

    @property
    def total(self) -> int:
        """N_tot (equals ``Model.total_params``)."""
        return (self.embedding + self.lm_head + self.attention + self.dense_mlp
                + self.routed_experts + self.shared_experts + self.routers + self.norms)

    @property
    def active(self) -> int:
        """N_act (equals ``Model.active_params``)."""
        return self.total - self.routed_experts + self.routed_experts_active

    @property
    def embeddings(self) -> int:
        """Input embedding plus untied LM head."""
        return self.embedding + self.lm_head

    @property
    def mlp(self) -> int:
        """Every MLP-side parameter: dense MLPs, routed and shared experts, routers."""
        return self.dense_mlp + self.routed_experts + self.shared_experts + self.routers

    @property
    def non_embedding(self) -> int:
        """N_tot without the input embedding and LM head (Kaplan et al.'s N)."""
        return self.total - self.embeddings

    @property
    def mlp_share(self) -> float:
        """Fraction of the non-embedding parameters in the MLPs / experts."""
        return self.mlp / self.non_embedding

    @property
    def embedding_share(self) -> float:
        """Fraction of N_tot in the input embedding and LM head."""
        return self.embeddings / self.total

    @property
    def embedding_share_active(self) -> float:
        """Fraction of N_act in the input embedding and LM head."""
        return self.embeddings / self.active


def parameter_breakdown(model: Model) -> ParameterBreakdown:
    """Split ``model.total_params`` into embedding, LM head, attention, MLP/experts and norms."""
    n_dense = model.n_layers - model.n_moe_layers
    return ParameterBreakdown(
        model=model.name,
        embedding=model.embedding_params,
        lm_head=model.lm_head_params,
        attention=model.n_layers * model.attention_params_per_layer,
        dense_mlp=n_dense * model.dense_mlp_params,
        routed_experts=model.n_moe_layers * model.n_experts * model.expert_params,
        routed_experts_active=model.n_moe_layers * model.experts_per_token * model.expert_params,
        shared_experts=model.n_moe_layers * model.shared_expert_params,
        routers=model.n_moe_layers * model.router_params,
        norms=model.norm_params,
    )


def kaplan_params(model: Model) -> int:
    """The classic approximation N ~ 12 L D^2 (Kaplan et al. 2020, Sec. 2.1).

    Per layer: 4 D^2 for Q, K, V, O with n_q d_h = D, plus 8 D^2 for a two-matrix MLP of width
    4D (a SwiGLU of width 8D/3 has the same count). It leaves out embeddings, norms and biases,
    and it does not hold for GQA/MQA (fewer K/V weights), other MLP widths, or MoE.
    """
    return 12 * model.n_layers * model.d_model**2


def attention_crossover_context(model: Model) -> float:
    """Context S at which one new token's attention FLOPs equal its matmul FLOPs (2 N_mm).

    Below S the ``2 x active parameters`` rule holds to within a factor of 2; far below it,
    attention is a small correction. For dense MHA/GQA models with n_q d_h = D it is about
    6 D to 7 D. Sliding-window and sparse (top-k) layers cap attention's span; when the caps
    keep attention below the matmul FLOPs at every context, the result is ``inf``. A
    sparse-attention indexer's scoring FLOPs (every cached token, every step) are counted, so a
    model with one always crosses. The result may exceed ``model.max_context``.
    """
    target = 2.0 * model.matmul_params_active / model._attention_flops_per_context_token
    s, ok = model.context_for_read_span(target)
    if not model.has_indexer:
        return float(s) if bool(ok) else float("inf")
    # A sparse-attention indexer scores every cached token: its FLOPs grow without bound, so the
    # crossing always comes. The sum is piecewise linear in S (kink at the top-k): solve it there.
    k = float(model.sparse_attention_topk)

    def attention(S):
        return sum(model._decode_flops(S))

    full = 2.0 * model.matmul_params_active
    if attention(k) >= full:
        return float(k * full / attention(k)) if attention(k) > 0 else float("inf")
    slope = attention(k + 1.0) - attention(k)
    return float(k + (full - attention(k)) / slope)


# ----- the catalogue --------------------------------------------------------------------------

def _index(entries) -> dict[str, Model]:
    return index_by_name("model", entries)


def get(name: str) -> Model:
    """The catalogue model called `name`; KeyError with close matches if there is none."""
    return lookup("model", name, CATALOGUE)


def names() -> list[str]:
    return list(CATALOGUE)


def all_models() -> list[Model]:
    return list(CATALOGUE.values())


from ._model_catalogue import MODELS  # noqa: E402  (plain data; imports Model from here)

#: The catalogue, name -> entry, built from the plain tuple in ``_model_catalogue``.
CATALOGUE: dict[str, Model] = _index(MODELS)

#: Character.AI's production attention (multiquery, local/global layers, cross-layer KV sharing)
#: cuts the KV cache "by more than 20x" against GQA [characterai2024inference].
CHARACTERAI_KV_REDUCTION = 20


# ----- multi-head baselines -------------------------------------------------------------------
# A KV-cache saving is always "against a multi-head twin". Two chapters state the same savings, so
# the twins are defined once, here.

from typing import NamedTuple  # noqa: E402  (kept here so this section merges cleanly)


class MhaEquivalent(NamedTuple):
    """A model's multi-head twin and how many times more KV cache per token the twin holds."""

    model: Model  # the twin: same layers and query heads, one K and one V head per query head
    kv_ratio: float  # twin's KV bytes per token / the model's, both in bf16


def mha_equivalent(model: Model) -> MhaEquivalent:
    """The multi-head (MHA) twin of ``model``: every query head gets its own K and V head.

    GQA/MQA: ``n_kv_heads = n_heads`` at the model's ``head_dim``. MLA (DeepSeek-V2/V3): K heads
    of ``qk_nope_head_dim`` and V heads of ``v_head_dim`` (both 128 in V3), the comparison of
    DeepSeek-V2's Table 1 (MHA caches 2 n_h d_h l numbers per token). The decoupled RoPE key
    (``qk_rope_head_dim``) is left out: MLA needs it only because RoPE blocks absorbing the key
    up-projection; an MHA model rotates its own keys. So V3's twin caches 2 x 128 x 128 numbers
    per layer, not 128 x (192 + 192). Only the KV cache of the twin is meant to be compared;
    its parameter count is not the model's. An MHA model is its own twin (ratio 1).
    """
    if not isinstance(model, Model):
        raise TypeError(f"model: got {model!r}; expected a Model")
    if model.kv_lora_rank is not None:
        if model.qk_nope_head_dim != model.v_head_dim:
            # One head_dim per Model: a twin with K and V of different widths is not representable.
            raise ValueError(f"model: {model.name!r} has qk_nope_head_dim={model.qk_nope_head_dim} "
                             f"!= v_head_dim={model.v_head_dim}; mha_equivalent needs them equal")
        twin = model.replace(name=f"{model.name} as MHA", kv_lora_rank=None, q_lora_rank=None,
                             qk_nope_head_dim=None, qk_rope_head_dim=None, v_head_dim=None,
                             n_kv_heads=model.n_heads, head_dim=model.v_head_dim)
    elif model.n_kv_heads == model.n_heads:
        twin = model
    else:
        twin = model.replace(name=f"{model.name} as MHA", n_kv_heads=model.n_heads)
    return MhaEquivalent(twin, twin.kv_bytes_per_token(2) / model.kv_bytes_per_token(2))


def palm_multihead_baseline(n_kv_heads=64) -> MhaEquivalent:
    """Pope et al. (2022)'s multi-head baseline for PaLM 540B: K/V heads of 128 per layer.

    ``n_kv_heads=64`` (the default) is their Table 1 ("multihead, d_head 128"): PaLM's 48
    heads padded to 64, one per chip of 64 (their Sec. 4). 64 x 128 reproduces the table's
    1,320 / 330 tokens within 2% (tests/test_pope2022.py); 48 heads of 128 would give 35% more
    context and 48 of PaLM's 256 half as much. ``n_kv_heads=48`` gives each of PaLM's own 48
    query heads a K/V head of 128, the model of their Sec. 2.1 sentence "the KV cache totals
    3TB, which is 3 times the size of the model's parameters" (batch 512, context 2048: 3.04 TB
    in bf16, against 4.05 TB padded). The ratio is against the real multi-query PaLM (one K/V
    head of 256). Only the twin's KV cache is meant to be compared.
    """
    n_kv_heads = int(positive("n_kv_heads", n_kv_heads, integer=True))
    palm = get("PaLM-540B")
    name = ("PaLM 540B, multihead (Pope et al. 2022)" if n_kv_heads == 64
            else f"PaLM 540B, multihead, {n_kv_heads} K/V heads of 128")
    twin = palm.replace(name=name, n_heads=n_kv_heads, n_kv_heads=n_kv_heads,
                        head_dim=128)
    return MhaEquivalent(twin, twin.kv_bytes_per_token(1) / palm.kv_bytes_per_token(1))


#: This chapter's rows of the book's summary table (tradeoffs.summary_bounds gathers them).
SUMMARY = (
    SummaryRow("counting", "forward FLOPs per token", r"2 N_\text{mm}\ (+\ \text{attention})",
               "Llama 3 70B, no context (so no attention)",
               lambda lm: lm.model("Llama-3-70B").flops_per_token(0), lambda f: fmt_si(f, "FLOP"),
               by_formula=lambda lm: 2 * lm.model("Llama-3-70B").matmul_params_active),
    SummaryRow("counting", "KV bytes per token",
               r"b_\text{kv} = 2 L n_{kv} d_h \times \text{bytes}", "Llama 3 70B, bf16",
               lambda lm: lm.model("Llama-3-70B").kv_bytes_per_token(2), fmt_bytes,
               by_formula=lambda lm: 2 * (m := lm.model("Llama-3-70B")).n_layers * m.n_kv_heads
               * m.head_dim * 2),
)

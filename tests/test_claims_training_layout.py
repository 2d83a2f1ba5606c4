"""The rules of thumb of the chapter "Laying out a training run" (book/training_layout.ipynb),
asserted over the whole model catalogue.

When a rule fails for some model, the chapter's prose changes (its scope), not the test.

Sources: Rajbhandari et al. 2020 (rajbhandari2020zero) for the ZeRO stages' bytes per parameter;
Korthikanti et al. 2022 (korthikanti2022reducing) for 34 D + 5 n_q S bytes per token per layer;
Narayanan et al. 2021 (narayanan2021megatron) for the 1F1B and interleaved bubbles; Young 1974
and Daly 2006 (young1974first, daly2006higher) for the checkpoint interval; Dubey et al. 2024
(llama3_herd, Sec. 3.3.4) for 419 unexpected interruptions in 54 days. Expected values are
worked by hand from those formulas, never read off the library.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from claims import each, from_scratch

from llmmath import chips, models
from llmmath import layout as lay
from llmmath.kernel_rates import MATMUL_EFFICIENCY
from llmmath.plots.layout import published_runs
from llmmath.training import attention_training_flops_per_token

pytestmark = pytest.mark.physics

MODELS = models.all_models()
DENSE = [m for m in MODELS if not m.is_moe]
H100 = chips.get("H100-SXM")


def _pow2_below(x, top):
    return max(d for d in (1, 2, 4, 8) if d <= top and x % d == 0)


def _layout(m, **changes):
    """A layout every catalogue model admits: the largest TP of 1-8 dividing its heads and MLP
    width, two pipeline stages, 16 replicas."""
    widths = [m.n_heads] + ([m.d_ff] if not m.is_moe or m.n_dense_layers else [])
    tp = min(_pow2_below(w, 8) for w in widths)
    return lay.Layout(**{**dict(dp=16, tp=tp, pp=2), **changes})


# Claim: "ZeRO divides the state, not the activations": from ZeRO-0 to ZeRO-3 the state falls as
# N_chip (k + (16 - k)/dp), k = 16, 4, 2, 0, and the activations do not change.
@each("m", DENSE, ids=lambda m: m.name)
def test_zero_shares_the_state_not_the_activations(m):
    base = _layout(m)
    S = min(4096, m.max_context)
    n_chip = m.total_params / (base.tp * base.pp)
    acts = None
    for z, k in ((0, 16), (1, 4), (2, 2), (3, 0)):
        mem = lay.memory_per_chip(m, dataclasses.replace(base, zero_stage=z), S, 64)
        assert mem.states == pytest.approx(n_chip * (k + (16 - k) / base.dp), rel=1e-12)
        acts = mem.activations if acts is None else acts
        assert mem.activations == acts


# Claim: "activations: 34 D with selective recomputation, 34 D + 5 n_q S without, 2 D with full;
# divided by d_TP with sequence parallelism", times L/pp layers, b S tokens and 1F1B's pp
# micro-batches in flight. Korthikanti et al.'s count is of unfused attention, which stores the
# S x S scores; a fused kernel (the Layout default) keeps 34 D without recomputation too.
@each("m", MODELS, ids=lambda m: m.name)
def test_activations_by_recomputation(m):
    base = dataclasses.replace(_layout(m), fused_attention=False)
    S = min(4096, m.max_context)
    D, L = m.d_model, m.n_layers
    per = {"selective": 34 * D, "none": 34 * D + 5 * m.n_heads * S, "full": 2 * D * base.tp}
    for rc, a in per.items():
        mem = lay.memory_per_chip(m, dataclasses.replace(base, recompute=rc), S, 64)
        # 1F1B: min(pp, m) = 2 micro-batches of one sequence in flight on the first stage
        assert mem.activations == pytest.approx(L / 2 * 2 * S * a / base.tp, rel=1e-12), rc
    full, sel, none = (lay.memory_per_chip(m, dataclasses.replace(base, recompute=rc), S, 64)
                       .activations for rc in ("full", "selective", "none"))
    assert full < sel < none


# Claim: "the first stage holds all m micro-batches under GPipe, d_PP under 1F1B, and
# d_PP (1 + (d_PP - 1)/(d_PP v)) interleaved": 8 stages, 32 micro-batches, 4 chunks by hand.
def test_micro_batches_in_flight_by_schedule():
    assert lay.IN_FLIGHT["gpipe"](8, 32, 1) == 32
    assert lay.IN_FLIGHT["1f1b"](8, 32, 1) == 8
    assert lay.IN_FLIGHT["interleaved"](8, 32, 4) == pytest.approx(8 * (1 + 7 / 32))  # 9.75


# Claim: "no estimated MFU exceeds the best kernel rate it is charged at": over every dense
# model on H100s, on its own layout and on two chips of pure data parallelism (where compute is
# nearly the whole step, so a compute term too small shows), MFU <= the best matmul fraction.
@each("m", DENSE, ids=lambda m: m.name)
def test_mfu_never_exceeds_the_kernel_ceiling(m):
    from llmmath.kernel_rates import GEMM_EFFICIENCY_BY_ROWS

    rates = [MATMUL_EFFICIENCY["bf16"]] + [f for _, f in GEMM_EFFICIENCY_BY_ROWS[H100.name]["bf16"]]
    S = min(4096, m.max_context)
    for base in (_layout(m), lay.Layout(dp=2, zero_stage=1)):
        st = lay.step_time(m, base, lay.Cluster(H100, base.n_chips), 64, S)
        assert 0 < st.mfu <= max(rates) + 1e-12, str(base)


# Claim: "the bubble stretches the busy time by 1/(1 - beta), beta = (p-1)/(v m + p - 1)", and
# "fewer micro-batches per replica, a larger bubble" (Llama 3's 43% -> 41%): by hand for 16
# stages, 4 chunks, 32 and 16 micro-batches: 15/143 and 15/79.
def test_llama3_bubble_grows_with_data_parallelism():
    l405 = models.get("Llama-3.1-405B")
    steps = {}
    for dp, n in ((64, 8192), (128, 16384)):
        layout = lay.Layout(dp=dp, tp=8, pp=16, zero_stage=3, schedule="interleaved",
                            virtual_stages=4)
        steps[dp] = lay.step_time(l405, layout, lay.Cluster(H100, n), 2048, 8192)
    assert steps[64].bubble_fraction == pytest.approx(15 / 143, rel=1e-12)
    assert steps[128].bubble_fraction == pytest.approx(15 / 79, rel=1e-12)
    assert steps[128].mfu < steps[64].mfu


# Claim: "the estimate runs high": above the published utilisation for most modelled runs, and
# by a positive median difference; and
# "the planner's best is no slower than the published layout" wherever the published layout is
# among its candidates (ZeRO 1 or 3, at most 64 stages) and fits.
def test_published_runs_estimate_runs_high_and_planner_never_loses():
    runs = [r for r in published_runs() if "skip" not in r]
    assert len(runs) >= 5
    gaps = sorted(r["estimate"] - r["published"] for r in runs)
    assert sum(g > 0 for g in gaps) > len(gaps) / 2 and gaps[len(gaps) // 2] > 0, gaps
    for r in runs:
        layout = r["layout"]
        if r["fits"] and layout.zero_stage in (1, 3) and layout.pp <= 64 and layout.cp <= 16:
            assert r["best"].step.time <= r["step"].time * (1 + 1e-12), r["run"]


# Claim: "one unexpected interruption every 3.09 hours" for Llama 3: 54 x 24 / 419 = 3.093 h.
def test_llama3_mean_time_between_interruptions():
    li = lay.LLAMA3_INTERRUPTIONS
    assert li["days"] * 24 / li["unexpected"] == pytest.approx(3.093, abs=5e-4)


# Claim: "to first order the goodput at the optimum interval is 1 - sqrt(2 delta / M)" and
# "Young's and Daly's intervals agree when the checkpoint is short against M": for checkpoints
# of 10 s to a minute and M of 1 to 24 hours (delta/M under 2%), without restarts.
@each("M_h", [1, 3, 24])
@each("delta", [10.0, 33.0, 60.0])
def test_goodput_near_first_order_and_intervals_agree(M_h, delta):
    M = M_h * 3600.0
    young = float(lay.checkpoint_interval(M, delta, "young"))
    daly = float(lay.checkpoint_interval(M, delta, "daly"))
    assert young == pytest.approx(math.sqrt(2 * delta * M), rel=1e-12)
    assert abs(daly / young - 1) < 0.1
    lost = 1 - float(lay.goodput(daly, delta, M))
    assert lost == pytest.approx(math.sqrt(2 * delta / M), rel=0.25)


# Claim: "a restart is paid once per interruption": goodput with restart R is the goodput
# without it divided by e^{R/M} (Daly's complete model), so halving R gains e^{R/2M}.
def test_restart_divides_goodput_by_exp_r_over_m():
    M, delta, tau, R = 3 * 3600.0, 60.0, 1200.0, 600.0
    g0 = float(lay.goodput(tau, delta, M))
    assert float(lay.goodput(tau, delta, M, R)) == pytest.approx(g0 / math.exp(R / M), rel=1e-12)


def test_from_scratch_cell_agrees_with_the_library():
    ns = from_scratch(__file__)  # the cell tagged from-scratch, run alone
    # layout_memory against memory_per_chip (1F1B, selective recomputation, sequence
    # parallelism) and layout_step's compute and bubble against step_time at the same kernel
    # rates, for every dense model of the catalogue on three layouts and every ZeRO stage.
    eta_mm, eta_attn = 0.7, 0.6
    for m in DENSE:
        S = min(4096, m.max_context)
        for changes in ({}, {"pp": 4, "dp": 8}, {"pp": 1, "dp": 32}):
            base = _layout(m, **changes)
            for z in (0, 1, 2, 3):
                layout = dataclasses.replace(base, zero_stage=z)
                mb = 64 // layout.dp
                got = ns["layout_memory"](m.total_params, m.n_layers, m.d_model, S, layout.dp,
                                          layout.tp, layout.pp, z, 1, mb)
                lib = lay.memory_per_chip(m, layout, S, 64).total
                assert got == pytest.approx(lib, rel=1e-12), (m.name, changes, z)
            st = lay.step_time(m, base, lay.Cluster(H100, base.n_chips), 64, S,
                               matmul_efficiency=eta_mm, attention_efficiency=eta_attn)
            compute, bubble = ns["layout_step"](
                m.matmul_params_active, float(attention_training_flops_per_token(m, S)),
                64 * S, base.n_chips, H100.peak("bf16"), eta_mm, eta_attn, base.pp, 64 // base.dp)
            # the library also charges the norms' few weights at the matmul rate (4e-5 of a 7B)
            assert compute == pytest.approx(st.compute, rel=1e-4), m.name
            assert bubble == pytest.approx(st.bubble_fraction, rel=1e-12, abs=1e-15), m.name

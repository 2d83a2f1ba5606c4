"""Chapter 12: a model's lifetime compute."""

from __future__ import annotations

import ipywidgets as W

from .. import chips as _chips
from .. import models as _models
from .. import plots
from ..cost import chip_hour_price
from ..units import (
    fmt_count,
    fmt_si,
    fmt_usd,
)
from .explorer import (
    Explorer,
    _chip_picker,
    _figure,
    _model_picker,
    _sel,
    _table,
)

LIFETIME_EFFICIENCIES = [0.1, 0.2, 0.25, 1 / 3, 0.5, 1.0]


def lifetime_explorer(model="DeepSeek-V3", chip="H100-SXM", tokens_per_second=50e6, days=60,
                      decode_efficiency=1 / 3, rl_flops_per_param=3.0, fit="hoffmann", mfu=0.4):
    """Pre-training, RL and inference over one model's life: the serving rate and lifetime set the
    inference tokens, the equal-spend rule sets the pre-training and RL tokens; the figure puts
    the model on the fit's iso-loss curve beside the least-pre-training and least-total sizes.
    The panel prices each third on ``chip`` at training utilisation ``mfu`` (decode's FLOPs run
    at ``decode_efficiency`` times that)."""
    from ..lifetime import (
        SCALING_FITS,
        equal_spend_tokens,
        lifetime_compute,
        lifetime_optimum,
        scaling_loss,
        served_tokens,
    )
    from ..training import overtraining_factor
    from ..units import fmt_percent

    controls = {
        "model": _model_picker(model), "chip": _chip_picker(chip),
        "tokens_per_second": _sel("tokens/s", [1e6, 3e6, 10e6, 30e6, 50e6, 100e6, 200e6, 500e6],
                                  tokens_per_second, fmt=lambda r: fmt_count(r)),
        "days": _sel("days served", [7, 30, 60, 90, 180, 365, 730], days),
        "decode_efficiency": _sel("decode u", LIFETIME_EFFICIENCIES, decode_efficiency,
                                  fmt=lambda u: f"1/{1 / u:.0f}" if u < 1 else "1"),
        "rl_flops_per_param": W.FloatSlider(value=rl_flops_per_param, min=2.0, max=6.0, step=0.5,
                                            description="RL FLOP/param", readout_format=".1f"),
        "fit": W.Dropdown(options=list(SCALING_FITS), value=fit, description="loss fit"),
    }
    state = {}

    def compute(v):
        m = _models.get(v["model"])
        n = float(m.active_params)
        u, r = v["decode_efficiency"], v["rl_flops_per_param"]
        d_inf = served_tokens(v["tokens_per_second"], v["days"] * 86400.0)
        eq = equal_spend_tokens(d_inf, u, r)
        loss = scaling_loss(n, eq.pretrain_tokens, v["fit"])
        kw = dict(loss=loss, inference_tokens=d_inf, decode_efficiency=u, fit=v["fit"],
                  mark_params=n)
        if "fig" not in state:
            state["fig"] = _figure(plots.lifetime_cost_vs_params, **kw)
        else:
            state["fig"].update(**kw)
        c = lifetime_compute(m, eq.pretrain_tokens, eq.rl_tokens, d_inf, u, r)
        o = lifetime_optimum(loss, d_inf, u, v["fit"])
        ch = _chips.get(v["chip"])
        dt, _ = ch.resolve_dtype("bf16")
        price, _ = chip_hour_price(ch)
        chip_h = c.pretrain / (ch.peak(dt) * mfu) / 3600.0  # one third, at training's rate
        rows = [("inference tokens D_inf", fmt_count(d_inf)),
                ("pre-training tokens (equal spend)", fmt_count(eq.pretrain_tokens)),
                ("RL tokens (equal spend)", fmt_count(eq.rl_tokens)),
                ("past compute-optimal", f"{overtraining_factor(m, eq.pretrain_tokens):,.0f}x"),
                ("tokens per parameter", f"{eq.pretrain_tokens / n:,.0f}"),
                ("each of the three costs", fmt_si(c.pretrain, "FLOP")),
                (f"chip-hours per third ({ch.name}, MFU {mfu:.0%})", fmt_count(chip_h)),
                ("dollars per third", fmt_usd(chip_h * price)),
                ("inference $ per million tokens", fmt_usd(chip_h * price / d_inf * 1e6)),
                ("lifetime total", fmt_si(c.total, "FLOP")),
                (f"loss ({v['fit']} fit)", f"{loss:.3f}"),
                ("least-total size at that loss", f"{o.optimum_params / 1e9:,.1f} bn"),
                ("equal spend costs more by", fmt_percent(o.equal_excess))]
        return state["fig"], _table(rows)

    return Explorer("lifetime_explorer", controls, compute, main="decode_efficiency")

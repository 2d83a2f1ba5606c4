"""What explorer panels show about a run's cost, as physics functions (issue 30): chip-hours of
a run and of a FLOP budget, their dollars, and decode speed per user."""

from __future__ import annotations

import pytest

from llmmath import chips, cost, models, training
from llmmath.roofline import decode_step

H100, B200 = chips.get("H100-SXM"), chips.get("B200")
LLAMA = models.get("Llama-3-70B")


def test_chip_hours_of_a_run():
    assert training.chip_hours(8, 3600.0) == pytest.approx(8.0)
    assert training.chip_hours(1024, 86400.0) == pytest.approx(24 * 1024)
    with pytest.raises(ValueError, match="n_chips"):
        training.chip_hours(0, 3600.0)
    with pytest.raises(ValueError, match="time"):
        training.chip_hours(8, -1.0)


def test_chip_hours_of_a_flop_budget_inverts_mfu_from_chip_hours():
    hours = training.compute_chip_hours(1e24, H100, 0.4)
    assert hours == pytest.approx(1e24 / (989e12 * 0.4) / 3600, rel=1e-3)  # H100 SXM bf16 dense
    assert training.mfu_from_chip_hours(1e24, hours, H100) == pytest.approx(0.4)
    # a training run's chip-hours, both ways: n x its wall-clock time, or its FLOPs at that MFU
    t = training.training_time(LLAMA, 15e12, H100, 2048, 0.4)
    assert training.chip_hours(2048, t) == pytest.approx(
        training.compute_chip_hours(training.training_flops(LLAMA, 15e12), H100, 0.4))
    with pytest.raises(ValueError, match="mfu"):
        training.compute_chip_hours(1e24, H100, 1.5)


def test_dollars_of_chip_hours():
    assert cost.chip_hours_cost(100.0, H100, price_per_chip_hour=2.5) == pytest.approx(250.0)
    price, _ = cost.chip_hour_price(B200)
    assert cost.chip_hours_cost(10.0, B200) == pytest.approx(10 * price)
    assert cost.chip_hours_cost_per_million_tokens(
        100.0, 1e9, H100, price_per_chip_hour=3.0) == pytest.approx(0.3)
    with pytest.raises(ValueError, match="tokens"):
        cost.chip_hours_cost_per_million_tokens(1.0, 0.0, H100)


def test_speed_per_user_is_one_token_per_step():
    s = decode_step(LLAMA, H100, 64, 4096, n_chips=8)
    assert cost.tokens_per_second_per_user(s) == pytest.approx(1 / s.time)
    assert cost.tokens_per_second(s) == pytest.approx(64 * cost.tokens_per_second_per_user(s))
    f = cost.latency_cost_frontier(LLAMA, H100, [64], 4096, n_chips=8)
    assert cost.tokens_per_second_per_user(s) == pytest.approx(
        float(f.tokens_per_second_per_user[0]))

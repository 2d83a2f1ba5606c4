"""llmmath.lifetime: a model's lifetime compute (chapter 12).

Expected values are computed by hand below (the episode's numbers and their corrections, the
Chinchilla fits' closed forms), never read off the library. Sources: the episode
(dwarkesh2026pope) and its flashcards 16-20; Hoffmann et al. 2022 (hoffmann2022chinchilla):
eq. 10 (E = 1.69, A = 406.4, B = 410.7, alpha = 0.34, beta = 0.28) and Table 3 (Approach 1);
Besiroglu et al. 2024 (besiroglu2024chinchilla), Table 1 (E = 1.8172, A = 482.01, B = 2085.43,
alpha = 0.3478, beta = 0.3658).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from llmmath import lifetime as lt
from llmmath import models

DAY = 86400
SIXTY_DAYS = 60 * DAY  # 5,184,000 s


# ----- the episode's numbers, corrected ----------------------------------------------------------

def test_fifty_million_tokens_per_second_for_sixty_days_is_259_trillion_not_200():
    # 50e6 x 5,184,000 = 2.592e14 (flashcard 19 rounds it down to "about 200T")
    d = lt.served_tokens(50e6, SIXTY_DAYS)
    assert d == pytest.approx(2.592e14, rel=1e-12)
    assert d / 200e12 == pytest.approx(1.296, rel=1e-12)


def test_all_models_at_500m_tokens_per_second_for_two_months():
    # the episode's across-all-models figure: 500M x 5,184,000 = 2.592e15 ("2.6e15")
    assert lt.served_tokens(500e6, SIXTY_DAYS) == pytest.approx(2.592e15, rel=1e-12)


def test_equal_spend_at_one_third_gives_d_pre_equal_d_inf_and_one_and_a_half_d_rl():
    # flashcard 18: 6 D_pre = 3 D_RL x 3 = 2 D_inf x 3  ->  D_pre = 1.5 D_RL = D_inf
    e = lt.equal_spend_tokens(2.592e14, decode_efficiency=1 / 3, rl_flops_per_param=3)
    assert e.pretrain_tokens == pytest.approx(2.592e14, rel=1e-12)
    assert e.rl_tokens == pytest.approx(2.592e14 / 1.5, rel=1e-12)
    assert e.inference_tokens == 2.592e14


def test_equal_spend_at_one_fifth():
    # 6 D_pre = 2 D_inf x 5  ->  D_pre = 10/6 D_inf = 4.32e14; RL unchanged (also at decode's rate)
    e = lt.equal_spend_tokens(2.592e14, decode_efficiency=1 / 5, rl_flops_per_param=3)
    assert e.pretrain_tokens == pytest.approx(4.32e14, rel=1e-12)
    assert e.rl_tokens == pytest.approx(1.728e14, rel=1e-12)


def test_a_100b_active_model_is_about_130x_past_compute_optimal_not_100x():
    # Chinchilla: 20 x 100e9 = 2e12 tokens; 2.592e14 / 2e12 = 129.6 (the episode's 200T gives 100)
    d = lt.served_tokens(50e6, SIXTY_DAYS)
    assert lt.equal_spend_overtraining(100e9, d) == pytest.approx(129.6, rel=1e-12)
    assert lt.equal_spend_overtraining(100e9, 200e12) == pytest.approx(100.0, rel=1e-12)
    # at decode's 1/5: 4.32e14 / 2e12 = 216
    assert lt.equal_spend_overtraining(100e9, d, 1 / 5) == pytest.approx(216.0, rel=1e-12)


def test_lifetime_compute_three_equal_thirds():
    # N = 1e11: 6 x 1e11 x 2.592e14 = 1.5552e26; RL 3 x 1e11 x 1.728e14 x 3;
    # inference 2 x 1e11 x 2.592e14 x 3
    c = lt.lifetime_compute(100e9, 2.592e14, 1.728e14, 2.592e14, 1 / 3, 3)
    for part in (c.pretrain, c.rl, c.inference):
        assert part == pytest.approx(1.5552e26, rel=1e-12)
    assert c.total == pytest.approx(3 * 1.5552e26, rel=1e-12)
    assert c.shares == pytest.approx((1 / 3, 1 / 3, 1 / 3), rel=1e-12)


def test_lifetime_compute_uses_active_parameters_and_allows_no_rl():
    ds = models.get("DeepSeek-V3")
    c = lt.lifetime_compute(ds, 14.8e12, 0, 1e12, decode_efficiency=0.5)
    assert c.pretrain == pytest.approx(6 * ds.active_params * 14.8e12, rel=1e-12)
    assert c.rl == 0
    assert c.inference == pytest.approx(2 * ds.active_params * 1e12 / 0.5, rel=1e-12)


# ----- the Chinchilla fits -----------------------------------------------------------------------

def test_hoffmann_loss_by_hand():
    # 70e9^0.34 = exp(0.34 ln 7e10); 1.4e12^0.28 = exp(0.28 ln 1.4e12)
    n_term = 406.4 / math.exp(0.34 * math.log(70e9))
    d_term = 410.7 / math.exp(0.28 * math.log(1.4e12))
    assert n_term == pytest.approx(0.0835, abs=5e-4)   # by hand: 406.4 / e^8.4905 = 406.4 / 4,868
    assert d_term == pytest.approx(0.1632, abs=5e-4)   # by hand: 410.7 / e^7.8308 = 410.7 / 2,517
    assert lt.scaling_loss(70e9, 1.4e12, "hoffmann") == pytest.approx(1.69 + n_term + d_term,
                                                                       rel=1e-12)


def test_tokens_for_loss_inverts_the_fit():
    for fit in lt.SCALING_FITS:
        for n in (1e9, 37e9, 405e9):
            d = 15e12
            loss = lt.scaling_loss(n, d, fit)
            assert lt.tokens_for_loss(n, loss, fit) == pytest.approx(d, rel=1e-9)


def test_a_loss_the_model_cannot_reach_is_refused_by_name():
    # 1e9 parameters: E + A / N^alpha = 1.69 + 406.4 / 1e9^0.34 = 1.69 + 406.4 / 1,148 = 2.044
    with pytest.raises(ValueError, match="loss.*active_params"):
        lt.tokens_for_loss(1e9, 2.0, "hoffmann")
    with pytest.raises(ValueError, match="loss"):
        lt.lifetime_optimum(1.6, 1e12)  # below E = 1.69


def test_approach_1_is_about_20_tokens_per_parameter():
    # Hoffmann et al. Table 3: 8.0B/400M = 20.0 ... 216.2T/10T = 21.6
    ratios = [d / n for n, d in lt.CHINCHILLA_APPROACH1]
    assert min(ratios) == pytest.approx(20.0, rel=1e-9)
    assert max(ratios) == pytest.approx(22.39, abs=0.01)  # 1.5T / 67B


def test_compute_optimal_ratio_closed_form_and_the_spread_between_fits():
    # Besiroglu et al.: G = (0.3478 x 482.01 / (0.3658 x 2085.43))^(1/0.7136) = 0.1196;
    # at Chinchilla's 5.76e23 FLOP, N = G (9.6e22)^0.5126 = 7.2e10 and D = 9.6e22 / N = 1.33e12:
    # about 18 tokens per parameter, close to 20 as the refit's authors say
    g = (0.3478 * 482.01 / (0.3658 * 2085.43)) ** (1 / (0.3478 + 0.3658))
    n = g * (5.76e23 / 6) ** (0.3658 / (0.3478 + 0.3658))
    assert n == pytest.approx(7.22e10, rel=0.01)
    assert lt.compute_optimal_ratio(5.76e23, "besiroglu") == pytest.approx(5.76e23 / 6 / n**2,
                                                                           rel=1e-9)
    assert 15 < lt.compute_optimal_ratio(5.76e23, "besiroglu") < 22
    # the rounded published fit (alpha 0.34 > beta 0.28) asks for far more tokens, and more with
    # compute
    h = [lt.compute_optimal_ratio(c, "hoffmann") for c in (5.76e23, 1e25, 1e27)]
    assert h[0] > 60 and h[0] < h[1] < h[2]


def test_loss_gap_is_zero_at_the_optimum_and_positive_elsewhere():
    for fit in lt.SCALING_FITS:
        c = 1e25
        k = lt.compute_optimal_ratio(c, fit)
        assert lt.loss_gap(c, k, fit) == pytest.approx(0.0, abs=1e-12)
        assert lt.loss_gap(c, 10 * k, fit) > 0 and lt.loss_gap(c, k / 10, fit) > 0


# ----- the exact optimum beside the equal-spend rule ---------------------------------------------

@pytest.mark.parametrize("fit", list(lt.SCALING_FITS))
@pytest.mark.parametrize("u", [1 / 3, 1 / 5])
def test_lifetime_optimum_satisfies_its_first_order_condition(fit, u):
    d_inf = 2.592e14
    loss = lt.scaling_loss(100e9, lt.equal_spend_tokens(d_inf, u).pretrain_tokens, fit)
    o = lt.lifetime_optimum(loss, d_inf, u, fit)
    f = lt.SCALING_FITS[fit]

    def total(n):
        return 6 * n * lt.tokens_for_loss(n, loss, fit) + 2 * n * d_inf / u

    # a minimum: neighbours cost more
    assert total(o.optimum_params) <= total(o.optimum_params * 1.01)
    assert total(o.optimum_params) <= total(o.optimum_params / 1.01)
    # C_inf / C_pre = (alpha / beta) x - 1, x = (A / N^alpha) / (B / D^beta)
    n, d = o.optimum_params, o.optimum_tokens
    x = (f.A / n**f.alpha) / (f.B / d**f.beta)
    assert o.optimum_inference_over_pretrain == pytest.approx(f.alpha / f.beta * x - 1, rel=1e-6)
    # the equal-spend size is the 100B model the loss was built from (u enters both sides)
    assert o.equal_params == pytest.approx(100e9, rel=1e-6)
    assert o.optimum_total <= o.equal_total <= o.chinchilla_total * 10
    assert o.optimum_params < o.chinchilla_params
    # least pre-training: x = beta / alpha there
    nc = o.chinchilla_params
    xc = (f.A / nc**f.alpha) / (f.B / o.chinchilla_tokens**f.beta)
    assert xc == pytest.approx(f.beta / f.alpha, rel=1e-6)


def test_equal_spend_beside_the_optimum_for_the_episodes_model():
    # the 100B model on 259.2T tokens: Hoffmann's fit puts the optimum near it (equal spend under
    # 2% dearer); Besiroglu's refit puts it at a larger model on fewer tokens (about 20% dearer)
    d = 2.592e14
    h = lt.lifetime_optimum(lt.scaling_loss(100e9, d, "hoffmann"), d, 1 / 3, "hoffmann")
    b = lt.lifetime_optimum(lt.scaling_loss(100e9, d, "besiroglu"), d, 1 / 3, "besiroglu")
    assert 0 < h.equal_excess < 0.02
    assert 0.1 < b.equal_excess < 0.3
    assert b.optimum_params > 100e9 and b.optimum_tokens < d


@pytest.mark.parametrize("bad", [0, 1.5, -0.1, float("nan")])
def test_decode_efficiency_must_be_a_fraction(bad):
    with pytest.raises(ValueError, match="decode_efficiency"):
        lt.equal_spend_tokens(1e12, bad)


def test_unknown_fit_and_arrays_to_the_solver_are_refused_by_name():
    with pytest.raises(ValueError, match="fit"):
        lt.scaling_loss(1e9, 1e12, "kaplan")
    with pytest.raises(TypeError, match="loss"):
        lt.lifetime_optimum(np.array([2.0, 2.1]), 1e12)


def test_arrays_broadcast():
    d = lt.served_tokens(np.array([10e6, 50e6]), SIXTY_DAYS)
    assert d == pytest.approx([5.184e13, 2.592e14], rel=1e-12)
    f = lt.equal_spend_overtraining(100e9, 2.592e14, np.array([1 / 3, 1 / 5]))
    assert f == pytest.approx([129.6, 216.0], rel=1e-12)


# ----- issue 20: closed forms the solver must meet, and the edges of its domain ------------------

HOFFMANN = (1.69, 406.4, 410.7, 0.34, 0.28)  # E, A, B, alpha, beta: Hoffmann et al. eq. 10


def _chinchilla_params_by_hand(loss, e, a, alpha, beta):
    # least pre-training on the iso-loss curve: x = beta / alpha, so the parameter term is
    # A / N^alpha = (L - E) beta / (alpha + beta),
    # i.e. N = (A (alpha + beta) / ((L - E) beta))^(1/alpha)
    return (a * (alpha + beta) / ((loss - e) * beta)) ** (1 / alpha)


@pytest.mark.parametrize("loss", [2.0, 1000.0])
def test_lifetime_optimum_chinchilla_point_and_equal_spend_tokens_by_hand(loss):
    # 1000 nats is absurd as a language model, but the fit's algebra holds there too, and there
    # every candidate model has fewer than one parameter (the solver must not assume N > 1)
    e, a, b, alpha, beta = HOFFMANN
    d_inf, u = 1e12, 1 / 3
    o = lt.lifetime_optimum(loss, d_inf, u, "hoffmann")
    assert (o.loss, o.inference_tokens, o.decode_efficiency, o.fit) == (loss, d_inf, u, "hoffmann")
    n_chin = _chinchilla_params_by_hand(loss, e, a, alpha, beta)
    assert o.chinchilla_params == pytest.approx(n_chin, rel=1e-9)
    # data term there: B / D^beta = (L - E) alpha / (alpha + beta)
    d_chin = (b * (alpha + beta) / ((loss - e) * alpha)) ** (1 / beta)
    assert o.chinchilla_tokens == pytest.approx(d_chin, rel=1e-9)
    # equal spend: 6 N D_pre = 2 N D_inf / u, so D_pre = D_inf / (3 u) = 1e12 whatever N is
    # (1e-8: near the smallest model that reaches 1000 nats, D is steep in N)
    assert o.equal_tokens == pytest.approx(d_inf / (3 * u), rel=1e-8)
    assert o.equal_total == pytest.approx(2 * 6 * o.equal_params * d_inf / (3 * u), rel=1e-8)


def test_lifetime_optimum_when_inference_is_cheaper_than_chinchilla_pre_training():
    # loss 2.0 and only 3e11 inference tokens at u = 1/3: D_pre = D_inf / (3u) = 3e11 tokens,
    # fewer than the Chinchilla point's D (1.21e12 by the closed form above), so the equal-spend
    # model is larger than Chinchilla's; from the fit, N_eq = (A / (L - E - B / D^beta))^(1/alpha)
    e, a, b, alpha, beta = HOFFMANN
    d_inf, u, loss = 3e11, 1 / 3, 2.0
    o = lt.lifetime_optimum(loss, d_inf, u)
    d_pre = d_inf / (3 * u)
    n_eq = (a / (loss - e - b / d_pre**beta)) ** (1 / alpha)
    assert o.equal_params == pytest.approx(n_eq, rel=1e-9)
    assert o.equal_tokens == pytest.approx(d_pre, rel=1e-9)
    assert o.equal_params > o.chinchilla_params


def test_lifetime_optimum_needs_inference_that_can_match_pre_training():
    # pre-training costs 6 N D(N) >= 6 N D_min with D_min = (B / (L - E))^(1/beta), the tokens an
    # infinitely large model needs; inference costs 2 N D_inf / u, so equal spend exists only if
    # D_inf > 3 u D_min. At loss 2.0: D_min = (410.7 / 0.31)^(1/0.28) = 1.4e11
    e, a, b, alpha, beta = HOFFMANN
    u = 1 / 3
    d_min = (b / (2.0 - e)) ** (1 / beta)
    assert d_min == pytest.approx(1.4e11, rel=0.05)
    with pytest.raises(ValueError, match="^inference_tokens: .*allowed values are larger"):
        lt.lifetime_optimum(2.0, 0.9 * 3 * u * d_min, u)
    o = lt.lifetime_optimum(2.0, 1.1 * 3 * u * d_min, u)
    assert o.equal_tokens == pytest.approx(1.1 * d_min, rel=1e-9)


def test_with_endless_inference_the_optimum_is_the_smallest_model_that_reaches_the_loss():
    # the loss is out of reach below N_min = (A / (L - E))^(1/alpha) = (406.4 / 0.31)^(1/0.34)
    # = 1.477e9; with 1e60 inference tokens every extra parameter costs more than any data, so
    # the optimum and the equal-spend size sit on N_min (the solver keeps 1e-9 above it)
    e, a, b, alpha, beta = HOFFMANN
    n_min = (a / (2.0 - e)) ** (1 / alpha)
    assert n_min == pytest.approx(1.477e9, rel=1e-3)
    o = lt.lifetime_optimum(2.0, 1e60)
    assert o.optimum_params == pytest.approx(n_min, rel=1e-8)
    assert o.equal_params == pytest.approx(n_min, rel=1e-8)
    assert o.optimum_params >= n_min


def test_lifetime_optimum_refuses_the_floor_e_itself():
    # L = E needs infinite parameters and data; the message says what is allowed
    with pytest.raises(ValueError, match="^loss: .*allowed values are above that$"):
        lt.lifetime_optimum(1.69, 1e14)


def test_loss_gap_against_a_brute_force_search_of_the_iso_compute_curve():
    # C = 1e24 FLOP: scan N on a fine log grid with D = C / (6 N) and take the least loss of the
    # fit; the gap at 200 tokens per parameter is L(N, 200 N) with N = sqrt(C / 1200) minus it
    c, k = 1e24, 200.0
    for fit in lt.SCALING_FITS:
        grid = np.logspace(9, 12, 300_001)
        least = np.min(lt.scaling_loss(grid, c / (6 * grid), fit))
        n = math.sqrt(c / (6 * k))
        expected = lt.scaling_loss(n, k * n, fit) - least
        assert expected > 1e-3
        assert lt.loss_gap(c, k, fit) == pytest.approx(expected, abs=1e-8)


def test_the_infinite_data_floor_is_named_for_the_first_bad_entry():
    # 1e9 parameters: E + A / N^alpha = 1.69 + 406.4 / 10^3.06 = 1.69 + 0.35396 = 2.0440;
    # 2.5 is reachable, 2.0 is not: the message names the second entry and its floor
    with pytest.raises(ValueError, match=r"^loss: got 2; .*= 1e\+09 reaches at best 2\.0440 "):
        lt.tokens_for_loss(1e9, np.array([2.5, 2.0]))
    # N = 1: the floor is E + A = 408.09 exactly (1^alpha = 1); the floor itself is refused
    with pytest.raises(ValueError, match="^loss: got 408.09; .* reaches at best 408.0900"):
        lt.tokens_for_loss(1.0, 408.09)
    with pytest.raises(ValueError, match="^loss: got 408.09; "):
        lt.tokens_for_loss(1.0, np.array([500.0, 408.09]))


def test_equal_spend_overtraining_at_another_tokens_per_param():
    # 100B active, u = 1/3: D_pre = D_inf = 2e14; at 10 tokens per parameter the optimum is 1e12
    assert lt.equal_spend_overtraining(100e9, 2e14, tokens_per_param=10) == pytest.approx(
        200.0, rel=1e-12)

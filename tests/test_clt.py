"""The CLT of DP-SGD (:mod:`ldpsim.privacy.clt`: 002, Corollary 3; Bu, Dong, Long & Su 2020) against dp-accounting."""

from __future__ import annotations

import math

import pytest

from ldpsim.privacy.clt import clt_mu, clt_sigma, gdp_summary, mu_from_epsilon_delta, step_noise_sd
from ldpsim.privacy.gdp import gdp_delta


def test_gdp_to_epsilon_delta_published_pairs():
    # mu = 1 GDP: delta(1) = 0.1269, delta(2) = 0.0209, delta(3) = 0.0015 (004, Section 5.1; shared reference table)
    summary = gdp_summary(1.0, deltas=(), epsilons=(1.0, 2.0, 3.0))
    assert round(summary["delta_at_eps1"], 4) == 0.1269
    assert round(summary["delta_at_eps2"], 4) == 0.0209
    assert round(summary["delta_at_eps3"], 4) == 0.0015
    # a target given as (epsilon, delta) goes through GDP and comes back
    mu = mu_from_epsilon_delta(2.0, 0.0209)
    assert gdp_delta(2.0, mu) == pytest.approx(0.0209, rel=1e-9) and mu == pytest.approx(1.0, abs=2e-3)


def test_clt_mu_of_the_acceptance_example():
    # sigma = 1, m/n = 0.01, T = 1e4, so c = q sqrt(T) = 1:
    # swor: sqrt(2) * sqrt(e Phi(1.5) + 3 Phi(-0.5) - 2) = sqrt(2) * sqrt(1.462288) = 1.710 (the number holds
    # with e^(1/sigma^2); 002's printed e^(-sigma^2) makes the root negative); Poisson: sqrt(e - 1) = 1.311
    assert clt_mu(1.0, 0.01, 10_000, "swor") == pytest.approx(1.7101424755953, rel=1e-12)
    assert clt_mu(1.0, 0.01, 10_000, "poisson") == pytest.approx(math.sqrt(math.e - 1.0), rel=1e-12)
    # mu is linear in c = q sqrt(T), not in sqrt(c) as 002 prints (sqrt(2c)): quadrupling T doubles mu
    assert clt_mu(1.0, 0.01, 40_000, "swor") == pytest.approx(2 * 1.7101424755953, rel=1e-12)


def test_clt_mu_is_accurate_from_tiny_to_huge_sigma():
    mpmath = pytest.importorskip("mpmath")
    mpmath.mp.dps = 60
    for sigma in (0.03, 0.1, 0.5, 1.0, 3.0, 30.0, 1e3, 1e5):
        s = mpmath.mpf(sigma)
        f = mpmath.e ** (1 / s**2) * mpmath.ncdf(1.5 / s) + 3 * mpmath.ncdf(-0.5 / s) - 2
        want = float(mpmath.sqrt(2 * f))
        assert clt_mu(sigma, 1.0, 1, "swor") == pytest.approx(want, rel=1e-10), sigma
        want_p = float(mpmath.sqrt(mpmath.e ** (1 / s**2) - 1))
        assert clt_mu(sigma, 1.0, 1, "poisson") == pytest.approx(want_p, rel=1e-12), sigma


@pytest.mark.parametrize("sampling", ["swor", "poisson", "cyclic"])
def test_clt_sigma_inverts_clt_mu(sampling):
    for mu in (0.1, 0.5, 2.0, 8.0):
        sigma = clt_sigma(mu, 1 / 500, 250_000, sampling)
        assert clt_mu(sigma, 1 / 500, 250_000, sampling) == pytest.approx(mu, rel=1e-10)
    assert clt_sigma(math.inf, 0.1, 100) == 0.0
    # mu = 2, m = 1, T = n^2: c = 1, sigma = 0.9165 (the noise of 002's Figure 2 setting)
    assert clt_sigma(2.0, 1 / 500, 250_000, "swor") == pytest.approx(0.91645, abs=1e-5)


def test_cyclic_has_no_amplification():
    # each example is used ceil(T m / n) times: composition gives sqrt(k) / sigma
    assert clt_mu(2.0, 3 / 10, 20, "cyclic") == pytest.approx(math.sqrt(6) / 2.0)


def test_step_noise_is_sigma_times_the_sensitivity_of_the_clipped_mean():
    # replace one of m clipped gradients: the mean moves by <= 2 clip / m; add/remove (Poisson): clip / m
    assert step_noise_sd(0.9, 6.0, 3, "swor") == pytest.approx(0.9 * 2 * 6.0 / 3)
    assert step_noise_sd(0.9, 6.0, 3, "poisson") == pytest.approx(0.9 * 6.0 / 3)


def test_the_clt_and_the_exact_accountants_side_by_side():
    from ldpsim.privacy.accountants import epsilon_pair

    q, steps = 1 / 100, 10_000
    sigma_p = clt_sigma(2.0, q, steps, "poisson")
    clt = gdp_summary(2.0)["eps_at_delta1e-05"]
    pld = epsilon_pair("pld", "poisson", sigma_p, steps, 100, 1, 1e-5)[0]
    rdp = epsilon_pair("rdp", "poisson", sigma_p, steps, 100, 1, 1e-5)[0]
    # the PLD accountant is (numerically) exact for the Poisson-subsampled Gaussian; the CLT is close at
    # these T and c = q sqrt(T) = 1, and RDP is an upper bound above it
    assert pld == pytest.approx(clt, rel=0.1)
    assert rdp >= pld
    sigma_s = clt_sigma(2.0, q, steps, "swor")
    assert epsilon_pair("rdp", "swor", sigma_s, steps, 100, 1, 1e-5)[0] > clt  # RDP without replacement: looser

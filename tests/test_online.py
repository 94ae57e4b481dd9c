"""004's online LDP-SGD: mechanisms and per-user budgets, the Mallows-weighted and clipped models, their truth.

Reference values carry their source: 004 = Shi, Xie, Jiang, Kong & He,
../shared/papers/004_*.txt. Statistical checks use 4 Monte Carlo standard
errors unless they say otherwise.
"""

from __future__ import annotations

import math
import warnings

import numba
import numpy as np
import pytest
from scipy import integrate, stats

import ldpsim
from ldpsim.engine.errors import ConfigError
from ldpsim.engine.dialect.rng import as_generator, kernel_rng
from ldpsim.models import MODELS, add_privatized_gradient
from ldpsim.models.design import GaussianDesign, mallows_weight
from ldpsim.models.huber import HUBER_C, huber_gradient_parts, huber_kappa, huber_sensitivity
from ldpsim.models.online import numerical_jacobian
from ldpsim.privacy.mechanisms import GaussianNoise, LaplaceNoise, NoNoise, add_noise
from ldpsim.privacy.mechanisms.gaussian_noise import UniformBudgetGaussianNoise
from ldpsim.privacy.mechanisms.laplace_noise import UniformBudgetLaplaceNoise
from ldpsim.privacy.online import BudgetLaw, online_mechanism, online_noise_record, parse_budget

from run_helpers import ROOT, checked_cli, no_work, one_line_error_after_warnings, online_model, write

# --- mechanisms ---------------------------------------------------------------------


def test_scales_are_calibrated_to_the_l2_sensitivity():
    d, p = 3.0, 7
    # 004, Example 1: Laplace(0, 2 sqrt(p) / eps) per coordinate of omega, times C0 = D / 2
    assert online_mechanism("laplace", p, d, 2.0).scale == pytest.approx(math.sqrt(p) * d / 2.0, rel=1e-15)
    # Example 3: N(0, (2 / mu)^2) for omega, times C0: sd D / mu
    assert online_mechanism("gdp", p, d, 0.5).sigma == pytest.approx(d / 0.5, rel=1e-15)
    # Example 2: sd 2 sqrt(2 ln(1.25 / delta)) / eps for omega, times C0
    assert online_mechanism("gaussian_classical", p, d, 0.8, 1e-5).sigma == pytest.approx(
        d * math.sqrt(2 * math.log(1.25e5)) / 0.8, rel=1e-15)
    analytic = online_mechanism("gaussian", p, d, 0.8, 1e-5)
    assert analytic.sigma < online_mechanism("gaussian_classical", p, d, 0.8, 1e-5).sigma
    assert online_mechanism("gdp", p, d, math.inf) is None
    # per-user budgets: E[b^-2] = 1 / (a b) for b ~ U(a, b); Laplace's variance is 2 scale^2
    law = BudgetLaw(1.0, 2.0)
    assert online_mechanism("gdp", p, d, law).variance == pytest.approx(d * d / 2.0, rel=1e-15)
    assert online_mechanism("laplace", p, d, law).variance == pytest.approx(2 * p * d * d / 2.0, rel=1e-15)
    assert law.inverse_moment(2) == pytest.approx(integrate.quad(lambda b: b**-2, 1, 2)[0], rel=1e-12)
    with pytest.raises(ValueError, match="no per-user budgets"):
        online_mechanism("gaussian", p, d, law, 1e-5)


def test_printed_variances_of_examples_2_and_3_are_not_squared():
    # docs/corrections.md item 23: with C0 factored out (D = 2 C0), omega's variance is
    # 4 / mu^2 (GDP) and 8 ln(1.25/delta) / eps^2 (classical Gaussian); 004 prints 4 / mu and
    # 8 ln(1.25/delta) / eps, which agree only at mu = 1 (eps = 1).
    c0 = 1.0
    for mu in (0.5, 2.0, 3.0):
        variance = online_mechanism("gdp", 5, 2 * c0, mu).variance / c0**2
        assert variance == pytest.approx(4 / mu**2, rel=1e-14) and variance != pytest.approx(4 / mu)
        # the implemented noise is mu-GDP: N(0, s^2) vs N(D, s^2) has trade-off G_mu exactly
        sd = math.sqrt(variance) * c0
        assert 2 * c0 / sd == pytest.approx(mu, rel=1e-14)
        # the printed reading would be (2 / sqrt(4 / mu)) = sqrt(mu)-GDP
        assert 2 * c0 / math.sqrt(4 / mu) == pytest.approx(math.sqrt(mu))
    eps, delta = 2.0, 1e-5
    variance = online_mechanism("gaussian_classical", 5, 2 * c0, eps, delta).variance
    assert variance == pytest.approx(8 * math.log(1.25 / delta) / eps**2, rel=1e-14)


@numba.njit
def _noise_draws(noise, gen, n, p):
    out = np.zeros((n, p))
    for r in range(n):
        add_noise(noise, gen, out[r])
    return out


def _mixture_cdf(base_cdf, numerator, low, width, nodes=64):
    """CDF of numerator / b times a standard draw, b ~ U(low, low + width) (Gauss-Legendre in b)."""
    t, w = np.polynomial.legendre.leggauss(nodes)
    b = low + width * (t + 1) / 2
    weights = w / 2

    def cdf(x):
        x = np.asarray(x, dtype=float)
        return base_cdf(x[..., None] * b / numerator) @ weights

    return cdf


@pytest.mark.parametrize("kind", ["laplace", "gaussian", "budget_laplace", "budget_gaussian"])
def test_noise_draws_follow_their_law(kind):
    # KS test of one coordinate's marginal (20 000 draws; p-value > 1e-3), the jitted draws
    # equal to the Python twin's, and per-user noise sharing one budget across coordinates.
    records = {"laplace": (LaplaceNoise(1.7), stats.laplace(scale=1.7).cdf),
               "gaussian": (GaussianNoise(0.6), stats.norm(scale=0.6).cdf),
               "budget_laplace": (UniformBudgetLaplaceNoise(3.0, 1.0, 2.0),
                                  _mixture_cdf(stats.laplace.cdf, 3.0, 1.0, 2.0)),
               "budget_gaussian": (UniformBudgetGaussianNoise(3.0, 1.0, 1.0),
                                   _mixture_cdf(stats.norm.cdf, 3.0, 1.0, 1.0))}
    record, cdf = records[kind]
    draws = _noise_draws(record, kernel_rng(as_generator(4)), 20_000, 3)
    assert stats.kstest(draws[:, 1], cdf).pvalue > 1e-3
    gen = as_generator(4)
    twin = np.zeros((50, 3))
    for r in range(50):
        add_noise(record, gen, twin[r])
    np.testing.assert_array_equal(draws[:50], twin)
    if kind.startswith("budget"):  # |noise| of a user's coordinates correlate through the shared budget
        corr = np.corrcoef(np.abs(draws[:, 0]), np.abs(draws[:, 2]))[0, 1]
        assert corr > 4 / math.sqrt(20_000)


def test_ks_rejects_a_wrong_budget_law():
    # the test above has power: U(1, 2.3) draws are told apart from U(1, 2)'s mixture
    draws = _noise_draws(UniformBudgetGaussianNoise(3.0, 1.0, 1.3), kernel_rng(as_generator(4)), 20_000, 1)
    assert stats.kstest(draws[:, 0], _mixture_cdf(stats.norm.cdf, 3.0, 1.0, 1.0)).pvalue < 1e-3


def test_budget_values_and_guarantees():
    assert parse_budget("budget", {"uniform": [1, 2]}) == "uniform(1, 2)"
    assert parse_budget("budget", "uniform(0.5, 2.25)") == "uniform(0.5, 2.25)"
    assert parse_budget("budget", 1.5) == 1.5 and parse_budget("budget", None) is None
    for bad in ({"uniform": [2, 1]}, {"normal": [1, 2]}, "uniform(1)", -1, True, {"uniform": [0, 1]}):
        with pytest.raises(ConfigError, match=r"^budget = .* (is not a budget|is outside)") as info:
            parse_budget("budget", bad)
        assert "\n" not in str(info.value)
    mech = online_mechanism("gdp", 7, 3.9, BudgetLaw(1.0, 2.0))
    text = mech.guarantee
    assert "mu_i ~ uniform(1, 2)" in text and "mu = 2 GDP" in text and "between mu = 2 and mu = 1" in text
    assert isinstance(online_noise_record(mech), UniformBudgetGaussianNoise)
    # mu = 1 GDP is (1, 0.1269)-, (2, 0.0209)-, (3, 0.0015)-LDP (004, Section 5.1)
    assert "(1, 0.127), (2, 0.0209), (3, 0.00154)" in online_mechanism("gdp", 7, 3.9, 1.0).guarantee


# --- models ------------------------------------------------------------------------------------------


def test_kappa_c_is_computed():
    # ../shared/reference/corrections.md item 11: kappa_c = E min(Z^2, c^2) = 0.7101 at c = 1.345
    kappa = huber_kappa(HUBER_C)
    quad = integrate.quad(lambda z: min(z * z, HUBER_C**2) * stats.norm.pdf(z), -12, 12, points=[-HUBER_C, HUBER_C])
    assert kappa == pytest.approx(quad[0], abs=1e-12)
    assert kappa == pytest.approx(0.7101, abs=1e-4)  # 0.710165: the reference truncates, not rounds


def test_huber_sensitivity_against_a_brute_force_maximum():
    # 004, Section 5.1: D = sqrt(8 c^2 + c^4 / 4) = 3.9103 at c = 1.345, derived from its two parts
    c, kappa = HUBER_C, huber_kappa(HUBER_C)
    bound = huber_sensitivity(c, kappa)
    assert bound == pytest.approx(math.sqrt(8 * c * c + c**4 / 4), rel=1e-15)
    # one user: u (residual / scale) and r = ||x||^2; two users' b parts are largest with opposite x
    u = np.linspace(-3 * c, 3 * c, 61)
    r = np.r_[np.linspace(1.0, 6.0, 61), 2.0]  # ||x||^2 >= 1 (the intercept)
    uu, rr = np.meshgrid(u, r)
    coef, gs = huber_gradient_parts(uu.ravel(), rr.ravel(), c, kappa, None)
    a = np.abs(coef) * np.sqrt(rr.ravel())  # ||g_b||
    # sup ||g - g'||^2 = max over pairs of (a + a')^2 + (gs - gs')^2
    best = 0.0
    for lo in range(0, a.size, 2000):
        best = max(best, float(np.max((a[lo:lo + 2000, None] + a[None]) ** 2 + (gs[lo:lo + 2000, None] - gs[None]) ** 2)))
    brute = math.sqrt(best)
    # each part's supremum is reached on the grid: 2 sqrt(2) c and c^2 / 2
    assert 2 * a.max() == pytest.approx(2 * math.sqrt(2) * c, rel=1e-12)
    assert gs.max() - gs.min() == pytest.approx(c * c / 2, rel=1e-12)
    # the paper's D bounds the joint maximum, which is the b part's alone, 2 sqrt(2) c = 3.804, 2.7% below D:
    # where the b parts differ most (|u| >= c for both users) the s parts agree (Nelder-Mead from 3000
    # random starts finds the same maximum)
    assert brute <= bound and brute == pytest.approx(2 * math.sqrt(2) * c, rel=1e-12)
    # logistic: ||x|| w(x) <= sqrt(2), so D = 2 sqrt(2)
    grid = np.r_[np.linspace(1.0, 50.0, 100_001), 2.0]
    assert (np.sqrt(grid) * mallows_weight(grid)).max() == pytest.approx(math.sqrt(2), rel=1e-9)
    assert MODELS["logistic_mallows"](dim=4, mu=1.0).sensitivity() == 2 * math.sqrt(2)
    # clipping: every gradient in the ball of radius clip, two opposite ones 2 clip apart
    for name in ("logistic_clip", "huber_clip"):
        assert MODELS[name](dim=4, mu=1.0, clip=1.2).sensitivity() == 2.4


class _Scripted:
    """A generator stand-in that returns prescribed normals and uniforms (for the plain-Python gradients)."""

    def __init__(self, normals, uniforms=()):
        self.normals, self.uniforms = list(normals), list(uniforms)

    def standard_normal(self):
        return self.normals.pop(0)

    def random(self):
        return self.uniforms.pop(0)


def _huber_loss(theta, x, y, c, kappa, weighted):
    s = theta[-1]
    u = (y - x @ theta[:-1]) / s
    rho = 0.5 * u * u if abs(u) <= c else c * abs(u) - 0.5 * c * c
    return (s * rho + 0.5 * kappa * s) * (min(1.0, 2.0 / (x @ x)) if weighted else 1.0)


def _logistic_loss(theta, x, y, weighted):
    eta = x @ theta
    return (np.logaddexp(0.0, eta) - y * eta) * (min(1.0, 2.0 / (x @ x)) if weighted else 1.0)


@pytest.mark.parametrize("name", ["huber_mallows", "huber_clip", "logistic_mallows", "logistic_clip"])
def test_gradients_match_finite_differences(name):
    # the kernel's gradient at scripted draws against central differences of 004's loss
    # (Sections 5.1, 5.3); for the clip models, the unweighted gradient cut to norm clip
    d = 3
    model = MODELS[name](dim=d, mechanism=None, mu=math.inf, **({"clip": 1.2} if "clip" in name else {}))
    params = model.kernel_params()
    rng = np.random.default_rng(8)
    checked_clip = 0
    for _ in range(40):
        z = rng.standard_normal(d) * 1.5
        x = np.r_[1.0, z]
        theta = rng.normal(0.8, 0.7, model.p)
        if name.startswith("huber"):
            theta[-1] = abs(theta[-1]) + 0.3
            e = rng.standard_normal()
            y = x @ model.coef + model.error_sd * e
            gen = _Scripted(list(z) + [e])

            def loss(th):
                return _huber_loss(th, x, y, model.c, model.kappa, not model.clipped)
        else:
            u = rng.random()
            y = 1.0 if u * (1.0 + math.exp(-(x @ model.coef))) < 1.0 else 0.0
            gen = _Scripted(list(z), [u])

            def loss(th):
                return _logistic_loss(th, x, y, not model.clipped)
        got = np.zeros(model.p)
        add_privatized_gradient(params, theta.copy(), gen, got)
        fd = numerical_jacobian(lambda th: np.array([loss(th)]), theta, 1e-6)[0]
        if model.clipped:
            norm = np.linalg.norm(fd)
            checked_clip += norm > model.clip
            fd = fd * min(1.0, model.clip / norm)
        np.testing.assert_allclose(got, fd, rtol=1e-6, atol=1e-7)
    assert not model.clipped or checked_clip > 5  # the clip was active in some draws


@pytest.mark.parametrize("name,dim", [("huber_mallows", 1), ("huber_mallows", 4), ("huber_mallows", 20),
                                      ("logistic_mallows", 1), ("logistic_mallows", 3), ("logistic_mallows", 10)])
def test_theta_star_is_computed_and_is_the_data_generating_value(name, dim):
    # ../shared/reference/corrections.md item 11: the root of the weighted Huber loss is (beta, sigma)
    # for Gaussian errors and weights of x alone; computed from (0, ..., 0, 1), not assumed.
    model = MODELS[name](dim=dim, mu=1.0)
    star = model.theta_star()
    truth = np.r_[np.ones(dim + 1), [2.0] if name.startswith("huber") else []]
    np.testing.assert_allclose(star, truth, rtol=0, atol=1e-10)
    assert np.abs(model.mean_gradient(star)).max() < 1e-12
    assert np.abs(model.mean_gradient(star + 0.1)).max() > 1e-4


@pytest.mark.parametrize("name", ["huber_mallows", "logistic_mallows", "huber_clip", "logistic_clip"])
def test_population_gradient_against_monte_carlo_and_the_excess_risk(name):
    # E grad f by quadrature vs the mean of 100 000 kernel gradients (non-private; 4 SEs);
    # and the derivative of the excess risk (central differences) vs the population gradient
    model = MODELS[name](dim=3, mu=math.inf, mechanism=None, **({"clip": 1.2} if "clip" in name else {}))
    theta = model.theta_star() + np.array([0.15, -0.1, 0.05, 0.2, 0.1][: model.p])
    if model.clipped:  # the population gradient is the unclipped loss's; MC of the unclipped gradient
        model_unclipped = MODELS[name](dim=3, mu=math.inf, mechanism=None, clip=math.inf)
        params = model_unclipped.kernel_params()
    else:
        params = model.kernel_params()
    draws = 100_000
    g = _gradients(params, theta, kernel_rng(as_generator(3)), np.empty((draws, model.p)))
    want = model.mean_gradient(theta)
    se = g.std(axis=0) / math.sqrt(draws)
    assert np.all(np.abs(g.mean(axis=0) - want) < 4 * se), (g.mean(axis=0), want, se)
    fd = numerical_jacobian(lambda th: model.excess_risk(th[None]), theta, 1e-5)[0]
    np.testing.assert_allclose(fd, want, rtol=1e-6, atol=1e-9)


@numba.njit
def _gradients(params, theta, gen, out):
    g = np.zeros(theta.shape[0])
    for r in range(out.shape[0]):
        g[:] = 0.0
        add_privatized_gradient(params, theta, gen, g)
        out[r] = g
    return out


@pytest.mark.parametrize("name", ["huber_mallows", "logistic_mallows"])
def test_excess_risk_by_quadrature_against_monte_carlo(name):
    # F(theta) - F(theta*) = E_x[w(x) (risk given x)]: the risk given x in closed form, x by
    # quadrature; against the mean over 400 000 x of the same closed form (4 SEs), >= 0,
    # and ~ (theta - theta*)' G (theta - theta*) / 2 near theta*
    from ldpsim.models.huber import normal_huber_moments

    model = MODELS[name](dim=4, mu=1.0)
    star = model.theta_star()
    devs = np.array([[1e-3] * model.p, [0.05, -0.1, 0.02, 0.0, 0.1, -0.05, 0.03][: model.p],
                     [0.5, -0.3, 0.2, 0.4, -0.2, 0.1, 0.3][: model.p]])
    got = model.excess_risk(star + devs)
    rng = np.random.default_rng(2)
    x = np.c_[np.ones(400_000), rng.standard_normal((400_000, 4))]
    w = mallows_weight((x * x).sum(axis=1))

    def risk(theta):
        if name.startswith("huber"):
            s = theta[-1]
            rho, _, _ = normal_huber_moments(x @ (model.coef - theta[:-1]) / s, model.error_sd / s, model.c)
            return w * (s * rho + model.kappa * s / 2)
        eta, eta_star = x @ theta, x @ model.coef
        return w * (np.logaddexp(0, eta) - eta * (1 / (1 + np.exp(-eta_star))))

    base = risk(star)
    for dev, value in zip(devs, got):
        diff = risk(star + dev) - base
        assert abs(diff.mean() - value) < 4 * diff.std() / math.sqrt(diff.size)
        assert value > 0
    assert got[0] == pytest.approx(devs[0] @ model.hessian() @ devs[0] / 2, rel=1e-3)


@pytest.mark.parametrize("name", ["huber_mallows", "logistic_mallows"])
def test_hessian_is_the_jacobian_of_the_population_gradient(name):
    model = MODELS[name](dim=4, mu=1.0)
    jac = numerical_jacobian(model.mean_gradient, model.theta_star())
    np.testing.assert_allclose(model.hessian(), jac, rtol=0, atol=1e-8)
    assert np.linalg.eigvalsh(model.hessian()).min() > 0


@pytest.mark.parametrize("name,kwargs", [("huber_mallows", dict(mechanism="gdp", mu=2.0)),
                                         ("logistic_mallows", dict(mechanism="laplace", epsilon=3.0)),
                                         ("huber_mallows", dict(mechanism="gdp", budget="uniform(1, 2)"))])
def test_privatized_gradient_at_truth_has_mean_zero_and_covariance_s(name, kwargs):
    # E g = 0 and Cov g = S = S_SGD + S_LDP (per-user budgets: the mean noise variance), 4 SEs
    model = MODELS[name](dim=2, **kwargs)
    draws = 200_000
    g = _gradients(model.kernel_params(), model.theta_star(), kernel_rng(as_generator(5)),
                   np.empty((draws, model.p)))
    assert np.all(np.abs(g.mean(axis=0)) < 4 * g.std(axis=0) / math.sqrt(draws))
    products = g[:, :, None] * g[:, None, :]
    se = products.std(axis=0) / math.sqrt(draws)
    assert np.all(np.abs(products.mean(axis=0) - model.gradient_covariance()) < 4 * se + 1e-12)


def test_clipping_limits_are_roots_of_the_mean_clipped_gradient():
    # 004, Figure 1: clipping biases the logistic estimator (positively at beta = 1), Mallows weights do not
    model = MODELS["logistic_clip"](dim=3, mu=1.0, clip=math.sqrt(2))
    limit = model.limit()
    assert np.all(limit - model.coef > 0.05)
    np.testing.assert_allclose(limit[2:], limit[1], rtol=1e-12)  # the permutation symmetry
    # against Monte Carlo: the mean clipped gradient (exact over y given x) is 0 at the limit, not at beta
    rng = np.random.default_rng(0)
    x = np.c_[np.ones(1_000_000), rng.standard_normal((1_000_000, 3))]
    r = np.sqrt((x * x).sum(axis=1))
    s_b = 1 / (1 + np.exp(-x @ model.coef))

    def mean_clipped(theta):
        s = 1 / (1 + np.exp(-x @ theta))
        h = s_b * (s - 1) * np.minimum(1, model.clip / ((1 - s) * r)) + (1 - s_b) * s * np.minimum(1, model.clip / (s * r))
        g = h[:, None] * x
        return g.mean(axis=0), g.std(axis=0) / math.sqrt(len(g))

    at_limit, se = mean_clipped(limit)
    assert np.all(np.abs(at_limit) < 4 * se)
    at_beta, se = mean_clipped(model.coef)
    assert np.all(np.abs(at_beta) > 10 * se)
    np.testing.assert_allclose(model.mean_bounded_gradient(model.coef), at_beta, atol=4 * se.max())
    # Huber with clipping: b stays at beta (odd in the error), the scale shrinks
    huber = MODELS["huber_clip"](dim=4, mu=1.0, clip=math.sqrt(2))
    hl = huber.limit()
    np.testing.assert_array_equal(hl[:-1], huber.coef)
    assert 1.2 < hl[-1] < 2.0
    e = rng.standard_normal(1_000_000)
    z2 = (rng.standard_normal((1_000_000, 4)) ** 2).sum(axis=1)
    coef, gs = huber_gradient_parts(2.0 * e / hl[-1], 1.0 + z2, huber.c, huber.kappa, huber.clip)
    assert abs(gs.mean()) < 4 * gs.std() / 1000


def test_coverage_study_refuses_what_it_cannot_run():
    for name in ("huber_clip", "logistic_clip"):
        with pytest.raises(ConfigError, match=rf"^model = '{name}' runs in the trajectory study only"):
            ldpsim.load_config({"model": name, "n": 1e4})
    # the vector kernel projects the Huber scale after each step (constrain), as the trajectory kernel does
    ldpsim.load_config({"model": "logistic_mallows", "n": 1e4})
    ldpsim.load_config({"model": "huber_mallows", "n": 1e4})


@pytest.mark.parametrize("mapping,message", [
    ({"model": "huber_mallows", "mechanism": "gaussian", "budget": {"uniform": [1, 2]}},
     "budget = uniform(1, 2) needs a mechanism with a per-user form"),
    ({"model": "huber_mallows", "mechanism": "rr"}, "mechanism = 'rr' is not available for model 'huber_mallows'"),
    ({"model": "huber_mallows", "dim": 0}, "dim = 0 is outside [1, 1000]"),
    ({"model": "huber_mallows", "mu": 0}, "mu = 0.0 is outside (0, inf]"),
    ({"model": "logistic_clip", "clip": "inf"}, "clip = inf leaves the gradient unbounded: a private run "
                                                "(mechanism = gdp)"),
    ({"model": "quantile", "metrics": ["loss"]}, "metrics contains 'loss' but model 'quantile' defines no loss"),
])
def test_online_keys_are_validated(mapping, message):
    with pytest.raises(ConfigError) as info:
        ldpsim.load_config({"study": "trajectory", "n": 5000, **mapping})
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_budget_keys_are_normalised():
    def one(**kw):
        return ldpsim.load_config({"study": "trajectory", "model": "huber_mallows", "n": 5000, **kw}).settings

    s = one(mu=2)[0]
    assert (s.mechanism, s.mu, s.epsilon, s.delta, s.budget) == ("gdp", 2.0, None, None, None)
    s = one(mechanism="laplace", epsilon=3)[0]
    assert (s.mechanism, s.mu, s.epsilon) == ("laplace", None, 3.0)
    with pytest.raises(ldpsim.ConfigError, match=r"^mu = 2 is read by no setting of this run"):
        one(mechanism="laplace", epsilon=3, mu=2)  # laplace's budget is epsilon; mu is not dropped silently
    # non-private, whichever budget key says so, is one setting: mechanism blank, mu = inf
    assert [(s.mechanism, s.mu, s.epsilon) for s in one(mechanism=["gdp", "laplace"], mu=math.inf,
                                                      epsilon=math.inf)] == [(None, math.inf, None)]
    s = one(budget=1.5)[0]  # a constant budget is mu
    assert (s.mu, s.budget) == (1.5, None)
    settings = one(mu=[1, 2], budget=[None, {"uniform": [1, 2]}])
    assert [(s.mu, s.budget) for s in settings] == [(1.0, None), (None, "uniform(1, 2)"), (2.0, None)]
    assert len({s.seed_key for s in settings}) == 3


def test_seed_keys_of_the_older_models_are_unchanged():
    # the new path keys (dim, mu, budget) are blank for the older models and not hashed:
    # the same keys give the same paths as before (values from the commit before this work)
    quantile = ldpsim.load_config({"model": "quantile", "tau": 0.9, "n": 5000}).settings[0]
    linear = ldpsim.load_config({"model": "linear", "n": 5000}).settings[0]
    assert (quantile.seed_key, linear.seed_key) == (QUANTILE_SEED_KEY, LINEAR_SEED_KEY)


#: ``setting.seed_key`` of these two settings at d864c06, before the online models existed
QUANTILE_SEED_KEY = 16795116568254861633
LINEAR_SEED_KEY = 4926441310148808744


def test_design_quadrature_converges():
    # the outer and inner rules agree with twice the nodes (smooth pieces: geometric convergence)
    for d in (2, 5):
        coarse, fine = GaussianDesign(d, nodes=48), GaussianDesign(d, nodes=96)
        f = lambda t1, t2: np.cos(t1) * np.exp(0.3 * t2)  # noqa: E731
        assert coarse.expect_plane(f) == pytest.approx(fine.expect_plane(f), rel=1e-10)
        assert coarse.radial == pytest.approx(fine.radial, rel=1e-12)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::ldpsim.engine.errors.ConfigWarning")  # gamma = 1/2, as 004
def test_clipping_bias_is_the_computed_limit_and_mallows_is_unbiased():
    # 004, Figure 1, non-private (the noise would only add spread): the last iterate at n = 1e5,
    # gamma = 1/2, 150 replications. Clipping at sqrt(2) converges to its computed limit, Mallows
    # weights to beta; each coordinate within 4 SEs of limit + the noise-free path's remaining
    # transient (bias.csv's z), and the clipping bias is more than 20 SEs from 0.
    result = ldpsim.run({"study": "trajectory", "model": ["logistic_mallows", "logistic_clip"], "clip": math.sqrt(2),
                         "dim": 3, "mu": math.inf, "c": 0.2, "gamma": 0.5, "n": 100_000, "reps": 150, "seed": 7,
                         "checkpoints": 10}, n_jobs=2, progress=False)
    for row in result.tables["bias"]:
        assert abs(row["z"]) < 4, row
        if row["model"] == "logistic_clip" and row["estimator"] == "last":
            assert row["bias"] > 20 * row["bias_se"]


@pytest.mark.slow
def test_per_user_budgets_lie_between_the_constant_ones():
    # 004, Figure 2: mu_i ~ U(1, 2) between mu = 1 and mu = 2 at every checkpoint past the first decade
    # (mean squared distances, 2 combined SEs of slack)
    result = ldpsim.run({"study": "trajectory", "model": "huber_mallows", "dim": 2, "mu": [1, 2],
                         "budget": [None, {"uniform": [1, 2]}], "c": 0.5, "gamma": 0.6, "n": 50_000, "reps": 200,
                         "seed": 3, "checkpoints": 20}, n_jobs=2, progress=False)
    rows = result.rows
    for estimator in ("last", "average"):
        for k in sorted({r["k"] for r in rows if r["k"] >= 100}):
            at = {(r["mu"], r["budget"]): r for r in rows
                  if r["k"] == k and r["estimator"] == estimator and r["metric"] == "parameter"}
            lo, mid, hi = at[(2.0, None)], at[(None, "uniform(1, 2)")], at[(1.0, None)]
            assert mid["distance"] > lo["distance"] - 2 * math.hypot(mid["distance_se"], lo["distance_se"])
            assert mid["distance"] < hi["distance"] + 2 * math.hypot(mid["distance_se"], hi["distance_se"])


# --- logistic_clip's limit at any dim -----------------------------------------------------------------------


@pytest.mark.parametrize("dim,clip", [(20, 1.0), (200, 1.0), (5, 0.1), (1000, 1.0), (5, 1e-6)])
def test_the_clipped_limit_of_logistic_clip_is_found(dim, clip):
    model = online_model("logistic_clip", dim=dim, clip=clip, mu="inf")
    limit = model.limit()
    # the root of the mean clipped gradient (what solve_root requires of every coordinate)
    assert np.abs(model.mean_bounded_gradient(limit)).max() < 1e-12
    assert np.isfinite(limit).all()


def test_a_logistic_clip_run_at_dim_20_writes_its_bias_table(tmp_path, capsys):
    mapping = {"study": "trajectory", "model": "logistic_clip", "dim": 20, "clip": 1, "n": 2000, "reps": 2,
               "seed": 1, "c": 0.2, "gamma": 0.6}
    status, _, err = checked_cli(capsys, "run", write(tmp_path, mapping), "--out", tmp_path / "o", "--quiet",
                         "--n-jobs", "1")
    assert status == 0 and (tmp_path / "o" / "bias.csv").exists()


# --- per-user budgets: contradictions, numbers and extremes -------------------------------------------------


def test_a_budget_law_with_mu_inf_is_refused(tmp_path, capsys, monkeypatch):
    no_work(monkeypatch)
    status, _, err = checked_cli(capsys, "run", ROOT / "configs" / "shi_budgets.yaml", "--set", "mu=inf", "--set",
                         "budget=uniform(1, 2)", "--out", tmp_path / "o", "--quiet")
    one_line_error_after_warnings(status, err, "budget = uniform(1, 2) draws each user's mu, but mu = inf asks for no privacy")


def test_a_budget_written_like_a_number_is_one(capsys):
    warnings.simplefilter("ignore", ldpsim.ConfigWarning)  # (gamma = 0.5; pytest restores the filters)
    for text in ("1e0", "1.0", "1"):
        config = ldpsim.load_config(ROOT / "configs" / "shi_budgets.yaml", budget=text)
        assert {s.mu for s in config.settings} == {1.0} and {s.budget for s in config.settings} == {None}
    status, _, err = checked_cli(capsys, "check", ROOT / "configs" / "shi_budgets.yaml", "--set", "budget=1e0")
    assert "not a budget" not in err
    assert ldpsim.load_config(ROOT / "configs" / "shi_budgets.yaml", budget="inf").settings[0].mechanism is None


@pytest.mark.parametrize("value", ["1.0e-310", "1e-200"])
def test_a_tiny_budget_is_named_as_the_budget(tmp_path, capsys, value):
    status, _, err = checked_cli(capsys, "run", ROOT / "configs" / "shi_budgets.yaml", "--set", f"budget={value}",
                         "--out", tmp_path / "o")
    line = one_line_error_after_warnings(status, err, "budget = ", "is too small", "at least 1e-150")
    assert "mu =" not in line


@pytest.mark.slow  # a per-user-budget trajectory run and its figure (28 s of kernels, cold): CI's slow tier
def test_drawing_a_run_whose_noise_overflows_prints_no_raw_warning(tmp_path, capsys):
    # a per-user budget from 1e-300: a noise variance of 1e300 on the figure's log axis (matplotlib warned)
    status, _, err = checked_cli(capsys, "run", ROOT / "configs" / "shi_budgets.yaml", "--reps", "2", "--n", "2000",
                         "--set", "budget=[null, {uniform: [1e-300, 1]}]", "--set", "mu=1", "--out", tmp_path / "o",
                         "--quiet", "--n-jobs", "1")
    assert status == 0  # and cli() checked that every stderr line is ldpsim's

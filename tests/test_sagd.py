"""SAGD (paper 001): privacy formulas, the models' exact population risks, the oracles, the update, the studies.

Statistical checks state their tolerance in Monte Carlo standard errors.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import integrate, special, stats

import ldpsim
from ldpsim.engine.dialect.rng import as_generator, kernel_rng
from ldpsim.models.erm import ErmModel, conditional_dloss, conditional_loss, empirical_gradient, sample_dloss, \
    sphere_plane_rule
from ldpsim.privacy.composition import above_threshold_epsilon, advanced_composition, basic_composition, \
    composition_epsilon, laplace_epsilon
from ldpsim.studies import resolve
from ldpsim.studies.sagd.accounting import lap_privacy, lemma1_check, sparse_privacy, theorem_range
from ldpsim.studies.sagd.common import pooled_frequency
from ldpsim.studies.sagd.kernel import ADAM, DIVERGED, LAP, MIN_G2, PAID, RMSPROP, SPARSE, STEPS, PathParams, \
    draw_data, lap_oracle, replicate_paths, sparse_oracle

from run_helpers import checked_cli, no_work, one_line_error_after_warnings, write


def run_params(method, T, **kw):
    base = dict(method=method, T=T, n_batches=1, n1=0, eta=0.1, nu=0.1, beta1=0.9, beta2=0.9, sigma=0.3,
                threshold=1.2, budget=T, track=True)
    base.update(kw)
    return PathParams(**base)


# --- privacy formulas (ldpsim.privacy.composition) ----------------------------------------------------------


def test_advanced_composition_is_dwork_roth_theorem_3_20():
    # Dwork & Roth (2014), Thm 3.20: eps' = sqrt(2 k ln(1/delta')) eps0 + k eps0 (e^eps0 - 1), delta = k delta0 + delta'
    eps, delta = advanced_composition(0.1, 100, 1e-5, delta0=1e-7)
    assert eps == pytest.approx(math.sqrt(200 * math.log(1e5)) * 0.1 + 100 * 0.1 * (math.exp(0.1) - 1), rel=1e-14)
    assert eps == pytest.approx(5.8503, abs=1e-4)
    assert delta == pytest.approx(100 * 1e-7 + 1e-5)
    assert advanced_composition(0.5, 0, 1e-5) == (0.0, 1e-5)
    assert basic_composition(0.1, 100) == (pytest.approx(10.0), 0.0)
    # advanced beats basic for many small steps, not for few large ones
    assert composition_epsilon(0.01, 10_000, 1e-5) == advanced_composition(0.01, 10_000, 1e-5)[0] < 100
    assert composition_epsilon(2.0, 3, 1e-5) == 6.0
    with pytest.raises(ValueError, match="delta_prime"):
        advanced_composition(0.1, 3, 0.0)
    with pytest.raises(ValueError, match="k must be"):
        advanced_composition(0.1, 2.5, 1e-5)


def test_laplace_and_above_threshold_epsilons():
    assert laplace_epsilon(2.0, 4.0) == 0.5
    # Dwork & Roth Thm 3.23: rho ~ Lap(2 D / eps), nu ~ Lap(4 D / eps) is eps-DP
    assert above_threshold_epsilon(0.3, 2 * 0.3 / 0.7, 4 * 0.3 / 0.7) == pytest.approx(0.7)
    # Thresholdout's Lap(2 sigma), Lap(4 sigma): D / sigma
    assert above_threshold_epsilon(0.02, 0.2, 0.4) == pytest.approx(0.2)
    with pytest.raises(ValueError):
        laplace_epsilon(1.0, 0.0)


def test_laplace_mechanism_density_ratio_is_bounded_by_e_to_the_epsilon():
    # the privacy loss of Lap(b) on a query moved by D never exceeds D / b
    b, D = 0.7, 0.3
    x = np.linspace(-5, 5, 2001)
    ratio = stats.laplace.pdf(x, scale=b) / stats.laplace.pdf(x, loc=D, scale=b)
    assert np.log(ratio).max() == pytest.approx(laplace_epsilon(D, b), rel=1e-12)


def test_lemma_values_as_printed_and_derived():
    g1, n, sigma, T, delta = 3.0, 2000, 1.0, 445, 1e-5
    p = lap_privacy(g1, n, sigma, T, 1, delta)
    assert p["epsilon_lemma"] == pytest.approx(math.sqrt(T * math.log(1 / delta)) * g1 / (n * sigma))  # statement
    assert p["epsilon_lemma_proof"] == pytest.approx(2 * p["epsilon_lemma"])  # its proof's last line
    assert p["epsilon_step"] == pytest.approx(2 * g1 / (n * sigma))  # replace-one l1 sensitivity 2 G1 / n
    assert p["epsilon_advanced"] == pytest.approx(advanced_composition(2 * g1 / (n * sigma), T, delta)[0])
    assert p["epsilon"] == min(p["epsilon_pld"], p["epsilon_advanced"], p["epsilon_basic"])
    # mini-batches: each of B = 10 disjoint batches of 200 is seen ceil(T / B) times
    pb = lap_privacy(g1, n, sigma, T, 10, delta)
    assert pb["compositions"] == 45 and pb["epsilon_step"] == pytest.approx(2 * g1 / (200 * sigma))
    s = sparse_privacy(g1, n, sigma, 112, delta)
    # one paying answer: AboveThreshold D / sigma plus Laplace D / sigma, D = 2 G1 / |S1|
    assert s["epsilon_step"] == pytest.approx(2 * (2 * g1 / 1000) / sigma)
    assert s["epsilon_lemma"] == pytest.approx(math.sqrt(112 * math.log(2 / delta)) * 2 * g1 / (n * sigma))
    # Thm 3.20 over the 2 C_s pure mechanisms of D / sigma (tests/test_composition.py has the PLD)
    assert s["epsilon_advanced"] == pytest.approx(advanced_composition(s["epsilon_step"] / 2, 224, delta)[0])


def test_theorem_ranges_and_lemma1_check():
    lo, hi = theorem_range("lap", 3.0, 2000, 1.0, 0.01)
    assert lo == pytest.approx(2 * 2000 / 9) and hi == pytest.approx(2000 ** 2 / (169 * math.log(100) * 9))
    lo3, hi3 = theorem_range("sparse", 3.0, 2000, 1.0, 0.01)
    assert lo3 == pytest.approx(lo / 4) and hi3 == pytest.approx(hi / 4)
    assert theorem_range("lap", 3.0, 2000, 200.0, 0.01)[1] == 0.0  # sigma beta >= 1: empty
    c = lemma1_check("lap", 3.0, 2.0, 2000, 1.0, 0.01, 445, 1, 0)
    tau = 0.5
    delta_star = tau * 0.01 / (26 * math.log(26 / tau))
    assert c["delta_star"] == pytest.approx(delta_star)
    assert c["epsilon_max"] == pytest.approx(tau / 13)
    assert c["n_min"] == pytest.approx(2 * math.log(8 / delta_star) / (tau / 13) ** 2)
    assert not c["lemma1_ok"]  # n = 2000 < n_min = 16 241
    assert lemma1_check("lap", 3.0, 2.0, 2000, 2.0, 0.01, 445, 1, 0)["lemma1_vacuous"]


# --- models -------------------------------------------------------------------------------------------------


def test_sphere_rule_moments():
    for p in (2, 3, 4, 10):
        u1, u2, w = sphere_plane_rule(p, 12)
        assert w.sum() == pytest.approx(1.0)
        # S uniform on the sphere of R^p: E U^2 = 1/p, E U^4 = 3 / (p (p + 2)), E U1^2 U2^2 = 1 / (p (p + 2))
        assert w @ u1 ** 2 == pytest.approx(1 / p, rel=1e-13)
        assert w @ u2 ** 2 == pytest.approx(1 / p, rel=1e-13)
        assert w @ u1 ** 4 == pytest.approx(3 / (p * (p + 2)), rel=1e-12)
        assert w @ (u1 ** 2 * u2 ** 2) == pytest.approx(1 / (p * (p + 2)), rel=1e-12)
        assert abs(w @ (u1 * u2)) < 1e-15 and abs(w @ u2) < 1e-15


@pytest.mark.parametrize("name", ["logistic", "welsch"])
def test_population_gradient_and_loss_against_monte_carlo(name):
    model = ErmModel(name, 5, nodes=32)
    rng = np.random.default_rng(8)
    X, y = np.empty((200_000, 5)), np.empty(200_000)
    draw_data(model.kernel_params(), kernel_rng(as_generator(11)), X, y)
    assert np.allclose(np.linalg.norm(X[:, 1:], axis=1), model.radius) and np.all(X[:, 0] == 1.0)
    for w in (np.zeros(5), model.beta + rng.normal(size=5)):
        u = X @ w  # per-sample gradients written out again with numpy, independently of the module
        psi = special.expit(u) - y if name == "logistic" else -(y - u) * np.exp(-(y - u) ** 2 / 2)
        per = psi[:, None] * X
        se = per.std(axis=0, ddof=1) / math.sqrt(len(y))
        z = (per.mean(axis=0) - model.population_gradient(w)) / se
        assert np.abs(z).max() < 4.5, z
    # more nodes change nothing: the rule has converged
    w = model.beta + np.array([0.5, -1.0, 2.0, 0.3, -0.7])
    finer = ErmModel(name, 5, nodes=80)
    np.testing.assert_allclose(model.population_gradient(w), finer.population_gradient(w), rtol=0, atol=1e-13)
    assert model.population_loss(w) == pytest.approx(finer.population_loss(w), abs=1e-13)


def test_population_loss_is_minimal_at_beta_and_gradient_is_its_derivative():
    for name in ("logistic", "welsch"):
        model = ErmModel(name, 6, signal=1.5, radius=0.8, nodes=24)
        assert np.abs(model.population_gradient(model.beta)).max() < 1e-14
        rng = np.random.default_rng(3)
        w = model.beta + rng.normal(size=6) * 0.5
        h = 1e-6
        numeric = np.array([(model.population_loss(w + h * e) - model.population_loss(w - h * e)) / (2 * h)
                            for e in np.eye(6)])
        np.testing.assert_allclose(model.population_gradient(w), numeric, atol=1e-8)
        for _ in range(5):
            assert model.population_loss(model.beta + rng.normal(size=6) * 0.3) > model.f_star()


def test_welsch_conditional_risk_is_the_gaussian_convolution():
    model = ErmModel("welsch", 4, noise=0.7, scale=1.3)
    p = model.kernel_params().loss
    for ub, uw in ((0.3, -1.1), (2.0, 2.5), (0.0, 0.0)):
        def loss(e):
            r = ub + e - uw
            return 1.3 ** 2 * (1 - math.exp(-r * r / (2 * 1.3 ** 2))) * stats.norm.pdf(e, scale=0.7)

        def dloss(e):
            r = ub + e - uw
            return -r * math.exp(-r * r / (2 * 1.3 ** 2)) * stats.norm.pdf(e, scale=0.7)

        assert conditional_loss(p, ub, uw) == pytest.approx(integrate.quad(loss, -12, 12)[0], abs=1e-10)
        assert conditional_dloss(p, ub, uw) == pytest.approx(integrate.quad(dloss, -12, 12)[0], abs=1e-10)


@pytest.mark.parametrize("name", ["logistic", "welsch"])
def test_gradient_bounds_hold_on_a_sample(name):
    model = ErmModel(name, 7, radius=1.3, nodes=8)
    X, y = model.draw(as_generator(2), 5000)
    rng = np.random.default_rng(0)
    params = model.kernel_params()
    for _ in range(3):
        w = rng.normal(size=7) * 3
        psi = np.array([sample_dloss(params.loss, u, t) for u, t in zip(X @ w, y)])
        grads = psi[:, None] * X
        assert np.abs(grads).sum(axis=1).max() <= model.g1
        assert (grads.max(axis=0) - grads.min(axis=0)).max() <= model.coordinate_range
    # L bounds the population gradient's Lipschitz constant
    for _ in range(5):
        a, b = rng.normal(size=7) * 2, rng.normal(size=7) * 2
        ratio = np.linalg.norm(model.population_gradient(a) - model.population_gradient(b)) / np.linalg.norm(a - b)
        assert ratio <= model.smoothness


# --- oracles ------------------------------------------------------------------------------------------------


def test_lap_oracle_adds_laplace_noise_of_scale_sigma():
    gen = as_generator(5)
    g = np.array([0.1, -0.2, 0.3])
    out = np.empty(3)
    draws = np.empty((40_000, 3))
    for i in range(draws.shape[0]):
        lap_oracle(gen, g, 0.5, out)
        draws[i] = out - g
    # Kolmogorov-Smirnov against Lap(0.5) for each coordinate, and a check of the mean absolute value (= sigma)
    for j in range(3):
        assert stats.kstest(draws[:, j], stats.laplace(scale=0.5).cdf).pvalue > 1e-3
    mad = np.abs(draws).mean()
    assert abs(mad - 0.5) < 4 * 0.5 / math.sqrt(draws.size)  # sd of |Lap(b)| is b


def test_sparse_oracle_answers_s2_below_and_noisy_s1_above_the_noisy_threshold():
    g1, g2 = np.array([0.4, 0.0, 0.0]), np.array([0.0, 0.0, 0.0])  # gap 0.4
    out = np.empty(3)
    paid, gamma = sparse_oracle(as_generator(1), g1, g2, math.inf, 0.0, 0.1, out)
    assert not paid and gamma == 0.0 and np.array_equal(out, g2)
    paid, gamma = sparse_oracle(as_generator(1), g1, g2, -math.inf, 0.0, 0.1, out)
    assert paid and gamma != 0.0 and not np.array_equal(out, g1)
    # with a fresh gamma ~ Lap(2 sigma) per query, P(pay) = P(gamma + eta > tau - gap), eta ~ Lap(4 sigma)
    sigma, tau = 0.1, 0.55
    gen = as_generator(9)
    reps = 40_000
    hits = 0
    for _ in range(reps):
        gamma = 2 * sigma * (gen.standard_exponential() - gen.standard_exponential())
        hits += sparse_oracle(gen, g1, g2, tau, gamma, sigma, out)[0]
    a, b, x = 4 * sigma, 2 * sigma, tau - 0.4  # tail of Lap(a) + Lap(b) at x > 0
    exact = (a * a * math.exp(-x / a) - b * b * math.exp(-x / b)) / (2 * (a * a - b * b))
    assert abs(hits / reps - exact) < 4 * math.sqrt(exact * (1 - exact) / reps)


def test_sparse_budget_halts_the_run_and_counts_paid_queries():
    model = ErmModel("logistic", 4, nodes=6)
    runs = [run_params(SPARSE, 50, n1=30, threshold=-math.inf, budget=7),
            run_params(SPARSE, 50, n1=30, threshold=math.inf, budget=7)]
    halted, never = replicate_paths(model, as_generator(3), 60, runs, 0.0, [1.0], [])
    assert halted.stats[STEPS] == 7 and halted.stats[PAID] == 7
    assert never.stats[STEPS] == 50 and never.stats[PAID] == 0
    # below the threshold the answer is g^_S2 exactly: the empirical-error count is the S1-S2 gap's
    assert never.exceed[-1] >= 0 and halted.stats[DIVERGED] == 0


def test_fixed_point_lap_path_counts_match_the_laplace_law():
    # eta = 0: w never moves, each step is an independent draw of the oracle at w0; the empirical-error count
    # is then P(||b|| >= sqrt(d) sigma mu) for b i.i.d. Lap(sigma), estimated here independently by numpy
    model = ErmModel("logistic", 4, nodes=6)
    mu = np.array([0.5, 1.0, 1.5])
    T = 20_000
    (res,) = replicate_paths(model, as_generator(4), 50, [run_params(LAP, T, eta=0.0)], 0.0, mu, [])
    freq = res.exceed[3:6] / T
    ref_draws = np.random.default_rng(1).laplace(size=(400_000, 4))
    ref = (np.linalg.norm(ref_draws, axis=1)[:, None] >= 2.0 * mu).mean(axis=0)
    se = np.sqrt(ref * (1 - ref) / T + ref * (1 - ref) / 400_000)
    assert np.all(np.abs(freq - ref) < 4 * se), (freq, ref)
    assert np.all(freq <= 4 * np.exp(-mu))  # Theorem 1's empirical part d e^-mu


# --- the adaptive update ------------------------------------------------------------------------------------


def _gradient(model, X, y, w, lo, hi):
    out = np.zeros(len(w))
    empirical_gradient(model.kernel_params(), X, y, w, lo, hi, out)
    return out


def test_rmsprop_and_adam_updates_by_hand():
    model = ErmModel("welsch", 4, nodes=6)
    n, eta, nu, b1, b2 = 40, 0.05, 0.01, 0.8, 0.95
    X, y = model.draw(as_generator(6), n)
    runs = [run_params(RMSPROP, 3, eta=eta, nu=nu, beta2=b2, track=False),
            run_params(ADAM, 3, eta=eta, nu=nu, beta1=b1, beta2=b2, track=False),
            run_params(RMSPROP, 5, eta=eta, nu=nu, beta2=b2, n_batches=4, track=False)]
    rms, adam, mini = replicate_paths(model, as_generator(6), n, runs, 0.2, [1.0], [])
    w, v = np.full(4, 0.2), np.zeros(4)
    for _ in range(3):  # 001, Algorithm 1 / Theorem 7: v_t = b2 v + (1 - b2) g^2, w -= eta g / (sqrt(v) + nu)
        g = _gradient(model, X, y, w, 0, n)
        v = b2 * v + (1 - b2) * g * g
        w = w - eta * g / (np.sqrt(v) + nu)
    np.testing.assert_allclose(rms.w, w, rtol=1e-13)
    w, m, v = np.full(4, 0.2), np.zeros(4), np.zeros(4)
    for t in range(1, 4):  # Kingma & Ba: bias-corrected moments
        g = _gradient(model, X, y, w, 0, n)
        m, v = b1 * m + (1 - b1) * g, b2 * v + (1 - b2) * g * g
        w = w - eta * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + nu)
    np.testing.assert_allclose(adam.w, w, rtol=1e-13)
    w, v = np.full(4, 0.2), np.zeros(4)
    for t in range(5):  # batches [k n / B, (k + 1) n / B) in order, cycling
        k = t % 4
        g = _gradient(model, X, y, w, k * n // 4, (k + 1) * n // 4)
        v = b2 * v + (1 - b2) * g * g
        w = w - eta * g / (np.sqrt(v) + nu)
    np.testing.assert_allclose(mini.w, w, rtol=1e-13)


def test_tracked_statistics_and_checkpoints():
    model = ErmModel("logistic", 5, nodes=8)
    n, T = 80, 12
    run = run_params(LAP, T, sigma=0.2)
    (res,) = replicate_paths(model, as_generator(10), n, [run], 0.0, [1.0], [0, 4, 12])
    assert res.stats[STEPS] == T
    assert res.stats[MIN_G2] <= np.sum(model.population_gradient(np.zeros(5)) ** 2)
    assert res.test[0] == pytest.approx(math.log(2.0))  # f(0) = ln 2 for the logistic loss
    assert res.train[0] == pytest.approx(math.log(2.0))
    assert np.isfinite(res.test).all() and np.isfinite(res.train).all()
    assert res.test[-1] == pytest.approx(model.population_loss(res.w))


def test_divergence_is_counted_not_raised():
    model = ErmModel("logistic", 4, nodes=6)
    (res,) = replicate_paths(model, as_generator(0), 20, [run_params(RMSPROP, 5, eta=math.inf)], 0.0, [1.0], [])
    assert res.stats[DIVERGED] == 1.0 and res.stats[STEPS] == 1


@pytest.mark.parametrize("name", ["logistic", "welsch"])
def test_kernel_equals_twin_for_every_method(name):
    model = ErmModel(name, 5, nodes=6)
    runs = [run_params(LAP, 25), run_params(SPARSE, 25, n1=60, budget=6, threshold=0.05),
            run_params(RMSPROP, 25, n_batches=3), run_params(ADAM, 25, track=False),
            run_params(LAP, 25, n_batches=7, track=False)]
    mu, ck = [0.3, 1.0, 2.0], [0, 3, 10, 25]
    kernel = replicate_paths(model, as_generator(21), 120, runs, 0.1, mu, ck)
    twin = replicate_paths(model, as_generator(21), 120, runs, 0.1, mu, ck, twin=True)
    for a, b in zip(kernel, twin):
        for x, z in zip(a, b):
            np.testing.assert_array_equal(x, z)


# --- the studies --------------------------------------------------------------------------------------------


def test_pooled_frequency_is_the_mean_of_per_replication_frequencies_when_steps_agree():
    counts, steps = np.array([3, 5, 0, 2]), np.full(4, 10)
    f, se = pooled_frequency(counts, steps)
    per = counts / 10
    assert f == pytest.approx(per.mean()) and se == pytest.approx(per.std(ddof=1) / 2)


def test_config_errors_name_the_key():
    with pytest.raises(ldpsim.ConfigError, match=r"^batch_size = 10 with DPG-Sparse"):
        resolve({"study": "sagd_concentration", "batch_size": 10, "n": 100, "oracle": "sparse"})
    with pytest.raises(ldpsim.ConfigError, match=r"^budget = 'all' is not an integer in \[1, 2\^53\] or one of: theorem, T"):
        resolve({"study": "sagd_concentration", "budget": "all"})
    with pytest.raises(ldpsim.ConfigError, match=r"^mu contains -1, outside \(0, inf\)"):
        resolve({"study": "sagd_concentration", "mu": [1, -1]})
    with pytest.raises(ldpsim.ConfigError, match=r"^d = 2 is outside \[3, 1000\]"):
        resolve({"study": "sagd_rate", "d": 2})
    with pytest.raises(ldpsim.ConfigError, match=r"^eta = 'auto' is not a number > 0 or one of: theorem"):
        resolve({"study": "sagd_generalization", "eta": "auto"})
    with pytest.raises(ldpsim.ConfigError, match=r"^methods contains 'sgd'"):
        resolve({"study": "sagd_generalization", "methods": ["sgd"]})


def test_concentration_summary_interface_and_bound():
    with pytest.warns(ldpsim.ConfigWarning, match=r"T or C_s outside the range of Theorem 1 or 3 in 4 of 4 settings"):
        result = ldpsim.run({"study": "sagd_concentration", "n": 300, "sigma": [1.0, 2.0], "reps": 4, "seed": 2,
                             "mu": [0.5, 2.0], "nodes": 8}, n_jobs=1, progress=False)
    rows = result.rows
    assert len(rows) == 2 * 2 * 2
    for col in ("oracle", "sigma", "mu", "frequency", "frequency_se", "bound"):
        assert col in rows[0]
    for r in rows:
        assert r["bound"] == pytest.approx(5 * 0.01 + 5 * math.exp(-r["mu"]))
        assert 0.0 <= r["frequency"] <= 1.0
    privacy = result.tables["privacy"]
    sparse = [p for p in privacy if p["oracle"] == "sparse"]
    assert all(p["queries"] <= p["budget"] < p["T"] for p in sparse)
    # settings that differ in oracle and sigma share their training sets (common random numbers)
    assert len({s.seed_key for s in result.config.settings}) == 1


def test_rate_and_generalization_tables():
    rate = ldpsim.run({"study": "sagd_rate", "n": [200, 400, 800], "T_factor": 3e3, "reps": 3, "nodes": 6},
                      n_jobs=1, progress=False)
    rates = rate.tables["rates"]
    assert [r["estimator"] for r in rates] == ["min", "mean"]
    for col in ("estimator", "slope", "slope_lo", "slope_hi", "theory"):
        assert col in rates[0]
    assert rates[0]["theory"] == pytest.approx(-2 / 3) and rates[0]["slope_lo"] <= rates[0]["slope"]
    gen = ldpsim.run({"study": "sagd_generalization", "n": 60, "d": 6, "epochs": 20, "checkpoints": 4, "reps": 3,
                      "nodes": 6}, n_jobs=1, progress=False)
    over = {r["method"]: r for r in gen.tables["overfit"]}
    assert set(over) == {"sagd_lap", "sagd_sparse", "rmsprop", "adam"}
    assert over["rmsprop"]["vs_rmsprop"] == 0.0
    epochs = sorted({r["epoch"] for r in gen.rows})
    assert epochs == [0, 5, 10, 15, 20]
    assert "DPG-Lap" in gen.render() and "Lemma 2 as printed" in gen.render()


@pytest.mark.slow
def test_concentration_frequencies_stay_below_the_bound_inside_the_theorems():
    # Theorems 1 and 3: inside their printed conditions the frequency must not exceed d beta + d e^-mu;
    # tolerance 3 cluster SEs per cell (24 cells)
    result = ldpsim.run({"study": "sagd_concentration", "n": 2000, "sigma": [1.0, 2.0], "model": ["logistic", "welsch"],
                         "mu": [0.5, 1.0, 1.5, 2.0, 3.0, 4.0], "reps": 60, "seed": 5}, n_jobs=1, progress=False)
    assert all(p["theorem_ok"] for p in result.tables["privacy"])
    for r in result.rows:
        se = r["frequency_se"] if math.isfinite(r["frequency_se"]) else 0.0
        assert r["frequency"] <= r["bound"] + 3 * se, r
        assert r["frequency_empirical"] <= r["bound_empirical"] + 3 * r["frequency_empirical_se"], r
    sparse = [p for p in result.tables["privacy"] if p["oracle"] == "sparse"]
    assert all(p["queries"] < p["T"] for p in sparse)


# --- extreme settings ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [1, 1e-9])
def test_sagd_rate_refuses_paths_of_one_step(tmp_path, capsys, monkeypatch, factor):
    no_work(monkeypatch)
    status, _, err = checked_cli(capsys, "run", write(tmp_path, {"study": "sagd_rate", "T_factor": factor}), "--out",
                         tmp_path / "o", "--quiet")
    one_line_error_after_warnings(status, err, f"T_factor = {float(factor)!r}", "= 1 step at n = 1000", "needs T >= 2",
                   "raise T_factor")


def test_sagd_rate_by_default_runs_paths_of_many_steps():
    from ldpsim.studies.sagd.common import build_model
    from ldpsim.studies.sagd.rate import schedule

    config = ldpsim.load_config({"study": "sagd_rate"})
    assert min(schedule(s, build_model(s))[1] for s in config.settings) >= 100


def test_an_empty_theorem_range_is_called_empty():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ldpsim.load_config({"study": "sagd_concentration", "n": 200, "sigma": 0.5, "T": 20, "mu": [1, 2],
                            "reps": 2, "nodes": 8, "oracle": "lap"})
    text = " ".join(str(w.message) for w in caught)
    assert "Theorem 1's range of T is empty at sigma = 0.5, n = 200, beta = 0.01" in text, text
    assert "[11.11, 0.3102]" not in text


def test_a_generalization_figure_of_many_checkpoints_draws_without_warnings(tmp_path):
    from ldpsim.studies.sagd.figures import generalization_figure

    epochs = np.arange(0, 100001, 5)  # 20001 checkpoints a method, as epochs = 1e6, checkpoints = 1e5 gives
    rows = [{"method": m, "epoch": int(e), "train_loss": 0.5 + 1 / (e + 1), "train_loss_se": 0.01,
             "test_loss": 0.6 + 1 / (e + 1), "test_loss_se": 0.01, "f_star": 0.5} for m in ("sagd_lap", "adam")
            for e in epochs]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert generalization_figure(tmp_path, {"summary": rows}) == ["generalization.png"]

"""The trajectory study: kernel against its twin, a known answer, the rate fit, the outputs."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ldpsim
from ldpsim.engine.errors import ConfigError, ConfigWarning
from ldpsim.engine.dialect.rng import as_generator
from ldpsim.inference.streaming import StreamLayout, checkpoint_grid
from ldpsim.models import MODELS
from ldpsim.recursion.kernels import EXACT_STEPS_BELOW, run_path
from ldpsim.recursion.twins import step_sizes_twin
from ldpsim.reporting.stats import loglog_slope
from ldpsim.studies import resolve
from ldpsim.studies.trajectory.kernel import run_trajectory, trajectory_twin
from ldpsim.studies.trajectory.study import theory_slope
from ldpsim.studies.trajectory.theory import linearized_mse, mean_field, shi_table1_slope

from run_helpers import ROOT, checked_cli, cli, online_model, one_line_error, write

CASES = [
    ("quantile", dict(tau=0.5, epsilon=1.0)),
    ("quantile", dict(tau=0.9, epsilon=math.inf)),
    ("mean", dict(epsilon=1.0)),
    ("mean", dict(epsilon=2.0, mechanism="gaussian", delta=1e-5)),
    ("quantile_regression", dict(tau=0.5, epsilon=1.0)),
    ("linear", dict(epsilon=1.0, clip=1.5, covariates="uniform")),
    ("logistic", dict(epsilon=3.0, mechanism="gaussian", delta=1e-5)),
    # 004's online models: the scale projection, per-user budgets, clipping
    ("huber_mallows", dict(dim=3, mechanism="gdp", mu=1.0)),
    ("huber_clip", dict(dim=2, mechanism="laplace", budget="uniform(1, 3)", clip=1.5)),
    ("logistic_clip", dict(dim=3, mechanism="gaussian_classical", delta=1e-5, budget="uniform(0.5, 1)", clip=1.0)),
]
IDS = [f"{name}-{i}" for i, (name, _) in enumerate(CASES)]


@pytest.mark.parametrize("batch_size", [1, 3])
@pytest.mark.parametrize("name,kwargs", CASES, ids=IDS)
def test_kernel_equals_twin_exactly(name, kwargs, batch_size):
    # past 4096 steps: the ratio step sizes and several powers of two are exercised
    model = MODELS[name](**kwargs)
    n = EXACT_STEPS_BELOW + 1500 if batch_size == 1 else 1200
    checkpoints = checkpoint_grid(n, 25, 3)
    got = run_trajectory(model, as_generator(5), n, 0.8, 0.6, 0.1, checkpoints, batch_size)
    gen = as_generator(5)
    want = trajectory_twin(model, gen, n, 0.8, 0.6, 0.1, checkpoints, batch_size)
    assert got[2] == want[2] == n
    np.testing.assert_array_equal(got[0], want[0])
    np.testing.assert_array_equal(got[1], want[1])
    assert np.isfinite(got[0]).all() and np.isfinite(got[1]).all()


@pytest.mark.parametrize("name,kwargs", [CASES[0], CASES[4]], ids=["quantile", "quantile_regression"])
def test_paths_are_the_coverage_studys_paths(name, kwargs):
    # same draws in the same order: the average at n is the coverage kernel's theta_bar
    model = MODELS[name](**kwargs)
    n = 20_000
    _, average, _ = run_trajectory(model, as_generator(9), n, 1.0, 0.51, 0.0, np.array([n]))
    state = run_path(model, as_generator(9), n, 1.0, 0.51, 0.0, StreamLayout.build(n, 0.75, 0.51))
    np.testing.assert_allclose(average[0], state.theta_bar - model.theta_star(), rtol=1e-8, atol=1e-15)


def _mean_model_exact(n, c, gamma, theta0, checkpoints, variance):
    """Exact E(theta_k - 1/2)^2 and E(theta_bar_k - 1/2)^2 of SGD for the mean model.

    e_i = theta_i - 1/2 = (1 - eta_i) e_(i-1) + eta_i xi_i, xi_i i.i.d. with
    mean 0 and variance s^2 (the gradient is theta - X - L, linear in theta).
    Then E e_k^2 = P_k^2 e_0^2 + s^2 sum_j eta_j^2 (P_k / P_j)^2 by the
    recursion v_i = (1 - eta_i)^2 v_(i-1) + eta_i^2 s^2, and
    sum_(i<=k) e_i = e_0 sum_i P_i + sum_j eta_j xi_j R_j with
    R_j = sum_(i=j..k) prod_(l=j+1..i) (1 - eta_l) = 1 + (1 - eta_(j+1)) R_(j+1).
    """
    eta = step_sizes_twin(n, c, gamma)  # the kernel's own step sizes
    e0 = theta0 - 0.5
    last, average = [], []
    v = e0 * e0
    p = 1.0
    sum_p = 0.0
    vs, sums = [], []
    for i in range(n):
        v = (1.0 - eta[i]) ** 2 * v + eta[i] ** 2 * variance
        p *= 1.0 - eta[i]
        sum_p += p
        vs.append(v)
        sums.append(sum_p)
    for k in checkpoints:
        last.append(vs[k - 1])
        r = np.empty(k)
        r[k - 1] = 1.0
        for j in range(k - 2, -1, -1):
            r[j] = 1.0 + (1.0 - eta[j + 1]) * r[j + 1]
        var_sum = variance * float(np.sum(eta[:k] ** 2 * r**2))
        average.append(((e0 * sums[k - 1]) ** 2 + var_sum) / k**2)
    return np.array(last), np.array(average)


# the fast tier keeps one (17 s cold); the others in CI's slow tier
@pytest.mark.parametrize("c,gamma,epsilon", [(0.5, 0.75, 1.0), pytest.param(1.0, 1.0, math.inf, marks=pytest.mark.slow),
                                           pytest.param(2.0, 0.6, 2.0, marks=pytest.mark.slow)])
def test_mean_model_known_answer(c, gamma, epsilon):
    # tolerance: 4 Monte Carlo standard errors at each checkpoint
    n, reps = 3000, 1500
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)  # gamma = 1: outside the CLT of the average
        result = ldpsim.run({"study": "trajectory", "model": "mean", "epsilon": epsilon, "c": c, "gamma": gamma,
                             "theta0": 0.0, "n": n, "reps": reps, "seed": 11, "checkpoints": 8, "k_min": 2},
                            n_jobs=1, progress=False)
    model = MODELS["mean"](epsilon=epsilon)
    variance = float(model.gradient_covariance()[0, 0])  # Var(X + L) = 1/12 + Var(L)
    ks = checkpoint_grid(n, 8, 2)
    want_last, want_avg = _mean_model_exact(n, c, gamma, 0.0, ks, variance)
    for estimator, want in (("last", want_last), ("average", want_avg)):
        rows = sorted((r for r in result.rows if r["estimator"] == estimator), key=lambda r: r["k"])
        assert [r["k"] for r in rows] == list(ks)
        got = np.array([r["distance"] for r in rows])
        se = np.array([r["distance_se"] for r in rows])
        z = (got - want) / se
        assert np.all(np.abs(z) < 4), (estimator, z)


def test_mean_model_with_unit_steps_is_the_running_mean():
    # eta_i = 1/i makes theta_k the mean of the first k gradients' data: E = s^2 / k exactly
    model = MODELS["mean"](epsilon=math.inf)
    ks = np.array([1, 10, 100, 1000])
    last, _ = _mean_model_exact(1000, 1.0, 1.0, 0.3, ks, 1 / 12)
    np.testing.assert_allclose(last, 1 / 12 / ks, rtol=1e-12)
    got, _, _ = run_trajectory(model, as_generator(1), 1000, 1.0, 1.0, 0.3, ks)
    assert got.shape == (4, 1)


def test_loglog_slope_recovers_a_power_law_and_its_error():
    rng = np.random.default_rng(2)
    ks = np.geomspace(1e3, 1e4, 10)
    # distance_k = k^-0.7 times independent exponentials: slope -0.7; the delta-method SE
    # must match the spread of the slope over repeated samples (within 15%: 400 repeats)
    slopes, ses = [], []
    for _ in range(400):
        samples = ks**-0.7 * rng.exponential(size=(200, ks.size))
        fit = loglog_slope(ks, samples)
        slopes.append(fit["slope"])
        ses.append(fit["slope_se"])
        assert fit["slope_lo"] < fit["slope"] < fit["slope_hi"]
    assert abs(np.mean(slopes) + 0.7) < 4 * np.std(slopes) / math.sqrt(400)
    assert np.mean(ses) == pytest.approx(np.std(slopes, ddof=1), rel=0.15)
    exact = loglog_slope(ks, np.vstack([ks**-1.3, 2 * ks**-1.3]))
    assert exact["slope"] == pytest.approx(-1.3, abs=1e-12)
    assert math.isnan(loglog_slope(ks[:1], np.ones((5, 1)))["slope"])


def test_theory_slopes():
    assert theory_slope("last", 0.6) == -0.6 and theory_slope("average", 0.6) == -1.0
    assert theory_slope("average", 0.5) is None and theory_slope("last", 1.0) is None


def test_outputs_and_columns(tmp_path):
    out = tmp_path / "t"
    result = ldpsim.run({"study": "trajectory", "model": "quantile", "tau": [0.5, 0.9], "n": 5000, "reps": 6,
                         "seed": 1, "checkpoints": 12}, out=out, n_jobs=1, progress=False)
    for name in ("summary.csv", "rates.csv", "bias.csv", "guarantees.csv", "table.md", "meta.json", "trajectory.png"):
        assert (out / name).exists(), name
    assert list(result.rows[0]) == ["tau", "estimator", "metric", "k", "distance", "distance_se", "reps", "n_failed",
                                    "linearized", "transient"]
    assert {r["metric"] for r in result.rows} == {"parameter"}
    rates = result.tables["rates"]
    assert list(rates[0])[:7] == ["tau", "estimator", "metric", "slope", "slope_lo", "slope_hi", "theory"]
    assert [(r["tau"], r["estimator"]) for r in rates] == [(0.5, "last"), (0.5, "average"), (0.9, "last"),
                                                           (0.9, "average")]
    assert rates[0]["theory"] == -0.51 and rates[1]["theory"] == -1.0
    assert (out / "rates.csv").read_text().splitlines()[0].startswith(
        "tau,estimator,metric,slope,slope_lo,slope_hi,theory")
    text = (out / "table.md").read_text()
    assert "slope [95% CI]" in text and "| k = 10 " in text


def test_blank_theory_and_divergence_are_reported(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        result = ldpsim.run({"study": "trajectory", "model": "quantile", "gamma": 0.4, "n": 3000, "reps": 4,
                             "checkpoints": 10}, out=tmp_path / "low", n_jobs=1, progress=False)
        blown = ldpsim.run({"study": "trajectory", "model": "quantile", "c": 1e300, "n": 3000, "reps": 4},
                           n_jobs=1, progress=False)
    average = [r for r in result.tables["rates"] if r["estimator"] == "average"][0]
    assert average["theory"] is None
    header, _, second = (tmp_path / "low" / "rates.csv").read_text().splitlines()[:3]
    cells = dict(zip(header.split(","), second.split(",")))
    assert cells["estimator"] == "average" and cells["theory"] == ""  # blank: no rate known
    assert blown.meta["n_failed"] == 4 and all(r["reps"] == 0 for r in blown.rows)
    assert all(math.isnan(r["distance"]) for r in blown.rows)


@pytest.mark.parametrize("mapping,message", [
    ({"checkpoints": 1}, "checkpoints = 1 is outside [2, 10000]"),
    ({"k_min": 5000}, "k_min = 5000 is outside [1, n) = [1, 5000)"),
    ({"checkpoints": [10, 20]}, "checkpoints = [10, 20] must be a single integer, not a list"),
    ({"beta": 0.7}, "unknown key 'beta' in config"),
    ({"fit_decades": 0}, "fit_decades = 0.0 is outside (0, 16]"),
])
def test_trajectory_keys_are_validated(mapping, message):
    with pytest.raises(ConfigError) as info:
        resolve({"study": "trajectory", "n": 5000, **mapping})
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_settings_share_seeds_with_the_coverage_study():
    coverage = resolve({"model": "quantile", "tau": 0.9, "n": 5000})
    trajectory = resolve({"study": "trajectory", "model": "quantile", "tau": 0.9, "n": 5000})
    assert coverage.settings[0].seed_key == trajectory.settings[0].seed_key


@pytest.mark.parametrize("c,gamma,epsilon", [(0.5, 0.75, 1.0), (2.0, 0.6, 2.0)])
def test_linearized_recursion_is_exact_for_the_mean_model(c, gamma, epsilon):
    # the mean model's recursion is linear: linearized_mse must equal its exact moments (to rounding)
    n = 3000
    model = MODELS["mean"](epsilon=epsilon)
    ks = checkpoint_grid(n, 8, 2)
    want_last, want_avg = _mean_model_exact(n, c, gamma, 0.3, ks, float(model.gradient_covariance()[0, 0]))
    fit = linearized_mse(model.hessian(), model.gradient_covariance(), np.array([0.3 - 0.5]), n, c, gamma, ks)
    np.testing.assert_allclose(fit["last"][:, 0], want_last, rtol=1e-9)
    np.testing.assert_allclose(fit["average"][:, 0], want_avg, rtol=1e-9)
    assert np.all(fit["last_start"] <= fit["last"])


def test_linearized_recursion_in_several_directions():
    # a diagonal G with a non-diagonal S: the rotation to G's eigenbasis, checked against
    # the direct recursion of second moments E[e e'] (p x p) on a short path
    rng = np.random.default_rng(1)
    q, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    g = q @ np.diag([0.2, 0.7, 1.5]) @ q.T
    a = rng.standard_normal((3, 3))
    s = a @ a.T
    e0 = np.array([1.0, -0.5, 0.2])
    n, c, gamma = 400, 0.5, 0.6
    ks = np.array([1, 7, 50, 400])
    fit = linearized_mse(g, s, e0, n, c, gamma, ks)
    eta = step_sizes_twin(n, c, gamma)
    second, mean = np.zeros((3, 3)), e0.copy()
    for i in range(n):
        m = np.eye(3) - eta[i] * g
        second = m @ second @ m.T + eta[i] ** 2 * s  # noise part
        mean = m @ mean
        if i + 1 in ks:
            q_ = list(ks).index(i + 1)
            assert fit["last"][q_].sum() == pytest.approx(np.trace(second) + mean @ mean, rel=1e-10)
            np.testing.assert_allclose(fit["last_mean"][q_], mean, rtol=1e-10, atol=1e-14)


def test_table1_exponents():
    # 004, Table 1 (shi_rates): parameter and loss distances of LDP-SGD and LDP-ASGD
    assert [shi_table1_slope("parameter", e, 0.5) for e in ("last", "average")] == [-0.5, -1.0]
    assert shi_table1_slope("parameter", "average", 0.25) == -0.5  # n^-2a for a <= 1/2
    assert shi_table1_slope("parameter", "average", 1 / 3) == pytest.approx(-2 / 3)
    assert shi_table1_slope("loss", "last", 0.6) == pytest.approx(-0.3)  # n^-a/2
    assert shi_table1_slope("loss", "last", 0.75) == pytest.approx(-0.25)  # n^-(1-a)
    assert shi_table1_slope("loss", "average", 0.4) == pytest.approx(-0.4)  # n^-a
    assert shi_table1_slope("loss", "last", 0.2) is None  # "-" in the table
    assert all(shi_table1_slope(m, e, 1.0) is None for m in ("parameter", "loss") for e in ("last", "average"))
    # where two columns meet, their expressions agree
    for a in (1 / 3, 0.5, 2 / 3):
        for metric in ("parameter", "loss"):
            for estimator in ("last", "average"):
                below = shi_table1_slope(metric, estimator, a - 1e-12)
                above = shi_table1_slope(metric, estimator, a + 1e-12)
                if below is not None and above is not None:
                    assert below == pytest.approx(above, abs=1e-9)
    assert theory_slope("average", 0.4, "loss", "shi_table1") == pytest.approx(-0.4)
    assert theory_slope("average", 0.6, "loss") == -1.0  # strongly convex: the loss is quadratic near theta*


def test_mean_field_path_matches_the_linearized_transient_near_the_truth():
    # started close to theta* the noise-free path is the linearized one (up to O(eta) Euler terms)
    model = MODELS["logistic_mallows"](dim=3, mu=math.inf, mechanism=None)

    class Setting:
        theta0, n, c, gamma, batch_size = 0.99, 20_000, 0.2, 0.5, 1

    ks = checkpoint_grid(Setting.n, 10, 10)
    field = mean_field(model, Setting, ks)
    lin = linearized_mse(model.hessian(), model.gradient_covariance(), np.full(4, -0.01), Setting.n, 0.2, 0.5, ks)
    np.testing.assert_allclose(field["average"], lin["average_mean"], rtol=0.03, atol=1e-7)
    np.testing.assert_allclose(field["last"], lin["last_mean"], rtol=0.05, atol=1e-7)


@pytest.mark.slow  # 45 s cold: the 8-lane kernels of huber_mallows with a constant and a per-user budget, which
# the slow tier's every-model lanes checks compile too (the fast tier's time, README: Tests)
def test_loss_metric_bias_and_guarantee_tables(tmp_path):
    out = tmp_path / "h"
    result = ldpsim.run({"study": "trajectory", "model": "huber_mallows", "dim": 2, "mu": [1, 2],
                         "budget": [None, {"uniform": [1, 2]}], "c": 0.2, "gamma": 0.6, "n": 4000, "reps": 4,
                         "seed": 2, "checkpoints": 10, "metrics": ["parameter", "loss"], "theory": "shi_table1",
                         "panels": "budget"}, out=out, n_jobs=1, progress=False)
    rows = result.rows
    assert {r["metric"] for r in rows} == {"parameter", "loss"}
    assert all(r["distance"] > 0 and r["linearized"] > 0 and r["transient"] >= 0 for r in rows)
    rates = {(r["mu"], r["budget"], r["estimator"], r["metric"]): r for r in result.tables["rates"]}
    assert rates[(1.0, None, "last", "loss")]["theory"] == pytest.approx(-0.3)  # Table 1: n^-a/2 at a = 0.6
    assert rates[(1.0, None, "average", "parameter")]["theory"] == -1.0
    bias = result.tables["bias"]
    assert len(bias) == 3 * 2 * 4 and {r["coord"] for r in bias} == {0, 1, 2, 3}
    assert all(r["limit_bias"] == 0.0 for r in bias)
    guarantees = result.tables["guarantees"]
    assert [g["budget"] for g in guarantees] == [None, "uniform(1, 2)", None]
    assert "mu_i ~ uniform(1, 2)" in guarantees[1]["guarantee"]
    assert guarantees[1]["noise_variance"] == pytest.approx(guarantees[0]["noise_variance"] / 2)
    for name in ("trajectory.png", "trajectory_loss.png", "bias.csv", "guarantees.csv"):
        assert (out / name).exists(), name
    text = (out / "table.md").read_text()
    assert "Bias at k = n" in text and "mu_i ~ uniform(1, 2)" in text and "| loss " in text
    again = ldpsim.open_result(out)
    assert again.render() == result.render()


# --- extreme values -----------------------------------------------------------------------------------------


def test_trajectory_fit_decades_that_would_overflow_after_the_work(tmp_path, capsys):
    (tmp_path / "t.yaml").write_text("study: trajectory\nmodel: mean\nn: 2000\nreps: 2\nfit_decades: 1e300\n")
    status, _, err = cli(capsys, "run", tmp_path / "t.yaml", "--out", tmp_path / "o", "--quiet")
    one_line_error(status, err, "fit_decades = 1e+300 is outside (0, 16]")
    assert not (tmp_path / "o").exists()


@pytest.mark.slow  # 36 s (a huber_mallows trajectory kernel compiled for it): CI's slow tier
def test_the_noise_free_path_from_1e300_gives_up_instead_of_running_for_hours(tmp_path, capsys):
    # the kernel diverges at once; summarising used to integrate the ODE from 1e300 for more than 10 minutes
    mapping = {"study": "trajectory", "model": "huber_mallows", "dim": 2, "theta0": 1e300, "n": 2000, "reps": 2,
               "seed": 1}
    status, _, err = checked_cli(capsys, "run", write(tmp_path, mapping), "--out", tmp_path / "o", "--quiet",
                         "--n-jobs", "1")
    assert status == 0 and "2 replication(s) diverged" in err
    rows = ldpsim.open_result(tmp_path / "o").rows
    assert all(r["transient"] in (None, "") for r in rows)  # blank: no noise-free path from there
    status, _, err = checked_cli(capsys, "table", tmp_path / "o")  # its figure: panels with nothing to show (was an error)
    assert status == 0


def test_the_noise_free_path_gives_up_after_its_budget_of_evaluations(monkeypatch):
    from ldpsim.studies.trajectory import theory
    from ldpsim.studies.trajectory.study import setting_checkpoints

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)
        config = ldpsim.load_config(ROOT / "configs" / "shi_linear.yaml", dim=5, mu=1, gamma=0.6, n=20000)
    s = config.settings[0]
    model = online_model(dim=5, mu=1, gamma=0.6)
    assert theory.mean_field(model, s, setting_checkpoints(s, config.options)) is not None
    monkeypatch.setattr(theory, "MEAN_FIELD_CALLS", 10)
    assert theory.mean_field(model, s, setting_checkpoints(s, config.options)) is None

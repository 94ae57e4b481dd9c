"""The DP-SGD study (002): kernels against twins, interval formulas against known answers, keys, outputs, fit."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpsim
from ldpsim.engine.dialect.rng import as_generator
from ldpsim.inference import dpsgd as dpi
from ldpsim.inference.critical_values import random_scaling_critical_value
from ldpsim.inference.intervals import normal_quantile
from ldpsim.inference.streaming import StreamLayout
from ldpsim.privacy.gdp import gdp_epsilon
from ldpsim.studies import resolve
from ldpsim.studies.dpsgd import glm
from ldpsim.studies.dpsgd.kernel import (draw_data, draw_data_twin, run_dpgd, run_dpgd_twin, run_dpsgd,
                                         run_dpsgd_twin)

TOEPLITZ = glm.design_cholesky("toeplitz", 3)


# --- kernels ------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["linear", "logistic"])
@pytest.mark.parametrize("sampling", ["swor", "poisson", "cyclic"])
@pytest.mark.parametrize("m", [1, 3])
def test_dpsgd_kernel_equals_twin_and_streams_the_definitions(model, sampling, m):
    g1, g2 = as_generator(5), as_generator(5)
    data = draw_data(g1, model, TOEPLITZ, 40, glm.THETA_HI[model])
    data_twin = draw_data_twin(g2, model, TOEPLITZ, 40, glm.THETA_HI[model])
    for a, b in zip(data, data_twin):
        np.testing.assert_array_equal(a, b)
    layout = StreamLayout.build(1500, 0.6, 0.501)
    state, rate = run_dpsgd(g1, *data[1:], model, sampling, 1500, m, 0.5, 0.501, 2.0, 1.3, 0.0, layout)
    twin, rate_twin, path = run_dpsgd_twin(g2, *data_twin[1:], model, sampling, 1500, m, 0.5, 0.501, 2.0, 1.3, 0.0,
                                           layout)
    for field in ("theta_bar", "sn_v", "blocks", "batches"):
        np.testing.assert_array_equal(getattr(state, field), getattr(twin, field), err_msg=field)
    assert rate == rate_twin and 0 < rate < 1 and state.steps == 1500
    assert g1.random() == g2.random()  # both left the generator in the same place
    # the streamed state against the textbook definitions on the whole path
    bar = path.mean(axis=0)
    partial = np.cumsum(path - bar, axis=0)
    np.testing.assert_allclose(state.theta_bar, bar, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(state.sn_v, (partial**2).sum(axis=0) / 1500**2, rtol=1e-10)
    np.testing.assert_allclose(state.blocks, path[: layout.n_blocks * layout.block_len]
                               .reshape(layout.n_blocks, layout.block_len, 3).sum(axis=1), rtol=1e-12)


@pytest.mark.parametrize("model", ["linear", "logistic"])
def test_dpgd_kernel_equals_twin(model):
    g1, g2 = as_generator(8), as_generator(8)
    data = draw_data(g1, model, np.eye(3), 30, 1.0)
    draw_data_twin(g2, model, np.eye(3), 30, 1.0)
    a = run_dpgd(g1, *data[1:], model, 6, 0.5, 2.0, 0.05, 0.0)
    b = run_dpgd_twin(g2, *data[1:], model, 6, 0.5, 2.0, 0.05, 0.0)
    np.testing.assert_array_equal(a, b)


def test_noiseless_full_batch_dpgd_reaches_ols():
    gen = as_generator(3)
    theta_star, X, y, xnorm = draw_data(gen, "linear", np.eye(3), 200, 1.0)
    est = run_dpgd(gen, X, y, xnorm, "linear", 200, 0.5, math.inf, 0.0, 0.0)
    ols, _, _ = glm.full_sample_fit("linear", X, y)
    np.testing.assert_allclose(est, ols, rtol=1e-9)


def test_data_follow_the_design():
    gen = as_generator(11)
    theta_star, X, y, _ = draw_data(gen, "linear", TOEPLITZ, 40_000, 1.0)
    assert ((0 <= theta_star) & (theta_star <= 1)).all()
    se = np.sqrt((1 + glm.design_covariance("toeplitz", 3) ** 2) / 40_000)  # SE of a sample covariance entry
    assert (np.abs(X.T @ X / 40_000 - glm.design_covariance("toeplitz", 3)) < 4 * se).all()
    resid = y - X @ theta_star
    assert abs(resid.var() - 1.0) < 4 * math.sqrt(2 / 40_000)  # N(0, 1) errors
    theta_l, Xl, yl, _ = draw_data(gen, "logistic", np.eye(3), 40_000, 0.5)
    assert ((0 <= theta_l) & (theta_l <= 0.5)).all() and set(np.unique(yl)) == {0.0, 1.0}
    p = 1 / (1 + np.exp(-Xl @ theta_l))
    assert abs((yl - p).mean()) < 4 * math.sqrt((p * (1 - p)).mean() / 40_000)


@pytest.mark.slow
@pytest.mark.parametrize("sampling", ["swor", "poisson"])
def test_conditional_variance_of_the_average_is_formula_star(sampling):
    # Known answer: given the data, DP-SGD's average has covariance A^-1 (f S / m + sigma_1^2 I) A^-1 / T around
    # the full-sample fit (Theorem 2's phi_sam and phi_privacy; f = (n-m)/(n-1) or 1 - m/n); 300 paths on one
    # dataset, each diagonal entry within 4 Monte Carlo SEs (SE of a variance: sqrt(2 / (R - 1)) relative)
    gen = as_generator(21)
    n, m, steps, sigma1, reps = 60, 2, 60_000, 1.5, 300
    theta_star, X, y, xnorm = draw_data(gen, "linear", np.eye(3), n, 1.0)
    layout = StreamLayout.build(steps, 0.75, 0.6, blocks=False, batches=False)
    bars = np.array([run_dpsgd(gen, X, y, xnorm, "linear", sampling, steps, m, 0.5, 0.6, math.inf, sigma1, 0.0,
                               layout)[0].theta_bar for _ in range(reps)])
    ols, _, _ = glm.full_sample_fit("linear", X, y)
    a = X.T @ X / n
    r = X @ ols - y
    s = (X * (r * r)[:, None]).T @ X / n
    a_inv = np.linalg.inv(a)
    f = dpi.sampling_factor(sampling, n, m)
    want = np.diag(a_inv @ (f * s / m + sigma1**2 * np.eye(3)) @ a_inv) / steps
    got = bars.var(axis=0, ddof=1)
    assert (np.abs(got / want - 1) < 4 * math.sqrt(2 / (reps - 1))).all(), (got / want)
    assert (np.abs(bars.mean(axis=0) - ols) < 4 * np.sqrt(want / reps)).all()


# --- interval formulas -----------------------------------------------------------------


def test_sampling_factor_and_sandwich_known_answers():
    assert dpi.sampling_factor("swor", 500, 1) == 1.0
    assert dpi.sampling_factor("swor", 11, 3) == pytest.approx(0.8)
    assert dpi.sampling_factor("poisson", 500, 5) == pytest.approx(0.99)
    assert dpi.sampling_factor("cyclic", 500, 5) == 0.0
    v, a_inv2 = dpi.sandwich(np.diag([2.0, 4.0]), np.eye(2))
    np.testing.assert_allclose(v, np.diag([0.25, 0.0625]))
    np.testing.assert_allclose(a_inv2, np.diag([0.25, 0.0625]))
    # a non-diagonal A: (A^-2)_jj, not (A^-1_jj)^2 (item 9 of the reference corrections)
    a = np.array([[1.0, 0.5], [0.5, 1.0]])
    _, a_inv2 = dpi.sandwich(a, np.eye(2))
    assert a_inv2[0, 0] == pytest.approx(np.linalg.inv(a)[0] @ np.linalg.inv(a)[:, 0])
    assert a_inv2[0, 0] != pytest.approx(np.linalg.inv(a)[0, 0] ** 2)
    # an indefinite A~ is thresholded at the floor instead of giving a negative variance
    v, _ = dpi.sandwich(np.diag([1.0, -0.2]), np.eye(2), floor=0.1)
    np.testing.assert_allclose(np.diag(v), [1.0, 100.0])


def test_plugin_known_answer():
    z = normal_quantile(0.95)
    lo, hi = dpi.plugin(np.array([1.0]), np.array([2.0]), np.array([3.0]), sigma1=4.0, n=100, k=50.0, m=2, f=0.5,
                        level=0.95, corrected=False)
    assert hi[0] - 1.0 == pytest.approx(z * math.sqrt(2.0 / 100))
    lo, hi = dpi.plugin(np.array([1.0]), np.array([2.0]), np.array([3.0]), sigma1=4.0, n=100, k=50.0, m=2, f=0.5,
                        level=0.95)
    # (*): V + (f V + m sigma_1^2 A^-2) / (k m) = 2 + (1 + 96) / 100
    assert hi[0] - 1.0 == pytest.approx(z * math.sqrt((2.0 + 97.0 / 100) / 100))
    assert lo[0] == pytest.approx(2.0 - hi[0])


def test_random_scaling_factor_known_answers():
    v, a2 = np.array([2.0]), np.array([3.0])
    paper = dpi.random_scaling_factor(v, a2, sigma1=4.0, k=50.0, m=2, f=1.0, form="paper")
    exact = dpi.random_scaling_factor(v, a2, sigma1=4.0, k=50.0, m=2, f=1.0)
    assert paper[0] == pytest.approx(2.0 / (2.0 + 96.0))  # 002's (4.7)
    assert exact[0] == pytest.approx(2.0 / 98.0 + 1.0 / 100.0)  # plus 1 / (k m)
    lo, hi = dpi.random_scaling(np.array([0.0]), np.array([5.0]), n=100, level=0.9, factor=exact)
    assert hi[0] == pytest.approx(random_scaling_critical_value(0.9) * math.sqrt(exact[0] * 5.0 / 100))
    assert dpi.random_scaling_variance(np.array([0.5]), 3)[0] == 1.5


def test_corrected_random_scaling_is_pivotal_where_the_printed_one_is_not():
    # Known answer by the limit experiment: sqrt(n)(theta_bar - theta*) = N(0, V) + the path's average of i.i.d.
    # noise with variance Gamma = (f V + m s^2 A^-2) / m per step; V^ = (m / T^2) sum_t S_t^2. The exact factor
    # covers at the level (within 4 MC SEs); 002's (4.7) under-covers when sigma_1^2 A^-2 / k is not small.
    gen = np.random.default_rng(0)
    reps, steps, n, m, v, a2, s1 = 4000, 400, 20, 1, 1.0, 1.0, 3.0
    k = steps / n
    gamma = (v + m * s1 * s1 * a2) / m
    incr = gen.standard_normal((reps, steps)) * math.sqrt(gamma)
    path_mean = incr.mean(axis=1)
    partial = np.cumsum(incr - path_mean[:, None], axis=1)
    v_hat = m * (partial**2).sum(axis=1) / steps**2
    stat = gen.standard_normal(reps) * math.sqrt(v / n) + path_mean  # theta_bar - theta*
    cv = random_scaling_critical_value(0.95)
    for form, expect_ok in (("exact", True), ("paper", False)):
        rho = dpi.random_scaling_factor(np.array([v]), np.array([a2]), sigma1=s1, k=k, m=m, f=1.0, form=form)[0]
        cover = np.mean(np.abs(stat) <= cv * np.sqrt(rho * v_hat / n))
        se = math.sqrt(0.95 * 0.05 / reps)
        assert (abs(cover - 0.95) < 4 * se) == expect_ok, (form, cover)


def test_wald():
    lo, hi = dpi.wald(np.array([1.0]), np.array([4.0]), n=16, level=0.95, extra=0.75)
    assert hi[0] - 1.0 == pytest.approx(normal_quantile(0.95))  # sqrt(4/16 + 0.75) = 1


# --- the study ---------------------------------------------------------------------------


def test_config_errors_are_one_line():
    with pytest.raises(ldpsim.ConfigError, match=r"^clip = inf leaves the gradient unbounded"):
        resolve({"study": "dpsgd", "clip": "inf"})
    with pytest.raises(ldpsim.ConfigError, match=r"^batch_size = 50 is outside \[1, n\] = \[1, 20\]"):
        resolve({"study": "dpsgd", "n": 20, "batch_size": 50})
    with pytest.raises(ldpsim.ConfigError, match=r"^model = 'quantile' is not one of: linear, logistic"):
        resolve({"study": "dpsgd", "model": "quantile"})
    with pytest.raises(ldpsim.ConfigError, match=r"^sampling = 'shuffle' is not one of: swor, poisson, cyclic"):
        resolve({"study": "dpsgd", "sampling": "shuffle"})
    with pytest.raises(ldpsim.ConfigError, match=r"^T = 11 is too small for two bootstrap blocks"):
        resolve({"study": "dpsgd", "n": 11, "kappa": 1.0, "beta": 0.75})
    with pytest.raises(ldpsim.ConfigError, match=r"^methods contains 'SN'"):
        resolve({"study": "dpsgd", "methods": ["SN"]})
    config = resolve({"study": "dpsgd", "clip": "inf", "mu": "inf"})  # non-private runs need no clip
    assert math.isinf(config.settings[0].clip)


def test_settings_share_their_samples_across_the_algorithm_keys():
    with pytest.warns(ldpsim.ConfigWarning) as caught:
        config = resolve({"study": "dpsgd", "n": 30, "kappa": [1.2, 1.5], "mu": [2, "inf"],
                          "sampling": ["swor", "cyclic"], "reps": 2})
    said = [str(w.message) for w in caught]
    assert any("sampling = 'cyclic' with mu = 2.0: no amplification" in m for m in said)
    assert any("RS, RS_raw with sampling = 'cyclic' and no privacy noise" in m for m in said)
    assert len({s.seed_key for s in config.settings}) == 1
    # model defaults filled in; A~, S~ get 0.1 of the release's mu^2 (budget_of = release, as fit)
    assert config.settings[0].clip == 6.0 and config.settings[0].mu_var == pytest.approx(2.0 * math.sqrt(0.1))


def test_run_writes_summary_with_the_coverage_columns(tmp_path):
    result = ldpsim.run({"study": "dpsgd", "model": "logistic", "n": [40, 60], "kappa": 1.5, "reps": 6, "seed": 1,
                         "methods": ["plugin", "RS", "oracle", "BB", "BM", "DPGD"], "T2_max": 2, "B": 50},
                        out=tmp_path, n_jobs=1, progress=False)
    rows = result.rows
    for column in ("method", "coord", "n", "coverage", "coverage_se", "length", "length_se", "mse", "T"):
        assert column in rows[0]
    assert {r["method"] for r in rows} == {"plugin", "RS", "oracle", "BB", "BM", "DPGD"}
    assert {r["T"] for r in rows if r["method"] == "DPGD"} == {1, 2}
    assert all(r["reps"] + r["n_failed"] == 6 for r in rows)
    files = set(result.files)
    assert {"summary.csv", "accuracy.csv", "privacy.csv", "table.md", "table.tex", "coverage_length.png",
            "dpsgd_vs_dpgd.png"} <= files
    privacy = result.tables["privacy"][0]
    # mu = 2 (the default budget, of the whole release) read at delta = 1e-5 by the valid accountant for swor, RDP
    target = gdp_epsilon(2.0, 1e-5)
    assert privacy["accountant"] == "rdp" and privacy["bound"] == "upper bound"
    assert privacy["epsilon_target"] == pytest.approx(target) and privacy["budget_of"] == "release"
    assert 0.99 * target <= privacy["epsilon"] <= target  # the path with A~, S~ (mu_var = sqrt(0.1) x 2)
    assert privacy["epsilon_path"] < privacy["epsilon"]
    assert privacy["mu_total_clt"] == pytest.approx(math.hypot(privacy["mu_clt"], 2.0 * math.sqrt(0.1)))
    assert math.isnan(privacy["eps_pld"]) and math.isnan(privacy["eps_gdp"])  # no PLD for swor, no GDP for sampling
    # DP-GD, exact GDP: its steps at sqrt(mu^2 - mu_var^2) and its own A~, S~ at mu_var make the release's mu = 2
    assert privacy["epsilon_dpgd"] == pytest.approx(target)
    assert "privacy" in result.meta and "eps CLT" in (tmp_path / "table.md").read_text()
    again = ldpsim.open_result(tmp_path)
    assert again.render() == result.render()


def test_random_scaling_on_a_deterministic_path_is_left_out_and_the_oracle_kept(tmp_path):
    config = {"study": "dpsgd", "n": 60, "kappa": 1.3, "reps": 3, "seed": 1, "sampling": "cyclic", "mu": math.inf,
              "methods": ["plugin", "RS", "oracle"]}
    with pytest.warns(ldpsim.ConfigWarning, match="RS with sampling = 'cyclic' and no privacy noise"):
        result = ldpsim.run(config, out=tmp_path, n_jobs=1, progress=False)
    assert {r["method"] for r in result.rows} == {"plugin", "oracle"}
    assert all(r["reps"] == 3 and r["n_failed"] == 0 for r in result.rows)
    with pytest.raises(ldpsim.ConfigError, match="random scaling needs a random path"):
        resolve({**config, "methods": ["RS"]})


def test_dpgd_spacing_beyond_its_largest_count_is_one_line():
    with pytest.raises(ldpsim.ConfigError, match=r"^T2_every = 5 > T2_max = 2 leaves DP-GD no iteration count"):
        resolve({"study": "dpsgd", "n": 100, "kappa": 1.5, "methods": ["DPGD"], "T2_max": 2, "T2_every": 5})

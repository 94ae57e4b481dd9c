"""``ldpsim fit``: the whole release covered by the printed guarantee, the budget split, and hostile data."""

from __future__ import annotations

import math
import subprocess
import sys
import time
import warnings

import numpy as np
import pytest

import ldpsim
from ldpsim.cli import main
from ldpsim.inference.critical_values import random_scaling_critical_value
from ldpsim.inference.intervals import normal_quantile
from ldpsim.fit import fit

from run_helpers import one_error_line


def _write(path, text):
    path.write_text(text)
    return path


def _data(tmp_path, n=2000, seed=0, name="d.csv", logistic=False):
    g = np.random.default_rng(seed)
    x1, x2 = g.normal(50, 10, n), g.exponential(3, n)
    if logistic:
        y = (g.random(n) < 1 / (1 + np.exp(-(0.05 * (x1 - 50) - 0.3 * (x2 - 3))))).astype(int)
    else:
        y = 2 + 0.1 * x1 - 0.5 * x2 + g.normal(0, 1, n)
    rows = "".join(f"{a},{b},{c}\n" for a, b, c in zip(y, x1, x2))
    return _write(tmp_path / name, "y,x1,x2\n" + rows)


QUICK = dict(kappa=1.2, seed=1)


def _recomposed(result):
    """epsilon of the release at its delta, composed here from result.releases with dp-accounting directly."""
    dpa = pytest.importorskip("dp_accounting")
    rdp = dpa.rdp.RdpAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE)
    for part in result.releases:
        if part["what"] == "path":
            assert part["sampling"] == "swor"
            step = dpa.SampledWithoutReplacementDpEvent(part["n"], part["batch_size"],
                                                        dpa.GaussianDpEvent(part["sigma"]))
            rdp.compose(step, part["steps"])
        elif part["what"] == "moments":  # A~ and S~: Gaussian mechanisms, mu together
            rdp.compose(dpa.GaussianDpEvent(1.0 / part["mu"]))
        elif part["what"] == "clipping":  # one histogram, l2 sensitivity sqrt(2), noise SD noise_sd per count
            rdp.compose(dpa.GaussianDpEvent(part["noise_sd"] / math.sqrt(2.0)))
        else:  # 3 histograms a column, l2 sensitivity sqrt(2), noise SD noise_sd per count
            assert part["histograms"] == 3 * part["columns"]
            rdp.compose(dpa.GaussianDpEvent(part["noise_sd"] / math.sqrt(2.0)), part["histograms"])
    return rdp.get_epsilon(result.delta)


def test_the_default_guarantee_covers_the_whole_release(tmp_path):
    result = fit(_data(tmp_path), "linear", "y", epsilon=3.0, delta=1e-6, **QUICK)
    parts = {p["what"] for p in result.releases}
    # the default scales privately and counts how often the clip binds, and says what that spends
    assert parts == {"path", "moments", "scaling", "clipping"}
    assert result.private and result.accountant == "rdp"
    # recomposed from the noise actually drawn, outside our accountant code: within the target, and within 1%
    assert 0.99 * 3.0 <= _recomposed(result) <= 3.0
    assert 0.99 * 3.0 <= result.epsilon <= 3.0
    text = result.render()
    assert "Privacy: (2.9" in text and "1e-06)-DP by dp-accounting's RDP accountant (a valid upper bound" in text
    assert "for the whole release" in text and "the private scaling of 3 columns" in text
    assert "the private histogram of the gradient norms over the clip" in text
    assert "For comparison, the CLT of Bu et al." in text and "NOT private" not in text


def test_public_bounds_spend_nothing_and_nonprivate_scaling_says_so(tmp_path):
    data = _data(tmp_path)
    bounded = fit(data, "linear", "y", epsilon=2.0, bounds=["x1=20:80", "x2=0:15", "y=-5:15"], **QUICK)
    assert {p["what"] for p in bounded.releases} == {"path", "moments", "clipping"}
    assert "Scaled by the public bounds given: x1, x2, y" in bounded.render()
    assert 0.99 * 2.0 <= _recomposed(bounded) <= 2.0
    loose = fit(data, "linear", "y", epsilon=2.0, scaling="nonprivate", **QUICK)
    # what the guarantee does not cover opens the output (it came after the table)
    assert not loose.private and loose.render().startswith("NOT private: the columns were scaled")
    g = np.random.default_rng(1)
    unit = _write(tmp_path / "unit.csv", "y,x1,x2\n" + "".join(
        f"{1 + a - b + g.normal()},{a},{b}\n" for a, b in zip(g.normal(size=2000), g.normal(size=2000))))
    same = fit(unit, "linear", "y", epsilon=2.0, scaling="none", **QUICK)
    assert "Scaling: none" in same.render()
    # x1 ~ N(50, 10) used as it is: its mean dwarfs its spread, and along the flattest direction of A~ the path
    # cannot forget its start in T = n^1.2 steps (its intervals excluded the truth in 3 of 6 seeds)
    with pytest.raises(ldpsim.ConfigError, match=r"^the path cannot forget its start along its flattest direction "
                                                 r"in T = 9,146 steps: c lambda sum_t t\^-gamma = 3\.57 < 10"):
        fit(data, "linear", "y", epsilon=2.0, scaling="none", **QUICK)


def test_the_clt_accountant_is_labelled_an_approximation(tmp_path):
    result = fit(_data(tmp_path), "linear", "y", epsilon=2.0, accountant="clt", **QUICK)
    assert "an APPROXIMATION, NOT a privacy guarantee" in result.render()


def test_the_mu_budget_is_read_at_delta(tmp_path):
    from ldpsim.privacy.gdp import gdp_epsilon

    result = fit(_data(tmp_path), "linear", "y", mu=1.0, delta=1e-5, **QUICK)
    assert result.epsilon <= gdp_epsilon(1.0, 1e-5)


@pytest.mark.parametrize("text, message", [
    ("y,a\n" + "1,2\n" * 3, r"^data\.csv has 3 rows; 2 coefficients need at least 15$"),
    ("y,a\n1,x\n" + "1,2\n" * 20, r"^column 'a' of data\.csv has a value that is not a decimal number .*\(--show-"
                                   r"values shows where\)$"),
    ("y,a\n1,\n" + "1,2\n" * 20, r"^column 'a' of data\.csv has an empty value \(--show-values shows where\)$"),
    ("y,a\n" + "".join(f"{i},3\n" for i in range(20)), r"^column 'a' is constant \(one value in every row\)"),
    ("z,a\n" + "1,2\n" * 20, r"^response = 'y' is not a column of data\.csv; columns: z, a$"),
    ("y,a,a\n" + "1,2,3\n" * 20, r"^data\.csv has two columns named 'a': rename one$"),
])
def test_fit_rejects_bad_csvs_in_one_line(tmp_path, text, message):
    with pytest.raises(ldpsim.ConfigError, match=message):
        fit(_write(tmp_path / "data.csv", text), "linear", "y", epsilon=1.0, seed=1)


def test_fit_missing_covariate_and_bad_logistic_response(tmp_path):
    data = _write(tmp_path / "data.csv", "y,a,b\n" + "".join(f"{i % 3},{i},{i * i % 7}\n" for i in range(30)))
    with pytest.raises(ldpsim.ConfigError, match=r"^covariate 'c' is not a column of data\.csv"):
        fit(data, "linear", "y", ["a", "c"], epsilon=1.0, seed=1)
    with pytest.raises(ldpsim.ConfigError, match=r"^response 'y' must be 0 or 1 for the logistic model; 10 rows are "
                                                 r"not"):
        fit(data, "logistic", "y", epsilon=1.0, seed=1)
    with pytest.raises(ldpsim.ConfigError, match=r"^data file '.*nope\.csv' not found$"):
        fit(tmp_path / "nope.csv", "linear", "y", epsilon=1.0)


def test_a_byte_order_mark_does_not_hide_the_first_column(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(_data(tmp_path).read_bytes().replace(b"y,x1", b"\xef\xbb\xbfy,x1", 1))
    result = fit(path, "linear", "y", ["x1"], epsilon=2.0, **QUICK)
    assert result.names[1] == "x1"


def _collinear(tmp_path):
    g = np.random.default_rng(3)
    x1, x2 = g.normal(size=200), g.normal(size=200)
    rows = "".join(f"{a + b + g.normal()},{a},{b},{a + b}\n" for a, b in zip(x1, x2))
    return _write(tmp_path / "c.csv", "y,x1,x2,x3\n" + rows)


def _separated(tmp_path):
    g = np.random.default_rng(4)
    x = g.normal(size=200)
    return _write(tmp_path / "s.csv", "y,x\n" + "".join(f"{int(v > 0.1)},{v}\n" for v in x))


@pytest.mark.parametrize("make, kwargs, message", [
    (_collinear, {}, r"^the covariates are exactly collinear: x\d is a linear combination of .*; drop it$"),
    (_separated, {"model": "logistic"}, r"^the logistic MLE does not exist: the covariates separate the response"),
    (None, {"covariates": ["x1", "x1"]}, r"^covariate 'x1' is listed twice$"),
    (None, {"kappa": 0}, r"^kappa = 0 is outside \[1, 3\]"),
    (None, {"clip": 0}, r"^clip = 0 is outside \(0, inf\)"),
    (None, {"clip": math.inf}, r"^clip = inf is outside \(0, inf\): the noise is calibrated to a finite"),
    (None, {"c": 0}, r"^c = 0 is outside \(0, inf\)"),
    (None, {"c": 1e10}, r"^c = 10000000000.0 is too large: the last step c T\^-gamma = .* exceeds 2"),
    (None, {"max_steps": 0}, r"^max_steps = 0 is outside \[100, 2\^53\]"),
    (None, {"seed": -1}, r"^seed = -1 is not an integer >= 0$"),
    (None, {"level": 0.001}, r"^level = 0.001 is outside \[0.05, 0.9999\]"),
    (None, {"epsilon": None, "mu": 1e-300}, r"^mu = 1e-300 \(epsilon = 0 at delta = 1e-05\) is outside \[0.001, 100\]"),
    (None, {"epsilon": None}, r"^give the privacy budget of the whole release"),
    (None, {"share_moments": 0.5, "share_scaling": 0.5}, r"leaves the path less than 0.1 of the budget"),
    (None, {"bounds": ["x1=5"]}, r"^bounds 'x1=5' is not COLUMN=LOW:HIGH"),
    (None, {"bounds": ["x9=0:1"]}, r"^bounds given for 'x9', which is not a column of the fit"),
])
def test_settings_and_data_no_interval_can_describe_are_one_line(tmp_path, make, kwargs, message):
    data = make(tmp_path) if make else _data(tmp_path)
    args = {"model": "linear", "response": "y", "epsilon": 2.0, **QUICK, **kwargs}
    with pytest.raises(ldpsim.ConfigError, match=message) as info:
        fit(data, **args)
    assert "\n" not in str(info.value)


def test_a_covariate_near_the_largest_float_is_scaled_without_a_warning(tmp_path):
    g = np.random.default_rng(5)
    x = g.normal(1e300, 1e299, 2000)
    rows = "".join(f"{2 + 0.5 * (v / 1e300 - 1) + g.normal()},{float(v)!r}\n" for v in x)
    data = _write(tmp_path / "big.csv", "y,x\n" + rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings would be errors
        result = fit(data, "linear", "y", epsilon=3.0, **QUICK)
    # values beyond 2^500 were clipped by the old grid (slopes off by 1e149 with tight intervals); the
    # slope is 0.5 / 1e300, its SE about 4e-301 here (x's SD is a tenth of its level)
    for bounds in result.intervals.values():
        assert bounds[1, 0] < 5e-301 < bounds[1, 1] and bounds[1, 1] - bounds[1, 0] < 5e-300
    with pytest.raises(ldpsim.ConfigError, match=r"^column 'x' holds values beyond 1e\+150"):
        fit(data, "linear", "y", epsilon=3.0, scaling="none", **QUICK)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["linear", "logistic"])
def test_fit_on_real_data_agrees_with_statsmodels(model, tmp_path):
    # Angrist-style yardstick: the Fair (1978) affairs data shipped with statsmodels, non-private OLS / Logit on
    # the same columns. DP-SGD's estimate differs from the full-sample fit by its optimisation and privacy noise
    # only: within 4 of the released interval's standard errors (deterministic: fixed seed; the plug-in's, or
    # random scaling's where the plug-in is withheld)
    sm = pytest.importorskip("statsmodels.api")
    data = sm.datasets.fair.load_pandas().data
    data["affair"] = (data["affairs"] > 0).astype(float)
    path = tmp_path / "fair.csv"
    data.to_csv(path, index=False)
    if model == "linear":
        response, covariates = "rate_marriage", ["age", "yrs_married", "children", "religious", "educ"]
        ref = sm.OLS(data[response], sm.add_constant(data[covariates])).fit().params[covariates].to_numpy()
    else:
        response, covariates = "affair", ["rate_marriage", "age", "yrs_married", "children", "religious", "educ"]
        ref = sm.Logit(data[response], sm.add_constant(data[covariates])).fit(disp=0).params[covariates].to_numpy()
    # logistic at kappa 1.8: its curvature is a fifth of the linear model's, and at 1.6 the path cannot forget its
    # start along A~'s flattest direction (c lambda sum_t t^-gamma = 5.9 < 10: refused)
    kappa = 1.6 if model == "linear" else 1.8
    result = fit(path, model, response, covariates, epsilon=3.0, delta=1e-6, kappa=kappa, seed=3, show_nonprivate=True)
    est = result.estimate[1:]
    method = "plug-in" if "plug-in" in result.intervals else "random scaling"
    bounds = result.intervals[method][1:]
    crit = normal_quantile(0.95) if method == "plug-in" else random_scaling_critical_value(0.95)
    se = (bounds[:, 1] - bounds[:, 0]) / (2 * crit)
    assert (np.abs(est - ref) < 4 * se).all(), (est, ref, se)
    np.testing.assert_allclose(result.nonprivate[0][1:], ref, rtol=1e-6)  # our full-sample fit is statsmodels'
    text = result.render()
    assert "for the whole release" in text and "full sample (NOT private)" in text


def test_fit_command_line(tmp_path):
    data = _data(tmp_path)
    done = subprocess.run([sys.executable, "-m", "ldpsim", "fit", str(data), "--response", "y", "--epsilon", "2",
                           "--kappa", "1.2", "--seed", "2", "--bounds", "x1=20:80"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "plug-in 95% interval" in done.stdout and "for the whole release" in done.stdout
    assert "Scaled by the public bounds given: x1" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "ldpsim", "fit", str(data), "--response", "q", "--epsilon", "1"],
                         capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.startswith("ldpsim: error: response = 'q' is not a column")
    nobudget = subprocess.run([sys.executable, "-m", "ldpsim", "fit", str(data), "--response", "y"],
                              capture_output=True, text=True)
    assert nobudget.returncode == 2 and "give the privacy budget of the whole release" in nobudget.stderr


def test_the_share_of_clipped_gradients_is_shown_only_with_the_nonprivate_outputs(tmp_path):
    # a statistic of the data outside the accountant: printed only beside the full-sample fit, labelled
    data = _data(tmp_path)
    private = fit(data, "linear", "y", epsilon=2.0, **QUICK)
    assert not any("Clipped per-example" in note for note in private.notes)
    shown = fit(data, "linear", "y", epsilon=2.0, show_nonprivate=True, **QUICK)
    assert any("Clipped per-example" in note and "NOT private" in note for note in shown.notes)


def _heavy(tmp_path, n=2000, seed=0, name="heavy.csv"):
    """A skewed, heavy-tailed design and skewed errors (as statsmodels' engel): the clip binds on a few % of rows."""
    g = np.random.default_rng(seed)
    x = g.lognormal(0.0, 1.0, n)
    y = 1.0 + 0.5 * x + x * g.exponential(1.0, n)
    return _write(tmp_path / name, "y,x\n" + "".join(f"{a!r},{b!r}\n" for a, b in zip(y.tolist(), x.tolist())))


def test_the_default_output_opens_by_saying_the_clip_binds_and_that_the_target_is_the_clipped_loss(tmp_path):
    # issue 44: on engel (skewed) 4% of the gradients were clipped, so the estimate is the clipped (Huber-like)
    # loss's minimiser, not OLS: the plug-in interval covered OLS's slope in 1 of 10 fits at epsilon 100, and
    # only --show-nonprivate printed the clipped share. Now a private histogram says it, first
    result = fit(_heavy(tmp_path), "linear", "y", epsilon=20.0, kappa=1.2, seed=1)
    summary = result.clipping
    assert summary["binds"] and summary["clipped"] > 3 * summary["sd"]
    first = result.render().splitlines()[0]
    assert first.startswith("TARGET: the clip binds. ")
    assert "of the per-example gradients at the estimate exceed the clip" in first and "private" in first
    assert "the minimiser of the clipped (Huber-like) loss, not the OLS coefficients" in first
    assert "fit again with a larger --clip, e.g. " in first and "budgets of all fits" in first
    assert f"{100 * summary['share']:.2g}% of the per-example" in first
    assert 0.01 < summary["share"] < 0.5
    # larger clips bind less, and one well above the gradients does not bind: no TARGET line, a private note
    wide = fit(_heavy(tmp_path), "linear", "y", epsilon=20.0, kappa=1.2, seed=1, clip=1e3)
    assert not wide.clipping["binds"] and not wide.target
    assert not wide.render().startswith("TARGET")
    assert any(note.startswith("Clipping: ") and "not distinguishable from none" in note for note in wide.notes)


def test_the_clip_histogram_counts_the_rows_the_path_would_clip_and_its_noise_is_in_the_guarantee(tmp_path):
    from ldpsim.fit.path import clip_edges, clip_histogram
    from ldpsim.fit.result import clip_summary
    from ldpsim.studies.dpsgd import glm

    g = np.random.default_rng(3)
    X = np.column_stack([np.ones(500), g.standard_t(2, 500)])
    y = X @ [1.0, 2.0] + g.standard_t(2, 500)
    xnorm = np.sqrt(np.sum(X * X, axis=1))
    theta, clip = np.array([0.9, 2.1]), 3.0
    counts = clip_histogram(g, "linear", X, y, xnorm, theta, clip, 0.0)
    assert counts.sum() == 500 and counts.size == clip_edges().size
    share = glm.clipped_moments("linear", X, y, xnorm, theta, clip, 1e9)[2]
    assert 500 - counts[0] == round(share * 500)  # the first bin is what the clip leaves alone (norm <= clip)
    summary = clip_summary(counts, 500, 1e-9, clip)
    assert summary["share"] == pytest.approx(share) and summary["binds"] == (share > 0.001)
    # the suggested clip has at most CLIP_RARE of the rows above it (noise-free here)
    norms = np.abs(X @ theta - y) * xnorm
    assert np.mean(norms > summary["suggested"]) <= 0.001
    assert np.mean(norms > summary["suggested"] / 2) > 0.001 or summary["suggested"] == 2 * clip
    # the release: its mu^2 share of the target's, and the guarantee composes it (recomposed by dp-accounting
    # from the recorded noise; without it the recomposition is smaller, so it was counted)
    from ldpsim.fit.options import SHARE_CLIP
    from ldpsim.privacy.gdp import gdp_mu

    result = fit(_data(tmp_path), "linear", "y", epsilon=3.0, delta=1e-6, **QUICK)
    part = [p for p in result.releases if p["what"] == "clipping"][0]
    assert part["mu"] == pytest.approx(math.sqrt(SHARE_CLIP) * gdp_mu(3.0, 1e-6))
    assert part["noise_sd"] == pytest.approx(math.sqrt(2.0) / part["mu"]) and part["bins"] == clip_edges().size
    assert 0.99 * 3.0 <= _recomposed(result) <= 3.0
    without = type(result)(**{**result.__dict__, "releases": [p for p in result.releases if p is not part]})
    assert _recomposed(without) < 0.995 * _recomposed(result)
    text = result.render()
    assert f"the clip histogram {SHARE_CLIP:g} (mu = {part['mu']:.4g})" in text
    assert "the clip histogram alone" in text


def test_the_share_clipped_by_public_bounds_is_shown_only_with_the_nonprivate_diagnosis(tmp_path):
    # bounds 45:55 on x1 ~ N(50, 10) clip about 62% of it; the interval is then for the clipped column's
    # coefficient, and nothing said how much the bounds had clipped
    data = _data(tmp_path)
    private = fit(data, "linear", "y", epsilon=2.0, bounds=["x1=45:55"], **QUICK)
    assert any("the coefficients are those of the clipped columns" in note for note in private.notes)
    assert not any("Values outside the public bounds" in note for note in private.notes)
    shown = fit(data, "linear", "y", epsilon=2.0, bounds=["x1=45:55"], show_nonprivate=True, **QUICK)
    x1 = np.loadtxt(data, delimiter=",", skiprows=1)[:, 1]
    share = 100 * np.mean((x1 < 45) | (x1 > 55))
    assert f"Values outside the public bounds, clipped: x1 {share:.2g}%; NOT private" in " ".join(shown.notes)


# --- no confident nonsense; refusals decided from public or private quantities only -------------------------


def _shifted(tmp_path, n=1000, seed=0, shift=1e9, name="shifted.csv"):
    """x1 + shift (SD 1), x2 ~ N(0, 1), y = 1 + 2 x1 - x2 + N(0, 1): the slope of x1 is 2 whatever the shift."""
    g = np.random.default_rng(seed)
    x1, x2 = g.normal(size=n), g.normal(size=n)
    y = 1 + 2 * x1 - x2 + g.normal(size=n)
    return _write(tmp_path / name, "y,x1,x2\n" + "".join(f"{a!r},{b + shift!r},{c!r}\n"
                                                         for a, b, c in zip(y.tolist(), x1.tolist(), x2.tolist())))


def test_a_column_far_from_zero_gets_a_slope_near_its_truth(tmp_path):
    # x1 + 1e9 fell into one bin of the old scaling: slope 7.8e-7 with a tight interval, truth 2. One
    # fixed seed here (the coverage over seeds is the slow test below): both intervals contain 2
    result = fit(_shifted(tmp_path), "linear", "y", epsilon=3.0, seed=1)
    for bounds in result.intervals.values():
        assert bounds[1, 0] < 2.0 < bounds[1, 1] and bounds[1, 1] - bounds[1, 0] < 3.0  # it was 3.6e-7 long
    assert abs(result.scales[0].centre - 1e9) < 3 and 0.3 < result.scales[0].scale < 3


@pytest.mark.slow
@pytest.mark.parametrize("n, shift, kwargs, least", [
    (1000, 1e9, {}, {"plug-in": 80, "random scaling": 180}),
    (300, 0.0, {"share_scaling": 0.3}, {"plug-in": 15, "random scaling": 80}),
])
def test_fit_covers_over_seeds(tmp_path, n, shift, kwargs, least):
    # fit repeated over 200 seeds (data and noise), as a simulation would, at epsilon 3, on
    # x1 + 1e9 with n = 1000, and on n = 300 with a third of the budget's mu^2 for the scaling (at the default
    # share n = 300 is refused before any statistic of the values is computed). Measured at this commit: on x1 +
    # 1e9, random scaling covers x1 in 0.949 of the 195 fits it releases (5 refused: the path did not settle),
    # the plug-in in 0.911 of the 101 it is shown in; at n = 300, 0.989 of 94 and 1.000 of 25 (104 refused as
    # unsettled, 2 for the scaling). Tolerance: 3.1 binomial SEs under 0.95 (one-sided, fails 1e-3 of the time at
    # exact coverage), for the number of fits each interval was shown in
    hits = {"plug-in": [], "random scaling": []}
    for seed in range(200):
        data = _shifted(tmp_path, n=n, shift=shift, seed=1000 + seed)
        try:
            result = fit(data, "linear", "y", epsilon=3.0, seed=seed, **kwargs)
        except ldpsim.ConfigError as exc:  # decided from the private release
            assert str(exc).startswith(("the path did not settle", "the private scaling of column")), str(exc)
            continue
        for method, bounds in result.intervals.items():
            hits[method].append(bounds[1, 0] <= 2.0 <= bounds[1, 1])
    for method, got in hits.items():
        count = len(got)
        assert count >= least[method], (method, count)
        assert np.mean(got) >= 0.95 - 3.1 * math.sqrt(0.95 * 0.05 / count), (method, np.mean(got), count)


def test_too_few_rows_for_the_private_scaling_is_refused_from_public_quantities(tmp_path, monkeypatch):
    # n = 300 at epsilon 3 collapsed the old scaling (centre 5.1e148). Decided from n, the budget and the
    # number of columns only (the private scaling is not even called); the refusal names the share that would do
    import ldpsim.privacy.scaling as sc

    data = _shifted(tmp_path, n=300, shift=0.0)
    with pytest.raises(ldpsim.ConfigError, match=r"^n = 300 rows are too few for the private scaling of 3 columns "
                                                 r"at this budget: .* noise SD 18\.7 per count.* --share-scaling "
                                                 r"0\.(1[6-9]|2\d) or more"):
        fit(data, "linear", "y", epsilon=3.0, seed=1)
    # and at delta = 1e-300 with n = 1000 (every centre was 5.1e148)
    with pytest.raises(ldpsim.ConfigError, match=r"^n = 1000 rows are too few for the private scaling"):
        fit(_shifted(tmp_path, n=1000, name="n1000.csv"), "linear", "y", epsilon=3.0, delta=1e-300, seed=1)
    calls = []
    monkeypatch.setattr(sc, "private_scaling", lambda *a, **k: calls.append(a))
    with pytest.raises(ldpsim.ConfigError, match="too few for the private scaling"):
        fit(data, "linear", "y", epsilon=3.0, seed=1)
    assert calls == []


def test_n300_with_more_of_the_budget_for_the_scaling_releases_what_settled(tmp_path):
    # with --share-scaling 0.3 the scaling works at n = 300; the path then often fluctuates beyond what A~ and S~
    # predict: seeds 0-7 give random scaling alone (settle ratio above 4.46), both intervals, or a refusal, each
    # decided from the private release (the coverage over seeds is in the slow test)
    outcomes = set()
    for seed in range(8):
        try:
            result = fit(_shifted(tmp_path, n=300, shift=0.0, seed=seed), "linear", "y", epsilon=3.0,
                         share_scaling=0.3, seed=seed)
        except ldpsim.ConfigError as exc:
            assert str(exc).startswith("the path did not settle"), str(exc)
            outcomes.add("refused")
        else:
            outcomes.add(tuple(result.intervals))
    assert outcomes == {"refused", ("random scaling",), ("plug-in", "random scaling")}


def test_sixty_covariates_are_refused_at_two_thousand_rows(tmp_path):
    # a coefficient 363.6 [363.3, 363.9], truth 1, and with --no-scaling intervals 50 times too narrow
    g = np.random.default_rng(6)
    X = g.normal(size=(2000, 60))
    y = 1 + X.sum(axis=1) + g.normal(size=2000)
    data = _write(tmp_path / "p60.csv", ",".join(["y"] + [f"x{j}" for j in range(60)]) + "\n" + "".join(
        ",".join(repr(v) for v in [a] + list(row)) + "\n" for a, row in zip(y.tolist(), X.tolist())))
    with pytest.raises(ldpsim.ConfigError, match=r"^n = 2000 rows are too few for the private scaling of 61 columns"):
        fit(data, "linear", "y", epsilon=3.0, seed=1)
    with pytest.raises(ldpsim.ConfigError, match=r"^too few rows for this budget and 61 coefficients"):
        fit(data, "linear", "y", epsilon=3.0, seed=1, scaling="none", kappa=1.2)


@pytest.mark.parametrize("bounds", ["x1=200:300", "x1=-300:-200", "x2=100:200"])
def test_bounds_that_clip_every_value_are_refused(tmp_path, bounds):
    # the clipped column is constant, yet a slope was printed (another with another seed). Its variance
    # read off the private A~ is within 2.58 noise SDs of 0 (a constant column passes that with probability 0.5%)
    data = _data(tmp_path)
    name = bounds.split("=")[0]
    for seed in (1, 2, 3):
        with pytest.raises(ldpsim.ConfigError, match=rf"^column '{name}' spreads too little within its --bounds "
                                                     rf"{bounds.split('=')[1]} for the private A~ to tell it from the "
                                                     r"intercept .* the column is \(nearly\) constant, or the bounds "
                                                     r"are much wider than it is"):
            fit(data, "linear", "y", epsilon=3.0, bounds=[bounds], seed=seed, kappa=1.2)


def test_honest_bounds_on_a_skewed_column_are_not_called_constant(tmp_path):
    # Exp(3) in bounds 0:15 (mean at a fifth of the range) at epsilon 2: its variance read off A~ stands about 3
    # noise SDs above 0, so a stricter test (3.72, probability 1e-4) refused it
    result = fit(_data(tmp_path), "linear", "y", epsilon=2.0, bounds=["x1=20:80", "x2=0:15", "y=-5:15"], **QUICK)
    assert list(result.intervals)[-1] == "random scaling"


@pytest.mark.parametrize("kwargs, message", [
    ({"clip": 1e-300}, r"^the path cannot move: the clipped gradients carry it at most c clip sum_t t\^-gamma = "
                       r"[0-9.e-]+ from its start"),
    ({"clip": 1e-8, "kappa": 2.0}, r"^the path cannot move"),
    ({"c": 1e-12}, r"^the path cannot move"),
    ({"clip": 1e300}, r"^DP-SGD overflowed on these data \(c = 0\.2, clip = 1e\+300: .*\): lower clip$"),
    ({"sampling": "cyclic"}, r"^sampling = cyclic is refused by fit: with privacy noise every pass costs budget"),
    ({"sampling": "poisson", "accountant": "rdp"}, r"fit states Poisson batches under replace-one neighbours"),
    ({"sampling": "poisson", "accountant": "clt"}, r"fit states Poisson batches under replace-one neighbours"),
    ({"gamma": 1.0}, r"^gamma = 1.0 is outside \(0.5, 1\): the average needs 1/2 < gamma < 1"),
    ({"share_moments": 0.85, "share_scaling": 0.05}, r"^A~ and S~ and the scaling \(shares 0\.85 \+ 0\.05 of mu\^2, "
                                                     r"with the clip histogram's 0\.02\) alone are epsilon = 3\.10\d* "
                                                     r"by the rdp accountant"),
    ({"bounds": ["x1=0:1", "x1=0:100"]}, r"^bounds given twice for 'x1' \(0:1 and 0:100\)"),
    ({"bounds": ["x1=0:1e999"]}, r"^bounds of 'x1' = 0.0:inf: need finite LOW < HIGH$"),
    ({"bounds": ["x1=1_0:20"]}, r"^bounds 'x1=1_0:20' is not COLUMN=LOW:HIGH with decimal numbers"),
])
def test_settings_whose_release_would_be_unreliable_are_refused_in_one_line(tmp_path, kwargs, message):
    args = {"epsilon": 3.0, "seed": 1, "kappa": 1.2, **kwargs}
    with pytest.raises(ldpsim.ConfigError, match=message) as info:
        fit(_shifted(tmp_path, n=2000, shift=0.0), "linear", "y", **args)
    assert "\n" not in str(info.value)


def test_a_path_that_did_not_settle_is_refused(tmp_path):
    # seed 70 of the coverage test below (x1 + 1e9, n = 1000, epsilon 3): the random-scaling variance is 179 times
    # what A~ and S~ predict; 5 of its 200 seeds are refused so
    with pytest.raises(ldpsim.ConfigError, match=r"^the path did not settle: the average's fluctuation along the "
                                                 r"path \(random scaling\) is 179 times what the private A~ and S~ "
                                                 r"say it should be .* \(this refusal reads only the private release, "
                                                 r"covered by its \(3, 1e-05\)-DP budget\)$"):
        fit(_shifted(tmp_path, seed=1070), "linear", "y", epsilon=3.0, seed=70)


def test_a_column_named_with_an_equals_sign_takes_bounds_and_the_logistic_response_takes_none(tmp_path):
    g = np.random.default_rng(2)
    x, z = g.normal(size=2000), g.normal(size=2000)
    data = _write(tmp_path / "eq.csv", "y,a=b,z\n" + "".join(
        f"{int(g.random() < 1 / (1 + np.exp(-u)))},{u},{v}\n" for u, v in zip(x.tolist(), z.tolist())))
    result = fit(data, "logistic", "y", epsilon=3.0, seed=1, kappa=1.8, bounds=["a=b=-4:4"])
    assert result.names[1] == "a=b" and "Scaled by the public bounds given: a=b" in result.render()
    with pytest.raises(ldpsim.ConfigError, match=r"^bounds given for the response 'y', which the logistic model "
                                                 r"does not scale \(it is 0/1\)$"):
        fit(data, "logistic", "y", epsilon=3.0, seed=1, kappa=1.2, bounds=["y=0:1"])


def test_the_scaling_share_is_checked_only_when_it_is_spent(tmp_path):
    # --share-scaling 0.9 with --no-scaling was refused though that share is never spent
    g = np.random.default_rng(1)
    unit = _write(tmp_path / "unit.csv", "y,x1,x2\n" + "".join(
        f"{1 + a - b + g.normal()},{a},{b}\n" for a, b in zip(g.normal(size=2000), g.normal(size=2000))))
    kw = dict(epsilon=3.0, seed=1, kappa=1.2, share_scaling=0.9)
    assert [p["what"] for p in fit(unit, "linear", "y", scaling="none", **kw).releases] == ["path", "moments",
                                                                                             "clipping"]
    assert fit(unit, "linear", "y", bounds=["x1=-4:4", "x2=-4:4", "y=-8:10"], **kw).epsilon <= 3.0
    with pytest.raises(ldpsim.ConfigError, match=r"^share_moments \+ share_scaling = 1 leaves the path less than"):
        fit(unit, "linear", "y", **kw)


def test_delta_at_or_above_one_over_n_is_warned_as_run_warns(tmp_path):
    data = _data(tmp_path)
    with pytest.warns(ldpsim.ConfigWarning, match=r"^delta = 0\.001 >= 1/n = 0\.0005: a release that publishes one "
                                                  r"random row outright is \(0, 1/n\)-DP"):
        fit(data, "linear", "y", epsilon=3.0, delta=1e-3, **QUICK)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ldpsim.ConfigWarning)
        fit(data, "linear", "y", epsilon=3.0, delta=1e-5, **QUICK)


def _recomposed_poisson(result):
    """epsilon of a Poisson release at its delta, recomposed with dp-accounting's replace-one PLD directly."""
    dpa = pytest.importorskip("dp_accounting")
    acc = dpa.pld.PLDAccountant(neighboring_relation=dpa.NeighboringRelation.REPLACE_ONE,
                                value_discretization_interval=1e-4)
    mu2 = 0.0
    for part in result.releases:
        if part["what"] == "path":
            assert part["sampling"] == "poisson" and part["relation"] == "replace-one"
            acc.compose(dpa.PoissonSampledDpEvent(part["batch_size"] / part["n"],
                                                  dpa.GaussianDpEvent(part["sigma"])), part["steps"])
        elif part["what"] == "moments":
            mu2 += part["mu"] ** 2
        elif part["what"] == "clipping":  # one histogram: mu = sqrt(2) / noise_sd
            mu2 += 2.0 / part["noise_sd"] ** 2
        else:  # each histogram moves one count down and one up: mu = sqrt(2) / noise_sd each
            mu2 += part["histograms"] * 2.0 / part["noise_sd"] ** 2
    # a mu-GDP Gaussian is distance mu in noise SDs; dp-accounting's replace-one Gaussian moves 2 units
    acc.compose(dpa.GaussianDpEvent(2.0 / math.sqrt(mu2)))
    return acc.get_epsilon(result.delta)


@pytest.mark.slow  # the fit calibrates Poisson batches by PLD at each trial sigma: 17 s alone, 27 s in a loaded tier
def test_poisson_batches_state_the_replace_one_guarantee_that_makes_n_public(tmp_path):
    # fit --sampling poisson stated an add/remove guarantee but printed n and T = n^kappa, which differ
    # between add/remove neighbours. Now replace-one (n public), by dp-accounting's PLD with REPLACE_ONE,
    # recomposed here from the noise drawn: at most the target and within 1% of it
    result = fit(_data(tmp_path), "linear", "y", epsilon=3.0, delta=1e-6, sampling="poisson", **QUICK)
    assert result.accountant == "pld"
    assert 0.99 * 3.0 <= _recomposed_poisson(result) <= 3.0 * 1.001  # our grid vs 1e-4 here: within 0.1%
    text = result.render()
    assert "with replace-one neighbours (a valid upper bound; replace-one neighbours: data sets of the same size n " \
           "differing in one row; n, T and the rate m/n are public)" in text
    assert "add/remove" not in text and "n = 2000" in text


def test_the_poisson_accountant_reproduces_a_known_replace_one_figure():
    # reference: dp-accounting's PLD with REPLACE_ONE, one Poisson-subsampled Gaussian at sigma 1 and q = 0.01
    # composed 1000 times, grid 1e-4, computed with dp-accounting 0.6.0 directly: 2.8434 at delta 1e-5 (the
    # add/remove figure there is 1.8282)
    from ldpsim.privacy.poisson import poisson_epsilons

    alone, total = poisson_epsilons(1.0, 1000, 100, 1, 1e-5)
    assert alone == total and abs(alone - 2.8434) < 3e-3


def test_the_default_seed_is_fresh_and_printed_only_on_request(tmp_path):
    # a fixed seed makes the guarantee hold only while it is secret; the default draws fresh entropy,
    # and the seed drawn is shown only when asked (to reproduce the run at the owner's terminal)
    data = _data(tmp_path)
    first = fit(data, "linear", "y", epsilon=3.0, kappa=1.2)
    second = fit(data, "linear", "y", epsilon=3.0, kappa=1.2)
    assert not np.array_equal(first.estimate, second.estimate) and first.seed != second.seed
    assert "Seed" not in first.render() and str(first.seed) not in first.render()
    again = fit(data, "linear", "y", epsilon=3.0, kappa=1.2, seed=first.seed)
    np.testing.assert_array_equal(again.estimate, first.estimate)  # the seed drawn reproduces the run
    assert "the guarantee holds only while that seed is secret" in again.render()
    shown = fit(data, "linear", "y", epsilon=3.0, kappa=1.2, show_seed=True)
    assert f"Seed drawn: {shown.seed} (keep it as secret as the data" in shown.render()


def test_the_plug_in_interval_is_withheld_when_the_path_fluctuates_beyond_settled_paths(tmp_path):
    # settle ratio between 4.46 (the 99% point of 6 x Cramer-von Mises) and 25: the plug-in's variance would be too
    # small; random scaling stays. Seed 6 of x1 + 1e9 at n = 1000 gives 7.14 (6 of seeds 0-11 are between 4.46
    # and 25, 2 above)
    from ldpsim.fit import refusals

    result = fit(_shifted(tmp_path, seed=1006), "linear", "y", epsilon=3.0, seed=6)
    assert refusals.PLUGIN_SETTLE < result.diagnostics["settle"] <= refusals.SETTLE_RATIO
    assert list(result.intervals) == ["random scaling"]
    assert any(note.startswith("The plug-in interval is not shown: the path fluctuates") for note in result.notes)
    assert "plug-in" not in result.render().splitlines()[1]


# --- the command line (ldpsim/cli.py's fit parser and _fit) --------------------------------------------------


def _cli(capsys, *argv):
    from ldpsim.cli import main

    try:
        status = main(["fit", *map(str, argv)])
    except SystemExit as exc:  # argparse's own refusals
        status = exc.code
    out = capsys.readouterr()
    return status, out.out, out.err


def test_a_data_path_after_covariates_is_the_data_not_a_covariate(tmp_path, capsys):
    # "fit --response y --covariates x1 x2 data.csv" took data.csv as a covariate (argparse's nargs="+")
    data = _data(tmp_path)
    status, out, err = _cli(capsys, "--response", "y", "--epsilon", 3, "--kappa", 1.2, "--covariates", "x1", data)
    assert status == 0, err
    assert "| x1 " in out and "x2" not in out.split("Privacy")[0]
    status, out, err = _cli(capsys, data, "--response", "y", "--epsilon", 3, "--kappa", 1.2, "--covariates", "x1",
                            data)
    assert status == 0, err
    other = _data(tmp_path, name="other.csv")
    status, out, err = _cli(capsys, data, "--response", "y", "--epsilon", 3, "--covariates", "x1", other)
    assert status == 2 and err.startswith("ldpsim: error: ") and "after --covariates is a file" in err
    status, out, err = _cli(capsys, "--response", "y", "--epsilon", 3, "--covariates", "x1", "nope.csv")
    assert status == 2 and "give the data file" in err


def test_flags_given_twice_and_numbers_in_other_notations_are_refused(tmp_path, capsys):
    data = _data(tmp_path)
    status, _, err = _cli(capsys, data, "--response", "y", "--epsilon", 3, "--bounds", "x1=20:80", "--bounds",
                          "x2=0:15")
    assert status == 2 and "--bounds is given twice" in err  # the second silently replaced the first
    for flag, value in (("--epsilon", "1_0"), ("--clip", "0x1p3"), ("--seed", "1_0"), ("--batch-size", "1_0")):
        args = [data, "--response", "y", flag, value] + (["--epsilon", 3] if flag != "--epsilon" else [])
        status, _, err = _cli(capsys, *args)
        assert status == 2 and f"argument {flag}: '{value}' is not a" in err, (flag, err)
    status, _, err = _cli(capsys, data, "--response", "y", "--epsilon", 3, "--max-steps", "1_000")
    assert status == 2 and "max_steps = '1_000' is not a decimal number" in err


def test_error_messages_carry_data_values_only_with_show_values(tmp_path, capsys):
    data = _write(tmp_path / "d.csv", "y,a\n" + "".join(f"{i},{i * 7 % 11}\n" for i in range(40)) + "3,4711x\n")
    status, _, err = _cli(capsys, data, "--response", "y", "--epsilon", 3)
    assert status == 2 and "4711" not in err and "row" not in err and "--show-values shows where" in err
    status, _, err = _cli(capsys, data, "--response", "y", "--epsilon", 3, "--show-values")
    assert status == 2 and "'4711x' in row 42" in err


def test_the_seed_and_the_not_private_line_on_the_command_line(tmp_path, capsys):
    data = _data(tmp_path)
    status, out, _ = _cli(capsys, data, "--response", "y", "--epsilon", 3, "--kappa", 1.2)
    assert status == 0 and "Seed" not in out
    status, out, _ = _cli(capsys, data, "--response", "y", "--epsilon", 3, "--kappa", 1.2, "--show-seed")
    assert status == 0 and "Seed drawn: " in out
    status, out, _ = _cli(capsys, data, "--response", "y", "--epsilon", 3, "--kappa", 1.2, "--nonprivate-scaling")
    assert status == 0 and out.startswith("NOT private: ")
    with warnings.catch_warnings():
        warnings.simplefilter("always", ldpsim.ConfigWarning)  # the suite makes warnings errors
        status, out, err = _cli(capsys, data, "--response", "y", "--epsilon", 3, "--kappa", 1.2, "--delta", "1e-3")
    assert status == 0 and err.startswith("ldpsim: warning: delta = 0.001 >= 1/n = 0.0005")


def test_fit_help_says_a_fixed_seed_must_stay_secret(capsys):
    status, out, _ = _cli(capsys, "--help")
    text = " ".join(out.split())
    assert status == 0
    assert "Default: a fresh random seed, never printed unless --show-seed" in text
    assert "A fixed seed makes the guarantee hold only while the seed is secret" in text
    assert "--show-values" in text and "so that a log of errors carries no data" in text


# --- hostile inputs found by trying fit as a careful and as a hostile user ----------------------------------


def _column_file(tmp_path, name, x, slope, seed=0):
    g = np.random.default_rng(seed)
    z = g.normal(size=x.shape[0])
    y = 1 + slope * x + z + g.normal(size=x.shape[0])
    return _write(tmp_path / name, "y,x1,x2\n" + "".join(f"{a!r},{b!r},{c!r}\n"
                                                         for a, b, c in zip(y.tolist(), x.tolist(), z.tolist())))


def test_a_column_of_tiny_values_gets_its_slope(tmp_path):
    # x ~ N(0, 1e-50), slope 2e50: the old grid's middle bin held every |x| <= 2^-40, and fit printed 6.7e13 with
    # an interval excluding 2e50 (seed 1); now both intervals contain it
    g = np.random.default_rng(8)
    data = _column_file(tmp_path, "tiny.csv", g.normal(0, 1e-50, 2000), 2e50)
    result = fit(data, "linear", "y", epsilon=3.0, seed=1, kappa=1.5)
    for bounds in result.intervals.values():
        assert bounds[1, 0] < 2e50 < bounds[1, 1]


def test_a_covariate_spanning_the_doubles_gets_its_slope(tmp_path):
    # modes at +-1e308: check_design's range overflowed (an internal error); slope 1e-308
    g = np.random.default_rng(9)
    x = np.concatenate([g.normal(1e308, 1e307, 1000), g.normal(-1e308, 1e307, 1000)])
    result = fit(_column_file(tmp_path, "wide.csv", x, 1e-308), "linear", "y", epsilon=3.0, seed=1, kappa=1.5)
    for bounds in result.intervals.values():
        assert bounds[1, 0] < 1e-308 < bounds[1, 1]


def test_a_nearly_constant_column_is_refused_by_its_private_scaling(tmp_path):
    # 1970 rows at 41.5 and 30 spread around it: fit printed slope 3.01 [2.49, 3.53], truth 0.5 (seed 1). Its
    # differences are nearly all zero, as the private histogram sees it: refused, covered by the scaling's share
    g = np.random.default_rng(3)
    x = np.full(2000, 41.5)
    x[:30] += g.normal(0, 5, 30)
    with pytest.raises(ldpsim.ConfigError, match=r"^the private scaling of column 'x1' failed: nearly every pair of "
                                                 r"its rows is equal.* covered by the scaling's share, epsilon = "
                                                 r"0\.835 at delta = 1e-05$"):
        fit(_column_file(tmp_path, "mostly.csv", x, 0.5), "linear", "y", epsilon=3.0, seed=1)


def test_slopes_beyond_the_doubles_are_refused_not_printed(tmp_path):
    # y ~ N(0, 1e200) on x ~ N(0, 1e-200): slopes of order 1e400 cannot be printed
    g = np.random.default_rng(4)
    rows = "".join(f"{float(a)!r},{float(b)!r},{float(c)!r}\n"
                   for a, b, c in zip(g.normal(0, 1e200, 2000), g.normal(0, 1e-200, 2000), g.normal(size=2000)))
    with pytest.raises(ldpsim.ConfigError, match=r"^the coefficients on the original scale are beyond the doubles"):
        fit(_write(tmp_path / "o.csv", "y,x1,x2\n" + rows), "linear", "y", epsilon=3.0, seed=1, kappa=1.2)


# --- the data file, data near 1e300, and SIGTERM ------------------------------------------------------------


def test_fit_takes_the_data_file_swallowed_by_bounds(tmp_path, capsys):
    data = tmp_path / "d.csv"
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 400)
    np.savetxt(data, np.column_stack([x + rng.normal(0, 0.1, 400), x]), delimiter=",", header="y,x", comments="")
    # the budget's refusal comes after the file was found (it would say "give the data file" otherwise)
    assert main(["fit", "--response", "y", "--bounds", "x=0:1", str(data)]) == 2
    assert "give the privacy budget" in one_error_line(capsys)


def test_fits_full_sample_column_is_finite_and_silent_on_data_near_1e300(tmp_path):
    # the non-private OLS squared the raw columns: numpy's "overflow encountered in matmul" and [nan, nan]
    from ldpsim.fit import fit

    rng = np.random.default_rng(5)
    x = rng.normal(size=500)
    y = x + rng.normal(size=500)
    data = tmp_path / "big.csv"
    np.savetxt(data, np.column_stack([y * 1e300, x]), delimiter=",", header="y,x", comments="")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = fit(str(data), "linear", "y", epsilon=3.0, seed=1, show_nonprivate=True)
    lo, hi = result.nonprivate[1][1]
    est = result.nonprivate[0][1]
    assert np.isfinite([lo, hi, est]).all() and lo < est < hi
    # the slope is that of the unscaled OLS, read in units of 1e300
    X = np.column_stack([np.ones(500), x])
    slope = np.linalg.lstsq(X, y, rcond=None)[0][1]
    assert est / 1e300 == pytest.approx(slope, rel=1e-9)


@pytest.mark.slow  # a fit in a subprocess, compiled there, then signalled: 8-10 s of the fast tier
def test_fit_stops_on_sigterm_during_a_long_path(tmp_path):
    # fit ran its path in the main thread: Ctrl-C waited for 1e10 steps (measured: still running 70 s after it)
    import signal
    import subprocess
    import sys

    g = np.random.default_rng(3)
    x = g.normal(size=3000)
    rows = "".join(f"{1 + a + e:.4f},{a:.4f}\n" for a, e in zip(x, g.normal(size=3000)))
    (tmp_path / "d.csv").write_text("y,x1\n" + rows)
    proc = subprocess.Popen([sys.executable, "-m", "ldpsim", "fit", str(tmp_path / "d.csv"), "--response", "y",
                             "--epsilon", "3", "--kappa", "3", "--max-steps", "10000000000", "--bounds", "x1=-4:4",
                             "y=-6:8"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(8)  # into the path (about 5 minutes of it)
    proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("fit went on for a minute after SIGTERM")
    assert proc.returncode == 143 and err.strip() == "ldpsim: terminated" and out == "", (proc.returncode, err)

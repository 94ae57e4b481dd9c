"""``ldpsim fit``: the whole release covered by the printed guarantee, the budget split, and hostile data."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings

import numpy as np
import pytest

import ldpsim
from ldpsim.inference.intervals import normal_quantile
from ldpsim.studies.dpsgd.fit import fit


def _write(path, text):
    path.write_text(text)
    return path


def _data(tmp_path, n=400, seed=0, name="d.csv", logistic=False):
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
        else:  # 2 histograms a column, l2 sensitivity sqrt(2), noise SD noise_sd per count
            rdp.compose(dpa.GaussianDpEvent(part["noise_sd"] / math.sqrt(2.0)), 2 * part["columns"])
    return rdp.get_epsilon(result.delta)


def test_the_default_guarantee_covers_the_whole_release(tmp_path):
    result = fit(_data(tmp_path), "linear", "y", epsilon=3.0, delta=1e-6, **QUICK)
    parts = {p["what"] for p in result.releases}
    assert parts == {"path", "moments", "scaling"}  # the default scales privately, and says what that spends
    assert result.private and result.accountant == "rdp"
    # recomposed from the noise actually drawn, outside our accountant code: within the target, and within 1%
    assert 0.99 * 3.0 <= _recomposed(result) <= 3.0
    assert 0.99 * 3.0 <= result.epsilon <= 3.0
    text = result.render()
    assert "Privacy: (2.9" in text and "1e-06)-DP by dp-accounting's RDP accountant (a valid upper bound" in text
    assert "for the whole release" in text and "the private scaling of 3 columns" in text
    assert "For comparison, the CLT of Bu et al." in text and "NOT private" not in text


def test_public_bounds_spend_nothing_and_nonprivate_scaling_says_so(tmp_path):
    data = _data(tmp_path)
    bounded = fit(data, "linear", "y", epsilon=2.0, bounds=["x1=0:100", "x2=0:40", "y=-20:30"], **QUICK)
    assert {p["what"] for p in bounded.releases} == {"path", "moments"}
    assert "Scaled by the public bounds given: x1, x2, y" in bounded.render()
    assert 0.99 * 2.0 <= _recomposed(bounded) <= 2.0
    loose = fit(data, "linear", "y", epsilon=2.0, scaling="nonprivate", **QUICK)
    assert not loose.private and loose.render().startswith("DP-SGD") and "NOT private: the columns were scaled" \
        in loose.render()
    same = fit(data, "linear", "y", epsilon=2.0, scaling="none", **QUICK)
    assert "Scaling: none" in same.render()


def test_the_clt_accountant_is_labelled_an_approximation(tmp_path):
    result = fit(_data(tmp_path), "linear", "y", epsilon=2.0, accountant="clt", **QUICK)
    assert "an APPROXIMATION, NOT a privacy guarantee" in result.render()


def test_the_mu_budget_is_read_at_delta(tmp_path):
    from ldpsim.privacy.gdp import gdp_epsilon

    result = fit(_data(tmp_path), "linear", "y", mu=1.0, delta=1e-5, **QUICK)
    assert result.epsilon <= gdp_epsilon(1.0, 1e-5)


@pytest.mark.parametrize("text, message", [
    ("y,a\n" + "1,2\n" * 3, r"^data\.csv has 3 rows; 2 coefficients need at least 15$"),
    ("y,a\n1,x\n" + "1,2\n" * 20, r"^column 'a' has a non-numeric value 'x' in row 2 of data\.csv$"),
    ("y,a\n1,\n" + "1,2\n" * 20, r"^column 'a' has an empty value in row 2 of data\.csv$"),
    ("y,a\n" + "".join(f"{i},3\n" for i in range(20)), r"^column 'a' is constant \(3 in every row\)"),
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
    with pytest.raises(ldpsim.ConfigError, match=r"^response 'y' must be 0 or 1 for the logistic model; row 4 has 2$"):
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
    x = g.normal(1e300, 1e299, 300)
    rows = "".join(f"{2 + 0.5 * (v / 1e300 - 1) + g.normal()},{float(v)!r}\n" for v in x)
    data = _write(tmp_path / "big.csv", "y,x\n" + rows)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's overflow warnings would be errors
        result = fit(data, "linear", "y", epsilon=3.0, **QUICK)
    assert np.isfinite(result.estimate).all() and (result.intervals["plug-in"][:, 1] > result.intervals["plug-in"][:, 0]).all()
    with pytest.raises(ldpsim.ConfigError, match=r"^column 'x' holds values beyond 1e\+150"):
        fit(data, "linear", "y", epsilon=3.0, scaling="none", **QUICK)


@pytest.mark.slow
@pytest.mark.parametrize("model", ["linear", "logistic"])
def test_fit_on_real_data_agrees_with_statsmodels(model, tmp_path):
    # Angrist-style yardstick: the Fair (1978) affairs data shipped with statsmodels, non-private OLS / Logit on
    # the same columns. DP-SGD's estimate differs from the full-sample fit by its optimisation and privacy noise
    # only: within 4 of the plug-in interval's standard errors (deterministic: fixed seed)
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
    result = fit(path, model, response, covariates, epsilon=3.0, delta=1e-6, kappa=1.6, seed=3, show_nonprivate=True)
    est = result.estimate[1:]
    bounds = result.intervals["plug-in"][1:]
    se = (bounds[:, 1] - bounds[:, 0]) / (2 * normal_quantile(0.95))
    assert (np.abs(est - ref) < 4 * se).all(), (est, ref, se)
    np.testing.assert_allclose(result.nonprivate[0][1:], ref, rtol=1e-6)  # our full-sample fit is statsmodels'
    text = result.render()
    assert "for the whole release" in text and "full sample (NOT private)" in text


def test_fit_command_line(tmp_path):
    data = _data(tmp_path)
    done = subprocess.run([sys.executable, "-m", "ldpsim", "fit", str(data), "--response", "y", "--epsilon", "2",
                           "--kappa", "1.2", "--seed", "2", "--bounds", "x1=0:100"], capture_output=True, text=True)
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

"""Issue 44 section 6, the hunt's inputs that were bad, each refused in one line or run as it should.

The hunt (every mechanism at epsilon 50, 700 and 1e-6 on every model that takes it, the delta and
dimension grids, the audit's flags, SIGKILL then --resume) and its table are in the issue's report; a
test here for each input it found bad and that was fixed.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import ldpsim
from ldpsim.engine.errors import ConfigError
from ldpsim.privacy.mechanisms.gaussian_noise import ClassicalGaussian, gaussian_delta
from ldpsim.privacy.mechanisms.rr import RandomizedResponse

from run_helpers import api_run, cli, one_line_error, online_model


def _load(**keys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)
        return ldpsim.load_config({"n": 1000, "reps": 2, **keys})


# --- randomized response at epsilon 700 ---------------------------------------------------------------------------

def test_randomized_response_at_epsilon_700_is_computed_and_its_numbers_below_are_unchanged():
    # the quantile model at epsilon = 700 (e^700 is a float) was refused: "cannot be computed in floating point ...
    # OverflowError: (34, 'Numerical result out of range')", from (e^eps - 1)^2 in the variance
    _load(model="quantile", epsilon=700)
    variance = RandomizedResponse(700.0).variance
    assert 0.0 < variance == pytest.approx(math.exp(-700.0), rel=1e-12)
    for eps in (0.25, 0.5, 1.0, 2.0, 8.0, 300.0):  # every committed number was computed by this formula
        assert RandomizedResponse(eps).variance == math.exp(eps) / math.expm1(eps) ** 2


@pytest.mark.parametrize("epsilon,edge", [
    (1000.0, "allowed here: epsilon <= 709.7 (the largest it computes at), or epsilon = inf (non-private)"),
    (1e300, "allowed here: epsilon <= 709.7 (the largest it computes at)"),
    (1e-160, "allowed here: epsilon >= 1.87e-154 (the smallest it computes at)"),
    (1e-300, "allowed here: epsilon >= 1.87e-154 (the smallest it computes at)"),
])
def test_a_budget_the_model_cannot_be_computed_at_names_the_largest_or_smallest_usable(epsilon, edge):
    # the message named only the floating-point error ("OverflowError: math range error", "float division by
    # zero"), not the value that would run
    with pytest.raises(ConfigError, match="cannot be computed in floating point") as info:
        _load(model="quantile", epsilon=epsilon)
    assert edge in str(info.value), str(info.value)
    assert "\n" not in str(info.value)
    value = float(edge.split()[4])
    _load(model="quantile", epsilon=value)  # the value said runs


def test_the_edge_is_said_on_the_command_line_in_one_line(capsys, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text("model: quantile\nepsilon: 1000\nn: 1000\nreps: 2\n")
    status, _, err = cli(capsys, "check", config)
    one_line_error(status, err, "epsilon = 1000.0", "allowed here: epsilon <= 709.7")


def test_no_edge_is_invented_when_the_budget_is_not_the_problem():
    # tau = 1e-300 (the quantile's density vanishes) is not epsilon's problem: no epsilon bound is said
    with pytest.raises(ConfigError, match="tau = 1e-300") as info:
        _load(model="quantile", tau=1e-300, epsilon=2.0)
    assert "allowed here" not in str(info.value)


@pytest.mark.slow
def test_randomized_response_at_epsilon_700_runs_to_finite_tables():
    result = api_run({"model": "quantile", "epsilon": 700, "n": 1000, "reps": 4, "methods": ["BM", "SN", "oracle"],
                      "seed": 1})
    values = [float(row[k]) for row in result.rows for k in ("coverage", "length")]
    assert values and np.isfinite(values).all()


# --- the classical Gaussian's guarantee above epsilon = 1 ----------------------------------------------------------

def test_the_classical_gaussian_prints_the_delta_its_sigma_gives():
    # at epsilon = 700 it printed "(epsilon = 700, delta = 1e-05) LDP (...; exact delta at this sigma 1)": a pair the
    # noise does not give (delta = 1 is no privacy)
    for eps in (50.0, 700.0):
        mech = ClassicalGaussian(eps, 1e-5, 2.0)
        exact = gaussian_delta(mech.sigma, eps, 2.0)
        assert exact > 1e-5
        claim = mech.claim()
        assert claim.startswith(f"(epsilon = {eps:g}, delta = {exact:.3g}) LDP"), claim
        assert "NOT the delta = 1e-05 asked" in claim and "epsilon < 1" in claim
    for eps in (0.5, 1.0, 2.0):  # where the calibration gives delta, the claim is as before
        claim = ClassicalGaussian(eps, 1e-5, 2.0).claim()
        assert claim.startswith(f"(epsilon = {eps:g}, delta = 1e-05) LDP (Gaussian, classical calibration"), claim
        assert "exact delta at this sigma" in claim


def test_an_online_model_under_the_classical_gaussian_at_epsilon_50_states_a_valid_guarantee():
    model = online_model("huber_clip", mechanism="gaussian_classical", epsilon=50.0, delta=1e-5)
    text = model.guarantee
    assert "delta = 1e-05) LDP" not in text and "NOT the delta = 1e-05 asked" in text, text


# --- the logistic model beyond its quadrature -----------------------------------------------------------------------

def test_logistic_beyond_its_quadrature_is_refused_as_its_key_not_as_a_floating_point_problem():
    # was "model 'logistic' cannot be computed in floating point at ..., dim = 50: ValueError: dim = 50: ..."
    with pytest.raises(ConfigError) as info:
        _load(model="logistic", mechanism="piecewise_d", dim=50)
    text = str(info.value)
    assert text.startswith("dim = 50 is outside [1, 5] for model 'logistic'"), text
    assert "floating point" not in text and "ValueError" not in text
    _load(model="logistic", mechanism="piecewise_d", dim=5)


# --- the audit's --delta ---------------------------------------------------------------------------------------------

_GAUSS = '''
import math
from typing import NamedTuple

from ldpsim.extend import Mechanism, normal, register_noise, sensitivity


class HuntGaussRecord(NamedTuple):
    sigma: float


@register_noise(HuntGaussRecord)
def hunt_gauss(noise, gen):
    return noise.sigma * normal(gen)


class HuntGauss(Mechanism):
    name = "hunt_gauss"

    def __init__(self, epsilon, bounds, delta=None):
        super().__init__(epsilon, bounds, delta)
        d = self.delta if self.delta is not None and 0 < self.delta < 1 else 1e-5  # lenient: ldpsim judges delta
        self.sigma = sensitivity(self.bounds, "l2") * math.sqrt(2.0 * math.log(1.25 / d)) / self.epsilon

    def kernel_params(self):
        return HuntGaussRecord(self.sigma)
'''


@pytest.mark.parametrize("delta", ["1", "2", "inf", "-1"])
def test_the_audit_refuses_a_delta_outside_0_1(capsys, tmp_path, delta):
    # 1, 2 and inf were "internal error: ValueError: delta must be in (0, 1) for an (epsilon, delta) claim"; -1 was
    # audited silently as the pure epsilon claim
    path = tmp_path / "hunt_gauss.py"
    path.write_text(_GAUSS)
    status, out, err = cli(capsys, "audit", f"{path}:HuntGauss", "--delta", delta, "--draws", "2000")
    one_line_error(status, err, f"--delta = {float(delta):g} is outside [0, 1)")
    assert out == ""

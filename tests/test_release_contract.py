"""A user's release mechanism through ldpsim.extend: the contract the built-in LDP mechanisms use."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import ldpsim.extend
from ldpsim.engine.errors import ConfigError
from ldpsim.models.linear import LinearModel
from ldpsim.models.mean import MeanModel
from ldpsim.models.truth import truth_of
from ldpsim.privacy.mechanisms.kernel import release
from ldpsim.privacy.mechanisms import BoundedNoise, make_mechanism, noise_record
from ldpsim.privacy.user_audit import audit_mechanism

EXAMPLES = Path(__file__).parents[1] / "examples"
SPEC = str(EXAMPLES / "my_duchi.py") + ":MyDuchi"


def _edited(tmp_path, old: str, new: str, name: str = "edited_duchi.py") -> str:
    text = (EXAMPLES / "my_duchi.py").read_text()
    assert old in text, old
    path = tmp_path / name
    path.write_text(text.replace(old, new))
    return f"{path}:MyDuchi"


def test_register_release_is_public():
    assert "register_release" in ldpsim.extend.__all__
    assert ldpsim.extend.register_release.__module__ == "ldpsim.privacy.mechanisms.kernel"


def test_a_users_release_is_wrapped_for_the_models():
    mech = make_mechanism(SPEC, 2.0, [0.5, 1.0, 2.0])
    assert mech.releases
    record = noise_record(mech, lanes=1)
    assert isinstance(record, BoundedNoise) and type(record.mechanism) in release.registry
    np.testing.assert_array_equal(record.bounds, [0.5, 1.0, 2.0])
    assert record.t.shape == (3,)
    assert "declared, not verified" in MeanModel(epsilon=2.0, mechanism=SPEC).guarantee


def test_a_users_release_has_its_S_estimated_and_the_estimate_is_the_builtins_closed_form():
    # the user's Duchi is the built-in one: the Monte Carlo S (ldpsim estimates S for any user's release) agrees
    # with the built-in's closed form. Mean model: the released gradient at theta* = 1/2 is +-D/2 whatever X, so
    # S = D^2 / 4 with no Monte Carlo error; linear: within 4 of the estimate's standard errors
    mean = MeanModel(epsilon=1.0, mechanism=SPEC)
    assert mean.noise_estimated
    np.testing.assert_allclose(truth_of(mean).S, MeanModel(epsilon=1.0, mechanism="duchi").gradient_covariance(),
                               rtol=1e-6)
    linear = LinearModel(epsilon=2.0, mechanism=SPEC)
    truth = truth_of(linear)
    exact = LinearModel(epsilon=2.0, mechanism="duchi").gradient_covariance()
    assert np.all(np.abs(truth.S - exact) <= 4.0 * truth.S_se + 1e-12), (truth.S - exact) / truth.S_se


def test_the_audit_of_a_users_release_tests_its_claim():
    text, refuted = audit_mechanism(SPEC, 2.0, [1.0], draws=200_000, seed=3)
    assert not refuted and "registered release" in text


def test_the_audit_refutes_a_users_release_that_spends_twice_its_epsilon(tmp_path):
    spec = _edited(tmp_path, "self.per = self.epsilon / self.bounds.size",
                   "self.per = 2.0 * self.epsilon / self.bounds.size")
    text, refuted = audit_mechanism(spec, 1.0, [1.0], draws=200_000, seed=3)
    assert refuted and "REFUTED" in text


def test_a_release_drawing_from_numpys_global_generator_is_refused(tmp_path):
    spec = _edited(tmp_path, "uniform(gen) < 0.5 + tj * noise.tilt", "np.random.random() < 0.5 + tj * noise.tilt")
    path = Path(spec.rsplit(":", 1)[0])
    path.write_text("import numpy as np\n" + path.read_text())
    with pytest.raises(ConfigError, match="not a function of the generator"):
        make_mechanism(spec, 1.0, [1.0])


def test_a_release_that_draws_infinities_is_refused(tmp_path):
    spec = _edited(tmp_path, "noise.bound, -noise.bound)", "float('inf'), -noise.bound)")
    with pytest.raises(ConfigError, match="a release must be finite"):
        make_mechanism(spec, 1.0, [1.0])


def test_a_record_registered_for_neither_noise_nor_release_is_refused(tmp_path):
    spec = _edited(tmp_path, "@register_release(MyDuchiRelease)\n", "")
    with pytest.raises(ConfigError, match="neither a noise nor a release is registered"):
        make_mechanism(spec, 1.0, [1.0])


def test_models_without_a_bounded_gradient_refuse_the_ldp_mechanisms():
    from ldpsim import api

    with pytest.raises(ConfigError, match="mechanism = 'duchi' is not available for model 'quantile'; allowed: rr"):
        api.run(dict(model="quantile", mechanism="duchi", n=100, reps=2), out=None, progress=False)

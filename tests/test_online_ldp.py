"""The LDP releases of bounded gradients in 004's clipped models (huber_clip, logistic_clip): kernels, laws, config.

The clipped gradient ``g`` (``||g||_2 <= clip``) is released whole: ``t = g / clip``
in ``[-1, 1]^p``, an unbiased release of ``t`` (ldpsim/privacy/mechanisms/), times
``clip``; ``duchi_l2`` releases ``t`` on the unit ball itself. Statistical checks
use 4 Monte Carlo standard errors.
"""

from __future__ import annotations

import math
import zlib

import numba
import numpy as np
import pytest

import ldpsim
from ldpsim.engine.errors import ConfigError
from ldpsim.engine.dialect.rng import kernel_rng, local_rng, release_rng
from ldpsim.models import MODELS, add_gradient_at
from ldpsim.privacy.mechanisms import LDP_MECHANISMS
from ldpsim.privacy.mechanisms.duchi import duchi_bound, DuchiL2, l2_constant
from ldpsim.privacy.mechanisms.sampled import PiecewiseD
from ldpsim.privacy.mechanisms import BoundedNoise
from ldpsim.studies.trajectory.kernel import run_trajectories, trajectory_twin
from test_ldp_mechanisms import _draws, _moment_errors  # the releases drawn through the kernel function, their check

#: Tolerance of every Monte Carlo comparison, in standard errors.
Z = 4.0
#: (model, mechanism) pairs: the ball form, Algorithm 4, and a 1-D mechanism at epsilon / p.
CASES = [("huber_clip", "duchi_l2"), ("huber_clip", "piecewise_d"), ("logistic_clip", "duchi")]
IDS = [f"{m}-{k}" for m, k in CASES]


def _gen(*key) -> np.random.Generator:
    return np.random.Generator(np.random.SFC64(zlib.crc32(repr(key).encode())))


def _model(name: str, mechanism: str | None = None, epsilon: float = 2.0, dim: int = 3, clip: float = 1.0):
    if mechanism is None:
        return MODELS[name](dim=dim, mechanism=None, mu=math.inf, clip=clip)
    return MODELS[name](dim=dim, mechanism=mechanism, epsilon=epsilon, clip=clip)


# --- the kernel draws its twin's numbers; lanes draw what one lane draws -----------------------------


#: The fast tier compiles the ball's record; the others' trajectory kernels (15 s each, cold) run in CI's slow tier.
TWIN_CASES = [pytest.param(*case, id=i, marks=() if case == CASES[0] else pytest.mark.slow) for case, i in zip(CASES, IDS)]


@pytest.mark.parametrize("batch_size", [1, 3])
@pytest.mark.parametrize("name, mechanism", TWIN_CASES)
def test_kernel_equals_twin_draw_for_draw(name, mechanism, batch_size):
    model = _model(name, mechanism)
    assert isinstance(model.kernel_params().noise, BoundedNoise)
    n = 2000 if batch_size == 1 else 800
    checkpoints = np.array([10, 100, n // 2, n], dtype=np.int64)
    gen_k, gen_t = _gen("twin", name, mechanism, batch_size), _gen("twin", name, mechanism, batch_size)
    (last, average, steps), = run_trajectories(model, [gen_k], n, 0.5, 0.6, 0.1, checkpoints, batch_size)
    want = trajectory_twin(model, gen_t, n, 0.5, 0.6, 0.1, checkpoints, batch_size)
    assert steps == want[2] == n
    np.testing.assert_array_equal(last, want[0])
    np.testing.assert_array_equal(average, want[1])
    assert np.isfinite(last).all() and len(np.unique(last[-1])) == model.p
    # the kernel left the generator where the twin's draws did
    assert np.array_equal(gen_k.bit_generator.state["state"]["state"], gen_t.bit_generator.state["state"]["state"])


def _lanes_check(name, mechanism, lanes=4, count=6):
    # count replications at `lanes` (a full call and a padded remainder) against one lane each and the twin
    model = _model(name, mechanism)
    n, checkpoints = 1500, np.array([15, 150, 1500], dtype=np.int64)

    def gens():
        return [_gen("lanes", name, mechanism, r) for r in range(count)]

    wide, one, twin = gens(), gens(), gens()
    got = []
    for first in range(0, count, lanes):
        got += run_trajectories(model, wide[first:first + lanes], n, 0.5, 0.6, 0.0, checkpoints, 1, width=lanes)
    for r in range(count):
        alone = run_trajectories(model, [one[r]], n, 0.5, 0.6, 0.0, checkpoints)[0]
        want = trajectory_twin(model, twin[r], n, 0.5, 0.6, 0.0, checkpoints)
        for a, b, c in zip(got[r], alone, want):
            assert np.array_equal(a, b) and np.array_equal(a, c), (r, a, b, c)
    assert len({float(g[0][-1, 0]) for g in got}) == count  # six different replications


@pytest.mark.slow  # trajectory kernels compiled at 4 lanes for each record (about a minute each, cold): CI's slow tier
@pytest.mark.parametrize("name, mechanism", CASES, ids=IDS)
def test_lanes_give_each_replication_its_own_numbers(name, mechanism):
    _lanes_check(name, mechanism)


# --- the release is unbiased for the clipped gradient, through the kernel's code path -----------------


@numba.njit(cache=True, error_model="numpy")
def _released(params, obs, theta, stream, n, prefill):
    # n gradients of one observation (x in params.x, obs) at theta, each added to a copy of prefill (a
    # mini-batch's earlier gradients, which the release must leave out) and returned without it
    gen = local_rng(stream)
    p = theta.shape[0]
    out = np.empty((n, p))
    for i in range(n):
        for j in range(p):
            out[i, j] = prefill[j]
        add_gradient_at(params, obs, theta, gen, out[i])
        for j in range(p):
            out[i, j] -= prefill[j]
    release_rng(stream, gen)
    return out


#: One observation and a theta at which the clip binds: (z, obs, theta); Huber's obs is the error's normal draw,
#: logistic's the uniform that draws y.
POINTS = {"huber_clip": (np.array([1.5, -0.8, 0.3]), 1.7, np.array([0.2, -0.5, 1.0, 0.4, 1.3])),
          "logistic_clip": (np.array([1.5, -0.8, 0.3]), 0.05, np.array([-0.5, -1.0, 0.5, 0.2]))}


def _gradient(params, obs, theta, z):
    # the plain-Python gradient of the observation (x = (1, z)) at theta: the twin's code path
    params.x[:] = np.r_[1.0, z]
    out = np.zeros(theta.shape[0])
    add_gradient_at(params, obs, theta, _gen("unused"), out)
    return out


@pytest.mark.parametrize("name, mechanism", CASES + [("logistic_clip", "nprr")], ids=IDS + ["logistic_clip-nprr"])
def test_released_gradient_is_unbiased_for_the_clipped_gradient(name, mechanism):
    z, obs, theta = POINTS[name]
    clip = 0.8  # not 1: a release not scaled back by clip would pass unseen
    g = _gradient(_model(name, clip=clip).kernel_params(), obs, theta, z)
    unclipped = _gradient(_model(name, clip=1e9).kernel_params(), obs, theta, z)
    assert np.linalg.norm(g) == pytest.approx(clip, rel=1e-12) and np.linalg.norm(unclipped) > 1.5 * clip
    assert (g > 0).any() and (g < 0).any()
    params = _model(name, mechanism, clip=clip).kernel_params()
    params.x[:] = np.r_[1.0, z]
    prefill = np.linspace(-3.0, 5.0, theta.shape[0])
    x = _released(params, obs, theta, kernel_rng(_gen("mean", name, mechanism)), 200_000, prefill)
    mean, se = x.mean(axis=0), x.std(axis=0, ddof=1) / math.sqrt(x.shape[0])
    assert (np.abs(mean - g) < Z * se).all(), (mean, g, se)
    # teeth: the draws tell the clipped gradient from the unclipped one
    assert (np.abs(mean - unclipped) > Z * se).any()
    assert len(np.unique(x[:, 0])) > 1  # released, not g itself


# --- duchi_l2 on the ball -----------------------------------------------------------------------------


BALL_POINTS = {"inside": np.array([0.3, -0.5, 0.1, 0.2]), "sphere": np.array([0.5, -0.5, 0.5, -0.5]),
               "axis": np.array([0.0, 0.0, -1.0, 0.0]), "zero": np.zeros(4)}


@pytest.mark.parametrize("epsilon", [1.0, 4.0])
@pytest.mark.parametrize("where", list(BALL_POINTS))
def test_duchi_l2_ball_law(where, epsilon):
    # v = g / clip in the unit ball of R^4: E[Z | v] = v, Cov = (B^2 / d) I - v v' (the box formula with weights 1)
    clip, v = 1.7, BALL_POINTS[where]
    mech = DuchiL2(epsilon, np.full(4, clip), ball=True)
    bound = l2_constant(4) * duchi_bound(epsilon)
    np.testing.assert_array_equal(mech.weights, np.ones(4))
    cov = bound**2 / 4 * np.eye(4) - np.outer(v, v)
    np.testing.assert_allclose(mech.conditional_covariance(v), cov, rtol=1e-14, atol=1e-15)
    x = _draws(mech.record(), kernel_rng(_gen("ball", where, epsilon)), v, 200_000)
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), bound, rtol=1e-12)  # on the sphere of radius B
    assert _moment_errors(x, v, cov) == []
    # teeth: the box form's release of the same t (v shrunk by 1 / 2 = 1 / sqrt(d)) has covariance B^2 I - v v'
    box = DuchiL2(epsilon, np.full(4, clip))
    np.testing.assert_allclose(box.weights, np.full(4, 0.5))
    errors = _moment_errors(_draws(box.record(), kernel_rng(_gen("box", where, epsilon)), v, 20_000), v, cov)
    assert [e[:8] for e in errors] == [f"cov[{j},{j}]" for j in range(4)]  # every variance, no mean, no covariance


def test_duchi_l2_ball_form_in_the_models():
    model = _model("huber_clip", "duchi_l2", epsilon=2.0, clip=1.5)
    mech = model.mechanism
    assert isinstance(mech, DuchiL2) and mech.ball and mech.dim == model.p == 5
    np.testing.assert_array_equal(mech.bounds, np.full(5, 1.5))
    np.testing.assert_array_equal(model.kernel_params().noise.mechanism.weights, np.ones(5))
    np.testing.assert_array_equal(mech.output_bound, np.full(5, mech.bound))
    assert mech.guarantee == "epsilon = 2 LDP (Duchi et al., l2, on the l2 ball of radius 1.5)"
    # the other mechanisms work on the box |t_j| <= 1 that holds the ball
    pd = _model("huber_clip", "piecewise_d", epsilon=2.0, clip=1.5).mechanism
    assert type(pd) is PiecewiseD and not hasattr(pd, "ball") and (pd.bounds == 1.5).all()
    with pytest.raises(ValueError, match="the ball form needs equal bounds"):
        DuchiL2(1.0, [1.0, 2.0], ball=True)


# --- config: the budget key, the guarantee, the refusals ----------------------------------------------


def _settings(**kw):
    return ldpsim.load_config({"study": "trajectory", "n": 5000, "dim": 3, **kw}).settings


def test_budget_key_and_guarantees():
    s = _settings(model="logistic_clip", mechanism="duchi", epsilon=2, clip=1.5)[0]
    assert (s.mechanism, s.epsilon, s.mu, s.delta, s.budget) == ("duchi", 2.0, None, None, None)
    model = ldpsim.models.build_model(s)
    assert model.guarantee == model.mechanism.guarantee == \
        "epsilon = 2 LDP (Duchi et al., each of 4 coordinates at epsilon = 0.5)"
    summary = model.privacy_summary()
    assert summary["sensitivity"] is None
    assert summary["noise_variance"] == pytest.approx(1.5**2 * duchi_bound(0.5) ** 2, rel=1e-14)
    s = _settings(model="huber_clip", mechanism="piecewise_d", budget=3.0)[0]  # a constant budget is epsilon
    assert (s.mechanism, s.epsilon, s.mu, s.budget) == ("piecewise_d", 3.0, None, None)
    assert ldpsim.models.build_model(s).guarantee == "epsilon = 3 LDP (Piecewise mechanism, k of d coordinates)"
    # epsilon = inf: non-private, one spelling
    s = _settings(model="huber_clip", mechanism="duchi_l2", epsilon=math.inf)[0]
    assert (s.mechanism, s.mu) == (None, math.inf)
    with pytest.raises(ConfigError, match=r"^mu = 2 is read by no setting of this run"):
        _settings(model="huber_clip", mechanism="duchi_l2", epsilon=1, mu=2)
    # the additive mechanisms keep their keys and seeds' inputs
    s = _settings(model="huber_clip", mechanism="gdp", mu=1)[0]
    assert (s.mechanism, s.mu, s.epsilon) == ("gdp", 1.0, None)


@pytest.mark.parametrize("mapping, message", [
    ({"model": "huber_clip", "mechanism": "duchi", "budget": {"uniform": [1, 2]}},
     "budget = uniform(1, 2) draws each user's epsilon, but mechanism = 'duchi' (one pure epsilon-LDP release per "
     "user) has no per-user form; allowed with duchi: a constant epsilon (budget a number, or none); per-user budgets "
     "run with gdp, laplace, gaussian_classical"),
    ({"model": "huber_mallows", "mechanism": "duchi_l2"},
     "mechanism = 'duchi_l2' is not available for model 'huber_mallows': of Shi et al.'s models the releases of a "
     f"clipped gradient ({', '.join(LDP_MECHANISMS)}) run with huber_clip, logistic_clip; allowed for "
     "huber_mallows: gdp, laplace, gaussian, gaussian_classical"),
    ({"model": "logistic_mallows", "mechanism": "piecewise"},
     "mechanism = 'piecewise' is not available for model 'logistic_mallows': of Shi et al.'s models the releases"),
])
def test_refusals_are_one_line(mapping, message):
    with pytest.raises(ConfigError) as info:
        _settings(**mapping)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


def test_refusals_outside_the_config():
    # the classes refuse as the config does
    with pytest.raises(ConfigError, match=r"^mechanism = 'duchi' is not available for model 'logistic_mallows'"):
        MODELS["logistic_mallows"](dim=2, mechanism="duchi", epsilon=1.0)
    with pytest.raises(ValueError, match="has no per-user budgets"):
        MODELS["huber_clip"](dim=2, mechanism="duchi", budget="uniform(1, 2)", clip=1.0)


@pytest.mark.slow  # trajectory kernels and their figure for two records (55 s, cold): CI's slow tier
def test_a_trajectory_run_through_the_api():
    # the config path end to end (the clip models run in the trajectory study only): tiny n, 3 replications
    result = ldpsim.run({"study": "trajectory", "model": "huber_clip", "mechanism": ["duchi_l2", "piecewise_d"],
                         "epsilon": 4, "dim": 3, "clip": 1.0, "n": 3000, "reps": 3, "seed": 5, "checkpoints": 5},
                        n_jobs=1, progress=False, lanes=1, out=None)
    guarantees = {row["mechanism"]: row["guarantee"] for row in result.tables["guarantees"]}
    assert guarantees == {"duchi_l2": "epsilon = 4 LDP (Duchi et al., l2, on the l2 ball of radius 1)",
                          "piecewise_d": "epsilon = 4 LDP (Piecewise mechanism, k of d coordinates)"}
    rows = result.rows
    assert {r["mechanism"] for r in rows} == {"duchi_l2", "piecewise_d"}
    assert all(math.isfinite(r["distance"]) and r["n_failed"] == 0 for r in rows)

"""Lanes: replications side by side in one kernel call give each replication's own numbers, bit for bit.

Every lanes kernel is compared, lane by lane, with its plain-Python twin (the
numbers, the streamed state and where the generator is left), at widths that
fill a SIMD register and widths that do not (3: a vector LLVM widens); every
study's tables with the run's lanes against one lane. The fast tier checks
representative models at 1, 3 and 8 lanes; the slow tier every model, and
every committed config at 1, 2, 4 and 8 lanes.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import yaml

import ldpsim
from ldpsim.engine.dialect import lanes as L
from ldpsim.engine.dialect.jit import jit
from ldpsim.engine.dialect.lanes import lnot, where
from ldpsim.inference.methods import ZOO_METHODS
from ldpsim.engine.dialect.rng import exponential, kernel_rngs, local_rng, normal, normal_where, release_rng, \
    uniform, uniform_where
from ldpsim.inference.streaming import StreamLayout
from ldpsim.models import MODELS, MeanModel, QuantileModel, QuantileRegressionModel
from ldpsim.models.linear import LinearModel
from ldpsim.models.logistic import LogisticModel
from ldpsim.recursion.kernels import run_paths_lanes
from ldpsim.recursion.twins import path_twin
from ldpsim.studies.dpsgd import kernel as K
from ldpsim.studies.trajectory.kernel import run_trajectories, trajectory_twin

ROOT = Path(__file__).resolve().parents[1]
CHOL = np.linalg.cholesky(np.array([[1.0, 0.2, 0.0], [0.2, 1.0, 0.1], [0.0, 0.1, 1.0]]))


def _gens(count, base=0):
    return [np.random.Generator(np.random.SFC64(base + seed)) for seed in range(count)]


def _state(gen):
    return gen.bit_generator.state["state"]["state"]


def _same_generators(gens, others):
    return all(np.array_equal(_state(a), _state(b)) for a, b in zip(gens, others))


# --- the lane vectors -------------------------------------------------------------------


@jit
def _operations(handle, x, y, out, flags):
    # every operation the lane-generic kernels use, on lane vectors built from the inputs (one lane: numbers)
    gen = local_rng(handle)
    zero = uniform(gen) * 0.0  # a lane vector (or a number) of +0.0, so that the inputs become lane vectors
    for i in range(x.shape[0]):
        a = x[i] + zero
        b = y[i] + zero
        out[i, 0] = a + b
        out[i, 1] = a - b
        out[i, 2] = a * b
        out[i, 3] = a / b
        out[i, 4] = min(a, b)
        out[i, 5] = max(a, b)
        out[i, 6] = abs(a)
        out[i, 7] = math.sqrt(abs(a))
        out[i, 8] = math.exp(-abs(a))
        out[i, 9] = math.log1p(abs(b))
        out[i, 10] = where(a < b, a, 2.0)
        out[i, 11] = float(int(where(np.isfinite(a), min(max(a, -1e6), 1e6), 0.0) * 3.0))  # (int of inf: undefined)
        out[i, 12] = -a
        flags[i, 0] = where(a < b, 1, 0)
        flags[i, 1] = where(a <= b, 1, 0)
        flags[i, 2] = where(a != b, 1, 0)
        flags[i, 3] = where(a == b, 1, 0)
        flags[i, 4] = where(np.isfinite(a), 1, 0)
        flags[i, 5] = where(lnot(a > b) & (a >= b), 1, 0)
        flags[i, 6] = where((a > 0.0) != (b > 0.0), 1, 0)
    release_rng(handle, gen)


SPECIAL = np.array([0.0, -0.0, 1.5, -2.25, np.inf, -np.inf, np.nan, 1e-310, -7.0, 3.0, 1e300, 0.25])


@pytest.mark.parametrize("lanes", [3, 8])
def test_lane_operations_are_the_scalar_ones_bit_for_bit(lanes):
    # each lane gets its own (x, y) pair, including NaN, infinities, signed zeros and subnormals
    rng = np.random.default_rng(4)
    xs = np.concatenate([SPECIAL, rng.normal(size=20) * 10.0])
    ys = np.concatenate([SPECIAL[::-1], rng.normal(size=20)])
    pairs = [(x, y) for x in xs[:12] for y in ys[:12]] + list(zip(xs, ys))
    count = int(np.ceil(len(pairs) / lanes))
    x = np.full((count, lanes), 1.0)
    y = np.full((count, lanes), 1.0)
    for k, (a, b) in enumerate(pairs):
        x[k // lanes, k % lanes], y[k // lanes, k % lanes] = a, b
    out, flags = L.LaneArray(np.zeros((count, 13, lanes))), L.LaneArray(np.zeros((count, 7, lanes), dtype=np.int64))
    _operations(kernel_rngs(_gens(lanes)), L.LaneArray(x), L.LaneArray(y), out, flags)
    one_out, one_flags = np.zeros(13), np.zeros(7, dtype=np.int64)
    with np.errstate(all="ignore"):
        for k in range(count * lanes):
            i, lane = divmod(k, lanes)
            _operations(kernel_rngs(_gens(1)), np.array([x[i, lane]]), np.array([y[i, lane]]), one_out[None, :],
                        one_flags[None, :])
            got = out.array[i, :, lane]
            # the same bits (a NaN's payload aside), and the same truth values
            assert np.array_equal(got.view(np.int64), one_out.view(np.int64)) or (
                np.array_equal(np.isnan(got), np.isnan(one_out))
                and np.array_equal(got[~np.isnan(got)].view(np.int64), one_out[~np.isnan(one_out)].view(np.int64))), \
                (x[i, lane], y[i, lane], got, one_out)
            assert np.array_equal(flags.array[i, :, lane], one_flags), (x[i, lane], y[i, lane])


@jit
def _draws(handle, n, out):
    gen = local_rng(handle)
    for i in range(n):
        out[i, 0] = normal(gen)
        out[i, 1] = uniform(gen)
        out[i, 2] = exponential(gen)
        z = normal(gen)
        outside = abs(z) > 0.3  # a rejection loop: each lane redraws alone
        while L.any_lane(outside):
            z = normal_where(gen, outside, z)
            outside = abs(z) > 0.3
        out[i, 3] = z
        keep = uniform(gen) < 0.5  # draws in some lanes only
        out[i, 4] = uniform_where(gen, keep, -1.0)
    release_rng(handle, gen)


def _draws_twin(gen, n):
    out = np.empty((n, 5))
    for i in range(n):
        out[i, 0], out[i, 1], out[i, 2] = gen.standard_normal(), gen.random(), gen.standard_exponential()
        z = gen.standard_normal()
        while abs(z) > 0.3:
            z = gen.standard_normal()
        out[i, 3] = z
        out[i, 4] = gen.random() if gen.random() < 0.5 else -1.0
    return out


@pytest.mark.parametrize("lanes", [2, 3, 8])
def test_every_lane_draws_its_own_generators_numbers(lanes):
    # 4000 steps: thousands of normals and exponentials that leave the ziggurat's layers (its wedges and
    # tails, numpy's slow path) in some lane while the others do not
    n = 4000
    gens = _gens(lanes, 50)
    out = L.lane_array((n, 5), lanes)
    _draws(kernel_rngs(gens), n, out)
    twins = _gens(lanes, 50)
    for lane, twin in enumerate(twins):
        assert np.array_equal(L.lane_of(out, lane), _draws_twin(twin, n))
    assert _same_generators(gens, twins)


@jit
def _gather(handle, data, idx_out, out):
    gen = local_rng(handle)
    n = data.shape[0]
    for i in range(idx_out.shape[0]):
        idx = int(uniform(gen) * n)
        out[i] = data[idx, 1]  # lane l: data[idx[l], 1, l]
        data[idx, 0] = -1.0 * i  # scatter
        idx_out[i] = idx
    release_rng(handle, gen)


def test_lane_arrays_gather_and_scatter_each_lanes_own_element():
    lanes, n = 8, 50
    data = np.arange(n * 2 * lanes, dtype=float).reshape(n, 2, lanes)
    lanes_data = L.LaneArray(data.copy())
    idx, out = L.lane_array(30, lanes, 0, np.int64), L.lane_array(30, lanes)
    _gather(kernel_rngs(_gens(lanes)), lanes_data, idx, out)
    want = data.copy()
    for lane in range(lanes):
        for i, j in enumerate(idx.array[:, lane]):
            assert out.array[i, lane] == data[j, 1, lane]
            want[j, 0, lane] = -1.0 * i
    assert np.array_equal(lanes_data.array, want)


def test_lane_arrays_refuse_what_they_do_not_hold():
    with pytest.raises(TypeError, match="LaneArray wraps a C-contiguous float64 or int64 array"):
        L.LaneArray(np.zeros((3, 4), dtype=np.float32))
    with pytest.raises(TypeError):
        L.LaneArray(np.zeros((4, 3)).T)
    with pytest.raises(ValueError, match="lanes need numba and generators on SFC64"):
        kernel_rngs([np.random.default_rng(0), np.random.default_rng(1)])


def test_padding_lanes_are_other_generators():
    gens = _gens(3)
    padded = L.padded(gens, 8)
    assert padded[:3] == gens and len(padded) == 8 and len({id(g) for g in padded}) == 8
    assert L.padded(gens, 2) == gens


# --- the coverage kernels -----------------------------------------------------------------


def _coverage_models():
    return {
        "quantile_rr": QuantileModel(0.5, 1.0),
        "quantile_plain": QuantileModel(0.9, math.inf),
        "mean_laplace": MeanModel(1.0),
        "mean_gaussian": MeanModel(1.0, mechanism="gaussian", delta=1e-5),
        "qr_truncnorm_laplace": QuantileRegressionModel(0.5, epsilon=1.0),
        "qr_uniform_gaussian": QuantileRegressionModel(0.3, epsilon=2.0, covariates="uniform", mechanism="gaussian",
                                                       delta=1e-5),
        "linear": LinearModel(epsilon=1.0),
        "logistic": LogisticModel(epsilon=1.0),
    }


def _same_states(got, want):
    return all(np.array_equal(a.theta_bar, b.theta_bar, equal_nan=True) and np.array_equal(a.sn_v, b.sn_v, equal_nan=True)
               and np.array_equal(a.blocks, b.blocks) and np.array_equal(a.batches, b.batches) and a.steps == b.steps
               for a, b in zip(got, want))


def _check_coverage_lanes(name, batch_size, lanes, count=None):
    model = _coverage_models()[name]
    n = 1500
    # two settings sharing their path (two block lengths), both with batches
    layouts = [StreamLayout.build(n, beta, 0.51) for beta in (0.5, 0.75)]
    count = count or lanes
    gens = _gens(count, 10)
    got = run_paths_lanes(model, gens, n, 1.0, 0.51, 0.1, layouts, batch_size, width=lanes)
    twins = _gens(count, 10)
    for states, twin in zip(got, twins):
        assert _same_states(states, path_twin(model, twin, n, 1.0, 0.51, 0.1, layouts, batch_size)[0])
    assert _same_generators(gens, twins)


@pytest.mark.parametrize("name, batch_size, lanes, count", [
    ("quantile_rr", 1, 8, 8), ("quantile_rr", 1, 8, 5), ("quantile_rr", 3, 3, 3),
    ("qr_truncnorm_laplace", 1, 8, 8), pytest.param("qr_truncnorm_laplace", 1, 3, 2, marks=pytest.mark.slow),
    pytest.param("logistic", 1, 8, 8, marks=pytest.mark.slow), ("mean_gaussian", 2, 8, 8),  # logistic: 13 s cold
])
def test_coverage_lanes_give_each_lane_its_twin(name, batch_size, lanes, count):
    # count < lanes: a chunk's remainder in a padded call
    _check_coverage_lanes(name, batch_size, lanes, count)


#: Widths every model is held to in the slow tier; :data:`SOME_WIDTHS` for representative models only.
EVERY_WIDTH = (3, 8)
SOME_WIDTHS = (2, 4)


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [1, 3])
@pytest.mark.parametrize("name, lanes", [(name, lanes) for name in _coverage_models() for lanes in EVERY_WIDTH]
                         + [(name, lanes) for name in ("quantile_rr", "linear") for lanes in SOME_WIDTHS])
def test_coverage_lanes_give_each_lane_its_twin_every_model(name, batch_size, lanes):
    _check_coverage_lanes(name, batch_size, lanes)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the twin's overflow on the way
def test_diverging_lanes_stop_where_their_own_runs_stop():
    n = 3000
    layouts = [StreamLayout.build(n, 0.75, 0.51)]
    for model in (QuantileModel(0.5, 1.0), QuantileRegressionModel(0.5, epsilon=1.0)):
        # c = 1e300: every path overflows; each lane records the step its own run stops at, and NaNs
        got = run_paths_lanes(model, _gens(8, 20), n, 1e300, 0.51, 0.0, layouts)
        for states, twin in zip(got, _gens(8, 20)):
            want = path_twin(model, twin, n, 1e300, 0.51, 0.0, layouts)[0]
            assert _same_states(states, want)
            assert states[0].steps == want[0].steps < n and np.isnan(states[0].theta_bar).all()


# --- the trajectory kernel (004) ---------------------------------------------------------


def _online_models():
    return {
        "huber_mallows": MODELS["huber_mallows"](dim=3, mu=1.0),
        "huber_mallows_laplace": MODELS["huber_mallows"](dim=3, mechanism="laplace", epsilon=2.0),
        "huber_per_user": MODELS["huber_mallows"](dim=3, mu=1.0, budget="uniform(0.5, 2)"),
        "huber_clip": MODELS["huber_clip"](dim=3, mu=1.0, clip=1.0),
        "logistic_mallows": MODELS["logistic_mallows"](dim=3, mu=1.0),
        "logistic_clip": MODELS["logistic_clip"](dim=3, mu=1.0, clip=0.5),
    }


def _check_trajectory_lanes(name, batch_size, lanes):
    model = _online_models()[name]
    checkpoints = np.array([10, 100, 1000, 2000], dtype=np.int64)
    gens = _gens(lanes, 30)
    got = run_trajectories(model, gens, 2000, 0.5, 0.51, 0.0, checkpoints, batch_size)
    twins = _gens(lanes, 30)
    for (last, average, steps), twin in zip(got, twins):
        want = trajectory_twin(model, twin, 2000, 0.5, 0.51, 0.0, checkpoints, batch_size)
        assert np.array_equal(last, want[0], equal_nan=True) and np.array_equal(average, want[1], equal_nan=True)
        assert steps == want[2]
    assert _same_generators(gens, twins)


# every one in the slow tier (20 s of 8-lane kernels each, cold), with every model at 3 and 8 lanes
@pytest.mark.parametrize("name, lanes", [pytest.param("huber_mallows", 8, marks=pytest.mark.slow),
                                         pytest.param("huber_per_user", 3, marks=pytest.mark.slow),
                                         pytest.param("logistic_clip", 8, marks=pytest.mark.slow)])
def test_trajectory_lanes_give_each_lane_its_twin(name, lanes):
    _check_trajectory_lanes(name, 1, lanes)


@pytest.mark.slow
@pytest.mark.parametrize("batch_size", [1, 2])
@pytest.mark.parametrize("name, lanes", [(name, lanes) for name in _online_models() for lanes in EVERY_WIDTH]
                         + [("huber_mallows", lanes) for lanes in SOME_WIDTHS])
def test_trajectory_lanes_give_each_lane_its_twin_every_model(name, batch_size, lanes):
    _check_trajectory_lanes(name, batch_size, lanes)


# --- DP-SGD (002) -------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["linear", "logistic"])
@pytest.mark.parametrize("sampling", ["swor", "poisson", "cyclic"])
@pytest.mark.parametrize("m", [1, 3])
def test_the_dpsgd_lanes_kernel_gives_each_lane_its_twin(model, sampling, m):
    n, steps = 40, 700
    layout = StreamLayout.build(steps, 0.75, 0.501)
    args = (model, sampling, steps, m, 0.3, 0.501, 1.0, 0.7, 0.0, layout)
    twin_gens = _gens(8)
    twins = [K.run_dpsgd_twin(g, *K.draw_data_twin(g, model, CHOL, n, 1.0)[1:], *args) for g in twin_gens]
    for lanes in (1, 3, 8):
        gens = _gens(8)
        data = [K.draw_data(g, model, CHOL, n, 1.0)[1:] for g in gens]
        outs = []
        for first in range(0, 8, lanes):  # 3 lanes: a remainder of 2, in a padded call
            outs += K.run_dpsgd_lanes(gens[first:first + lanes], data[first:first + lanes], *args, width=lanes)
        for (state, rate), (twin, twin_rate, _) in zip(outs, twins):
            assert np.array_equal(state.theta_bar, twin.theta_bar) and np.array_equal(state.sn_v, twin.sn_v)
            assert np.array_equal(state.blocks, twin.blocks) and np.array_equal(state.batches, twin.batches)
            assert rate == twin_rate and state.steps == twin.steps
        assert _same_generators(gens, twin_gens)  # each generator is left where its own run leaves it


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the twin's overflow on the way
def test_diverging_dpsgd_lanes_stop_where_their_own_runs_stop():
    n, steps = 40, 600
    layout = StreamLayout.build(steps, 0.75, 0.501)
    gens, twin_gens = _gens(2), _gens(2)
    data = [K.draw_data(g, "linear", CHOL, n, 1.0)[1:] for g in gens]
    twin_data = [K.draw_data_twin(g, "linear", CHOL, n, 1.0)[1:] for g in twin_gens]
    # lanes share every parameter: a step size of 1e6 without clipping makes both diverge, each at its own step
    both = K.run_dpsgd_lanes(gens, data, "linear", "swor", steps, 1, 1e6, 0.501, np.inf, 0.0, 0.0, layout)
    for (state, rate), g, dat in zip(both, twin_gens, twin_data):
        twin, twin_rate, _ = K.run_dpsgd_twin(g, *dat, "linear", "swor", steps, 1, 1e6, 0.501, np.inf, 0.0, 0.0,
                                              layout)
        assert state.steps == twin.steps < steps and np.isnan(state.theta_bar).all()
        assert rate == twin_rate  # the clipping count stops with the path


# --- whole runs ------------------------------------------------------------------------------


@pytest.mark.parametrize("lanes, message", [(0, r"^lanes = 0 is outside \[1, 64\]"), (2.5, r"^lanes = 2.5 is not an integer"),
                                            (True, r"^lanes = True is not an integer")])
def test_lanes_out_of_range_is_one_line(lanes, message):
    with pytest.raises(ldpsim.ConfigError, match=message):
        ldpsim.run({"study": "dpsgd", "n": 60, "kappa": 1.2, "reps": 2}, progress=False, lanes=lanes)


@pytest.mark.parametrize("config", [
    {"model": "quantile", "tau": [0.5, 0.9], "n": 3000, "reps": 11, "seed": 5, "B": 50, "beta": [0.6, 0.75]},
    pytest.param({"model": "quantile_regression", "n": 2000, "reps": 5, "seed": 6, "B": 50},
                 marks=pytest.mark.slow),  # 17 s cold; configs/quantile_regression.yaml at 1 and 8 lanes there too
    pytest.param({"study": "trajectory", "model": "huber_mallows", "dim": 2, "mu": 1.0, "n": 2000, "reps": 5, "seed": 7,
                  "checkpoints": 8}, marks=pytest.mark.slow),  # 37 s of kernels, cold: CI's slow tier
    {"study": "dpsgd", "n": [60, 80], "kappa": 1.3, "reps": 5, "seed": 3, "methods": ["plugin", "RS", "BM"]},
], ids=["quantile", "quantile_regression", "trajectory", "dpsgd"])
def test_a_run_gives_the_same_tables_for_any_lanes(config):
    # 11 replications in one chunk: at 8 lanes a full call and a padded remainder of 3, at 3 lanes three
    # calls and a remainder of 2; settings that share their path (beta) keep sharing it
    one = ldpsim.run(config, n_jobs=1, progress=False, lanes=1).tables
    for lanes in (3, None):  # None: the default width
        assert ldpsim.run(config, n_jobs=1, progress=False, lanes=lanes).tables == one


#: Small versions of the committed configs: replications and sizes that take seconds, nothing else changed.
SMALL = {"reps": 9, "n": 2000, "T": 300, "B": 50, "T2_max": 50}


def _small_config(path):
    config = yaml.safe_load(path.read_text())
    study = config.get("study", "coverage")
    for key, value in SMALL.items():
        if key in config:
            config[key] = value
    if study == "trajectory":
        config["checkpoints"] = min(int(config.get("checkpoints", 8)), 8)
    if study.startswith("sagd"):
        config["n"] = 200
    config.pop("first_look", None)  # a first look of the full n (cs_quantile's 2e5) is past the small n: the default
    return config


# the zoo's configs (zoo_*, looks_zoo) first: each compiles a kernel per method and width for minutes, and started last they made
# the slow tier's tail (pytest-xdist hands tests out in this order)
COMMITTED = sorted((p for p in (ROOT / "configs").glob("*.yaml") if not p.name.startswith("trace")),
                   key=lambda p: ("zoo" not in p.stem, p.name))


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::ldpsim.ConfigWarning")  # the committed sweeps cross the theory's bounds on purpose
@pytest.mark.parametrize("path", COMMITTED, ids=[p.stem for p in COMMITTED])
def test_every_committed_config_gives_the_same_tables_at_1_and_8_lanes(path):
    # 1 and the default width: the other widths compile a kernel per model and mechanism of every config (the
    # mechanism configs alone hold 40), and are held to the twin per model above
    config = _small_config(path)
    if config.get("methods") and any(m in ZOO_METHODS for m in config["methods"]):
        # a zoo config compiles a kernel per method and lane width, about a minute each for a vector model (the
        # three took 40 minutes of CI at two widths): its chunks at 8 lanes are held to the plain-Python twin
        # instead, with 5 perturbed paths (the kernels' types do not depend on their number) and 3 replications
        from ldpsim.studies import STUDIES

        # and the first setting only: the kernels compile per record (a mechanism's, a model's), not per value, and
        # a config of ten mechanisms took 20 minutes at 8 lanes; every mechanism's kernels at 1 and 8 lanes are
        # held to the twin in test_ldp_mechanisms.py, every model's in test_zoo_study.py
        loaded = ldpsim.load_config({**config, "ob_paths": 5})
        study = STUDIES["coverage"]
        for s in loaded.settings[:1]:
            kernel = study.run_chunk(s, loaded.options, loaded.seed, 0, 3, lanes=8)
            twin = study.run_chunk(s, loaded.options, loaded.seed, 0, 3, twin=True)
            for name in kernel:
                if name == "look_bounds":  # the trace kernel sums each look's blocks as it streams: 1e-15 relative
                    np.testing.assert_allclose(kernel[name], twin[name], rtol=1e-9, atol=1e-12, err_msg=f"{name}, {s}")
                elif name != "seconds":  # (a clock reading)
                    np.testing.assert_array_equal(kernel[name], twin[name], err_msg=f"{name}, {s}")
        return

    def tables(lanes):
        # the zoo table's seconds_per_rep is a clock reading, different in every run: everything else must agree
        out = ldpsim.run(config, n_jobs=1, progress=False, lanes=lanes).tables
        return {name: [{k: v for k, v in row.items() if k != "seconds_per_rep"} for row in rows]
                for name, rows in out.items()}

    assert tables(8) == tables(1)

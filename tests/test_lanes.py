"""Lanes (issue 19): replications side by side in one kernel call give each replication's own numbers, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

import ldpsim
from ldpsim.inference.streaming import StreamLayout
from ldpsim.studies.dpsgd import kernel as K

CHOL = np.linalg.cholesky(np.array([[1.0, 0.2, 0.0], [0.2, 1.0, 0.1], [0.0, 0.1, 1.0]]))


def _gens(count):
    return [np.random.Generator(np.random.SFC64(seed)) for seed in range(count)]


@pytest.mark.parametrize("model", ["linear", "logistic"])
@pytest.mark.parametrize("sampling", ["swor", "poisson", "cyclic"])
@pytest.mark.parametrize("m", [1, 3])
def test_the_dpsgd_lanes_kernel_gives_each_lane_its_twin(model, sampling, m):
    n, steps = 40, 700
    layout = StreamLayout.build(steps, 0.75, 0.501)
    args = (model, sampling, steps, m, 0.3, 0.501, 1.0, 0.7, 0.0, layout)
    twin_gens = _gens(8)
    twins = [K.run_dpsgd_twin(g, *K.draw_data_twin(g, model, CHOL, n, 1.0)[1:], *args) for g in twin_gens]
    for lanes in (1, 2, 3, 4, 8):
        gens = _gens(8)
        data = [K.draw_data(g, model, CHOL, n, 1.0)[1:] for g in gens]
        outs = []
        for first in range(0, 8, lanes):  # 3 lanes: a remainder of 2
            outs += K.run_dpsgd_lanes(gens[first:first + lanes], data[first:first + lanes], *args)
        for (state, rate), (twin, twin_rate, _), gen, twin_gen in zip(outs, twins, gens, twin_gens):
            assert np.array_equal(state.theta_bar, twin.theta_bar) and np.array_equal(state.sn_v, twin.sn_v)
            assert np.array_equal(state.blocks, twin.blocks) and np.array_equal(state.batches, twin.batches)
            assert rate == twin_rate and state.steps == twin.steps
            # each generator is left where its own run leaves it
            assert np.array_equal(gen.bit_generator.state["state"]["state"],
                                  twin_gen.bit_generator.state["state"]["state"])


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # the twin's overflow on the way
def test_diverging_lanes_stop_where_their_own_runs_stop():
    n, steps = 40, 600
    layout = StreamLayout.build(steps, 0.75, 0.501)
    gens, twin_gens = _gens(2), _gens(2)
    data = [K.draw_data(g, "linear", CHOL, n, 1.0)[1:] for g in gens]
    twin_data = [K.draw_data_twin(g, "linear", CHOL, n, 1.0)[1:] for g in twin_gens]
    # lanes share every parameter: a step size of 1e6 without clipping makes both diverge, each at its own step
    both = K.run_dpsgd_lanes(gens, data, "linear", "swor", steps, 1, 1e6, 0.501, np.inf, 0.0, 0.0, layout)
    for (state, _), g, dat in zip(both, twin_gens, twin_data):
        twin = K.run_dpsgd_twin(g, *dat, "linear", "swor", steps, 1, 1e6, 0.501, np.inf, 0.0, 0.0, layout)[0]
        assert state.steps == twin.steps < steps and np.isnan(state.theta_bar).all()


@pytest.mark.parametrize("lanes", [1, 2, 3])
def test_a_dpsgd_run_is_the_same_for_any_lanes(lanes):
    config = {"study": "dpsgd", "n": [60, 80], "kappa": 1.3, "reps": 5, "seed": 3, "methods": ["plugin", "RS", "BM"]}
    one = ldpsim.run(config, n_jobs=1, progress=False, lanes=1).tables
    assert ldpsim.run(config, n_jobs=1, progress=False, lanes=lanes).tables == one


@pytest.mark.parametrize("lanes, message", [(0, r"^lanes = 0 is outside \[1, 64\]"), (2.5, r"^lanes = 2.5 is not an integer"),
                                            (True, r"^lanes = True is not an integer")])
def test_lanes_out_of_range_is_one_line(lanes, message):
    with pytest.raises(ldpsim.ConfigError, match=message):
        ldpsim.run({"study": "dpsgd", "n": 60, "kappa": 1.2, "reps": 2}, progress=False, lanes=lanes)


@pytest.mark.parametrize("config", [
    {"model": "quantile", "tau": [0.5, 0.9], "n": 3000, "reps": 7, "seed": 5, "B": 50, "beta": [0.6, 0.75]},
    {"model": "quantile_regression", "n": 2000, "reps": 5, "seed": 6, "B": 50},
], ids=["quantile", "quantile_regression"])
def test_a_study_without_a_lanes_kernel_gives_the_same_tables_for_any_lanes(config):
    # its replications run one by one under any L (Study.replicate_lanes' default loop); a chunk of 7 at
    # L = 4 is a group of 4 and a remainder of 3, and grouped settings (beta) keep their shared path
    one = ldpsim.run(config, n_jobs=1, progress=False, lanes=1).tables
    assert ldpsim.run(config, n_jobs=1, progress=False, lanes=4).tables == one

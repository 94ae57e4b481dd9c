"""The zoo's methods with looks: at a look t, each gives the interval of a run of n = t on the same draws."""

from __future__ import annotations

import numpy as np
import pytest

import ldpsim
from ldpsim.engine.runs.config import ConfigError
from ldpsim.studies import STUDIES
from ldpsim.studies.coverage.looks import look_grid

# HulC runs paths of its own (its segments' restarts), OBM streams state of the main path: the two kinds
SMALL = {"model": "quantile", "n": 3000, "reps": 3, "tau": 0.3, "epsilon": 1.0, "methods": ["SN", "HulC", "OBM"],
         "looks": 4}
ZOO_COLS = [1, 2]


def test_each_look_of_the_zoo_is_its_run_of_that_length_and_the_last_is_the_run_without_looks():
    # by definition: the zoo's designs are made for n, and at look t a user would run them for n = t
    config = ldpsim.load_config(SMALL)
    study, s = STUDIES["coverage"], config.settings[0]
    chunk = study.run_chunk(s, config.options, config.seed, 0, config.reps, lanes=1)
    grid = look_grid(s, config.options)
    without = dict(config.options, looks=0, first_look=0)
    for q, t in enumerate(grid):
        short = study.run_chunk(s.replace(n=int(t)), without, config.seed, 0, config.reps, lanes=1)
        np.testing.assert_array_equal(chunk["look_bounds"][:, q, ZOO_COLS], short["bounds"][:, ZOO_COLS, 0])
    # the run's own numbers (the summary and zoo tables read these) are those of the run without looks
    plain = study.run_chunk(s, without, config.seed, 0, config.reps, lanes=1)
    for name in ("theta_bar", "bounds", "ok", "method_ok", "estimate"):
        np.testing.assert_array_equal(chunk[name], plain[name], err_msg=name)
    np.testing.assert_array_equal(chunk["look_bounds"][:, -1], chunk["bounds"][:, :, 0])


def test_the_zoos_looks_of_the_kernel_are_the_twins():
    config = ldpsim.load_config({**SMALL, "n": 1500, "reps": 2})
    study, s = STUDIES["coverage"], config.settings[0]
    kernel = study.run_chunk(s, config.options, config.seed, 0, 2, lanes=1)
    twin = study.run_chunk(s, config.options, config.seed, 0, 2, twin=True)
    np.testing.assert_allclose(kernel["look_bounds"], twin["look_bounds"], rtol=1e-9, atol=1e-12)
    assert np.isfinite(kernel["look_bounds"][:, :, ZOO_COLS]).all()


def test_the_default_first_look_waits_for_the_zoos_designs_to_fit():
    # 1% of n = 10 steps hold no HiGrad tree of 4 splits: the first look moves on to where one fits
    config = ldpsim.load_config({**SMALL, "n": 1000, "methods": ["SN", "HiGrad"], "higrad_splits": 4})
    assert look_grid(config.settings[0], config.options)[0] == 35


@pytest.mark.parametrize("change,match", [
    ({"methods": ["SN", "HiGrad"], "higrad_splits": 4, "first_look": 20},
     r"first_look = 20 is too early for the zoo's run of n = 20 at that look: n = 20 is too small for a HiGrad "
     r"tree .*; raise first_look$"),
    ({"methods": ["SN", "OBM"], "first_look": 3},
     r"first_look = 3 is too early .*one batch only .*; raise first_look, or lower gamma or obm_constant$"),
])
def test_a_first_look_too_early_for_the_zoo_is_refused_in_one_line(change, match):
    with pytest.raises(ConfigError, match=match):
        ldpsim.load_config({**SMALL, **change})


@pytest.mark.slow
def test_every_zoo_method_with_looks_leaves_the_summary_and_zoo_tables_as_without_them():
    methods = ["BB", "SN", "oracle", "HulC", "HiGrad", "OB", "OB_split", "OBM", "plugin_oracle"]
    config = {"model": "quantile", "n": 4000, "reps": 6, "tau": 0.3, "epsilon": 1.0, "methods": methods,
              "ob_paths": 10, "B": 60}
    with_looks = ldpsim.run({**config, "looks": 5}, n_jobs=1, progress=False)
    without = ldpsim.run(config, n_jobs=1, progress=False)
    assert with_looks.tables["summary"] == without.tables["summary"]

    def timeless(rows):  # each method's measured seconds differ from run to run
        return [{k: v for k, v in r.items() if "second" not in k} for r in rows]

    assert timeless(with_looks.tables["zoo"]) == timeless(without.tables["zoo"])
    uniform = {r["method"]: r for r in with_looks.tables["uniform"]}
    assert set(uniform) == set(methods)
    for m in methods:  # held at every look implies held at n
        assert uniform[m]["coverage_uniform"] <= uniform[m]["coverage"]

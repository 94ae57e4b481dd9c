"""Issue 13's rules for the dpsgd and sagd studies: no traceback for any input, no silent nonsense.

A bad or extreme input ends, before any work, with exit status 2 and ONE line ``ldpsim: error: ...`` naming
the key, its value and what is allowed (or what it would need: memory, steps); an input that runs but whose
replications cannot give numbers counts them in ``n_failed``; ``ldpsim table`` of a damaged table of these
studies is one line too. The CLI runs in this process (:func:`ldpsim.cli.main`); the Python API must raise
the same line as a ConfigError.
"""

from __future__ import annotations

import json
import math
import warnings

import pytest
import yaml

import ldpsim
from ldpsim.cli import main
from ldpsim.studies import STUDIES


def cli(capsys, *args):
    """``python -m ldpsim ARGS`` in this process, warnings printed as the CLI prints them: (status, out, err)."""
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # a raw (non-ldpsim) warning line then fails the checks
        status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert all(line.startswith("ldpsim: ") for line in err.splitlines()), err
    return status, out, err


def api_run(mapping, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)
        return ldpsim.run(mapping, n_jobs=1, progress=False, **kw)


def one_line_error(status, err, *fragments):
    lines = err.strip().splitlines()
    assert status == 2, err
    assert len(lines) == 1 and lines[0].startswith("ldpsim: error: "), err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


#: Small settings of each study (a tiny run takes well under a second once compiled).
TINY = {
    "dpsgd": {"study": "dpsgd", "n": 100, "kappa": 1.5, "reps": 2, "seed": 1,
              "methods": ["plugin", "RS", "oracle", "BM", "DPGD"], "T2_max": 2},
    "sagd_concentration": {"study": "sagd_concentration", "n": 200, "sigma": 0.5, "T": 20, "mu": [1, 2],
                           "reps": 2, "seed": 1, "nodes": 8},
    "sagd_generalization": {"study": "sagd_generalization", "n": 50, "d": 5, "epochs": 4, "checkpoints": 2,
                            "reps": 2, "seed": 1, "nodes": 8},
    "sagd_rate": {"study": "sagd_rate", "n": [200, 400], "T_factor": 3000, "reps": 2, "seed": 1, "nodes": 8},
}


def write(tmp_path, mapping):
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(mapping, sort_keys=False))
    return path


# --- refused before any work -----------------------------------------------------------------------------


REFUSED = [
    # the known failures: OverflowError (70), segfault (139), OOM (1) before
    ("sagd_concentration", {"sigma": 1e-9}, ["sigma = 1e-09 is too small for the privacy accounting",
                                             "allowed here: sigma >= "]),
    ("sagd_generalization", {"sigma": 1e-9}, ["sigma = 1e-09 is too small", "allowed here: sigma >= "]),
    ("sagd_generalization", {"d": 1000, "n": 1e9}, ["this needs about", "n x (d + 1) = 1000000000 x 1001"]),
    ("sagd_rate", {"T_factor": 1e300}, ["T_factor = 1e+300 gives T", "must be at most 2^53"]),
    ("dpsgd", {"n": 1e10, "kappa": 2}, ["kappa = 2.0 gives T = floor(n^kappa) = 1e+20", "T m must lie in [2, 2^53]"]),
    ("dpsgd", {"n": 1e10, "kappa": 1}, ["this needs about", "the sample of n = 10000000000 points"]),
    ("sagd_rate", {"n": 1e12, "T_factor": 1}, ["this needs about", "n x (d + 1) = 1000000000000 x 6"]),
    ("sagd_concentration", {"n": 1e12, "T": 1}, ["this needs about", "n x (d + 1) = 1000000000000 x 6"]),
    # the hunt
    ("dpsgd", {"B": 1e12, "methods": ["BB"]}, ["this needs about", "(B = 1000000000000"]),
    ("dpsgd", {"mu": 1e-300}, ["mu = 1e-300 is outside [1e-100, 1e100] or inf"]),
    ("dpsgd", {"mu_var": 1e300}, ["mu_var = 1e+300 is outside [1e-100, 1e100] or inf"]),
    ("dpsgd", {"clip": 1e300}, ["clip = 1e+300", "beyond the largest float"]),
    ("dpsgd", {"mu": "nan"}, ["mu = 'nan' is not a number"]),
    ("dpsgd", {"batch_size": 1e30}, ["batch_size = 1e+30 is outside [1, n] = [1, 100]"]),
    ("dpsgd", {"kappa": 1e-300}, ["kappa = 1e-300 gives T = floor(n^kappa) = 1 steps"]),
    ("dpsgd", {"methods": ["BB"], "beta": 0.999999}, ["T = 1000 is too small for two bootstrap blocks",
                                                      "beta = 0.999999"]),
    ("dpsgd", {"theta0": math.inf}, ["theta0 = inf is outside the finite reals"]),
    ("sagd_concentration", {"sigma": 1e100, "T": "theorem"}, ["T = 'theorem' gives T = ceil(2 n sigma^2 / G1^2)",
                                                               "must be at most 2^53"]),
    ("sagd_concentration", {"sigma": 1e101}, ["sigma = 1e+101 is outside (0, 1e100]"]),
    ("sagd_concentration", {"T": 1e15}, ["T = 1000000000000000 gives T = 1e+15 steps"]),
    ("sagd_concentration", {"T": 0}, ["T = 0 is not an integer in [1, 2^53] or one of: theorem"]),
    ("sagd_concentration", {"radius": 1e100}, ["sigma = 0.5 is too small for the privacy accounting",
                                               "G1 = 2e+100"]),
    ("sagd_concentration", {"radius": 1e101}, ["radius = 1e+101 is outside [1e-100, 1e100]"]),
    ("sagd_concentration", {"batch_size": 1e30}, ["batch_size = 1e+30 is outside [1, n] = [1, 200]"]),
    ("sagd_concentration", {"mu": [1, math.inf]}, ["mu contains inf, outside (0, inf)"]),
    ("sagd_concentration", {"delta": 1e-320}, ["delta = 1e-320 is outside [1e-300, 1)"]),
    ("sagd_concentration", {"d": 1000, "nodes": 512}, ["nodes = 512 is too many for d = 1000",
                                                       "allowed here: nodes <= "]),
    ("sagd_generalization", {"sigma": 1e-100}, ["sigma = 1e-100 is too small for the privacy accounting"]),
    ("sagd_generalization", {"checkpoints": 1e9}, ["checkpoints = 1000000000 is outside [1, 100000]"]),
    ("sagd_rate", {"fit_decades": 1e300}, ["fit_decades = 1e+300 is outside (0, 16] or inf"]),
    ("sagd_rate", {"n": [200, 1e20]}, ["n = 1e+20 is outside [4, 2^53]"]),
    ("sagd_rate", {"reps": 1e15}, ["this needs about", "reps = 1000000000000000"]),
]


@pytest.mark.parametrize("study,change,fragments", REFUSED,
                         ids=[f"{s}-{'-'.join(f'{k}={v}' for k, v in c.items())}" for s, c, _ in REFUSED])
def test_a_bad_or_extreme_input_is_one_line_before_any_work(tmp_path, capsys, study, change, fragments):
    mapping = {**TINY[study], **change}
    out = tmp_path / "o"
    status, _, err = cli(capsys, "run", write(tmp_path, mapping), "--out", out, "--quiet", "--n-jobs", "1")
    line = one_line_error(status, err, *fragments)
    assert not (out / "summary.csv").exists() and not list(out.glob("chunks/*.npz"))  # no work was done
    with pytest.raises(ldpsim.ConfigError) as info:  # the API says the same
        api_run(mapping)
    assert line.endswith(str(info.value))


def test_run_arguments_given_as_config_keys_are_one_line(tmp_path, capsys):
    config = write(tmp_path, TINY["dpsgd"])
    status, _, err = cli(capsys, "run", config, "--set", "n_jobs=1", "--quiet", "--out", tmp_path / "o")
    one_line_error(status, err, "--set n_jobs=...: n_jobs is not a config key; run takes it as --n-jobs")
    status, _, err = cli(capsys, "run", config, "--set", "log=x", "--quiet", "--out", tmp_path / "o")
    one_line_error(status, err, "--set log=...: log is not a config key")


# --- runs whose replications cannot give numbers count them, and write readable tables --------------------


@pytest.mark.parametrize("study,change,failed", [
    ("dpsgd", {"mu": 1e-100, "accountant": "clt", "budget_of": "path", "methods": ["plugin", "BM"]}, "all"),  # noise of 1e100 per step
    # the accuracy figure's log axis of NaN (was an internal error), a numpy warning about an empty mean
    ("dpsgd", {"theta0": 1e200, "kappa": [1.0, 1.5], "methods": ["plugin", "oracle"]}, "all"),
    # rate.png's log axis of NaN (was an internal error), a legend of nothing (was a raw warning)
    ("sagd_rate", {"model": "welsch", "eta": 1e300, "T_factor": 3e4}, "all"),
    ("sagd_concentration", {"model": "welsch", "eta": 1e300}, "all"),  # an empty mean (was a raw warning)
    ("sagd_generalization", {"methods": ["adam", "rmsprop"]}, "none"),  # no privacy.csv (was "no rows to write")
])
def test_replications_without_numbers_are_counted_and_the_run_reads_back(tmp_path, capsys, study, change, failed):
    out = tmp_path / "o"
    status, _, err = cli(capsys, "run", write(tmp_path, {**TINY[study], **change}), "--out", out, "--quiet",
                         "--n-jobs", "1")
    assert status == 0 and "Traceback" not in err and "internal error" not in err, err
    meta = json.loads((out / "meta.json").read_text())
    total = meta["settings"] * meta["config"]["reps"]
    assert meta["n_failed"] == (total if failed == "all" else 0), err
    status, _, err = cli(capsys, "table", out)
    assert status == 0, err


# --- a damaged table of these studies is one line ----------------------------------------------------------

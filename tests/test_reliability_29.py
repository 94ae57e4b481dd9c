"""Issue 29 (reliability round 4): the hostile inputs of the new features, each with its test."""

from __future__ import annotations

import re
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import ldpsim
from ldpsim.cli import main
from ldpsim.engine.config import ConfigError
from ldpsim.engine.errors import ConfigWarning

ROOT = Path(__file__).resolve().parents[1]


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("ldpsim: error: "), err
    return err


# --- OBM's batch schedule ------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", ["check", "run"])
def test_an_obm_constant_whose_schedule_cannot_be_listed_is_refused_at_once(command, tmp_path, capsys, monkeypatch):
    # obm_constant = 1e-300 hung run and check (the schedule floor(C m^beta) was listed for m up to 1e76)
    monkeypatch.chdir(ROOT)
    argv = [command, "configs/zoo_quantile.yaml", "--set", "obm_constant=1e-300"]
    if command == "run":
        argv += ["--out", str(tmp_path / "r")]
    start = time.monotonic()
    assert main(argv) == 2
    assert time.monotonic() - start < 30  # (not a timing assertion on speed: the hang took forever)
    err = _one_error_line(capsys)
    assert re.search(r"obm_constant = 1e-300 is too small for n = \d+ .* use obm_constant >= [0-9.e+-]+$", err)


def test_the_least_obm_constant_named_in_the_refusal_is_accepted():
    from ldpsim.inference.zoo.obm import OBM_MAX_M, obm_batch_starts

    n, gamma = 10**8, 0.5
    with pytest.raises(ConfigError) as info:
        obm_batch_starts(n, gamma, 1e-300)
    least = float(str(info.value).rsplit(">= ", 1)[1])
    starts = obm_batch_starts(n, gamma, least * 1.01)
    assert starts[0] == 1 and np.all(np.diff(starts) > 0) and starts[-1] <= n and len(starts) <= OBM_MAX_M
    # a huge exponent (gamma near 1) and the smallest double: no overflow in the refusal's arithmetic
    for g in (0.95, 0.964, 0.99):
        try:
            obm_batch_starts(n, g, 5e-324)
        except ConfigError as exc:
            assert "obm_constant" in str(exc)


# --- argparse's refusals in one line -------------------------------------------------------------------------

@pytest.mark.parametrize("argv, message", [
    (["run", "configs/quantile.yaml", "--lanes", "abc"], r"--lanes: 'abc' is not an integer; allowed: 1 to 64"),
    (["run", "configs/quantile.yaml", "--lanes", "1.5"], r"--lanes: '1\.5' is not an integer; allowed: 1 to 64"),
    (["run", "configs/quantile.yaml", "--lanes", "0"], r"lanes = 0 is outside \[1, 64\]; allowed: 1 to 64"),
    (["fit", "x.csv", "--response", "y", "--epsilon", "abc"], r"--epsilon: 'abc' is not a decimal number"),
    (["fit", "x.csv", "--response", "y", "--mu", "1", "--epsilon", "1"], r"--epsilon: not allowed with argument --mu"),
    (["fit", "x.csv", "--response", "y", "--model", "probit"], r"--model: invalid choice: 'probit'"),
    (["fit", "x.csv", "--response", "y", "--covariates"], r"--covariates: expected at least one argument"),
    (["fit", "--response", "y", "--covariates", "a", "b", "missing.csv"],
     r"give the data file .*, before --covariates \(which take every value after them\)"),
    (["fit", "--response", "y", "--bounds", "a=0:1", "missing.csv"],
     r"give the data file .*, before --bounds \(which take every value after them\)"),
    (["frobnicate"], r"argument command: invalid choice: 'frobnicate'"),
    (["run"], r"the following arguments are required: config"),
])
def test_argparse_refusals_are_one_line(argv, message, capsys, monkeypatch, tmp_path):
    # they printed the whole usage (7 to 15 lines) before the error
    monkeypatch.chdir(ROOT)
    with pytest.raises(SystemExit) as info:
        if main(argv) == 2:
            raise SystemExit(2)
    assert info.value.code == 2
    err = _one_error_line(capsys)
    assert re.search(message, err), err


def test_fit_takes_the_data_file_swallowed_by_bounds(tmp_path, capsys):
    data = tmp_path / "d.csv"
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 400)
    np.savetxt(data, np.column_stack([x + rng.normal(0, 0.1, 400), x]), delimiter=",", header="y,x", comments="")
    # the budget's refusal comes after the file was found (it would say "give the data file" otherwise)
    assert main(["fit", "--response", "y", "--bounds", "x=0:1", str(data)]) == 2
    assert "give the privacy budget" in _one_error_line(capsys)


@pytest.mark.parametrize("lanes", [1.5, "8", True, float("nan"), 0, 65])
def test_the_apis_refusal_of_lanes_names_the_accepted_values_once(lanes):
    with pytest.raises(ConfigError) as info:
        ldpsim.run({"model": "quantile", "n": 1000, "reps": 2}, out=None, lanes=lanes, progress=False)
    text = str(info.value)
    assert "\n" not in text and text.count("allowed: 1 to 64, or none (the fastest measured)") == 1, text


# --- fit's non-private comparison on data near 1e300 ----------------------------------------------------------

def test_fits_full_sample_column_is_finite_and_silent_on_data_near_1e300(tmp_path):
    # the non-private OLS squared the raw columns: numpy's "overflow encountered in matmul" and [nan, nan]
    from ldpsim.studies.dpsgd.fit import fit

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


# --- a damaged accountant cache --------------------------------------------------------------------------------

@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_a_damaged_accountant_cache_is_recomputed_with_one_line(damage, tmp_path, monkeypatch, capsys):
    # every output.pkl replaced by garbage or truncated (a full disk) printed 200+ lines of joblib tracebacks
    from ldpsim.privacy import accountants as acc

    args = ("rdp", "swor", 2.0, 100, 1000, 10, 1e-5)
    monkeypatch.setenv("LDPSIM_CACHE", "off")
    acc._epsilon_pair.clear_memory()
    right = acc.epsilon_pair(*args)
    monkeypatch.setenv("LDPSIM_CACHE", str(tmp_path / "cache"))
    acc._epsilon_pair.clear_memory()
    assert acc.epsilon_pair(*args) == right
    pickles = list((tmp_path / "cache").rglob("output.pkl"))
    assert pickles
    for p in pickles:
        if damage == "garbage":
            p.write_bytes(b"not a pickle")
        else:
            p.write_bytes(p.read_bytes()[:10])
    acc._epsilon_pair.clear_memory()
    monkeypatch.setattr(acc, "_DAMAGE_SAID", set())
    capsys.readouterr()
    with pytest.warns(ConfigWarning, match=r"entries of the accountant cache in .* could not be read \(damaged or "
                                           r"truncated\): discarded and recomputed") as caught:
        assert acc.epsilon_pair(*args) == right
    assert len([w for w in caught if issubclass(w.category, ConfigWarning)]) == 1
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    acc._epsilon_pair.clear_memory()  # rewritten: read again without a word
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert acc.epsilon_pair(*args) == right
    acc._epsilon_pair.clear_memory()


# --- what bias, sd and se_ratio mean for the zoo's methods ------------------------------------------------------

def test_hulc_has_no_se_ratio_and_the_zoo_methods_are_judged_on_their_own_estimates():
    from ldpsim.studies.coverage.summary import summarize
    from ldpsim.studies.coverage.tables import render_markdown

    config = ldpsim.load_config({"model": "quantile", "n": 1000, "reps": 4, "methods": ["BB", "HulC", "HiGrad"]})
    r, m = 4, 3
    rng = np.random.default_rng(0)
    theta_bar = rng.normal(0, 0.1, (r, 1))
    own = rng.normal(0, 0.3, (r, m, 1))  # each method's own estimate, spread unlike theta_bar
    bounds = np.stack([own - 0.5, own + 0.5], axis=-1)
    res = {"ok": np.ones(r, bool), "theta_bar": theta_bar, "bounds": bounds,
           "method_ok": np.ones((r, m), bool), "estimate": own}
    rows = {row["method"]: row for row in summarize(config, [res])}
    z = 1.6448536269514722
    assert rows["BB"]["sd"] == pytest.approx(theta_bar[:, 0].std(ddof=1))
    assert rows["HiGrad"]["sd"] == pytest.approx(own[:, 2, 0].std(ddof=1))
    assert rows["HiGrad"]["se_ratio"] == pytest.approx(1.0 / (2 * z) / own[:, 2, 0].std(ddof=1))
    assert rows["HulC"]["sd"] == pytest.approx(own[:, 1, 0].std(ddof=1)) and np.isnan(rows["HulC"]["se_ratio"])
    text = render_markdown(list(rows.values()))
    assert "HulC's interval is the range of its segment averages" in text
    assert re.search(r"\| HulC +\| SE ratio \| - +\|", text)


# --- compiling: said, and stoppable ----------------------------------------------------------------------------

def test_a_long_compilation_is_said_with_its_elapsed_time(monkeypatch):
    from ldpsim.engine import interrupt

    monkeypatch.setattr(interrupt, "COMPILE_NOTICE", 0.2)
    monkeypatch.setattr(interrupt, "COMPILE_REMINDER", 0.3)
    lines = []
    assert interrupt.while_compiling(lambda: time.sleep(0.9) or 42, lines.append, "the kernels of zoo_quantile") == 42
    assert lines[0].startswith("compiling the kernels of zoo_quantile: first run only, numba caches them (")
    assert any(line.startswith("still compiling the kernels of zoo_quantile (") for line in lines[1:-1])
    assert re.fullmatch(r"compiled the kernels of zoo_quantile in \d+ s", lines[-1])
    quiet = []  # a cached kernel loads at once: not a word
    interrupt.while_compiling(lambda: None, quiet.append)
    assert quiet == []


def test_an_error_while_compiling_reaches_the_caller():
    from ldpsim.engine import interrupt

    def fails():
        raise ConfigError("a user's model does not compile")

    with pytest.raises(ConfigError, match="does not compile"):
        interrupt.while_compiling(fails, lambda line: None)


def test_a_signal_during_compilation_stops_the_wait_within_a_second():
    # numba compiling in the main thread held SIGTERM for minutes (killed by SIGKILL), and an interrupt raised
    # inside its compiler left "no compiled object yet": the main thread now only waits
    import os
    import signal
    import threading

    from ldpsim.engine import interrupt

    class Stop(KeyboardInterrupt):
        pass

    def handler(signum, frame):  # as the CLI's SIGTERM handler (pytest-xdist's workers ignore SIGINT)
        raise Stop()

    previous = signal.signal(signal.SIGUSR1, handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGUSR1))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(Stop):
            interrupt.while_compiling(lambda: time.sleep(10), lambda line: None)
        assert time.monotonic() - start < 3  # (the compile would have taken 10 s)
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)


# --- the run-time estimate counts every zoo method's passes -----------------------------------------------------

def test_the_static_time_estimate_counts_every_zoo_methods_pass():
    from ldpsim.studies.coverage.zoo import pass_factor, zoo_cost

    config = ldpsim.load_config(str(ROOT / "configs" / "zoo_quantile.yaml"))
    study, s = config.study, config.settings[0]
    plain = ldpsim.load_config({"model": "quantile", "n": s.n, "reps": 2, "epsilon": s.epsilon})
    ratio = study.seconds(s, config.options) / plain.study.seconds(plain.settings[0], plain.options)
    assert ratio == pytest.approx(zoo_cost(config.options)) and ratio > 200  # OB and OB_split: B + 1 paths each
    assert pass_factor("OB", {"ob_paths": 100}) == 101 and zoo_cost({"methods": ["BB", "SN"], "ob_paths": 100}) == 1


def test_a_zoo_config_far_beyond_the_limit_is_refused_without_allow_long(tmp_path, capsys, monkeypatch):
    # 5e6 replications were estimated at 11 hours (weeks in fact: OB's 100 perturbed paths) and started; now the
    # pilot refuses them (20 days, measured once on a loaded machine) after compiling the kernels for minutes,
    # so this test asks for 1e6 of n = 1e8, which the static model, counting every method's pass, refuses before
    # any work (2e4 days by it; without the zoo's passes it was 210 times less)
    monkeypatch.chdir(ROOT)
    assert main(["run", "configs/zoo_quantile.yaml", "--reps", "1000000", "--n", "1e8", "--out",
                 str(tmp_path / "r")]) == 2
    err = _one_error_line(capsys)
    assert "--allow-long" in err, err
    assert not (tmp_path / "r").exists()

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


def test_fit_takes_the_data_file_swallowed_by_bounds(tmp_path, capsys):
    data = tmp_path / "d.csv"
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 400)
    np.savetxt(data, np.column_stack([x + rng.normal(0, 0.1, 400), x]), delimiter=",", header="y,x", comments="")
    # the budget's refusal comes after the file was found (it would say "give the data file" otherwise)
    assert main(["fit", "--response", "y", "--bounds", "x=0:1", str(data)]) == 2
    assert "give the privacy budget" in _one_error_line(capsys)


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


# --- the run-time estimate counts every zoo method's passes -----------------------------------------------------


# --- the hunt: hostile inputs found beyond the list ---------------------------------------------------


_CLIPPED_MEAN = (ROOT / "examples" / "clipped_mean.py").read_text()
_STAIRCASE = (ROOT / "examples" / "staircase.py").read_text()


def _edited(tmp_path, text: str, cls: str, *changes) -> str:
    """``text`` with each ``(old, new)`` of ``changes`` made (each old present), written out; its spec."""
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new, 1)
    path = tmp_path / f"{cls.lower()}.py"
    path.write_text(text)
    return f"{path}:{cls}"


def test_a_users_model_drawing_outside_its_generator_is_refused(tmp_path):
    # np.random.* inside the draw ran, and two runs with one seed gave different tables
    spec = _edited(tmp_path, _CLIPPED_MEAN, "ClippedMean", ("return min(exponential(gen) / params.rate, params.clip)",
                                                            "return np.random.exponential() / params.rate"))
    with pytest.raises(ConfigError, match=r"its draws are not a function of the generator it is given: two runs "
                                          r"from one seed drew different values \(np\.random\.\*"):
        ldpsim.load_config({"model": spec, "n": 1000, "reps": 2, "methods": ["SN"]})


@pytest.mark.parametrize("change, message", [
    (("    u = uniform(gen)", "    u = np.random.random()"),
     r"its noise is not a function of the generator it is given"),
    (("    return sign * noise.width", "    return 1e308 * 10 * sign * noise.width"),
     r"its noise drew inf in plain Python \(64 of 64 draws\): a noise must be finite"),
])
def test_a_users_mechanism_drawing_outside_its_generator_or_infinities_is_refused(change, message, tmp_path, capsys):
    # both passed: the audit said "not refuted" (with numpy's RuntimeWarning for the infinities), the run ran
    spec = _edited(tmp_path, _STAIRCASE, "Staircase", change, ("import math\n", "import math\nimport numpy as np\n"))
    assert main(["audit", spec, "--draws", "1000"]) == 2
    assert re.search(message, _one_error_line(capsys))
    # in a run, the same line (it read "model 'mean' cannot be computed in floating point ... ConfigError: ...")
    with pytest.raises(ConfigError, match=rf"^mechanism = '.*staircase\.py:Staircase': {message}"):
        ldpsim.load_config({"model": "mean", "mechanism": spec, "n": 1000, "reps": 2, "methods": ["SN"]})


def test_a_users_mechanism_refused_by_its_own_checks_is_not_called_a_floating_point_problem(tmp_path):
    spec = _edited(tmp_path, _STAIRCASE, "Staircase", (
        "        return self.width ** 2 * (self.p_low * low + (1.0 - self.p_low) * high)", "        return -1.0"))
    with pytest.raises(ConfigError, match=r"^mechanism = '.*staircase\.py:Staircase': variance = -1\.0 is not a "
                                          r"finite number >= 0 \(or None\)$"):
        ldpsim.load_config({"model": "mean", "mechanism": spec, "n": 1000, "reps": 2, "methods": ["SN"]})


def test_a_users_integer_default_is_named_when_a_fraction_is_refused(tmp_path):
    # rate=1 (Python style for a float) made rate an integer key: "rate = 0.5 is not an integer", nothing more
    spec = _edited(tmp_path, _CLIPPED_MEAN, "ClippedMean", ("def __init__(self, epsilon, rate=1.0, clip=3.0):",
                                                            "def __init__(self, epsilon, rate=1, clip=3.0):"))
    with pytest.raises(ConfigError, match=r"^rate = 0\.5 is not an integer \(ClippedMean\.__init__ gives rate the "
                                          r"integer default 1, which makes it an integer key: write 1\.0 there"):
        ldpsim.load_config({"model": spec, "rate": 0.5, "n": 1000, "reps": 2, "methods": ["SN"]})


def test_a_users_description_of_no_parameter_is_refused_as_its_range_is(tmp_path):
    # a misspelt key in descriptions was dropped silently (the same typo in ranges was refused)
    spec = _edited(tmp_path, _CLIPPED_MEAN, "ClippedMean", ('"rate": "rate of the exponential law of X"',
                                                            '"rat": "rate of the exponential law"'))
    with pytest.raises(ConfigError, match=r"descriptions names 'rat', which is not a parameter of "
                                          r"ClippedMean\.__init__ \(rate, clip\)$"):
        ldpsim.load_config({"model": spec, "n": 1000, "reps": 2, "methods": ["SN"]})


def test_a_run_from_its_own_copy_of_a_users_file_writes_into_its_own_directory(tmp_path):
    # `model: user_files/m.py` with --out the run's directory: "cannot copy ... PosixPath(...) and PosixPath(...)
    # are the same file", after the chunks directory was made
    (tmp_path / "user_files").mkdir()
    (tmp_path / "user_files" / "m.py").write_text(_CLIPPED_MEAN)
    (tmp_path / "c.yaml").write_text("model: user_files/m.py:ClippedMean\nepsilon: 1\nn: 200\nreps: 2\n"
                                     "methods: [SN]\n")
    result = ldpsim.run(tmp_path / "c.yaml", out=tmp_path, progress=False, n_jobs=1)
    assert (tmp_path / "user_files" / "m.py").read_text() == _CLIPPED_MEAN
    assert result.meta["user_files"][0]["copy"] == "user_files/m.py"


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


@pytest.mark.parametrize("argv, message", [
    # the example's variance divides by 1 - e^-epsilon: an internal error (ZeroDivisionError) at 1e-300
    (["--epsilon", "1e-300"], r"Staircase': its variance failed at epsilon = 1e-300: ZeroDivisionError"),
    (["--seed", "-1"], r"--seed = -1 is outside \[0, inf\)$"),  # was an internal error from SeedSequence
    (["--delta", "1e-5"], r"takes no delta \(its __init__ has none\), so the audit would test the pure epsilon "
                          r"claim it declares: drop --delta$"),  # was dropped silently
    (["--draws", "1e13"], r"--draws = 1e\+13 is more than 1e\+11 per input"),  # ran for days
])
def test_hostile_audit_flags_are_refused_in_one_line(argv, message, capsys):
    draws = [] if "--draws" in argv else ["--draws", "1000"]
    assert main(["audit", str(ROOT / "examples" / "staircase.py") + ":Staircase", *draws, *argv]) == 2
    assert re.search(message, _one_error_line(capsys))

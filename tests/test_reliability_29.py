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


# --- fit's non-private comparison on data near 1e300 ----------------------------------------------------------


# --- a damaged accountant cache --------------------------------------------------------------------------------


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

"""`check`: condition (14) against its definition, verdicts on real configs, exit statuses."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ldpsim import studies as cfg
from ldpsim.studies.coverage.checks import check_config, condition14, condition14_sums
from ldpsim.cli import main

from run_helpers import TINY, cli

ROOT = Path(__file__).resolve().parents[1]


def brute_force_sum(lam, c, gamma, b0):
    """(14)'s left side straight from its definition, O(b0^2)."""
    eta = [c * j ** -gamma for j in range(1, b0 + 1)]
    total = 0.0
    for j in range(1, b0 + 1):
        prod = 1.0
        for k in range(j + 1, b0 + 1):
            prod *= (1.0 - lam * eta[k - 1]) ** 2
        total += lam ** 2 * eta[j - 1] ** 2 * prod
    return total


@pytest.mark.parametrize("lam,c,gamma", [(0.3989, 1.0, 0.51), (0.1755, 1.0, 0.9), (2.5, 1.3, 0.6), (0.05, 4.0, 0.75)])
def test_condition14_streaming_equals_brute_force(lam, c, gamma):
    sums = condition14_sums(lam, c, gamma, 40)
    expected = [brute_force_sum(lam, c, gamma, b0) for b0 in range(1, 41)]
    np.testing.assert_allclose(sums, expected, rtol=1e-12, atol=0)


@pytest.mark.parametrize("eigs,c,gamma", [([0.3989], 1.0, 0.51), ([0.1755], 1.0, 0.51), ([0.2, 1.7], 2.0, 0.7)])
def test_condition14_finds_the_smallest_b0(eigs, c, gamma):
    res = condition14(eigs, c, gamma, b_max=5000)
    assert res.holds

    def both_parts(b0):
        eta = c * b0 ** -gamma
        return all(b0 ** gamma >= 2 * lam * c and brute_force_sum(lam, c, gamma, b0) >= lam * eta / 2
                   for lam in eigs)

    assert both_parts(res.b0)
    assert not any(both_parts(b) for b in range(1, res.b0))


def test_condition14_quantile_median_by_hand():
    # lambda = phi(0): S(1) = lambda^2 < lambda / 2, S(2) = (1 - lambda eta_2)^2 lambda^2 + (lambda eta_2)^2 >= lambda eta_2 / 2
    lam = 1.0 / math.sqrt(2.0 * math.pi)
    assert condition14([lam], 1.0, 0.51).b0 == 2


def test_condition14_reports_failure_within_the_search_limit():
    res = condition14([0.01], 1.0, 0.51, b_max=3)  # needs a larger b0
    assert not res.holds and res.b_max == 3
    assert not condition14([-1.0], 1.0, 0.51).holds  # G not positive definite


def test_verdicts_on_table1_config():
    checks = check_config(cfg.load(ROOT / "configs" / "quantile.yaml"))
    assert len(checks) == 2  # tau = 0.5 and 0.9; n does not enter
    assert [c.ns for c in checks] == [[10**6, 10**7, 10**8]] * 2
    for c in checks:
        verdicts = {v.name: v for v in c.verdicts}
        assert verdicts["gamma < beta (Theorem 3.2)"].holds is True
        assert verdicts["condition (14), Assumption A.2 (5)"].holds is True
        assert verdicts["privacy"].detail == "epsilon = 1 LDP (randomized response)"
        assert c.holds


def test_check_cli_exit_status(tmp_path, capsys):
    good = ROOT / "configs" / "quantile.yaml"
    assert main(["check", str(good)]) == 0
    out = capsys.readouterr().out
    assert "[  ok] gamma < beta (Theorem 3.2): gamma = 0.51 < beta = 0.75" in out
    assert "smallest b0 = 2" in out and "verdict: every assumption holds" in out

    assert main(["check", str(good), "--set", "beta=0.5"]) == 1  # beta <= gamma
    out = capsys.readouterr().out
    assert "[FAIL] gamma < beta (Theorem 3.2): gamma = 0.51 >= beta = 0.5" in out

    assert main(["check", str(good), "--set", "multiplier=gaussian"]) == 1
    assert "[FAIL] bounded multipliers: gaussian: unbounded" in capsys.readouterr().out

    assert main(["check", str(good), "--set", "tau=1.5"]) == 2
    assert capsys.readouterr().err.startswith("ldpsim: error: tau = 1.5")


# --- extreme values -----------------------------------------------------------------------------------------


def test_check_with_a_huge_step_size_fails_the_condition_instead_of_crashing(tmp_path, capsys):
    (tmp_path / "c.yaml").write_text(TINY)
    status, out, err = cli(capsys, "check", tmp_path / "c.yaml", "--set", "c=1e300")
    assert status == 1 and err == "" and "[FAIL] condition (14)" in out and "no b0 <= 1000000" in out


def test_a_huge_batch_means_layout_is_not_built_to_validate(tmp_path, capsys):
    # n = 2^53 and gamma = 0.01 have 7.5e7 batches: validation used to build all their ends in Python
    (tmp_path / "c.yaml").write_text(TINY)
    status, out, _ = cli(capsys, "check", tmp_path / "c.yaml", "--n", str(2 ** 53), "--set", "gamma=0.01",
                         "--set", "beta=0.9", "--set", "methods=[BM]")
    assert status == 1 and "[FAIL] gamma in (1/2, 1)" in out

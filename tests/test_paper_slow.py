"""Slow statistical checks: Table 1 of the block-bootstrap paper at n = 1e6 and 1e7.

Run with ``python -m pytest -m slow`` (about two minutes on two cores).
Reference values: 000, Table 1, as copied in ldpsim/reporting/data/paper_tables.yaml.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ldpsim import studies as cfg
from ldpsim.engine.runs.driver import simulate
from ldpsim.models import QuantileModel
from ldpsim.reporting.reference import compare
from ldpsim.studies.coverage.summary import summarize

pytestmark = pytest.mark.slow


CONFIG = cfg.load(Path(__file__).parents[1] / "configs" / "quantile.yaml", {"n": ["1e6", "1e7"]})


@pytest.fixture(scope="module")
def table1_rows():
    return summarize(CONFIG, simulate(CONFIG, n_jobs=-1, progress=False))


def test_coverage_within_three_combined_standard_errors_of_paper(table1_rows):
    entries = compare(table1_rows, "table1_quantile", CONFIG.values)
    assert len(entries) == 12  # 2 tau x (BB, BM, SN) x 2 n
    for e in entries:
        assert abs(e["z"]) < 3, e


def test_lengths_close_to_paper(table1_rows):
    # BB and BM lengths have MC SEs under 1% of their mean: within 5% of the
    # paper's (itself rounded to 2 digits). SN lengths are far more variable
    # (SE about 2% for each table): within 3 combined SEs.
    for e in compare(table1_rows, "table1_quantile", CONFIG.values):
        if e["method"] in ("BB", "BM"):
            assert abs(e["length_ratio"] - 1) < 0.05, e
        else:
            assert abs(e["length_z"]) < 3, e


@pytest.mark.parametrize("n", [10**6, 10**7])
def test_oracle_variance_matches_spread_of_theta_bar(table1_rows, n):
    # sd(theta_bar) over 500 replications has relative SE 1/sqrt(2 * 499) = 3.2%;
    # at tau = 0.5 the asymptotic sd sqrt(Sigma / n) must agree within 3 SEs,
    # and the median's estimate is unbiased (the loss is symmetric)
    row = next(r for r in table1_rows if r["method"] == "oracle" and r["tau"] == 0.5 and r["n"] == n)
    asymptotic = math.sqrt(QuantileModel(0.5, 1.0).sigma()[0, 0] / row["n"])
    rel_se = 1 / math.sqrt(2 * (row["reps"] - 1))
    assert abs(row["sd"] / asymptotic - 1) < 3 * rel_se
    assert abs(row["bias"]) < 3 * row["sd"] / math.sqrt(row["reps"])

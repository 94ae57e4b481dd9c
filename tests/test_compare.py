"""``ldpsim compare``: a run is scored against a paper's table only in the paper's setting, like with like."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from run_helpers import cli, one_line_error, snapshot


PAPER = {"study": "coverage", "model": "quantile", "tau": [0.5, 0.9], "epsilon": 1.0, "c": 1.0, "gamma": 0.51,
         "theta0": 0.0, "beta": 0.75, "B": 500, "level": 0.9, "multiplier": "uniform", "n": 1000000, "reps": 500,
         "seed": 1, "methods": ["BB"]}


def paper_like(out: Path, varied=("tau",), rows=None, **changes) -> Path:
    out.mkdir(parents=True)
    config = {**PAPER, **changes}
    (out / "meta.json").write_text(json.dumps({"name": out.name, "config": config, "varied": list(varied)}))
    head = ",".join(varied) + ",method,coord,n,reps,n_failed,coverage,coverage_se,length,length_se,theta_star,bias,sd," \
                              "se_ratio\n"
    rows = rows or [[0.5], [0.9]]
    body = "".join(",".join(map(str, r)) + ",BB,0,1000000,500,0,0.9,0.0134,0.0085,5e-05,0.0,0.0,0.0027,1.0\n"
                   for r in rows)
    (out / "summary.csv").write_text(head + body)
    return out


@pytest.mark.parametrize("changes,why", [
    ({"epsilon": "inf", "gamma": 0.7}, "epsilon = inf, the paper's is 1.0"),
    ({"gamma": 0.7}, "gamma = 0.7, the paper's is 0.51"),
    ({"B": 200}, "B = 200, the paper's is 500"),
    ({"multiplier": "rademacher"}, "multiplier = rademacher, the paper's is uniform"),
    ({"model": "mean", "tau": 0.5}, "model = mean, the paper's is quantile"),
])
def test_compare_refuses_a_run_outside_the_papers_setting(tmp_path, capsys, changes, why):
    out = paper_like(tmp_path / "r", **changes)
    before = snapshot(out)
    status, _, err = cli(capsys, "compare", out)
    one_line_error(status, err, f"dir = '{out}': no setting matches table1_quantile (model = quantile, epsilon = 1.0",
                   why)
    assert snapshot(out) == before  # no compare_*.md


def test_compare_scores_only_the_rows_of_the_papers_setting(tmp_path, capsys):
    out = paper_like(tmp_path / "r", varied=("gamma",), rows=[[0.51], [0.7]], tau=0.5, gamma=[0.51, 0.7])
    status, stdout, err = cli(capsys, "compare", out)
    assert status == 0
    assert "1 row(s) left out of the comparison (first: gamma = 0.7, the paper's is 0.51)" in err
    assert stdout.count("| BB ") == 1 and "+0.99" in stdout


def test_compare_of_a_grid_over_models_outside_the_papers_setting(tmp_path, capsys):
    # the committed non-private run is a grid over three models: compare used to crash on its model list
    out = tmp_path / "nonprivate"
    shutil.copytree(Path(__file__).parents[1] / "results" / "nonprivate", out)
    before = snapshot(out)
    status, _, err = cli(capsys, "compare", out)
    one_line_error(status, err, "no setting matches table1_quantile", "epsilon = inf, the paper's is 1.0")
    assert snapshot(out) == before


def test_compare_of_a_trajectory_run_says_so(tmp_path, capsys):
    out = tmp_path / "t"
    out.mkdir()
    (out / "meta.json").write_text(json.dumps({"config": {"study": "trajectory", "model": "mean"}}))
    (out / "summary.csv").write_text("estimator,k,distance,distance_se,reps,n_failed\nlast,10,0.1,0.01,2,0\n")
    (out / "rates.csv").write_text("estimator,slope,slope_lo,slope_hi,theory,slope_se,k_from,k_to,points\n"
                                   "last,-0.5,-0.6,-0.4,-0.51,0.05,10,100,5\n")
    status, _, err = cli(capsys, "compare", out)
    one_line_error(status, err, "holds a trajectory run: compare scores the coverage study's intervals")


def test_compare_leaves_out_rows_without_usable_replications(tmp_path, capsys):
    out = paper_like(tmp_path / "r")
    text = (out / "summary.csv").read_text().replace("BB,0,1000000,500,0,0.9", "BB,0,1000000,0,500,nan", 1)
    (out / "summary.csv").write_text(text)
    status, stdout, err = cli(capsys, "compare", out)
    assert status == 0 and "1 row(s) left out of the comparison (first: no usable replications" in err
    assert stdout.count("| BB ") == 1

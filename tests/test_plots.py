"""Heat maps of a gamma x beta sweep, from synthetic summary rows."""

from __future__ import annotations

import sys

import pytest

from ldpsim.api import open_result


def rerender(out):
    open_result(out).figures()
from ldpsim.studies.coverage.heatmaps import is_sweep, write_heatmaps
from ldpsim.reporting.csvio import write_csv
from ldpsim.studies.coverage.trace import MissingExtra

GAMMAS = (0.51, 0.7, 0.9)
BETAS = (0.6, 0.8)


def synthetic_rows():
    rows = []
    for tau in (0.5, 0.9):
        for gamma in GAMMAS:
            for beta in BETAS:
                for method, cover, length in (("BB", 0.9 - (beta <= gamma) * 0.1, 0.011), ("oracle", 0.88, 0.010)):
                    rows.append(dict(tau=tau, gamma=gamma, beta=beta, method=method, coord=0, n=1000, reps=10,
                                     n_failed=0, coverage=cover, coverage_se=0.01, length=length, length_se=1e-4,
                                     theta_star=0.0, bias=0.5 / gamma, sd=1.0, se_ratio=1.0))
    return rows


def test_is_sweep():
    rows = synthetic_rows()
    assert is_sweep(rows)
    assert not is_sweep([r for r in rows if r["gamma"] == 0.51])


def test_heatmaps_written(tmp_path):
    pytest.importorskip("matplotlib")
    written = write_heatmaps(synthetic_rows(), tmp_path)
    names = sorted(p.name for p in written)
    expected = sorted(f"heatmap_{stat}_tau{tau}_n1000.png" for tau in (0.5, 0.9)
                      for stat in ("coverage_BB", "length_ratio_BB", "bias_sd"))
    assert names == expected
    for p in written:
        assert p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and p.stat().st_size > 5000


def test_heatmaps_refuse_rows_without_both_axes(tmp_path):
    rows = [r for r in synthetic_rows() if r["beta"] == 0.6]
    with pytest.raises(ValueError, match="both gamma and beta"):
        write_heatmaps(rows, tmp_path)


def test_table_command_regenerates_heatmaps(tmp_path):
    pytest.importorskip("matplotlib")
    write_csv(synthetic_rows(), tmp_path / "summary.csv")
    rerender(tmp_path)
    assert len(list(tmp_path.glob("heatmap_*.png"))) == 6


def test_missing_matplotlib_skips_in_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # import fails as if not installed
    with pytest.raises(MissingExtra, match="heat maps need matplotlib"):
        write_heatmaps(synthetic_rows(), tmp_path)
    write_csv(synthetic_rows(), tmp_path / "summary.csv")
    rerender(tmp_path)
    assert capsys.readouterr().err.strip().splitlines() == [
        "ldpsim: figure skipped: coverage.png needs matplotlib, which is not installed: pip install 'matplotlib>=3.7'",
        "ldpsim: heat maps skipped: heat maps need matplotlib, which is not installed: pip install 'matplotlib>=3.7'"]
    assert not list(tmp_path.glob("*.png"))


_DRAW = """
import os, sys
from ldpsim.reporting.figures import figure_class
figure = figure_class()()
figure.add_subplot().plot([0, 1])
figure.savefig(sys.argv[1])
print(os.environ.get("MPLCONFIGDIR", ""))
"""


@pytest.mark.parametrize("broken", ["file", "unwritable"])
def test_an_unusable_home_or_cache_dir_gives_no_matplotlib_lines(tmp_path, broken):
    # matplotlib printed "mkdir -p failed ..." and "Matplotlib created a temporary cache directory ..." (issue 44, s. 5)
    import os
    import subprocess

    home = tmp_path / "home"
    if broken == "file":
        home.write_text("not a directory")
    else:
        home.mkdir()
        home.chmod(0o500)
        if os.access(home, os.W_OK):
            pytest.skip("root writes into read-only directories")
    env = {k: v for k, v in os.environ.items() if k not in ("MPLCONFIGDIR", "XDG_CONFIG_HOME")}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / "cache"), TMPDIR=str(tmp_path),
               PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run([sys.executable, "-c", _DRAW, str(tmp_path / "f.png")], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert (tmp_path / "f.png").stat().st_size > 0
    assert done.stdout.strip().startswith(str(tmp_path / "ldpsim-matplotlib-"))

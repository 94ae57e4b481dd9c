"""A committed result is what today's code writes: its tables and figure redrawn from its CSV files, byte for byte.

The README's first command regenerates Table 1; a user who runs it into ``results/quantile`` (or compares
with it) must find the committed tables and figure unchanged. ``python -m ldpsim table DIR`` redraws them
from ``summary.csv`` and ``meta.json``, so the committed ``table.md``, ``table.tex`` and ``coverage.png``
must be that rendering, and the ``meta.json`` must record the config today's ldpsim resolves from the
config file (a key added since, as ``law``, would otherwise change the title of the table a rerun writes).
"""

from __future__ import annotations

import json
import shutil
import warnings

import pytest

import ldpsim
from ldpsim.cli import main
from ldpsim.docgen import ROOT
from ldpsim.engine.errors import ConfigWarning

#: The committed runs the README quotes: Table 1 and Table 2 of Dette & Graw (2024).
RUNS = {"quantile": "configs/quantile.yaml", "quantile_regression": "configs/quantile_regression.yaml"}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_committed_tables_and_figure_are_todays_rendering_of_the_committed_csv(name, tmp_path, capsys):
    committed = ROOT / "results" / name
    copy = tmp_path / name
    shutil.copytree(committed, copy, ignore=shutil.ignore_patterns("chunks"))
    for rendered in ("table.md", "table.tex", "coverage.png"):
        (copy / rendered).unlink()
    assert main(["table", str(copy)]) == 0
    capsys.readouterr()
    for rendered in ("table.md", "table.tex", "coverage.png"):
        assert (copy / rendered).read_bytes() == (committed / rendered).read_bytes(), (
            f"results/{name}/{rendered} is not what `python -m ldpsim table` draws from its summary.csv today: "
            "rerun the command its meta.json records (CONTRIBUTING.md, Committed results)")


#: The runs whose recorded config must be today's resolution of the config file: the README's first command's.
#: (results/quantile_regression predates the keys dim and looks: its table.md's title would gain "dim = 3" in a
#: rerun of 28 minutes on 2 cores, its numbers not.)
CURRENT = ["quantile"]


@pytest.mark.parametrize("name", CURRENT)
def test_the_committed_config_is_todays_resolution_of_its_file(name):
    meta = json.loads((ROOT / "results" / name / "meta.json").read_text())
    assert RUNS[name] in meta["command"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        today = ldpsim.load_config(str(ROOT / RUNS[name])).values
    today = json.loads(json.dumps(today, allow_nan=True, default=str))
    differs = {k: (meta["config"].get(k, "(not recorded)"), v) for k, v in today.items() if meta["config"].get(k) != v}
    assert not differs, (f"results/{name}/meta.json records another config than {RUNS[name]} resolves to today: "
                         f"{differs}")


# --- compare and table of every committed run ---------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "results").glob("*/compare_*.md")))
def test_committed_comparisons_are_what_compare_writes_now(path, tmp_path, capsys):
    # results/quantile/compare_table1_quantile.md was older than compare's text
    run = ROOT / path
    copy = tmp_path / run.parent.name
    shutil.copytree(run.parent, copy, ignore=shutil.ignore_patterns("chunks"))
    table = run.stem.removeprefix("compare_")
    assert main(["compare", str(copy), "--table", table]) == 0
    assert (copy / run.name).read_text() == run.read_text()


def _coverage_runs():
    import json

    for meta in sorted((ROOT / "results").glob("*/meta.json")):
        run = meta.parent
        if ((run / "summary.csv").is_file() and (run / "table.md").is_file()
                and json.loads(meta.read_text()).get("config", {}).get("study", "coverage") == "coverage"):
            yield run.name


@pytest.mark.parametrize("name", list(_coverage_runs()))
def test_table_renders_a_committed_coverage_run_as_the_run_did(name):
    # re-rendered from the CSV files, a key the setting does not read is blank, not None: the diagnostics of
    # zoo_huber's mu = inf came first instead of last, zoo.md's heading read "mechanism = " for "mechanism = None"
    from ldpsim.models.user import truth_notes
    from ldpsim.studies.coverage.tables import render_markdown
    from ldpsim.studies.coverage.zoo_tables import render_zoo_markdown

    result = ldpsim.open_result(ROOT / "results" / name)
    title = result.study.table_title(result.meta)
    notes = truth_notes(result.meta)  # a user's model whose oracle is estimated (docs/extending.md)
    assert render_markdown(result.rows, title, notes) == (ROOT / "results" / name / "table.md").read_text()
    if "zoo" in result.tables:
        level = result.meta["config"].get("level")
        assert render_zoo_markdown(result.tables["zoo"], title, level) == (ROOT / "results" / name / "zoo.md").read_text()

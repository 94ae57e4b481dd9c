"""The docs say what the code does: key tables, defaults, studies, models, mechanisms, methods, commands, papers."""

from __future__ import annotations

import re

import pytest

import ldpsim
from ldpsim import docgen
from ldpsim.engine.runs.config import Key, Range
from ldpsim.inference.methods import ZOO_METHODS, Method
from ldpsim.inference.methods.docs import registry_table
from ldpsim.inference.zoo import HiGradLayout
from ldpsim.models import MODELS
from ldpsim.studies import DEFAULT_STUDY, STUDIES
from ldpsim.studies.coverage.study import METHODS_KEY

ROOT = docgen.ROOT


def _read(name: str) -> str:
    return (ROOT / name).read_text()


def _first_column(text: str, header: str) -> list[str]:
    """The backticked names in the first column of the markdown table whose header line starts with ``header``."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    names = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        names += re.findall(r"`([^`]+)`", line.split("|")[1])
    return names


def test_generated_tables_are_the_codes():
    # every block between <!-- keys:... --> / <!-- studies --> markers, regenerated in memory from the studies
    stale = [str(p.relative_to(ROOT)) for p in docgen.stale()]
    assert stale == [], f"the key tables of {', '.join(stale)} differ from the code: run {docgen.COMMAND}"


def test_every_study_has_a_key_table_and_the_readme_lists_them_all():
    specs = [m.group(1) for page in docgen.pages() for m in re.finditer(r"<!-- (keys:[^>]*?|studies) -->",
                                                                          page.read_text())]
    tabled = {spec.split()[0].removeprefix("keys:") for spec in specs if spec.startswith("keys:")}
    assert tabled == set(STUDIES), f"studies without a key table in README.md or docs/: {set(STUDIES) - tabled}"
    readme, reference = _read("README.md"), _read("docs/reference/config.md")
    assert "<!-- studies -->" in readme
    assert all(f"<!-- keys:{name} -->" in reference for name in STUDIES)  # every key of every study, in one page
    assert _first_column(readme, "| `study` | what a run computes") == list(STUDIES)  # every study, sagd_* too
    full = docgen.keys_table(DEFAULT_STUDY)
    assert all(f"`{name}`" in full.splitlines()[2] for name in STUDIES)  # the study key's allowed values


def test_the_tables_say_each_keys_default_and_allowed_values():
    table = docgen.keys_table("coverage")
    rows = {line.split("|")[1].strip(" `"): [c.strip() for c in line.split("|")[2:-1]]
            for line in table.splitlines()[2:]}
    assert rows["tau"] == ["0.5", "number in (0, 1)", "yes", "quantile level (quantile models)"]
    assert rows["n"][:2] == ["1e6", "integer in [2, 2^53]"]
    assert rows["methods"][:3] == ["BB, BM, SN, oracle", "a list of `BB`, `BBjoint`, `BM`, `SN`, `oracle`, `AsympCS`, `AsympCS_oracle`, `NPRR_H`, "
                                   "`NPRR_EB`, `NPRR_H_CI`, `NPRR_EB_CI`, `HulC`, `HiGrad`, `OB`, `OB_split`, `OBM`, "
                                   "`plugin_oracle`", "no"]
    assert rows["delta"][0] == "1e-5" and rows["theta0"][1] == "finite reals"
    assert rows["mechanism"][1].endswith(", or none")
    assert rows["seed"][0] == "20240501" and rows["reps"][0] == "500"


def test_a_key_added_to_a_study_appears_in_its_table(monkeypatch):
    # the lead's new dpsgd keys (epsilon, delta, accountant) need no hand-written row
    study = STUDIES["dpsgd"]
    new = Key("accountant", "choice", "rdp", grid=False, choices=("rdp", "pld"), help="privacy accountant")
    monkeypatch.setattr(type(study), "keys", tuple(study.keys) + (new,))
    assert "| `accountant` | rdp | one of `rdp`, `pld` | no | privacy accountant |" in docgen.keys_table("dpsgd")
    page = _read("docs/dpsgd.md")
    assert docgen.render(page) != page  # so test_generated_tables_are_the_codes would fail until regenerated


def test_an_edited_default_or_study_list_is_stale():
    reference = _read("docs/reference/config.md")
    edited = reference.replace("| `tau` | 0.5 | number in (0, 1) |", "| `tau` | 0.25 | number in (0, 1) |")
    assert edited != reference and docgen.render(edited) == reference
    readme = _read("README.md")
    name = "| `sagd_rate` | Zhou et al. (2020) Theorems 2 and 4"
    dropped = readme.replace(name, name.replace("sagd_rate", "sagd_rates"))
    assert dropped != readme and docgen.render(dropped) == readme
    with pytest.raises(ValueError, match="names no study"):
        docgen.render("<!-- keys:nosuch -->\n<!-- /keys -->")


def test_check_command_names_the_stale_page(tmp_path, capsys):
    (tmp_path / "docs").mkdir()
    (tmp_path / "README.md").write_text("<!-- keys:coverage -->\n| stale |\n<!-- /keys -->\n")
    (tmp_path / "docs" / "x.md").write_text("no blocks\n")
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 1
    assert capsys.readouterr().err.strip() == "README.md: generated tables are stale; run python -m ldpsim.docgen"
    assert docgen.main(["--root", str(tmp_path)]) == 0
    assert docgen.main(["--check", "--root", str(tmp_path)]) == 0
    assert "| `tau` | 0.5 |" in (tmp_path / "README.md").read_text()


def test_methods_tables_list_the_methods():
    assert _first_column(_read("README.md"), "| `method` | interval") == list(METHODS_KEY.choices)
    dpsgd_methods = next(k for k in STUDIES["dpsgd"].keys if k.name == "methods").choices
    assert _first_column(_read("docs/dpsgd.md"), "| `method` | interval") == list(dpsgd_methods)


def test_models_tables_list_the_models():
    assert _first_column(_read("README.md"), "| `model` | what it estimates") == list(MODELS)
    assert _first_column(_read("docs/reference/catalogue.md"), "| `model` | what it estimates") == list(MODELS)
    online = _first_column(_read("docs/online.md"), "| `model` | loss (Shi et al. 2025)")
    assert set(online) <= set(MODELS) and online


def test_number_spelling():
    assert [docgen._value(v) for v in (1e-05, 1000000, 20240501, 1.0, float("inf"), 1e100, 0.501, None, (0.5, 2.0))] \
        == ["1e-5", "1e6", "20240501", "1", "inf", "1e100", "0.501", "none", "0.5, 2"]
    assert docgen._allowed(Key("x", "float", 0.0, range=Range("(-inf, inf)", "the finite reals"))) == "finite reals"


# --- what a user reads: the README's size, the generated catalogue and command reference, the papers by name ---

import argparse  # noqa: E402

from ldpsim import cli  # noqa: E402
from ldpsim.privacy.mechanisms import MECHANISMS, entries  # noqa: E402
from ldpsim.recursion.keys import MECHANISM_NAMES  # noqa: E402
from ldpsim.reporting.papers import PAPERS, cite  # noqa: E402

#: What user-facing text names the papers by (README, docs, CHANGELOG, CONTRIBUTING, help): author and year.
USER_PAGES = ["README.md", "CHANGELOG.md", "CONTRIBUTING.md"] + [str(p.relative_to(ROOT))
                                                                for p in sorted((ROOT / "docs").rglob("*.md"))]


def test_the_readme_is_a_first_five_minutes():
    readme = _read("README.md")
    assert len(readme.encode()) <= 12 * 1024, f"README.md is {len(readme.encode())} bytes: at most 12 KB"
    lines = [line.strip() for line in readme.splitlines()]
    commands = [line for line in lines if line.startswith("python3 -m venv .venv && ")]
    assert len(commands) == 2 and "ldpsim run configs/quantile.yaml" in commands[0] and "pytest" in commands[1]
    for name in ("summary.csv", "table.md", "table.tex", "coverage.png", "meta.json", "bias.csv", "guarantees.csv"):
        assert name in readme  # the one-minute run's folder, and what other studies add
    for block in ("<!-- studies -->", "<!-- models:short -->", "<!-- methods -->", "<!-- mechanisms:short -->",
                  "<!-- compare:table1_quantile results/quantile -->",
                  "<!-- compare:table2_quantile_regression results/quantile_regression -->"):
        assert block in readme
    assert "CITATION.cff" in readme and "mkdocs serve" in readme


def test_the_catalogue_lists_every_model_mechanism_and_method_with_a_line_each():
    mechanisms = docgen.mechanisms_table()
    rows = [row.split("|") for row in mechanisms.splitlines()[2:]]
    assert [row[1].strip(" `") for row in rows] == list(MECHANISMS) + [
        m for m in MECHANISM_NAMES if m not in MECHANISMS] == [e.name for e in entries()]
    assert [row[2].strip() for row in rows] == [e.text for e in entries()]  # each row is its registry entry's
    assert "`rr` | randomized response" in mechanisms and "| `quantile` |" in mechanisms.splitlines()[2]
    short = docgen.mechanisms_table("short")
    assert "| `quantile` | `rr` |" in short  # the quantile model takes randomized response alone
    assert len(docgen.models_table().splitlines()) == 2 + len(MODELS)
    with pytest.raises(ValueError, match="method HulC2: no row for the documentation"):
        Method("HulC2", " ", studies={"coverage": 1})  # a method cannot be declared without its docs row
    assert len(registry_table().splitlines()) == 2 + len(METHODS_KEY.choices)  # one row per method


def test_the_command_reference_has_every_command_and_flag():
    page = _read("docs/reference/cli.md")
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, command in sub.choices.items():
        assert f"### `python -m ldpsim {name}`" in page
        for action in command._actions:
            for flag in action.option_strings:
                if flag not in ("-h", "--help"):
                    assert f"`{flag}" in page or f", {flag}" in page, f"{name} {flag} is not in the command reference"


def test_the_comparison_blocks_are_the_committed_runs():
    block = docgen.compare_table("table1_quantile", "results/quantile")
    assert block.count("\n| 0.") == 6 and "all 18 lie within" in block
    with pytest.raises(ValueError, match="is not a block"):
        docgen.render("<!-- models:nosuch -->\n<!-- /models -->")


def test_papers_are_named_by_author_and_year():
    assert cite("(000, Tables 1-2)") == "(Dette & Graw 2024, Tables 1-2)"
    assert cite("004's Table 1 and 001 Theorems 1") == "Shi et al. (2025)'s Table 1 and Zhou et al. (2020) Theorems 1"
    assert cite("n = 10 000, 0.001 and 1000") == "n = 10 000, 0.001 and 1000"
    bibliography = _read("docs/bibliography.md")
    for paper in PAPERS.values():
        assert paper.reference in bibliography and str(paper.year) in _read("CITATION.cff")


_TAG = re.compile(r"(?<![\d.,] )(?<![\d.,])\b00[0-4]\b(?![\d.])")
_HASH = re.compile(r"(?<![\w/.-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w-])")
_TRACKER = re.compile(r"(?<!numba )(?<!Opacus )\b(issues? \d+|stop \d+|work round)", re.I)
_NETWORK = re.compile(r"\b(do(es)? not resolve|not reachable|out of reach|could not be reached|"
                      r"resolve from the machine)")


@pytest.mark.parametrize("name", USER_PAGES)
def test_user_facing_text_speaks_of_ldpsim_and_its_users(name):
    # the papers by author and year, not by the code's tags; no commit hashes, tracker numbers or network attempts
    text = _read(name)
    lines = [(i + 1, line) for i, line in enumerate(text.splitlines())]
    assert not [(i, line) for i, line in lines if _TAG.search(line)], "a paper named by its tag"
    assert not [(i, line) for i, line in lines if _HASH.search(line) and "seed" not in line], "a commit hash"
    if name != "docs/performance.md":  # another page's owner's words (performance.md names its own history)
        assert not [(i, line) for i, line in lines if _TRACKER.search(line)], "an issue or work-round number"
    assert not [(i, line) for i, line in lines if _NETWORK.search(line)], "a network attempt"


def test_the_command_lines_help_names_the_papers_by_author_and_year():
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    texts = [c.help or "" for c in sub._choices_actions] + [parser.description or ""]
    for command in sub.choices.values():
        texts += [command.description or ""] + [a.help or "" for a in command._actions]
    assert not [t for t in texts if _TAG.search(t)]


def test_the_state_column_of_docs_zoo_methods_is_the_tables():
    # docs/zoo_methods.md gave OB's state as 3 B d + B where the table reports 2 B d + B + 2 d
    from ldpsim.studies.coverage.zoo import state_floats

    text = (ROOT / "docs" / "zoo_methods.md").read_text()
    formulas = dict(re.findall(r"^\| `(\w+)` \| [^|]* \| ([^|]*) \| [^|]* \|$", text, re.M))
    assert set(formulas) == set(ZOO_METHODS)
    for model, dim in (("quantile", 1), ("quantile_regression", 4)):
        config = ldpsim.load_config({"model": model, "n": 100_000, "methods": list(ZOO_METHODS), "ob_paths": 7})
        s, options = config.settings[0], config.options
        layout = HiGradLayout.build(s.n, options["higrad_splits"], options["higrad_threads"],
                                    options["higrad_step_ratio"])
        names = {"B": 5, "d": dim, "nodes": layout.nodes, "T": layout.final_threads}
        for method, formula in formulas.items():
            names["B"] = 5 if method == "HulC" else options["ob_paths"]
            expr = re.sub(r"([\w)])\s+(?=[\w(])", r"\1*", formula.split(",")[0].strip()).replace("^", "**")
            assert eval(expr, {}, dict(names)) == state_floats(method, dim, s, options), (method, formula)

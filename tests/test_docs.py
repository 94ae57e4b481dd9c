"""The docs say what the code does (issue 18, part 2): key tables, defaults, studies, methods, models."""

from __future__ import annotations

import re

import pytest

from ldpsim import docgen
from ldpsim.engine.config import Key, Range
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
    readme = _read("README.md")
    assert "<!-- studies -->" in readme and "<!-- keys:coverage -->" in readme
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
    readme = _read("README.md")
    edited = readme.replace("| `tau` | 0.5 | number in (0, 1) |", "| `tau` | 0.25 | number in (0, 1) |")
    assert edited != readme and docgen.render(edited) == readme
    dropped = readme.replace("| `sagd_rate` | 001 Theorems 2 and 4", "| `sagd_rates` | 001 Theorems 2 and 4")
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
    assert _first_column(_read("README.md"), "| name     | interval") == list(METHODS_KEY.choices)
    dpsgd_methods = next(k for k in STUDIES["dpsgd"].keys if k.name == "methods").choices
    assert sorted(_first_column(_read("docs/dpsgd.md"), "| method       | interval")) == sorted(dpsgd_methods)


def test_models_tables_list_the_models():
    readme = _first_column(_read("README.md"), "| `model`               | d |")
    online = _first_column(_read("docs/online.md"), "| `model` | loss (004)")
    assert sorted(readme + online) == sorted(MODELS)


def test_number_spelling():
    assert [docgen._value(v) for v in (1e-05, 1000000, 20240501, 1.0, float("inf"), 1e100, 0.501, None, (0.5, 2.0))] \
        == ["1e-5", "1e6", "20240501", "1", "inf", "1e100", "0.501", "none", "0.5, 2"]
    assert docgen._allowed(Key("x", "float", 0.0, range=Range("(-inf, inf)", "the finite reals"))) == "finite reals"

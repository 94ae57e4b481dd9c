"""The docs' tables of config keys, studies, models, mechanisms, methods, commands and output files,
generated from the code so that they cannot drift.

``README.md`` and ``docs/**/*.md`` hold generated blocks between marker comments::

    <!-- keys:dpsgd -->                     every key of the study, then `reps`, `seed` and `study`
    <!-- keys:trajectory minus:coverage -->  only the keys the other study does not declare alike
    <!-- studies -->                         the registered studies, the default first
    <!-- models -->, <!-- models:full -->   the built-in models (full: every mechanism of each; short: none)
    <!-- mechanisms -->                      the registered mechanisms and the models that take them (short: grouped)
    <!-- methods -->                         the interval methods of the coverage study (methods:STUDY another study's;
                                             methods:registry each method's declaration; ldpsim.inference.methods)
    <!-- cli -->                             every command of ``python -m ldpsim`` and its flags
    <!-- outputs -->                         each study's CSV tables and their columns
    <!-- papers -->                          the bibliography: each paper's reference and what ldpsim takes
    <!-- compare:TABLE DIR -->               a committed run against the paper's table TABLE
    ...
    <!-- /keys -->   (the closing marker names the block's kind: <!-- /studies -->, <!-- /cli -->, ...)

Each key's row comes from its declaration in the study (:class:`ldpsim.engine.runs.config.Key`):
name, default, allowed values (its choices or range, as the one-line errors
say them), whether a list makes a grid axis, and its help line. A key added
to a study (``epsilon`` of dpsgd, say) appears in its table at the next
``python -m ldpsim.docgen``; ``tests/test_docs.py`` regenerates every block in
memory and fails, naming this command, when a committed page differs.

The papers go by author and year in every block (:func:`ldpsim.reporting.papers.cite`).

Usage::

    python -m ldpsim.docgen            # rewrite the blocks of README.md and docs/**/*.md in place
    python -m ldpsim.docgen --check    # exit 1 and name the pages whose blocks are stale
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

from .engine.runs.config import RUN_KEYS, Key
from .reporting.papers import PAPERS, cite
from .studies import DEFAULT_STUDY, STUDIES

#: The command that regenerates the blocks (error messages name it).
COMMAND = "python -m ldpsim.docgen"
#: The repository root (where README.md is) of this checkout.
ROOT = Path(__file__).resolve().parents[1]

_KINDS = ("keys", "studies", "models", "mechanisms", "methods", "cli", "outputs", "papers", "compare")
_BLOCK = re.compile(r"(<!-- ((" + "|".join(_KINDS) + r")(?::[^>]*?)?) -->\n)(.*?)(<!-- /\3 -->)", re.S)


def pages(root: Path = ROOT) -> list[Path]:
    """The pages that may hold generated blocks: ``README.md`` and ``docs/**/*.md``."""
    return [root / "README.md"] + sorted((root / "docs").rglob("*.md"))


def _number(value) -> str:
    """A number as a config would spell it: ``1e6`` for round powers from 10^4, ``1e-5``, ``0.501``, ``2``."""
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == int(value) and abs(value) >= 1e4 and float(f"{value:.0e}") == value:
        text = f"{value:.0e}"
    elif value == int(value) and abs(value) <= 2**53:
        text = str(int(value))
    else:
        text = repr(float(value))  # the shortest that reads back as the same double
    mantissa, _, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def _value(value) -> str:
    """A default as a config file would spell it."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _number(value)
    if isinstance(value, (list, tuple)):
        return ", ".join(_value(v) for v in value)
    return str(value)


def _allowed(key: Key) -> str:
    """What values the key takes, as the one-line errors say it (choices spelled as in a config)."""
    if key.kind in ("choice", "choices"):
        names = ", ".join(f"`{c}`" for c in key.choices)
        text = f"one of {names}" if key.kind == "choice" else f"a list of {names}"
    elif key.kind == "any":
        text = key.label or "see meaning"
    elif key.range is not None and (key.range.label or "").startswith("the "):  # "the finite reals"
        text = key.range.label.removeprefix("the ")
    else:
        text = key.allowed().removeprefix("a ").removeprefix("an ")
    return text + (", or none" if key.nullable else "")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def key_rows(study_name: str, minus: str | None = None) -> list[Key]:
    """The keys a block lists: the study's (then the run keys), without those ``minus`` declares alike."""
    keys = list(STUDIES[study_name].keys) + ([] if minus else list(RUN_KEYS))
    if minus is not None:
        other = {k.name: k for k in STUDIES[minus].keys}
        keys = [k for k in keys if other.get(k.name) != k]
    return keys


def keys_table(study_name: str, minus: str | None = None) -> str:
    """The markdown table of a study's keys (``minus``: leave out the keys that study declares alike)."""
    lines = ["| key | default | allowed | a list makes a grid | meaning |",
             "|-----|---------|---------|---------------------|---------|"]
    if study_name == DEFAULT_STUDY and minus is None:  # the README's table: the key that picks the study
        names = ", ".join(f"`{s}`" for s in STUDIES)
        lines.append(f"| `study` | {DEFAULT_STUDY} | one of {names} | no | what a run computes (the table of studies) |")
    for key in key_rows(study_name, minus):
        lines.append(f"| `{key.name}` | {_cell(_value(key.default))} | {_cell(_allowed(key))} | "
                     f"{'yes' if key.grid else 'no'} | {_cell(key.help)} |")
    if minus is not None:
        own = {k.name for k in STUDIES[study_name].keys}
        absent = [f"`{k.name}`" for k in STUDIES[minus].keys if k.name not in own]
        lines += ["", f"Keys of `{minus}` that `{study_name}` does not take: {', '.join(absent) or 'none'}."]
    return cite("\n".join(lines)) + "\n"


def studies_table() -> str:
    """The markdown table of the registered studies (:data:`ldpsim.studies.STUDIES`), the default first."""
    lines = ["| `study` | what a run computes |", "|---------|---------------------|"]
    for name, study in STUDIES.items():
        lines.append(f"| `{name}`{' (default)' if name == DEFAULT_STUDY else ''} | {_cell(study.title)} |")
    return cite("\n".join(lines)) + "\n"


def _plain(docstring: str | None) -> str:
    """The first line of a docstring, as markdown: ``x`` -> `x`, roles and "(parameters: see ...)" dropped."""
    line = (docstring or "").strip().splitlines()[0] if (docstring or "").strip() else ""
    line = re.sub(r"\s*\(parameters: see [^)]*\)", "", line)
    line = re.sub(r":\w+:`~?(?:[\w.]*\.)?(\w+)`", r"`\1`", line)
    return cite(line.replace("``", "`"))


def _models_taking(mechanism: str) -> list[str]:
    from .models import MODELS

    return [name for name, cls in MODELS.items() if mechanism in cls.mechanisms]


def models_table(form: str = "") -> str:
    """The built-in models (:data:`ldpsim.models.MODELS`): what each estimates, its mechanisms and its own keys.

    ``form``: ``""`` lists a model's first two mechanisms and how many more, ``"full"`` all of them, ``"short"``
    none (the mechanisms table says which models take each).
    """
    from .models import MODELS

    head = ["`model`", "what it estimates"] + ([] if form == "short" else ["mechanisms (default first)"]) + [
        "its own keys"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for name, cls in MODELS.items():
        mechs = [f"`{m}`" for m in cls.mechanisms]
        if form == "" and len(mechs) > 3:
            mechs = mechs[:2] + [f"{len(mechs) - 2} more"]
        keys = ", ".join(f"`{k}`" for k in cls.keys if k != "mechanism") or "none"
        cells = [f"`{name}`", _cell(_plain(cls.__doc__))] + ([] if form == "short" else [", ".join(mechs)]) + [keys]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def mechanisms_table(form: str = "") -> str:
    """The built-in mechanisms (:mod:`ldpsim.privacy.mechanisms.registry`), what each is, and which models take it.

    Each row's text is its registry entry's, declared beside its code; ``form="short"`` groups them by the
    models that take them.
    """
    from .models import MODELS
    from .privacy.mechanisms import entries

    if form == "short":
        groups: dict = {}
        for entry in entries():
            groups.setdefault(tuple(_models_taking(entry.name)), []).append(entry.name)
        lines = ["| models | their mechanisms |", "|--------|------------------|"]
        for takers, names in groups.items():
            lines.append(f"| {', '.join(f'`{m}`' for m in takers)} | {', '.join(f'`{m}`' for m in names)} |")
        return "\n".join(lines) + "\n"
    lines = ["| `mechanism` | what | models |", "|-------------|------|--------|"]
    everyone_else = [m for m in MODELS if m != "quantile"]
    for entry in entries():
        takers = _models_taking(entry.name)
        who = "every model but `quantile`" if takers == everyone_else else ", ".join(f"`{m}`" for m in takers)
        lines.append(f"| `{entry.name}` | {_cell(entry.text)} | {who} |")
    return "\n".join(lines) + "\n"


def methods_table(study: str = "coverage") -> str:
    """The methods of ``study`` (its ``methods`` key's choices), default ones marked: from the methods' registry."""
    from .inference.methods.docs import methods_table as table

    return table(study)


def _flag(action) -> str:
    """How a flag is written: ``--n N [N ...]``, ``--force``, ``config``."""
    if not action.option_strings:
        return action.dest if action.nargs != "?" else f"[{action.dest}]"
    takes = action.nargs != 0
    metavar = action.metavar or action.dest.upper()
    if action.choices and not action.metavar:
        metavar = "{" + ",".join(map(str, action.choices)) + "}"
    value = "" if not takes else f" {metavar}" + (f" [{metavar} ...]" if action.nargs in ("+", "*") else "")
    return ", ".join(action.option_strings) + value


def cli_reference() -> str:
    """Every command of ``python -m ldpsim`` with its arguments, defaults and help (from :mod:`ldpsim.cli`)."""
    from . import cli

    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in sub._choices_actions}
    out = []
    for name, command in sub.choices.items():
        out += [f"### `python -m ldpsim {name}`", "", cite(helps.get(name) or "") + ".", ""]
        if command.description:
            out += [cite(command.description), ""]
        out += ["| argument | default | what |", "|----------|---------|------|"]
        for action in command._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            default = action.default
            shown = "" if default in (None, False, [], argparse.SUPPRESS) else f"`{default}`"
            out.append(f"| `{_cell(_flag(action))}` | {shown} | {_cell(cite(action.help or ''))} |")
        out.append("")
    return "\n".join(out)


def outputs_table() -> str:
    """Each study's CSV tables and the columns each always holds (:attr:`ldpsim.studies.base.Study.table_columns`)."""
    lines = ["| study | file | columns (besides one per varied config key) |", "|-------|------|---------|"]
    for name, study in STUDIES.items():
        for table in study.tables:
            columns = study.table_columns.get(table)
            text = ", ".join(f"`{c}`" for c in columns) if columns else "see the study's page"
            lines.append(f"| `{name}` | `{table}.csv` | {text} |")
    return "\n".join(lines) + "\n"


def papers_list() -> str:
    """The bibliography: each paper's full reference, what ldpsim takes from it and where it is reproduced."""
    out = []
    for paper in PAPERS.values():
        out += [f"### {paper.cite}", "", paper.reference, "", f"**What ldpsim takes from it:** {paper.takes}.", "",
                f"**Reproduced by:** {paper.studies}.", ""]
    return "\n".join(out)


def compare_table(table: str, directory: str, root: Path = ROOT) -> str:
    """A committed run's coverages beside the paper's (``TABLE`` of the reference data), with a sentence of both."""
    import warnings

    from .api import load_config, open_result
    from .engine.errors import ConfigError, ConfigWarning
    from .reporting.reference import compare, paper_tables

    result = open_result(root / directory)
    recorded = result.meta.get("config", {})
    try:  # as `ldpsim compare` reads it: the run's config resolved by this ldpsim, or as recorded
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConfigWarning)
            fixed = load_config(dict(recorded)).values
    except ConfigError:
        fixed = dict(recorded)
    entries = compare(result.rows, table, fixed)
    if not entries:
        raise ValueError(f"{directory} has no row of {table}")
    case = "tau" if "tau" in entries[0] else "coef"
    columns = [int(n) for n in paper_tables()[table]["columns"]]
    head = [case, "method"] + [f"n = 1e{round(math.log10(n))}" for n in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    groups: dict = {}
    for e in entries:
        groups.setdefault((e[case], e["method"]), {})[e["n"]] = e
    for (value, method), cells in groups.items():
        shown = f"beta_{value}" if case == "coef" else value
        row = [str(shown), method] + [f"{cells[n]['coverage']:.3f} ({cells[n]['paper_coverage']:.3f})"
                                      if n in cells else "" for n in columns]
        lines.append("| " + " | ".join(row) + " |")
    worst_z = max(abs(e["z"]) for e in entries)
    worst_len = max(abs(e["length_ratio"] - 1.0) for e in entries)
    lines += ["", f"Coverage of ldpsim's run, the paper's in brackets: all {len(entries)} lie within "
                  f"{worst_z:.2f} combined standard errors of the paper's, and every mean length within "
                  f"{100 * worst_len:.1f}% of the paper's (`python -m ldpsim compare {directory}`)."]
    return "\n".join(lines) + "\n"


def _block(spec: str, where: str, root: Path = ROOT) -> str:
    kind, _, rest = spec.partition(":")
    if kind == "studies" and not rest:
        return studies_table()
    if kind == "models" and rest in ("", "full", "short"):
        return models_table(rest)
    if kind == "mechanisms" and rest in ("", "short"):
        return mechanisms_table(rest)
    if kind == "methods" and rest == "registry":
        from .inference.methods.docs import registry_table

        return registry_table()
    if kind == "methods":
        return methods_table(rest or "coverage")
    if kind == "cli" and not rest:
        return cli_reference()
    if kind == "outputs" and not rest:
        return outputs_table()
    if kind == "papers" and not rest:
        return papers_list()
    if kind == "compare" and len(rest.split()) == 2:
        return compare_table(*rest.split(), root=root)
    if kind != "keys":
        raise ValueError(f"{where}: <!-- {spec} --> is not a block ldpsim.docgen writes (see its docstring)")
    words = rest.split()
    study, options = (words or [""])[0], dict(w.split(":", 1) for w in words[1:] if ":" in w)
    unknown = [s for s in [study, options.get("minus")] if s is not None and s not in STUDIES]
    if unknown or set(options) - {"minus"} or len(words) - 1 != len(options):
        raise ValueError(f"{where}: <!-- {spec} --> names no study (studies: {', '.join(STUDIES)}) "
                         "or an option other than minus:STUDY")
    return keys_table(study, options.get("minus"))


def render(text: str, where: str = "page", root: Path = ROOT) -> str:
    """``text`` with every generated block rewritten from the code (``root``: the checkout its runs are in)."""
    def replace(match):
        return match.group(1) + _block(match.group(2), where, root) + match.group(5)

    return _BLOCK.sub(replace, text)


def stale(root: Path = ROOT) -> list[Path]:
    """The pages whose generated blocks differ from what the code gives now."""
    return [p for p in pages(root) if render(p.read_text(), p.name, root) != p.read_text()]


def main(argv: list[str] | None = None) -> int:
    """Rewrite the stale pages (``--check``: only name them, exit status 1 if any)."""
    parser = argparse.ArgumentParser(prog=COMMAND, description="regenerate the generated tables of README.md and docs/")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page is stale")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose pages to read (default: this)")
    args = parser.parse_args(argv)
    changed = stale(args.root)
    for path in changed:
        name = path.relative_to(args.root)
        if args.check:
            print(f"{name}: generated tables are stale; run {COMMAND}", file=sys.stderr)
        else:
            path.write_text(render(path.read_text(), path.name, args.root))
            print(f"rewrote the generated tables of {name}", file=sys.stderr)
    return 1 if changed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["COMMAND", "cli_reference", "compare_table", "key_rows", "keys_table",
           "main", "mechanisms_table", "methods_table", "models_table", "outputs_table", "pages", "papers_list",
           "render", "stale", "studies_table"]

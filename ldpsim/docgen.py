"""The docs' tables of config keys and studies, generated from the code so that they cannot drift.

``README.md`` and ``docs/*.md`` hold generated blocks between marker comments::

    <!-- keys:dpsgd -->                     every key of the study, then `reps`, `seed` and `study`
    <!-- keys:trajectory minus:coverage -->  only the keys the other study does not declare alike
    <!-- studies -->                         the registered studies, the default first
    ...
    <!-- /keys -->   (or <!-- /studies -->)

Each key's row comes from its declaration in the study (:class:`ldpsim.engine.config.Key`):
name, default, allowed values (its choices or range, as the one-line errors
say them), whether a list makes a grid axis, and its help line. A key added
to a study (``epsilon`` of dpsgd, say) appears in its table at the next
``python -m ldpsim.docgen``; ``tests/test_docs.py`` regenerates every block in
memory and fails, naming this command, when a committed page differs.

Usage::

    python -m ldpsim.docgen            # rewrite the blocks of README.md and docs/*.md in place
    python -m ldpsim.docgen --check    # exit 1 and name the pages whose blocks are stale
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

from .engine.config import RUN_KEYS, Key
from .studies import DEFAULT_STUDY, STUDIES

#: The command that regenerates the blocks (error messages name it).
COMMAND = "python -m ldpsim.docgen"
#: The repository root (where README.md is) of this checkout.
ROOT = Path(__file__).resolve().parents[1]

_BLOCK = re.compile(r"(<!-- (keys:[^>]*?|studies) -->\n)(.*?)(<!-- /(keys|studies) -->)", re.S)


def pages(root: Path = ROOT) -> list[Path]:
    """The pages that may hold generated blocks: ``README.md`` and ``docs/*.md``."""
    return [root / "README.md"] + sorted((root / "docs").glob("*.md"))


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
    return "\n".join(lines) + "\n"


def studies_table() -> str:
    """The markdown table of the registered studies (:data:`ldpsim.studies.STUDIES`), the default first."""
    lines = ["| `study` | what a run computes |", "|---------|---------------------|"]
    for name, study in STUDIES.items():
        lines.append(f"| `{name}`{' (default)' if name == DEFAULT_STUDY else ''} | {_cell(study.title)} |")
    return "\n".join(lines) + "\n"


def _block(spec: str, where: str) -> str:
    if spec == "studies":
        return studies_table()
    words = spec.removeprefix("keys:").split()
    study, options = words[0], dict(w.split(":", 1) for w in words[1:] if ":" in w)
    unknown = [s for s in [study, options.get("minus")] if s is not None and s not in STUDIES]
    if unknown or set(options) - {"minus"} or len(words) - 1 != len(options):
        raise ValueError(f"{where}: <!-- {spec} --> names no study (studies: {', '.join(STUDIES)}) "
                         "or an option other than minus:STUDY")
    return keys_table(study, options.get("minus"))


def render(text: str, where: str = "page") -> str:
    """``text`` with every generated block rewritten from the code."""
    def replace(match):
        return match.group(1) + _block(match.group(2), where) + match.group(4)

    return _BLOCK.sub(replace, text)


def stale(root: Path = ROOT) -> list[Path]:
    """The pages whose generated blocks differ from what the code gives now."""
    return [p for p in pages(root) if render(p.read_text(), p.name) != p.read_text()]


def main(argv: list[str] | None = None) -> int:
    """Rewrite the stale pages (``--check``: only name them, exit status 1 if any)."""
    parser = argparse.ArgumentParser(prog=COMMAND, description="regenerate the key tables of README.md and docs/")
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if a page is stale")
    parser.add_argument("--root", type=Path, default=ROOT, help="the checkout whose pages to read (default: this)")
    args = parser.parse_args(argv)
    changed = stale(args.root)
    for path in changed:
        name = path.relative_to(args.root)
        if args.check:
            print(f"{name}: generated tables are stale; run {COMMAND}", file=sys.stderr)
        else:
            path.write_text(render(path.read_text(), path.name))
            print(f"rewrote the generated tables of {name}", file=sys.stderr)
    return 1 if changed and args.check else 0


if __name__ == "__main__":
    sys.exit(main())


__all__ = ["COMMAND", "key_rows", "keys_table", "main", "pages", "render", "stale", "studies_table"]

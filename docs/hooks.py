"""mkdocs hook: the committed figures under results/ are part of the site.

The pages show the figures a committed run drew (``results/quantile/coverage.png``, ...) where they discuss
them, from where the runs wrote them: a page in ``docs/tutorials/`` links ``../results/quantile/coverage.png``.
Nothing is copied into ``docs/``, so a rerun's figure is the one the site shows.
"""

from __future__ import annotations

import re
from pathlib import Path

from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parents[1]


def on_files(files, config):
    for path in sorted((ROOT / "results").glob("**/*.png")):
        if "chunks" in path.parts:
            continue
        files.append(File(str(path.relative_to(ROOT)), str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files


_ROLE = re.compile(r":(?:func|class|mod|meth|attr|data|exc|obj):(<code>)~?\.?")
_TEXT = re.compile(r">([^<]+)<")
_ISSUES = [(re.compile(r" ?\(issue \d+(?:, items? [\d, ]+)?\)"), ""),  # "(issue 41)"
           (re.compile(r"\(issue \d+(?:, items? [\d, ]+)?[:,] ?"), "("),  # "(issue 20: HulC's ...)"
           (re.compile(r"(?<!numba )(?<!Opacus )\bissue \d+(?:, items? [\d, ]+)?[:,]? ?"), "")]


def _drop_issues(text: str) -> str:
    """References to the project's issue tracker, which readers of the site do not have, left out."""
    for pattern, replacement in _ISSUES:
        text = pattern.sub(replacement, text)
    return text


def on_page_content(html, page, config, files):
    """Docstrings as a reader of the site sees them: no reST roles, the papers by author and year.

    The API reference renders the package's docstrings (mkdocstrings), written in numpy style with reST
    roles (``:func:`x```) and the code's short tags for the papers (``000``); here the role prefixes
    go, ``~`` and leading dots with them, and the tags become "Dette & Graw (2024)"
    (:func:`ldpsim.reporting.papers.cite`), as everywhere else a user reads.
    """
    if not page.file.src_uri.startswith("reference/"):
        return html
    from ldpsim.reporting.papers import cite

    html = _ROLE.sub(r"\1", html)
    return _TEXT.sub(lambda m: ">" + _drop_issues(cite(m.group(1))) + "<", html)

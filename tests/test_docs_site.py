"""The documentation site builds with ``mkdocs build --strict``: a broken link, a missing page, an anchor
that does not exist, a page left out of the navigation or a docstring that does not render fails.

mkdocs, Material for MkDocs and mkdocstrings come with the ``test`` extra (and the ``docs`` extra); without
them the test is skipped with the line to install them.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest

from ldpsim.docgen import ROOT

MISSING = [name for name in ("mkdocs", "material", "mkdocstrings", "mkdocstrings_handlers.python")
           if importlib.util.find_spec(name.split(".")[0]) is None
           or (name == "mkdocstrings_handlers.python" and importlib.util.find_spec(name) is None)]


@pytest.mark.skipif(bool(MISSING), reason=f"the docs tools are not installed ({', '.join(MISSING)}): "
                                           "pip install -e \".[docs]\"")
def test_the_site_builds_strict_without_a_warning(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}  # (Material's notice about its successor, not a warning)
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=ROOT, capture_output=True, text=True, env=env, timeout=600)
    log = proc.stdout + proc.stderr
    warnings = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert proc.returncode == 0 and not warnings, ("mkdocs build --strict failed:\n"
                                                   + "\n".join(warnings or [log[-3000:]]))
    site = tmp_path / "site"
    # the pages a user looks for, and the committed figures they show
    for page in ("index.html", "getting-started/index.html", "tutorials/table1/index.html",
                 "reference/config/index.html", "reference/cli/index.html", "reference/api/index.html",
                 "reference/extend/index.html", "bibliography/index.html", "changelog/index.html",
                 "contributing/index.html"):
        assert (site / page).is_file(), page
    assert (site / "results" / "quantile" / "coverage.png").is_file()
    api = (site / "reference" / "api" / "index.html").read_text()
    assert "ldpsim.run" in api and "open_result" in api and ":func:" not in api
    extend = (site / "reference" / "extend" / "index.html").read_text()
    assert "register_scalar" in extend and "kernel_function" in extend

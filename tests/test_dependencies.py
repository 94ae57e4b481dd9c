"""Dependencies that survive an upgrade: no private module of another package is imported."""

from __future__ import annotations

import ast
from pathlib import Path

import ldpsim

ROOT = Path(ldpsim.__file__).resolve().parents[1]


def private_imports(path: Path) -> list[str]:
    """``file:line: name`` of every import of another package's module or name spelled ``_private``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue  # relative imports are ldpsim's own modules
        for name in names:
            parts = name.split(".")
            if parts[0] != "ldpsim" and any(p.startswith("_") and not p.startswith("__") for p in parts):
                found.append(f"{path.name}:{node.lineno}: {name}")
    return found


def test_no_private_module_of_another_package_is_imported():
    # numba.np.random._constants (the ziggurat tables) was the one; engine/dialect/rng/ziggurat.py computes them now
    files = sorted((ROOT / "ldpsim").rglob("*.py")) + sorted((ROOT / "scripts").glob("*.py"))
    assert len(files) > 50
    assert [hit for f in files for hit in private_imports(f)] == []


def test_the_check_sees_a_private_import(tmp_path):
    source = tmp_path / "probe.py"
    source.write_text("from numba.np.random._constants import ki_double\nimport numpy._core\nfrom . import _own\n"
                      "from numpy.random import _pickle\nimport numpy.__config__\n")
    assert private_imports(source) == ["probe.py:1: numba.np.random._constants",
                                       "probe.py:1: numba.np.random._constants.ki_double",
                                       "probe.py:2: numpy._core", "probe.py:4: numpy.random._pickle"]

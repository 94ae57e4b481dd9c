"""Install the oldest version pyproject.toml declares of every dependency, and run the fast tier on it.

Every ``name>=X`` of ``[project] dependencies`` and of the ``test`` extra is
pinned to ``name==X`` (a constraints file), the package is installed with
them into a fresh virtual environment (wheels only: a floor that needs a
compiler to install is not one a user on a laptop has), and the README's test
command runs there. A floor that does not install or whose fast tier fails is
raised in pyproject.toml, not declared; the README (Tests) says which
versions were tested.

Usage::

    python scripts/floors.py                 # venv in .venv-floors, then the fast tier
    python scripts/floors.py --venv DIR --no-tests   # install and list the versions only
    python scripts/floors.py --print         # the constraints only
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The extras whose floors are pinned besides the core dependencies.
EXTRAS = ("test",)


def floors(pyproject: Path = ROOT / "pyproject.toml") -> dict[str, str]:
    """``{name: oldest declared version}`` of the core dependencies and of :data:`EXTRAS`."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        raise SystemExit("floors.py reads pyproject.toml with tomllib: run it with Python 3.11 or later") from None
    project = tomllib.loads(pyproject.read_text())["project"]
    requirements = list(project["dependencies"])
    for extra in EXTRAS:
        requirements += project["optional-dependencies"][extra]
    out = {}
    for text in requirements:
        match = re.fullmatch(r"\s*([A-Za-z0-9_.\-]+)\s*>=\s*([0-9][0-9A-Za-z.]*)\s*", text.split(";")[0])
        if match is None:
            raise SystemExit(f"floors.py: {text!r} in pyproject.toml is not of the form name>=version")
        out[match.group(1).lower()] = match.group(2)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", default=str(ROOT / ".venv-floors"), help="virtual environment to create")
    parser.add_argument("--no-tests", action="store_true", help="install and list the versions only")
    parser.add_argument("--print", action="store_true", help="print the constraints and stop")
    args = parser.parse_args(argv)

    pins = floors()
    constraints = "".join(f"{name}=={version}\n" for name, version in pins.items())
    if args.print:
        print(constraints, end="")
        return 0
    venv = Path(args.venv)
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
    python = str(venv / "bin" / "python")
    path = venv / "floors-constraints.txt"
    path.write_text(constraints)
    subprocess.run([python, "-m", "pip", "install", "-q", "--only-binary=:all:", "-c", str(path),
                    "-e", f"{ROOT}[{','.join(EXTRAS)}]"], check=True)
    listed = subprocess.run([python, "-m", "pip", "list", "--format=freeze"], check=True, capture_output=True,
                            text=True).stdout.splitlines()
    installed = {line.split("==")[0].lower(): line.split("==")[-1] for line in listed if "==" in line}
    version = subprocess.run([python, "-c", "import platform; print(platform.python_version())"], check=True,
                             capture_output=True, text=True).stdout.strip()
    print(f"Python {version}")
    for name, version in pins.items():
        have = installed.get(name, installed.get(name.replace("-", "_"), "?"))
        print(f"{name:16s} floor {version:10s} installed {have}")
    if args.no_tests:
        return 0
    # the README's test command, in that environment
    return subprocess.run([python, "-m", "pytest"], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())

"""A run's provenance, which ``meta.json`` records besides the config: versions, the git commit, the machine."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path

from ... import __version__


def versions() -> dict:
    """Versions of Python and of the packages that compute."""
    import joblib
    import numba
    import numpy
    import scipy

    return {
        "ldpsim": __version__,
        "python": platform.python_version(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "numba": numba.__version__,
        "joblib": joblib.__version__,
    }


def git_commit() -> str | None:
    """The commit of the ldpsim checkout that ran, if it is one (with ``+dirty`` if modified)."""
    root = Path(__file__).resolve().parents[3]  # the checkout holding ldpsim/engine/runs/
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "ldpsim"], cwd=root, capture_output=True,
                               text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def machine() -> dict:
    """Platform, processor and core count."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }


__all__ = ["git_commit", "machine", "versions"]

"""matplotlib, loaded only when a figure is drawn (a dependency of ldpsim, imported late to start fast)."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from ..engine.errors import MissingExtra

#: What to install when matplotlib is missing (the ``plot`` extra is kept empty for older install commands).
INSTALL = "pip install 'matplotlib>=3.7'"


def _usable(directory: Path) -> bool:
    """Whether ``directory`` exists or can be made, and is a directory this process can write (as matplotlib asks)."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # RuntimeError: no home directory to expand
        return False
    return directory.is_dir() and os.access(directory, os.W_OK | os.X_OK)


def _default_dirs() -> list[Path]:
    """matplotlib's own config and cache directories when ``MPLCONFIGDIR`` is unset (``$XDG_*_HOME/matplotlib``)."""
    out = []
    for variable, fallback in (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache")):
        base = os.environ.get(variable)
        try:
            out.append(Path(base) / "matplotlib" if base else Path.home() / fallback / "matplotlib")
        except RuntimeError:  # no home directory
            return []
    return out


def quiet_config_dir() -> None:
    """Point ``MPLCONFIGDIR`` at a private temporary directory when matplotlib's defaults are unusable.

    An unwritable ``HOME`` or ``XDG_CACHE_HOME`` (or one that is a file) made matplotlib print two raw
    lines on stderr at import ("mkdir -p failed", "created a temporary cache directory"). Called before
    matplotlib is imported; does nothing once it is, or when ``MPLCONFIGDIR`` is set. The directory,
    ``<tmp>/ldpsim-matplotlib-<uid>``, is reused by later runs (its font cache with it).
    """
    if "matplotlib" in sys.modules or os.environ.get("MPLCONFIGDIR"):
        return
    dirs = _default_dirs()
    if dirs and all(_usable(d) for d in dirs):
        return
    uid = os.getuid() if hasattr(os, "getuid") else 0
    private = Path(tempfile.gettempdir()) / f"ldpsim-matplotlib-{uid}"
    try:
        private.mkdir(mode=0o700, exist_ok=True)
        mine = not hasattr(os, "getuid") or private.stat().st_uid == uid
        if not (mine and _usable(private)):  # another user's directory of that name: one of our own
            private = Path(tempfile.mkdtemp(prefix="ldpsim-matplotlib-"))
    except OSError:
        return  # no temporary directory either: matplotlib says so itself
    os.environ["MPLCONFIGDIR"] = str(private)


def figure_class(what: str = "figures"):
    """matplotlib's ``Figure`` (no pyplot, no global backend state).

    Raises
    ------
    MissingExtra
        If matplotlib is not installed (a broken or partial environment:
        ldpsim depends on it), with a one-line message naming ``what`` needed it.
    """
    quiet_config_dir()
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtra(f"{what} need{'s' if not what.endswith('s') else ''} matplotlib, which is not "
                           f"installed: {INSTALL}") from None
    return Figure


__all__ = ["INSTALL", "MissingExtra", "figure_class", "quiet_config_dir"]

"""matplotlib, loaded only when a figure is drawn (a dependency of ldpsim, imported late to start fast)."""

from __future__ import annotations

from ..engine.errors import MissingExtra

#: What to install when matplotlib is missing (the ``plot`` extra is kept empty for older install commands).
INSTALL = "pip install 'matplotlib>=3.7'"


def figure_class(what: str = "figures"):
    """matplotlib's ``Figure`` (no pyplot, no global backend state).

    Raises
    ------
    MissingExtra
        If matplotlib is not installed (a broken or partial environment:
        ldpsim depends on it), with a one-line message naming ``what`` needed it.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtra(f"{what} need{'s' if not what.endswith('s') else ''} matplotlib, which is not "
                           f"installed: {INSTALL}") from None
    return Figure


__all__ = ["INSTALL", "MissingExtra", "figure_class"]

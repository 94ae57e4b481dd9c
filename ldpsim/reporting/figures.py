"""matplotlib, loaded only when a figure is drawn (the ``plot`` extra)."""

from __future__ import annotations

from ..engine.errors import MissingExtra


def figure_class(what: str = "figures"):
    """matplotlib's ``Figure`` (no pyplot, no global backend state).

    Raises
    ------
    MissingExtra
        If matplotlib is not installed, with a one-line message naming ``what`` needed it.
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise MissingExtra(f"{what} need{'s' if not what.endswith('s') else ''} matplotlib: "
                           "pip install 'ldpsim[plot]'") from None
    return Figure


__all__ = ["MissingExtra", "figure_class"]

"""The documentation's tables of methods, generated from the registry (``python -m ldpsim.docgen``).

``<!-- methods -->`` (the coverage study's ``methods`` key, defaults marked),
``<!-- methods:STUDY -->`` (another study's), ``<!-- methods:registry -->``
(every method with what it streams, reads, its keys, looks and models).
"""

from __future__ import annotations

from .base import REGISTRY, names

#: The word of each kind in the registry table.
_KIND_WORDS = {"interval": "interval", "sequence": "confidence sequence", "release": "release (NPRR)",
               "zoo": "zoo: own pass", "dpsgd": "DP-SGD interval", "optimizer": "optimizer"}
#: What the tables call each part of the main path's state.
_STATE_WORDS = {"blocks": "main path's block sums", "batches": "main path's batch sums",
                "sn": "main path's random-scaling sums", "truth": "true Sigma"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def methods_table(study: str = "coverage") -> str:
    """The methods ``study`` takes, in its order, its defaults marked: ``| `method` | interval |``."""
    chosen = names(study)
    if not chosen:
        raise ValueError(f"no registered method is taken by study {study!r}")
    head = "interval" if study in ("coverage", "dpsgd", "trace") else "what it runs"
    lines = [f"| `method` | {head} |", "|----------|" + "-" * (len(head) + 2) + "|"]
    for name in chosen:
        method = REGISTRY[name]
        default = " (default)" if study in method.default_in else ""
        lines.append(f"| `{name}`{default} | {_cell(method.text_in(study))} |")
    return "\n".join(lines) + "\n"


def registry_table() -> str:
    """Every interval method of the coverage study with its declaration: kind, what it streams, keys, looks, models."""
    lines = ["| `method` | kind | reads / streams in the kernel | its keys | looks | models |",
             "|---|---|---|---|---|---|"]
    for name in names("coverage"):
        m = REGISTRY[name]
        reads = ", ".join(_STATE_WORDS[r] for r in m.reads)
        streamed = ": ".join(part for part in (reads and f"reads the {reads}", m.streams) if part)
        keys = ", ".join(f"`{k.name}`" for k in m.keys) or "none"
        looks = {"yes": "yes", "needs": "only with looks", "no": "no"}[m.looks]
        lines.append(f"| `{name}` | {_KIND_WORDS[m.kind]} | {_cell(streamed)} | {keys} | {looks} | {_cell(m.models)} |")
    return "\n".join(lines) + "\n"


__all__ = ["methods_table", "registry_table"]

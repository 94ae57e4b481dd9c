"""What the interval methods share: the nominal coverage ``level``, the one key every one of them reads."""

from __future__ import annotations

from ...engine.runs.config import Key, Range

#: The nominal coverage: z = Phi^-1((1 + level) / 2) must be a positive, finite, resolved number.
LEVEL = Key("level", "float", 0.9, range=Range("[0.001, 0.99999]"), help="nominal coverage")

__all__ = ["LEVEL"]

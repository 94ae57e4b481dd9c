"""Seeds derived from identities: the generator of every replication, and generators from seeds.

Every replication draws from its own ``numpy.random.Generator`` built on
``SeedSequence(root, spawn_key=(setting_key, rep))``: its numbers depend on
what it is, never on which worker runs it or when. The bit generator is
numpy's SFC64 (Chris Doty-Humphrey's Small Fast Chaotic generator, 256-bit
state with a counter, so every stream has period at least 2^64; it passes
BigCrush and PractRand).
"""

from __future__ import annotations

import numpy as np

#: The bit generator of every replication stream.
BIT_GENERATOR = np.random.SFC64


def as_generator(seed=None) -> np.random.Generator:
    """A ``Generator`` from ``None``, an int, a ``SeedSequence`` or a ``Generator`` (returned as is)."""
    if isinstance(seed, np.random.Generator):
        return seed
    if not isinstance(seed, np.random.SeedSequence):
        seed = np.random.SeedSequence(seed)
    return np.random.Generator(BIT_GENERATOR(seed))


def replication_generator(root: int, setting_key: int, rep: int) -> np.random.Generator:
    """The generator of replication ``rep`` of the setting whose identity is ``setting_key``."""
    return as_generator(np.random.SeedSequence(root, spawn_key=(setting_key, rep)))


__all__ = ["BIT_GENERATOR", "as_generator", "replication_generator"]

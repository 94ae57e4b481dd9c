"""Shared fixtures: tiny configs that run in well under a second."""

from __future__ import annotations

import numpy as np
import pytest

from ldpsim import studies as cfg

TINY = {
    "model": "quantile",
    "n": 20_000,
    "reps": 8,
    "seed": 7,
    "tau": [0.5, 0.9],
    "epsilon": 1,
    "beta": 0.75,
    "B": 200,
}


@pytest.fixture
def tiny_mapping():
    return dict(TINY)


@pytest.fixture
def tiny_config():
    return cfg.resolve(dict(TINY))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)

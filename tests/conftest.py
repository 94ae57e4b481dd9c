"""Shared fixtures: tiny configs that run in well under a second, and a finished tiny run to work on."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from ldpsim import studies as cfg
from ldpsim.cli import main

import run_helpers

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


@pytest.fixture(scope="session")
def finished_tiny_run(tmp_path_factory):
    """A finished tiny run (its directory and config), made once; tests work on copies."""
    root = tmp_path_factory.mktemp("finished")
    config = root / "tiny.yaml"
    config.write_text(run_helpers.TINY)
    assert main(["run", str(config), "--out", str(root / "run"), "--quiet", "--n-jobs", "1"]) == 0
    return root / "run", config


@pytest.fixture
def earlier(finished_tiny_run, tmp_path):
    """A copy of the finished run, its config, and its snapshot."""
    run_dir, config = finished_tiny_run
    copy = tmp_path / "earlier"
    shutil.copytree(run_dir, copy)
    local = tmp_path / "tiny.yaml"
    local.write_text(config.read_text())
    return copy, local, run_helpers.snapshot(copy)

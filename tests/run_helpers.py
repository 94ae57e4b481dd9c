"""Helpers of the tests that run ldpsim as a user does: the command line in this process, its one-line errors.

A bad input must give exit status 2 and ONE line ``ldpsim: error: ...`` naming the key or path, and leave an
earlier run's directory byte for byte (and mtime for mtime) as it was (:func:`snapshot`); the Python API must
raise the same one-line ConfigError. The fixtures ``finished_tiny_run`` and ``earlier`` (a copy of a finished
tiny run of :data:`TINY`) are in ``conftest.py``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import yaml

import ldpsim
from ldpsim.cli import main

ROOT = Path(__file__).resolve().parents[1]

#: A tiny coverage run: one chunk of 3 replications.
TINY = "model: quantile\ntau: 0.5\nn: 4000\nreps: 3\nseed: 3\nB: 50\n"

#: A tiny coverage run of 120 replications: three chunks of 50, 50 and 20 (the chunk size caps at 50).
SMALL = {"model": "mean", "n": 20000, "reps": 120, "seed": 3}

#: Small settings of the dpsgd and sagd studies (a tiny run takes well under a second once compiled).
TINY_STUDIES = {
    "dpsgd": {"study": "dpsgd", "n": 100, "kappa": 1.5, "reps": 2, "seed": 1,
              "methods": ["plugin", "RS", "oracle", "BM", "DPGD"], "T2_max": 2},
    "sagd_concentration": {"study": "sagd_concentration", "n": 200, "sigma": 0.5, "T": 20, "mu": [1, 2],
                           "reps": 2, "seed": 1, "nodes": 8},
    "sagd_generalization": {"study": "sagd_generalization", "n": 50, "d": 5, "epochs": 4, "checkpoints": 2,
                            "reps": 2, "seed": 1, "nodes": 8},
    "sagd_rate": {"study": "sagd_rate", "n": [200, 400], "T_factor": 3000, "reps": 2, "seed": 1, "nodes": 8},
}


def cli(capsys, *args):
    """``python -m ldpsim ARGS`` in this process: (status, stdout, stderr)."""
    capsys.readouterr()
    status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return status, out, err


def checked_cli(capsys, *args):
    """``python -m ldpsim ARGS`` in this process, warnings printed as the CLI prints them: (status, out, err).

    Every line on stderr must be ldpsim's own: no traceback, no internal error, no raw warning.
    """
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # a raw (non-ldpsim) warning line then fails the checks
        status = main([str(a) for a in args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err, err
    assert all(line.startswith("ldpsim: ") for line in err.splitlines()), err
    return status, out, err


def one_line_error(status, err, *fragments, code=2):
    lines = err.strip().splitlines()
    assert status == code, err
    assert len(lines) == 1 and lines[0].startswith("ldpsim: error: "), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def one_line_error_after_warnings(status, err, *fragments):
    """:func:`one_line_error`, ldpsim's warning lines before the error allowed."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("ldpsim: warning: ")]
    return one_line_error(status, "\n".join(lines), *fragments)


def one_error_line(capsys) -> str:
    """The one line ``ldpsim: error: ...`` captured on stderr."""
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("ldpsim: error: "), err
    return err


def snapshot(path: Path) -> dict:
    """Every file under ``path``: its bytes and its mtime (``no earlier result was touched``)."""
    return {str(p.relative_to(path)): (p.read_bytes(), p.stat().st_mtime_ns)
            for p in sorted(path.rglob("*")) if p.is_file()}


def write(tmp_path, mapping, name="c.yaml"):
    """``mapping`` written as a config file in ``tmp_path``; its path."""
    path = tmp_path / name
    path.write_text(yaml.safe_dump(mapping, sort_keys=False))
    return path


def api_run(mapping, **kw):
    """``ldpsim.run(mapping)`` on one worker, without a progress bar and without ConfigWarnings."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)
        return ldpsim.run(mapping, n_jobs=kw.pop("n_jobs", 1), progress=kw.pop("progress", False), **kw)


def no_work(monkeypatch):
    """Make the simulation fail the test if it starts."""
    monkeypatch.setattr("ldpsim.engine.runs.run.simulate", lambda *a, **k: pytest.fail("the simulation started"))


def online_model(model="huber_mallows", **keys):
    """The model of a trajectory run's first setting (Shi et al.'s online models by default)."""
    from ldpsim.models import build_model

    return build_model(_setting(model, **keys))


def _setting(model="huber_mallows", **keys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)
        config = ldpsim.load_config({"study": "trajectory", "model": model, "n": 1000, "reps": 1, **keys})
    return config.settings[0]

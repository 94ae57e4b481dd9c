"""Plain-Python twins of the zoo's per-step updates, for tests.

Each twin does the arithmetic of its jitted counterpart element by element
in the same order (numpy's elementwise operations on float64 round each
element as the scalar loop does), written independently of the jitted code,
so that a kernel calling the jitted updates can be checked against a driver
calling these (tests/zoo_reference.py) to the bit.
"""

from __future__ import annotations

import numpy as np

from .obm import LEN, P, REF, SUM_L, SUM_L2, W, YSUM


def accumulate_twin(acc: np.ndarray, theta: np.ndarray) -> None:
    """Twin of :func:`~.common.accumulate`."""
    acc += theta


def close_stretch_twin(acc: np.ndarray, out: np.ndarray, count: int) -> None:
    """Twin of :func:`~.common.close_stretch`."""
    out[:] = acc / count
    acc[:] = 0.0


def higrad_branch_twin(thetas: np.ndarray, parents: int, fan: int) -> None:
    """Twin of :func:`~.higrad.higrad_branch`: row ``j < parents fan`` becomes row ``j // fan``."""
    rows = np.arange(parents * fan) // fan
    thetas[: parents * fan] = thetas[rows].copy()


def ob_update_twin(thetas: np.ndarray, sums: np.ndarray, grads: np.ndarray, weights: np.ndarray,
                   eta: float) -> None:
    """Twin of :func:`~.bootstrap.ob_update`."""
    steps = eta * weights  # (B,): eta * W_b, one rounding each
    thetas -= steps[:, None] * grads
    sums += thetas


def obm_add_twin(theta: np.ndarray, new_batch: bool, vec: np.ndarray, mat: np.ndarray, sc: np.ndarray) -> None:
    """Twin of :func:`~.obm.obm_add`."""
    sc[LEN] = 1.0 if new_batch else sc[LEN] + 1.0
    y = theta - vec[REF]
    vec[W] = y if new_batch else vec[W] + y
    vec[YSUM] += y
    vec[P] += sc[LEN] * vec[W]
    mat += np.triu(np.outer(vec[W], vec[W]))
    sc[SUM_L2] += sc[LEN] * sc[LEN]
    sc[SUM_L] += sc[LEN]


def obm_recentre_twin(vec: np.ndarray, mat: np.ndarray, sc: np.ndarray, fi: float) -> bool:
    """Twin of :func:`~.obm.obm_recentre`."""
    delta = vec[YSUM] / fi
    q = sc[SUM_L2]
    shifted = ((mat - vec[P][:, None] * delta[None, :]) - delta[:, None] * vec[P][None, :]) \
        + (q * delta[:, None]) * delta[None, :]
    upper = np.triu(np.ones(mat.shape, dtype=bool))
    mat[upper] = shifted[upper]
    vec[P] -= q * delta
    vec[W] -= sc[LEN] * delta
    vec[REF] += delta
    vec[YSUM] = 0.0
    return bool(np.isfinite(mat[upper]).all())


def plugin_add_twin(smat: np.ndarray, grad: np.ndarray) -> None:
    """Twin of :func:`~.plugin.plugin_add`."""
    smat += np.triu(np.outer(grad, grad))

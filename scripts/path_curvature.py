"""Where a noisy DP-SGD path spends its time: the logistic Hessian along the path against at theta_bar.

The corrected plug-in interval (002, (4.2)) reads the privacy variance as
sigma_1^2 A^-2 / k with A the Hessian at theta_bar. For a non-quadratic loss
the iterates wander around theta_bar, where the Hessian of the logistic loss
is flatter, so the curvature that actually shrinks the noise is the mean of
A(theta_t) along the path. This script runs the DP-SGD kernel's plain-Python
twin (which returns the path) for 002's logistic setting (identity design,
n = 500, T = n^2, batches of one) at the CLT's and the valid accountant's
step noise, and prints diag A(theta_bar) / mean_t A(theta_t) (thinned to
every 250th step) with its standard error over the paths.

    python scripts/path_curvature.py            # about 1 minute: four paths per noise level
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy import special

from ldpsim.engine.dialect.rng import as_generator
from ldpsim.inference.streaming import StreamLayout
from ldpsim.studies.dpsgd.kernel import draw_data, run_dpsgd_twin

N = 500
#: sigma_1 = sigma x 2 clip / m with clip = 3: the CLT's sigma = 0.9165 (results/dpsgd) and RDP's 1.272
#: (results/dpsgd_valid) for epsilon = 10 at delta = 1e-5
NOISE = {"CLT (results/dpsgd)": 5.499, "RDP (results/dpsgd_valid)": 7.63}


def hessian(X, theta):
    p = special.expit(X @ theta)
    return (X * (p * (1.0 - p))[:, None]).T @ X / X.shape[0]


def ratio(sigma1: float, reps: int) -> tuple[np.ndarray, np.ndarray]:
    steps = N * N
    layout = StreamLayout.build(steps, 0.75, 0.501, blocks=False, batches=False)
    out = []
    for r in range(reps):
        gen = as_generator(1000 + r)
        _, X, y, xnorm = draw_data(gen, "logistic", np.eye(3), N, 0.5)
        _, _, path = run_dpsgd_twin(gen, X, y, xnorm, "logistic", "swor", steps, 1, 0.2, 0.501, 3.0, sigma1, 0.0,
                                    layout)
        along = np.mean([hessian(X, path[i]) for i in range(0, steps, 250)], axis=0)
        out.append(np.diag(hessian(X, path.mean(axis=0))) / np.diag(along))
    out = np.array(out)
    return out.mean(axis=0), out.std(axis=0, ddof=1) / np.sqrt(reps)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("reps", nargs="?", type=int, default=4, help="paths per noise level (default 4)")
    reps = parser.parse_args().reps
    for label, sigma1 in NOISE.items():
        mean, se = ratio(sigma1, reps)
        print(f"{label}: sigma_1 = {sigma1}: A(theta_bar) / mean A(theta_t) = "
              + ", ".join(f"{m:.3f} ({s:.3f})" for m, s in zip(mean, se)))

"""Audit every privacy mechanism as the kernels run it: an empirical lower bound on its epsilon (or mu).

For each mechanism (000's randomized response, Laplace and analytic Gaussian
mechanisms; 004's Laplace, Gaussian and GDP mechanisms with constant and
per-user budgets; one DP-SGD step of 002; issue 30's releases, and duchi_l2
on the l2 ball of 004's clipped models), outputs are drawn at a
worst-case pair of neighbouring inputs through the jitted code the kernels
call, and a threshold test with Clopper-Pearson bounds turns them into a
lower bound that holds with probability 95% (:mod:`ldpsim.privacy.audit`).
The inputs come from the models: their gradient bounds, sensitivities and
noise records, and for DP-SGD the kernel's own clipping.

    python scripts/audit_privacy.py                         # 1e7 draws per input; rewrites docs/audit.md's table
    python scripts/audit_privacy.py --draws 1e5 --no-write  # quick look

Exit status 1 if any lower bound exceeds its claim (a mechanism that does
not keep its promise, or a 5% accident: rerun with another ``--seed``).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import re
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from tabulate import tabulate

from ldpsim.models import MODELS  # imports ldpsim first: fixes numba's cache directory
from ldpsim.privacy.clt import step_noise_sd
from ldpsim.privacy.audit import TABLE_HEAD, AdditiveProbe, AuditCase, Claim, RandomizedResponseProbe, ReleaseProbe, \
    StepProbe, run_audit, table_rows
from ldpsim.privacy.mechanisms import entries, make_ldp_mechanism
from ldpsim.privacy.gdp import gdp_epsilon
from ldpsim.engine.runs.provenance import machine
from ldpsim.studies.dpsgd.kernel import MODELS as DPSGD_MODELS, _add_clipped

DOC = Path(__file__).resolve().parents[1] / "docs" / "audit.md"
BEGIN, END = "<!-- audit table: written by scripts/audit_privacy.py -->", "<!-- end of audit table -->"
SEED = 20240501
DELTA = 1e-5


def _corners(bounds):
    """Opposite corners of the box ``|g_j| <= bounds[j]``: the farthest pair in l1 and in l2."""
    b = np.asarray(bounds, dtype=float)
    return -b, b


def _diagonal(dim: int, l2: float):
    """Two points at l2 distance ``l2`` along ``(1, ..., 1)``: the pair of largest l1 distance ``sqrt(dim) l2``."""
    half = np.full(dim, 0.5 * l2 / math.sqrt(dim))
    return -half, half


def _axis(dim: int, distance: float):
    """Two points at distance ``distance`` along the first axis (the same in l1 and l2)."""
    x1 = np.zeros(dim)
    x1[0] = distance
    return np.zeros(dim), x1


def _gaussian_exact(sd: float, l2: float, delta: float) -> float:
    """The true epsilon at ``delta`` of ``N(0, sd^2 I)`` noise at l2 distance ``l2``: that of ``l2 / sd``-GDP."""
    return gdp_epsilon(l2 / sd, delta)


def model_cases() -> list[AuditCase]:
    """000's and 004's mechanisms, built by the models the configs name."""
    cases = []
    quantile = MODELS["quantile"](tau=0.5, epsilon=1.0)  # configs/quantile.yaml
    cases.append(AuditCase(
        "randomized response (Dette & Graw's quantile)", Claim("epsilon", 1.0),
        RandomizedResponseProbe(quantile.kernel_params().gradient.flip_prob), 1.0,
        "the bit 1{X <= theta} is 0 or 1: the only pair"))
    mean = MODELS["mean"](epsilon=1.0)  # scalar: draw_noise
    lo, hi = -0.5, 0.5  # theta - X with X in [0, 1]: the gradient's two ends, l1 distance 1 = the sensitivity
    cases.append(AuditCase(
        "Laplace (mean, scalar draw)", Claim("epsilon", 1.0),
        AdditiveProbe(mean.kernel_params().noise, ([lo], [hi]), "laplace", scalar=True), 1.0,
        "the two ends of the gradient's range"))
    qr = MODELS["quantile_regression"](tau=0.5, epsilon=1.0, mechanism="laplace")  # configs/quantile_regression.yaml
    bounds = qr.gradient_bounds()
    record = qr.kernel_params().noise
    cases.append(AuditCase(
        f"Laplace (Dette & Graw's quantile regression, d = {qr.dim}, opposite corners)", Claim("epsilon", 1.0),
        AdditiveProbe(record, _corners(bounds), "laplace"), 1.0,
        "opposite corners of the gradient box: l1 distance = the sensitivity 2 sum_j bounds_j"))
    cases.append(AuditCase(
        f"Laplace (Dette & Graw's quantile regression, d = {qr.dim}, one coordinate)", Claim("epsilon", 1.0),
        AdditiveProbe(record, _axis(qr.dim, qr.mechanism.sensitivity), "laplace"), 1.0,
        "the whole l1 sensitivity on one coordinate: dominates every pair at that l1 distance"))
    qg = MODELS["quantile_regression"](tau=0.5, epsilon=1.0, mechanism="gaussian", delta=DELTA)
    sd = qg.mechanism.sigma
    cases.append(AuditCase(
        f"analytic Gaussian (Dette & Graw's quantile regression, d = {qg.dim})", Claim("epsilon_delta", 1.0, DELTA),
        AdditiveProbe(qg.kernel_params().noise, _corners(qg.gradient_bounds()), "linear", sd=sd),
        _gaussian_exact(sd, qg.mechanism.sensitivity, DELTA),
        "opposite corners: l2 distance = the sensitivity (isotropic noise: every such pair alike)"))

    def huber(**kw):
        return MODELS["huber_mallows"](dim=5, **kw)  # configs/shi_*.yaml: d = 5, p = 7

    for eps in (1.0, 2.0, 3.0):  # configs/shi_mechanisms.yaml
        m = huber(mechanism="laplace", epsilon=eps)
        cases.append(AuditCase(
            f"Laplace (Shi et al.'s Huber, p = {m.p}, epsilon = {eps:g})", Claim("epsilon", eps),
            AdditiveProbe(m.noise_record(), _diagonal(m.p, m.sensitivity()), "laplace"), eps,
            "l2 distance D along the diagonal: the largest l1 distance, sqrt(p) D, that the calibration assumes"))
    m = huber(mechanism="gdp", mu=1.0)  # configs/shi_*.yaml
    cases.append(AuditCase(
        f"GDP (Shi et al.'s Huber, p = {m.p})", Claim("gdp", 1.0),
        AdditiveProbe(m.noise_record(), _axis(m.p, m.sensitivity()), "linear", sd=m.mechanism.sigma), 1.0,
        "l2 distance D (isotropic noise: every direction alike)"))
    for name in ("gaussian", "gaussian_classical"):
        m = huber(mechanism=name, epsilon=1.0, delta=DELTA)
        sd = m.mechanism.sigma
        label = "analytic Gaussian" if name == "gaussian" else "classical Gaussian"
        cases.append(AuditCase(
            f"{label} (Shi et al.'s Huber, p = {m.p})", Claim("epsilon_delta", 1.0, DELTA),
            AdditiveProbe(m.noise_record(), _axis(m.p, m.sensitivity()), "linear", sd=sd),
            _gaussian_exact(sd, m.sensitivity(), DELTA), "l2 distance D (isotropic noise)"))
    # per-user budgets (configs/shi_budgets.yaml: mu_i ~ U(1, 2)): a user at each end of the law, through the
    # kernel's per-user record with a law of width 0, and the whole law against the run's claim (its upper end)
    m = huber(mechanism="gdp", budget="uniform(1, 2)")
    record, pair, D = m.noise_record(), _axis(m.p, m.sensitivity()), m.sensitivity()
    for mu in (1.0, 2.0):
        cases.append(AuditCase(
            f"GDP, per-user budget U(1, 2) (Shi et al.'s Huber): the user at mu = {mu:g}", Claim("gdp", mu),
            AdditiveProbe(record._replace(low=mu, width=0.0), pair, "linear", sd=D / mu), mu,
            "l2 distance D; the user's own budget"))
    cases.append(AuditCase(
        "GDP, per-user budget U(1, 2) (Shi et al.'s Huber): a user of unknown budget", Claim("gdp", 2.0),
        AdditiveProbe(record, pair, "linear", sd=D / 1.0), None,
        "l2 distance D; the budget drawn in the kernel, unknown to the test"))
    m = huber(mechanism="laplace", budget="uniform(1, 2)")
    record, pair = m.noise_record(), _diagonal(m.p, m.sensitivity())
    for eps in (1.0, 2.0):
        cases.append(AuditCase(
            f"Laplace, per-user budget U(1, 2) (Shi et al.'s Huber): the user at epsilon = {eps:g}",
            Claim("epsilon", eps),
            AdditiveProbe(record._replace(low=eps, width=0.0), pair, "laplace"), eps,
            "l2 distance D along the diagonal (largest l1 distance)"))
    return cases


def dpsgd_pair(clip: float, batch_size: int, sampling: str, d: int = 2, model: str = "linear"):
    """Two neighbouring batches' clipped mean gradients, clipped by the DP-SGD kernel's own ``_add_clipped``.

    The batch holds ``batch_size - 1`` shared examples and one more whose
    residual is so large that its gradient is clipped: with ``y = -Y`` in one
    batch and ``y = +Y`` in the other (``swor``, ``cyclic``: replace-one) its
    clipped gradients are ``+clip u`` and ``-clip u``, the two ends of the
    ball, ``2 clip / m`` apart after the division by ``m``; with Poisson
    sampling (add/remove) the example is in one batch only: ``clip / m``.
    """
    gen = np.random.Generator(np.random.SFC64(7))
    X = np.vstack([gen.standard_normal((batch_size - 1, d)), np.full((1, d), 1.0)])
    y_shared = gen.standard_normal(batch_size - 1)
    theta = np.zeros(d)
    record = DPSGD_MODELS[model]
    means = []
    for y_last in (-1e6, 1e6):
        y = np.r_[y_shared, y_last]
        xnorm = np.sqrt((X * X).sum(axis=1))
        grad = np.zeros(d)
        for i in range(batch_size - 1):
            _add_clipped(X, y, xnorm, i, theta, record, clip, grad, True)
        shared = grad.copy()
        _add_clipped(X, y, xnorm, batch_size - 1, theta, record, clip, grad, True)
        means.append((shared if sampling == "poisson" and y_last < 0 else grad) / batch_size)
    return means[0], means[1]


def dpsgd_cases() -> list[AuditCase]:
    """One DP-SGD step at the noise multiplier of 002's Figure 2 (results/dpsgd: sigma = 0.91645, clip 6, m = 1)."""
    sigma, clip = 0.916450551179737, 6.0
    cases = []
    for sampling, m in (("swor", 1), ("poisson", 4)):
        sigma1 = step_noise_sd(sigma, clip, m, sampling)
        pair = dpsgd_pair(clip, m, sampling)
        cases.append(AuditCase(
            f"DP-SGD step (Xia et al., {sampling}, clip {clip:g}, m = {m}, sigma = {sigma:.4g})",
            Claim("gdp", 1.0 / sigma),
            StepProbe(sigma1, pair), 1.0 / sigma,
            "one example's clipped gradient at the two ends of the ball (replace-one)" if sampling == "swor"
            else "one example's clipped gradient, present or absent (add/remove)"))
    return cases


#: The budgets the LDP mechanisms are audited at (issue 30): below and above Hybrid's eps* and PM's crossing.
LDP_EPSILONS = (0.5, 2.0, 8.0)


def ldp_cases() -> list[AuditCase]:
    """The releases of the mechanism registry through their kernel release, at the scaled inputs -1 and 1.

    Each at the dimensions its entry's audit hook names (``audit_dims``): the 1-D ones on one coordinate
    (on a vector each coordinate is this mechanism at epsilon / d); the multidimensional ones at d = 5
    with equal bounds, and duchi_linf also at d = 4 (ties), at the vertices -1 and 1, where each one's
    density ratio reaches e^eps.
    """
    cases = []
    for name, d in [(entry.name, d) for entry in entries(kind="release") for d in entry.audit_dims]:
        for eps in LDP_EPSILONS:
            mech = make_ldp_mechanism(name, eps, np.ones(d))
            x0, x1 = -np.ones(d), np.ones(d)
            points = tuple(2.0 * (y + d) for y in mech.jump_points)  # s = (y - x)'(x' - x) with one coordinate y
            cases.append(AuditCase(
                f"{mech.label} (d = {d}, epsilon = {eps:g})", Claim("epsilon", eps),
                ReleaseProbe(mech.record(), (x0, x1), tuple(mech.output_bound), points), eps,
                "the inputs -1 and 1 (every coordinate), the ends of the box"))
    return cases


def ball_cases() -> list[AuditCase]:
    """duchi_l2 on the l2 ball (issue 30: 004's clipped models release ``t = g / clip`` itself), built by huber_clip.

    At d = 5 (p = 7, as configs/shi_*.yaml), at two opposite points of the unit sphere, ``t = -u`` and ``u``
    with ``u = (1, .., 1) / sqrt(p)``: the output's density is ``e^eps / (e^eps + 1)`` times that of the
    sphere on the hemisphere towards ``t`` and ``1 / (e^eps + 1)`` times it on the other, so their ratio reaches
    ``e^eps``; the statistic ``2 u'y + 2`` jumps at 2 (``u'y = 0``).
    """
    cases = []
    for eps in LDP_EPSILONS:
        m = MODELS["huber_clip"](dim=5, mechanism="duchi_l2", epsilon=eps, clip=1.0)
        u = np.full(m.p, 1.0 / math.sqrt(m.p))
        cases.append(AuditCase(
            f"{m.mechanism.label}, ball (Shi et al.'s Huber clip, p = {m.p}, epsilon = {eps:g})", Claim("epsilon", eps),
            ReleaseProbe(m.noise_record().mechanism, (-u, u), tuple(m.mechanism.output_bound), (2.0,)), eps,
            "two opposite points of the unit sphere (t = g / clip): the ball's farthest pair"))
    return cases


# The labels the cases' streams were first drawn under, when the papers were named by number: relabelled by
# author, a case keeps its draws, so docs/audit.md's numbers stay what this script prints.
_FIRST_LABELS = (("Dette & Graw's quantile", "000 quantile"), ("(mean, scalar draw)", "(000 mean, scalar draw)"),
                 ("Shi et al.'s Huber", "004 Huber"), ("(Xia et al.,", "(002,"))


def _first_label(name: str) -> str:
    for label, first in _FIRST_LABELS:
        name = name.replace(label, first)
    return name


def cases() -> list[AuditCase]:
    """Every case of the audit, in the table's order."""
    every = model_cases() + dpsgd_cases() + ldp_cases() + ball_cases()
    return [dataclasses.replace(case, streams=_first_label(case.name)) for case in every]


def _e(x: int) -> str:
    """``10000000`` as ``1e7``."""
    return f"{x:.0e}".replace("e+0", "e").replace("e+", "e")


def render(results, draws: int, seed: int, seconds: float) -> str:
    """The markdown block docs/audit.md holds between its markers."""
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    info = machine()
    lines = [BEGIN, "",
             tabulate(table_rows(results), TABLE_HEAD, tablefmt="github", disable_numparse=True), "",
             f"Measured {stamp} by `python scripts/audit_privacy.py --draws {_e(draws)} --seed {seed}`: "
             f"{seconds:.0f} s on {info['processor']}, {info['cpu_count']} cores, shared with other work. "
             "Each bound holds with probability 95%; the largest bound / claim is "
             f"{max(r.ratio for r in results):.3f}.", "", END]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--draws", type=float, default=1e7, help="outputs per input (half select the test)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--match", default="", help="only the cases whose name contains this text")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave docs/audit.md alone")
    args = parser.parse_args(argv)
    draws = int(args.draws)
    start = time.perf_counter()
    results = []
    for case in cases():
        if args.match and args.match not in case.name:
            continue
        results.append(run_audit(case, draws, args.seed))
        r = results[-1]
        print(f"{case.name}: {case.claim.text}, lower bound {r.lower_bound:.4g} ({r.ratio:.3f} of the claim; "
              f"test {r.test}, t = {r.threshold:.4g}, point estimate {r.estimate:.4g}), {r.seconds:.1f} s",
              flush=True)
    seconds = time.perf_counter() - start
    print()
    print(tabulate(table_rows(results), TABLE_HEAD, tablefmt="github", disable_numparse=True))
    if not args.no_write and not args.match:
        text = DOC.read_text()
        block = render(results, draws, args.seed, seconds)
        new, count = re.subn(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: block, text, flags=re.S)
        if count != 1:
            print(f"{DOC}: no table markers found; nothing written", file=sys.stderr)
            return 2
        DOC.write_text(new)
        print(f"\nwrote the table to {DOC}")
    over = [r for r in results if r.lower_bound > r.case.claim.value]
    for r in over:
        print(f"LOWER BOUND ABOVE THE CLAIM: {r.case.name}: {r.lower_bound:.4g} > {r.case.claim.value:.4g}",
              file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())

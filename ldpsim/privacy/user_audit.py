"""``ldpsim audit``: a user's mechanism audited as the built-in ones are, through the code its models run.

A user's :class:`~.mechanisms.Mechanism` declares its guarantee; ldpsim cannot
prove it, but it can try to refute it. The mechanism is built at the given
budget and bounds, and its noise is drawn through the functions the kernels
call (:func:`~.mechanisms.draw_noise` for one coordinate,
:func:`~.mechanisms.add_noise` for several) at the two opposite corners of
the box of gradients, the farthest pair in l1 and in l2. Two threshold tests
(:mod:`.audit`) turn the draws into lower bounds on epsilon: the likelihood
ratio of Laplace noise and that of Gaussian noise, each at ``alpha / 2`` so
that the larger of the two bounds holds with probability ``1 - alpha``. A
lower bound above the declared epsilon refutes the claim; one below it says
only that this test found no leak (an audit is a lower bound, not a proof).
"""

from __future__ import annotations

import inspect
import math

import numpy as np
from tabulate import tabulate

from ..engine.errors import ConfigError
from ..engine.dialect.rng import as_generator
from ..engine.runs import usercode
from ..engine.runs.usercode import shown
from .audit import AdditiveProbe, AuditCase, Claim, ReleaseProbe, format_number, run_audit
from .mechanisms import build_mechanism, draw_noise, release, user_record

#: Probability that a bound printed exceeds the truth (split between the two tests).
ALPHA = 0.05


def _noise_sd(record, draws: int = 4000) -> float:
    """The SD of one coordinate's noise, from draws in plain Python (it sets the grid of the Gaussian test)."""
    gen = as_generator(7)
    values = np.array([draw_noise(record, gen) for _ in range(draws)], dtype=float)
    return float(values.std())


def _release_span(record, dim: int, draws: int = 4000) -> np.ndarray:
    """Per-coordinate ``max |release|`` at the inputs -1 and 1, from draws in plain Python (the grid's span)."""
    gen = as_generator(7)
    top = np.zeros(dim)
    for value in (-1.0, 1.0):
        for _ in range(draws // 2):
            t = np.full(dim, value)
            release(record, gen, t)
            top = np.maximum(top, np.abs(t))
    return top


#: Most draws per input an audit takes.
MAX_DRAWS = 10**11


def audit_mechanism(spec: str, epsilon: float, bounds, delta: float | None = None, draws: int = 1_000_000,
                    seed: int = 20240501) -> tuple[str, bool]:
    """Audit a user's mechanism at ``epsilon`` for gradients in the box ``|g_j| <= bounds[j]``.

    Returns
    -------
    (str, bool)
        The report, and whether the audit refutes the declared guarantee.
    """
    from ..engine.runs.usercode import canonical, looks_like_spec
    from .mechanisms import Mechanism

    if not looks_like_spec(spec):
        raise ConfigError(f"mechanism = {spec!r} is not a user's mechanism (path/to/file.py:Class); the built-in "
                          "ones are audited by scripts/audit_privacy.py")
    if not (epsilon > 0 and math.isfinite(epsilon)):
        raise ConfigError(f"--epsilon = {epsilon} is outside (0, inf)")
    bounds = np.asarray(bounds, dtype=float)
    if not (np.isfinite(bounds).all() and (bounds > 0).all()):
        raise ConfigError(f"--bounds = {bounds.tolist()}: every bound must be a finite number > 0")
    if draws < 1000:
        raise ConfigError(f"--draws = {draws} is too few: at least 1000")
    if draws > MAX_DRAWS:  # 1e13 ran for days (each draw a few nanoseconds, twice per test and input)
        raise ConfigError(f"--draws = {draws:.3g} is more than {MAX_DRAWS:.0e} per input (hours of drawing; the bound "
                          "gains little past 1e9)")
    if seed < 0:
        raise ConfigError(f"--seed = {seed} is outside [0, inf)")
    if delta is not None and not 0.0 <= delta < 1.0:  # 1, 2, inf: an internal error; -1: the pure claim, silently
        raise ConfigError(f"--delta = {delta:g} is outside [0, 1) (0: the pure epsilon claim; leave --delta out for "
                          "the delta the mechanism declares by default)")
    value = canonical(spec, Mechanism, "mechanism")
    if delta is not None and "delta" not in inspect.signature(usercode.resolve(value, Mechanism, "mechanism")).parameters:
        raise ConfigError(f"--delta = {delta:g}: {shown(value)} takes no delta (its __init__ has none), so the audit "
                          "would test the pure epsilon claim it declares: drop --delta")
    mech = build_mechanism(value, epsilon, bounds, delta)
    record = user_record(mech)
    declared_delta = float(getattr(mech, "delta", None) or 0.0)
    claim = Claim("epsilon_delta", float(mech.epsilon), declared_delta) if declared_delta > 0 else \
        Claim("epsilon", float(mech.epsilon))
    results = []
    if mech.releases:  # a release of the scaled gradient: at its corners -1 and 1, one linear test at alpha
        ones = np.ones(bounds.size)
        probe = ReleaseProbe(record, (-ones, ones), tuple(_release_span(record, bounds.size)))
        case = AuditCase(f"{shown(value)} (linear test of the release)", claim, probe,
                         why="the corners -1 and 1 of the scaled gradient's box")
        results.append(run_audit(case, draws, seed, alpha=ALPHA))
    else:
        sd = _noise_sd(record)
        inputs = (-bounds, bounds)
        scalar = bounds.size == 1
        for statistic in ("laplace", "linear"):
            if statistic == "linear" and not sd > 0:
                continue
            probe = AdditiveProbe(record, inputs, statistic, sd=sd, scalar=scalar)
            case = AuditCase(f"{shown(value)} ({statistic} test)", claim, probe,
                             why="opposite corners of the gradient box: the farthest pair in l1 and l2")
            results.append(run_audit(case, draws, seed, alpha=ALPHA / 2))
    best = max(results, key=lambda r: r.lower_bound)
    refuted = best.lower_bound > claim.value
    rows = [[r.case.name, claim.text, format_number(r.lower_bound), f"{r.ratio:.3f}", f"{r.seconds:.1f}"]
            for r in results]
    verdict = (f"REFUTED: the {best.case.name.rsplit('(', 1)[-1].rstrip(')')} gives epsilon >= "
               f"{format_number(best.lower_bound)} with probability {1 - ALPHA:.0%}, above the declared "
               f"{claim.value:g}" if refuted else
               f"not refuted: no test found epsilon above the declared {claim.value:g} (a lower bound of "
               f"{format_number(best.lower_bound)} holds with probability {1 - ALPHA:.0%}; an audit cannot prove "
               "the claim)")
    text = (f"audit of {shown(value)} built at epsilon = {epsilon:g}"
            + (f", delta = {delta:g}" if delta else "") + f", bounds = {bounds.tolist()}: "
            f"{draws:g} draws per input through its registered {'release' if mech.releases else 'noise'}\n"
            + tabulate(rows, ["mechanism (test)", "claim", f"lower bound ({1 - ALPHA:.0%})", "bound / claim", "s"],
                       tablefmt="github") + f"\nverdict: {verdict}")
    return text, refuted


__all__ = ["ALPHA", "audit_mechanism"]

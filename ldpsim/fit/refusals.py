"""The refusals of ``ldpsim fit``: where the release would be unreliable or the input is bad, one line instead.

Every check that refuses is here, each a function that raises
:class:`~ldpsim.engine.errors.ConfigError` with one line (or returns what the
next stage needs); the stages of :mod:`ldpsim.fit` call them as they run, so
that of two problems the first met is named. By what they read, in that order:

* the options alone (:func:`check_options`), before the data are read;
* the raw data, answering its owner (:func:`check_batch_size`,
  :func:`check_shares`, :func:`check_magnitudes`; the file's own checks are
  :func:`ldpsim.fit.read.read_table` and :func:`ldpsim.fit.read.check_design`);
* public quantities: ``n``, ``d``, the budget and the options
  (:func:`check_steps`, :func:`check_reach`, :func:`check_rows_for_scaling`,
  :func:`check_split`), before any statistic of the values is computed;
* what was released privately: the path and ``A~``, ``S~``
  (:func:`check_path`, :func:`check_moments`, :func:`check_settled`,
  :func:`check_original_scale`), so that a refusal is post-processing of the
  release and covered by its guarantee (:func:`covered`).

The refusal of a private scaling whose histograms show nothing above their
noise is raised where the scaling is drawn, :func:`ldpsim.fit.scale.scale_columns`.
"""

from __future__ import annotations

import math

import numpy as np

from ..engine.runs.config import show
from ..engine.errors import ConfigError
from ..privacy import scaling as sc
from ..privacy.accountants import check_supported
from ..privacy.gdp import gdp_epsilon
from .options import EPSILON_RANGE, FIT_ACCOUNTANTS, LEVEL_RANGE, MIN_STEPS, SCALINGS, SHARE_CLIP, FitOptions
from .read import MAX_ABS

#: How far (on the scaled data) the clipped gradients must be able to carry the path: ``c clip sum_t t^-gamma``.
MIN_REACH = 10.0
#: ``c lambda sum_t t^-gamma`` along A~'s flattest direction must reach this: the average then keeps about
#: ``2 / MIN_FORGET^2`` (2%) of the distance from the start to the truth.
MIN_FORGET = 10.0
#: ``A~`` is refused when its smallest eigenvalue is below ``-NOISE_FLOOR`` times the SD of its noise per entry.
NOISE_FLOOR = 3.0
#: A column with bounds is refused as constant when its variance read off ``A~`` (the Schur complement
#: ``A~_jj - A~_0j^2 / A~_00``, 0 for a constant column) is below ``CONSTANT_Z`` times its noise SD
#: ``sd sqrt(1 + 4 m^2 + m^4)``, ``m = A~_0j / A~_00``: a constant column passes with probability 0.5%, and then
#: mostly meets the next two checks (12 of 12 seeds did with this one off). Higher, it refused honest bounds:
#: Exp(3) in 0:15 at epsilon 2 and n = 2000 stands 3.06 SDs above 0.
CONSTANT_Z = 2.58
#: The settle ratio, 6 ``V^`` over the path variance (*) predicts from ``A~`` and ``S~``, is
#: ``6 int (W - rW(1))^2`` once the path has settled: 6 times the Cramer-von Mises law (Anderson & Darling
#: 1952), mean 1, 99% point 4.46, 99.9% point 7.0, 25 beyond 1e-9. Above :data:`PLUGIN_SETTLE` (in any
#: coordinate) the plug-in interval, whose variance is (*), is not shown: the path fluctuates more than (*)
#: says (clipping along a noisy path flattens the loss it sees); above :data:`SETTLE_RATIO` nothing is.
PLUGIN_SETTLE = 4.46
SETTLE_RATIO = 25.0


def check_options(options: FitOptions) -> tuple[float, str]:
    """One-line errors for the options, before the data are read; returns the target epsilon and the accountant."""
    budget, descent = options.budget, options.descent
    epsilon, delta, mu, accountant = budget.epsilon, budget.delta, budget.mu, budget.accountant
    share_moments, share_scaling = budget.share_moments, budget.share_scaling
    sampling, kappa, max_steps, batch_size = descent.sampling, descent.kappa, descent.max_steps, descent.batch_size
    c, gamma, clip, clip_hessian = descent.c, descent.gamma, descent.clip, descent.clip_hessian
    model, scaling, seed, level = options.model, options.scaling, options.seed, options.report.level
    if model not in ("linear", "logistic"):
        raise ConfigError(f"model = {show(model)} is not one of: linear, logistic")
    if epsilon is None and mu is None:
        raise ConfigError("give the privacy budget of the whole release: --epsilon E (with --delta) or --mu MU (GDP)")
    if epsilon is not None and mu is not None:
        raise ConfigError("give the budget as --epsilon (with --delta) or as --mu, not both")
    if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
        raise ConfigError(f"delta = {show(delta)} is outside (0, 1)")
    if mu is not None:
        if not (isinstance(mu, (int, float)) and mu > 0 and math.isfinite(mu)):
            raise ConfigError(f"mu = {show(mu)} is outside (0, inf): fit always releases privately")
        epsilon = gdp_epsilon(mu, delta)
        what = f"mu = {show(mu)} (epsilon = {epsilon:.4g} at delta = {delta:g})"
    else:
        what = f"epsilon = {show(epsilon)}"
    low, high = EPSILON_RANGE
    if not (isinstance(epsilon, (int, float)) and low <= epsilon <= high):
        raise ConfigError(f"{what} is outside [{low:g}, {high:g}], the budgets fit calibrates")
    if sampling == "cyclic":
        raise ConfigError("sampling = cyclic is refused by fit: with privacy noise every pass costs budget (no "
                          "amplification by subsampling), so the noise grows with T and the intervals, derived for "
                          "random batches, do not cover (0-6% in the dpsgd study at these settings); use swor or "
                          "poisson")
    if sampling not in FIT_ACCOUNTANTS:
        raise ConfigError(f"sampling = {show(sampling)} is not one of: swor, poisson")
    accountant = FIT_ACCOUNTANTS[sampling][0] if accountant is None else accountant
    problem = check_supported(accountant, sampling)
    if problem:
        raise ConfigError(problem)
    if accountant not in FIT_ACCOUNTANTS[sampling]:
        raise ConfigError(f"accountant = {accountant} with sampling = poisson: fit states Poisson batches under "
                          "replace-one neighbours (n is public: T = n^kappa and the rate m/n are functions of it), "
                          f"and only dp-accounting's PLD accountant has that event; {accountant} does not: use pld")
    if scaling not in SCALINGS:
        raise ConfigError(f"scaling = {show(scaling)} is not one of: {', '.join(SCALINGS)}")
    for name, value in (("share_moments", share_moments), ("share_scaling", share_scaling)):
        if isinstance(value, bool) or not (isinstance(value, (int, float)) and 0.0 < value < 1.0):
            raise ConfigError(f"{name} = {show(value)} is outside (0, 1)")
    if share_moments > 0.9:
        raise ConfigError(f"share_moments = {share_moments:g} leaves the path less than 0.1 of the budget; allowed: "
                          "at most 0.9")
    for name, value in (("clip", clip), ("clip_hessian", clip_hessian)):
        if value is not None and not (isinstance(value, (int, float)) and value > 0 and math.isfinite(value)):
            raise ConfigError(f"{name} = {show(value)} is outside (0, inf): the noise is calibrated to a finite "
                              "clipping threshold")
    if not (isinstance(kappa, (int, float)) and 1.0 <= kappa <= 3.0):
        raise ConfigError(f"kappa = {show(kappa)} is outside [1, 3] (T = n^kappa steps: at least one pass)")
    if isinstance(max_steps, bool) or not (isinstance(max_steps, (int, np.integer)) and
                                           MIN_STEPS <= max_steps <= 2**53):
        raise ConfigError(f"max_steps = {show(max_steps)} is outside [{MIN_STEPS}, 2^53] (an integer)")
    if isinstance(batch_size, bool) or not (isinstance(batch_size, (int, np.integer)) and batch_size >= 1):
        raise ConfigError(f"batch_size = {show(batch_size)} is not an integer >= 1")
    if not (isinstance(c, (int, float)) and c > 0 and math.isfinite(c)):
        raise ConfigError(f"c = {show(c)} is outside (0, inf): the step size eta_t = c t^-gamma")
    if not (isinstance(gamma, (int, float)) and 0.5 < gamma < 1.0):
        # gamma = 1 passed this check once, and its intervals covered 0 of 40 seeds (eta_t = c / t forgets the
        # start only like t^-(c lambda))
        raise ConfigError(f"gamma = {show(gamma)} is outside (0.5, 1): the average needs 1/2 < gamma < 1 "
                          "(Xia et al. 2025)")
    if not (isinstance(level, (int, float)) and LEVEL_RANGE[0] <= level <= LEVEL_RANGE[1]):
        raise ConfigError(f"level = {show(level)} is outside [{LEVEL_RANGE[0]:g}, {LEVEL_RANGE[1]:g}] (the "
                          "random-scaling critical values)")
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0):
        raise ConfigError(f"seed = {show(seed)} is not an integer >= 0")
    return float(epsilon), accountant


# --- the raw data, answering its owner ------------------------------------------------------------------------


def check_batch_size(batch_size: int, n: int) -> None:
    """A batch no larger than the data."""
    if batch_size > n:
        raise ConfigError(f"batch_size = {batch_size} is outside [1, n] = [1, {n}]")


def check_shares(private: list[str], share_moments: float, share_scaling: float) -> None:
    """The shares of ``A~``, ``S~`` and a private scaling leave the path 0.1 of ``mu^2`` (less the clip histogram's)."""
    if private and share_moments + share_scaling > 0.9:
        raise ConfigError(f"share_moments + share_scaling = {share_moments + share_scaling:g} leaves the path less "
                          f"than 0.1 of the budget ({0.1 - SHARE_CLIP:g} after the clip histogram's {SHARE_CLIP:g}); "
                          "allowed: a sum of at most 0.9")


def check_magnitudes(raw: dict[str, np.ndarray], columns: list[str], given: dict, scaling: str) -> None:
    """Columns used as they are (scaling none or nonprivate) whose squares stay floats."""
    if scaling in ("none", "nonprivate"):
        too_big = [name for name in columns if name not in given and np.max(np.abs(raw[name])) > MAX_ABS]
        if too_big:
            raise ConfigError(f"column {too_big[0]!r} holds values beyond {MAX_ABS:g}, whose squares overflow; "
                              "scale it privately (the default) or give its --bounds")


# --- public quantities: n, d, the budget and the options ------------------------------------------------------


def step_sum(steps: int, gamma: float) -> float:
    """An upper bound on ``sum_{t <= T} t^-gamma``: ``1 + int_1^T t^-gamma dt`` (gamma < 1)."""
    return 1.0 + (steps ** (1.0 - gamma) - 1.0) / (1.0 - gamma)


def check_steps(steps: int) -> None:
    """At least :data:`~ldpsim.fit.options.MIN_STEPS` steps."""
    if steps < MIN_STEPS:
        raise ConfigError(f"T = min(n^kappa, max_steps) = {steps} steps is below {MIN_STEPS}: raise kappa or "
                          "max_steps")


def check_reach(c: float, clip: float, steps: int, gamma: float) -> None:
    """Clipped gradients that can carry the path :data:`MIN_REACH` from its start."""
    reach = c * clip * step_sum(steps, gamma)
    if not reach >= MIN_REACH:
        raise ConfigError(f"the path cannot move: the clipped gradients carry it at most c clip sum_t t^-gamma = "
                          f"{reach:.3g} from its start in T = {steps:,} steps (c = {show(c)}, clip = {clip:.4g}), "
                          f"less than {MIN_REACH:g} on the scaled data, so the intervals would sit around the start; "
                          "raise --clip or --c")


def check_rows_for_scaling(n: int, hist_sd: float, columns: int, mu_scaling: float, mu_total: float,
                           share_moments: float) -> None:
    """Rows enough for the private scaling's histograms of a normal column to stand above their noise."""
    need = sc.rows_needed(hist_sd)
    if n < need:
        raise ConfigError(_too_few_rows(n, need, columns, mu_scaling, hist_sd, mu_total, share_moments))


def _too_few_rows(n, need, columns, mu_scaling, hist_sd, mu_total, share_moments) -> str:
    """The refusal of a private scaling that cannot work at this n (public quantities only), with what would."""
    # the share whose noise SD makes rows_needed(sd) <= n: sd scales as 1 / mu, so as 1 / sqrt(share)
    share = (need / n) ** 2 * (mu_scaling / mu_total) ** 2
    advice = (f"--share-scaling {math.ceil(share * 100) / 100:g} or more" if share + share_moments <= 0.9 else
              "no share of this budget suffices")
    return (f"n = {n} rows are too few for the private scaling of {columns} column{'s' if columns > 1 else ''} at "
            f"this budget: its histograms get noise SD {hist_sd:.3g} per count, and a normal column needs about "
            f"{need} rows for them to stand above it; give public --bounds, {advice}, or a larger budget (decided "
            "from n, the budget and the number of columns only: no value of the data enters it)")


def check_split(floor: float, target: float, accountant: str, delta: float, extra: float, private: bool,
                share_moments: float, share_scaling: float) -> None:
    """The further releases alone (``floor``, by the accountant) leave the path some of the target."""
    if floor >= target:
        raise ConfigError(f"A~ and S~{' and the scaling' if private else ''} (shares "
                          f"{share_moments:g}{f' + {share_scaling:g}' if private else ''} of mu^2, with the clip "
                          f"histogram's {SHARE_CLIP:g}) alone "
                          f"are epsilon = {floor:.4g} by the {accountant} accountant at delta = {delta:g} (exactly "
                          f"{gdp_epsilon(extra, delta):.4g} as Gaussian mechanisms; the accountant's conversion "
                          f"loses), leaving nothing of epsilon = {target:.4g} for the path: lower --share-moments"
                          f"{' or --share-scaling' if private else ''}")


# --- what was released privately: the path, A~ and S~ ---------------------------------------------------------


def covered(target: float, delta: float) -> str:
    """The tail of a refusal decided from the private release: the budget that covers it."""
    return f"(this refusal reads only the private release, covered by its ({target:.3g}, {delta:g})-DP budget)"


def check_path(finite: bool, c: float, clip: float, sigma1: float) -> None:
    """A path that stayed finite."""
    if not finite:
        # which one to lower: the noise alone (public) overflows the path when c sigma_1 is astronomical
        blame = "lower clip" if c * sigma1 > 1e100 else "lower c"
        raise ConfigError(f"DP-SGD overflowed on these data (c = {show(c)}, clip = {clip:.4g}: noise SD per step "
                          f"c sigma_1 = {c * sigma1:.3g} at the first step): {blame}")


def check_moments(a_t: np.ndarray, sd_a: float, names: list[str], given: dict, n: int, steps: int, c: float,
                  gamma: float, whole: str) -> float:
    """The private ``A~`` against its noise and the path; returns its smallest eigenvalue.

    In this order: a covariate with public bounds that ``A~`` cannot tell from
    the intercept, ``A~`` swamped by its noise, a path that cannot forget its
    start along ``A~``'s flattest direction, a path that oscillates.
    """
    d = len(names) + 1
    # a column with public bounds first: its specific message
    for j, name in enumerate(names if np.isfinite(a_t).all() and a_t[0, 0] > 0 else [], start=1):
        if name in given:  # only public bounds can make a column constant: the private scaling sees its spread
            m = a_t[0, j] / a_t[0, 0]
            spread = a_t[j, j] - a_t[0, j] * m
            if not spread >= CONSTANT_Z * sd_a * math.sqrt(1.0 + 4.0 * m * m + m ** 4):
                raise ConfigError(f"column {name!r} spreads too little within its --bounds "
                                  f"{given[name][0]:g}:{given[name][1]:g} for the private A~ to tell it from the "
                                  f"intercept (its spread on the bounds' scale must stand {CONSTANT_Z:g} noise SDs, "
                                  f"{sd_a:.3g} each at n = {n}, above 0): the column is (nearly) constant, or the "
                                  "bounds are much wider than it is; give bounds that the column spreads across, let "
                                  f"it be scaled privately, or raise n or the budget {whole}")
    # noise that swamps the curvature: a positive semi-definite A plus symmetric noise of SD sd per entry has
    # its smallest eigenvalue within about N(0, 1.2 sd^2) of A's unless many directions of A are near null, so
    # below -3 sd the noise dominates (60 covariates at n = 2000: -4.1 sd), and the sandwich would put its floor
    # in place of the loss's curvature there. Refusing at 0 refused 3 of 6 seeds of the Fair data (two
    # covariates correlated 0.89; A~'s smallest eigenvalue about 1.5 sd), whose intervals are in the docs
    lowest = float(np.min(np.linalg.eigvalsh((a_t + a_t.T) / 2.0))) if np.isfinite(a_t).all() else math.nan
    if not lowest >= -NOISE_FLOOR * sd_a:
        raise ConfigError(f"too few rows for this budget and {d} coefficients: the noise of the private A~ (SD "
                          f"{sd_a:.3g} per entry, public) swamps the loss's curvature (A~'s smallest eigenvalue is "
                          f"{lowest:.3g}, more than {NOISE_FLOOR:g} noise SDs below 0), so the intervals' variance "
                          f"cannot be read from it; raise n or the budget, give more to A~ and S~ "
                          f"(--share-moments), or use fewer covariates {whole}")
    # a path that cannot forget its start along its flattest direction: there the distance from the start
    # shrinks like exp(-c lambda sum_t t^-gamma), and the average keeps about 2 / R^2 of it with R that sum
    # times c lambda (gamma near 1/2). lambda is A~'s smallest eigenvalue or, below it, its noise SD, as the
    # sandwich takes it (unscaled columns of mean 50 and SD 10 gave R = 3.6 at T = n^1.2, and intervals that
    # excluded the truth in 3 of 6 seeds while the settle ratio saw nothing: the path had not moved)
    flattest = max(lowest, sd_a)
    forget = c * flattest * step_sum(steps, gamma)
    if forget < MIN_FORGET:
        raise ConfigError(f"the path cannot forget its start along its flattest direction in T = {steps:,} steps: "
                          f"c lambda sum_t t^-gamma = {forget:.3g} < {MIN_FORGET:g} (lambda = {flattest:.3g}, the "
                          f"private A~'s smallest curvature or its noise SD), so the average would still carry its "
                          f"start; raise T (--kappa, --max-steps) or c, or let the columns be scaled {whole}")
    # a path whose last steps are longer than 2 / curvature oscillates instead of settling (read off the
    # private A~, so the check releases nothing more)
    last_step = c * steps ** -gamma
    curvature = float(np.max(np.linalg.eigvalsh(a_t)))
    if last_step * curvature > 2.0:
        raise ConfigError(f"c = {show(c)} is too large: the last step c T^-gamma = {last_step:.3g} times the "
                          f"loss's curvature (largest eigenvalue of the private A~, {curvature:.3g}) exceeds 2, so "
                          "DP-SGD oscillates instead of converging; lower c")
    return lowest


def check_settled(settle: np.ndarray, names: list[str], whole: str) -> float:
    """A path that settled: its settle ratio at most :data:`SETTLE_RATIO` in every coordinate; returns the largest."""
    worst = float(np.max(settle)) if np.all(np.isfinite(settle)) else math.inf
    if not worst <= SETTLE_RATIO:
        j = int(np.argmax(np.where(np.isfinite(settle), settle, np.inf)))
        raise ConfigError(f"the path did not settle: the average's fluctuation along the path (random scaling) is "
                          f"{worst:.3g} times what the private A~ and S~ say it should be for "
                          f"{(['the intercept'] + names)[j]} (at most {SETTLE_RATIO:g} once settled), so neither "
                          f"interval would cover; raise n, the budget or T (--kappa, --max-steps), or use fewer "
                          f"covariates {whole}")
    return worst


def check_original_scale(estimate: np.ndarray, intervals: dict[str, np.ndarray]) -> None:
    """Coefficients and intervals that stay doubles on the original scale."""
    if not (np.isfinite(estimate).all() and all(np.isfinite(b).all() for b in intervals.values())):
        raise ConfigError("the coefficients on the original scale are beyond the doubles (a response scale over a "
                          "covariate scale that overflows); rescale the columns (e.g. change units) and rerun")


__all__ = ["CONSTANT_Z", "MIN_FORGET", "MIN_REACH", "NOISE_FLOOR", "PLUGIN_SETTLE", "SETTLE_RATIO", "check_batch_size",
           "check_magnitudes", "check_moments", "check_options", "check_original_scale", "check_path",
           "check_reach", "check_rows_for_scaling", "check_settled", "check_shares", "check_split", "check_steps",
           "covered", "step_sum"]

"""``ldpsim fit``: DP-SGD and its private intervals on a user's CSV file, private as a whole by default.

Reads a CSV file (:mod:`.fitdata`), scales the columns (:mod:`ldpsim.privacy.scaling`),
fits a linear or logistic model with an intercept by DP-SGD (002's
Algorithm 1 with per-example clipping), and releases

* the scaling of every column that is not given public bounds: a private
  centre and scale from Gaussian histograms that adapt to the column's
  location and spread (default), the public bounds of ``bounds``, the
  columns as they are (``scaling = 'none'``: the user states they are on a
  public scale), or, only when asked (``scaling = 'nonprivate'``), the
  sample means and SDs, which the guarantee then does NOT cover;
* ``theta_bar_T`` of DP-SGD (``T = min(n^kappa, max_steps)`` steps, batches of
  ``m`` by ``sampling``);
* the private ``A~``, ``S~`` and from them the corrected plug-in and
  random-scaling intervals (:mod:`ldpsim.inference.dpsgd`), mapped back to
  the original scale (slopes over the covariate's scale, times the
  response's for linear; the intercept at the scaling centres).

**The budget is the whole release's.** ``epsilon`` at ``delta`` (or ``mu``-GDP,
read at ``delta``) is split over the parts in the Gaussian-DP scale, where
composition adds ``mu^2``: with ``mu_T`` the GDP parameter of ``(epsilon,
delta)`` on its own, ``A~`` and ``S~`` together get ``mu = sqrt(share_moments)
mu_T``, the scaling histograms ``sqrt(share_scaling) mu_T`` (exact Gaussian
mechanisms), and the path the rest: its noise is solved so that the
accountant's epsilon of everything is within 1% of the target. The printed
guarantee is ``(epsilon, delta)``-DP by that accountant under replace-one
neighbours (data sets of the same ``n`` differing in one row: ``n``, ``T`` and
the sampling rate ``m / n`` are public): RDP for batches without replacement
(:func:`ldpsim.privacy.accountants.calibrate_sigma` with ``whole=True``), PLD for
Poisson batches (:func:`ldpsim.privacy.poisson.poisson_epsilons`: dp-accounting's replace-one PLD of
the Poisson-subsampled Gaussian; an add/remove guarantee would not cover a
release whose ``T`` and rate are functions of ``n``). The CLT's figure for the
same noise is printed beside it as a comparison (an approximation, not a
bound). Cyclic passes are refused: with noise, each pass costs budget and
the intervals, derived for random batches, do not cover.

**When the release would be unreliable, fit says so instead of printing an
interval**, and decides it from public or private quantities only, so that the
refusal itself is covered by the guarantee (it is post-processing of what was
released up to that point; a refusal on the raw data would be a release of
its own):

* from public quantities (``n``, ``d``, the budget and the options), before any
  statistic of the values is computed: a path the clipped gradients cannot carry :data:`MIN_REACH` from
  its start (``c clip sum_t t^-gamma``), fewer rows than the private scaling
  needs for a normal column at this budget (:func:`ldpsim.privacy.scaling.rows_needed`);
* from the released scaling histograms: a histogram that shows nothing above
  its noise (:class:`~ldpsim.privacy.scaling.ScalingFailed`);
* from the private ``A~`` and the path: a covariate with public ``bounds``
  whose variance, read off ``A~``, is within :data:`CONSTANT_Z` noise SDs of 0
  (bounds that clip every value); ``A~`` whose noise (SD ``sd`` per entry,
  public) swamps the loss's curvature, its smallest eigenvalue more than
  :data:`NOISE_FLOOR` noise SDs below 0, where :func:`~ldpsim.inference.dpsgd.sandwich`
  would floor it and make up the variance (too few rows for this budget and
  ``d``: 60 covariates at n = 2000); a path that cannot forget its start along
  ``A~``'s flattest direction (``c lambda sum_t t^-gamma`` below
  :data:`MIN_FORGET`); a path that oscillates (last step times the curvature above 2); a path that did not
  settle (the random-scaling variance, read off the path, more than
  :data:`SETTLE_RATIO` times what ``A~`` and ``S~`` say it should be, far
  beyond the pivot's law). Between :data:`PLUGIN_SETTLE` (the law's 99% point)
  and that, only the plug-in interval is withheld, with a note: its variance
  (*) is then too small (clipping along a noisy path flattens the loss the path
  sees), while random scaling reads the variance off the path.

Before calibrating, fit also asks the accountant what ``A~``, ``S~`` and the
scaling cost alone: RDP's conversion loses against their exact Gaussian
figure, and a split that leaves the path nothing is named as such.

Bad input raises :class:`~ldpsim.engine.errors.ConfigError` with one line,
before any work on the data where it can: the options, the file
(:func:`.fitdata.read_table`, whose messages leave data values out unless
``show_values``), collinear covariates or separated logistic data
(:func:`.fitdata.check_design`). Those checks read the raw data and answer its
owner; the guarantee covers a run on data that passes them.
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field

import numpy as np
from tabulate import tabulate

from ...engine.config import show
from ...engine.errors import ConfigError, ConfigWarning
from ...engine.rng import as_generator
from ...inference import dpsgd as dpi
from ...inference.intervals import normal_quantile
from ...inference.streaming import StreamLayout
from ...privacy import scaling as sc
from ...privacy.accountants import DESCRIPTION, IS_BOUND, SIGMA_CAP, calibrate_sigma, check_supported, epsilon_pair
from ...privacy.clt import step_noise_sd
from ...privacy.gdp import gdp_epsilon, gdp_mu
from ...privacy.poisson import poisson_calibrate, poisson_epsilons
from . import glm
from .calibration import SHARE_MOMENTS  # (the study's budget_of = release shares the budget as fit does)
from .fitdata import MAX_ABS, check_design, parse_number, read_table
from .kernel import run_dpsgd

#: Default cap on the number of DP-SGD steps (``T = n^2`` for a large ``n`` would take long).
MAX_STEPS = 100_000_000
#: Smallest number of steps (the random-scaling interval needs a path).
MIN_STEPS = 100
#: Default share of the GDP budget ``mu^2`` for the private scaling (A~ and S~: :data:`.calibration.SHARE_MOMENTS`).
SHARE_SCALING = 0.1
#: Budgets (epsilon at delta) the accountants are asked to calibrate to (as the dpsgd study's).
EPSILON_RANGE = (1e-3, 100.0)
#: Confidence levels the random-scaling critical values cover.
LEVEL_RANGE = (0.05, 0.9999)
SCALINGS = ("private", "none", "nonprivate")
#: The accountant of each sampling scheme fit accepts (replace-one neighbours; see the module docstring).
FIT_ACCOUNTANTS = {"swor": ("rdp", "clt"), "poisson": ("pld",)}
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


@dataclass
class FitResult:
    """What ``ldpsim fit`` releases and prints.

    ``releases`` lists every released quantity's mechanism and noise (what
    the accountant composed), so that the guarantee can be checked from the
    outside: ``{"what": "path", "sampling", "sigma", "steps", "n", "batch_size",
    "relation"}``, ``{"what": "moments", "mu"}``, ``{"what": "scaling", "mu",
    "columns", "histograms", "noise_sd"}``. ``seed`` is the seed the noise was
    drawn from (fresh entropy unless one was given): never print it next to a
    release.
    """

    model: str
    names: list[str]
    estimate: np.ndarray
    intervals: dict[str, np.ndarray]  # method -> (p, 2), original scale
    level: float
    guarantee: list[str]
    settings: dict
    epsilon: float = math.nan
    delta: float = math.nan
    accountant: str = ""
    private: bool = True
    releases: list[dict] = field(default_factory=list)
    scales: list = field(default_factory=list)
    nonprivate: tuple | None = None
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    seed: int | None = field(default=None, repr=False)
    diagnostics: dict = field(default_factory=dict)

    def rows(self) -> list[dict]:
        out = []
        for j, name in enumerate(self.names):
            row = {"coefficient": name, "estimate": float(self.estimate[j])}
            for method, bounds in self.intervals.items():
                row[f"{method}_lower"], row[f"{method}_upper"] = float(bounds[j, 0]), float(bounds[j, 1])
            if self.nonprivate is not None:
                row["full_sample"] = float(self.nonprivate[0][j])
                row["full_sample_lower"], row["full_sample_upper"] = (float(self.nonprivate[1][j, 0]),
                                                                      float(self.nonprivate[1][j, 1]))
            out.append(row)
        return out

    def render(self) -> str:
        pct = f"{100 * self.level:g}%"
        head = ["coefficient", "estimate"] + [f"{m} {pct} interval" for m in self.intervals]
        body = []
        for j, name in enumerate(self.names):
            line = [name, f"{self.estimate[j]:.4g}"]
            line += [f"[{b[j, 0]:.4g}, {b[j, 1]:.4g}]" for b in self.intervals.values()]
            body.append(line)
        if self.nonprivate is not None:
            head += ["full sample (NOT private)", f"its {pct} interval"]
            for j, line in enumerate(body):
                line += [f"{self.nonprivate[0][j]:.4g}",
                         f"[{self.nonprivate[1][j, 0]:.4g}, {self.nonprivate[1][j, 1]:.4g}]"]
        # what the guarantee does not cover comes before anything it would seem to vouch for
        first = [line for line in self.guarantee if line.startswith("NOT private")]
        rest = [line for line in self.guarantee if not line.startswith("NOT private")]
        text = first + [f"DP-SGD {self.model} regression: " + ", ".join(f"{k} = {v}" for k, v in self.settings.items()),
                        tabulate(body, head, tablefmt="github", disable_numparse=True)]
        text += rest + self.notes
        return "\n".join(text)


def _check_options(model, epsilon, mu, delta, accountant, sampling, share_moments, share_scaling, scaling, clip,
                   clip_hessian, kappa, max_steps, batch_size, c, gamma, level, seed) -> tuple[float, str]:
    """One-line errors for the options, before the data are read; returns the target epsilon and the accountant."""
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


def _parse_bounds(bounds, names, response=None) -> dict[str, tuple[float, float]]:
    """``{"age": (18, 100)}`` from a mapping or ``["age=18:100", ...]``, for columns of the fit (each once)."""
    if not bounds:
        return {}
    if isinstance(bounds, str):
        bounds = [bounds]
    items = list(bounds.items()) if isinstance(bounds, dict) else []
    if not isinstance(bounds, dict):
        for text in bounds:
            # the last '=' splits: a column may be named "a=b"
            name, sep, rng = str(text).rpartition("=")
            lo, sep2, hi = rng.partition(":")
            try:
                if not (sep and sep2):
                    raise ValueError
                items.append((name.strip(), (parse_number(lo), parse_number(hi))))
            except ValueError:
                raise ConfigError(f"bounds {text!r} is not COLUMN=LOW:HIGH with decimal numbers (e.g. "
                                  "age=18:100)") from None
    out = {}
    for name, pair in items:
        if name == response and name not in names:
            raise ConfigError(f"bounds given for the response {name!r}, which the logistic model does not scale "
                              "(it is 0/1)")
        if name not in names:
            raise ConfigError(f"bounds given for {name!r}, which is not a column of the fit ({', '.join(names)})")
        if name in out:
            raise ConfigError(f"bounds given twice for {name!r} ({out[name][0]:g}:{out[name][1]:g} and "
                              f"{pair[0]:g}:{pair[1]:g}): give each column's once")
        lo, hi = pair
        if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and math.isfinite(lo)
                and math.isfinite(hi) and lo < hi):
            raise ConfigError(f"bounds of {name!r} = {lo}:{hi}: need finite LOW < HIGH")
        out[name] = (float(lo), float(hi))
    return out


def _step_sum(steps: int, gamma: float) -> float:
    """An upper bound on ``sum_{t <= T} t^-gamma``: ``1 + int_1^T t^-gamma dt`` (gamma < 1)."""
    return 1.0 + (steps ** (1.0 - gamma) - 1.0) / (1.0 - gamma)


# --- the fit ------------------------------------------------------------------------------------------------


def fit(path, model: str = "linear", response: str = "y", covariates: list[str] | None = None, *,
        epsilon: float | None = None, delta: float = 1e-5, mu: float | None = None, accountant: str | None = None,
        sampling: str = "swor", share_moments: float = SHARE_MOMENTS, share_scaling: float = SHARE_SCALING,
        scaling: str = "private", bounds=None, clip: float | None = None, clip_hessian: float | None = None,
        kappa: float = 2.0, max_steps: int = MAX_STEPS, batch_size: int = 1, c: float = 0.2, gamma: float = 0.501,
        level: float = 0.95, seed=None, show_nonprivate: bool = False, show_values: bool = False,
        show_seed: bool = False) -> FitResult:
    """Fit ``model`` by DP-SGD on the CSV file ``path``; see the module docstring.

    Parameters
    ----------
    epsilon, delta, mu
        The whole release's budget: ``(epsilon, delta)``, or ``mu``-GDP read at
        ``delta``; one of ``epsilon`` and ``mu`` is required.
    accountant : {'rdp', 'pld', 'clt'}, optional
        Default: the valid one for ``sampling`` (rdp for swor, pld for
        poisson); ``clt`` (swor only) calibrates by 002's approximation, and
        the guarantee line then says it is not a bound.
    sampling : {'swor', 'poisson'}
        ``cyclic`` is refused (module docstring).
    share_moments, share_scaling : float
        Shares of the GDP budget ``mu^2`` for ``A~`` and ``S~``, and for the
        private scaling (used, and checked, only if some column is scaled
        privately); together at most 0.9.
    scaling : {'private', 'none', 'nonprivate'}
        How columns without ``bounds`` are scaled (module docstring).
    bounds : dict or list of str, optional
        Public bounds per column, ``{"age": (18, 100)}`` or ``["age=18:100"]``
        (the response too, for linear), each column once.
    seed : int, optional
        ``None`` (default) draws fresh entropy. A fixed seed makes the noise
        reproducible: the guarantee then holds only while the seed is secret
        (whoever has it can redraw the noise and subtract it).
    show_nonprivate : bool
        Also compute the full-sample fit and the share of clipped gradients
        (NOT private, labelled so).
    show_values : bool
        Put data values and row numbers into the error messages (not for logs:
        :mod:`.fitdata`).
    show_seed : bool
        Add the seed drawn to the notes (so the owner can reproduce the run;
        it must stay as secret as the data).
    """
    target, accountant = _check_options(model, epsilon, mu, delta, accountant, sampling, share_moments,
                                        share_scaling, scaling, clip, clip_hessian, kappa, max_steps, batch_size, c,
                                        gamma, level, seed)
    tic = time.perf_counter()
    names, raw_x, raw_y = read_table(path, response, covariates, model, show_values)
    n, p = raw_x.shape
    if batch_size > n:
        raise ConfigError(f"batch_size = {batch_size} is outside [1, n] = [1, {n}]")
    columns = names + ([response] if model == "linear" else [])
    given = _parse_bounds(bounds, columns, response)
    private_columns = [name for name in columns if name not in given] if scaling == "private" else []
    if private_columns and share_moments + share_scaling > 0.9:
        raise ConfigError(f"share_moments + share_scaling = {share_moments + share_scaling:g} leaves the path less "
                          "than 0.1 of the budget; allowed: a sum of at most 0.9")
    raw = {name: raw_x[:, j] for j, name in enumerate(names)}
    if model == "linear":
        raw[response] = raw_y
    if scaling in ("none", "nonprivate"):
        too_big = [name for name in columns if name not in given and np.max(np.abs(raw[name])) > MAX_ABS]
        if too_big:
            raise ConfigError(f"column {too_big[0]!r} holds values beyond {MAX_ABS:g}, whose squares overflow; "
                              "scale it privately (the default) or give its --bounds")
    check_design(names, raw_x, raw_y, model)

    # --- public checks: the budget split, the steps, how far the path can go, rows for the scaling
    mu_total = gdp_mu(target, delta)
    mu_moments = math.sqrt(share_moments) * mu_total
    mu_scaling = math.sqrt(share_scaling) * mu_total if private_columns else 0.0
    extra = math.hypot(mu_moments, mu_scaling)
    d = p + 1
    steps = int(min(float(n) ** kappa, max_steps))
    if steps < MIN_STEPS:
        raise ConfigError(f"T = min(n^kappa, max_steps) = {steps} steps is below {MIN_STEPS}: raise kappa or "
                          "max_steps")
    clip = clip if clip is not None else (3.0 if model == "linear" else 1.5) * math.sqrt(d)
    clip_hessian = clip_hessian if clip_hessian is not None else (5.0 if model == "linear" else 1.25) * d
    reach = c * clip * _step_sum(steps, gamma)
    if not reach >= MIN_REACH:
        raise ConfigError(f"the path cannot move: the clipped gradients carry it at most c clip sum_t t^-gamma = "
                          f"{reach:.3g} from its start in T = {steps:,} steps (c = {show(c)}, clip = {clip:.4g}), "
                          f"less than {MIN_REACH:g} on the scaled data, so the intervals would sit around the start; "
                          "raise --clip or --c")
    hist_sd = sc.histogram_noise_sd(len(private_columns), mu_scaling) if private_columns else math.nan
    if private_columns:
        need = sc.rows_needed(hist_sd)
        if n < need:
            raise ConfigError(_too_few_rows(n, need, len(private_columns), mu_scaling, hist_sd, mu_total,
                                            share_moments))
    if delta >= 1.0 / n:
        warnings.warn(f"delta = {delta:g} >= 1/n = {1.0 / n:.3g}: a release that publishes one random row outright "
                      "is (0, 1/n)-DP, so such a delta protects nobody; take delta well below 1/n", ConfigWarning,
                      stacklevel=2)
    if sampling == "swor":
        # RDP's conversion to (epsilon, delta) loses against the Gaussians' exact figure: ask it what the further
        # releases alone cost (beside a path of the largest noise it is asked at), so that a split it cannot
        # meet is named as such
        floor = epsilon_pair(accountant, sampling, SIGMA_CAP, steps, n, batch_size, delta, extra)[1]
        if floor >= target:
            raise ConfigError(f"A~ and S~{' and the scaling' if private_columns else ''} (shares "
                              f"{share_moments:g}{f' + {share_scaling:g}' if private_columns else ''} of mu^2) alone "
                              f"are epsilon = {floor:.4g} by the {accountant} accountant at delta = {delta:g} (exactly "
                              f"{gdp_epsilon(extra, delta):.4g} as Gaussian mechanisms; the accountant's conversion "
                              f"loses), leaving nothing of epsilon = {target:.4g} for the path: lower --share-moments"
                              f"{' or --share-scaling' if private_columns else ''}")
    try:
        if sampling == "poisson":
            sigma = poisson_calibrate(target, delta, steps, n, batch_size, extra)
        else:
            sigma = calibrate_sigma(target, delta, accountant, sampling, steps, n, batch_size, extra_mu=extra,
                                    whole=True)
    except ValueError as exc:
        raise ConfigError(f"epsilon = {target:.4g} at delta = {delta:g} cannot be reached by the {accountant} "
                          f"accountant for T = {steps} steps of {batch_size} of n = {n}: {exc}") from None

    # --- scaling, with the first draws of the generator
    fixed_seed = seed is not None
    seed = int(seed) if fixed_seed else int(np.random.SeedSequence().entropy)
    gen = as_generator(seed)
    scales = {}
    for name in columns:
        if name in given:
            scales[name] = sc.bounds_scaling(name, *given[name])
        elif scaling == "private":
            try:
                scales[name] = sc.private_scaling(name, raw[name], hist_sd, gen)
            except sc.ScalingFailed as exc:
                raise ConfigError(f"the private scaling of column {name!r} failed: {exc} (noise SD {hist_sd:.3g} "
                                  f"per count, n = {n}); give its public --bounds, more of the budget to the scaling "
                                  "(--share-scaling) or a larger budget. This refusal reads only the released "
                                  f"histograms: covered by the scaling's share, epsilon = "
                                  f"{gdp_epsilon(mu_scaling, delta):.3g} at delta = {delta:g}") from None
        elif scaling == "none":
            scales[name] = sc.identity_scaling(name)
        else:
            scales[name] = sc.nonprivate_scaling(name, raw[name])
    X = np.column_stack([np.ones(n)] + [scales[name].apply(raw[name]) for name in names])
    X = np.ascontiguousarray(X)
    y = scales[response].apply(raw_y) if model == "linear" else raw_y.copy()
    xnorm = np.sqrt(np.einsum("ij,ij->i", X, X))

    # --- the path, A~ and S~, the intervals
    sigma1 = step_noise_sd(sigma, clip, batch_size, sampling) if sigma > 0 else 0.0
    layout = StreamLayout.build(steps, 0.75, gamma, blocks=False, batches=False)
    with np.errstate(over="ignore", invalid="ignore"):
        state, clip_rate = run_dpsgd(gen, X, y, xnorm, model, sampling, steps, batch_size, c, gamma, clip, sigma1,
                                     0.0, layout)
    if not state.finite(steps):
        # which one to lower: the noise alone (public) overflows the path when c sigma_1 is astronomical
        blame = "lower clip" if c * sigma1 > 1e100 else "lower c"
        raise ConfigError(f"DP-SGD overflowed on these data (c = {show(c)}, clip = {clip:.4g}: noise SD per step "
                          f"c sigma_1 = {c * sigma1:.3g} at the first step): {blame}")
    theta_bar = state.theta_bar
    a_t, s_t, sd_a = glm.private_moments(gen, model, X, y, xnorm, theta_bar, clip, clip_hessian, mu_moments)
    whole = f"(this refusal reads only the private release, covered by its ({target:.3g}, {delta:g})-DP budget)"
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
    forget = c * flattest * _step_sum(steps, gamma)
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
    v_t, a_inv2 = dpi.sandwich(a_t, s_t, floor=sd_a)
    v_d, a_d = np.diag(v_t), np.diag(a_inv2)
    f = dpi.sampling_factor(sampling, n, batch_size)
    common = dict(sigma1=sigma1, k=steps / n, m=batch_size, f=f)
    v_hat = dpi.random_scaling_variance(state.sn_v, batch_size)
    # the path's own fluctuation against what A~ and S~ say it should be: 6 V^ / (f V + m sigma_1^2 A^-2) is
    # 6 int (W - rW(1))^2 in the limit (mean 1); far beyond, the average still carries its transient
    with np.errstate(divide="ignore", invalid="ignore"):
        settle = 6.0 * v_hat / (f * v_d + batch_size * sigma1 * sigma1 * a_d)
    worst = float(np.max(settle)) if np.all(np.isfinite(settle)) else math.inf
    if not worst <= SETTLE_RATIO:
        j = int(np.argmax(np.where(np.isfinite(settle), settle, np.inf)))
        raise ConfigError(f"the path did not settle: the average's fluctuation along the path (random scaling) is "
                          f"{worst:.3g} times what the private A~ and S~ say it should be for "
                          f"{(['the intercept'] + names)[j]} (at most {SETTLE_RATIO:g} once settled), so neither "
                          f"interval would cover; raise n, the budget or T (--kappa, --max-steps), or use fewer "
                          f"covariates {whole}")
    intervals = {
        "plug-in": np.column_stack(dpi.plugin(theta_bar, v_d, a_d, n=n, level=level, corrected=True, **common)),
        "random scaling": np.column_stack(dpi.random_scaling(
            theta_bar, v_hat, n=n, level=level, factor=dpi.random_scaling_factor(v_d, a_d, **common))),
    }
    withheld = None
    if worst > PLUGIN_SETTLE:
        del intervals["plug-in"]
        j = int(np.argmax(settle))
        withheld = (f"The plug-in interval is not shown: the path fluctuates {worst:.3g} times as much as the private "
                    f"A~ and S~ predict for {(['the intercept'] + names)[j]} (at most {PLUGIN_SETTLE:g} in 99% of "
                    "settled paths), so its variance would be too small (clipping along a noisy path flattens the "
                    "loss the path sees); the random-scaling interval reads the variance off the path. More rows, "
                    "budget or a lower --kappa (fewer, less noisy steps) bring it back.")
    # back to the original scale: slope_j = theta_j s_y / s_j; the intercept at the scaling centres
    s_y = scales[response].scale if model == "linear" else 1.0
    c_y = scales[response].centre if model == "linear" else 0.0
    with np.errstate(over="ignore", invalid="ignore"):
        scale = np.array([s_y] + [s_y / scales[name].scale for name in names])
        shift = np.zeros(d)
        shift[0] = c_y
        estimate = theta_bar * scale + shift
        intervals = {m: b * scale[:, None] + shift[:, None] for m, b in intervals.items()}
    if not (np.isfinite(estimate).all() and all(np.isfinite(b).all() for b in intervals.values())):
        raise ConfigError("the coefficients on the original scale are beyond the doubles (a response scale over a "
                          "covariate scale that overflows); rescale the columns (e.g. change units) and rerun")
    labels = ["const (at the scaling centres)"] + names
    nonprivate = _nonprivate_fit(model, raw_x, raw_y, [scales[name].centre for name in names], level) \
        if show_nonprivate else None

    # --- what the release is, and its guarantee
    if sampling == "poisson":
        alone, total = poisson_epsilons(sigma, steps, n, batch_size, delta, extra)
        clt_total = math.nan
    else:
        alone, total = epsilon_pair(accountant, sampling, sigma, steps, n, batch_size, delta, extra)
        clt_total = epsilon_pair("clt", sampling, sigma, steps, n, batch_size, delta, extra)[1]
    releases = [{"what": "path", "sampling": sampling, "sigma": sigma, "steps": steps, "n": n,
                 "batch_size": batch_size, "relation": "replace-one"},
                {"what": "moments", "mu": mu_moments}]
    if private_columns:
        releases.append({"what": "scaling", "mu": mu_scaling, "columns": len(private_columns),
                         "histograms": sc.HISTOGRAMS * len(private_columns), "noise_sd": hist_sd})
    guarantee = _guarantee_lines(accountant, sampling, total, delta, target, steps, batch_size, n, sigma, sigma1,
                                 clip, alone, mu_moments, mu_scaling, private_columns, share_moments, share_scaling,
                                 clt_total, scaling, given)
    notes = [withheld] if withheld else []
    if show_nonprivate:  # the share clipped is a statistic of the data that no accountant above covers
        notes.append(f"Clipped per-example gradients along the path: {100 * clip_rate:.2g}% (clip = {clip:.4g} on "
                     "the scaled data); NOT private: shown for diagnosis only.")
    if given:
        notes.append(f"Scaled by the public bounds given: {', '.join(given)} (values outside them clipped: the "
                     "coefficients are those of the clipped columns, so bounds that clip many values change them).")
    if given and show_nonprivate:  # the share outside the bounds is a statistic of the data, as the clip rate
        shares = [f"{name} {100 * np.mean((raw[name] < given[name][0]) | (raw[name] > given[name][1])):.2g}%"
                  for name in given]
        notes.append(f"Values outside the public bounds, clipped: {', '.join(shares)}; NOT private: shown for "
                     "diagnosis only.")
    if private_columns:
        shown = "; ".join(f"{s.name}: centre {s.centre:.4g}, scale {s.scale:.4g}, range [{s.lo:.4g}, {s.hi:.4g}]"
                          for s in (scales[name] for name in private_columns))
        notes.append(f"Private scaling (released; values outside each range clipped): {shown}.")
    if nonprivate is not None:
        notes.append("The full-sample fit (OLS / logistic MLE on the raw columns, intercept at the same centres) is "
                     "NOT private: shown for comparison only.")
    if fixed_seed:
        notes.append("The noise was drawn from the seed given: the guarantee holds only while that seed is secret "
                     "(whoever has it can redraw the noise and subtract it).")
    elif show_seed:
        notes.append(f"Seed drawn: {seed} (keep it as secret as the data: with it the noise can be redrawn and "
                     "subtracted; never publish it with the release).")
    settings = {"n": n, "T": f"{steps:,}", "m": batch_size, "sampling": sampling, "c": c, "gamma": gamma,
                "clip": f"{clip:.4g}"}
    diagnostics = {"lowest_eigenvalue": lowest, "noise_sd": sd_a, "settle": worst, "sigma1": sigma1}
    return FitResult(model, labels, estimate, intervals, level, guarantee, settings, total, delta, accountant,
                     scaling != "nonprivate", releases, [scales[name] for name in columns], nonprivate,
                     time.perf_counter() - tic, notes, seed, diagnostics)


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


def _guarantee_lines(accountant, sampling, total, delta, target, steps, m, n, sigma, sigma1, clip, alone, mu_moments,
                     mu_scaling, private_columns, share_moments, share_scaling, clt_total, scaling, given):
    parts = [f"the DP-SGD path ({steps:,} steps, batches of {m} of n = {n} by {sampling}, noise multiplier "
             f"{sigma:.4g}: N(0, {sigma1:.4g}^2) per coordinate on the mean gradient clipped at {clip:.4g})",
             "the private A~ and S~ behind the intervals"]
    if private_columns:
        parts.append(f"the private scaling of {len(private_columns)} column{'s' if len(private_columns) > 1 else ''}")
    kind = "a valid upper bound" if IS_BOUND[accountant] else "an APPROXIMATION, NOT a privacy guarantee"
    lines = []
    if scaling == "nonprivate":
        lines.append("NOT private: the columns were scaled by their sample means and SDs (scaling = nonprivate), "
                     "which no guarantee covers. The figures below cover only the other parts of the release.")
    who = ("replace-one neighbours: data sets of the same size n differing in one row; n, T and the rate m/n are "
           "public" if sampling == "poisson" else "replace-one neighbours: data sets differing in one row")
    name = DESCRIPTION[accountant].split(':')[0]
    if sampling == "poisson":
        name += " with replace-one neighbours"
    lines.append(f"Privacy: ({total:.4g}, {delta:g})-DP by {name} ({kind}; {who}), for the whole release: "
                 + ", ".join(parts[:-1]) + " and " + parts[-1] + f". Target: epsilon = {target:.4g}.")
    split = (f"Budget split in Gaussian DP (mu^2 adds under composition; mu = {gdp_mu(target, delta):.4g} for the "
             f"target): A~ and S~ {share_moments:g} of mu^2 (mu = {mu_moments:.4g}, exact Gaussian mechanisms)")
    if private_columns:
        split += f", scaling {share_scaling:g} (mu = {mu_scaling:.4g})"
    split += (f", the path the rest, solved by the accountant: the path alone is epsilon = {alone:.4g}, A~ and S~ "
              f"alone {gdp_epsilon(mu_moments, delta):.4g}")
    if private_columns:
        split += f", the scaling alone {gdp_epsilon(mu_scaling, delta):.4g}"
    lines.append(split + " (composition is not a sum).")
    if accountant != "clt" and math.isfinite(clt_total):
        lines.append(f"For comparison, the CLT of Bu et al. (Xia et al.'s calibration, an approximation, not a "
                     f"bound) puts the same release at epsilon = {clt_total:.4g}.")
    if scaling == "none":
        unscaled = "all columns" if not given else "the columns without bounds"
        lines.append(f"Scaling: none ({unscaled} used as they are; their scale is taken as public).")
    return lines


def _magnitude(columns):
    """Each column's largest absolute value (1 for a column of zeros): a scale whose use squares nothing."""
    top = np.max(np.abs(columns), axis=0)
    return np.where((top > 0) & np.isfinite(top), top, 1.0)


def _nonprivate_fit(model, raw_x, raw_y, centres, level):
    """The full-sample fit with an intercept on the raw columns, the intercept read at ``centres``: NOT private."""
    n = raw_x.shape[0]
    # fitted on columns divided by their largest magnitude and centred at c, so that no square overflows (data
    # near 1e300); the intercept is then the one at the centres, and the scales are undone on the estimates
    with np.errstate(over="ignore", invalid="ignore"):
        x_scale = _magnitude(raw_x)
        y_scale = _magnitude(raw_y[:, None])[0] if model == "linear" else 1.0
        X = np.column_stack([np.ones(n), raw_x / x_scale - np.asarray(centres, dtype=float) / x_scale])
        est, cov, _ = glm.full_sample_fit(model, X, raw_y / y_scale)
        unscale = y_scale / np.concatenate([[1.0], x_scale])
        est = est * unscale
        half = normal_quantile(level) * np.sqrt(np.diag(cov) / n) * unscale
    return est, np.column_stack([est - half, est + half])


__all__ = ["CONSTANT_Z", "FitResult", "MAX_STEPS", "MIN_FORGET", "MIN_REACH", "MIN_STEPS", "NOISE_FLOOR",
           "PLUGIN_SETTLE", "SETTLE_RATIO", "SHARE_MOMENTS", "SHARE_SCALING", "fit", "read_table"]

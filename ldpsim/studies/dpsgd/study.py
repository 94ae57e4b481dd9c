"""The DP-SGD study (002): central DP-SGD on a sample, its privacy, and intervals for theta*.

One replication draws ``theta*`` and a dataset of ``n`` points (:mod:`.kernel`),
runs DP-SGD for ``T = floor(n^kappa)`` steps with batches of ``m`` and noise
calibrated to ``mu``-GDP by the CLT (:mod:`ldpsim.privacy.clt`), fits
the non-private full-sample estimator (the oracle), releases the private
``A~``, ``S~`` at ``theta_bar`` (budget ``mu_var``), and builds every
interval method's interval (:mod:`ldpsim.inference.dpsgd`; BB and BM of
:mod:`ldpsim.inference.intervals` on the same path), plus DP-GD at each
``T2`` if asked. A chunk holds per replication ``theta_star`` ``(d,)``,
``theta_bar``, ``oracle_est``, the point ``estimates`` and interval ``bounds``
of every output column (a method, or DP-GD at one ``T2``), the clipping rates
and ``ok``. :mod:`.summary` turns them into ``summary.csv`` (the coverage
study's columns), ``accuracy.csv`` (mean squared errors) and ``privacy.csv``
(the calibration of each setting, and dp-accounting's epsilons beside the CLT's).
"""

from __future__ import annotations

import hashlib
import json
import math
from functools import partial

import numpy as np

from ...engine.runs.config import ConfigError, Key, Range, check_range, check_run_memory, show
from ...engine.runs.resources import FLOAT
from ...engine.dialect.rng import as_generator
from ...inference import dpsgd as dpi
from ...inference.intervals import (MIN_BOOTSTRAP_DRAWS, MULTIPLIERS, batch_means, block_bootstrap,
                                    block_bootstrap_draws, min_bootstrap_draws)
from ...inference.streaming import StreamLayout, floor_power
from ...privacy.accountants import ACCOUNTANTS, DEFAULT_ACCOUNTANT, DESCRIPTION, check_supported
from ...privacy.clt import SAMPLINGS
from ...privacy.gdp import gdp_mu
from ...recursion.keys import GAMMA_WARNING_KINDS, MAX_STEPS, gamma_warnings
from ...engine.dialect.lanes import vector_width
from ..base import MANY_BATCHES, Study
from ...inference.intervals import resolved
from . import glm
from .calibration import (BUDGETS_OF, DEFAULT_CLIP, DEFAULT_CLIP_HESSIAN, DEFAULT_METHODS, DIM, METHODS,
                          SHARE_MOMENTS, calibrate,
                          dpgd_noise_sd, noise_problem, output_columns, path_target, undefined_methods)
from .kernel import draw_data, draw_data_twin, replication_seconds, run_dpgd, run_dpgd_twin, run_dpsgd_lanes, \
    run_dpsgd_twin

#: Each lane holds its own dataset, so lanes run side by side by default (:func:`default_lanes`) only up to
#: n = LANES_MAX_N points a dataset.
LANES_MAX_N = 100_000


#: A pilot runs at least this many DP-SGD steps (or the setting's own).
PILOT_MIN_STEPS = 2000


def default_lanes() -> int:
    """The DP-SGD kernel's default lanes: one SIMD register of doubles (scripts/bench_dpsgd.py measures each width)."""
    return vector_width()


#: Doubles one replication holds per data point at its peak (measured with tracemalloc: 18 at d = 3): the
#: sample (X, y, ||x||, the permutation) and the full-sample fits' and clipped moments' temporaries.
DOUBLES_PER_POINT = 20
#: Finite GDP budgets: their epsilon (about mu^2 / 2 for a large mu) and the composition
#: sqrt(mu^2 + mu_var^2) with the budget of A~, S~ are floats, neither overflowing nor underflowing.
MU_MIN, MU_MAX = 1e-100, 1e100
MU_RANGE = "[1e-100, 1e100] or inf"
#: Finite (epsilon, delta) budgets: the GDP mu each implies (for mu_var and DP-GD) is a float.
EPSILON_MIN, EPSILON_MAX = 1e-6, 1e4
EPSILON_RANGE = "[1e-06, 1e4] or inf"
#: The budget when a config gives neither mu nor epsilon (002's Figure 2).
DEFAULT_MU = 2.0

DPSGD_KEYS = (
    Key("model", "choice", "linear", choices=("linear", "logistic"), help="linear or logistic regression, d = 3"),
    Key("design", "choice", "identity", choices=("identity", "toeplitz"),
        help="covariates N(0, Sigma): Sigma = I or 0.5^|i-j|"),
    Key("sampling", "choice", "swor", choices=SAMPLINGS,
        help="mini-batches: without replacement, Poisson (rate m/n) or cyclic passes"),
    # a finite mu must lie in [MU_MIN, MU_MAX]: the check is in validate (the key's range lets inf in)
    # a finite epsilon must lie in [EPSILON_MIN, EPSILON_MAX]: the check is in make_setting
    Key("epsilon", "float", None, nullable=True, range=Range("(0, inf]", EPSILON_RANGE),
        help="budget as (epsilon, delta), of what budget_of says, calibrated by `accountant`; inf: non-private; "
             "not with mu"),
    Key("budget_of", "choice", "release", choices=BUDGETS_OF,
        help="what epsilon or mu covers: the whole release (the path, and A~, S~ when plug-in or corrected RS "
             "run: as `ldpsim fit`) or the path alone (Xia et al.'s convention: A~, S~ at mu_var on top)"),
    Key("delta", "float", 1e-5, range=Range("(0, 1)"), help="delta of the budget and of every epsilon reported"),
    Key("mu", "float", None, nullable=True, range=Range("(0, inf]", MU_RANGE),
        help=f"GDP budget, of what budget_of says, read at delta by a valid accountant; inf: non-private; default "
             f"{DEFAULT_MU:g} when epsilon is not given; not with epsilon"),
    Key("accountant", "choice", None, nullable=True, choices=ACCOUNTANTS,
        help="pld, rdp, gdp (exact, cyclic only) or clt (Xia et al.'s CLT: an approximation, not a bound); default the "
             "valid one for the sampling: pld (poisson), rdp (swor), gdp (cyclic)"),
    Key("mu_var", "float", None, nullable=True, range=Range("(0, inf]", MU_RANGE),
        help=f"GDP budget of the private A~, S~ (plug-in, corrected RS); default: budget_of = release, "
             f"sqrt({SHARE_MOMENTS:g}) x the budget's mu (fit's share); path, the budget's mu"),
    Key("calibration", "choice", "exact", choices=("exact", "printed"),
        help="sigma_1 = 2 sigma clip / m (exact) or Xia et al.'s printed 2 sigma Delta_g / m, Delta_g = 2 clip"),
    Key("clip", "float", None, nullable=True, range=Range("(0, inf]"),
        help="per-example clipping threshold (5.1); default 6 (linear), 3 (logistic)"),
    Key("clip_hessian", "float", None, nullable=True, range=Range("(0, inf]"),
        help="Frobenius clip of per-example Hessians in A~; default 16 (linear), 4 (logistic)"),
    Key("batch_size", "int", 1, range=Range("[1, inf)"), help="m (Poisson: the expected batch size)"),
    Key("kappa", "float", 2.0, range=Range("(0, 3]"), help="T = floor(n^kappa) DP-SGD steps"),
    Key("c", "float", 0.2, range=Range("(0, inf)"), help="step size eta_t = c t^-gamma"),
    Key("gamma", "float", 0.501, range=Range("(0, 1]"), help="step-size exponent (Xia et al.: alpha = 0.501)"),
    Key("theta0", "float", 0.0, range=Range("(-inf, inf)", "the finite reals"), help="start, every coordinate"),
    Key("gd_step", "float", 0.5, range=Range("(0, inf)"), help="step size of the DP-GD baseline"),
    Key("beta", "float", 0.75, range=Range("(0, 1)"), help="BB block length floor(T^beta)"),
    Key("B", "int", 500, range=Range(f"[{MIN_BOOTSTRAP_DRAWS}, inf)"),
        help=f"bootstrap draws of BB (at least {MIN_BOOTSTRAP_DRAWS}, and 2 / (1 - level))"),
    Key("level", "float", 0.95, range=Range("[0.001, 0.99999]"), help="nominal coverage"),
    Key("multiplier", "choice", "uniform", choices=MULTIPLIERS, help="BB multiplier law"),
    Key("n", "int", 1000, range=Range(f"[10, {MAX_STEPS}]", "[10, 2^53]"), help="sample size"),
    Key("methods", "choices", DEFAULT_METHODS, grid=False, choices=METHODS, help="interval methods"),
    Key("T2_max", "int", 30, grid=False, range=Range("[1, 10000]"),
        help="method DPGD runs DP-GD for T2 = T2_every, 2 T2_every, ... <= T2_max iterations"),
    Key("T2_every", "int", 1, grid=False, range=Range("[1, 10000]"), help="spacing of DP-GD's iteration counts"),
)


class DpsgdStudy(Study):
    """Coverage and length of plug-in and random-scaling intervals for DP-SGD (002), with BB, BM and DP-GD."""

    name = "dpsgd"
    title = "central DP-SGD with random subsampling: privacy, plug-in and random-scaling intervals (Xia et al. 2025)"
    keys = DPSGD_KEYS
    tables = ("summary", "accuracy", "privacy")
    warning_kinds = {
        **GAMMA_WARNING_KINDS,
        "cyclic": ("sampling = 'cyclic' with a finite budget", "no amplification by subsampling: composition of the "
                   "steps that use an example"),
        "undefined": ("random scaling on a deterministic path", "cyclic passes without noise make the path a "
                      "function of the data: the random-scaling pivot has no law; those rows are left out"),
        "delta": ("delta >= 1/n", "a release that publishes one random example outright is (0, 1/n)-DP: such a "
                  "delta protects nobody"),
    }
    compute_sources = ("engine/dialect/dispatch.py", "engine/dialect/rng", "privacy", "inference", "recursion",
                       "studies/base.py", "studies/dpsgd/kernel.py", "studies/dpsgd/glm.py",
                       "studies/dpsgd/calibration.py", "studies/dpsgd/study.py")
    table_columns = {
        "summary": {"method": "text", "coord": "count", "n": "positive", "reps": "count", "n_failed": "count",
                    "coverage": "number", "coverage_se": "number", "length": "number", "length_se": "number",
                    "T": "count"},
        "accuracy": {"estimator": "text", "n": "positive", "T": "count", "reps": "count", "n_failed": "count",
                     "mse": "number", "mse_se": "number", "rmse": "number", "mse_ratio": "number",
                     "mse_ratio_se": "number"},
        "privacy": {"n": "positive", "T": "positive", "sampling": "text", "sigma": "number", "sigma1": "number",
                    "delta": "number", "accountant": "text", "bound": "text", "epsilon": "number",
                    "epsilon_path": "number", "eps_clt": "number", "eps_rdp": "number", "eps_pld": "number",
                    "eps_gdp": "number", "clip_rate_path": "number", "clip_rate_star": "number"},
    }

    # --- configuration

    def make_setting(self, values):
        values = dict(values)
        epsilon, mu = values["epsilon"], values["mu"]
        if epsilon is not None and mu is not None:
            raise ConfigError(f"mu = {show(mu)} and epsilon = {show(epsilon)}: give the budget as mu (GDP) or as "
                              "epsilon (with delta), not both")
        if epsilon is not None:
            check_range("epsilon", epsilon, EPSILON_MIN <= epsilon <= EPSILON_MAX or math.isinf(epsilon),
                        EPSILON_RANGE)
        elif mu is None:
            values["mu"] = DEFAULT_MU
        if values["accountant"] is None:
            values["accountant"] = DEFAULT_ACCOUNTANT[values["sampling"]]
        if values["clip"] is None:
            values["clip"] = DEFAULT_CLIP[values["model"]]
        if values["clip_hessian"] is None:
            values["clip_hessian"] = DEFAULT_CLIP_HESSIAN[values["model"]]
        if values["mu_var"] is None:  # path: the A~, S~ pair gets the path's budget, in GDP; release: a share
            if values["mu"] is not None:
                budget = values["mu"]
            else:
                budget = math.inf if math.isinf(epsilon) else gdp_mu(epsilon, values["delta"])
            values["mu_var"] = budget * math.sqrt(SHARE_MOMENTS) if values["budget_of"] == "release" else budget
        return super().make_setting(values)

    def seed_key(self, values):
        # the data depend on these alone: settings that differ in the algorithm analyse the same samples
        identity = {"study": self.name, "model": values["model"], "design": values["design"], "n": values["n"]}
        return int(hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16], 16)

    def validate(self, s, options):
        methods = options["methods"]
        for key in ("mu", "mu_var"):
            value = getattr(s, key)
            if value is not None:
                check_range(key, value, MU_MIN <= value <= MU_MAX or math.isinf(value), MU_RANGE)
        problem = check_supported(s.accountant, s.sampling)
        if problem is not None:
            raise ConfigError(problem)
        check_range("batch_size", s.batch_size, s.batch_size <= s.n, f"[1, n] = [1, {s.n}]")
        private_path = not math.isinf(path_target(s))
        if math.isinf(s.clip) and (private_path or not math.isinf(s.mu_var)):
            budget = f"mu = {show(s.mu)}" if s.epsilon is None else f"epsilon = {show(s.epsilon)}"
            raise ConfigError(f"clip = inf leaves the gradient unbounded: a private run ({budget}) needs a "
                              "finite clip")
        if math.isinf(s.clip_hessian) and not math.isinf(s.mu_var):
            raise ConfigError(f"clip_hessian = inf leaves A~ unbounded: a private run (mu_var = {s.mu_var}) needs a "
                              "finite clip_hessian")
        steps = floor_power(s.n, s.kappa)  # n <= 2^53, kappa <= 3: at most 2^159, a float
        if not 2 <= steps * s.batch_size <= MAX_STEPS:
            raise ConfigError(f"kappa = {s.kappa} gives T = floor(n^kappa) = {show(steps)} steps of {s.batch_size} at "
                              f"n = {s.n}; T m must lie in [2, 2^53]")
        if "BB" in methods and s.B < min_bootstrap_draws(s.level):
            raise ConfigError(f"B = {s.B} bootstrap draws are too few for level = {s.level}: the block bootstrap's "
                              f"quantiles need B >= max({MIN_BOOTSTRAP_DRAWS}, 2 / (1 - level)) = "
                              f"{min_bootstrap_draws(s.level)}")
        if any(m.startswith("RS") for m in methods):
            check_range("level", s.level, 0.05 <= s.level <= 0.9999, "[0.05, 0.9999] (random-scaling critical values)")
        if len(undefined_methods(s, methods)) == len(methods):
            raise ConfigError(f"methods = [{', '.join(methods)}] with sampling = cyclic and no privacy noise: random "
                              "scaling needs a random path, and this one is a function of the data; add plugin or "
                              "oracle, or use sampling swor or poisson")
        if "DPGD" in methods and options.get("T2_every", 1) > options["T2_max"]:
            raise ConfigError(f"T2_every = {options['T2_every']} > T2_max = {options['T2_max']} leaves DP-GD no "
                              "iteration count; need T2_every <= T2_max")
        if "BM" in methods and s.gamma >= 1.0:
            raise ConfigError(f"gamma = {s.gamma} leaves no batch-means batches; BM needs gamma < 1")
        check_run_memory(self, [s], options, 1)  # before the layout, which is as large as the blocks and batches
        problem = noise_problem(s, options)  # the noise of every released quantity is a finite number
        if problem is not None:
            raise ConfigError(problem)
        # the batch ends are a Python loop over M + 1 ~ T^((1 - gamma) / 2) batches: built only when cheap
        # (with that many batches T is so large that there are two of them)
        many = "BM" in methods and floor_power(steps, (1.0 - s.gamma) / 2.0) >= MANY_BATCHES
        layout = StreamLayout.build(steps, s.beta, s.gamma, blocks="BB" in methods,
                                    batches="BM" in methods and not many)
        if "BB" in methods and not layout.enough_blocks:
            raise ConfigError(f"T = {steps} is too small for two bootstrap blocks with beta = {s.beta}; raise kappa "
                              "or lower beta")
        if "BM" in methods and not many and not layout.enough_batches:
            raise ConfigError(f"T = {steps} is too small for two batch-means batches with gamma = {s.gamma}")

    def warnings(self, s, options):
        out = gamma_warnings(s)
        if s.delta >= 1.0 / s.n and not math.isinf(path_target(s)):
            out.append(("delta", f"delta = {s.delta:g} >= 1/n = {1.0 / s.n:.3g}: a release that publishes one random "
                                 "example outright is (0, 1/n)-DP"))
        undefined = undefined_methods(s, options["methods"])
        if undefined:
            out.append(("undefined", f"{', '.join(undefined)} with sampling = 'cyclic' and no privacy noise: the path "
                                     "is a function of the data, so the random-scaling pivot has no law; "
                                     f"{'its' if len(undefined) == 1 else 'their'} rows are left out (plug-in and "
                                     "oracle remain)"))
        if s.sampling == "cyclic" and not math.isinf(path_target(s)):
            budget = f"mu = {s.mu}" if s.epsilon is None else f"epsilon = {s.epsilon}"
            out.append(("cyclic", f"sampling = 'cyclic' with {budget}: no amplification by subsampling, the noise "
                                  "is calibrated by composing the steps that use each example"))
        return out

    def memory(self, s, options):
        methods, d = options["methods"], DIM
        steps = floor_power(s.n, s.kappa)
        out = [(FLOAT * DOUBLES_PER_POINT * s.n, f"the sample of n = {s.n} points and its fits "
                                                   f"({DOUBLES_PER_POINT} numbers a point)")]
        if "BB" in methods:
            m = steps // floor_power(steps, s.beta)
            out.append((FLOAT * m * d, f"m = {m} block sums of d = {d} coordinates (T = {steps}, beta = {s.beta})"))
            # the multipliers (B, m), their products with the block deviations (B, m, d), quantiles of (B, d)
            out.append((FLOAT * s.B * (m * (d + 1) + 4 * d),
                        f"B x m x (d + 1) = {show(s.B)} x {m} x {d + 1} bootstrap numbers "
                        f"(B = {show(s.B)}, T = {steps}, beta = {s.beta})"))
        if "BM" in methods and s.gamma < 1.0:
            batches = floor_power(steps, (1.0 - s.gamma) / 2.0) + 1
            out.append((FLOAT * batches * (d + 2), f"{batches} batch sums of d = {d} coordinates (T = {steps}, "
                                                   f"gamma = {s.gamma})"))
        columns = len(output_columns(options))
        out.append((FLOAT * columns * d * 3, f"{columns} estimates and intervals"))
        return out

    def chunk_shapes(self, s, options):
        columns, d = len(output_columns(options)), DIM
        return {"theta_star": (d,), "theta_bar": (d,), "oracle_est": (d,), "estimates": (columns, d),
                "bounds": (columns, d, 2), "clip_path": (), "clip_star": (), "ok": ()}

    # --- computing

    def steps(self, setting):
        return floor_power(setting.n, setting.kappa)

    def seconds(self, setting, options):
        dpgd = sum(t2 for method, t2 in output_columns(options) if method == "DPGD")
        return replication_seconds(setting.n, DIM, self.steps(setting), setting.batch_size, dpgd)

    def pilot_setting(self, setting, options, fraction):
        # the same data, fewer steps (T = n^kappa); the noise is calibrated by the CLT, a closed form: the kernel's
        # cost does not depend on its size, and a valid accountant would be asked anew (seconds with PLD)
        steps = self.steps(setting)
        if fraction >= 1.0 or steps <= PILOT_MIN_STEPS or setting.n < 2:
            return setting
        target = max(PILOT_MIN_STEPS, int(round(steps * fraction)))
        return setting.replace(kappa=math.log(target) / math.log(setting.n), accountant="clt")

    def warm_up_units(self, config, lanes=None):
        kinds = {(s.model, s.sampling, self.lane_width(s, config.options, lanes)) for s in config.settings}
        dpgd = "DPGD" in config.options["methods"]
        return [partial(_warm_kind, model, sampling, width, dpgd) for model, sampling, width in sorted(kinds)]

    def prepare(self, setting, options, twin=False):
        return setting, options, output_columns(options), calibrate(setting, options["methods"]), twin

    def default_lanes(self, setting, options):
        # the data of every lane is held at once
        return default_lanes() if setting.n <= LANES_MAX_N else 1

    def replicate(self, job, gen):
        return self.replicate_lanes(job, [gen])[0]

    def replicate_lanes(self, job, gens, width=None):
        s, options, columns, cal, twin = job
        datas = [(draw_data_twin if twin else draw_data)(gen, s.model, cal.chol, s.n, glm.THETA_HI[s.model])
                 for gen in gens]
        args = (s.model, s.sampling, cal.steps, s.batch_size, s.c, s.gamma, s.clip, cal.sigma1, s.theta0, cal.layout)
        if twin:
            paths = [run_dpsgd_twin(gen, *data[1:], *args)[:2] for gen, data in zip(gens, datas)]
        else:
            paths = run_dpsgd_lanes(gens, [data[1:] for data in datas], *args, width=width)
        return [self._finish(job, gen, data, *path) for gen, data, path in zip(gens, datas, paths)]

    def _finish(self, job, gen, data, state, clip_rate):
        """A replication's intervals from its data and DP-SGD path (drawing the private A~, S~, DP-GD from ``gen``)."""
        s, options, columns, cal, twin = job
        methods = options["methods"]
        n, m, d = s.n, s.batch_size, DIM
        theta_star, X, y, xnorm = data
        estimates = np.full((len(columns), d), np.nan)
        bounds = np.full((len(columns), d, 2), np.nan)
        oracle_est, oracle_cov, converged = glm.full_sample_fit(s.model, X, y)
        r, _ = glm.residuals(s.model, X, y, theta_star)
        clip_star = float(np.mean(np.abs(r) * xnorm > s.clip))
        result = {"theta_star": theta_star, "theta_bar": state.theta_bar, "oracle_est": oracle_est,
                  "estimates": estimates, "bounds": bounds, "clip_path": clip_rate, "clip_star": clip_star,
                  "ok": False}
        if not state.finite(cal.steps):
            return result
        k = cal.steps / n
        theta_bar = state.theta_bar
        # (every noise below is finite: validate refused a setting whose noise overflows; a path or a DP-GD run
        # that did is flagged by the checks of its numbers at the end)
        a_t, s_t, sd_a = glm.private_moments(gen, s.model, X, y, xnorm, theta_bar, s.clip, s.clip_hessian, s.mu_var)
        v_t, a_inv2 = dpi.sandwich(a_t, s_t, floor=sd_a)
        v_d, a_d = np.diag(v_t), np.diag(a_inv2)
        common = dict(sigma1=cal.sigma1, k=k, m=m, f=cal.f)
        v_hat = dpi.random_scaling_variance(state.sn_v, m)
        draws = block_bootstrap_draws(state, cal.layout, gen, s.B, s.multiplier) if "BB" in methods else None
        undefined = undefined_methods(s, methods)
        for j, (method, t2) in enumerate(columns):
            if method in undefined:  # left NaN, and not a failure (summarize leaves these rows out)
                continue
            est = theta_bar
            if method == "plugin":
                lo, hi = dpi.plugin(theta_bar, v_d, a_d, n=n, level=s.level, corrected=True, **common)
            elif method == "plugin_raw":
                lo, hi = dpi.plugin(theta_bar, v_d, a_d, n=n, level=s.level, corrected=False, **common)
            elif method == "RS":
                lo, hi = dpi.random_scaling(theta_bar, v_hat, n=n, level=s.level,
                                            factor=dpi.random_scaling_factor(v_d, a_d, **common))
            elif method == "RS_paper":
                lo, hi = dpi.random_scaling(theta_bar, v_hat, n=n, level=s.level,
                                            factor=dpi.random_scaling_factor(v_d, a_d, form="paper", **common))
            elif method == "RS_raw":
                lo, hi = dpi.random_scaling(theta_bar, v_hat, n=n, level=s.level)
            elif method == "oracle":
                est = oracle_est
                lo, hi = dpi.wald(oracle_est, np.diag(oracle_cov), n=n, level=s.level)
            elif method == "BB":
                lo, hi = block_bootstrap(state, draws, level=s.level)
            elif method == "BM":
                lo, hi = batch_means(state, cal.layout, level=s.level)
            else:  # DPGD at T2 steps, then its own private sandwich at its estimate
                noise = dpgd_noise_sd(s, t2)
                run = run_dpgd_twin if twin else run_dpgd
                est = run(gen, X, y, xnorm, s.model, t2, s.gd_step, s.clip, noise, s.theta0)
                a_g, s_g, sd_g = glm.private_moments(gen, s.model, X, y, xnorm, est, s.clip, s.clip_hessian,
                                                     s.mu_var)
                v_g, _ = dpi.sandwich(a_g, s_g, floor=sd_g)
                lo, hi = dpi.wald(est, np.diag(v_g), n=n, level=s.level, extra=noise * noise)
            estimates[j], bounds[j, :, 0], bounds[j, :, 1] = est, lo, hi
        # an interval of rounding noise is no interval: a path started far away (theta0 = 1e20) whose steps are
        # below the spacing of its iterates gives length 0 (the coverage study's rule, RESOLVED_ULPS)
        defined = [j for j, (method, _) in enumerate(columns) if method not in undefined]
        result["ok"] = bool(np.isfinite(bounds[defined]).all() and np.isfinite(estimates[defined]).all() and converged
                            and resolved(bounds[defined]))
        return result

    # --- summarising and drawing

    def summarize(self, config, chunks):
        from .summary import summarize

        return summarize(config, chunks)

    def write_outputs(self, out, tables, meta):
        from .figures import write_figures
        from .tables import render_latex, render_markdown

        title = self.table_title(meta)
        if tables.get("privacy"):
            meta["privacy"] = tables["privacy"]  # meta.json shows the accounting beside the config
            meta["privacy_accountants"] = {name: DESCRIPTION[name] for name in ACCOUNTANTS}
            meta["privacy_note"] = ("epsilon: the guarantee each setting claims at delta for the path and, when an "
                                    "interval method uses them, the private A~ and S~, by the setting's accountant; "
                                    "a valid upper bound unless bound = 'approximation (CLT)'. eps_clt is the CLT's "
                                    "approximation, eps_rdp, eps_pld and eps_gdp valid upper bounds (eps_gdp exact), "
                                    "each for the same noise (eps_total_*: the whole release).")
        (out / "table.md").write_text(render_markdown(tables, title))
        (out / "table.tex").write_text(render_latex(tables))
        level = meta.get("config", {}).get("level")
        level = level if isinstance(level, float) else None
        return ["table.md", "table.tex"] + write_figures(out, tables, title, level)

    def render(self, tables, meta):
        from .tables import render_markdown

        return render_markdown(tables, self.table_title(meta))


def _warm_kind(model, sampling, width, dpgd) -> None:
    """Compile (or load) the kernels of one model, sampling and lanes on a tiny sample (and DP-GD's with it)."""
    gen = as_generator(0)
    theta_star, X, y, xnorm = draw_data(gen, model, np.eye(DIM), 20, 1.0)
    run_dpsgd_lanes([gen], [(X, y, xnorm)], model, sampling, 64, 2, 0.2, 0.501, 1.0, 0.5, 0.0,
                    StreamLayout.build(64, 0.5, 0.501), width)
    if dpgd:
        run_dpgd(gen, X, y, xnorm, model, 2, 0.5, 1.0, 0.1, 0.0)


__all__ = ["DPSGD_KEYS", "DpsgdStudy"]

"""The DP-SGD study (002): central DP-SGD on a sample, its privacy, and intervals for theta*.

One replication draws ``theta*`` and a dataset of ``n`` points (:mod:`.kernel`),
runs DP-SGD for ``T = floor(n^kappa)`` steps with batches of ``m`` and noise
calibrated to ``mu``-GDP by the CLT (:mod:`ldpsim.privacy.accounting`), fits
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

import numpy as np

from ...engine.config import ConfigError, Key, Range, check_range
from ...engine.rng import as_generator
from ...inference import dpsgd as dpi
from ...inference.intervals import (MIN_BOOTSTRAP_DRAWS, MULTIPLIERS, batch_means, block_bootstrap,
                                    block_bootstrap_draws, min_bootstrap_draws)
from ...inference.streaming import StreamLayout, floor_power
from ...privacy.accounting import SAMPLINGS
from ...recursion.keys import GAMMA_WARNING_KINDS, MAX_STEPS, gamma_warnings
from ..base import Study, title_of
from . import glm
from .calibration import (DEFAULT_CLIP, DEFAULT_CLIP_HESSIAN, DEFAULT_METHODS, DIM, METHODS, calibrate,
                          dpgd_noise_sd, output_columns)
from .kernel import draw_data, draw_data_twin, run_dpgd, run_dpgd_twin, run_dpsgd, run_dpsgd_twin

DPSGD_KEYS = (
    Key("model", "choice", "linear", choices=("linear", "logistic"), help="linear or logistic regression, d = 3"),
    Key("design", "choice", "identity", choices=("identity", "toeplitz"),
        help="covariates N(0, Sigma): Sigma = I or 0.5^|i-j|"),
    Key("sampling", "choice", "swor", choices=SAMPLINGS,
        help="mini-batches: without replacement, Poisson (rate m/n) or cyclic passes"),
    Key("mu", "float", 2.0, range=Range("(0, inf]"), help="GDP budget of the DP-SGD path; inf: non-private"),
    Key("mu_var", "float", None, nullable=True, range=Range("(0, inf]"),
        help="GDP budget of the private A~, S~ (plug-in, corrected RS); default: mu"),
    Key("calibration", "choice", "exact", choices=("exact", "printed"),
        help="sigma_1 = 2 sigma clip / m (exact) or 002's printed 2 sigma Delta_g / m, Delta_g = 2 clip"),
    Key("clip", "float", None, nullable=True, range=Range("(0, inf]"),
        help="per-example clipping threshold (5.1); default 6 (linear), 3 (logistic)"),
    Key("clip_hessian", "float", None, nullable=True, range=Range("(0, inf]"),
        help="Frobenius clip of per-example Hessians in A~; default 16 (linear), 4 (logistic)"),
    Key("batch_size", "int", 1, range=Range("[1, inf)"), help="m (Poisson: the expected batch size)"),
    Key("kappa", "float", 2.0, range=Range("(0, 3]"), help="T = floor(n^kappa) DP-SGD steps"),
    Key("c", "float", 0.2, range=Range("(0, inf)"), help="step size eta_t = c t^-gamma"),
    Key("gamma", "float", 0.501, range=Range("(0, 1]"), help="step-size exponent (002: alpha = 0.501)"),
    Key("theta0", "float", 0.0, range=Range("(-inf, inf)", "the finite reals"), help="start, every coordinate"),
    Key("gd_step", "float", 0.5, range=Range("(0, inf)"), help="step size of the DP-GD baseline"),
    Key("beta", "float", 0.75, range=Range("(0, 1)"), help="BB block length floor(T^beta)"),
    Key("B", "int", 500, range=Range(f"[{MIN_BOOTSTRAP_DRAWS}, inf)"),
        help=f"bootstrap draws of BB (at least {MIN_BOOTSTRAP_DRAWS}, and 2 / (1 - level))"),
    Key("level", "float", 0.95, range=Range("[0.001, 0.99999]"), help="nominal coverage"),
    Key("multiplier", "choice", "uniform", choices=MULTIPLIERS, help="BB multiplier law"),
    Key("n", "int", 1000, range=Range("[10, inf)"), help="sample size"),
    Key("methods", "choices", DEFAULT_METHODS, grid=False, choices=METHODS, help="interval methods"),
    Key("T2_max", "int", 30, grid=False, range=Range("[1, 10000]"),
        help="method DPGD runs DP-GD for T2 = T2_every, 2 T2_every, ... <= T2_max iterations"),
    Key("T2_every", "int", 1, grid=False, range=Range("[1, 10000]"), help="spacing of DP-GD's iteration counts"),
)


class DpsgdStudy(Study):
    """Coverage and length of plug-in and random-scaling intervals for DP-SGD (002), with BB, BM and DP-GD."""

    name = "dpsgd"
    title = "central DP-SGD with random subsampling: privacy, plug-in and random-scaling intervals (002)"
    keys = DPSGD_KEYS
    tables = ("summary", "accuracy", "privacy")
    warning_kinds = {
        **GAMMA_WARNING_KINDS,
        "cyclic": ("sampling = 'cyclic' with a finite mu", "no amplification by subsampling: composition of the "
                   "steps that use an example"),
    }
    compute_sources = ("engine/dispatch.py", "engine/rng.py", "privacy", "inference", "recursion",
                       "studies/base.py", "studies/dpsgd/kernel.py", "studies/dpsgd/glm.py", "studies/dpsgd/calibration.py",
                       "studies/dpsgd/study.py")

    # --- configuration

    def make_setting(self, values):
        values = dict(values)
        if values["clip"] is None:
            values["clip"] = DEFAULT_CLIP[values["model"]]
        if values["clip_hessian"] is None:
            values["clip_hessian"] = DEFAULT_CLIP_HESSIAN[values["model"]]
        if values["mu_var"] is None:
            values["mu_var"] = values["mu"]
        return super().make_setting(values)

    def seed_key(self, values):
        # the data depend on these alone: settings that differ in the algorithm analyse the same samples
        identity = {"study": self.name, "model": values["model"], "design": values["design"], "n": values["n"]}
        return int(hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16], 16)

    def validate(self, s, options):
        methods = options["methods"]
        check_range("batch_size", s.batch_size, s.batch_size <= s.n, f"[1, n] = [1, {s.n}]")
        if math.isinf(s.clip) and not (math.isinf(s.mu) and math.isinf(s.mu_var)):
            raise ConfigError(f"clip = inf leaves the gradient unbounded: a private run (mu = {s.mu}) needs a "
                              "finite clip")
        if math.isinf(s.clip_hessian) and not math.isinf(s.mu_var):
            raise ConfigError(f"clip_hessian = inf leaves A~ unbounded: a private run (mu_var = {s.mu_var}) needs a "
                              "finite clip_hessian")
        steps = floor_power(s.n, s.kappa)
        if not 2 <= steps * s.batch_size <= MAX_STEPS:
            raise ConfigError(f"kappa = {s.kappa} gives T = floor(n^kappa) = {steps} steps of {s.batch_size} at "
                              f"n = {s.n}; T m must lie in [2, 2^53]")
        if "BB" in methods and s.B < min_bootstrap_draws(s.level):
            raise ConfigError(f"B = {s.B} bootstrap draws are too few for level = {s.level}: the block bootstrap's "
                              f"quantiles need B >= max({MIN_BOOTSTRAP_DRAWS}, 2 / (1 - level)) = "
                              f"{min_bootstrap_draws(s.level)}")
        if any(m.startswith("RS") for m in methods):
            check_range("level", s.level, 0.05 <= s.level <= 0.9999, "[0.05, 0.9999] (random-scaling critical values)")
        layout = StreamLayout.build(steps, s.beta, s.gamma, blocks="BB" in methods, batches="BM" in methods)
        if "BB" in methods and not layout.enough_blocks:
            raise ConfigError(f"T = {steps} is too small for two bootstrap blocks with beta = {s.beta}; raise kappa "
                              "or lower beta")
        if "BM" in methods:
            if s.gamma >= 1.0:
                raise ConfigError(f"gamma = {s.gamma} leaves no batch-means batches; BM needs gamma < 1")
            if not layout.enough_batches:
                raise ConfigError(f"T = {steps} is too small for two batch-means batches with gamma = {s.gamma}")

    def warnings(self, s, options):
        out = gamma_warnings(s)
        if s.sampling == "cyclic" and not math.isinf(s.mu):
            out.append(("cyclic", f"sampling = 'cyclic' with mu = {s.mu}: no amplification by subsampling, the noise "
                                  "is calibrated by composing the steps that use each example"))
        return out

    # --- computing

    def steps(self, setting):
        return floor_power(setting.n, setting.kappa)

    def warm_up(self, config):
        gen = as_generator(0)
        kinds = {(s.model, s.sampling) for s in config.settings}
        dpgd = "DPGD" in config.options["methods"]
        for model, sampling in sorted(kinds):
            theta_star, X, y, xnorm = draw_data(gen, model, np.eye(DIM), 20, 1.0)
            run_dpsgd(gen, X, y, xnorm, model, sampling, 64, 2, 0.2, 0.501, 1.0, 0.5, 0.0,
                      StreamLayout.build(64, 0.5, 0.501))
            if dpgd:
                run_dpgd(gen, X, y, xnorm, model, 2, 0.5, 1.0, 0.1, 0.0)

    def prepare(self, setting, options, twin=False):
        return setting, options, output_columns(options), calibrate(setting, options["methods"]), twin

    def replicate(self, job, gen):
        s, options, columns, cal, twin = job
        methods = options["methods"]
        n, m, d = s.n, s.batch_size, DIM
        data = (draw_data_twin if twin else draw_data)(gen, s.model, cal.chol, n, glm.THETA_HI[s.model])
        theta_star, X, y, xnorm = data
        path = run_dpsgd_twin if twin else run_dpsgd
        out = path(gen, X, y, xnorm, s.model, s.sampling, cal.steps, m, s.c, s.gamma, s.clip, cal.sigma1, s.theta0,
                   cal.layout)
        state, clip_rate = out[0], out[1]
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
        a_t, s_t, sd_a = glm.private_moments(gen, s.model, X, y, xnorm, theta_bar, s.clip, s.clip_hessian, s.mu_var)
        v_t, a_inv2 = dpi.sandwich(a_t, s_t, floor=sd_a)
        v_d, a_d = np.diag(v_t), np.diag(a_inv2)
        common = dict(sigma1=cal.sigma1, k=k, m=m, f=cal.f)
        v_hat = dpi.random_scaling_variance(state.sn_v, m)
        draws = block_bootstrap_draws(state, cal.layout, gen, s.B, s.multiplier) if "BB" in methods else None
        for j, (method, t2) in enumerate(columns):
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
        result["ok"] = bool(np.isfinite(bounds).all() and np.isfinite(estimates).all() and converged)
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
        (out / "table.md").write_text(render_markdown(tables, title))
        (out / "table.tex").write_text(render_latex(tables))
        level = meta.get("config", {}).get("level")
        level = level if isinstance(level, float) else None
        return ["table.md", "table.tex"] + write_figures(out, tables, title, level)

    def render(self, tables, meta):
        from .tables import render_markdown

        return render_markdown(tables, self.table_title(meta))

    def table_title(self, meta):
        return title_of(meta, [k.name for k in self.keys if k.grid])


__all__ = ["DPSGD_KEYS", "DpsgdStudy"]

"""Study ``sagd_rate``: ``min_t ||grad f(w_t)||^2`` against n on Theorem 2's schedule (001, Theorems 2 and 4).

For each ``n``: ``sigma = n^(-1/3)`` and

    T = T_factor * n^(2/3) / (169 G1^2 (ln d + 7/3 ln n))     (Theorem 2, DPG-Lap)
    T = T_factor * n^(2/3) / (676 G1^2 (ln d + 7/3 ln n))     (Theorem 4, DPG-Sparse, C_s = T),

``eta = nu / (2 L)`` (the largest Theorem 2 allows). The theorems' own T is
below one step unless n is astronomically large (0.004 at n = 1e3 for the
default logistic model, G1 = 3): ``T_factor`` scales it, which changes the
constant of the rate, not its order in n. Each replication records
``min_t ||grad f(w_t)||^2`` (Theorem 2's quantity; estimator ``min``) and
``(1/T) sum_t ||grad f(w_t)||^2`` (what the proof of Theorem 7 bounds;
estimator ``mean``), with the exact population gradient. ``rates.csv`` has
the least-squares slope of ``log E[.]`` against ``log n`` with a 95%
delta-method interval (:func:`ldpsim.reporting.rates.rate_row`),
next to the theorem's -2/3 (which ignores the logarithms, ``rho_(n,d)^2``).
"""

from __future__ import annotations

import math

import numpy as np

from ...engine.runs.config import ConfigError, Key, Range, check_range, show
from ...engine.dialect.rng import as_generator
from ...reporting.rates import rate_row
from ...reporting.stats import mean_se
from .accounting import lap_privacy, sparse_privacy
from .common import (
    DELTA_KEY, MODEL_KEYS, N_KEY, NODES_KEY, ORACLES, SPARSE_KEYS, UPDATE_KEYS, budget_key, SagdStudy,
    build_model, check_accounting, check_eta, check_steps, checked_model, data_memory, data_seconds, data_seed_key,
    model_values, path_params, path_seconds, resolve_budget, shown_keys, with_default)
from .figures import rate_figure
from .kernel import DIVERGED, MIN_G2, PAID, STEPS, SUM_G2, replicate_paths
from .tables import render_rate

#: The theorems' exponent of n.
THEORY = -2.0 / 3.0
ESTIMATORS = ("min", "mean")

RATE_KEYS = MODEL_KEYS + (
    Key("oracle", "choice", "lap", choices=tuple(ORACLES), help="gradient oracle: lap (Theorem 2), sparse (Theorem 4)"),
    # the theorem's own T is below one step at any n a run can reach (0.004 at n = 1e3): 3e4 as in
    # configs/sagd_rate.yaml gives 112 ... 1493 steps from n = 1e3 to 1e5
    Key("T_factor", "float", 3e4, range=Range("(0, inf)"), help="T = T_factor x the theorem's T (at least 2 steps)"),
    budget_key("T"),
) + SPARSE_KEYS + UPDATE_KEYS + (DELTA_KEY, with_default(N_KEY, [1000, 10000, 100000]),
                                 Key("fit_decades", "float", math.inf, grid=False, range=Range("(0, inf]"),
                                     help="slopes are fitted over n >= n_max / 10^fit_decades (inf: every n)"),
                                 NODES_KEY)


def schedule(setting, model) -> tuple[float, int]:
    """``(sigma, T)`` of Theorem 2 (``lap``) or Theorem 4 (``sparse``), T scaled by ``T_factor``."""
    n, d = setting.n, setting.d
    sigma = n ** (-1.0 / 3.0)
    const = 169.0 if setting.oracle == "lap" else 676.0
    t_theorem = n ** (2.0 / 3.0) / (const * model.g1 ** 2 * (math.log(d) + 7.0 / 3.0 * math.log(n)))
    return sigma, max(1, math.ceil(setting.T_factor * t_theorem))


def theorem_T(setting, model) -> float:
    """The theorem's own T (before ``T_factor``)."""
    n, d = setting.n, setting.d
    const = 169.0 if setting.oracle == "lap" else 676.0
    return n ** (2.0 / 3.0) / (const * model.g1 ** 2 * (math.log(d) + 7.0 / 3.0 * math.log(n)))


class RateStudy(SagdStudy):
    """``min_t ||grad f(w_t)||^2`` of SAGD against n, and its fitted exponent next to -2/3."""

    markdown = staticmethod(render_rate)
    figure = staticmethod(rate_figure)

    name = "sagd_rate"
    title = "Zhou et al. (2020) Theorems 2 and 4: min_t ||grad f(w_t)||^2 against n with sigma = n^-1/3"
    keys = RATE_KEYS
    tables = ("summary", "rates", "privacy")
    compute_sources = ("engine/dialect/rng", "models/erm.py", "studies/base.py", "studies/sagd/kernel.py",
                       "studies/sagd/common.py", "studies/sagd/rate.py")

    def make_setting(self, values):
        values = model_values(values)
        if values["oracle"] != "sparse":
            values = {**values, "budget": None, "threshold": None}
        return super().make_setting(values)

    def seed_key(self, values):
        return data_seed_key(values)

    table_columns = {
        "summary": {"oracle": "text", "estimator": "text", "n": "positive", "grad_norm2": "number",
                    "grad_norm2_se": "number", "sigma": "number", "T": "positive", "steps": "number",
                    "queries": "number", "queries_se": "number", "epsilon": "number", "reps": "count",
                    "n_failed": "count"},
        "rates": {"estimator": "text", "slope": "number", "slope_lo": "number", "slope_hi": "number",
                  "theory": "number", "n_from": "count", "n_to": "count", "points": "count"},
        "privacy": {"oracle": "text", "n": "positive", "sigma": "number", "T": "positive", "T_theorem": "number",
                    "budget": "count", "delta": "number", "epsilon_step": "number", "compositions": "count",
                    "epsilon": "number", "epsilon_basic": "number", "epsilon_lemma": "number",
                    "epsilon_lemma_proof": "number"},
    }

    def validate(self, s, options):
        decades = options["fit_decades"]  # 10^decades must be a float (16 decades span every n <= 2^53)
        check_range("fit_decades", decades, decades <= 16 or math.isinf(decades), "(0, 16] or inf")
        model = checked_model(s, options["nodes"])
        scaled = s.T_factor * theorem_T(s, model)  # a float (n <= 2^53): inf if it overflows
        check_steps("T_factor", s.T_factor, max(1.0, math.ceil(scaled) if math.isfinite(scaled) else scaled), s.n,
                    "T = T_factor x the theorem's T")
        sigma, T = schedule(s, model)
        if T < 2:  # a minimum over one step is the start's gradient: a slope of 0 that says nothing
            raise ConfigError(f"T_factor = {show(s.T_factor)} gives T = ceil(T_factor x {theorem_T(s, model):.3g}) = "
                              f"{T} step at n = {s.n}: the minimum over a path needs T >= 2; raise T_factor "
                              f"(at least {2.0 / theorem_T(s, model):.3g} here; configs/sagd_rate.yaml uses 3e4)")
        budget = 0
        if s.oracle == "sparse":
            budget = resolve_budget(s.budget, s.n, sigma, model.g1, T)  # sigma = n^-1/3: no overflow
            if budget > 2 ** 53:
                raise ConfigError(f"budget = {show(s.budget)} gives C_s = {budget:.4g}; C_s must be at most 2^53")
        check_eta(s, model)
        check_accounting(s.oracle, s, model, sigma, T, budget)

    def memory(self, s, options):
        return data_memory(s, options["nodes"])

    def chunk_shapes(self, s, options):
        return {"min": (), "mean": (), "steps": (), "paid": (), "ok": ()}

    def steps(self, setting):
        return schedule(setting, build_model(setting))[1] * setting.n

    def seconds(self, s, options):
        T = schedule(s, build_model(s, options["nodes"]))[1]
        return data_seconds(s.n, s.d) + path_seconds(T, s.n, s.d, options["nodes"], True)

    def pilot_setting(self, setting, options, fraction):
        # the same data, a fraction of the steps
        return setting if fraction >= 1.0 else setting.replace(T_factor=setting.T_factor * fraction)

    def _warm(self, config, setting):
        # a tiny copy of the setting: its batches and halves are those of 8 points (the data drawn)
        s = setting.replace(n=8)
        model = build_model(s, config.options["nodes"])
        run = path_params(ORACLES[s.oracle], s, model, 0.1, 2, 1, True)
        replicate_paths(model, as_generator(0), 8, [run], 0.0, [1.0], [])

    def prepare(self, setting, options, twin=False):
        model = build_model(setting, options["nodes"])
        sigma, T = schedule(setting, model)
        budget = resolve_budget(setting.budget, setting.n, sigma, model.g1, T) if setting.oracle == "sparse" else 0
        run = path_params(ORACLES[setting.oracle], setting, model, sigma, T, budget, True)
        return setting, model, run, twin

    def replicate(self, job, gen):
        setting, model, run, twin = job
        (res,) = replicate_paths(model, gen, setting.n, [run], setting.w0, [1.0], [], twin=twin)
        steps = res.stats[STEPS]
        # a population gradient that overflowed (a path far out) makes min and mean meaningless: counted as failed
        ok = res.stats[DIVERGED] == 0.0 and steps > 0 and bool(np.isfinite(res.stats[[MIN_G2, SUM_G2]]).all())
        return {"min": res.stats[MIN_G2], "mean": res.stats[SUM_G2] / max(steps, 1.0), "steps": steps,
                "paid": res.stats[PAID], "ok": ok}

    def summarize(self, config, chunks):
        rows, privacy, rates = [], [], []
        shown = shown_keys(config, ("oracle", "n"))
        groups: dict[tuple, list] = {}
        for setting, chunk in zip(config.settings, chunks):
            keys = {k: getattr(setting, k) for k in shown}
            model = build_model(setting, config.options["nodes"])
            sigma, T = schedule(setting, model)
            budget = resolve_budget(setting.budget, setting.n, sigma, model.g1, T) if setting.oracle == "sparse" else 0
            if setting.oracle == "lap":
                priv = lap_privacy(model.g1, setting.n, sigma, T, 1, setting.delta)
            else:
                priv = sparse_privacy(model.g1, setting.n, sigma, budget, setting.delta)
            ok = chunk["ok"]
            paid_mean, paid_se = mean_se(chunk["paid"][ok])
            privacy.append({**keys, "oracle": setting.oracle, "n": setting.n, "sigma": sigma, "T": T,
                            "T_theorem": theorem_T(setting, model), "budget": budget, "G1": model.g1,
                            "eta": path_params(0, setting, model, sigma, T, 0, True).eta, "delta": setting.delta,
                            **priv, "queries": paid_mean, "queries_se": paid_se})
            for estimator in ESTIMATORS:
                mean, se = mean_se(chunk[estimator][ok])
                rows.append({**keys, "oracle": setting.oracle, "estimator": estimator, "n": setting.n,
                             "grad_norm2": mean, "grad_norm2_se": se, "sigma": sigma, "T": T,
                             "steps": float(chunk["steps"][ok].mean()) if ok.any() else math.nan,
                             "queries": paid_mean, "queries_se": paid_se, "epsilon": priv["epsilon"],
                             "reps": int(ok.sum()), "n_failed": int((~ok).sum())})
            groups.setdefault(tuple(keys.items()) + (("oracle", setting.oracle),), []).append((setting.n, chunk))
        for ident, members in groups.items():
            members.sort(key=lambda item: item[0])
            ns = np.array([n for n, _ in members])  # one n: the slope is NaN, written blank
            # replications at different n are independent; pair them by index, keeping indices usable at every n
            usable = np.logical_and.reduce([c["ok"] for _, c in members])
            for estimator in ESTIMATORS:
                samples = np.stack([c[estimator][usable] for _, c in members], axis=1)
                row = rate_row(dict(ident), estimator, ns, samples, config.options["fit_decades"], THEORY)
                rates.append({**row, "n_from": row.pop("k_from"), "n_to": row.pop("k_to")})
        return {"summary": rows, "rates": rates, "privacy": privacy}


__all__ = ["RATE_KEYS", "RateStudy", "THEORY", "schedule"]

"""Study ``sagd_concentration``: how often the oracle's gradient misses the population gradient (001, Theorems 1, 3).

One replication draws a training set of ``n`` points and runs SAGD with the
setting's oracle for ``T`` steps, counting at every step whether
``||g~_t - grad f(w_t)|| >= sqrt(d) sigma (1 + mu)`` for each ``mu`` of the
run (and the two parts of the proofs: the empirical error
``||g~_t - g^_t|| >= sqrt(d) sigma mu`` and the generalization error
``||g^_t - grad f(w_t)|| >= sqrt(d) sigma``). The summary pools the steps of
all replications (cluster standard errors: steps of one replication share
its data) and sets each frequency beside the theorems' bound
``d beta + d e^(-mu)`` and its parts ``d e^(-mu)`` and ``d beta``, with the
conditions of the theorem (printed ranges) and of Lemma 1 (derived privacy)
checked for the setting.
"""

from __future__ import annotations

import math

import numpy as np

from ...engine.runs.config import ConfigError, Key, Range, show
from ...engine.dialect.rng import as_generator
from ...reporting.stats import mean_se
from .accounting import lap_privacy, lemma1_check, sparse_privacy, theorem_range
from .common import (
    BATCH_KEY, DELTA_KEY, MODEL_KEYS, N_KEY, NODES_KEY, ORACLES, SPARSE_KEYS, UPDATE_KEYS, budget_key, SagdStudy,
    build_model, check_accounting, check_eta, check_steps, checked_model, count_or, data_memory, data_seconds,
    data_seed_key, ListKey, model_values, n_batches, path_params, path_seconds, pooled_frequency, resolve_budget,
    shown_keys, theorem_value, validate_batches)
from .figures import concentration_figure
from .kernel import DIVERGED, MIN_G2, PAID, STEPS, SUM_G2, replicate_paths
from .tables import render_concentration

CONCENTRATION_KEYS = MODEL_KEYS + (
    Key("oracle", "choice", ["lap", "sparse"], choices=tuple(ORACLES), help="gradient oracle: lap (DPG-Lap), sparse"),
    Key("sigma", "float", 1.0, range=Range("(0, 1e100]"), help="Laplace scale of the oracle"),
    Key("beta", "float", 0.01, range=Range("(0, 1)"), help="beta of Lemma 1 in the bound d beta + d e^-mu"),
    Key("T", "any", "theorem", convert=count_or("theorem"),
        help="steps; 'theorem': Theorem 1's smallest, ceil(2 n sigma^2 / G1^2)"),
    budget_key("theorem"),
) + SPARSE_KEYS + (BATCH_KEY,) + UPDATE_KEYS + (DELTA_KEY, N_KEY,
                                                 ListKey("mu", "any", (0.5, 1.0, 2.0, 3.0, 4.0, 5.0), grid=False,
                                                         range=Range("(0, inf)"),
                                                         help="mu levels of the bound (a list)"), NODES_KEY)


def setting_T(setting, model) -> int:
    """T of a setting: given, or ``ceil(2 n sigma^2 / G1^2)`` (the smallest Theorem 1 allows)."""
    if setting.T == "theorem":
        return max(1, math.ceil(2.0 * setting.n * setting.sigma ** 2 / model.g1 ** 2))
    return int(setting.T)


def _T_value(setting, model) -> float:
    """:func:`setting_T` before it is rounded, ``inf`` if its formula overflows (for the checks)."""
    if setting.T == "theorem":
        return max(1.0, theorem_value(lambda: math.ceil(2.0 * setting.n * setting.sigma ** 2 / model.g1 ** 2)))
    return float(setting.T)


def setting_budget(setting, model) -> int:
    """C_s of a setting (0 for DPG-Lap)."""
    if setting.oracle != "sparse":
        return 0
    return resolve_budget(setting.budget, setting.n, setting.sigma, model.g1, setting_T(setting, model))


def privacy_row(setting, model, keys: dict) -> dict:
    """Privacy and the theorem's conditions of one setting (a row of ``privacy.csv``)."""
    T = setting_T(setting, model)
    budget = setting_budget(setting, model)
    batches = n_batches(setting)
    if setting.oracle == "lap":
        priv = lap_privacy(model.g1, setting.n, setting.sigma, T, batches, setting.delta)
        used = T
    else:
        priv = sparse_privacy(model.g1, setting.n, setting.sigma, budget, setting.delta)
        used = budget
    n_eff = setting.n // batches
    lo, hi = theorem_range(setting.oracle, model.g1, n_eff, setting.sigma, setting.beta)
    check = lemma1_check(setting.oracle, model.g1, model.coordinate_range, setting.n, setting.sigma, setting.beta,
                         T, batches, budget)
    return {**keys, "oracle": setting.oracle, "sigma": setting.sigma, "T": T, "budget": budget,
            "G1": model.g1, "delta": setting.delta, **priv,
            "theorem": "Theorem 1 (T)" if setting.oracle == "lap" else "Theorem 3 (C_s)",
            "range_lo": lo, "range_hi": hi, "theorem_ok": bool(lo <= used <= hi), **check}


class ConcentrationStudy(SagdStudy):
    """Frequency of ``||g~_t - g_t|| >= sqrt(d) sigma (1 + mu)`` against ``d beta + d e^(-mu)``."""

    markdown = staticmethod(render_concentration)
    figure = staticmethod(concentration_figure)

    name = "sagd_concentration"
    title = "Zhou et al. (2020) Theorems 1 and 3: concentration of the DPG-Lap and DPG-Sparse gradients"
    keys = CONCENTRATION_KEYS
    tables = ("summary", "privacy")
    warning_kinds = {
        "theorem": ("T or C_s outside the range of Theorem 1 or 3",
                    "the bound d beta + d e^-mu is not claimed there (table.md lists the conditions)"),
    }
    compute_sources = ("engine/dialect/rng", "models/erm.py", "studies/base.py", "studies/sagd/kernel.py",
                       "studies/sagd/common.py", "studies/sagd/concentration.py")
    table_columns = {
        "summary": {"oracle": "text", "sigma": "number", "mu": "number", "frequency": "number",
                    "frequency_se": "number", "bound": "number", "frequency_empirical": "number",
                    "frequency_empirical_se": "number", "bound_empirical": "number",
                    "frequency_generalization": "number", "frequency_generalization_se": "number",
                    "bound_generalization": "number", "T": "positive", "theorem_ok": "text", "lemma1_ok": "text",
                    "reps": "count", "n_failed": "count"},
        "privacy": {"oracle": "text", "sigma": "number", "T": "positive", "budget": "count", "delta": "number",
                    "epsilon_step": "number", "compositions": "count", "epsilon": "number", "epsilon_basic": "number",
                    "epsilon_lemma": "number", "theorem": "text", "range_lo": "number", "range_hi": "number",
                    "theorem_ok": "text", "tau": "number", "delta_star": "number", "epsilon_star": "number",
                    "epsilon_max": "number", "n_protected": "count", "n_min": "number", "lemma1_ok": "text",
                    "lemma1_vacuous": "text"},
    }

    def make_setting(self, values):
        values = model_values(values)
        if values["oracle"] != "sparse":
            values = {**values, "budget": None, "threshold": None}
        return super().make_setting(values)

    def seed_key(self, values):
        return data_seed_key(values)

    def validate(self, s, options):
        validate_batches(s, [s.oracle])
        model = checked_model(s, options["nodes"])
        T = _T_value(s, model)
        # a DPG-Lap step reads its batch, a DPG-Sparse step all of S (its two halves)
        points = s.n // n_batches(s) if s.oracle == "lap" else s.n
        check_steps("T", s.T, T, points, "T = ceil(2 n sigma^2 / G1^2)" if s.T == "theorem" else "T")
        budget = 0
        if s.oracle == "sparse":
            value = (theorem_value(lambda: resolve_budget("theorem", s.n, s.sigma, model.g1, 1))
                     if s.budget == "theorem" else float(setting_budget(s, model)))
            if not value <= 2 ** 53:
                raise ConfigError(f"budget = {show(s.budget)} gives C_s = ceil(n sigma^2 / (2 G1^2)) = {value:.4g} "
                                  f"at sigma = {s.sigma}, n = {s.n}; C_s must be at most 2^53")
            budget = setting_budget(s, model)
        check_eta(s, model)
        check_accounting(s.oracle, s, model, s.sigma, int(T), budget)

    def memory(self, s, options):
        return data_memory(s, options["nodes"])

    def chunk_shapes(self, s, options):
        return {"exceed": (2 * len(options["mu"]) + 1,), "steps": (), "paid": (), "ok": ()}

    def warnings(self, s, options):
        model = build_model(s, options["nodes"])
        row = privacy_row(s, model, {})
        if not row["theorem_ok"]:
            used = "T" if s.oracle == "lap" else "C_s"
            value = row["T"] if s.oracle == "lap" else row["budget"]
            theorem, lo, hi = row["theorem"].split(" (")[0], row["range_lo"], row["range_hi"]
            where = f"at sigma = {s.sigma}, n = {s.n}, beta = {s.beta}"
            if not lo <= hi:  # the theorem allows no T at all here
                return [("theorem", f"{theorem}'s range of {used} is empty {where} (it would need "
                                    f"{lo:.4g} <= {used} <= {hi:.4g}): the bound d beta + d e^-mu is not claimed "
                                    f"for any {used} there")]
            return [("theorem", f"{used} = {value} is outside {theorem}'s range [{lo:.4g}, {hi:.4g}] {where}: "
                                "the bound d beta + d e^-mu is not claimed there")]
        return []

    def steps(self, setting):
        return setting_T(setting, build_model(setting)) * setting.n

    def seconds(self, s, options):
        points = s.n // n_batches(s) if s.oracle == "lap" else s.n
        T = setting_T(s, build_model(s, options["nodes"]))
        return data_seconds(s.n, s.d) + path_seconds(T, points, s.d, options["nodes"], True)

    #: settings that differ in the noise and its steps run the same kernels: one pilot
    size_keys = ("n", "sigma", "T")

    def pilot_setting(self, setting, options, fraction):
        # the same data and noise, a fraction of the steps
        T = setting_T(setting, build_model(setting, options["nodes"]))
        return setting if fraction >= 1.0 else setting.replace(T=max(1, int(round(T * fraction))))

    def _warm(self, config, setting):
        # a tiny copy of the setting: its batches and halves are those of 8 points (the data drawn)
        s = setting.replace(n=8)
        model = build_model(s, config.options["nodes"])
        run = path_params(ORACLES[s.oracle], s, model, s.sigma, 2, 1, True)
        replicate_paths(model, as_generator(0), 8, [run], 0.0, [1.0], [])

    def prepare(self, setting, options, twin=False):
        model = build_model(setting, options["nodes"])
        T = setting_T(setting, model)
        run = path_params(ORACLES[setting.oracle], setting, model, setting.sigma, T, setting_budget(setting, model),
                          True)
        return setting, model, run, np.asarray(options["mu"]), twin

    def replicate(self, job, gen):
        setting, model, run, mu, twin = job
        (res,) = replicate_paths(model, gen, setting.n, [run], setting.w0, mu, [], twin=twin)
        # the counts compare with grad f(w_t): a population gradient that overflowed (a path far out) leaves
        # them meaningless, and its squared norms say so
        ok = res.stats[DIVERGED] == 0.0 and bool(np.isfinite(res.stats[[MIN_G2, SUM_G2]]).all())
        return {"exceed": res.exceed, "steps": res.stats[STEPS], "paid": res.stats[PAID], "ok": ok}

    def summarize(self, config, chunks):
        rows, privacy = [], []
        mu = np.asarray(config.options["mu"])
        m = mu.shape[0]
        shown = shown_keys(config, ("oracle", "sigma"))
        for setting, chunk in zip(config.settings, chunks):
            keys = {k: getattr(setting, k) for k in shown}
            model = build_model(setting, config.options["nodes"])
            prow = privacy_row(setting, model, keys)
            ok = chunk["ok"]
            exceed, steps, paid = chunk["exceed"][ok], chunk["steps"][ok], chunk["paid"][ok]
            d = setting.d
            gen_f, gen_se = pooled_frequency(exceed[:, 2 * m], steps)
            paid_mean, paid_se = mean_se(paid)
            prow.update({"queries": paid_mean, "queries_se": paid_se, "steps_mean": float(steps.mean()) if steps.size else math.nan})
            privacy.append(prow)
            for i, level in enumerate(mu):
                f, se = pooled_frequency(exceed[:, i], steps)
                f_emp, se_emp = pooled_frequency(exceed[:, m + i], steps)
                bound = d * setting.beta + d * math.exp(-level)
                rows.append({**keys, "oracle": setting.oracle, "sigma": setting.sigma, "mu": float(level),
                             "frequency": f, "frequency_se": se, "bound": bound,
                             "frequency_empirical": f_emp, "frequency_empirical_se": se_emp,
                             "bound_empirical": d * math.exp(-level),
                             "frequency_generalization": gen_f, "frequency_generalization_se": gen_se,
                             "bound_generalization": d * setting.beta, "beta": setting.beta,
                             "T": prow["T"], "steps": float(steps.mean()) if steps.size else math.nan,
                             "queries": paid_mean, "queries_se": paid_se,
                             "theorem_ok": prow["theorem_ok"], "lemma1_ok": prow["lemma1_ok"],
                             "reps": int(ok.sum()), "n_failed": int((~ok).sum())})
        return {"summary": rows, "privacy": privacy}


__all__ = ["CONCENTRATION_KEYS", "ConcentrationStudy", "privacy_row", "setting_T"]

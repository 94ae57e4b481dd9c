"""Study ``sagd_generalization``: train and test loss over epochs, SAGD against RMSprop and Adam (001, Section C).

One replication draws a training set of ``n`` points and runs every method
of the run on it, from the same start, for ``epochs`` passes (full batch: one
step per epoch; with ``batch_size = m``, ``floor(n / m)`` steps per epoch):
SAGD with DPG-Lap (``sagd_lap``), SAGD with DPG-Sparse (``sagd_sparse``),
and the non-private RMSprop (``rmsprop``: the same update with the exact
empirical gradient) and Adam (``adam``). At ``checkpoints`` epochs it records
the empirical loss on the training set (``train``) and the population loss
(``test``, exact: the test loss of an infinite test set). The summary has,
per method and epoch, mean train and test loss and their difference, the
generalization gap, with standard errors; ``overfit.csv`` has, per method,
the final test loss, its rise above its own minimum along the path
(``rise``), and the final test loss minus RMSprop's on the same samples
(``vs_rmsprop``, paired), each with its standard error. 001's claim
(Section C, Figure 3): SAGD's test loss stays low where RMSprop's and Adam's
rise.
"""

from __future__ import annotations


import numpy as np

from ...engine.runs.config import ConfigError, Key, Range, show
from ...engine.dialect.rng import as_generator
from ...inference.methods import names
from ...reporting.stats import mean_se
from .accounting import lap_privacy, sparse_privacy
from .common import (
    BATCH_KEY, DELTA_KEY, METHODS, MODEL_KEYS, N_KEY, NODES_KEY, SPARSE_KEYS, UPDATE_KEYS, budget_key, SagdStudy,
    build_model, check_accounting, check_eta, check_steps, checked_model, data_memory, data_seconds, data_seed_key,
    model_values, n_batches, path_params, path_seconds, positive_or, resolve_budget, shown_keys, theorem_value,
    validate_batches, with_default)
from .figures import generalization_figure
from .kernel import DIVERGED, LAP, PAID, SPARSE, replicate_paths
from .tables import render_generalization

GENERALIZATION_KEYS = MODEL_KEYS + (
    Key("sigma", "any", "theorem", convert=positive_or("theorem", high=1e100),
        help="Laplace scale of the oracles; 'theorem': n^-1/3 (Theorem 2)"),
    Key("epochs", "int", 100, range=Range("[1, 1000000]"), help="passes over the training set"),
    budget_key("T"),
) + SPARSE_KEYS + (BATCH_KEY,) + UPDATE_KEYS + (
    Key("beta1", "float", 0.9, range=Range("[0, 1)"), help="Adam's first-moment weight"),
    DELTA_KEY, with_default(N_KEY, 200),
    Key("methods", "choices", names("sagd_generalization", default=True), grid=False, choices=tuple(METHODS),
        help="methods run on the same samples"),
    Key("checkpoints", "int", 50, grid=False, range=Range("[1, 100000]"), help="epochs at which losses are recorded"),
    NODES_KEY,
)


def setting_sigma(setting) -> float:
    """``sigma``: given, or ``n^(-1/3)``."""
    return setting.n ** (-1.0 / 3.0) if setting.sigma == "theorem" else float(setting.sigma)


def checkpoint_epochs(epochs: int, count: int) -> np.ndarray:
    """``count + 1`` (or fewer, repeats dropped) evenly spaced epochs from 0 to ``epochs``."""
    return np.unique(np.round(np.linspace(0, epochs, min(count, epochs) + 1)).astype(np.int64))


class GeneralizationStudy(SagdStudy):
    """Train and test loss along SAGD, RMSprop and Adam on the same training sets."""

    markdown = staticmethod(render_generalization)
    figure = staticmethod(generalization_figure)

    name = "sagd_generalization"
    title = "Zhou et al. (2020) Section C: generalization gap of SAGD against RMSprop and Adam"
    keys = GENERALIZATION_KEYS
    tables = ("summary", "overfit", "privacy")
    compute_sources = ("engine/dialect/rng", "models/erm.py", "studies/base.py", "studies/sagd/kernel.py",
                       "studies/sagd/common.py", "studies/sagd/generalization.py")

    def make_setting(self, values):
        return super().make_setting(model_values(values))

    def seed_key(self, values):
        return data_seed_key(values)

    table_columns = {
        "summary": {"method": "text", "epoch": "count", "train_loss": "number", "train_loss_se": "number",
                    "test_loss": "number", "test_loss_se": "number", "gap": "number", "gap_se": "number",
                    "f_star": "number", "reps": "count", "n_failed": "count"},
        "overfit": {"method": "text", "final_test": "number", "final_test_se": "number", "min_test": "number",
                    "min_test_se": "number", "rise": "number", "rise_se": "number", "final_gap": "number",
                    "final_gap_se": "number", "f_star": "number", "reps": "count"},
    }
    # privacy.csv is not required: a run of the non-private methods alone (rmsprop, adam) has none

    def validate(self, s, options):
        methods = options["methods"]
        validate_batches(s, ["sparse"] if "sagd_sparse" in methods else [])
        model = checked_model(s, options["nodes"])
        sigma = setting_sigma(s)
        batches = n_batches(s)
        T = s.epochs * batches
        # DPG-Sparse reads all of S at each step, the others a batch
        points = s.n if "sagd_sparse" in methods else s.n // batches
        check_steps("epochs", s.epochs, T, points, f"T = epochs x {batches} batches")
        value = theorem_value(lambda: resolve_budget(s.budget, s.n, sigma, model.g1, T))
        if not value <= 2 ** 53:  # the kernel holds C_s in int64 whichever methods run
            raise ConfigError(f"budget = {show(s.budget)} gives C_s = {value:.4g} at sigma = {sigma:.4g}, n = {s.n}; "
                              "C_s must be at most 2^53")
        check_eta(s, model)
        budget = resolve_budget(s.budget, s.n, sigma, model.g1, T)
        for method, oracle in (("sagd_lap", "lap"), ("sagd_sparse", "sparse")):
            if method in methods:
                check_accounting(oracle, s, model, sigma, T, budget)

    def memory(self, s, options):
        out = data_memory(s, options["nodes"])
        curves = len(options["methods"]) * len(checkpoint_epochs(s.epochs, options["checkpoints"]))
        return out + [(8.0 * 2 * curves, f"train and test losses at {curves} epochs x methods")]

    def chunk_shapes(self, s, options):
        shape = (len(options["methods"]), len(checkpoint_epochs(s.epochs, options["checkpoints"])))
        return {"train": shape, "test": shape, "paid": (len(options["methods"]),), "ok": ()}

    def steps(self, setting):
        return setting.epochs * setting.n

    def seconds(self, s, options):
        batches = n_batches(s)
        per_method = path_seconds(s.epochs * batches, s.n // batches, s.d, options["nodes"], False)
        sparse = path_seconds(s.epochs * batches, s.n, s.d, options["nodes"], False)  # reads all of S a step
        losses = len(checkpoint_epochs(s.epochs, options["checkpoints"])) * (
            data_seconds(s.n, s.d) + path_seconds(1, 0, s.d, options["nodes"], True))
        return data_seconds(s.n, s.d) + sum((sparse if m == "sagd_sparse" else per_method) + losses
                                            for m in options["methods"])

    #: settings that differ in the noise and the passes run the same kernels: one pilot
    size_keys = ("n", "sigma", "epochs")

    def pilot_setting(self, setting, options, fraction):
        # the same data, fewer passes
        return setting if fraction >= 1.0 else setting.replace(epochs=max(1, int(round(setting.epochs * fraction))))

    def _warm(self, config, setting):
        # a tiny copy of the setting: its batches and halves are those of 8 points (the data drawn)
        s = setting.replace(n=8)
        model = build_model(s, config.options["nodes"])
        runs = [path_params(code, s, model, 0.1, 2, 1, False) for code in sorted(METHODS.values())]
        replicate_paths(model, as_generator(0), 8, runs, 0.0, [1.0], [0, 1])

    def runs(self, setting, model, options):
        """The paths of one replication, in the run's method order."""
        sigma = setting_sigma(setting)
        T = setting.epochs * n_batches(setting)
        budget = resolve_budget(setting.budget, setting.n, sigma, model.g1, T)
        return [path_params(METHODS[name], setting, model, sigma, T, budget, False) for name in options["methods"]]

    def prepare(self, setting, options, twin=False):
        model = build_model(setting, options["nodes"])
        epochs = checkpoint_epochs(setting.epochs, options["checkpoints"])
        return setting, model, self.runs(setting, model, options), epochs * n_batches(setting), twin

    def replicate(self, job, gen):
        setting, model, runs, ck, twin = job
        results = replicate_paths(model, gen, setting.n, runs, setting.w0, [1.0], ck, twin=twin)
        train = np.stack([r.train for r in results])
        test = np.stack([r.test for r in results])
        diverged = any(r.stats[DIVERGED] != 0.0 for r in results)
        # a DPG-Sparse path that spent its budget halts: its losses stay where it stopped
        for i, (run, r) in enumerate(zip(runs, results)):
            if run.method == SPARSE:
                last = np.flatnonzero(np.isfinite(test[i]))
                if last.size:
                    train[i, last[-1] + 1:] = train[i, last[-1]]
                    test[i, last[-1] + 1:] = test[i, last[-1]]
        ok = not diverged and bool(np.isfinite(train).all() and np.isfinite(test).all())
        return {"train": train, "test": test, "paid": np.array([r.stats[PAID] for r in results]), "ok": ok}

    def summarize(self, config, chunks):
        rows, overfit, privacy = [], [], []
        methods = list(config.options["methods"])
        shown = shown_keys(config)
        for setting, chunk in zip(config.settings, chunks):
            keys = {k: getattr(setting, k) for k in shown}
            model = build_model(setting, config.options["nodes"])
            epochs = checkpoint_epochs(setting.epochs, config.options["checkpoints"])
            sigma = setting_sigma(setting)
            batches = n_batches(setting)
            T = setting.epochs * batches
            budget = resolve_budget(setting.budget, setting.n, sigma, model.g1, T)
            ok = chunk["ok"]
            train, test, paid = chunk["train"][ok], chunk["test"][ok], chunk["paid"][ok]
            f_star = model.f_star()
            for i, method in enumerate(methods):
                for q, epoch in enumerate(epochs):
                    tr, te = train[:, i, q], test[:, i, q]
                    rows.append({**keys, "method": method, "epoch": int(epoch),
                                 **_mean_se("train_loss", tr), **_mean_se("test_loss", te),
                                 **_mean_se("gap", te - tr), "f_star": f_star,
                                 "reps": int(ok.sum()), "n_failed": int((~ok).sum())})
                final = test[:, i, -1]
                row = {**keys, "method": method, **_mean_se("final_test", final),
                       **_mean_se("min_test", test[:, i, :].min(axis=1)),
                       **_mean_se("rise", final - test[:, i, :].min(axis=1)),
                       **_mean_se("final_gap", final - train[:, i, -1])}
                if "rmsprop" in methods:
                    row.update(_mean_se("vs_rmsprop", final - test[:, methods.index("rmsprop"), -1]))
                row.update({**_mean_se("queries", paid[:, i]), "f_star": f_star, "reps": int(ok.sum())})
                overfit.append(row)
                code = METHODS[method]
                if code in (LAP, SPARSE):
                    priv = (lap_privacy(model.g1, setting.n, sigma, T, batches, setting.delta) if code == LAP
                            else sparse_privacy(model.g1, setting.n, sigma, budget, setting.delta))
                    privacy.append({**keys, "method": method, "sigma": sigma, "T": T,
                                    "budget": budget if code == SPARSE else 0, "G1": model.g1,
                                    "delta": setting.delta, **priv, **_mean_se("queries", paid[:, i])})
        out = {"summary": rows, "overfit": overfit}
        if privacy:  # none without a private method: no empty privacy.csv (write_csv refuses one)
            out["privacy"] = privacy
        return out


def _mean_se(name: str, values) -> dict:
    """``{name: mean, name_se: its standard error}`` (:func:`ldpsim.reporting.stats.mean_se`)."""
    mean, se = mean_se(values)
    return {name: mean, f"{name}_se": se}


__all__ = ["GENERALIZATION_KEYS", "GeneralizationStudy", "checkpoint_epochs", "setting_sigma"]

"""The trajectory study: how fast the last iterate and the average of LDP-SGD approach theta*.

One replication runs one path (:mod:`.kernel`) and records the deviations
``theta_k - theta*`` (estimator ``last``) and ``theta_bar_k - theta*``
(``average``) at ``checkpoints`` log-spaced steps from ``k_min`` to ``n``.
Each ``metric`` turns a deviation into a distance: ``parameter`` is its
squared norm, ``loss`` the loss gap ``F(theta* + deviation) - F(theta*)``
of models that define a loss (computed by quadrature, :meth:`excess_risk`).

Tables:

* ``summary.csv``: per setting, estimator, metric and checkpoint, the mean
  distance over replications with its standard error, and the exact value
  of the linearized recursion (:mod:`.theory`) where ``G`` and ``S`` are known;
* ``rates.csv``: per setting, estimator and metric the slope of
  ``log distance`` against ``log k`` over the last ``fit_decades`` decades
  with a 95% interval, next to the ``theory`` exponent (strongly convex
  rates, or 004's Table 1) and the linearized recursion's slope;
* ``bias.csv``: per setting, estimator and coordinate, the mean deviation at
  ``k = n`` with its standard error, next to where the recursion converges
  (``limit``: ``theta*``, or the root of the mean clipped gradient);
* ``guarantees.csv``: the privacy each user gets in each setting.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from ...engine.runs.usercode import display
from ...engine.runs.config import ConfigError, Key, Range, check_range
from ...engine.dialect.lanes import vector_width
from ...engine.dialect.rng import as_generator
from ...inference.streaming import checkpoint_grid
from ...models import MODELS, build_model, model_class
from ...recursion.keys import GAMMA_WARNING_KINDS, N_KEY, PATH_KEYS, gamma_warnings, path_seconds, path_seed_key, \
    path_values, validate_path, with_model_keys
from ...reporting.rates import rate_row
from ...reporting.stats import mean_se
from ..base import Study, pilot_n
from .kernel import replication, replications, run_trajectories, squared_norms
from .summary import trajectory_rows
from .theory import THEORIES, linearized_curves, mean_field, theory_slope

#: The estimators a replication records, as ``summary.csv`` and ``rates.csv`` name them.
ESTIMATORS = ("last", "average")
#: What a deviation is turned into: its squared norm, or the loss gap.
METRICS = ("parameter", "loss")
#: Grid keys a figure can be laid out by.
_LAYOUT_KEYS = tuple(k.name for k in PATH_KEYS) + (N_KEY.name,)

TRAJECTORY_KEYS = (
    Key("checkpoints", "int", 50, grid=False, range=Range("[2, 10000]"),
        help="log-spaced checkpoints from k_min to n (repeats after rounding dropped)"),
    Key("k_min", "int", 10, grid=False, range=Range("[1, inf)"), help="first checkpoint"),
    # n <= 2^53 < 10^16: more decades than 16 fit the whole path anyway (and 10^1e300 overflows)
    Key("fit_decades", "float", 1.0, grid=False, range=Range("(0, 16]"),
        help="rates are fitted over the checkpoints k >= n / 10^fit_decades"),
    Key("metrics", "choices", ("parameter",), grid=False, choices=METRICS,
        help="parameter: ||. - theta*||^2; loss: F(.) - F(theta*) (models with a loss)"),
    Key("theory", "choice", "strongly_convex", grid=False, choices=THEORIES,
        help="exponents next to the fitted slopes: strongly convex rates, or Shi et al.'s Table 1"),
    Key("panels", "choice", None, grid=False, nullable=True, choices=_LAYOUT_KEYS,
        help="figures: a column of panels per value of this key, a row per estimator, a curve per other setting"),
    Key("figure_per", "choice", None, grid=False, nullable=True, choices=_LAYOUT_KEYS,
        help="figures: one file per value of this key"),
)


def metric_samples(model, deviations: np.ndarray, metric: str) -> np.ndarray:
    """``(R, C)`` distances of ``(R, C, d)`` deviations: squared norms, or loss gaps ``F(theta* + dev) - F(theta*)``."""
    if metric == "parameter":
        return squared_norms(deviations)
    r, c, d = deviations.shape
    if r == 0:
        return np.zeros((0, c))
    return model.excess_risk(model.theta_star() + deviations.reshape(r * c, d)).reshape(r, c)


def bias_rows(keys: dict, estimator: str, model, final: np.ndarray, n_failed: int, field=None) -> list[dict]:
    """Per coordinate: the mean deviation at ``k = n`` with its SE, next to where the recursion is expected.

    ``final`` is ``(R, d)``. ``limit_bias = limit - theta*`` is where a biased
    (clipped) recursion converges; ``field`` the noise-free (mean-field)
    path's deviation from ``theta*`` at ``n``, and ``transient = field -
    limit_bias`` what it has still to travel (blank for models without a
    mean gradient); ``z = (bias - limit_bias - transient) / bias_se``.
    """
    star, limit = model.theta_star(), model.limit()
    rows = []
    for j in range(final.shape[1]):
        mean, se = mean_se(final[:, j])
        want = float(limit[j] - star[j])
        trans = None if field is None else float(field[j]) - want
        expected = want + (trans or 0.0)
        rows.append({**keys, "estimator": estimator, "coord": j, "theta_star": float(star[j]),
                     "limit": float(limit[j]), "bias": mean, "bias_se": se, "limit_bias": want,
                     "transient": trans,
                     "z": (mean - expected) / se if se and math.isfinite(se) and se > 0 else math.nan,
                     "reps": int(final.shape[0]), "n_failed": n_failed})
    return rows


def setting_checkpoints(setting, options) -> np.ndarray:
    """The checkpoints of ``setting``'s paths."""
    return checkpoint_grid(setting.n, options["checkpoints"], options["k_min"])


class TrajectoryStudy(Study):
    """Mean squared error of the last iterate and of the average along the path, and its rate."""

    name = "trajectory"
    title = "E||theta_k - theta*||^2 of the last iterate and the average at log-spaced k, and their rates"
    keys = PATH_KEYS + (N_KEY,) + TRAJECTORY_KEYS
    tables = ("summary", "rates", "bias", "guarantees")
    table_columns = {
        "summary": {"estimator": "text", "metric": "text", "k": "positive", "distance": "number",
                    "distance_se": "number", "reps": "count", "n_failed": "count", "linearized": "number?",
                    "transient": "number?"},
        "rates": {"estimator": "text", "metric": "text", "slope": "number", "slope_lo": "number",
                  "slope_hi": "number", "theory": "number?", "slope_se": "number", "k_from": "count",
                  "k_to": "count", "points": "count", "linearized_slope": "number?"},
        "bias": {"estimator": "text", "coord": "count", "theta_star": "number", "bias": "number",
                 "bias_se": "number", "reps": "count", "n_failed": "count"},
        "guarantees": {"guarantee": "text"},
    }
    warning_kinds = GAMMA_WARNING_KINDS
    # what a chunk holds: kernel.py's replication (the summaries of study.py are recomputed on --resume)
    compute_sources = ("engine/dialect/dispatch.py", "engine/dialect/rng", "privacy", "models",
                       "inference/streaming.py", "recursion", "studies/base.py", "studies/trajectory/kernel.py")

    def config_keys(self, mapping):
        return with_model_keys(self.keys, mapping)

    def run_meta(self, config):
        from ...models import user as user_models

        return user_models.run_meta(config.settings, build_model)

    def make_setting(self, values):
        return super().make_setting(path_values(values))

    def seed_key(self, values):
        return path_seed_key(values)

    def validate(self, s, options):
        validate_path(s)
        k_min = options["k_min"]
        check_range("k_min", k_min, k_min < s.n, f"[1, n) = [1, {s.n})")
        if "loss" in options["metrics"] and not model_class(s.model).has_loss:
            with_loss = ", ".join(name for name, cls in MODELS.items() if cls.has_loss)
            raise ConfigError(f"metrics contains 'loss' but model {s.model!r} defines no loss; models with one: "
                              f"{with_loss}")

    def chunk_identity(self, config):
        # what a chunk holds depends on the checkpoints only (metrics, theory and layout are read at summary time)
        return {k: config.options[k] for k in ("checkpoints", "k_min")}

    def warnings(self, s, options):
        return gamma_warnings(s)

    def chunk_shapes(self, setting, options):
        shape = (len(setting_checkpoints(setting, options)), model_class(setting.model).dimension(setting))
        return {"last": shape, "average": shape, "ok": ()}

    def steps(self, setting):
        return setting.n

    def seconds(self, setting, options):
        return path_seconds(setting)

    def pilot_setting(self, setting, options, fraction):
        return pilot_n(setting, fraction)

    def warm_up_units(self, config, lanes=None):
        return [partial(run_trajectories, model, [as_generator(0)], 16, setting.c, setting.gamma, setting.theta0,
                        np.array([4, 16]), setting.batch_size, self.lane_width(setting, config.options, lanes))
                for setting, model in self.distinct_kernels(config, build_model)]

    def prepare(self, setting, options, twin=False):
        return setting, build_model(setting), setting_checkpoints(setting, options), twin

    def replicate(self, job, gen):
        s, model, checkpoints, twin = job
        return replication(model, gen, s, checkpoints, twin)

    def replicate_lanes(self, job, gens, width=None):
        s, model, checkpoints, twin = job
        return replications(model, gens, s, checkpoints, twin, width)

    def default_lanes(self, setting, options):
        return vector_width()

    def summarize(self, config, chunks):
        rows, rates, bias, guarantees = [], [], [], []
        metrics, theory = config.options["metrics"], config.options["theory"]
        for setting, chunk in zip(config.settings, chunks):
            keys = {k: display(getattr(setting, k)) for k in config.varied}  # a user's file: its path
            model = build_model(setting)
            ok = chunk["ok"]
            n_failed = int((~ok).sum())
            checkpoints = setting_checkpoints(setting, config.options)
            linear = linearized_curves(model, setting, checkpoints, metrics)
            field = mean_field(model, setting, checkpoints)
            for estimator in ESTIMATORS:
                deviations = chunk[estimator][ok]
                for metric in metrics:
                    samples = metric_samples(model, deviations, metric)
                    lin = None if linear is None else linear[(metric, estimator)]
                    trans = None if field is None else metric_samples(model, field[estimator][None], metric)[0]
                    rows += trajectory_rows(keys, estimator, checkpoints, samples, n_failed, metric, lin, trans)
                    rates.append(rate_row(keys, estimator, checkpoints, samples, config.options["fit_decades"],
                                          theory_slope(estimator, setting.gamma, metric, theory), metric, lin))
                expected = None if field is None else field[estimator][-1]
                bias += bias_rows(keys, estimator, model, deviations[:, -1, :], n_failed, expected)
            guarantees.append({**keys, **model.privacy_summary()})
        return {"summary": rows, "rates": rates, "bias": bias, "guarantees": guarantees}

    def write_outputs(self, out, tables, meta):
        from .figure import write_figure
        from .tables import render_markdown

        (out / "table.md").write_text(render_markdown(tables, self.table_title(meta)))
        values = meta.get("config", {})
        return ["table.md"] + write_figure(out, tables, self.table_title(meta), values.get("panels"),
                                           values.get("figure_per"))

    def render(self, tables, meta):
        from .tables import render_markdown

        return render_markdown(tables, self.table_title(meta))


__all__ = ["ESTIMATORS", "METRICS", "TRAJECTORY_KEYS", "TrajectoryStudy", "bias_rows", "metric_samples",
           "setting_checkpoints", "squared_norms", "theory_slope"]

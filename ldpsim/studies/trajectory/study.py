"""The trajectory study: how fast the last iterate and the average of LDP-SGD approach theta*.

One replication runs one path (:mod:`.kernel`) and records the deviations
``theta_k - theta*`` (estimator ``last``) and ``theta_bar_k - theta*``
(``average``) at ``checkpoints`` log-spaced steps from ``k_min`` to ``n``; the
distance is their squared norm.
The summary has, per setting, estimator and checkpoint, the mean over
replications with its standard error (``summary.csv``), and per setting and
estimator the slope of ``log distance`` against ``log k`` over the last
``fit_decades`` decades with a 95% interval, next to the theoretical slope
(``rates.csv``): ``-gamma`` for the last iterate (0 < gamma < 1) and ``-1``
for the average (1/2 < gamma < 1), for the strongly convex models of 000.
"""

from __future__ import annotations

import math

import numpy as np

from ...engine.config import Key, Range, check_range
from ...engine.rng import as_generator
from ...inference.streaming import checkpoint_grid
from ...models import MODELS, build_model
from ...recursion.keys import GAMMA_WARNING_KINDS, N_KEY, PATH_KEYS, gamma_warnings, path_seed_key, path_values, \
    validate_path
from ..base import Study, title_of
from .kernel import run_trajectory, trajectory_twin
from .summary import rate_row, trajectory_rows

#: The estimators a replication records, as ``summary.csv`` and ``rates.csv`` name them.
ESTIMATORS = ("last", "average")

TRAJECTORY_KEYS = (
    Key("checkpoints", "int", 50, grid=False, range=Range("[2, 10000]"),
        help="log-spaced checkpoints from k_min to n (repeats after rounding dropped)"),
    Key("k_min", "int", 10, grid=False, range=Range("[1, inf)"), help="first checkpoint"),
    # n <= 2^53 < 10^16: more decades than 16 fit the whole path anyway (and 10^1e300 overflows)
    Key("fit_decades", "float", 1.0, grid=False, range=Range("(0, 16]"),
        help="rates are fitted over the checkpoints k >= n / 10^fit_decades"),
)


def theory_slope(estimator: str, gamma: float):
    """The known decay exponent of ``E||. - theta*||^2`` (strongly convex risk), or ``None``.

    Last iterate: ``eta_k ~ k^-gamma`` for ``0 < gamma < 1``. Average:
    ``1/k`` (Polyak-Juditsky) for ``1/2 < gamma < 1``; outside these ranges
    the rate depends on ``c`` and the Hessian, and none is given.
    """
    if estimator == "last":
        return -gamma if 0.0 < gamma < 1.0 else None
    return -1.0 if 0.5 < gamma < 1.0 else None


def squared_norms(deviations: np.ndarray) -> np.ndarray:
    """``||deviation||^2`` per replication and checkpoint from ``(R, C, d)`` deviations."""
    return np.einsum("rcd,rcd->rc", deviations, deviations)


def setting_checkpoints(setting, options) -> np.ndarray:
    """The checkpoints of ``setting``'s paths."""
    return checkpoint_grid(setting.n, options["checkpoints"], options["k_min"])


class TrajectoryStudy(Study):
    """Mean squared error of the last iterate and of the average along the path, and its rate."""

    name = "trajectory"
    title = "E||theta_k - theta*||^2 of the last iterate and the average at log-spaced k, and their rates"
    keys = PATH_KEYS + (N_KEY,) + TRAJECTORY_KEYS
    tables = ("summary", "rates")
    table_columns = {
        "summary": {"estimator": "text", "k": "positive", "distance": "number", "distance_se": "number",
                    "reps": "count", "n_failed": "count"},
        "rates": {"estimator": "text", "slope": "number", "slope_lo": "number", "slope_hi": "number",
                  "theory": "number?", "slope_se": "number", "k_from": "count", "k_to": "count", "points": "count"},
    }
    warning_kinds = GAMMA_WARNING_KINDS
    compute_sources = ("engine/dispatch.py", "engine/rng.py", "privacy", "models", "inference/streaming.py",
                       "recursion", "studies/base.py", "studies/trajectory/kernel.py",
                       "studies/trajectory/study.py")

    def make_setting(self, values):
        return super().make_setting(path_values(values))

    def seed_key(self, values):
        return path_seed_key(values)

    def validate(self, s, options):
        validate_path(s)
        k_min = options["k_min"]
        check_range("k_min", k_min, k_min < s.n, f"[1, n) = [1, {s.n})")

    def warnings(self, s, options):
        return gamma_warnings(s)

    def chunk_shapes(self, setting, options):
        shape = (len(setting_checkpoints(setting, options)), MODELS[setting.model].dim)
        return {"last": shape, "average": shape, "ok": ()}

    def steps(self, setting):
        return setting.n

    def warm_up(self, config):
        for setting, model in self.distinct_kernels(config, build_model):
            run_trajectory(model, as_generator(0), 16, setting.c, setting.gamma, setting.theta0, np.array([4, 16]),
                           setting.batch_size)

    def prepare(self, setting, options, twin=False):
        return setting, build_model(setting), setting_checkpoints(setting, options), twin

    def replicate(self, job, gen):
        s, model, checkpoints, twin = job
        path = trajectory_twin if twin else run_trajectory
        last, average, steps = path(model, gen, s.n, s.c, s.gamma, s.theta0, checkpoints, s.batch_size)
        ok = steps == s.n and bool(np.isfinite(squared_norms(np.stack([last, average]))).all())
        return {"last": last, "average": average, "ok": ok}  # deviations from theta*, (C, d) each

    def summarize(self, config, chunks):
        rows, rates = [], []
        for setting, chunk in zip(config.settings, chunks):
            keys = {k: getattr(setting, k) for k in config.varied}
            ok = chunk["ok"]
            checkpoints = setting_checkpoints(setting, config.options)
            for estimator in ESTIMATORS:
                samples = squared_norms(chunk[estimator][ok])
                rows += trajectory_rows(keys, estimator, checkpoints, samples, int((~ok).sum()))
                rates.append(rate_row(keys, estimator, checkpoints, samples, config.options["fit_decades"],
                                      theory_slope(estimator, setting.gamma)))
        return {"summary": rows, "rates": rates}

    def write_outputs(self, out, tables, meta):
        from .figure import write_figure
        from .tables import render_markdown

        (out / "table.md").write_text(render_markdown(tables, self.table_title(meta)))
        return ["table.md"] + write_figure(out, tables, self.table_title(meta))

    def render(self, tables, meta):
        from .tables import render_markdown

        return render_markdown(tables, self.table_title(meta))

    def table_title(self, meta):
        return title_of(meta, [k.name for k in self.keys if k.grid])


__all__ = ["ESTIMATORS", "TRAJECTORY_KEYS", "TrajectoryStudy", "setting_checkpoints", "squared_norms", "theory_slope"]

"""The coverage study (000, Tables 1-2): coverage and length of confidence intervals for theta*.

One replication runs one LDP-SGD path (:func:`ldpsim.recursion.run_path`),
which streams the state every interval method needs, then builds each
method's interval from it (:mod:`ldpsim.inference.intervals`). A chunk holds,
per replication, ``theta_bar`` ``(d,)``, the interval ends ``bounds``
``(n_methods, d, 2)`` and ``ok``. The summary has one row per setting x
method x coordinate with coverage, mean length, bias, SD and SE ratio, each
with its standard error (:mod:`.summary`); the tables are laid out as the
paper's (:mod:`.tables`), and a gamma x beta sweep gets heat maps
(:mod:`.heatmaps`).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ...engine.config import ConfigError, Key, Range, check_range
from ...engine.errors import MissingExtra
from ...engine.rng import as_generator
from ...inference import intervals
from ...inference.intervals import DEFAULT_METHODS, METHODS, MULTIPLIERS, uses_blocks
from ...inference.streaming import StreamLayout
from ...models import MODELS, build_model
from ...recursion import run_path
from ...recursion.keys import (GAMMA_WARNING_KINDS, N_KEY, PATH_KEYS, gamma_warnings, path_seed_key, path_values,
                               validate_path)
from ...recursion.twins import path_twin
from ...reporting.csvio import write_csv  # noqa: F401  (re-exported for scripts)
from ..base import Study, title_of
from .summary import summarize
from .tables import render_latex, render_markdown

#: The keys of the interval methods, grid axes after the path's keys and before ``n``.
INFERENCE_KEYS = (
    Key("beta", "float", 0.75, range=Range("(0, 1)"), help="block length floor(n^beta) of BB"),
    Key("B", "int", 500, range=Range("[1, inf)"), help="bootstrap draws"),
    Key("level", "float", 0.9, range=Range("(0, 1)"), help="nominal coverage"),
    Key("multiplier", "choice", "uniform", choices=MULTIPLIERS, help="law of the bootstrap multipliers"),
)
METHODS_KEY = Key("methods", "choices", DEFAULT_METHODS, grid=False, choices=METHODS, help="interval methods")


def stream_layout(setting, methods) -> StreamLayout:
    """Where the blocks and batches of ``setting``'s paths end, for ``methods``."""
    return StreamLayout.build(setting.n, setting.beta, setting.gamma, blocks=uses_blocks(methods),
                              batches="BM" in methods)


class CoverageStudy(Study):
    """Coverage and length of BB, BBjoint, BM, SN and oracle intervals (000)."""

    name = "coverage"
    title = "coverage and length of confidence intervals for theta* (000, Tables 1-2)"
    keys = PATH_KEYS + INFERENCE_KEYS + (N_KEY, METHODS_KEY)
    warning_kinds = {
        **GAMMA_WARNING_KINDS,
        "beta": ("beta <= gamma", "Theorem 3.2 (block bootstrap) needs gamma < beta"),
        "gaussian": ("multiplier = 'gaussian'", "unbounded; Theorem 3.2 asks bounded multipliers"),
    }
    compute_sources = ("engine/dispatch.py", "engine/rng.py", "privacy", "models", "inference", "recursion",
                       "studies/base.py", "studies/coverage/study.py")

    # --- configuration

    def make_setting(self, values):
        values = path_values(values)
        return super().make_setting(values)

    def seed_key(self, values):
        return path_seed_key(values)

    def validate(self, s, options):
        validate_path(s)
        note = MODELS[s.model].coverage_note
        if note:
            raise ConfigError(f"model = {s.model!r} runs in the trajectory study only: it {note}")
        methods = options["methods"]
        if "SN" in methods:
            check_range("level", s.level, 0.05 <= s.level <= 0.9999, "[0.05, 0.9999] (SN critical values)")
        if "BM" in methods and s.gamma >= 1.0:
            raise ConfigError(f"gamma = {s.gamma} leaves no batch-means batches; BM needs gamma < 1")
        layout = stream_layout(s, methods)
        if uses_blocks(methods) and not layout.enough_blocks:
            raise ConfigError(
                f"n = {s.n} is too small for two bootstrap blocks with beta = {s.beta} "
                f"(block length {layout.block_len}); raise n or lower beta"
            )
        if "BM" in methods and not layout.enough_batches:
            raise ConfigError(f"n = {s.n} is too small for two batch-means batches with gamma = {s.gamma}; raise n")

    def warnings(self, s, options):
        out = gamma_warnings(s)
        if uses_blocks(options["methods"]):
            if s.beta <= s.gamma:
                out.append(("beta", f"beta = {s.beta} <= gamma = {s.gamma}: Theorem 3.2 (block bootstrap) needs "
                                    "gamma < beta"))
            if s.multiplier == "gaussian":
                out.append(("gaussian", "multiplier = 'gaussian' is unbounded; Theorem 3.2 asks bounded multipliers"))
        return out

    # --- computing

    def steps(self, setting):
        return setting.n

    def warm_up(self, config):
        seen = set()
        for setting in config.settings:
            model = build_model(setting)
            import numba

            kind = numba.typeof(model.kernel_params())  # nested records (noise, covariates) count
            if kind in seen:
                continue
            seen.add(kind)
            small = setting.replace(n=64, beta=0.5)
            run_path(model, as_generator(0), small.n, small.c, small.gamma, small.theta0,
                     stream_layout(small, config.methods), small.batch_size)

    def prepare(self, setting, options, twin=False):
        methods = options["methods"]
        model = build_model(setting)
        return setting, methods, model, stream_layout(setting, methods), model.sigma(setting.batch_size), twin

    def replicate(self, job, gen):
        s, methods, model, layout, sigma, twin = job
        path = path_twin if twin else run_path
        state = path(model, gen, s.n, s.c, s.gamma, s.theta0, layout, s.batch_size)
        if twin:
            state = state[0]
        bounds = np.full((len(methods), model.dim, 2), np.nan)
        ok = False
        if state.finite(s.n):
            bounds = intervals.intervals(methods, state, layout, gen, n_boot=s.B, law=s.multiplier, level=s.level,
                                         sigma=sigma)
            ok = bool(np.isfinite(bounds).all())  # theta_bar is finite: state.finite held
        return {"theta_bar": state.theta_bar, "bounds": bounds, "ok": ok}

    # --- summarising and drawing

    def summarize(self, config, chunks):
        return {"summary": summarize(config, chunks)}

    def write_outputs(self, out, tables, meta):
        rows = tables["summary"]
        (out / "table.md").write_text(render_markdown(rows, self.table_title(meta)))
        (out / "table.tex").write_text(render_latex(rows))
        return ["table.md", "table.tex"] + write_sweep_maps(out, rows)

    def render(self, tables, meta):
        return render_markdown(tables["summary"], self.table_title(meta))

    def table_title(self, meta):
        return title_of(meta, [k.name for k in self.keys if k.grid])


def write_sweep_maps(out: Path, rows: list[dict]) -> list[str]:
    """Heat maps (:mod:`.heatmaps`) if ``gamma`` and ``beta`` both vary; file names written.

    Without matplotlib prints one line to stderr saying the maps were skipped
    and returns ``[]``; a run without a gamma x beta grid writes none.
    """
    from .heatmaps import is_sweep, write_heatmaps

    if not is_sweep(rows):
        return []
    try:
        return [p.name for p in write_heatmaps(rows, out)]
    except MissingExtra as exc:
        print(f"ldpsim: heat maps skipped: {exc}", file=sys.stderr)
        return []


__all__ = ["CoverageStudy", "INFERENCE_KEYS", "METHODS_KEY", "stream_layout", "write_sweep_maps"]

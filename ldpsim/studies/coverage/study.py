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

import dataclasses
import math
import sys
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ...engine.runs import usercode
from ...engine.runs.config import ConfigError, Key, as_list, check_range, check_run_memory, show
from ...engine.errors import MissingExtra
from ...engine.dialect.lanes import vector_width
from ...engine.runs.resources import FLOAT
from ...engine.dialect.rng import as_generator
from ...inference import intervals
from ...inference.intervals import RESOLVED_ULPS, resolved, uses_batches, uses_blocks
from ...inference.methods import BATCH_METHODS, DEFAULT_METHODS, ZOO_METHODS, keys_of, names
from ...inference.methods.bootstrap import MIN_BOOTSTRAP_DRAWS, min_bootstrap_draws
from ...inference import user_methods
from ...inference.streaming import StreamLayout, floor_power
from ...models import build_model, model_class
from ...models import user as user_models
from ...recursion.kernels import run_paths_lanes
from ...recursion.keys import (GAMMA_WARNING_KINDS, N_KEY, PATH_KEYS, _user_key, gamma_warnings, path_seconds,
                               path_seed_key, path_values, validate_path, with_model_keys)
from ...recursion.twins import path_twin
from ...reporting.csvio import write_csv  # noqa: F401  (re-exported for scripts)
from ..base import MANY_BATCHES, Study, pilot_n, stack
from .figures import write_coverage_figure
from .looks import (LOOK_KEY_NAMES, LOOK_KEYS, LOOKS_COLUMNS, UNIFORM_COLUMNS, look_grid, look_memory,
                    look_replication, look_tables, render_uniform, validate_looks, write_look_outputs)
from .releases import validate_releases
from .summary import key_columns, summarize
from .tables import render_latex, render_markdown
from .zoo import (ZOO_KEYS, Stopwatch, classic_methods, idle_zoo_keys, replication_index, state_floats, validate_zoo,
                  zoo_bounds, zoo_cost, zoo_generators, zoo_methods, zoo_spec)
from .zoo_tables import ZOO_COLUMNS, write_zoo_outputs, zoo_rows

#: The keys of the interval methods, grid axes after the path's keys and before ``n``, as the methods declare them
#: (:mod:`ldpsim.inference.methods`: beta, B, level, multiplier).
INFERENCE_KEYS = keys_of(names("coverage"), grid=True)
_INFERENCE_NAMES = tuple(k.name for k in INFERENCE_KEYS)


@dataclass(frozen=True)
class MethodsKey(Key):
    """The ``methods`` key: the built-in methods' names (kept in their table order) and users' methods.

    A user's method is named as a user's model is, ``path/to/file.py:Class``
    or ``module:Class`` (:mod:`ldpsim.inference.user_methods`); the value holds
    it canonical (with its source's hash) after the built-in ones, in the
    order given. A list of built-in names alone parses as it always has.
    """

    def parse(self, value):
        given = as_list(value)
        if isinstance(value, dict) or not any(user_methods.is_user_method(v) for v in given):
            return super().parse(value)
        builtins = [v for v in given if not user_methods.is_user_method(v)]
        users = tuple(dict.fromkeys(user_methods.canonical(v) for v in given if user_methods.is_user_method(v)))
        out = (super().parse(builtins) if builtins else ()) + users
        labels = [user_methods.label(m) for m in out]
        twice = next((name for name in labels if labels.count(name) > 1), None)
        if twice is not None:
            raise ConfigError(f"{self.name} names two methods called {twice!r}: give the user's class another "
                              "name (its class attribute name)")
        return out


METHODS_KEY = MethodsKey("methods", "choices", DEFAULT_METHODS, grid=False, choices=names("coverage"),
                         help="interval methods (the zoo's: docs/zoo.md; NPRR's, with looks: docs/sequential.md); a "
                              "user's: path/to/file.py:Class (docs/extending.md)")


def with_method_keys(keys: tuple, mapping: dict) -> tuple:
    """``keys`` and those of the users' methods a raw config names: each parameter of its ``__init__``, one value a run.

    Checked by its default's type and the class's ``ranges``, as a user's
    model's keys are; a parameter named as a key of the run is refused.
    """
    raw = mapping.get("methods")
    names_ = {k.name for k in keys}
    added: dict[str, Key] = {}
    for value in as_list(raw) if not isinstance(raw, dict) else []:
        if not user_methods.is_user_method(value):
            continue
        cls = user_methods.method_class(user_methods.canonical(value))
        for name in cls.keys:
            if name in names_ or name in ("reps", "seed", "study"):
                raise ConfigError(f"methods entry {usercode.shown(value)!r}: its parameter {name!r} has the name of "
                                  f"the config key {name}; rename the parameter")
            key = _user_key(cls, name, cls.key_defaults[name], (cls.ranges or {}).get(name),
                            str((cls.descriptions or {}).get(name, "")) or f"key of method {cls.name!r}")
            added.setdefault(name, dataclasses.replace(key, grid=False))
    return keys + tuple(added.values())


def user_methods_of(methods) -> tuple:
    """The users' methods among ``methods`` (their canonical values), in their order."""
    return tuple(m for m in methods if user_methods.is_user_method(m))


def own_pass_methods(methods) -> tuple:
    """The methods whose interval a run of the path itself gives (the zoo's and users'), in their order.

    They have a validity and a point estimate of their own per replication
    (the chunks' ``method_ok``, ``estimate``), and at a look ``t`` the interval
    of a run of ``n = t`` (:meth:`CoverageStudy._zoo_looks`).
    """
    return tuple(m for m in methods if m in ZOO_METHODS or user_methods.is_user_method(m))


class _UserMethod(NamedTuple):
    """A user's method in a run: its config value, the instance built with the run's keys, how messages name it.

    ``make``: its state maker for the kernels of a group of settings (:class:`~ldpsim.inference.user_methods.StateMaker`).
    """

    value: str
    method: object
    shown: str
    make: object = None


def _batch_user(methods) -> str:
    """The first of ``methods`` that reads the batch-means batches (for messages)."""
    return next(m for m in methods if m in BATCH_METHODS)


class _Job(NamedTuple):
    """What the replications of a group of settings share (:meth:`CoverageStudy._prepare`)."""

    settings: list
    methods: tuple
    model: object
    layouts: list
    sigma: np.ndarray
    twin: bool
    options: dict
    zoo: object  # the ZooSpec of the zoo's methods, or None
    alone: dict  # per zoo method, the ZooSpec of it alone: the kernel pass that runs it (None without the zoo)
    hessian: object  # G of the model for plugin_oracle (None without it): computed once, a quadrature for logistic
    users: tuple = ()  # the users' methods (_UserMethod), their states streamed in the main path's pass

    def user_states(self):
        """Each user's method's state maker for the kernels, ``make(lanes)`` (``None``: there are none)."""
        return [u.make for u in self.users] if self.users else None


def stream_layout(setting, methods) -> StreamLayout:
    """Where the blocks and batches of ``setting``'s paths end, for ``methods``."""
    return StreamLayout.build(setting.n, setting.beta, setting.gamma, blocks=uses_blocks(methods),
                              batches=uses_batches(methods))


class CoverageStudy(Study):
    """Coverage and length of BB, BBjoint, BM, SN and oracle intervals (000)."""

    name = "coverage"
    title = "coverage and length of confidence intervals for theta* (Dette & Graw 2024, Tables 1-2)"
    keys = PATH_KEYS + INFERENCE_KEYS + (N_KEY, METHODS_KEY) + ZOO_KEYS + LOOK_KEYS
    tables = ("summary", "zoo", "looks", "uniform")
    threads = True  # a replication is its path kernels and the intervals' numpy: local runs in threads
    warning_kinds = {
        **GAMMA_WARNING_KINDS,
        "beta": ("beta <= gamma", "Theorem 3.2 (block bootstrap) needs gamma < beta"),
        "gaussian": ("multiplier = 'gaussian'", "unbounded; Theorem 3.2 asks bounded multipliers"),
        "idle_zoo_key": ("a zoo key without its method", "it changes nothing"),
    }
    compute_sources = ("engine/dialect/dispatch.py", "engine/dialect/rng", "privacy", "models", "inference",
                       "recursion", "studies/base.py", "studies/coverage/study.py", "studies/coverage/zoo.py")
    table_columns = {"summary": {
        "method": "text", "coord": "count", "n": "positive", "reps": "count", "n_failed": "count", "coverage": "number",
        "coverage_se": "number", "length": "number", "length_se": "number", "theta_star": "number",
        "bias": "number", "sd": "number", "se_ratio": "number"},
        "zoo": {"method": "text", "n": "positive", "reps": "count", "n_failed": "count", "coverage": "number",
                "coverage_se": "number", "length_ratio": "number", "length_ratio_se": "number",
                "privacy_cost": "number", "state_floats": "count", "seconds_per_rep": "number"},
        "looks": LOOKS_COLUMNS, "uniform": UNIFORM_COLUMNS}

    def required_tables(self, config):
        methods = config.get("methods")
        zoo = isinstance(methods, list) and any(isinstance(m, str) and m in ZOO_METHODS for m in methods)
        # zoo.md and zoo.png are drawn from zoo.csv: without it they would be left as they are, stale
        looks = {"looks": "a run with looks", "uniform": "a run with looks"} if config.get("looks") else {}
        return {"summary": "a coverage run", **({"zoo": "a run with the zoo's methods"} if zoo else {}), **looks}

    # --- configuration

    def config_keys(self, mapping):
        return with_method_keys(with_model_keys(self.keys, mapping), mapping)

    def run_meta(self, config):
        out = user_models.run_meta(config.settings, build_model)
        files = {f["path"]: f for f in out.get("user_files", [])}
        for value in user_methods_of(config.methods):  # a user's method's file, as a model's: the run's source
            source = usercode.source_of(value)
            if source is not None:
                files.setdefault(source["path"], {**source, "key": "methods", "value": usercode.display(value)})
        if files:
            out["user_files"] = list(files.values())
        return out

    def chunk_identity(self, config):
        # without looks a chunk holds what it held before the looks existed: its identity too
        out = super().chunk_identity(config)
        if not config.options["looks"]:
            for name in LOOK_KEY_NAMES:
                out.pop(name, None)
        return out

    def make_setting(self, values):
        values = path_values(values)
        return super().make_setting(values)

    def seed_key(self, values):
        return path_seed_key(values)

    def validate(self, s, options):
        validate_path(s)
        note = model_class(s.model).coverage_note
        if note:
            raise ConfigError(f"model = {s.model!r} runs in the trajectory study only: it {note}")
        methods = options["methods"]
        if "SN" in methods:
            check_range("level", s.level, 0.05 <= s.level <= 0.9999, "[0.05, 0.9999] (SN critical values)")
        if uses_blocks(methods) and s.B < min_bootstrap_draws(s.level):
            raise ConfigError(f"B = {s.B} bootstrap draws are too few for level = {s.level}: the block bootstrap's "
                              f"quantiles need B >= max({MIN_BOOTSTRAP_DRAWS}, 2 / (1 - level)) = "
                              f"{min_bootstrap_draws(s.level)}")
        check_run_memory(self, [s], options, 1)  # before the layout, which is as large as the blocks
        validate_zoo(s, options)
        validate_users(s, options)
        validate_looks(s, options)
        validate_releases(s, options)
        if uses_batches(methods) and s.gamma >= 1.0:
            raise ConfigError(f"gamma = {s.gamma} leaves no batch-means batches; {_batch_user(methods)} needs "
                              "gamma < 1")
        # the layout's batch ends are a Python loop over M + 1 ~ n^((1 - gamma) / 2) batches: build only
        # what is cheap (a config of n = 2^53, gamma = 0.01 has 7e7; `check` must not take minutes)
        block_len = floor_power(s.n, s.beta)
        if uses_blocks(methods) and s.n // block_len < 2:
            raise ConfigError(
                f"n = {s.n} is too small for two bootstrap blocks with beta = {s.beta} "
                f"(block length {block_len}); raise n or lower beta"
            )
        if uses_batches(methods) and floor_power(s.n, (1.0 - s.gamma) / 2.0) < MANY_BATCHES:
            # with that many batches n is so large that the first holds ~sqrt(n) steps and they grow
            if not StreamLayout.build(s.n, s.beta, s.gamma, blocks=False).enough_batches:
                raise ConfigError(f"n = {s.n} is too small for two batch-means batches with gamma = {s.gamma} "
                                  f"({_batch_user(methods)}); raise n")

    def warnings(self, s, options):
        out = gamma_warnings(s) + [("idle_zoo_key", text) for text in idle_zoo_keys(options)]
        if uses_blocks(options["methods"]):
            if s.beta <= s.gamma:
                out.append(("beta", f"beta = {s.beta} <= gamma = {s.gamma}: Theorem 3.2 (block bootstrap) needs "
                                    "gamma < beta"))
            if s.multiplier == "gaussian":
                out.append(("gaussian", "multiplier = 'gaussian' is unbounded; Theorem 3.2 asks bounded multipliers"))
        return out

    def memory(self, s, options):
        methods, d = options["methods"], model_class(s.model).dimension(s)
        out = []
        if uses_blocks(methods):
            m = s.n // floor_power(s.n, s.beta)
            out.append((FLOAT * m * d, f"m = {m} block sums of d = {d} coordinates (n = {s.n}, beta = {s.beta})"))
            # the multipliers (B, m), their products with the block deviations (B, m, d), quantiles of (B, d)
            out.append((FLOAT * s.B * (m * (d + 1) + 4 * d),
                        f"B x m x (d + 1) = {show(s.B)} x {m} x {d + 1} bootstrap numbers "
                        f"(B = {show(s.B)}, n = {s.n}, beta = {s.beta})"))
        if uses_batches(methods):
            batches = floor_power(s.n, (1.0 - s.gamma) / 2.0) + 1
            out.append((FLOAT * batches * d, f"{batches} batch sums of d = {d} coordinates (n = {s.n}, "
                                             f"gamma = {s.gamma})"))
        out += look_memory(s, options)
        # the zoo's state (OB: 2 B d + B + 2 d floats), for every lane of a kernel call of the default width
        lanes = vector_width()
        for m in zoo_methods(methods):
            floats = state_floats(m, d, s, options)
            out.append((FLOAT * floats * lanes, f"{m}'s state of {floats} floats x {lanes} lanes (d = {d}"
                                                + (f", ob_paths = {options['ob_paths']})" if m in ("OB", "OB_split")
                                                   else ")")))
        for u in _users(options):  # a user's method's state, for every lane
            floats = user_methods.state_floats(user_methods.kernel_state(u.method, u.shown, s, d, 1))
            out.append((FLOAT * floats * lanes, f"{user_methods.label(u.value)}'s state of {floats} floats x {lanes} "
                                                f"lanes (d = {d})"))
        return out

    def chunk_shapes(self, s, options):
        d = model_class(s.model).dimension(s)
        methods = options["methods"]
        shapes = {"theta_bar": (d,), "bounds": (len(methods), d, 2), "ok": ()}
        if own_pass_methods(methods):  # each method's own validity, point estimate and measured seconds
            shapes.update(method_ok=(len(methods),), estimate=(len(methods), d), seconds=(len(methods),))
        if options["looks"]:  # each method's interval at each look
            shapes["look_bounds"] = (len(look_grid(s, options)), len(methods), 2)
        return shapes

    # --- computing

    def steps(self, setting):
        return setting.n

    def seconds(self, setting, options):
        if options["looks"] and own_pass_methods(options["methods"]):  # the trace, and the runs to every look
            grid = look_grid(setting, options)
            return path_seconds(setting) * (1.0 + zoo_cost(options) * float(grid.sum()) / setting.n)
        return path_seconds(setting) * zoo_cost(options)  # every zoo method's pass enters (OB: B + 1 paths)

    def pilot_setting(self, setting, options, fraction):
        return pilot_n(setting, fraction)

    def warm_up_units(self, config, lanes=None):
        # the kernels are specialised on one observation a step or several, and on the lanes; the zoo's a kernel
        # per method (its pass), which also runs the main path alone (_time_methods)
        units = []
        zoo = zoo_methods(config.methods)
        if config.options["looks"]:  # the looks run the trace kernel: compile it on a short path
            from .checkpoints import TraceLayout, run_trace

            for setting, model in self.distinct_kernels(config, build_model):
                units.append(partial(run_trace, model, as_generator(0), setting.c, setting.gamma, setting.theta0,
                                     TraceLayout.build([32, 64], 0.5, setting.gamma)))
                width = self.lane_width(setting, config.options, lanes)
                units += [partial(_warm_zoo, setting, model, config.options, width, [m]) for m in zoo]  # to each look
                if user_methods_of(config.methods):  # their runs to each look: the main kernel with their states
                    units.append(partial(_warm_users, setting, model, config.options, width))
            return units
        for setting, model in self.distinct_kernels(config, build_model, lambda s: s.batch_size == 1):
            small = setting.replace(n=64, beta=0.5)
            width = self.lane_width(setting, config.options, lanes)
            if user_methods_of(config.methods):  # their states in the main path's pass (the last zoo method's)
                units.append(partial(_warm_users, setting, model, config.options, width, zoo[-1] if zoo else None))
            elif not zoo:
                units.append(partial(run_paths_lanes, model, [as_generator(0)], small.n, small.c, small.gamma,
                                     small.theta0, [stream_layout(small, config.methods)], small.batch_size, width))
            units += [partial(_warm_zoo, setting, model, config.options, width, [m]) for m in zoo]
        return units

    def prepare(self, setting, options, twin=False):
        return self._prepare([setting], options, twin)

    def replicate(self, job, gen):
        return self._replicate(job, [gen])[0][0]

    def replicate_lanes(self, job, gens, width=None):
        return [reps[0] for reps in self._replicate(job, gens, width)]

    def default_lanes(self, setting, options):
        return vector_width()

    def group_key(self, setting):
        """Settings that differ only in ``beta``, ``B``, ``level`` or ``multiplier`` share their paths."""
        return tuple((k, v) for k, v in setting.as_dict().items() if k not in _INFERENCE_NAMES)

    def run_group(self, settings, options, root_seed, start, stop, twin=False, lanes=None):
        """One path per replication for all of ``settings``; each gets the chunk it would get alone.

        The kernel keeps the block sums of every block length at once
        (:func:`ldpsim.recursion.kernels.run_paths`) and advances the paths of
        several replications side by side (``lanes``); then each setting draws
        its bootstrap multipliers from the generator as the path left it, as
        it would have in a run of its own.
        """
        if "HulC" in options["methods"] and len({s.level for s in settings}) > 1:
            # HulC's segments depend on the level: one pass per level, each the pass of a run of its own
            levels = sorted({s.level for s in settings})
            parts = {lv: self.run_group([s for s in settings if s.level == lv], options, root_seed, start, stop,
                                        twin, lanes) for lv in levels}
            taken = {lv: 0 for lv in levels}
            out = []
            for s in settings:
                out.append(parts[s.level][taken[s.level]])
                taken[s.level] += 1
            return out
        job = self._prepare(settings, options, twin)
        width = self.lane_width(settings[0], options, lanes, twin)
        reps = []
        with np.errstate(all="ignore"):  # as in run_chunk: overflow is flagged by ok
            for gens in self.lane_groups(settings[0], root_seed, start, stop, width):
                reps += self._replicate(job, gens, width)
        return [stack([rep[j] for rep in reps]) for j in range(len(settings))]

    def _prepare(self, settings, options, twin):
        methods = options["methods"]
        s = settings[0]
        model = build_model(s)
        layouts = [stream_layout(x, methods) for x in settings]
        zoo = zoo_spec(s, options, build=build_model)
        alone = {m: zoo_spec(s, options, [m], build_model) for m in zoo_methods(methods)} if zoo is not None else None
        users = tuple(u._replace(make=user_methods.StateMaker(u.method, u.shown, s, model.dim))
                      for u in _users(options))  # one state per kernel width, copied for each kernel call
        return _Job(settings, methods, model, layouts, model.sigma(s.batch_size), twin, options, zoo, alone,
                    model.hessian() if "plugin_oracle" in methods else None, users)

    def _replicate(self, job, gens, width=None, timed=True):
        """Replications of ``gens``, their paths side by side (``width`` lanes): per replication, a result per setting.

        With the zoo's methods each runs in a kernel pass of its own beside the
        main path (:meth:`_zoo_passes`); the lanes group that holds replication
        0 of a setting is timed too (:meth:`_time_methods`).
        """
        if job.options.get("looks"):  # each replication's path with every look's state: the trace kernel
            own = job.zoo is not None or bool(job.users)  # methods with a pass of their own at each look
            starts = [_copy_generator(g) for g in gens] if own else None
            reps = [look_replication(job, gen) for gen in gens]
            if own:
                self._zoo_looks(job, starts, width, reps)
            return reps
        s = job.settings[0]  # the path's keys are the group's
        zoo_states = [None] * len(gens)
        if job.twin:
            zoo_gens = zoo_generators(job.zoo, gens)
            runs = [path_twin(job.model, gen, s.n, s.c, s.gamma, s.theta0, list(job.layouts), s.batch_size, job.zoo,
                              None if zoo_gens is None else {m: g[r] for m, g in zoo_gens.items()},
                              users=job.user_states())
                    for r, gen in enumerate(gens)]
            paths = [run[0] for run in runs]
            if job.zoo is not None:
                zoo_states = [run[2] for run in runs]
        elif job.zoo is None:
            paths = run_paths_lanes(job.model, gens, s.n, s.c, s.gamma, s.theta0, job.layouts, s.batch_size, width,
                                    users=job.user_states())
        else:
            paths, zoo_states = self._zoo_passes(job, gens, width)
        seconds = None
        if job.zoo is not None and not job.twin and timed and any(replication_index(g) == 0 for g in gens):
            seconds = self._time_methods(job, gens, width, paths, zoo_states)
        return [self._intervals(job, gen, states, zoo, seconds) for gen, states, zoo in zip(gens, paths, zoo_states)]

    def _zoo_looks(self, job, starts, width, reps) -> None:
        """The zoo's intervals at every look, into ``reps`` (:func:`.looks.look_replication`'s entries).

        The zoo's designs are made for the run's length (HulC's segments,
        HiGrad's tree, OBM's batches), so at a look ``t`` each zoo method gives
        the interval of a run of ``n = t`` on the same replication: its pass of
        that run, from the replication's generators as they were before its
        path (``starts``; a path's first ``t`` steps do not depend on ``n``),
        as a user who looks at ``t`` would compute it. The last look is the
        run's own pass: its bounds, point estimates, validity and seconds are
        those of the run without looks. The passes cost ``sum_k t_k / n`` runs
        of the zoo (4.6 with 20 looks from 1% of ``n``); docs/sequential.md.
        """
        cols = [job.methods.index(m) for m in own_pass_methods(job.methods)]
        others = [j for j in range(len(job.methods)) if j not in cols]  # the path's own methods (look_replication's)
        options = dict(job.options, looks=0, first_look=0)
        grids = [look_grid(s, job.options) for s in job.settings]
        n = job.settings[0].n
        for t in sorted({int(t) for grid in grids for t in grid}):
            sub = self._prepare([s.replace(n=t) for s in job.settings], options, job.twin)
            at = self._replicate(sub, [_copy_generator(g) for g in starts], width, timed=t == n)
            for entries, got_settings in zip(reps, at):
                for grid, entry, got in zip(grids, entries, got_settings):
                    hit = np.flatnonzero(grid == t)  # the settings of a group may look at different t (beta)
                    if hit.size:
                        bounds = got["bounds"][cols, 0, :].copy()
                        bounds[~got["method_ok"][cols]] = np.nan  # a diverged or unresolved interval is no interval
                        entry["look_bounds"][hit[0], cols] = bounds
                    if t == n:  # the zoo's columns of the run without looks
                        entry["bounds"][cols] = got["bounds"][cols]
                        method_ok = got["method_ok"].copy()
                        method_ok[others] = entry["ok"]
                        entry.update(method_ok=method_ok, estimate=got["estimate"], seconds=got["seconds"])

    def _zoo_passes(self, job, gens, width):
        """The main path and each zoo method in a kernel pass of its own: ``(paths, zoo_states)`` as one pass gives.

        Every pass runs the main path on the same draws (the methods draw from
        streams of their own, :func:`~.zoo.method_generator`), so its states are
        those of a run without the zoo and each method's those of a run with it
        alone, as in one pass of all of them (the twin's). A kernel per method
        asked for is compiled (and shared with the timed passes), not one of
        every combination of them: the all-method kernel of a vector model
        compiled for minutes. The passes before the last run on copies of the
        generators, the last on the generators themselves (the classic
        methods' bootstrap draws continue from them).
        """
        s = job.settings[0]
        methods = list(job.alone)
        merged = [{} for _ in gens]
        paths = None
        for k, m in enumerate(methods):
            pass_gens = gens if k == len(methods) - 1 else [_copy_generator(g) for g in gens]
            spec = job.alone[m]
            last = k == len(methods) - 1  # the users' methods stream in the last pass, whose states are returned
            paths, states = run_paths_lanes(job.model, pass_gens, s.n, s.c, s.gamma, s.theta0, job.layouts,
                                            s.batch_size, width, spec, zoo_generators(spec, pass_gens),
                                            users=job.user_states() if last else None)
            for into, state in zip(merged, states):
                into.update(state)
        return paths, merged

    def _intervals(self, job, gen, states, zoo_state=None, seconds=None):
        """Each setting's intervals from its state of one path, the multipliers drawn from ``gen`` after the path.

        ``ok`` says whether the path and the classic methods' intervals are
        usable (as without the zoo); with the zoo's methods ``method_ok`` says it
        for each method on its own, ``estimate`` holds each method's point
        estimate and ``seconds`` the measured time (NaN but in the timed group).
        """
        settings, methods, model, sigma = job.settings, job.methods, job.model, job.sigma
        s = settings[0]
        classic = classic_methods(methods)
        rows = [methods.index(m) for m in classic]
        after_path = gen.bit_generator.state if len(settings) > 1 else None
        out = []
        for j, (setting, layout, state) in enumerate(zip(settings, job.layouts, states)):
            bounds = np.full((len(methods), model.dim, 2), np.nan)
            ok = False
            finite = state.finite(s.n)
            if finite:
                if j > 0:  # each setting's multipliers come from where the path left the generator
                    gen.bit_generator.state = after_path
                if classic:
                    bounds[rows] = intervals.intervals(classic, state, layout, gen, n_boot=setting.B,
                                                       law=setting.multiplier, level=setting.level, sigma=sigma)
                # theta_bar is finite: state.finite held; an interval of rounding noise is no interval
                ok = bool(np.isfinite(bounds[rows]).all()) and resolved(bounds[rows])
            rep = {"theta_bar": state.theta_bar, "bounds": bounds, "ok": ok}
            if job.zoo is not None or job.users:
                method_ok = np.full(len(methods), ok)
                estimate = np.tile(state.theta_bar, (len(methods), 1))
                if finite:
                    own = {} if job.zoo is None else zoo_bounds(methods, zoo_state, state.theta_bar, setting,
                                                                job.options, job.zoo, job.hessian)
                    for u, record in zip(job.users, state.own or ()):  # (numpy's warnings are off: run_chunk's)
                        own[u.value] = user_methods.bounds(u.method, u.shown, record, state.theta_bar, setting,
                                                           model.dim)
                    for m, (lo, hi, est) in own.items():
                        k = methods.index(m)
                        bounds[k, :, 0], bounds[k, :, 1], estimate[k] = lo, hi, est
                        method_ok[k] = bool(np.isfinite(bounds[k]).all()) and resolved(bounds[k])
                else:
                    method_ok[:] = False
                rep.update(method_ok=method_ok, estimate=estimate,
                           seconds=np.array([np.nan if seconds is None else seconds.get(m, np.nan)
                                             for m in methods]))
            out.append(rep)
        return out

    def _time_methods(self, job, gens, width, paths, zoo_states) -> dict:
        """Seconds per replication of each method, measured on this lanes group (:class:`~.zoo.Stopwatch`).

        A pass of the main path alone (the classic methods' cost), then one
        per zoo method with its paths and state alone (its own kernel: in the
        kernel of all the zoo's methods with the others' parts idle, the
        quantile step measured 70 times the main path's cost), each on fresh copies of the group's generators
        (the run's own numbers are untouched), the least of two timings (the
        first may load the code); then each method's interval from the state.
        The main path alone runs in the first zoo method's kernel with the
        zoo's steps switched off (:class:`~ldpsim.recursion.zoo.ZooPaths`
        ``active``), not in a kernel compiled only to be timed.
        """
        s, model, options = job.settings[0], job.model, job.options
        watch = Stopwatch()
        count = len(gens)

        def fresh():
            return [np.random.Generator(type(g.bit_generator)(g.bit_generator.seed_seq)) for g in gens]

        def run(spec):
            copies = fresh()
            return lambda: run_paths_lanes(model, copies, s.n, s.c, s.gamma, s.theta0, job.layouts, s.batch_size,
                                           width, spec, zoo_generators(spec, copies))

        _warm_zoo(s, model, options, width)
        watch.time("main", run(next(iter(job.alone.values()))._replace(active=False)), count)
        for m in zoo_methods(job.methods):  # the kernel of the main path and this method alone
            watch.time(m, run(job.alone[m]), count)
        for m in classic_methods(job.methods):
            watch.add(m, watch.seconds["main"])
            for gen, states in zip(fresh(), paths):
                if states[0].finite(s.n):
                    watch.time(m, lambda: intervals.intervals([m], states[0], job.layouts[0], gen, n_boot=s.B,
                                                              law=s.multiplier, level=s.level, sigma=job.sigma), count)
        for m in zoo_methods(job.methods):
            for states, zoo in zip(paths, zoo_states):
                if states[0].finite(s.n):
                    watch.time(m, lambda: zoo_bounds([m], zoo, states[0].theta_bar, s, options, job.zoo,
                                                     job.hessian), count)
        for j, u in enumerate(job.users):  # in the main path's pass: its time (their updates' share untimed) and theirs
            watch.add(u.value, watch.seconds["main"])
            for states in paths:
                if states[0].finite(s.n):
                    watch.time(u.value, lambda: user_methods.bounds(u.method, u.shown, states[0].own[j],
                                                                    states[0].theta_bar, s, model.dim), count)
        return watch.seconds

    # --- summarising and drawing

    def summarize(self, config, chunks):
        tables = {"summary": summarize(config, chunks)}
        if zoo_methods(config.methods):
            tables["zoo"] = zoo_rows(config, chunks)
        if config.options["looks"]:
            tables.update(look_tables(config, chunks))
        return tables

    def write_outputs(self, out, tables, meta):
        rows = tables["summary"]
        check_zoo_table(rows, tables.get("zoo"))
        (out / "table.md").write_text(render_markdown(rows, self.table_title(meta), user_models.truth_notes(meta)))
        (out / "table.tex").write_text(render_latex(rows))
        level = meta.get("config", {}).get("level") if isinstance(meta.get("config"), dict) else None
        return (["table.md", "table.tex"] + write_coverage_figure(out, rows, self.table_title(meta) or "", level)
                + write_sweep_maps(out, rows) + write_zoo_outputs(out, tables.get("zoo"), self.table_title(meta), level)
                + write_look_outputs(out, tables, self.table_title(meta), level))

    def render(self, tables, meta):
        text = render_markdown(tables["summary"], self.table_title(meta), user_models.truth_notes(meta))
        if tables.get("uniform"):
            text += "\n" + render_uniform(tables["uniform"])
        return text


def _users(options) -> tuple:
    """The users' methods of a run, each built with the run's values of its keys."""
    return tuple(_UserMethod(v, user_methods.build(v, options), usercode.shown(v))
                 for v in user_methods_of(options["methods"]))


def validate_users(setting, options) -> None:
    """One-line refusals of a setting a user's method cannot run (its dims, looks, its own check) before any kernel.

    Then each method's state is built and updated for a few steps in plain
    Python, so that an error in the user's file names its line before numba
    compiles it.
    """
    users = _users(options)
    if not users:
        return
    d = model_class(setting.model).dimension(setting)
    for u in users:
        cls, name = type(u.method), user_methods.label(u.value)
        if cls.dims is not None and d not in cls.dims:
            raise ConfigError(f"methods entry {u.shown!r}: {name} runs on models of dimension "
                              f"{', '.join(map(str, cls.dims))} ({cls.__name__}.dims), not d = {d} of model "
                              f"{usercode.shown(setting.model)!r}")
        if options["looks"] and not cls.looks:
            raise ConfigError(f"methods entry {u.shown!r}: {name} has no interval at a look ({cls.__name__}.looks = "
                              "False); remove looks or the method")
        user_methods.check_instance(u.method, u.shown, setting, d, setting.theta0)


def _warm_users(setting, model, options, width, zoo_method=None) -> None:
    """Compile (or load) the main kernel with the users' methods' states (and ``zoo_method``'s part: the last zoo pass).

    A short path, the states built for the run's setting (their types are the run's).
    """
    small = setting.replace(n=256, beta=0.5)
    d = model.dim
    makes = [partial(user_methods.kernel_state, u.method, u.shown, setting, d) for u in _users(options)]
    gens = [as_generator(0)]
    spec = zoo_spec(small, dict(options, higrad_splits=1), [zoo_method], build_model) if zoo_method else None
    run_paths_lanes(model, gens, small.n, small.c, small.gamma, small.theta0,
                    [stream_layout(small, options["methods"])], small.batch_size, width, spec,
                    zoo_generators(spec, gens), users=makes)


def _copy_generator(gen: np.random.Generator) -> np.random.Generator:
    """A generator in ``gen``'s state, drawing what ``gen`` would draw next (``gen`` is left as it is)."""
    bit = type(gen.bit_generator)(gen.bit_generator.seed_seq)
    bit.state = gen.bit_generator.state
    return np.random.Generator(bit)


def _warm_zoo(setting, model, options, width, methods=None) -> None:
    """Compile (or load) the kernel of each of the run's zoo methods alone (its pass, :meth:`CoverageStudy._zoo_passes`).

    ``methods``: these of the run's zoo methods only.
    """
    small = setting.replace(n=256, beta=0.5)
    opts = dict(options, higrad_splits=1)  # a tree of the same types that fits 256 steps
    gens = [as_generator(0)]
    methods = zoo_methods(options["methods"]) if methods is None else methods
    specs = [zoo_spec(small, opts, [m], build_model) for m in methods]
    for spec in specs:
        run_paths_lanes(model, gens, small.n, small.c, small.gamma, small.theta0,
                        [stream_layout(small, options["methods"])], small.batch_size, width, spec,
                        zoo_generators(spec, gens))


def check_zoo_table(summary: list[dict], zoo: list[dict] | None) -> None:
    """Refuse (one line) a zoo table that is not the summary's run's: other key columns or other methods.

    Only ``table`` can meet one (a zoo.csv copied from another run): its
    zoo.md would group or label the rows wrongly without a word.
    """
    if not zoo:
        return
    keys, zoo_keys = key_columns(summary), [k for k in zoo[0] if k not in ZOO_COLUMNS]
    if zoo_keys != keys:
        raise ConfigError(f"zoo.csv has the key columns {zoo_keys or 'none'}, summary.csv {keys or 'none'}: they are "
                          "not from one run")
    methods, zoo_methods_ = {r["method"] for r in summary}, {r["method"] for r in zoo}
    if zoo_methods_ != methods:
        raise ConfigError(f"zoo.csv has the methods {', '.join(sorted(zoo_methods_))}, summary.csv "
                          f"{', '.join(sorted(methods))}: they are not from one run")


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


__all__ = ["CoverageStudy", "INFERENCE_KEYS", "METHODS_KEY", "MIN_BOOTSTRAP_DRAWS", "RESOLVED_ULPS", "min_bootstrap_draws",
           "resolved", "stream_layout", "write_sweep_maps"]

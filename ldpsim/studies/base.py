"""What a study is: the seam between the generic engine and one kind of simulation.

A study answers four questions, and the engine asks nothing else:

1. **Which keys does a config hold?** :attr:`Study.keys` (grid axes and
   per-run keys, :class:`~ldpsim.engine.runs.config.Key`); :meth:`Study.make_setting`
   completes a grid point and gives it the identity its random streams are
   seeded from; :meth:`Study.validate` and :meth:`Study.warnings` check it.
2. **What does one replication compute?** :meth:`Study.prepare` builds what a
   chunk of replications shares (model, layouts), :meth:`Study.replicate`
   runs one replication from its generator, by the jitted kernel or, with
   ``twin=True``, by the kernel's plain-Python twin, and returns named
   arrays (one entry, ``ok``, says whether it is usable).
3. **How are chunks summarised?** :meth:`Study.summarize` turns the
   replications of every setting into tables of rows (long format, each
   statistic with its Monte Carlo standard error); ``summary`` is the main
   one, others (``rates``) are written beside it.
4. **How are they drawn?** :meth:`Study.write_outputs` writes tables and
   figures from those rows (also when ``ldpsim table DIR`` re-renders them
   from the CSV files) and :meth:`Study.render` gives the text printed at the
   end of a run.

The driver (:mod:`ldpsim.engine.runs.driver`) seeds replications, cuts them into
chunks, stores and resumes chunks and runs them on a backend without
knowing what they hold.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..engine.runs.config import Config, Key, Setting
from ..engine.dialect.jit import DISABLED
from ..engine.dialect.rng import replication_generator


#: Default cost of one unit of :meth:`Study.steps` (seconds), for studies that give no model of their own.
STEP_SECONDS = 50e-9


class Study(ABC):
    """Base class of the studies; subclasses are registered in :data:`ldpsim.studies.STUDIES`."""

    #: The config's ``study`` value.
    name: ClassVar[str]
    #: One line: what the study estimates.
    title: ClassVar[str] = ""
    #: Config keys, grid axes in grid order (the last varies fastest), then per-run keys.
    keys: ClassVar[tuple[Key, ...]]
    #: Kind of out-of-theory warning -> (what the condition is called, why it matters).
    warning_kinds: ClassVar[dict[str, tuple[str, str]]] = {}
    #: Package paths (relative to ``ldpsim/``) whose code decides what a chunk
    #: holds: a change to any of them makes ``--resume`` recompute saved chunks.
    compute_sources: ClassVar[tuple[str, ...]] = ()
    #: The tables :meth:`summarize` returns, each written as ``<name>.csv``; ``summary`` first.
    tables: ClassVar[tuple[str, ...]] = ("summary",)
    #: Whether a replication's time is spent in ``nogil`` kernels, so that local runs use threads
    #: (``--backend auto``, :func:`ldpsim.engine.runs.backends.resolve_backend`); else loky's processes.
    threads: ClassVar[bool] = False
    #: Bumped when the arrays of a chunk change meaning.
    chunk_format: ClassVar[int] = 1
    #: Per table (:attr:`tables`), the columns ``ldpsim table`` / ``compare`` need and what each holds:
    #: ``"text"``, ``"int"``, ``"number"`` (NaN allowed) or ``"number?"`` (may be blank). A CSV file
    #: read back (:func:`ldpsim.api.open_result`) is checked against it, with one-line errors.
    table_columns: ClassVar[dict[str, dict[str, str]]] = {}

    def required_tables(self, config: dict) -> dict[str, str]:
        """The tables a finished run of ``config`` (its recorded values) must hold: name -> which runs write it.

        ``ldpsim table`` refuses a directory without one of them (its tables and
        figures drawn from it would be stale). Default: those of :attr:`table_columns`.
        """
        return {name: f"a {self.name} run" for name in self.table_columns}

    # --- configuration ----------------------------------------------------

    def config_keys(self, mapping: dict) -> tuple[Key, ...]:
        """The keys of a config: :attr:`keys`, and those a user's model named by ``mapping`` declares."""
        return self.keys

    def make_setting(self, values: dict) -> Setting:
        """A grid point from one value per grid key: blank what does not apply, seed it."""
        return Setting(values, self.seed_key(values))

    @abstractmethod
    def seed_key(self, values: dict) -> int:
        """Integer identity of a setting's random streams (a hash of what shapes them)."""

    def validate(self, setting: Setting, options: dict) -> None:
        """Raise :class:`~ldpsim.engine.errors.ConfigError` if ``setting`` cannot run (keys checked together)."""

    def warnings(self, setting: Setting, options: dict) -> list[tuple[str, str]]:
        """``(kind, message)`` pairs for conditions outside the theory (kinds in :attr:`warning_kinds`)."""
        return []

    def memory(self, setting: Setting, options: dict) -> list[tuple[float, str]]:
        """Estimated peak memory of one replication in a worker: ``(bytes, what)`` terms.

        ``what`` names the keys that size the term (``"bootstrap draws B x m =
        1e12 x 31 doubles"``), for the one-line error when a setting would not
        fit in memory (:func:`ldpsim.engine.runs.config.check_run_memory`, before any
        work). The default, ``[]``, is for replications of negligible size.
        """
        return []

    def chunk_shapes(self, setting: Setting, options: dict) -> dict[str, tuple[int, ...]] | None:
        """The shape of each named array of one replication (``ok`` is ``()``), or ``None`` if not known.

        The driver checks saved chunks against it before reusing them (a
        chunk of other shapes is set aside and recomputed) and counts the
        memory it keeps per replication from it.
        """
        return None

    def kept_bytes(self, setting: Setting, options: dict) -> int:
        """Bytes the driver keeps per replication until the summary (from :meth:`chunk_shapes`)."""
        shapes = self.chunk_shapes(setting, options)
        if shapes is None:
            return 0
        return sum(8 * int(np.prod(shape, dtype=np.float64)) for shape in shapes.values())

    def run_meta(self, config: Config) -> dict:
        """What ``meta.json`` records of a run besides its config (users' files and estimated truths; default none)."""
        return {}

    def chunk_identity(self, config: Config) -> dict:
        """What, besides a setting and the seed, decides what its chunks hold (the per-run keys)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in config.options.items()}

    # --- computing -------------------------------------------------------

    @abstractmethod
    def steps(self, setting: Setting) -> int:
        """The cost of one replication in SGD steps (chunk sizes and the progress bar count these)."""

    def seconds(self, setting: Setting, options: dict) -> float:
        """Estimated compute seconds of one replication (the run-time check before any work).

        From :meth:`steps` and a per-step cost measured with
        ``scripts/bench.py``; studies whose step costs depend on their keys
        (dimension, batch size) override it. An order of magnitude is what
        it needs to be right to: it refuses runs of years, not of hours.
        """
        return STEP_SECONDS * self.steps(setting)

    #: Keys that only size a replication (:meth:`pilot_setting` scales them): settings that differ in nothing else run
    #: the same kernels, and one pilot measures them all (:mod:`ldpsim.engine.runs.pilot`).
    size_keys: ClassVar[tuple[str, ...]] = ("n",)

    def pilot_setting(self, setting: Setting, options: dict, fraction: float) -> Setting | None:
        """A copy of ``setting`` whose replications run the same kernels for about ``fraction`` of its steps.

        The run-time estimate times the study's own replications on it and
        scales them by :meth:`seconds` (:mod:`ldpsim.engine.runs.pilot`). ``fraction``
        is in ``(0, 1]``; at 1 the setting itself. The default, ``None``: no
        pilot, the static model is the estimate.
        """
        return None

    def warm_up(self, config: Config, lanes: int | None = None) -> None:
        """Compile (or load from the cache) the kernels once, before workers start, at the run's lanes."""
        for unit in self.warm_up_units(config, lanes):
            unit()
        self.settle(config)

    def settle(self, config: Config) -> None:
        """The checks validation left for the compile step: they need a kernel of their own.

        The default makes the Monte Carlo truths that :func:`ldpsim.recursion.keys.check_model`
        deferred (NPRR's noise variance) and refuses a setting whose variance is then not a
        positive finite number. :func:`ldpsim.engine.runs.compiling.prepare` runs it beside the
        compilation of the run's kernels.
        """
        from ..recursion.keys import settle_truths

        settle_truths()

    def warm_up_units(self, config: Config, lanes: int | None = None) -> list:
        """:meth:`warm_up` as calls of their own, each a kernel (or a few) on a tiny input.

        :func:`ldpsim.engine.runs.compiling.plan` lists a run's kernels by running
        them with the kernels not yet compiled skipped: a unit that fails then
        (its wrapper needed a skipped kernel's result) leaves the others
        listed. The default: none (a study without kernels of its own to warm).
        """
        return []

    @staticmethod
    def distinct_kernels(config: Config, build, variant=None):
        """``(setting, model)`` for the first setting of each distinct compiled kernel.

        Numba compiles a kernel once per type of the record it is handed (nested
        records, noise and covariates, included) and per ``variant(setting)``
        (what else the kernel is specialised on): warming up one setting of
        each compiles all of them. ``build`` makes a setting's model.
        """
        import numba

        seen = set()
        for setting in config.settings:
            model = build(setting)
            kind = (numba.typeof(model.kernel_params()), variant(setting) if variant else None)
            if kind not in seen:
                seen.add(kind)
                yield setting, model

    @abstractmethod
    def prepare(self, setting: Setting, options: dict, twin: bool = False) -> Any:
        """What the replications of a chunk share (model, layouts); ``twin`` selects the Python twin."""

    @abstractmethod
    def replicate(self, job: Any, gen: np.random.Generator) -> dict[str, np.ndarray]:
        """One replication, drawing everything from ``gen``: named arrays, ``ok`` among them."""

    def replicate_lanes(self, job: Any, gens: list[np.random.Generator],
                        width: int | None = None) -> list[dict[str, np.ndarray]]:
        """Replications side by side (lanes), one generator each: what :meth:`replicate` gives for each.

        A study whose path kernels advance several replications in one call
        (:mod:`ldpsim.engine.dialect.lanes`) overrides this, running them in one call
        of ``width`` lanes (more than ``len(gens)``: the rest are padding);
        the default runs them one after the other.
        """
        return [self.replicate(job, gen) for gen in gens]

    def default_lanes(self, setting: Setting, options: dict) -> int:
        """Replications a kernel call advances side by side when the run does not say.

        1 for a study without a lanes kernel; those with one return
        :func:`~ldpsim.engine.dialect.lanes.vector_width` (one SIMD register of
        doubles: the fastest width measured, ``scripts/bench.py --studies``).
        """
        return 1

    def lane_width(self, setting: Setting, options: dict, lanes: int | None = None, twin: bool = False) -> int:
        """The lanes a run uses: ``lanes`` if given, else :meth:`default_lanes`; 1 for the twins and without numba."""
        if twin or DISABLED:  # the twins are one replication's plain Python
            return 1
        return self.default_lanes(setting, options) if lanes is None else int(lanes)

    @staticmethod
    def lane_groups(setting: Setting, root_seed: int, start: int, stop: int, width: int):
        """The generators of replications ``start .. stop - 1``, ``width`` at a time (the last group may be smaller).

        Replication ``r`` draws from ``SeedSequence(root_seed, spawn_key=(setting.seed_key, r))``.
        """
        for first in range(start, stop, width):
            yield [replication_generator(root_seed, setting.seed_key, r) for r in range(first, min(first + width, stop))]

    def run_chunk(self, setting: Setting, options: dict, root_seed: int, start: int, stop: int,
                  twin: bool = False, lanes: int | None = None) -> dict[str, np.ndarray]:
        """Replications ``start .. stop - 1`` of ``setting``, each array stacked along a first axis.

        Replication ``r`` draws from ``SeedSequence(root_seed, spawn_key=(setting.seed_key, r))``,
        whatever chunk it is in, whoever runs it and however many ``lanes`` (replications a kernel
        call advances side by side; default :meth:`default_lanes`) run it.
        """
        job = self.prepare(setting, options, twin)
        width = self.lane_width(setting, options, lanes, twin)
        reps = []
        # a replication that overflows is flagged by its ``ok`` (and counted in n_failed); numpy's
        # warnings on the way would only print raw lines from the workers
        with np.errstate(all="ignore"):
            for gens in self.lane_groups(setting, root_seed, start, stop, width):
                # the remainder of a chunk runs in a kernel call of the same width, padded
                reps += [self.replicate(job, gens[0])] if width == 1 else self.replicate_lanes(job, gens, width)
        return stack(reps)

    # --- settings that share their paths ----------------------------------

    def group_key(self, setting: Setting):
        """Settings with the same (not ``None``) key share their paths and are run together.

        The driver then hands them to :meth:`run_group` as one task. The
        default, ``None``, runs every setting on its own.
        """
        return None

    def run_group(self, settings: list[Setting], options: dict, root_seed: int, start: int, stop: int,
                  twin: bool = False, lanes: int | None = None) -> list[dict[str, np.ndarray]]:
        """Replications ``start .. stop - 1`` of settings that share a :meth:`group_key`, one chunk each.

        Each chunk must be what :meth:`run_chunk` gives for that setting alone,
        to the bit. The default runs them one after the other; a study
        overrides it to run each shared path once (silencing numpy's
        floating-point warnings as :meth:`run_chunk` does).
        """
        return [self.run_chunk(s, options, root_seed, start, stop, twin, lanes) for s in settings]

    # --- summarising and drawing ----------------------------------------

    @abstractmethod
    def summarize(self, config: Config, chunks: list[dict[str, np.ndarray]]) -> dict[str, list[dict]]:
        """Tables of rows from every setting's replications; ``summary`` first (``summary.csv``)."""

    @abstractmethod
    def write_outputs(self, out: Path, tables: dict[str, list[dict]], meta: dict) -> list[str]:
        """Write the tables and figures drawn from ``tables`` into ``out``; return the file names.

        ``meta`` is what ``meta.json`` holds (``config``, ``varied``, ``name``).
        Figures that need a missing extra are skipped with one line on stderr.
        """

    def render(self, tables: dict[str, list[dict]], meta: dict) -> str:
        """The text a run prints at its end (the main table, in markdown)."""
        return ""

    def table_title(self, meta: dict) -> str | None:
        """The tables' title: the run's name and the grid keys every row shares (:func:`title_of`)."""
        return title_of(meta, [k.name for k in self.keys if k.grid])


#: A pilot's path is at least this long (or the setting's own): long enough for the zoo's schedules and BB's blocks.
PILOT_MIN_N = 5000

#: Above this many batch-means batches their ends are not built to validate a setting (the coverage and DP-SGD
#: studies' ``validate``).
MANY_BATCHES = 100_000

#: Columns of an interval study's ``summary`` after the varied config keys, in order (the coverage study's, and
#: the DP-SGD study's before its own). Runs with a multivariate model add ``joint_coverage`` and
#: ``joint_coverage_se``: the share of replications whose intervals cover every coordinate at once (the same on
#: each coordinate's row of a method).
STAT_COLUMNS = (
    "method", "coord", "n", "reps", "n_failed", "coverage", "coverage_se", "length", "length_se",
    "theta_star", "bias", "sd", "se_ratio",
)


def pilot_n(setting: Setting, fraction: float) -> Setting:
    """``setting`` with ``n`` scaled by ``fraction``, at least :data:`PILOT_MIN_N` (the path studies' pilots)."""
    if fraction >= 1.0 or setting.n <= PILOT_MIN_N:
        return setting
    return setting.replace(n=max(PILOT_MIN_N, int(round(setting.n * fraction))))


def stack(reps: list[dict]) -> dict[str, np.ndarray]:
    """Per-replication named arrays stacked along a first (replication) axis."""
    return {name: np.stack([np.asarray(rep[name]) for rep in reps]) for name in reps[0]}


def title_of(meta: dict, keys) -> str | None:
    """Table title: run name and the values every row shares (``None``: a key that does not apply).

    ``None`` for a run whose ``meta.json`` is missing.
    """
    if not isinstance(meta.get("config"), dict):
        return None
    from ..engine.runs.usercode import display

    values, varied = meta["config"], meta.get("varied", [])
    fixed = ", ".join(f"{k} = {display(values[k])}" for k in keys
                      if k not in varied and k != "n" and values.get(k) is not None)
    return f"{meta.get('name', 'run')}: {fixed}, reps = {values.get('reps', '?')}"


__all__ = ["MANY_BATCHES", "PILOT_MIN_N", "STAT_COLUMNS", "STEP_SECONDS", "Study", "pilot_n", "stack", "title_of"]

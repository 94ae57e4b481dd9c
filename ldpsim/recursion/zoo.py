"""The method zoo's paths and state inside the coverage kernels (issue 20): one pass over one stream.

A method of the zoo that needs paths of its own runs them in a kernel pass
with the main LDP-SGD path, on the same observations (the coverage study
runs a pass per method, :meth:`~ldpsim.studies.coverage.study.CoverageStudy._zoo_passes`;
the twin, all of them in one pass): at step
``i`` the kernel draws observation ``i`` (:func:`ldpsim.models.observe`),
privatizes it for the main path, and hands it to :func:`zoo_observe`, which
steps

* HulC's open segment (:class:`HulCPaths`: a path restarted at ``theta0``, its
  step counter at 1, at every segment; the segment averages are HulC's);
* HiGrad's thread of observation ``i`` (:class:`HiGradPaths`: level 0 one
  thread, level ``k`` ``T_k`` threads taking the observations in turn);
* the online bootstrap's ``B`` perturbed paths (:class:`BootPaths`, ``OB``:
  weights ``W ~ exponential(1)``), and ``OB_split``'s own main path and its
  ``B`` perturbed paths, all privatized at ``epsilon / (B + 1)``;

each privatizing the observation at its own iterate (:func:`ldpsim.models.add_gradient_at`)
with noise from its own stream, so that the main path's numbers are those of
a run without the zoo and each method's are those of a run with it alone.
OBM (:class:`OBMState`) and the plug-in sandwich (:class:`PluginState`) keep
state of the main path's iterates and gradients. A method that the run does
not ask for is ``None`` in :class:`ZooPaths`, and its code is compiled away.

Everything is lane-generic (:mod:`ldpsim.engine.dialect.lanes`): the schedules are
shared by the lanes (small ``int64``/``float64`` arrays), the paths' state is
one array per replication or a :class:`~ldpsim.engine.dialect.lanes.LaneArray`. The
per-step updates of :mod:`ldpsim.inference.zoo` are those the groundwork
tested; :func:`ldpsim.recursion.twins.path_twin` repeats all this in plain
Python.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba.core import types
from numba.extending import overload

from ..engine.dialect.jit import DISABLED, OVERLOAD_OPTIONS, jit
from ..engine.dialect.lanes import LaneArrayType, lane_array, lane_of
from ..engine.dialect.rng import exponential, local_rng, release_rng
# the code of each method with paths of its own (its stream: child ``code`` of the replication's seed), declared
# with the method in the registry
from ..inference.methods import STREAM_CODES  # noqa: F401
from ..inference.zoo.bootstrap import perturbed_step_d
from ..inference.zoo.higrad import higrad_branch
from ..inference.zoo.obm import obm_add_d, obm_recentre
from ..inference.zoo.plugin import plugin_add_d
from ..models import add_gradient_at
from ..models.base import sharing_observation
from .steps import step_size


class HulCPaths(NamedTuple):
    """HulC's segment paths: the open segment's iterate and sum, the closed segments' averages.

    ``sched`` (shared by the lanes): ``[segment, step in it, pow2 of its step counter]``;
    ``eta`` its step size. ``theta``, ``acc``, ``grad`` (zero between steps): ``(d,)``; ``averages`` ``(B, d)``.
    """

    rng: object
    params: tuple
    theta0: float
    ends: np.ndarray
    sched: np.ndarray
    eta: np.ndarray
    theta: object
    acc: object
    grad: object
    averages: object


class HiGradPaths(NamedTuple):
    """HiGrad's threads. Level ``k`` spans observations ``level_end[k - 1] + 1 .. level_end[k]``.

    ``sched`` (shared): ``[level, thread of the next observation, step index of its chain, pow2 of that index]``;
    ``eta`` the chain's step size. ``thetas``, ``sums``: ``(T, d)`` (the first ``threads[k]`` rows in
    use); ``nodes`` ``(nodes, d)`` the node averages; ``grad``, ``point`` ``(d,)`` scratch.
    """

    rng: object
    params: tuple
    level_end: np.ndarray
    lengths: np.ndarray
    threads: np.ndarray
    fans: np.ndarray
    node_first: np.ndarray
    step_first: np.ndarray
    sched: np.ndarray
    eta: np.ndarray
    thetas: object
    sums: object
    nodes: object
    grad: object
    point: object


class BootPaths(NamedTuple):
    """The online bootstrap's paths: rows ``first ..`` of ``thetas`` and ``sums`` ``(rows, d)``.

    ``OB``: ``first = 0``, ``B`` perturbed paths, privatized at the run's
    epsilon. ``OB_split``: ``first = 1``, row 0 its own main path (weight 1),
    rows ``1 .. B`` perturbed, all privatized at ``epsilon / (B + 1)``.
    ``weights`` ``(rows,)``: the step's weights (1 in the rows before ``first``).
    """

    rng: object
    params: tuple
    first: int
    weights: object
    thetas: object
    sums: object
    grad: object
    point: object


class OBMState(NamedTuple):
    """OBM's sums of the main path (:mod:`ldpsim.inference.zoo.obm`); ``starts`` its batches, ``sched = [next]``."""

    starts: np.ndarray
    sched: np.ndarray
    vec: object
    mat: object
    sc: object
    point: object


class PluginState(NamedTuple):
    """The plug-in sandwich's ``sum g g'`` of the main path's privatized gradients (upper triangle)."""

    smat: object
    point: object


class ZooPaths(NamedTuple):
    """What the zoo's methods of a run stream beside the main path; ``None`` for a method not asked for.

    ``dim``: the paths' dimension ``d``, or ``None`` for ``d = 1``, which the
    hooks then know when they compile: a loop over ``range(d)`` whose length
    LLVM cannot see is vectorized with runtime checks, and at one lane such
    loops made HiGrad's step 40 times slower. ``active``: ``False`` skips
    every method's per-step work at run time (the kernels test
    :func:`zoo_on`, a register, once a step), so a zoo kernel times the main
    path alone without a kernel of its own. The test is in the kernels, not
    in the hooks: there it cost HiGrad's and the plug-in's passes 4%
    (``scripts/bench_zoo.py``), here nothing measurable.
    """

    hulc: object
    higrad: object
    ob: object
    ob_split: object
    obm: object
    plugin: object
    dim: object
    active: bool


# --- in the kernels --------------------------------------------------------------------
# The kernels call zoo_begin; at each step zoo_observe (the observation, for the paths of their own),
# zoo_gradient (the main path's gradient, before its step) and zoo_main (its iterate, after the step);
# zoo_recentre at powers of two and zoo_end. Each dispatches on the types of the record's parts, so a
# part that is None costs nothing.


def _none(value) -> bool:
    return value is None or isinstance(value, (types.NoneType, types.Omitted))


#: ``stub -> typer`` of every hook below: under NUMBA_DISABLE_JIT=1 (:data:`~ldpsim.engine.dialect.jit.DISABLED`) the
#: stubs' empty bodies would run, and every zoo method would fail in every replication without a word.
_HOOKS: dict = {}


def _hook(stub):
    """Register the decorated typer as ``stub``'s inlined numba overload (and, for plain Python, in :data:`_HOOKS`)."""
    def register(typer):
        _HOOKS[stub] = typer
        return overload(stub, jit_options=OVERLOAD_OPTIONS, inline="always")(typer)
    return register


def _python_hook(typer):
    """The stub of ``typer`` for plain Python: the implementation the typer picks for these values, called."""
    def call(*args):
        return typer(*args)(*args)
    return call


def zoo_on(zoo):
    """Whether the zoo's methods step (``False`` without the zoo, a constant that compiles their calls away)."""


def zoo_begin(zoo):
    """The local generators of the methods with paths of their own (``None`` where absent)."""


def zoo_end(zoo, gens):
    """Write the methods' generators back."""


def _gradient(zoo, grad):
    """:func:`zoo_gradient`'s body, inlined (a part that is ``None`` compiles away)."""


def _observe(zoo, gens, obs, i, eta, c, gamma, ratio):
    """:func:`zoo_observe`'s body, inlined."""


def _main(zoo, i, theta):
    """:func:`zoo_main`'s body, inlined."""


def zoo_recentre(zoo, fi):
    """At a power of two ``fi``: OBM's sums follow the running mean."""


def begin_one(part):
    """A method's local generator, ``None`` for a method not asked for."""


def end_one(part, gen):
    """Write a method's generator back."""


@_hook(begin_one)
def _begin_one(part):
    if _none(part):
        return lambda part: None
    return lambda part: local_rng(part.rng)


@_hook(end_one)
def _end_one(part, gen):
    if _none(part):
        return lambda part, gen: None
    return lambda part, gen: release_rng(part.rng, gen)


@_hook(zoo_on)
def _zoo_on(zoo):
    if _none(zoo):
        return lambda zoo: False
    return lambda zoo: zoo.active


@_hook(zoo_begin)
def _zoo_begin(zoo):
    if _none(zoo):
        return lambda zoo: None
    return lambda zoo: (begin_one(zoo.hulc), begin_one(zoo.higrad), begin_one(zoo.ob), begin_one(zoo.ob_split))


@_hook(zoo_end)
def _zoo_end(zoo, gens):
    if _none(zoo):
        return lambda zoo, gens: None

    def impl(zoo, gens):
        end_one(zoo.hulc, gens[0])
        end_one(zoo.higrad, gens[1])
        end_one(zoo.ob, gens[2])
        end_one(zoo.ob_split, gens[3])

    return impl


def set_point(point, value):
    """``point[:] = value``: a main path's number (scalar models) or ``(d,)`` array, into the ``(d,)`` scratch."""


@_hook(set_point)
def _set_point(point, value):
    if isinstance(value, (types.Array, LaneArrayType, np.ndarray)):  # (np.ndarray: plain Python, no numba)
        def copy(point, value):
            for q in range(point.shape[0]):
                point[q] = value[q]
        return copy

    def one(point, value):
        point[0] = value
    return one


def dimension(dim):
    """The paths' dimension from :attr:`ZooPaths.dim`: a constant 1 for ``None``."""


@_hook(dimension)
def _dimension(dim):
    if _none(dim):
        return lambda dim: 1
    return lambda dim: dim


def plugin_gradient(part, d, grad):
    pass


@_hook(plugin_gradient)
def _plugin_gradient(part, d, grad):
    if _none(part):
        return lambda part, d, grad: None

    def impl(part, d, grad):
        set_point(part.point, grad)
        plugin_add_d(part.smat, part.point, d)

    return impl


@_hook(_gradient)
def _zoo_gradient(zoo, grad):
    if _none(zoo):
        return lambda zoo, grad: None
    return lambda zoo, grad: plugin_gradient(zoo.plugin, dimension(zoo.dim), grad)


def row_step(params, obs, gen, thetas, sums, row, step, grad, point, d):
    """Path ``row`` of ``thetas`` answers ``obs`` at its own iterate and steps by ``step``; ``sums[row]`` adds it.

    HiGrad's threads and the online bootstrap's rows (``(rows, d)``);
    ``grad`` and ``point`` are ``(d,)`` scratch.
    """


@_hook(row_step)
def _row_step(params, obs, gen, thetas, sums, row, step, grad, point, d):
    def impl(params, obs, gen, thetas, sums, row, step, grad, point, d):
        for q in range(d):
            point[q] = thetas[row, q]
            grad[q] = 0.0
        add_gradient_at(params, obs, point, gen, grad)
        for q in range(d):
            x = thetas[row, q] - step * grad[q]
            thetas[row, q] = x
            sums[row, q] += x

    return impl


def hulc_step(part, d, gen, obs, i, c, gamma, ratio):
    pass


@_hook(hulc_step)
def _hulc_step(part, d, gen, obs, i, c, gamma, ratio):
    if _none(part):
        return lambda part, d, gen, obs, i, c, gamma, ratio: None

    def impl(part, d, gen, obs, i, c, gamma, ratio):
        sched = part.sched
        b = sched[0]
        # b < B throughout: the last segment ends at n (HulCLayout), so no check
        j = sched[1] + 1  # the step within the segment, its counter restarted at 1
        pow2 = sched[2]
        eta = step_size(j, pow2, part.eta[0], c, gamma, ratio)
        if j == pow2:
            pow2 *= 2
        part.eta[0] = eta
        theta, acc, grad = part.theta, part.acc, part.grad
        add_gradient_at(part.params, obs, theta, gen, grad)
        perturbed_step_d(theta, acc, grad, eta, d)  # theta -= eta grad, acc += theta
        for q in range(d):
            grad[q] = 0.0
        if i == part.ends[b]:  # the segment closes: its average, and a fresh path for the next
            _hulc_close(part.averages, acc, theta, b, j, part.theta0)
            sched[0] = b + 1
            j = 0
            pow2 = 1
        sched[1] = j
        sched[2] = pow2

    return impl


@jit(borrow=True, kernel_only=True)
def _hulc_close(averages, acc, theta, b, j, theta0):
    # out of the step's line (B times a pass), so that LLVM inlines the step into the kernel
    for q in range(theta.shape[0]):
        averages[b, q] = acc[q] / j
        acc[q] = 0.0
        theta[q] = theta0


def higrad_step(part, d, gen, obs, i, c, gamma, ratio):
    pass


@_hook(higrad_step)
def _higrad_step(part, d, gen, obs, i, c, gamma, ratio):
    if _none(part):
        return lambda part, d, gen, obs, i, c, gamma, ratio: None

    def impl(part, d, gen, obs, i, c, gamma, ratio):
        sched = part.sched
        k = sched[0]
        if k >= part.level_end.shape[0]:  # the tree is done: later observations are not its
            return
        t = sched[1]  # the thread of this observation: level k's threads take the observations in turn
        if t == 0:  # a new round: the chain's next step size
            s = sched[2] + 1
            pow2 = sched[3]
            part.eta[0] = step_size(s, pow2, part.eta[0], c, gamma, ratio)
            if s == pow2:
                sched[3] = pow2 * 2
            sched[2] = s
        thetas, sums = part.thetas, part.sums
        row_step(part.params, obs, gen, thetas, sums, t, part.eta[0], part.grad, part.point, d)
        count = part.threads[k]
        t += 1
        if t == count:
            t = 0
        if i == part.level_end[k]:  # the level closes: its node averages, then its threads branch
            _higrad_close(part.nodes, sums, thetas, part.node_first[k], count, part.lengths[k],
                          part.fans[k + 1] if k + 1 < part.level_end.shape[0] else 0)
            sched[0] = k + 1
            t = 0
        sched[1] = t

    return impl


@jit(borrow=True, kernel_only=True)
def _higrad_close(nodes, sums, thetas, first, count, length, fan):
    # out of the step's line (once a level): the level's node averages, then its threads branch (fan 0: last level)
    for th in range(count):
        for q in range(nodes.shape[1]):
            nodes[first + th, q] = sums[th, q] / length
            sums[th, q] = 0.0
    if fan > 0:
        higrad_branch(thetas, count, fan)


def boot_step(part, d, gen, obs, eta):
    pass


@_hook(boot_step)
def _boot_step(part, d, gen, obs, eta):
    if _none(part):
        return lambda part, d, gen, obs, eta: None

    def impl(part, d, gen, obs, eta):
        # the step's weights W ~ exponential(1) first, one per perturbed row (rows before first, OB_split's own
        # main path, keep weight 1); then each row's answer at its own iterate
        weights = part.weights
        for b in range(part.first, weights.shape[0]):
            weights[b] = exponential(gen)
        for b in range(part.thetas.shape[0]):
            row_step(part.params, obs, gen, part.thetas, part.sums, b, eta * weights[b], part.grad, part.point, d)

    return impl


def obm_step(part, d, i, theta):
    pass


@_hook(obm_step)
def _obm_step(part, d, i, theta):
    if _none(part):
        return lambda part, d, i, theta: None

    def impl(part, d, i, theta):
        k = part.sched[0]
        new = k < part.starts.shape[0] and part.starts[k] == i
        if new:
            part.sched[0] = k + 1
        set_point(part.point, theta)
        obm_add_d(part.point, new, part.vec, part.mat, part.sc, d)

    return impl


@_hook(_observe)
def _zoo_observe(zoo, gens, obs, i, eta, c, gamma, ratio):
    if _none(zoo):
        return lambda zoo, gens, obs, i, eta, c, gamma, ratio: None

    def impl(zoo, gens, obs, i, eta, c, gamma, ratio):
        d = dimension(zoo.dim)
        hulc_step(zoo.hulc, d, gens[0], obs, i, c, gamma, ratio)
        higrad_step(zoo.higrad, d, gens[1], obs, i, c, gamma, ratio)
        boot_step(zoo.ob, d, gens[2], obs, eta)
        boot_step(zoo.ob_split, d, gens[3], obs, eta)

    return impl


@_hook(_main)
def _zoo_main(zoo, i, theta):
    if _none(zoo):
        return lambda zoo, i, theta: None
    return lambda zoo, i, theta: obm_step(zoo.obm, dimension(zoo.dim), i, theta)


def obm_centre(part, fi):
    pass


@_hook(obm_centre)
def _obm_centre(part, fi):
    if _none(part):
        return lambda part, fi: None

    def impl(part, fi):
        obm_recentre(part.vec, part.mat, part.sc, fi)  # (a diverging path is the main path's to detect)

    return impl


@_hook(zoo_recentre)
def _zoo_recentre(zoo, fi):
    if _none(zoo):
        return lambda zoo, fi: None
    return lambda zoo, fi: obm_centre(zoo.obm, fi)


if DISABLED:  # numba compiles nothing: each stub runs the implementation its overload would pick
    for _stub, _typer in _HOOKS.items():
        globals()[_stub.__name__] = _python_hook(_typer)


# The kernels call these at every step: out-of-line functions that borrow their arrays
# (ldpsim.engine.dialect.jit.BORROW_OPTIONS). The hooks read a dozen arrays from their records, and the atomic
# reference counts of those reads, in a kernel compiled with numba's runtime, cost more than a step of HulC.
# The kernel passes its own argument: an inlined shim would bind it to a new variable, and count again.


@jit(borrow=True, kernel_only=True)
def zoo_observe(zoo, gens, obs, i, eta, c, gamma, ratio):
    """Step ``i`` of the paths of their own on observation ``obs`` (``eta`` the main path's step size)."""
    _observe(zoo, gens, obs, i, eta, c, gamma, ratio)


@jit(borrow=True, kernel_only=True)
def zoo_gradient(zoo, grad):
    """The main path's privatized gradient (a number for scalar models, ``(d,)`` otherwise), before its step."""
    _gradient(zoo, grad)


@jit(borrow=True, kernel_only=True)
def zoo_main(zoo, i, theta):
    """The main path's iterate after step ``i`` (a number for scalar models, ``(d,)`` otherwise): OBM's sums."""
    _main(zoo, i, theta)


# --- the Python side -------------------------------------------------------------------


class ZooSpec(NamedTuple):
    """The zoo's part of a run: its methods and their schedules and records (built once per setting).

    ``hulc``: the :class:`~ldpsim.inference.zoo.hulc.HulCLayout`; ``higrad`` the
    :class:`~ldpsim.inference.zoo.higrad.HiGradLayout`; ``ob_paths`` ``B``;
    ``obm`` the :class:`~ldpsim.inference.zoo.obm.OBMLayout`; ``split_model``
    the model at ``epsilon / (B + 1)`` (``OB_split``); ``plugin`` whether the
    plug-in sandwich streams; ``None`` (or ``False``) where not asked for;
    ``active``: see :class:`ZooPaths`.
    """

    hulc: object
    higrad: object
    ob: bool
    ob_split: bool
    ob_paths: int
    split_model: object
    obm: object
    plugin: bool
    theta0: float
    active: bool = True


def build_zoo(spec: ZooSpec, params, d: int, rngs: dict, lanes: int) -> ZooPaths:
    """The :class:`ZooPaths` of one kernel call of ``lanes`` lanes.

    ``params`` is the main path's record (the zoo's paths privatize its
    observation, :func:`~ldpsim.models.base.sharing_observation`); ``rngs[name]``
    the handles of the methods' streams.
    """
    def arr(shape, fill=0.0):
        return lane_array(shape, lanes, fill)

    hulc = higrad = ob = ob_split = obm = plugin = None
    if spec.hulc is not None:
        lay = spec.hulc
        hulc = HulCPaths(rngs["HulC"], params, float(spec.theta0), lay.ends, np.array([0, 0, 1], dtype=np.int64),
                         np.zeros(1), arr(d, float(spec.theta0)), arr(d), arr(d), arr((lay.splits, d), np.nan))
    if spec.higrad is not None:
        lay = spec.higrad
        if lay.burnin:
            raise ValueError("HiGrad with a burn-in is not streamed")  # (validated before: burn-in 0)
        level_end = np.cumsum(lay.lengths * lay.threads).astype(np.int64)
        higrad = HiGradPaths(rngs["HiGrad"], params, level_end, lay.lengths, lay.threads,
                             lay.fans, lay.node_first, lay.step_first, np.array([0, 0, 0, 1], dtype=np.int64),
                             np.zeros(1), arr((lay.final_threads, d), float(spec.theta0)),
                             arr((lay.final_threads, d)), arr((lay.nodes, d), np.nan), arr(d), arr(d))
    if spec.ob:
        rows = spec.ob_paths
        ob = BootPaths(rngs["OB"], params, 0, arr(rows, 1.0), arr((rows, d), float(spec.theta0)),
                       arr((rows, d)), arr(d), arr(d))
    if spec.ob_split:
        rows = spec.ob_paths + 1
        ob_split = BootPaths(rngs["OB_split"], sharing_observation(spec.split_model.kernel_params(lanes), params), 1,
                             arr(rows, 1.0),
                             arr((rows, d), float(spec.theta0)), arr((rows, d)), arr(d), arr(d))
    if spec.obm is not None:
        vec = arr((4, d))
        vec_array = vec.array if lanes > 1 else vec
        vec_array[0] = float(spec.theta0)  # the reference starts at theta0
        obm = OBMState(spec.obm.starts, np.zeros(1, dtype=np.int64), vec, arr((d, d)), arr(3), arr(d))
    if spec.plugin:
        plugin = PluginState(arr((d, d)), arr(d))
    return ZooPaths(hulc, higrad, ob, ob_split, obm, plugin, None if d == 1 else int(d), bool(spec.active))


def zoo_arrays(zoo: ZooPaths, lane: int) -> dict:
    """Replication ``lane``'s zoo state after a pass, as plain arrays (copies).

    ``HulC``: the ``(B, d)`` segment averages; ``HiGrad``: the ``(nodes, d)``
    node averages; ``OB``: the ``(B, d)`` sums of the perturbed paths;
    ``OB_split``: the ``(B + 1, d)`` sums, row 0 its own main path; ``OBM``:
    ``(vec, mat, sc)``; ``plugin_oracle``: the upper triangle of ``sum g g'``.
    """
    out = {}
    if zoo.hulc is not None:
        out["HulC"] = lane_of(zoo.hulc.averages, lane).copy()
    if zoo.higrad is not None:
        out["HiGrad"] = lane_of(zoo.higrad.nodes, lane).copy()
    if zoo.ob is not None:
        out["OB"] = lane_of(zoo.ob.sums, lane).copy()
    if zoo.ob_split is not None:
        out["OB_split"] = lane_of(zoo.ob_split.sums, lane).copy()
    if zoo.obm is not None:
        out["OBM"] = tuple(lane_of(part, lane).copy() for part in (zoo.obm.vec, zoo.obm.mat, zoo.obm.sc))
    if zoo.plugin is not None:
        out["plugin_oracle"] = lane_of(zoo.plugin.smat, lane).copy()
    return out


__all__ = ["BootPaths", "HiGradPaths", "HulCPaths", "OBMState", "PluginState", "STREAM_CODES", "ZooPaths", "ZooSpec",
           "build_zoo", "zoo_arrays", "zoo_begin", "zoo_end", "zoo_gradient", "zoo_main", "zoo_observe", "zoo_recentre"]

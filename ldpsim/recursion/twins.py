"""Plain-Python twins of the kernels, for tests.

:func:`path_twin` repeats the arithmetic of the kernels of
:mod:`ldpsim.recursion.kernels` operation for operation, in numpy float64 scalars, drawing from the same generator in the same order; on small ``n``
the two must agree exactly. It also returns the whole path, from which
:func:`state_from_definitions` recomputes the streamed state by the textbook
formulas (blocks, batches, ``V_n`` as a double sum), independently of the
streaming algebra.
"""

from __future__ import annotations

import numpy as np

from ..inference.streaming import PathState, StreamLayout
from ..inference.user_methods import Segments, method_update
from ..inference.zoo.twins import higrad_branch_twin, obm_add_twin, obm_recentre_twin, plugin_add_twin
from ..models import add_gradient_at, constrain, gradient_at, observe
from ..models.base import sharing_observation
from .kernels import EXACT_STEPS_BELOW, step_ratio, step_ratio_coefficients, sum_of_squares

# the kernel's scalar helpers, as plain Python (their step-size accuracy is
# tested against exact powers separately)
_step_ratio = getattr(step_ratio, "py_func", step_ratio)  # (NUMBA_DISABLE_JIT=1: no dispatcher)
_coefficients = getattr(step_ratio_coefficients, "py_func", step_ratio_coefficients)
_sum_of_squares = getattr(sum_of_squares, "py_func", sum_of_squares)


def _step_size(i: int, pow2: int, eta: float, c: float, gamma: float, ratio) -> float:
    if i < EXACT_STEPS_BELOW or i == pow2:
        return c * float(i) ** -gamma
    return eta * _step_ratio(float(i), ratio)


def step_sizes_twin(n: int, c: float, gamma: float) -> np.ndarray:
    """The kernel's step sizes ``eta_1 .. eta_n``."""
    out = np.empty(n)
    ratio = _coefficients(gamma)
    eta, pow2 = c, 1
    for i in range(1, n + 1):
        eta = _step_size(i, pow2, eta, c, gamma, ratio)
        out[i - 1] = eta
        if i == pow2:
            pow2 *= 2
    return out


def path_twin(model, gen: np.random.Generator, n: int, c: float, gamma: float, theta0: float,
              layout: StreamLayout, batch_size: int = 1, zoo=None, zoo_gens=None, tap=None, users=None):
    """Twin of :func:`ldpsim.recursion.kernels.run_path`, scalar and vector models alike.

    Coordinate by coordinate it does what both kernels do, in the same
    order, so it must agree with either exactly. ``layout`` may also be a
    list of layouts that share ``n`` and the batches (:func:`~ldpsim.recursion.kernels.run_paths`);
    then ``state`` is a list, one per layout. With ``zoo`` (a
    :class:`~ldpsim.recursion.zoo.ZooSpec`) and ``zoo_gens`` (a generator per
    method with paths of its own) it also runs :class:`ZooTwin` on the same
    observations and returns its arrays third, as
    :func:`~ldpsim.recursion.zoo.zoo_arrays` gives the kernel's. ``tap``, a
    scalar model's callable, is called with the kernel params after each
    step's gradient (their mechanism's scratch then holds its release).
    ``users``: users' interval methods as :func:`~ldpsim.recursion.kernels.run_paths_lanes`
    takes them; their updates run in plain Python after each step, and
    ``state.own`` holds their records.

    Returns
    -------
    state : PathState or list of PathState
        As the kernel's wrapper returns it.
    path : numpy.ndarray
        The iterates ``theta_1 .. theta_n``, shape ``(n, d)``.
    """
    if isinstance(layout, (list, tuple)):
        first, path, *rest = path_twin(model, gen, n, c, gamma, theta0, layout[0], batch_size, zoo, zoo_gens,
                                       users=users)
        states = [first] + [_with_blocks(first, path, lay) for lay in layout[1:]]
        return (states, path, *rest)
    params, d = model.kernel_params(), model.dim
    ratio = _coefficients(gamma)
    twin = None if zoo is None else ZooTwin(zoo, model, params, n, c, gamma, zoo_gens)
    if d == 1:
        def gradient(theta, out, i, eta):
            g = 0.0
            for _ in range(batch_size):
                obs = observe(params, gen)
                g += gradient_at(params, obs, float(theta[0]), gen)
                if twin is not None:
                    twin.observe(obs, i, eta)
            out[0] = g
            if tap is not None:
                tap(params)
    else:
        def gradient(theta, out, i, eta):
            out[:] = 0.0
            for _ in range(batch_size):
                obs = observe(params, gen)
                add_gradient_at(params, obs, theta, gen, out)
                if twin is not None:
                    twin.observe(obs, i, eta)

    own = [make(1) for make in users] if users else None
    updated = [r for r in own or () if not isinstance(r, Segments)]
    segmented = [_SegmentTwin(r, d) for r in own or () if isinstance(r, Segments)]

    def done(state, path):
        state.own = own
        return (state, path) if twin is None else (state, path, twin.arrays())
    blocks = np.zeros((layout.n_blocks, d))
    batches = np.zeros((layout.batch_ends.shape[0], d))
    path = np.empty((n, d))
    theta, ref = np.full(d, float(theta0)), np.full(d, float(theta0))
    if d > 1:
        constrain(params, theta)
    s, a, t, block, batch, grad = (np.zeros(d) for _ in range(6))
    j, block_end = 0, layout.block_len if layout.n_blocks > 0 else n + 1
    k, batch_end = 0, int(layout.batch_ends[0]) if len(layout.batch_ends) else n + 1
    pow2, eta, inv_s = 1, c, 1.0 / batch_size
    for i in range(1, n + 1):
        fi = float(i)
        eta = _step_size(i, pow2, eta, c, gamma, ratio)
        gradient(theta, grad, i, eta)
        if twin is not None:
            twin.gradient(grad)
        theta = theta - (eta * inv_s) * grad
        if d > 1:
            constrain(params, theta)
        if twin is not None:
            twin.main(i, theta)
        for record in updated:  # the main path's iterate: a number for a scalar model, as the kernel passes it
            method_update(record, i, theta[0] if d == 1 else theta)
        for segments in segmented:
            segments.step(i, theta)
        path[i - 1] = theta
        for q in range(d):
            s[q] += theta[q] - ref[q]
            a[q] += s[q] * s[q]
            t[q] += fi * s[q]
        block += theta
        if i == block_end:
            blocks[j] = block
            block, j = np.zeros(d), j + 1
            block_end = block_end + layout.block_len if j < layout.n_blocks else n + 1
        batch += theta
        if i == batch_end:
            batches[k] = batch
            batch, k = np.zeros(d), k + 1
            batch_end = int(layout.batch_ends[k]) if k < len(layout.batch_ends) else n + 1
        if i == pow2:
            shift = s / fi
            w2 = _sum_of_squares(fi)
            a += shift * (shift * w2 - 2.0 * t)
            t -= shift * w2
            ref += shift
            s[:] = 0.0
            if twin is not None:
                twin.recentre(fi)
            pow2 *= 2
            if not np.isfinite(a).all():
                return done(PathState(np.full(d, np.nan), np.full(d, np.nan), blocks, batches, i), path[:i])
    fn = float(n)
    e = s / fn
    v = (a + e * (e * _sum_of_squares(fn) - 2.0 * t)) / (fn * fn)
    return done(PathState(ref + e, v, blocks, batches, n), path)


class ZooTwin:
    """Plain-Python twin of the method zoo's pass (:mod:`ldpsim.recursion.zoo`), written from the methods' definitions.

    Each method with paths of its own draws from its generator in
    ``gens`` (``zoo_gens[name]``): per observation, HulC's open segment and
    HiGrad's thread of that observation one answer each; the online
    bootstrap's weights ``W ~ exponential(1)`` of its perturbed rows first, then
    each row's answer in order. Step sizes come from :func:`step_sizes_twin`:
    HulC's segment step ``j`` is ``eta_j``, a HiGrad thread's ``eta`` is that of
    its chain's step count; the bootstrap's rows take the main path's ``eta_i``.
    """

    def __init__(self, spec, model, params, n: int, c: float, gamma: float, gens: dict):
        self.spec, self.d, self.gens = spec, model.dim, gens
        self.params = params  # the main path's record: its observation's covariates
        self.theta0 = float(spec.theta0)
        d = self.d
        self.etas = step_sizes_twin(n, c, gamma)
        if spec.hulc is not None:
            self.hulc_ends = [int(e) for e in spec.hulc.ends]
            self.hulc_theta, self.hulc_acc = np.full(d, self.theta0), np.zeros(d)
            self.hulc_avg = np.full((len(self.hulc_ends), d), np.nan)
            self.hulc_seg, self.hulc_j = 0, 0
        if spec.higrad is not None:
            lay = spec.higrad
            # observation i's level, thread and chain step, from the tree's definition
            self.hg_obs = []
            for k in range(lay.levels):
                for r in range(int(lay.lengths[k])):
                    for th in range(int(lay.threads[k])):
                        self.hg_obs.append((k, th, int(lay.step_first[k]) + r + 1))
            self.hg_theta = np.full((lay.final_threads, d), self.theta0)
            self.hg_sum = np.zeros((lay.final_threads, d))
            self.hg_nodes = np.full((lay.nodes, d), np.nan)
        self.boot = {}
        if spec.ob:
            self.boot["OB"] = (self.params, 0, np.full((spec.ob_paths, d), self.theta0), np.zeros((spec.ob_paths, d)))
        if spec.ob_split:
            rows = spec.ob_paths + 1
            self.boot["OB_split"] = (sharing_observation(spec.split_model.kernel_params(), params), 1, np.full((rows, d), self.theta0),
                                     np.zeros((rows, d)))
        if spec.obm is not None:
            self.obm_starts = set(int(a) for a in spec.obm.starts)
            self.obm_vec, self.obm_mat, self.obm_sc = np.zeros((4, d)), np.zeros((d, d)), np.zeros(3)
            self.obm_vec[0] = self.theta0
        if spec.plugin:
            self.smat = np.zeros((d, d))

    def _answer(self, params, obs, point, gen) -> np.ndarray:
        """A fresh privatized gradient of ``obs`` at ``point`` ``(d,)``."""
        if self.d == 1:
            return np.array([0.0 + gradient_at(params, obs, float(point[0]), gen)])
        out = np.zeros(self.d)
        add_gradient_at(params, obs, point, gen, out)
        return out

    def observe(self, obs, i: int, eta: float) -> None:
        """Observation ``i`` for the paths of their own (the main path's step size ``eta``)."""
        spec = self.spec
        if spec.hulc is not None and self.hulc_seg < len(self.hulc_ends):
            self.hulc_j += 1
            step = self.etas[self.hulc_j - 1]
            g = self._answer(self.params, obs, self.hulc_theta, self.gens["HulC"])
            self.hulc_theta = self.hulc_theta - step * g
            self.hulc_acc += self.hulc_theta
            if i == self.hulc_ends[self.hulc_seg]:
                self.hulc_avg[self.hulc_seg] = self.hulc_acc / self.hulc_j
                self.hulc_seg, self.hulc_j = self.hulc_seg + 1, 0
                self.hulc_theta, self.hulc_acc = np.full(self.d, self.theta0), np.zeros(self.d)
        if spec.higrad is not None and i <= len(self.hg_obs):
            lay = spec.higrad
            k, th, chain_step = self.hg_obs[i - 1]
            g = self._answer(self.params, obs, self.hg_theta[th].copy(), self.gens["HiGrad"])
            self.hg_theta[th] = self.hg_theta[th] - self.etas[chain_step - 1] * g
            self.hg_sum[th] += self.hg_theta[th]
            if i == len(self.hg_obs) or self.hg_obs[i][0] != k:  # level k closes
                count = int(lay.threads[k])
                self.hg_nodes[lay.node_first[k]:lay.node_first[k] + count] = self.hg_sum[:count] / lay.lengths[k]
                self.hg_sum[:] = 0.0
                if k + 1 < lay.levels:
                    higrad_branch_twin(self.hg_theta, count, int(lay.fans[k + 1]))
        for name, (params, first, thetas, sums) in self.boot.items():
            gen = self.gens[name]
            weights = np.ones(thetas.shape[0])
            for b in range(first, thetas.shape[0]):
                weights[b] = gen.standard_exponential()
            for b in range(thetas.shape[0]):
                step = eta * weights[b]
                g = self._answer(params, obs, thetas[b].copy(), gen)
                thetas[b] = thetas[b] - step * g
                sums[b] += thetas[b]

    def gradient(self, grad: np.ndarray) -> None:
        """The main path's privatized gradient at step ``i`` (before its step)."""
        if self.spec.plugin:
            plugin_add_twin(self.smat, grad)

    def main(self, i: int, theta: np.ndarray) -> None:
        """The main path's iterate after step ``i``."""
        if self.spec.obm is not None:
            obm_add_twin(theta, i in self.obm_starts, self.obm_vec, self.obm_mat, self.obm_sc)

    def recentre(self, fi: float) -> None:
        """At a power of two ``fi``: OBM's sums follow the running mean."""
        if self.spec.obm is not None:
            obm_recentre_twin(self.obm_vec, self.obm_mat, self.obm_sc, fi)

    def arrays(self) -> dict:
        """The state as :func:`~ldpsim.recursion.zoo.zoo_arrays` gives the kernel's."""
        out = {}
        if self.spec.hulc is not None:
            out["HulC"] = self.hulc_avg.copy()
        if self.spec.higrad is not None:
            out["HiGrad"] = self.hg_nodes.copy()
        for name, (_, _, _, sums) in self.boot.items():
            out[name] = sums.copy()
        if self.spec.obm is not None:
            out["OBM"] = (self.obm_vec.copy(), self.obm_mat.copy(), self.obm_sc.copy())
        if self.spec.plugin:
            out["plugin_oracle"] = self.smat.copy()
        return out


class _SegmentTwin:
    """A :class:`~ldpsim.inference.user_methods.Segments` record's sums, as the kernels stream them."""

    def __init__(self, record: Segments, d: int):
        self.record, self.acc, self.row = record, np.zeros(d), 0

    def step(self, i: int, theta: np.ndarray) -> None:
        self.acc += theta
        if self.row < self.record.ends.shape[0] and i == self.record.ends[self.row]:
            self.record.sums[self.row] = self.acc
            self.acc, self.row = np.zeros(self.acc.shape[0]), self.row + 1


def _with_blocks(state: PathState, path: np.ndarray, layout: StreamLayout) -> PathState:
    """``state`` with the block sums of ``layout``, summed left to right as the kernels do."""
    d = path.shape[1]
    blocks = np.zeros((layout.n_blocks, d))
    if state.steps == path.shape[0] == layout.n:
        for j in range(layout.n_blocks):
            acc = np.zeros(d)
            for x in path[j * layout.block_len:(j + 1) * layout.block_len]:
                acc += x
            blocks[j] = acc
    return PathState(state.theta_bar.copy(), state.sn_v.copy(), blocks, state.batches.copy(), state.steps, state.own)


def state_from_definitions(path: np.ndarray, layout: StreamLayout) -> PathState:
    """The streamed state recomputed from a stored path by the defining formulas.

    Parameters
    ----------
    path : numpy.ndarray
        Iterates, shape ``(n,)`` or ``(n, d)``.
    layout : StreamLayout
        Block and batch ends.
    """
    x = path.reshape(path.shape[0], -1)
    n = x.shape[0]
    theta_bar = x.mean(axis=0)
    l, m = layout.block_len, layout.n_blocks
    blocks = x[: m * l].reshape(m, l, -1).sum(axis=1) if m else np.zeros((0, x.shape[1]))
    starts = np.concatenate([[0], layout.batch_ends[:-1]])
    batches = np.array([x[a:b].sum(axis=0) for a, b in zip(starts, layout.batch_ends)]).reshape(-1, x.shape[1])
    running_means = np.cumsum(x, axis=0) / np.arange(1, n + 1)[:, None]
    t = np.arange(1, n + 1)[:, None]
    sn_v = (t**2 * (running_means - theta_bar) ** 2).sum(axis=0) / n**2
    return PathState(theta_bar, sn_v, blocks, batches, n)

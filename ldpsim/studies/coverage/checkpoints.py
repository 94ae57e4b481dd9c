"""The checkpoint kernel: one LDP-SGD path with every checkpoint's own blocks and batches, streamed.

At checkpoints ``k_1 < ... < k_C = n`` the kernel records what each interval
method needs *as if the path ended at k*: ``theta_bar_k`` and the
random-scaling ``V_k`` (``sn_read``), the block sums of checkpoint ``k``
(blocks of length ``floor(k^beta)``) and its batch sums (Chen et al.'s batches
for ``k`` steps). Blocks and batches of different checkpoints do not nest, so
each checkpoint has two *streams* of its own, all in one flat buffer of
``sum_k (m_k + M_k + 1)`` numbers, never ``O(n)``; a step costs one addition
more than the coverage kernel (see :func:`_trace_path`). The last checkpoint's
streams add every iterate, so its state equals the coverage kernel's bit for
bit. Two users: ``trace`` (000's Figure 1, one path, :mod:`.trace`) and the
looks of a coverage run (every replication, :mod:`.looks`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...engine.dialect import interrupt
from ...engine.dialect.interrupt import POLL_MASK, stop_requested
from ...engine.dialect.jit import jit
from ...engine.dialect.rng import kernel_rng, local_rng, release_rng
from ...inference import intervals as inference
from ...inference.streaming import PathState, StreamLayout, floor_power
from ...models import privatized_gradient
from ...recursion.kernels import sn_add, sn_read, sn_recentre, step_ratio_coefficients, step_size
from .releases import NO_TAP, ReleaseTap, tap_look, tap_step

#: Streams per checkpoint: its blocks (BB), then its batches (BM).
_STREAMS = 2


def stream_counts(grid, beta: float, gamma: float, methods) -> tuple[np.ndarray, np.ndarray]:
    """Blocks ``m_k`` and batches ``M_k + 1`` of each checkpoint of ``grid`` that ``methods`` need (zeros if none).

    From the grid alone, without building the layouts whose size they bound.
    """
    blocks, batches = inference.uses_blocks(methods), inference.uses_batches(methods)
    m = np.array([int(k) // floor_power(int(k), beta) for k in grid]) if blocks else np.zeros(1, int)
    big_m = np.array([floor_power(int(k), (1.0 - gamma) / 2.0) + 1 for k in grid]) if batches else np.zeros(1, int)
    return m, big_m

# ---------------------------------------------------------------------------
# layout of the checkpoints


@dataclass(frozen=True)
class TraceLayout:
    """Where every checkpoint's blocks and batches end.

    Attributes
    ----------
    checkpoints : numpy.ndarray
        ``k_1 < ... < k_C``, ``int64``.
    layouts : tuple of StreamLayout
        The layout of each checkpoint, as :func:`ldpsim.recursion.kernels.run_path`
        would use for a path of ``k`` steps; a method a checkpoint is too short
        for (fewer than two blocks or batches) is switched off in its layout.
    ends : numpy.ndarray
        All streams' ends, flat: stream ``2q`` holds checkpoint ``q``'s block
        ends ``l, 2l, ..., m l``, stream ``2q + 1`` its batch ends.
    offsets : numpy.ndarray
        Stream ``r`` owns ``ends[offsets[r]:offsets[r + 1]]``, shape ``(2C + 1,)``.
    """

    checkpoints: np.ndarray
    layouts: tuple[StreamLayout, ...]
    ends: np.ndarray
    offsets: np.ndarray

    @classmethod
    def build(cls, checkpoints, beta: float, gamma: float, blocks: bool = True, batches: bool = True):
        """Layouts of ``checkpoints`` for block exponent ``beta`` and step exponent ``gamma``."""
        layouts, streams = [], []
        for k in np.asarray(checkpoints, dtype=np.int64):
            layout = StreamLayout.build(int(k), beta, gamma, blocks=blocks, batches=batches)
            bb, bm = layout.enough_blocks, layout.enough_batches
            if (blocks and not bb) or (batches and not bm):
                layout = StreamLayout.build(int(k), beta, gamma, blocks=blocks and bb, batches=batches and bm)
            layouts.append(layout)
            streams.append(layout.block_len * np.arange(1, layout.n_blocks + 1, dtype=np.int64))
            streams.append(layout.batch_ends.astype(np.int64))
        offsets = np.zeros(len(streams) + 1, dtype=np.int64)
        offsets[1:] = np.cumsum([len(s) for s in streams])
        ends = np.concatenate(streams) if streams else np.zeros(0, dtype=np.int64)
        return cls(np.asarray(checkpoints, dtype=np.int64), tuple(layouts), ends, offsets)

    @property
    def size(self) -> int:
        """Entries of the flat sum buffer (what memory the trace adds grows with)."""
        return int(self.ends.shape[0])


# ---------------------------------------------------------------------------
# the kernel


@jit
def _trace_path(params, stream, n, c, gamma, theta0, checkpoints, ends, offsets, sums, acc, cursor,
                theta_bar, sn_v, stop_flag, tap):
    # Streams r = 2q, 2q + 1 belong to checkpoint q. Between two consecutive
    # ends of any stream (an "event"), the iterates fall in one block or batch
    # of every stream, so they are summed once, into ``seg``, and ``seg`` is
    # added to every open stream at the event: a step costs one addition, not
    # one per checkpoint. The last checkpoint's two streams instead add every
    # iterate, as run_path does, so its sums equal run_path's bit for bit.
    # Streams of passed checkpoints have written all their sums (every end is
    # <= k_q) and are skipped. ``tap`` streams each step's release into the
    # methods that read it (:mod:`.releases`; NoTap compiles to nothing).
    gen = local_rng(stream)  # the generator's state in registers; release_rng writes it back
    n_ck = checkpoints.shape[0]
    n_streams = acc.shape[0]
    last = n_streams - _STREAMS
    next_event = n + 1  # the smallest end still due, over all streams
    for r in range(n_streams):
        acc[r] = 0.0
        cursor[r] = offsets[r]
        if offsets[r] < offsets[r + 1] and ends[offsets[r]] < next_event:
            next_event = ends[offsets[r]]
    seg = 0.0
    first = 0
    next_ck = checkpoints[0]
    theta = theta0
    ref = theta0
    s = 0.0
    a = 0.0
    t = 0.0
    pow2 = 1
    ratio = step_ratio_coefficients(gamma)
    eta = c
    for i in range(1, n + 1):
        fi = float(i)
        eta = step_size(i, pow2, eta, c, gamma, ratio)
        theta -= eta * privatized_gradient(params, theta, gen)
        tap_step(tap)
        s, a, t = sn_add(s, a, t, theta, ref, fi)
        seg += theta
        acc[last] += theta
        acc[last + 1] += theta
        if i == next_event:
            next_event = n + 1
            for r in range(_STREAMS * first, n_streams):
                if r < last:
                    acc[r] += seg
                p = cursor[r]
                stop = offsets[r + 1]
                if p < stop and ends[p] == i:
                    sums[p] = acc[r]
                    acc[r] = 0.0
                    p += 1
                    cursor[r] = p
                if p < stop and ends[p] < next_event:
                    next_event = ends[p]
            seg = 0.0
        if i == pow2:
            s, a, t, ref = sn_recentre(s, a, t, ref, fi)
            pow2 *= 2
            if not np.isfinite(a):  # diverged: stop; later checkpoints stay NaN
                release_rng(stream, gen)
                return i
        if i == next_ck:
            tb, v = sn_read(s, a, t, ref, fi)
            theta_bar[first] = tb
            sn_v[first] = v
            tap_look(tap, first)
            first += 1
            next_ck = checkpoints[first] if first < n_ck else n + 1
        if i & POLL_MASK == 0 and stop_requested(stop_flag):  # Ctrl-C (ldpsim.engine.dialect.interrupt)
            release_rng(stream, gen)
            return i
    release_rng(stream, gen)
    return n


@dataclass
class Trace:
    """The recorded state of one path at every checkpoint.

    Attributes
    ----------
    layout : TraceLayout
        Checkpoints and their block and batch ends.
    theta_bar, sn_v : numpy.ndarray
        ``theta_bar_k`` and ``V_k`` per checkpoint, shape ``(C,)`` (NaN past a divergence).
    sums : numpy.ndarray
        Block and batch sums, flat as ``layout.ends``.
    steps : int
        Steps completed: ``n``, or fewer if the path diverged.
    released : numpy.ndarray
        ``(C, len(tap.methods), 2)``: the release methods' running bounds per checkpoint (NaN past a
        divergence; :mod:`.releases`).
    tap : ReleaseTap
        The release methods streamed (none by default).
    """

    layout: TraceLayout
    theta_bar: np.ndarray
    sn_v: np.ndarray
    sums: np.ndarray
    steps: int
    released: np.ndarray
    tap: ReleaseTap

    def state(self, q: int) -> PathState:
        """The :class:`PathState` of a path that ended at checkpoint ``q``."""
        o = self.layout.offsets
        return PathState(
            theta_bar=self.theta_bar[q : q + 1].copy(),
            sn_v=self.sn_v[q : q + 1].copy(),
            blocks=self.sums[o[2 * q] : o[2 * q + 1], None].copy(),
            batches=self.sums[o[2 * q + 1] : o[2 * q + 2], None].copy(),
            steps=min(self.steps, int(self.layout.checkpoints[q])),
        )


def run_trace(model, gen: np.random.Generator, c: float, gamma: float, theta0: float,
              layout: TraceLayout, tap: ReleaseTap | None = None) -> Trace:
    """Run one path to ``layout.checkpoints[-1]`` steps, recording every checkpoint's state.

    Parameters
    ----------
    model : ldpsim.models.Model
        A scalar model.
    gen : numpy.random.Generator
        The path's generator; the kernel advances it exactly as
        :func:`ldpsim.recursion.kernels.run_path` would for the same ``n``.
    c, gamma : float
        Step size ``eta_i = c i^-gamma``.
    theta0 : float
        Starting value.
    layout : TraceLayout
        Checkpoints and their ends.
    tap : ReleaseTap, optional
        Methods that read each step's NPRR release (:mod:`.releases`); they draw nothing, so the
        path and its generator are the same with them or without.

    Returns
    -------
    Trace
    """
    if model.dim != 1:
        raise NotImplementedError(f"model {model.name!r} has dim {model.dim}; only scalar models are traced")
    ks = layout.checkpoints
    if ks.ndim != 1 or ks.shape[0] == 0 or ks[0] < 1 or (np.diff(ks) <= 0).any():
        raise ValueError("checkpoints must be a non-empty, strictly increasing array of positive integers")
    for r in range(len(layout.offsets) - 1):
        # an end that is never reached, or reached twice, would stall every stream behind it
        own = layout.ends[layout.offsets[r] : layout.offsets[r + 1]]
        k = ks[r // _STREAMS]
        if own.size and (own[0] < 1 or own[-1] > k or (np.diff(own) <= 0).any()):
            raise ValueError(f"stream {r} of checkpoint k = {k} has ends outside 1..k or not increasing")
    n = int(ks[-1])
    n_streams = _STREAMS * ks.shape[0]
    sums = np.full(layout.size, np.nan)
    theta_bar = np.full(ks.shape[0], np.nan)
    sn_v = np.full(ks.shape[0], np.nan)
    tap = tap or NO_TAP
    params = model.kernel_params()
    record, released = tap.kernel_record(params, ks.shape[0])
    steps = _trace_path(
        params, kernel_rng(gen), n, float(c), float(gamma), float(theta0), ks, layout.ends,
        layout.offsets, sums, np.zeros(n_streams), np.zeros(n_streams, dtype=np.int64), theta_bar, sn_v,
        interrupt.FLAG, record,
    )
    interrupt.check()  # a path stopped by Ctrl-C is no result
    return Trace(layout, theta_bar, sn_v, sums, int(steps), released, tap)


# ---------------------------------------------------------------------------
# intervals


def trace_intervals(trace: Trace, setting, methods, gen: np.random.Generator, sigma=None) -> np.ndarray:
    """Each method's interval at each checkpoint, from the functions of :mod:`ldpsim.inference`.

    The block bootstrap draws its multipliers from ``gen`` (after the path),
    last checkpoint first: then the last checkpoint draws what replication 0
    of ``run`` draws, and its row equals that replication's intervals.

    Parameters
    ----------
    trace : Trace
    setting : ldpsim.config.Setting
        Supplies ``B``, ``multiplier`` and ``level``.
    methods : sequence of str
    gen : numpy.random.Generator
    sigma : numpy.ndarray, optional
        The model's asymptotic covariance (needed for ``oracle``).

    Returns
    -------
    numpy.ndarray
        ``(C, len(methods), 2)`` lower and upper ends; NaN where a checkpoint
        is too short for a method (fewer than two blocks or batches), past a
        divergence, or where the interval is not finite or lost its precision
        (:func:`~ldpsim.inference.intervals.resolved`).
    """
    ks = trace.layout.checkpoints
    bounds = np.full((ks.shape[0], len(methods), 2), np.nan)
    released = {m: j for j, m in enumerate(trace.tap.methods)}
    for q in range(ks.shape[0] - 1, -1, -1):
        state, layout = trace.state(q), trace.layout.layouts[q]
        if not state.finite(int(ks[q])):
            continue
        for j, method in enumerate(methods):  # streamed in the kernel: no draws
            if method in released:
                bounds[q, j] = trace.released[q, released[method]]
        # a checkpoint too short for two blocks (batches) has no BB (BM) interval
        short = inference.unavailable(methods, layout)
        usable = [j for j, method in enumerate(methods) if method not in short and method not in released]
        with np.errstate(all="ignore"):  # an overflowing interval is dropped below, not warned about
            bounds[q, usable] = inference.intervals(
                [methods[j] for j in usable], state, layout, gen, n_boot=setting.B, law=setting.multiplier,
                level=setting.level, sigma=sigma, t_opt=setting.n)[:, 0]
        for j in usable:  # as in `run`: an interval of rounding noise (theta0 = 1e20) is no interval
            if not (np.isfinite(bounds[q, j]).all() and inference.resolved(bounds[q, j])):
                bounds[q, j] = np.nan
    return bounds


__all__ = ["Trace", "TraceLayout", "run_trace", "stream_counts", "trace_intervals"]

"""The LDP-SGD recursion (000, eq. 6) with the inference state streamed alongside.

``theta_i = theta_{i-1} - eta_i A(g(X_i, theta_{i-1}))`` with ``eta_i = c i^-gamma``.
The kernel draws each observation itself (no n-sized array exists), calls the
model's registered privatized gradient and updates, in the same pass, the
block sums, batch sums and random-scaling sums of :mod:`ldpsim.inference.streaming`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..engine.dialect import interrupt
from ..engine.dialect.interrupt import stop_requested
from ..engine.dialect.jit import jit
from ..engine.dialect.lanes import LaneArray, any_lane, lane_array, lane_of, lnot, padded, where
from ..engine.dialect.rng import kernel_rngs, local_rng, release_rng
from ..inference.streaming import PathState, StreamLayout
from ..inference.user_methods import Segments, lane_state
from ..models.base import add_gradient_at, constrain, gradient_at, observe
from .steps import (EXACT_STEPS_BELOW, FIRST_FILL, RATIO_CHUNK, buffered_step_size, fill_step_ratios,  # noqa: F401
                    step_ratio, step_ratio_coefficients, step_size)
from .user_methods import chain, users_step
from .zoo import build_zoo, zoo_arrays, zoo_begin, zoo_end, zoo_gradient, zoo_main, zoo_observe, zoo_on, zoo_recentre

@jit
def sum_of_squares(i):
    """``1^2 + ... + i^2`` as a float (exact in integers would overflow int64)."""
    return i * (i + 1.0) * (2.0 * i + 1.0) / 6.0


# The random-scaling sums, centred at a reference ``ref`` that moves to the
# running mean at every power of two. For i <= t the centred partial sums are
# S_t = sum_{s<=t} (theta_s - ref). Random scaling needs
# k^2 V_k = sum_{t<=k} (S_t - t e)^2 = A - 2 e T + e^2 W2(k), e = S_k / k,
# with A = sum S_t^2, T = sum t S_t, W2 = sum t^2: the terms grow like k^3,
# so without the recentring they would cancel catastrophically. The three
# helpers below are shared by every kernel that streams V (the trace reads V
# at many k along one path), so their arithmetic exists once.


@jit(inline=True)
def sn_add(s, a, t, theta, ref, fi):
    """Add iterate ``theta_i`` (``fi = float(i)``) to the centred sums ``(S, A, T)``."""
    s += theta - ref
    return s, a + s * s, t + fi * s


@jit
def sn_recentre(s, a, t, ref, fi):
    """Move ``ref`` to the running mean after step ``fi``; returns the new ``(S, A, T, ref)``."""
    shift = s / fi
    w2 = sum_of_squares(fi)
    return 0.0, a + shift * (shift * w2 - 2.0 * t), t - shift * w2, ref + shift


@jit(inline=True)
def sn_recentre_all(s, a, t, ref, fi):
    """:func:`sn_recentre` for every coordinate of the ``(d,)`` sums, in place; whether every ``A`` is finite.

    Lane-generic: with lane arrays, whether each lane's are (a mask).
    """
    finite = True
    for q in range(s.shape[0]):
        s[q], a[q], t[q], ref[q] = sn_recentre(s[q], a[q], t[q], ref[q], fi)
        finite = finite & np.isfinite(a[q])
    return finite


@jit
def sn_read(s, a, t, ref, fk):
    """``(theta_bar_k, V_k)`` from the centred sums after step ``fk = float(k)``."""
    e = s / fk
    return ref + e, (a + e * (e * sum_of_squares(fk) - 2.0 * t)) / (fk * fk)


# A mini-batch of s observations uses the step eta_i / s on their sum
# (eta_i * (1/s) is exact for s = 1, so s = 1 is plain LDP-SGD to the bit; the
# scalar kernel starts the sum at -0.0, not 0.0, which differs only for a
# gradient of exactly -0.0, which no model produces).
# The kernels are specialised at compile time on what a run needs: numba
# compiles a separate loop for ``batch_size=None`` (one observation a step, no
# inner loop), ``blocks=None`` (no block bootstrap), ``batches=None`` (no
# batch means) and ``segments=None`` (no users' segments beyond the batch
# stream), and drops the code that serves them. The random-scaling sums
# always run: they also give theta_bar and detect a diverging path. A step
# does only what every step does; whatever happens at some steps (a block or
# a batch ends, a power of two, a refill of the step ratios) waits behind one
# test, ``i == event``, the nearest of those steps.


class BlockStreams(NamedTuple):
    """The block sums of several block lengths, filled in one pass (settings that share a path).

    Stream ``g`` has blocks of length ``lens[g]`` ending at ``lens[g], 2 lens[g], ...,
    count[g] lens[g]``; block ``j`` of stream ``g`` is written to
    ``out[first[g] + j]``. Each stream adds every iterate to its own
    accumulator, left to right, so its sums are those of a run with that block
    length alone, to the bit.

    Attributes
    ----------
    lens, count, first : numpy.ndarray
        ``int64`` ``(G,)``: block length, number of blocks and first row in ``out``.
    ends, cursor : numpy.ndarray
        ``int64`` ``(G,)`` work arrays: the step at which the open block ends
        (``n + 1`` when the stream is full) and the row it goes to.
    acc : numpy.ndarray
        ``(G,)`` (scalar kernel) or ``(G, d)`` (vector kernel) open block sums.
    out : numpy.ndarray
        ``(sum(count),)`` or ``(sum(count), d)``: every stream's block sums.
    """

    lens: np.ndarray
    count: np.ndarray
    first: np.ndarray
    ends: np.ndarray
    cursor: np.ndarray
    acc: np.ndarray
    out: np.ndarray


@jit
def _open_blocks(blocks, n):
    """Reset the streams; the step of the first block end."""
    for g in range(blocks.lens.shape[0]):
        blocks.cursor[g] = blocks.first[g]
        blocks.ends[g] = blocks.lens[g] if blocks.count[g] > 0 else n + 1
    blocks.acc[:] = 0.0
    return blocks.ends.min()


@jit
def _close_blocks(blocks, i, n):
    """Store the sums of the blocks that end at step ``i``; the step of the next block end."""
    for g in range(blocks.lens.shape[0]):
        if blocks.ends[g] == i:
            row = blocks.cursor[g]
            blocks.out[row] = blocks.acc[g]
            blocks.acc[g] = 0.0
            blocks.cursor[g] = row + 1
            blocks.ends[g] = i + blocks.lens[g] if row + 1 < blocks.first[g] + blocks.count[g] else n + 1
    return blocks.ends.min()


class SegmentSums(NamedTuple):
    """Sums of the iterates over segments of the path, several streams of segments filled in one pass.

    Stream ``g``'s segments end at steps ``ends[first[g]] < ... < ends[stop[g] - 1] <= n``
    (its first segment starts at step 1, each next one after the previous end),
    and the sum of its segment ``j`` goes to ``out[first[g] + j]``: the
    segments users' interval methods ask for
    (:meth:`ldpsim.extend.IntervalMethod.segments`) beyond the one the batch
    stream serves. Each stream adds every iterate to its own accumulator, left
    to right, so its sums are those of a run with that stream alone, to the bit.

    The block bootstrap's blocks are segments too, but keep
    :class:`BlockStreams`: the main kernel with its blocks in a
    ``SegmentSums`` ran 5% slower at 8 lanes (2.31 against 2.20 ns a
    replication-step, ``scripts/bench.py``'s kernel on the 2-core VM), from
    code that runs only where a block ends: a matter of LLVM's code layout.

    Attributes
    ----------
    ends : numpy.ndarray
        ``int64`` ``(sum of the streams' segments,)``: every stream's segment ends, stream by stream.
    first, stop : numpy.ndarray
        ``int64`` ``(G,)``: the rows of stream ``g`` are ``first[g] .. stop[g] - 1``.
    cursor : numpy.ndarray
        ``int64`` ``(G,)`` work array: the row of the open segment of each stream.
    acc : numpy.ndarray
        ``(G,)`` (scalar kernel) or ``(G, d)`` (vector kernel) open segment sums.
    out : numpy.ndarray
        ``(len(ends),)`` or ``(len(ends), d)``: every stream's segment sums.
    """

    ends: np.ndarray
    first: np.ndarray
    stop: np.ndarray
    cursor: np.ndarray
    acc: np.ndarray
    out: np.ndarray


@jit
def _next_end(sums, n):
    """The nearest step at which a segment of ``sums`` ends (``n + 1``: none)."""
    nearest = n + 1
    for g in range(sums.first.shape[0]):
        row = sums.cursor[g]
        if row < sums.stop[g]:
            nearest = min(nearest, sums.ends[row])
    return nearest


@jit
def _open_segments(sums, n):
    """Reset the streams; the step of the first segment end."""
    for g in range(sums.first.shape[0]):
        sums.cursor[g] = sums.first[g]
    sums.acc[:] = 0.0
    return _next_end(sums, n)


@jit
def _close_segments(sums, i, n):
    """Store the sums of the segments that end at step ``i``; the step of the next segment end."""
    for g in range(sums.first.shape[0]):
        row = sums.cursor[g]
        if row < sums.stop[g] and sums.ends[row] == i:
            sums.out[row] = sums.acc[g]
            sums.acc[g] = 0.0
            sums.cursor[g] = row + 1
    return _next_end(sums, n)


@jit(inline=True)
def _add_to_each(acc, theta):
    """The vector kernel's step of a :class:`SegmentSums`: the iterate ``theta`` added to each stream's open sum."""
    for r in range(acc.shape[0]):
        for q in range(theta.shape[0]):
            acc[r, q] += theta[q]


@jit(inline=True)
def _close_segments_held(sums, acc0, i, n):
    """:func:`_close_segments` with stream 0's open sum held by the scalar kernel in a register (``acc0``).

    Returns the register's new value and the step of the next segment end.
    """
    sums.acc[0] = acc0
    nearest = _close_segments(sums, i, n)
    return sums.acc[0], nearest


@jit
def _scalar_path(params, rngs, n, batch_size, c, gamma, theta0, blocks, batch_ends, batches, stop, out, steps, zoo,
                 users, segments):
    # Lane-generic (ldpsim.engine.dialect.lanes): one path, theta in a register, or L side by side (rngs of L
    # generators, LaneArray blocks, batches and outputs), theta a vector register. On return
    # out = (theta_bar, V_n) and steps[0] = n, or the step at which the path stopped (it diverged, or the run
    # was interrupted); a lane that stopped keeps computing, unrecorded. zoo: the method zoo's paths and
    # state on the same observations (ldpsim.recursion.zoo; None: none, and no code for them). users: the users'
    # methods' states, updated after each step (ldpsim.recursion.user_methods; None: none, and no code for them).
    # blocks, segments: SegmentSums of the block bootstrap's blocks and of the segments users' methods ask for
    # (None: none, and no code for them), each with its first stream's open sum in a register.
    gen = local_rng(rngs)  # the generators' states in registers; release_rng writes them back
    zgens = zoo_begin(zoo)
    zon = zoo_on(zoo)
    reps = 1  # a constant in the batch_size=None loop: the mini-batch loop compiles away
    if batch_size is not None:
        reps = batch_size
    theta = theta0
    ref = theta0
    s = 0.0
    a = 0.0
    t = 0.0
    next_block = n + 1
    n_acc = 0
    if blocks is not None:
        next_block = _open_blocks(blocks, n)
        n_acc = blocks.acc.shape[0]
    acc0 = 0.0  # the first stream's open block sum lives in a register, the others in blocks.acc
    next_segment = n + 1
    n_seg = 0
    if segments is not None:
        next_segment = _open_segments(segments, n)
        n_seg = segments.acc.shape[0]
    seg0 = 0.0  # as acc0, for the users' segments
    k = 0
    batch = 0.0
    batch_end = n + 1
    if batches is not None:
        batch_end = batch_ends[0]
    pow2 = 1
    ratio = step_ratio_coefficients(gamma)
    ratios = np.empty(RATIO_CHUNK)
    next_fill = FIRST_FILL
    event = 1  # the next step that closes a block or a batch, is a power of two or refills ratios
    eta = c
    running = True
    stopped = 0
    for i in range(1, n + 1):
        fi = float(i)
        eta = buffered_step_size(i, pow2, eta, c, gamma, ratios)
        g = -0.0  # the identity of +: -0.0 + x is x, so LLVM drops the add when reps is 1
        for _ in range(reps):
            obs = observe(params, gen)
            g += gradient_at(params, obs, theta, gen)
            if zon:
                zoo_observe(zoo, zgens, obs, i, eta, c, gamma, ratio)
        if zon:
            zoo_gradient(zoo, g)
        theta -= (eta * (1.0 / reps)) * g
        if zon:
            zoo_main(zoo, i, theta)
        users_step(users, i, theta)
        s, a, t = sn_add(s, a, t, theta, ref, fi)
        if blocks is not None:
            acc0 += theta
            for r in range(1, n_acc):
                blocks.acc[r] += theta
        if segments is not None:
            seg0 += theta
            for r in range(1, n_seg):
                segments.acc[r] += theta
        if batches is not None:
            batch += theta
        if i == event:
            if blocks is not None:
                if i == next_block:
                    blocks.acc[0] = acc0
                    next_block = _close_blocks(blocks, i, n)
                    acc0 = blocks.acc[0]
            if segments is not None:
                if i == next_segment:
                    seg0, next_segment = _close_segments_held(segments, seg0, i, n)
            if batches is not None:
                if i == batch_end:
                    batches[k] = batch
                    batch = 0.0
                    k += 1
                    batch_end = batch_ends[k] if k < batch_ends.shape[0] else n + 1
            if i == pow2:
                s, a, t, ref = sn_recentre(s, a, t, ref, fi)
                if zon:
                    zoo_recentre(zoo, fi)
                pow2 *= 2
                diverged = running & lnot(np.isfinite(a))
                if any_lane(diverged):  # those paths stop; the driver counts them
                    stopped = where(diverged, i, stopped)
                    running = running & lnot(diverged)
                    if not any_lane(running):
                        break
            if i == next_fill:
                next_fill = fill_step_ratios(i, ratio, ratios)
                if stop_requested(stop):  # every RATIO_CHUNK steps: Ctrl-C (ldpsim.engine.dialect.interrupt)
                    stopped = where(running, i, stopped)
                    running = False
                    break
            event = min(next_block, batch_end, pow2, next_fill, next_segment)
    release_rng(rngs, gen)
    zoo_end(zoo, zgens)
    theta_bar, v = sn_read(s, a, t, ref, float(n))
    out[0] = theta_bar
    out[1] = v
    steps[0] = where(running, n, stopped)


@jit
def _vector_path(params, rngs, n, batch_size, c, gamma, theta, grad, ref, s, a, t, blocks, batch_ends, batches,
                 batch, stop, steps, zoo, users, segments):
    # The scalar kernel coordinate by coordinate, lane-generic as it is (every segment sum in memory); theta starts at
    # theta0 and
    # ref, s, a, t and batch are zeroed (d,) work arrays of the wrapper (LaneArrays for lanes).
    # On return theta holds theta_bar, s holds V_n and steps[0] the steps completed. After each step the
    # model may map theta back into its parameter space (constrain: the Huber models' scale; a no-op else).
    gen = local_rng(rngs)  # the generators' states in registers; release_rng writes them back
    zgens = zoo_begin(zoo)
    zon = zoo_on(zoo)
    reps = 1  # a constant in the batch_size=None loop: the mini-batch loop compiles away
    if batch_size is not None:
        reps = batch_size
    d = theta.shape[0]
    for q in range(d):
        ref[q] = theta[q]
    next_block = n + 1
    if blocks is not None:
        next_block = _open_blocks(blocks, n)
    next_segment = n + 1
    if segments is not None:
        next_segment = _open_segments(segments, n)
    k = 0
    batch_end = n + 1
    if batches is not None:
        batch_end = batch_ends[0]
    pow2 = 1
    ratio = step_ratio_coefficients(gamma)
    ratios = np.empty(RATIO_CHUNK)
    next_fill = FIRST_FILL
    event = 1  # the next step that closes a block or a batch, is a power of two or refills ratios
    eta = c
    running = True
    stopped = 0
    for q in range(d):
        grad[q] = 0.0
    constrain(params, theta)  # theta0 into the parameter space (a no-op for most models)
    for i in range(1, n + 1):
        fi = float(i)
        eta = buffered_step_size(i, pow2, eta, c, gamma, ratios)
        w = eta * (1.0 / reps)
        for _ in range(reps):
            obs = observe(params, gen)
            add_gradient_at(params, obs, theta, gen, grad)
            if zon:
                zoo_observe(zoo, zgens, obs, i, eta, c, gamma, ratio)
        if zon:
            zoo_gradient(zoo, grad)
        for q in range(d):
            x = theta[q] - w * grad[q]
            grad[q] = 0.0  # zeroed for the next step here: ``grad[:] = 0.0`` was a memset call per step
            theta[q] = x
        constrain(params, theta)
        if zon:
            zoo_main(zoo, i, theta)
        users_step(users, i, theta)
        for q in range(d):
            s[q], a[q], t[q] = sn_add(s[q], a[q], t[q], theta[q], ref[q], fi)
        if blocks is not None:
            acc = blocks.acc
            for r in range(acc.shape[0]):
                for q in range(d):
                    acc[r, q] += theta[q]
        if segments is not None:
            _add_to_each(segments.acc, theta)
        if batches is not None:
            for q in range(d):
                batch[q] += theta[q]
        if i == event:
            if blocks is not None:
                if i == next_block:
                    next_block = _close_blocks(blocks, i, n)
            if segments is not None:
                if i == next_segment:
                    next_segment = _close_segments(segments, i, n)
            if batches is not None:
                if i == batch_end:
                    batches[k] = batch
                    batch[:] = 0.0
                    k += 1
                    batch_end = batch_ends[k] if k < batch_ends.shape[0] else n + 1
            if i == pow2:
                diverged = running & lnot(sn_recentre_all(s, a, t, ref, fi))
                if zon:
                    zoo_recentre(zoo, fi)
                pow2 *= 2
                if any_lane(diverged):  # those paths stop; the driver counts them
                    stopped = where(diverged, i, stopped)
                    running = running & lnot(diverged)
                    if not any_lane(running):
                        break
            if i == next_fill:
                next_fill = fill_step_ratios(i, ratio, ratios)
                if stop_requested(stop):  # every RATIO_CHUNK steps: Ctrl-C (ldpsim.engine.dialect.interrupt)
                    stopped = where(running, i, stopped)
                    running = False
                    break
            event = min(next_block, batch_end, pow2, next_fill, next_segment)
    release_rng(rngs, gen)
    zoo_end(zoo, zgens)
    for q in range(d):
        theta[q], s[q] = sn_read(s[q], a[q], t[q], ref[q], float(n))
    steps[0] = where(running, n, stopped)


def segment_sums(streams, d: int, lanes: int = 1):
    """The :class:`SegmentSums` of ``streams`` (each an increasing array of segment ends) and each one's rows.

    ``None, []`` for no streams.
    """
    if not streams:
        return None, []
    count = np.array([len(ends) for ends in streams], dtype=np.int64)
    stop = np.cumsum(count).astype(np.int64)
    first = stop - count
    total = int(stop[-1])
    g = len(streams)
    sums = SegmentSums(np.concatenate([np.asarray(e, dtype=np.int64) for e in streams]), first, stop,
                       first.copy(), lane_array((g,) if d == 1 else (g, d), lanes),
                       lane_array((total,) if d == 1 else (total, d), lanes))
    return sums, [(int(lo), int(hi)) for lo, hi in zip(first, stop)]


def _block_streams(layouts, d: int, lanes: int = 1):
    """The :class:`BlockStreams` of the distinct block lengths of ``layouts`` (``None`` if none has blocks)."""
    lens = sorted({lay.block_len for lay in layouts if lay.n_blocks > 0})
    if not lens:
        return None, {}
    n = layouts[0].n
    count = np.array([n // length for length in lens], dtype=np.int64)
    first = np.concatenate([[0], np.cumsum(count)[:-1]]).astype(np.int64)
    shape = (len(lens),) if d == 1 else (len(lens), d)
    out_shape = (int(count.sum()),) if d == 1 else (int(count.sum()), d)
    streams = BlockStreams(np.array(lens, dtype=np.int64), count, first, np.zeros(len(lens), dtype=np.int64),
                           np.zeros(len(lens), dtype=np.int64), lane_array(shape, lanes), lane_array(out_shape, lanes))
    rows = {length: (int(first[g]), int(first[g] + count[g])) for g, length in enumerate(lens)}
    return streams, rows


def _user_segments(records, batch_ends, d: int, lanes: int):
    """Where the sums of the users' methods among ``records`` that ask for segments are streamed.

    The kernels' batch stream (one stream, its open sum in a register: the
    built-in BM's) serves the first method whose ends are the batches' or, in
    a run without the batches, the first such method; the others go to a
    :class:`SegmentSums`. Returns ``(batch_ends, segments, from_batches,
    from_segments)``: the batch ends the kernel streams (empty: none), the
    :class:`SegmentSums` (``None``: none), the records served by the batch
    stream and the ``(record, rows)`` served by ``segments``.
    """
    from_batches, rest = [], []
    for record in (r for r in records if isinstance(r, Segments)):
        if batch_ends.shape[0] == 0:
            batch_ends = record.ends
        if np.array_equal(record.ends, batch_ends):
            from_batches.append(record)
        else:
            rest.append(record)
    segments, rows = segment_sums([r.ends for r in rest], d, lanes)
    return batch_ends, segments, from_batches, list(zip(rest, rows))


def _fill_segments(batches, from_batches, segments, from_segments) -> None:
    """Copy each method's segment sums from the kernel's arrays into its record (``(K, d)`` per lane)."""
    def plain(array):
        return array.array if isinstance(array, LaneArray) else array

    for record in from_batches:
        plain(record.sums)[...] = plain(batches).reshape(plain(record.sums).shape)
    for record, (lo, hi) in from_segments:
        plain(record.sums)[...] = plain(segments.out)[lo:hi].reshape(plain(record.sums).shape)


def run_paths_lanes(model, gens, n: int, c: float, gamma: float, theta0: float, layouts, batch_size: int = 1,
                    width: int | None = None, zoo=None, zoo_gens=None, users=None):
    """:func:`run_paths` for the replications of ``gens`` side by side (lanes): one list of states per generator.

    One kernel call of ``width`` lanes (default ``len(gens)``; more are padded,
    :func:`~ldpsim.engine.dialect.lanes.padded`) advances every path
    (:mod:`ldpsim.engine.dialect.lanes`); path ``l`` is the one :func:`run_paths`
    gives for ``gens[l]`` alone, to the bit.

    With ``zoo`` (a :class:`~ldpsim.recursion.zoo.ZooSpec`) the method zoo's
    paths and state run in the same pass, on the same observations, their
    noise drawn from ``zoo_gens[method]`` (one generator per replication, for
    each method with paths of its own); then it returns ``(states, zoo_states)``,
    ``zoo_states[l]`` a dict of replication ``l``'s zoo arrays (:func:`zoo_arrays`).

    ``users``: users' interval methods, each a callable ``make(lanes)`` of its
    state record (:mod:`ldpsim.inference.user_methods`); their states are
    updated in this pass, and each replication's copies are its states'
    ``own`` (:class:`~ldpsim.inference.streaming.PathState`), in this order.
    A method that asks for segments (its record a
    :class:`~ldpsim.inference.user_methods.Segments`) has them streamed by the
    batch stream when its ends are the batches' or no batches are streamed
    (the first such), else by a :class:`SegmentSums` beside it.
    """
    count = len(gens)
    width = width or count
    gens = padded(gens, width)
    lanes = len(gens)
    d = model.dim
    params = model.kernel_params(lanes)
    rng = kernel_rngs(gens)
    zoo_paths = None
    if zoo is not None:
        zoo_paths = build_zoo(zoo, params, d, {name: kernel_rngs(padded(zoo_gens[name], width))
                                              for name in zoo_gens}, lanes)
    user_states = [make(lanes) for make in users] if users else []
    user_chain = chain([r for r in user_states if not isinstance(r, Segments)])  # the methods with an update
    per_step = None if batch_size == 1 else int(batch_size)  # None: the loop without a mini-batch
    blocks, rows = _block_streams(layouts, d, lanes)
    with_batches = [lay for lay in layouts if lay.batch_ends.shape[0] > 0]
    batch_ends = with_batches[0].batch_ends if with_batches else np.zeros(0, dtype=np.int64)
    batch_ends, segments, from_batches, from_segments = _user_segments(user_states, batch_ends, d, lanes)
    batches = lane_array(batch_ends.shape[0] if d == 1 else (batch_ends.shape[0], d), lanes) \
        if batch_ends.shape[0] > 0 else None
    steps = lane_array(1, lanes, 0, np.int64)
    if d == 1:  # the scalar kernel keeps theta in a register: a third faster than d = 1 arrays
        out = lane_array(2, lanes, np.nan)  # theta_bar, V_n
        _scalar_path(params, rng, int(n), per_step, float(c), float(gamma), float(theta0), blocks, batch_ends,
                     batches, interrupt.FLAG, out, steps, zoo_paths, user_chain, segments)

        def ends(lane):
            return lane_of(out, lane)[:1].copy(), lane_of(out, lane)[1:].copy()
    else:
        theta = lane_array(d, lanes, float(theta0))
        work = [lane_array(d, lanes) for _ in range(6)]  # grad, ref, s, a, t, batch
        _vector_path(params, rng, int(n), per_step, float(c), float(gamma), theta, *work[:5], blocks,
                     batch_ends, batches, work[5], interrupt.FLAG, steps, zoo_paths, user_chain, segments)

        def ends(lane):  # theta holds theta_bar, s holds V_n
            return lane_of(theta, lane).copy(), lane_of(work[2], lane).copy()
    interrupt.check()  # a path stopped by Ctrl-C is no result
    _fill_segments(batches, from_batches, segments, from_segments)
    result = []
    for lane in range(count):
        own = [lane_state(state, lane) for state in user_states] if users else None
        done = int(lane_of(steps, lane)[0])
        theta_bar, sn_v = ends(lane)
        if done < n:
            theta_bar[:] = np.nan
            sn_v[:] = np.nan
        states = []
        for lay in layouts:
            if lay.n_blocks > 0:
                lo, hi = rows[lay.block_len]
                own_blocks = lane_of(blocks.out, lane)[lo:hi].reshape(hi - lo, d).copy()
            else:
                own_blocks = np.zeros((0, d))
            own_batches = (lane_of(batches, lane).reshape(-1, d).copy() if lay.batch_ends.shape[0] > 0
                           else np.zeros((0, d)))
            states.append(PathState(theta_bar.copy(), sn_v.copy(), own_blocks, own_batches, done, own))
        result.append(states)
    if zoo is None:
        return result
    return result, [zoo_arrays(zoo_paths, lane) for lane in range(count)]


def run_paths(model, gen: np.random.Generator, n: int, c: float, gamma: float, theta0: float, layouts,
              batch_size: int = 1, users=None) -> list[PathState]:
    """Run one LDP-SGD path of ``n`` steps and return its streamed state for each layout.

    The layouts share ``n`` and the step exponent (hence the batch ends) and
    may differ in their block length: settings that share a path (differing
    only in ``beta``, ``B``, ``level`` or ``multiplier``) run it once, and
    each gets the block sums, batch sums and random-scaling state a run of
    its own would have computed, to the bit.

    Parameters
    ----------
    model : ldpsim.models.Model
        Supplies the kernel parameters (its privatized gradient).
    gen : numpy.random.Generator
        The replication's generator; the kernel advances it.
    n : int
        Number of steps.
    c, gamma : float
        Step size ``eta_i = c i^-gamma``.
    theta0 : float
        Starting value of every coordinate.
    layouts : sequence of StreamLayout
        Block and batch ends for ``n``, one per setting; blocks where any
        layout has them, batches where any layout has them.
    batch_size : int
        Observations per step, each privatized on its own (000, Remark 2.1).

    Returns
    -------
    list of PathState
        One per layout, arrays with a trailing coordinate axis of length ``model.dim``.
    """
    return run_paths_lanes(model, [gen], n, c, gamma, theta0, layouts, batch_size, users=users)[0]


def run_path(model, gen: np.random.Generator, n: int, c: float, gamma: float, theta0: float,
             layout: StreamLayout, batch_size: int = 1) -> PathState:
    """:func:`run_paths` for one layout: one LDP-SGD path of ``n`` steps and its streamed state."""
    return run_paths(model, gen, n, c, gamma, theta0, [layout], batch_size)[0]

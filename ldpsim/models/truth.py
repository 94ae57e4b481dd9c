"""The truth of a user's model by Monte Carlo: ``G`` and ``S`` estimated when not given, checked when given.

The oracle interval needs ``Sigma = G^-1 S G^-1`` (000, Theorem 3.1). A
user's model may give ``hessian()`` (``G``) and ``gradient_covariance()``
(``S``); what it does not give, ldpsim estimates from the model's own
functions before the run, with common random numbers:

* ``S``: the covariance of the privatized gradient at ``theta*``, over ``M``
  observations;
* ``G``: column ``j`` is the central difference
  ``(g(theta* + h_j e_j) - g(theta* - h_j e_j)) / (2 h_j)`` of the privatized
  gradient of the *same* observation with the *same* draws of the mechanism
  (the generator's state is copied before each evaluation), averaged over
  the ``M`` observations; ``h_j = STEP max(1, |theta*_j|)``. The difference
  is then the change of the gradient between the two points, not two
  independent noises; its mean is ``G e_j`` up to the curvature term
  ``O(h^2)``, which a smooth mean gradient makes small: for the quantile
  model it is ``f''(x_tau) h^2 / 6``, 0.04% of ``G`` at ``tau = 0.5`` and
  ``h = 0.05``, about a tenth of the estimate's standard error. A gradient
  with a jump (an indicator, as the quantile's) gives differences of
  variance ``~ 1 / h``: a smaller ``h`` would trade that bias for noise.

The ``M`` observations are cut into :data:`BATCHES` batches; the standard
error of every entry is the spread of its batch means, and that of
``Sigma`` the jackknife over batches. They are stated with the estimate
(``meta.json``, ``table.md``).

When the model does give ``G`` or ``S``, the same estimates check them
before the run (:func:`check_declared`): the mean privatized gradient at
``theta*`` must be 0, and each given entry must agree with its estimate,
within :data:`Z_CHECK` standard errors; a model that fails is refused in one
line with the measured and the declared numbers (``truth_check: false``
runs it anyway, and ``meta.json`` says so).

The estimator is a jitted kernel (:func:`_sums`) and, under
``NUMBA_DISABLE_JIT=1`` or with ``twin=True``, the same code in plain Python
(equal to the kernel, tested). Estimates are cached in memory and on disk
(under the accountants' cache folder), keyed on the model's source, its
record and everything the estimator reads.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import math
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..engine.dialect import interrupt
from ..engine.errors import ConfigError
from ..engine.dialect.jit import DISABLED, jit, source_hash
from ..engine.dialect.rng import as_generator, copy_state, kernel_rng
from .base import add_gradient_at, observe

#: Gradient evaluations an estimate spends (each observation costs ``1 + 2 d``): about 0.3 s for a scalar
#: model and 1.6 s for quantile regression (d = 4) on the 2-core VM; the observations are
#: rounded down to a multiple of :data:`BATCHES`.
EVALUATIONS = 2 ** 25
#: Batches of observations whose means give the standard errors (and the jackknife of Sigma).
BATCHES = 256
#: Relative half-width of the central differences: ``h_j = STEP max(1, |theta*_j|)``.
STEP = 0.05
#: The root seed of the estimator's streams (fixed: an estimate is a function of the model alone).
SEED = 20240501
#: A given ``G`` or ``S`` entry (or the mean gradient) further than this many standard errors from its estimate
#: refuses the model. With 256 batches the standard error is a t with 255 degrees of freedom: an entry of a
#: correct model fails with probability 8e-5, a model of d = 4 (30 entries) with probability 0.25%.
Z_CHECK = 4.0


@dataclass
class Truth:
    """Monte Carlo estimates of a model's ``G`` and ``S`` at ``theta*``, with their standard errors."""

    theta_star: np.ndarray
    G: np.ndarray
    G_se: np.ndarray
    S: np.ndarray
    S_se: np.ndarray
    mean: np.ndarray
    mean_se: np.ndarray
    sigma: np.ndarray
    sigma_se: np.ndarray
    samples: int
    step: np.ndarray
    batches: int

    def to_dict(self) -> dict:
        """JSON-ready (the disk cache, ``meta.json``)."""
        return {k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in self.__dict__.items()}

    @classmethod
    def from_dict(cls, data: dict) -> "Truth":
        return cls(**{k: (np.asarray(v, dtype=float) if isinstance(v, list) else v) for k, v in data.items()})


@jit
def _sums(params, rng, spare, theta, h, per_batch, stop, g_sum, gg_sum, d_sum, dd_sum, plus, grad, work):
    """Per batch: sums of ``g(theta*)``, of ``g g'`` and of the central differences and their squares.

    Each observation's gradient is evaluated at ``theta* + h_j e_j`` and
    ``theta* - h_j e_j`` for every ``j``, drawing from ``spare``, which first
    receives a copy of ``rng``'s state (common random numbers), and last at
    ``theta*`` from ``rng`` itself, which therefore advances by one
    observation and one privatized gradient per sample. (One call site of
    the gradient: numba inlines it once.)
    """
    d = theta.shape[0]
    for b in range(g_sum.shape[0]):
        if interrupt.stop_requested(stop):
            return
        for _ in range(per_batch):
            if interrupt.stop_requested(stop):  # (a load: a slow draw is stopped within one observation)
                return
            obs = observe(params, rng)
            for e in range(2 * d + 1):
                for k in range(d):
                    work[k] = theta[k]
                    grad[k] = 0.0
                j = e // 2
                gen = rng
                if e < 2 * d:
                    work[j] = theta[j] + h[j] if e % 2 == 0 else theta[j] - h[j]
                    copy_state(rng, spare)
                    gen = spare
                add_gradient_at(params, obs, work, gen, grad)
                if e == 2 * d:
                    for k in range(d):
                        g_sum[b, k] += grad[k]
                        for m in range(d):
                            gg_sum[b, k, m] += grad[k] * grad[m]
                elif e % 2 == 0:
                    for k in range(d):
                        plus[k] = grad[k]
                else:
                    for k in range(d):
                        q = (plus[k] - grad[k]) / (2.0 * h[j])
                        d_sum[b, k, j] += q
                        dd_sum[b, k, j] += q * q


def steps_of(theta_star: np.ndarray, step: float = STEP) -> np.ndarray:
    """The half-widths ``h_j = step max(1, |theta*_j|)`` of the central differences."""
    return step * np.maximum(1.0, np.abs(theta_star))


def raw_sums(record, theta_star, samples: int, batches: int = BATCHES, step: float = STEP, seed: int = SEED,
             twin: bool = False) -> tuple:
    """The estimator's per-batch sums for ``samples`` observations (the kernel, or its twin in plain Python)."""
    theta = np.array(theta_star, dtype=float)
    d = theta.size
    h = steps_of(theta, step)
    per_batch = max(1, samples // batches)
    g_sum, gg_sum = np.zeros((batches, d)), np.zeros((batches, d, d))
    d_sum, dd_sum = np.zeros((batches, d, d)), np.zeros((batches, d, d))
    scratch = [np.zeros(d) for _ in range(3)]
    gen, spare = as_generator(seed), as_generator(seed + 1)
    run = _sums.py_func if twin else _sums
    rng, spare_rng = (gen, spare) if twin else (kernel_rng(gen), kernel_rng(spare))
    run(record, rng, spare_rng, theta, h, per_batch, interrupt.FLAG, g_sum, gg_sum, d_sum, dd_sum, *scratch)
    if not twin:
        interrupt.check()
    return g_sum, gg_sum, d_sum, dd_sum, per_batch, h


#: An estimate expected to take longer than this many seconds says so at its start (with its expected time),
#: and again every :data:`NOTE_EVERY` seconds while it runs.
NOTE_AFTER = 10.0
NOTE_EVERY = 30.0
#: Seconds of pilot that time an observation before the estimate (at most :data:`PILOT_MAX` observations).
PILOT_SECONDS = 0.05
PILOT_MAX = 4096


def _timed_sums(record, theta, samples: int, name: str) -> tuple:
    """:func:`raw_sums` of the estimate, after a pilot that times an observation: refused beyond 7 days, noted beyond
    :data:`NOTE_AFTER` seconds, and stopped by Ctrl-C or SIGTERM (issue 44: a draw of 2e5 steps ran for hours
    without a word, and only SIGKILL stopped it)."""
    from ..engine.runs.resources import MAX_RUN_SECONDS, format_duration

    # in a worker thread, each: Ctrl-C and SIGTERM stop the kernel within an observation (in the main thread the
    # signal's handler waited for it: a slow model's estimate ignored SIGTERM for hours)
    interrupt.in_worker_thread(raw_sums, record, theta, 1, batches=1)  # compiles the kernel (not timed)
    count, seconds = 1, 0.0
    while count < PILOT_MAX:
        count = min(PILOT_MAX, count * 8)
        tic = time.perf_counter()
        interrupt.in_worker_thread(raw_sums, record, theta, count, batches=1)
        seconds = time.perf_counter() - tic
        if seconds >= PILOT_SECONDS:
            break
    expected = seconds / count * samples
    what = f"estimating G and S of model {name!r} by Monte Carlo ({samples} draws of the observation and 1 + 2 d gradients)"
    if expected > MAX_RUN_SECONDS:
        raise ConfigError(f"{what} would take about {format_duration(expected)} ({seconds / count * 1e3:.3g} ms a draw, "
                          f"timed on {count}), more than the limit of {format_duration(MAX_RUN_SECONDS)}: make the "
                          "draw and the gradient cheaper, or give hessian() and gradient_covariance() and set "
                          "truth_check: false")
    if expected < NOTE_AFTER:
        return interrupt.in_worker_thread(raw_sums, record, theta, samples)
    print(f"ldpsim: {what}: about {format_duration(expected)} (cached on disk after; Ctrl-C stops it)",
          file=sys.stderr, flush=True)
    done = threading.Event()

    def remind():  # beside the wait, which stays free to receive Ctrl-C and SIGTERM
        start = time.monotonic()
        while not done.wait(NOTE_EVERY):
            print(f"ldpsim: still {what.split(' (')[0]}: {format_duration(time.monotonic() - start)} of about "
                  f"{format_duration(expected)}", file=sys.stderr, flush=True)

    threading.Thread(target=remind, name="ldpsim-truth-notes", daemon=True).start()
    try:
        return interrupt.in_worker_thread(raw_sums, record, theta, samples)
    finally:
        done.set()


def _sigma(G: np.ndarray, S: np.ndarray) -> np.ndarray:
    g_inv = np.linalg.inv(G)
    sigma = g_inv @ S @ g_inv.T
    return (sigma + sigma.T) / 2.0


def summarize_sums(theta_star, sums) -> Truth:
    """:class:`Truth` from the per-batch sums (:func:`raw_sums`)."""
    g_sum, gg_sum, d_sum, dd_sum, per_batch, h = sums
    k = g_sum.shape[0]
    m = k * per_batch
    batch_g = g_sum / per_batch
    batch_gg = gg_sum / per_batch
    batch_G = d_sum / per_batch
    mean = batch_g.mean(axis=0)
    mean_se = batch_g.std(axis=0, ddof=1) / math.sqrt(k)

    def cov(g_total, gg_total, count):
        mu = g_total / count
        return (gg_total / count - np.outer(mu, mu)) * (count / (count - 1.0))

    S = cov(g_sum.sum(axis=0), gg_sum.sum(axis=0), m)
    batch_S = batch_gg - batch_g[:, :, None] * batch_g[:, None, :]
    S_se = batch_S.std(axis=0, ddof=1) / math.sqrt(k)
    G = batch_G.mean(axis=0)
    G_se = batch_G.std(axis=0, ddof=1) / math.sqrt(k)
    with np.errstate(all="ignore"):
        try:
            sigma = _sigma(G, S)
            leave_out = []
            for b in range(k):  # the jackknife over batches
                rest = (m - per_batch)
                G_b = (d_sum.sum(axis=0) - d_sum[b]) / rest
                S_b = cov(g_sum.sum(axis=0) - g_sum[b], gg_sum.sum(axis=0) - gg_sum[b], rest)
                leave_out.append(_sigma(G_b, S_b))
            leave_out = np.array(leave_out)
            sigma_se = np.sqrt((k - 1.0) / k * ((leave_out - leave_out.mean(axis=0)) ** 2).sum(axis=0))
        except np.linalg.LinAlgError:
            sigma = sigma_se = np.full_like(S, np.nan)
    return Truth(np.asarray(theta_star, dtype=float), G, G_se, S, S_se, mean, mean_se, sigma, sigma_se, m,
                 np.asarray(h, dtype=float), k)


def default_samples(d: int) -> int:
    """Observations an estimate uses: :data:`EVALUATIONS` over ``1 + 2 d``, a multiple of :data:`BATCHES`."""
    per = EVALUATIONS // (1 + 2 * d)
    return max(BATCHES * 16, per - per % BATCHES)


def _fingerprint(obj, digest) -> None:
    if isinstance(obj, tuple) and hasattr(type(obj), "_fields"):
        digest.update(f"{type(obj).__module__}.{type(obj).__qualname__}(".encode())
        for item in obj:
            _fingerprint(item, digest)
        digest.update(b")")
    elif isinstance(obj, (tuple, list)):
        digest.update(b"[")
        for item in obj:
            _fingerprint(item, digest)
        digest.update(b"]")
    elif isinstance(obj, np.ndarray):
        digest.update(f"{obj.dtype.str}{obj.shape}".encode())
        digest.update(np.ascontiguousarray(obj).tobytes())
    else:
        digest.update(repr(obj).encode())


def _source_of(cls) -> str:
    module = sys.modules.get(cls.__module__)
    recorded = getattr(module, "__ldpsim_sha256__", None)
    if recorded:
        return recorded
    path = getattr(module, "__file__", None)
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else f"process:{id(cls)}"
    except OSError:
        return f"process:{id(cls)}"


#: In-memory estimates by key (a worker builds the same model for every chunk).
_MEMO: dict[str, Truth] = {}


class TruthPending(Exception):
    """Raised by :func:`truth_of` inside :func:`deferred` where the estimate is in neither memory nor the disk cache."""


_DEFER = threading.local()


@contextlib.contextmanager
def deferred():
    """Within: an estimate not yet made raises :class:`TruthPending` instead of being computed.

    Validating a config builds every setting's model; an estimated truth (NPRR's
    noise variance, 5 epsilons: 6 s of compiling :func:`_sums` and 13 s of Monte
    Carlo on one core) is then left for the step that compiles the run's kernels,
    which computes it beside them (:meth:`ldpsim.studies.base.Study.settle`).
    """
    before = getattr(_DEFER, "on", False)
    _DEFER.on = True
    try:
        yield
    finally:
        _DEFER.on = before


def _cache_file(key: str) -> Path | None:
    from ..privacy.accountants import cache_dir

    where = cache_dir()
    return None if where is None else where / "truth" / f"{key}.json"


@functools.lru_cache(maxsize=None)
def _estimator_source() -> str:
    """Hash of the code the estimate depends on (read once per process)."""
    return source_hash(["models/truth.py", "models/base.py", "engine/dialect/rng", "engine/dialect/lanes.py",
                        "privacy/mechanisms", "engine/dialect/dispatch.py",
                        "models/covariates.py", "models/regression.py"])


def truth_of(model, samples: int | None = None, twin: bool = False) -> Truth:
    """The Monte Carlo :class:`Truth` of ``model`` (memoised on the model, in this process and on disk)."""
    mine = model.__dict__.get("_ldpsim_truth") if hasattr(model, "__dict__") else None
    if mine is not None and samples is None and not twin:
        return mine
    truth = _truth_of(model, samples, twin)
    if samples is None and not twin and hasattr(model, "__dict__"):
        model.__dict__["_ldpsim_truth"] = truth  # a worker asks for G and S of one model at every chunk
    return truth


def _truth_of(model, samples, twin) -> Truth:
    theta = np.asarray(model.theta_star(), dtype=float).reshape(-1)
    record = model.kernel_params()
    samples = samples or default_samples(theta.size)
    digest = hashlib.sha256()
    for cls in {type(model), type(record)}:
        digest.update(_source_of(cls).encode())
    _fingerprint(record, digest)
    digest.update(theta.tobytes())
    # the twin computes the kernel's sums exactly (tested): compiled and plain-Python runs share an estimate
    digest.update(json.dumps([samples, BATCHES, STEP, SEED, _estimator_source()]).encode())
    key = digest.hexdigest()[:32]
    if key in _MEMO:
        return _MEMO[key]
    path = _cache_file(key)
    truth = None
    if path is not None and path.is_file():
        try:
            truth = Truth.from_dict(json.loads(path.read_text()))
        except (OSError, ValueError, TypeError):
            truth = None  # a damaged entry: computed again
    if truth is None:
        if getattr(_DEFER, "on", False) and not twin:
            raise TruthPending(key)
        if twin or DISABLED:
            print(f"ldpsim: estimating G and S of model {getattr(model, 'name', '?')!r} in plain Python "
                  f"({samples} draws; NUMBA_DISABLE_JIT=1): this takes minutes; a run with numba computes the same "
                  "estimate in about a second, and it is cached for both", file=sys.stderr)
        with np.errstate(all="ignore"):
            if twin or DISABLED:
                sums = raw_sums(record, theta, samples, twin=twin)
            else:
                sums = _timed_sums(record, theta, samples, getattr(model, "name", "?"))
            truth = summarize_sums(theta, sums)
        if path is not None:
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                tmp = path.with_suffix(f".tmp{id(truth)}")
                tmp.write_text(json.dumps(truth.to_dict()))
                tmp.replace(path)
            except OSError:
                pass  # a read-only home: kept in memory only
    _MEMO[key] = truth
    return truth


def _fmt(x) -> str:
    return f"{x:.4g}"


def check_estimates(model, shown: str, declared: dict | None = None) -> None:
    """Refuse ``model`` in one line if its Monte Carlo estimates are not finite, or its ``G`` is singular.

    A gradient that is NaN or infinite on some draws makes every sum NaN;
    one that does not change with theta (or returns a constant, an int)
    makes ``G`` singular: SGD then has no root to converge to, and the
    oracle's ``Sigma = G^-1 S G^-1`` does not exist. Both read "cannot be
    computed in floating point ... LinAlgError" before (issue 44).
    """
    truth = truth_of(model)
    estimates = {"G": truth.G, "S": truth.S, "the mean gradient": truth.mean}
    bad = [name for name, value in estimates.items() if not np.isfinite(value).all()]
    if bad:
        count = _nonfinite_draws(model, truth.theta_star)
        where = (f"on {count} of {NONFINITE_PROBES} draws at theta* in plain Python" if count else
                 f"on some of the {truth.samples} Monte Carlo draws at theta* or theta* +- h")
        raise ConfigError(f"model = {shown!r}: the privatized gradient is NaN or infinite {where}, so the estimates "
                          f"of {', '.join(bad)} are not finite: a gradient must be a finite number for every "
                          "observation and every theta (a division by zero, a log of 0, an overflow?)")
    G = np.asarray((declared or {}).get("G", truth.G), dtype=float).reshape(truth.G.shape)
    source = "given (hessian())" if declared and "G" in declared else "estimated"
    with np.errstate(all="ignore"):
        singular = not np.isfinite(G).all() or np.linalg.matrix_rank(G) < G.shape[0] or np.linalg.cond(G) > 1e12
    if singular:
        raise ConfigError(f"model = {shown!r}: the {source} G (the mean Jacobian of the privatized gradient in theta "
                          f"at theta*) is singular: G = {np.array2string(G, precision=4).replace(chr(10), '')}: the "
                          "gradient does not change with theta (in some direction), so SGD has no root to converge "
                          "to and the oracle's Sigma = G^-1 S G^-1 does not exist; the gradient must depend on "
                          "theta (is it a constant, an int, or theta unused?)")


#: Observations drawn in plain Python to count a gradient's non-finite values (when the estimates are NaN).
NONFINITE_PROBES = 4000


def _nonfinite_draws(model, theta) -> int:
    """Of :data:`NONFINITE_PROBES` draws at ``theta`` in plain Python, how many gradients are not finite."""
    from .base import gradient_at

    record, gen = model.kernel_params(), as_generator(SEED)
    count = 0
    with np.errstate(all="ignore"):
        try:
            for _ in range(NONFINITE_PROBES):
                obs = observe(record, gen)
                if theta.size == 1 and type(record) in gradient_at.registry:
                    value = gradient_at(record, obs, float(theta[0]), gen)
                else:
                    value = np.zeros(theta.size)
                    add_gradient_at(record, obs, theta.copy(), gen, value)
                count += int(not np.isfinite(np.asarray(value, dtype=float)).all())
        except Exception:  # noqa: BLE001  (the user's code: the count is a hint only)
            return 0
    return count


def check_declared(model, shown: str, declared: dict) -> None:
    """Refuse ``model`` if its mean gradient at theta* is not 0, or a given ``G`` / ``S`` disagrees with the estimate.

    ``declared`` holds what the model gives: ``{"G": array, "S": array}`` (either may be missing).
    """
    truth = truth_of(model)
    checks = [("the mean privatized gradient at theta*", truth.mean, np.zeros_like(truth.mean), truth.mean_se)]
    if "G" in declared:
        checks.append(("G (hessian())", truth.G, np.asarray(declared["G"], dtype=float).reshape(truth.G.shape),
                       truth.G_se))
    if "S" in declared:
        checks.append(("S (gradient_covariance())", truth.S, np.asarray(declared["S"], dtype=float).reshape(truth.S.shape),
                       truth.S_se))
    for what, measured, given, se in checks:
        # a gradient linear in theta gives exact differences (SE 0): then agreement to rounding is asked
        se = np.maximum(se, 1e-9 * np.maximum(np.abs(measured), np.abs(given)) + 1e-300)
        if measured is truth.mean:  # a gradient without noise at theta*: its rounding, as G moves it within 1e-9 theta*
            se = np.maximum(se, 1e-9 * (np.abs(truth.G) @ np.maximum(1.0, np.abs(truth.theta_star))))
        with np.errstate(all="ignore"):
            z = np.abs(measured - given) / se
        bad = ~(z <= Z_CHECK)  # NaN counts as a failure
        if bad.any():
            index = np.unravel_index(int(np.nanargmax(np.where(bad, np.nan_to_num(z, nan=np.inf), -1.0))), z.shape)
            at = "" if measured.size == 1 else f"[{', '.join(str(int(i)) for i in index)}]"
            raise ConfigError(
                f"model = {shown!r}: {what}{at} is {_fmt(given[index])} as declared but {_fmt(measured[index])} "
                f"+- {_fmt(se[index])} measured ({_fmt(z[index])} SE apart; the tolerance is {_fmt(Z_CHECK)} SE; "
                f"{truth.samples} Monte Carlo draws at theta* = {np.array2string(truth.theta_star, precision=4)}): "
                "fix the model" + (" (theta_star() must be the root of the mean gradient)" if measured is truth.mean
                                   else "") + ", or set truth_check: false to run it anyway")


__all__ = ["BATCHES", "EVALUATIONS", "STEP", "Truth", "Z_CHECK", "check_declared", "default_samples", "raw_sums",
           "TruthPending", "deferred", "summarize_sums", "truth_of"]

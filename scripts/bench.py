"""Benchmark of the LDP-SGD kernel: speed, RNG floor, numpy baseline, memory.

Prints, from one process, medians over ``--repeats`` repetitions of

1. the kernel's cost per step (:func:`ldpsim.recursion.run_path`, quantile
   model at tau = 0.5, epsilon = 1, all inference state on);
2. the RNG floor: a jitted loop drawing the same random numbers and nothing
   else, timed interleaved with the kernel so that load drift hits both;
3. a plain-numpy implementation of the same algorithm vectorised over ``R``
   replications, in ns per replication-step, with a statistical sanity check
   against the kernel;
4. the peak RSS of fresh processes running one path of 1e5 and 1e7 steps
   (the kernel allocates nothing of size n, so the two should agree);
5. the quantile-regression kernel (``_vector_path`` through ``run_path``,
   d = 4, tau = 0.5, epsilon = 1, truncated-normal covariates, Laplace
   noise) against its own RNG floor: per step 3 truncated normals by the
   same rejection from N(0, 1), the response's normal and 4 Laplace draws
   (8 standard exponentials), in the kernel's order. A sanity line checks
   that floor and kernel leave the generator in the same state.

Usage
-----
``python scripts/bench.py [--n 1e7] [--n-qr 2e6] [--repeats 5] [--reps-vec 500]
[--n-vec 2e4] [--json PATH]``. Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

from ldpsim.engine.jit import jit  # imports ldpsim first: fixes numba's cache directory
from ldpsim.engine import rng as ldpsim_rng
from ldpsim.models import QuantileModel, QuantileRegressionModel
from ldpsim.recursion import run_path
from ldpsim.inference.streaming import StreamLayout

TAU, EPSILON, C, GAMMA, BETA, THETA0 = 0.5, 1.0, 1.0, 0.51, 0.75, 0.0
#: Bit generator of all timed streams (kernel, floor, numpy); ``--bit-generator`` changes it.
BIT_GENERATOR = ldpsim_rng.BIT_GENERATOR


def make_gen(seed):
    """A Generator on :data:`BIT_GENERATOR`, the same for kernel, floor and numpy."""
    return np.random.Generator(BIT_GENERATOR(seed))


@jit
def rng_floor(gen, n):
    """Draw what the kernel draws per step (one normal, one uniform), nothing else."""
    s = 0.0
    for _ in range(n):
        s += gen.standard_normal()
        s += gen.random()
    return s


@jit
def qr_rng_floor(gen, n, d, bound):
    """Draw what the quantile-regression kernel draws per step, in its order, nothing else.

    ``d - 1`` covariates N(0, 1) truncated to ``[-bound, bound]`` by rejection
    (``_draw_truncated_normal``), the response's normal, then one Laplace
    per coordinate as the difference of two standard exponentials
    (``mechanisms.laplace``); all summed so that no draw is optimised away.
    """
    s = 0.0
    for _ in range(n):
        for _ in range(d - 1):
            z = gen.standard_normal()
            while abs(z) > bound:
                z = gen.standard_normal()
            s += z
        s += gen.standard_normal()
        for _ in range(d):
            s += gen.standard_exponential()
            s -= gen.standard_exponential()
    return s


def qr_model():
    """The benchmarked quantile-regression model (000, Table 2 setting)."""
    return QuantileRegressionModel(TAU, epsilon=EPSILON, covariates="truncnorm", mechanism="laplace")


def run_qr_floor(n, seed):
    """:func:`qr_rng_floor` for :func:`qr_model` on a fresh generator; returns the generator."""
    model = qr_model()
    gen = make_gen(seed)
    qr_rng_floor(gen, n, model.dim, model.covariates.bound)
    return gen


def run_qr_kernel(n, seed, gen=None):
    """One quantile-regression kernel path of ``n`` steps; returns its :class:`PathState`."""
    layout = StreamLayout.build(n, BETA, GAMMA)
    gen = make_gen(seed) if gen is None else gen
    return run_path(qr_model(), gen, n, C, GAMMA, THETA0, layout)


def qr_sanity(n, seed):
    """Print whether kernel and floor consume the generator alike (same next ``random()`` after ``n`` steps)."""
    gen = make_gen(seed)
    st = run_qr_kernel(n, seed, gen)
    after_kernel = gen.random()
    after_floor = run_qr_floor(n, seed).random()
    same = after_kernel == after_floor and st.steps == n
    print(f"QR floor consumes the generator like the kernel (n={n}): {'yes' if same else 'NO'} "
          f"(next random {after_kernel:.17f} vs {after_floor:.17f})")
    return same


def run_kernel(n, seed):
    """One kernel path of ``n`` steps; returns its :class:`PathState`."""
    layout = StreamLayout.build(n, BETA, GAMMA)
    return run_path(QuantileModel(TAU, EPSILON), make_gen(seed), n, C, GAMMA, THETA0, layout)


def numpy_paths(n, reps, seed, chunk=1024):
    """The kernel's algorithm in plain numpy, vectorised over ``reps`` replications.

    Per step, as in ``_scalar_path``: randomized-response gradient, exact step
    size, theta update, centred running sum ``S`` with ``A += S^2`` and
    ``T += i S``, block and batch sums; recentring at powers of two. Random
    numbers come in ``(chunk, reps)`` slabs (same distribution as the
    kernel's interleaved draws, not the same stream).

    Returns
    -------
    tuple of numpy.ndarray
        ``theta_bar``, random-scaling ``V_n``, block sums ``(m, reps)`` and
        batch sums ``(M + 1, reps)``.
    """
    params = QuantileModel(TAU, EPSILON).kernel_params()
    layout = StreamLayout.build(n, BETA, GAMMA)
    gen = make_gen(seed)
    theta, ref = np.full(reps, THETA0), np.full(reps, THETA0)
    s, a, t, block, batch = (np.zeros(reps) for _ in range(5))
    blocks = np.zeros((layout.n_blocks, reps))
    batches = np.zeros((layout.batch_ends.shape[0], reps))
    grad, tmp, bit = np.empty(reps), np.empty(reps), np.empty(reps, dtype=bool)
    z, flips = np.empty((chunk, reps)), np.empty((chunk, reps))
    flip = np.empty((chunk, reps), dtype=bool)
    j, block_end = 0, layout.block_len if layout.n_blocks else n + 1
    k, batch_end = 0, int(layout.batch_ends[0])
    pow2 = 1
    for start in range(1, n + 1, chunk):
        m = min(chunk, n + 1 - start)
        gen.standard_normal(out=z[:m])
        gen.random(out=flips[:m])
        np.less(flips[:m], params.flip_prob, out=flip[:m])  # flips do not depend on theta
        for r in range(m):
            i = start + r
            fi = float(i)
            eta = C * fi**-GAMMA
            # gradient = scale * (1{X <= theta} xor flip) - offset
            np.less_equal(z[r], theta, out=bit)
            np.not_equal(bit, flip[r], out=bit)
            np.multiply(bit, eta * params.scale, out=grad)
            np.subtract(grad, eta * params.offset, out=grad)
            np.subtract(theta, grad, out=theta)
            np.subtract(theta, ref, out=tmp)
            np.add(s, tmp, out=s)
            np.multiply(s, s, out=tmp)
            np.add(a, tmp, out=a)
            np.multiply(s, fi, out=tmp)
            np.add(t, tmp, out=t)
            np.add(block, theta, out=block)
            if i == block_end:
                blocks[j] = block
                block[:] = 0.0
                j += 1
                block_end = block_end + layout.block_len if j < layout.n_blocks else n + 1
            np.add(batch, theta, out=batch)
            if i == batch_end:
                batches[k] = batch
                batch[:] = 0.0
                k += 1
                batch_end = int(layout.batch_ends[k]) if k < batches.shape[0] else n + 1
            if i == pow2:  # move the centre to the running mean (log2 n times)
                shift = s / fi
                w2 = fi * (fi + 1.0) * (2.0 * fi + 1.0) / 6.0
                a += shift * (shift * w2 - 2.0 * t)
                t -= shift * w2
                ref += shift
                s[:] = 0.0
                pow2 *= 2
    fn = float(n)
    e = s / fn
    v = (a + e * (e * fn * (fn + 1.0) * (2.0 * fn + 1.0) / 6.0 - 2.0 * t)) / (fn * fn)
    return ref + e, v, blocks, batches


def sanity(n, reps, seed):
    """Compare numpy's and the kernel's theta_bar and V_n over ``reps`` paths (printed)."""
    tb, v, _, batches = numpy_paths(n, reps, seed)
    states = [run_kernel(n, seed + 1 + r) for r in range(reps)]
    ktb = np.array([st.theta_bar[0] for st in states])
    kv = np.array([st.sn_v[0] for st in states])
    se = tb.std(ddof=1) / np.sqrt(reps)
    print(f"sanity (n={n}, R={reps}, truth theta*=0):")
    print(f"  numpy  mean theta_bar {tb.mean():+.2e} (SE {se:.1e}, z={tb.mean() / se:+.2f}), "
          f"sd {tb.std(ddof=1):.2e}, mean V_n {v.mean():.3e}")
    print(f"  kernel mean theta_bar {ktb.mean():+.2e} (SE {ktb.std(ddof=1) / np.sqrt(reps):.1e}), "
          f"sd {ktb.std(ddof=1):.2e}, mean V_n {kv.mean():.3e}")
    print(f"  numpy batch sums / n vs theta_bar: max abs diff {np.max(np.abs(batches.sum(0) / n - tb)):.1e}")


def timed(func, *args):
    """Wall time of ``func(*args)`` in seconds."""
    start = time.perf_counter()
    func(*args)
    return time.perf_counter() - start


def peak_rss_mib(n):
    """Peak RSS (MiB) of a fresh process running one kernel path of ``n`` steps."""
    out = subprocess.run([sys.executable, __file__, "--memory-child", str(n)],
                         check=True, capture_output=True, text=True).stdout
    return int(out.split()[-1]) / 1024.0  # ru_maxrss is in KiB on Linux


def memory_child(n):
    """Child of :func:`peak_rss_mib`: warm up, run ``n`` steps, print ru_maxrss."""
    run_kernel(1000, 0)
    run_kernel(n, 1)
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main(argv=None):
    """Run the benchmark and print the summary (see module docstring)."""
    global BIT_GENERATOR
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7, help="kernel steps per timing")
    parser.add_argument("--n-qr", type=float, default=2e6, help="quantile-regression kernel steps per timing")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reps-vec", type=int, default=500, help="replications R of the numpy version")
    parser.add_argument("--n-vec", type=float, default=2e4, help="steps of the numpy version")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers to this JSON file")
    parser.add_argument("--bit-generator", default=BIT_GENERATOR.__name__,
                        help="numpy bit generator of all streams (default: ldpsim's)")
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    BIT_GENERATOR = getattr(np.random, args.bit_generator)
    if args.memory_child is not None:
        return memory_child(args.memory_child)
    n, n_vec, reps, n_qr = int(args.n), int(args.n_vec), args.reps_vec, int(args.n_qr)

    # warm-up: compile (or load from cache) before anything is timed
    run_kernel(1000, 0)
    rng_floor(make_gen(0), 1000)
    numpy_paths(2 * 1024, reps, 0)
    run_qr_kernel(1000, 0)
    run_qr_floor(1000, 0)
    sanity(n_vec, reps, 12345)
    qr_same = qr_sanity(10**4 + 17, 4321)

    kern, floor, nump, qr_kern, qr_floor = [], [], [], [], []
    for rep in range(args.repeats):  # interleaved: load drift hits all alike
        kern.append(timed(run_kernel, n, 100 + rep) / n * 1e9)
        floor.append(timed(rng_floor, make_gen(200 + rep), n) / n * 1e9)
        nump.append(timed(numpy_paths, n_vec, reps, 300 + rep) / (n_vec * reps) * 1e9)
        qr_kern.append(timed(run_qr_kernel, n_qr, 400 + rep) / n_qr * 1e9)
        qr_floor.append(timed(run_qr_floor, n_qr, 500 + rep) / n_qr * 1e9)
        print(f"repeat {rep + 1}/{args.repeats}: kernel {kern[-1]:.1f}, floor {floor[-1]:.1f}, "
              f"numpy {nump[-1]:.1f}, QR kernel {qr_kern[-1]:.1f}, QR floor {qr_floor[-1]:.1f} ns/step",
              flush=True)
    med = statistics.median
    res = {
        "n": n, "n_vec": n_vec, "reps_vec": reps, "repeats": args.repeats,
        "kernel_ns_per_step": med(kern),
        "floor_ns_per_step": med(floor),
        "kernel_over_floor": med(k / f for k, f in zip(kern, floor)),
        "numpy_ns_per_replication_step": med(nump),
        "numpy_over_kernel": med(p / k for p, k in zip(nump, kern)),
        "kernel_ns_all": kern, "floor_ns_all": floor, "numpy_ns_all": nump,
        "n_qr": n_qr,
        "qr_kernel_ns_per_step": med(qr_kern),
        "qr_floor_ns_per_step": med(qr_floor),
        "qr_kernel_over_floor": med(k / f for k, f in zip(qr_kern, qr_floor)),
        "qr_floor_consumes_like_kernel": qr_same,
        "qr_kernel_ns_all": qr_kern, "qr_floor_ns_all": qr_floor,
    }
    res["peak_rss_mib_1e5"] = peak_rss_mib(10**5)
    res["peak_rss_mib_1e7"] = peak_rss_mib(10**7)
    res["peak_rss_ratio"] = res["peak_rss_mib_1e7"] / res["peak_rss_mib_1e5"]

    res["bit_generator"] = args.bit_generator
    print()
    print(f"bit generator   {args.bit_generator}")
    print(f"kernel          {res['kernel_ns_per_step']:7.1f} ns/step")
    print(f"RNG floor       {res['floor_ns_per_step']:7.1f} ns/step")
    print(f"kernel / floor  {res['kernel_over_floor']:7.2f}   (target <= 1.5)")
    print(f"numpy (R={reps}) {res['numpy_ns_per_replication_step']:7.1f} ns/replication-step")
    print(f"numpy / kernel  {res['numpy_over_kernel']:7.2f}   (target >= 2.5)")
    print(f"QR kernel {res['qr_kernel_ns_per_step']:.1f} ns/step, QR RNG floor "
          f"{res['qr_floor_ns_per_step']:.1f} ns/step, ratio {res['qr_kernel_over_floor']:.2f} (target <= 1.5)")
    print(f"peak RSS n=1e5 {res['peak_rss_mib_1e5']:.1f} MiB, n=1e7 {res['peak_rss_mib_1e7']:.1f} MiB, "
          f"ratio {res['peak_rss_ratio']:.3f} (target <= 1.10)")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())

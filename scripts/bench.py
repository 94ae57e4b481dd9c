"""Benchmark of the LDP-SGD kernels: speed against two RNG floors, numpy, grouping, Table 1, memory.

Prints, from one process, medians over ``--repeats`` interleaved repetitions
(load drift hits every measure alike) of

1. the kernel's cost per replication-step (:func:`ldpsim.recursion.kernels.run_paths_lanes`,
   quantile model at tau = 0.5, epsilon = 1, all inference state on), at one lane and at the
   default lanes (:func:`ldpsim.engine.dialect.lanes.vector_width` replications side by side);
2. two RNG floors, jitted loops drawing the kernel's random numbers (one
   normal, one uniform a step) and nothing else, from the same function:
   the *new* floor through ``ldpsim.engine.dialect.rng`` on ``kernel_rngs(gens)`` (the
   inlined SFC64 the kernels use), at the same lanes as the kernel it is the
   floor of, the *old* floor through numba's ``Generator`` (a call through the
   bit generator's function pointer per draw, which is how the kernels drew
   before; one lane);
3. a plain-numpy implementation of the same algorithm vectorised over ``R``
   replications, in ns per replication-step, with a statistical sanity check
   against the kernel;
4. the quantile-regression kernel (d = 4, tau = 0.5, epsilon = 1,
   truncated-normal covariates, Laplace noise), at one lane and the default, against its floors: per
   step 3 truncated normals by the same rejection from N(0, 1), the
   response's normal and 4 Laplace draws (8 standard exponentials), in the
   kernel's order. A sanity line checks that floor and kernel leave the
   generator in the same state;
5. the sweep speed-up: the wall time of ``configs/sweep_gamma_beta.yaml``
   (5 beta values per gamma, whose settings share their paths) over that of
   the same sweep with one beta, at ``--reps-sweep`` replications;
6. the wall time of the full Table 1 (``configs/quantile.yaml``, 500
   replications, n = 1e6, 1e7, 1e8, 2 workers) extrapolated from a slice of
   ``--reps-table`` replications per setting run through the same driver;
7. the peak RSS of fresh processes running one path of 1e5 and 1e7 steps
   (the kernel allocates nothing of size n, so the two should agree);
8. with ``--studies``, the other studies' kernels against their floors:
   ``bench()`` of ``bench_dpsgd.py`` (002), ``bench_sagd.py`` (001) and
   ``bench_online.py`` (004), each measured in this process.

9. with ``--compile`` instead of all this, the first result of every committed config from an empty
   cache (:func:`compile_bench`): the wall time of ``python -m ldpsim run CONFIG --reps 2 --n 2000``
   in a fresh cache folder (numba compiles the run's kernels), then the same run again (they load),
   one line each; ``--markdown PATH`` writes the table into that page between its
   ``<!-- compile-table -->`` markers (docs/performance.md).

Usage
-----
``python scripts/bench.py [--compile [CONFIG ...] [--markdown PATH]] [--n 1e7] [--n-qr 2e6] [--repeats 5] [--reps-vec 500]
[--n-vec 2e4] [--reps-sweep 10] [--reps-table 2] [--studies] [--json PATH]``. Timings are
reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import ldpsim
from ldpsim.engine.dialect.jit import jit  # imports ldpsim first: fixes numba's cache directory
from ldpsim.engine.dialect import rng as ldpsim_rng
from ldpsim.engine.dialect.lanes import any_lane, lane_array, vector_width
from ldpsim.engine.dialect.rng import exponential, kernel_rngs, local_rng, normal, normal_where, release_rng, uniform
from ldpsim.models import QuantileModel, QuantileRegressionModel
from ldpsim.recursion.kernels import run_paths_lanes
from ldpsim.inference.streaming import StreamLayout

ROOT = Path(__file__).resolve().parents[1]

TAU, EPSILON, C, GAMMA, BETA, THETA0 = 0.5, 1.0, 1.0, 0.51, 0.75, 0.0
#: Bit generator of all timed streams (kernel, floor, numpy); ``--bit-generator`` changes it.
BIT_GENERATOR = ldpsim_rng.BIT_GENERATOR


def make_gen(seed):
    """A Generator on :data:`BIT_GENERATOR`, the same for kernel, floor and numpy."""
    return np.random.Generator(BIT_GENERATOR(seed))


#: Replications a kernel call advances side by side by default on this machine (the studies' default).
LANES = vector_width()


@jit
def rng_floor(rngs, n, out):
    """Draw what the kernel draws per step (one normal, one uniform), nothing else; the sum goes to ``out[0]``.

    ``rngs`` is ``kernel_rngs(gens)`` (the new floor: the kernels' inlined
    SFC64, one lane or several side by side, its state copied into registers
    as the kernels do) or a generator itself (the old floor: numba's ``Generator``).
    """
    rng = local_rng(rngs)
    s = 0.0
    for _ in range(n):
        s += normal(rng)
        s += uniform(rng)
    release_rng(rngs, rng)
    out[0] = s


@jit
def qr_rng_floor(rngs, n, d, bound, out):
    """Draw what the quantile-regression kernel draws per step, in its order, nothing else.

    ``d - 1`` covariates N(0, 1) truncated to ``[-bound, bound]`` by rejection
    (``_draw_truncated_normal``: with lanes, each lane redraws alone), the
    response's normal, then one Laplace per coordinate as the difference of
    two standard exponentials (``mechanisms.laplace``); all summed into
    ``out[0]`` so that no draw is optimised away. ``rngs`` as for :func:`rng_floor`.
    """
    rng = local_rng(rngs)
    s = 0.0
    for _ in range(n):
        for _ in range(d - 1):
            z = normal(rng)
            outside = abs(z) > bound
            while any_lane(outside):
                z = normal_where(rng, outside, z)
                outside = abs(z) > bound
            s += z
        s += normal(rng)
        for _ in range(d):
            s += exponential(rng)
            s -= exponential(rng)
    release_rng(rngs, rng)
    out[0] = s


def _gens(seed, lanes):
    return [make_gen(seed * 1000 + j) for j in range(lanes)]


def run_floor(n, seed, old=False, lanes=1):
    """:func:`rng_floor` for ``n`` replication-steps on fresh generators (``lanes`` side by side), or the old floor."""
    gens = _gens(seed, 1 if old else lanes)
    rng_floor(gens[0] if old else kernel_rngs(gens), n // len(gens), lane_array(1, len(gens)))
    return gens


def qr_model():
    """The benchmarked quantile-regression model (000, Table 2 setting)."""
    return QuantileRegressionModel(TAU, epsilon=EPSILON, covariates="truncnorm", mechanism="laplace")


def run_qr_floor(n, seed, old=False, lanes=1):
    """:func:`qr_rng_floor` for :func:`qr_model`, ``n`` replication-steps (new floor at ``lanes``, or the old one)."""
    model = qr_model()
    gens = _gens(seed, 1 if old else lanes)
    qr_rng_floor(gens[0] if old else kernel_rngs(gens), n // len(gens), model.dim, model.covariates.bound,
                 lane_array(1, len(gens)))
    return gens


def run_qr_kernel(n, seed, lanes=1):
    """Quantile-regression kernel paths of ``n // lanes`` steps, ``lanes`` side by side; returns their generators."""
    gens = _gens(seed, lanes)
    steps = n // lanes
    run_paths_lanes(qr_model(), gens, steps, C, GAMMA, THETA0, [StreamLayout.build(steps, BETA, GAMMA)])
    return gens


def qr_sanity(n, seed, lanes=LANES):
    """Print whether kernel and floor consume the generators alike (same next ``random()`` after the run)."""
    after_kernel = [g.random() for g in run_qr_kernel(n * lanes, seed, lanes)]
    after_floor = [g.random() for g in run_qr_floor(n * lanes, seed, lanes=lanes)]
    same = after_kernel == after_floor
    print(f"QR floor consumes the generators like the kernel (n={n}, {lanes} lanes): {'yes' if same else 'NO'}")
    return same


def run_kernel(n, seed, lanes=1):
    """Quantile kernel paths of ``n // lanes`` steps, ``lanes`` side by side; the first path's :class:`PathState`."""
    steps = n // lanes
    return run_paths_lanes(QuantileModel(TAU, EPSILON), _gens(seed, lanes), steps, C, GAMMA, THETA0,
                           [StreamLayout.build(steps, BETA, GAMMA)])[0][0]


#: Looks of the timed looks kernel (``looks: 20``, the default of ``looks: true``), from 1% of n.
LOOKS = 20


def run_looks(n, seed):
    """One quantile path of ``n`` steps through the looks' trace kernel: every look's blocks and batches streamed."""
    from ldpsim.inference.streaming import checkpoint_grid
    from ldpsim.studies.coverage.trace import TraceLayout, run_trace

    layout = TraceLayout.build(checkpoint_grid(n, LOOKS, n // 100), BETA, GAMMA)
    return run_trace(QuantileModel(TAU, EPSILON), _gens(seed, 1)[0], C, GAMMA, THETA0, layout)


#: NPRR's four confidence sets (issue 31) streamed beside the mean model's looks.
NPRR_METHODS = ("NPRR_H", "NPRR_EB", "NPRR_H_CI", "NPRR_EB_CI")


def run_looks_mean(n, seed, nprr=True):
    """One path of the mean model with NPRR (U(0, 1), epsilon 2) through the looks' kernel, with NPRR's four
    confidence sets streamed (``nprr``) or not: the same path, the same draws."""
    from ldpsim.inference.streaming import checkpoint_grid
    from ldpsim.models.mean import MeanModel
    from ldpsim.studies.coverage.checkpoints import TraceLayout, run_trace
    from ldpsim.studies.coverage.releases import ReleaseTap

    model = MeanModel(2.0, "nprr")
    layout = TraceLayout.build(checkpoint_grid(n, LOOKS, n // 100), BETA, GAMMA)
    tap = ReleaseTap.build(model, NPRR_METHODS if nprr else (), 0.9, n)
    return run_trace(model, _gens(seed, 1)[0], C, GAMMA, THETA0, layout, tap)


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
    params = QuantileModel(TAU, EPSILON).kernel_params().gradient  # the randomized-response constants
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
    states = [run_kernel(n, seed + 1 + r) for r in range(reps)]  # (one lane: lanes give the same numbers)
    ktb = np.array([st.theta_bar[0] for st in states])
    kv = np.array([st.sn_v[0] for st in states])
    se = tb.std(ddof=1) / np.sqrt(reps)
    print(f"sanity (n={n}, R={reps}, truth theta*=0):")
    print(f"  numpy  mean theta_bar {tb.mean():+.2e} (SE {se:.1e}, z={tb.mean() / se:+.2f}), "
          f"sd {tb.std(ddof=1):.2e}, mean V_n {v.mean():.3e}")
    print(f"  kernel mean theta_bar {ktb.mean():+.2e} (SE {ktb.std(ddof=1) / np.sqrt(reps):.1e}), "
          f"sd {ktb.std(ddof=1):.2e}, mean V_n {kv.mean():.3e}")
    print(f"  numpy batch sums / n vs theta_bar: max abs diff {np.max(np.abs(batches.sum(0) / n - tb)):.1e}")


def timed(func, *args, **kwargs):
    """Wall time of ``func(*args, **kwargs)`` in seconds."""
    start = time.perf_counter()
    func(*args, **kwargs)
    return time.perf_counter() - start


def run_config(path, **overrides):
    """Run a config through the Python API (the CLI's code path), in memory, quietly."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ldpsim.ConfigWarning)  # the sweep crosses beta <= gamma on purpose
        return ldpsim.run(str(ROOT / path), out=None, progress=False, **overrides)


#: The full Table 1: replications, settings (2 tau), n per setting.
TABLE1_REPS, TABLE1_TAUS, TABLE1_NS = 500, 2, (10**6, 10**7, 10**8)


def peak_rss_mib(n):
    """Peak RSS (MiB) of a fresh process running one kernel path of ``n`` steps."""
    out = subprocess.run([sys.executable, __file__, "--memory-child", str(n)],
                         check=True, capture_output=True, text=True).stdout
    return int(out.split()[-1]) / 1024.0  # ru_maxrss is in KiB on Linux


def memory_child(n):
    """Child of :func:`peak_rss_mib`: warm up, run ``n`` steps, print ru_maxrss."""
    run_kernel(1000 * LANES, 0, LANES)
    run_kernel(n * LANES, 1, LANES)  # LANES paths of n steps
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


#: The small run of --compile: its time is the kernels' compilation (cold) or loading (warm), not their running.
COMPILE_RUN = ("--reps", "2", "--n", "2000")
#: Keys a small run must change: a first look past its n.
COMPILE_SETS = {"first_look": "first_look=200"}


def compile_bench(names=None, markdown=None, json_path=None) -> dict:
    """Cold and warm wall time of every committed config's small run, each cold run in a fresh cache folder.

    Each run is a fresh ``python -m ldpsim run`` (default workers: all cores),
    as a new user's first command; ``NUMBA_CACHE_DIR`` is unset, so ldpsim's
    own cache folder under the temporary ``XDG_CACHE_HOME`` is used.
    """
    import os
    import platform
    import tempfile

    configs = sorted((ROOT / "configs").glob("*.yaml"))
    if names:
        configs = [c for c in configs if c.stem in names]
    rows = {}
    for path in configs:
        text = path.read_text()
        sets = [arg for key, value in COMPILE_SETS.items() if f"\n{key}:" in "\n" + text for arg in ("--set", value)]
        with tempfile.TemporaryDirectory() as tmp:
            env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
            env["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")
            row = {}
            for label in ("cold", "warm"):
                if "\ncheckpoints:" in "\n" + text and "\nstudy:" not in "\n" + text:  # `trace`'s: one path
                    cmd = [sys.executable, "-m", "ldpsim", "trace", str(path), "--n", COMPILE_RUN[3], "--out",
                           str(Path(tmp) / label), "--force"]
                else:
                    cmd = [sys.executable, "-m", "ldpsim", "run", str(path), *COMPILE_RUN, *sets, "--out",
                           str(Path(tmp) / label), "--quiet", "--force"]
                tic = time.perf_counter()
                done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
                row[label] = time.perf_counter() - tic
                if done.returncode:
                    row[f"{label}_error"] = (done.stderr.strip().splitlines() or ["?"])[-1][:200]
        rows[path.stem] = row
        print(f"{path.stem:28s} cold {row['cold']:6.1f} s   warm {row['warm']:5.1f} s"
              + (f"   ERROR {row.get('cold_error') or row.get('warm_error')}" if "cold_error" in row
                 or "warm_error" in row else ""), flush=True)
    load = os.getloadavg()
    machine = f"{platform.machine()}, {os.cpu_count()} cores, load {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} at the end"
    print(f"machine: {machine}")
    result = {"run": " ".join(COMPILE_RUN), "machine": machine, "configs": rows}
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=2))
    if markdown:
        _write_compile_table(Path(markdown), result)
    return result


def _write_compile_table(page: Path, result: dict) -> None:
    """The table of :func:`compile_bench` into ``page`` between its two ``<!-- compile-table -->`` markers."""
    marker = "<!-- compile-table -->"
    lines = ["| config | first result, empty cache (s) | again, cache warm (s) |", "|---|---:|---:|"]
    for name, row in result["configs"].items():
        lines.append(f"| `{name}` | {row['cold']:.1f} | {row['warm']:.1f} |")
    lines.append("")
    lines.append(f"Each config as `python -m ldpsim run CONFIG {result['run']}`; {result['machine']}.")
    text = page.read_text()
    head, _, rest = text.partition(marker)
    _, _, tail = rest.partition(marker)
    page.write_text(f"{head}{marker}\n" + "\n".join(lines) + f"\n{marker}{tail}")


def main(argv=None):
    """Run the benchmark and print the summary (see module docstring)."""
    global BIT_GENERATOR
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=float, default=1e7, help="kernel steps per timing")
    parser.add_argument("--n-qr", type=float, default=2e6, help="quantile-regression kernel steps per timing")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--reps-vec", type=int, default=500, help="replications R of the numpy version")
    parser.add_argument("--n-vec", type=float, default=2e4, help="steps of the numpy version")
    parser.add_argument("--reps-sweep", type=int, default=10, help="replications of the timed sweeps")
    parser.add_argument("--reps-table", type=int, default=LANES,
                        help="replications per setting of the Table 1 slice (a multiple of the lanes: a slice of "
                             "fewer runs in a padded call of the lanes' cost)")
    parser.add_argument("--json", metavar="PATH", help="also write the numbers to this JSON file")
    parser.add_argument("--bit-generator", default=BIT_GENERATOR.__name__,
                        help="numpy bit generator of all streams (default: ldpsim's)")
    parser.add_argument("--studies", action="store_true", help="also the dpsgd, sagd and online kernels")
    parser.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--compile", nargs="*", metavar="CONFIG",
                        help="only the cold and warm first result of every committed config (or of these, by name)")
    parser.add_argument("--markdown", metavar="PATH", help="with --compile: write the table into this page")
    args = parser.parse_args(argv)
    if args.compile is not None:
        compile_bench(args.compile, args.markdown, args.json)
        return 0
    BIT_GENERATOR = getattr(np.random, args.bit_generator)
    if args.memory_child is not None:
        return memory_child(args.memory_child)
    n, n_vec, reps, n_qr = int(args.n), int(args.n_vec), args.reps_vec, int(args.n_qr)

    # warm-up: compile (or load from cache) before anything is timed
    widths = sorted({1, LANES})
    for lanes in widths:
        run_kernel(1000 * lanes, 0, lanes)
        run_floor(1000 * lanes, 0, lanes=lanes)
        run_qr_kernel(1000 * lanes, 0, lanes)
        run_qr_floor(1000 * lanes, 0, lanes=lanes)
    run_floor(1000, 0, old=True)
    run_qr_floor(1000, 0, old=True)
    run_looks(10_000, 0)
    run_looks_mean(10_000, 0)
    run_looks_mean(10_000, 0, nprr=False)
    numpy_paths(2 * 1024, reps, 0)
    run_config("configs/sweep_gamma_beta.yaml", reps=2, n=10**5, n_jobs=1)
    run_config("configs/sweep_gamma_beta.yaml", reps=2, n=10**5, n_jobs=1, beta=0.75)
    run_config("configs/quantile.yaml", reps=2, n=10**5, n_jobs=2)
    sanity(n_vec, reps, 12345)
    qr_same = qr_sanity(10**4 + 17, 4321)

    per_width = [f"{name}_L{lanes}" for lanes in widths for name in ("kernel", "floor", "qr_kernel", "qr_floor")]
    names = tuple(per_width) + ("old_floor", "numpy", "qr_old_floor", "sweep", "sweep_one", "table1", "looks",
                                 "looks_mean", "looks_nprr")
    t = {name: [] for name in names}
    slice_steps = args.reps_table * TABLE1_TAUS * sum(TABLE1_NS)
    full_steps = TABLE1_REPS * TABLE1_TAUS * sum(TABLE1_NS)
    for rep in range(args.repeats):  # interleaved: load drift hits all alike
        for lanes in widths:  # ns per replication-step
            t[f"kernel_L{lanes}"].append(timed(run_kernel, n, 100 + rep, lanes) / n * 1e9)
            t[f"floor_L{lanes}"].append(timed(run_floor, n, 200 + rep, lanes=lanes) / n * 1e9)
            t[f"qr_kernel_L{lanes}"].append(timed(run_qr_kernel, n_qr, 400 + rep, lanes) / n_qr * 1e9)
            t[f"qr_floor_L{lanes}"].append(timed(run_qr_floor, n_qr, 500 + rep, lanes=lanes) / n_qr * 1e9)
        t["old_floor"].append(timed(run_floor, n, 200 + rep, old=True) / n * 1e9)
        t["looks"].append(timed(run_looks, n, 100 + rep) / n * 1e9)
        t["looks_mean"].append(timed(run_looks_mean, n, 600 + rep, nprr=False) / n * 1e9)
        t["looks_nprr"].append(timed(run_looks_mean, n, 600 + rep) / n * 1e9)
        t["numpy"].append(timed(numpy_paths, n_vec, reps, 300 + rep) / (n_vec * reps) * 1e9)
        t["qr_old_floor"].append(timed(run_qr_floor, n_qr, 500 + rep, old=True) / n_qr * 1e9)
        t["sweep"].append(timed(run_config, "configs/sweep_gamma_beta.yaml", reps=args.reps_sweep, n_jobs=1))
        t["sweep_one"].append(timed(run_config, "configs/sweep_gamma_beta.yaml", reps=args.reps_sweep, n_jobs=1,
                                    beta=0.75))
        t["table1"].append(timed(run_config, "configs/quantile.yaml", reps=args.reps_table, n_jobs=2)
                           * full_steps / slice_steps)
        kernels = ", ".join(f"L = {lanes}: kernel {t[f'kernel_L{lanes}'][-1]:.2f}, floor {t[f'floor_L{lanes}'][-1]:.2f},"
                            f" QR kernel {t[f'qr_kernel_L{lanes}'][-1]:.1f}, QR floor {t[f'qr_floor_L{lanes}'][-1]:.1f}"
                            for lanes in widths)
        print(f"repeat {rep + 1}/{args.repeats}: {kernels}; old floor {t['old_floor'][-1]:.1f}, numpy "
              f"{t['numpy'][-1]:.1f}, QR old floor {t['qr_old_floor'][-1]:.1f} ns per replication-step; sweep "
              f"{t['sweep'][-1]:.2f} s vs {t['sweep_one'][-1]:.2f} s; Table 1 {t['table1'][-1] / 60:.1f} min",
              flush=True)
    med = statistics.median

    def ratio(a, b):  # the median of the ratios taken repeat by repeat
        return med(x / y for x, y in zip(t[a], t[b]))

    res = {"n": n, "n_vec": n_vec, "reps_vec": reps, "repeats": args.repeats, "n_qr": n_qr, "lanes": LANES,
           "widths": widths}
    for lanes in widths:
        res.update({
            f"kernel_L{lanes}_ns": med(t[f"kernel_L{lanes}"]), f"floor_L{lanes}_ns": med(t[f"floor_L{lanes}"]),
            f"kernel_L{lanes}_over_floor": ratio(f"kernel_L{lanes}", f"floor_L{lanes}"),
            f"qr_kernel_L{lanes}_ns": med(t[f"qr_kernel_L{lanes}"]), f"qr_floor_L{lanes}_ns": med(t[f"qr_floor_L{lanes}"]),
            f"qr_kernel_L{lanes}_over_floor": ratio(f"qr_kernel_L{lanes}", f"qr_floor_L{lanes}"),
        })
    res.update({
        "kernel_speedup": ratio("kernel_L1", f"kernel_L{LANES}"),
        "qr_kernel_speedup": ratio("qr_kernel_L1", f"qr_kernel_L{LANES}"),
        "old_floor_ns": med(t["old_floor"]),
        "kernel_over_old_floor": ratio(f"kernel_L{LANES}", "old_floor"),
        "numpy_ns_per_replication_step": med(t["numpy"]),
        "numpy_over_kernel": ratio("numpy", f"kernel_L{LANES}"),
        "qr_old_floor_ns": med(t["qr_old_floor"]),
        "qr_kernel_over_old_floor": ratio(f"qr_kernel_L{LANES}", "qr_old_floor"),
        "qr_floor_consumes_like_kernel": qr_same,
        "looks_ns": med(t["looks"]),
        "looks_over_kernel_L1": ratio("looks", "kernel_L1"),
        f"looks_over_kernel_L{LANES}": ratio("looks", f"kernel_L{LANES}"),
        "looks_mean_ns": med(t["looks_mean"]), "looks_nprr_ns": med(t["looks_nprr"]),
        "looks_nprr_over_mean": ratio("looks_nprr", "looks_mean"),
        "reps_sweep": args.reps_sweep,
        "sweep_s": med(t["sweep"]), "sweep_one_beta_s": med(t["sweep_one"]),
        "sweep_over_one_beta": ratio("sweep", "sweep_one"),
        "reps_table": args.reps_table,
        "table1_extrapolated_min": med(t["table1"]) / 60,
        "all": t,
    })
    res["peak_rss_mib_1e5"] = peak_rss_mib(10**5)
    res["peak_rss_mib_1e7"] = peak_rss_mib(10**7)
    res["peak_rss_ratio"] = res["peak_rss_mib_1e7"] / res["peak_rss_mib_1e5"]

    res["bit_generator"] = args.bit_generator
    print()
    print(f"bit generator        {args.bit_generator}; default lanes L = {LANES}; ns per replication-step")
    for name, key in (("quantile kernel", "kernel"), ("QR kernel", "qr_kernel")):
        floor = key.replace("kernel", "floor")
        for lanes in widths:
            print(f"{name:15s} L = {lanes}: {res[f'{key}_L{lanes}_ns']:7.2f} ns, its floor (same lanes) "
                  f"{res[f'{floor}_L{lanes}_ns']:7.2f} ns, kernel / floor {res[f'{key}_L{lanes}_over_floor']:.2f}")
        print(f"{name:15s} L = {LANES} over L = 1: {res[f'{key}_speedup']:.2f}x faster")
    print(f"old RNG floor        {res['old_floor_ns']:7.1f} ns/step (numba's Generator); quantile kernel (L = {LANES}) / "
          f"old floor {res['kernel_over_old_floor']:.2f}")
    print(f"numpy (R={reps})      {res['numpy_ns_per_replication_step']:7.1f} ns/replication-step; numpy / kernel "
          f"(L = {LANES}) {res['numpy_over_kernel']:.2f}")
    print(f"looks ({LOOKS}, one lane, trace kernel) {res['looks_ns']:7.2f} ns/step: over the quantile kernel at L = 1 "
          f"{res['looks_over_kernel_L1']:.2f}, at L = {LANES} (a run without looks) {res[f'looks_over_kernel_L{LANES}']:.2f}")
    print(f"looks, mean model with NPRR (U(0, 1), eps 2): {res['looks_mean_ns']:7.2f} ns/step; with NPRR's four "
          f"confidence sets streamed {res['looks_nprr_ns']:7.2f} ns/step, ratio {res['looks_nprr_over_mean']:.2f}")
    print(f"QR old floor {res['qr_old_floor_ns']:.1f} ns/step; QR kernel (L = {LANES}) / old floor "
          f"{res['qr_kernel_over_old_floor']:.2f}")
    print(f"sweep (5 beta per gamma) {res['sweep_s']:.2f} s vs one beta {res['sweep_one_beta_s']:.2f} s at "
          f"{args.reps_sweep} reps: ratio {res['sweep_over_one_beta']:.2f} (target <= 1.4)")
    print(f"Table 1 (500 reps, n to 1e8, 2 workers) extrapolated from {args.reps_table} reps per setting: "
          f"{res['table1_extrapolated_min']:.1f} min (target <= 8)")
    print(f"peak RSS n=1e5 {res['peak_rss_mib_1e5']:.1f} MiB, n=1e7 {res['peak_rss_mib_1e7']:.1f} MiB, "
          f"ratio {res['peak_rss_ratio']:.3f} (target <= 1.10)")
    if args.studies:
        res["studies"] = study_benchmarks(args.repeats)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)
    return 0


def study_benchmarks(repeats: int) -> dict:
    """``bench()`` of the study scripts next to this one, printed as kernel / floor lines."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_dpsgd
    import bench_online
    import bench_sagd

    out = {"dpsgd": bench_dpsgd.bench(repeats), "dpsgd_lanes": bench_dpsgd.bench_lanes(repeats),
           "sagd": bench_sagd.bench(repeats),
           "online": bench_online.bench(repeats)}
    d, s, o = out["dpsgd"], out["sagd"], out["online"]
    figure2 = Path(__file__).resolve().parents[1] / "results" / "dpsgd" / "meta.json"
    if figure2.is_file():  # the committed Figure 2 run's own wall time (1000 replications)
        meta = json.loads(figure2.read_text())
        d["figure2_wall_min"], d["figure2_n_jobs"] = meta["wall_time_s"] / 60, meta.get("n_jobs")
        print(f"Figure 2 of Xia et al. 2025 (results/dpsgd): {d['figure2_wall_min']:.1f} min wall, "
              f"n_jobs = {d['figure2_n_jobs']}")
    for m in (1, 10):
        print(f"DP-SGD step (Xia et al.), m = {m:2d}: {d[f'm{m}_ns_per_step']:.1f} ns, floor {d[f'm{m}_floor_ns_per_step']:.1f}: "
              f"ratio {d[f'm{m}_ratio']:.2f}")
    lanes = out["dpsgd_lanes"]
    for width in lanes["widths"]:
        print(f"DP-SGD lanes, m = 1, L = {width}: {lanes[f'L{width}_ns']:.1f} ns per replication-step, floor "
              f"{lanes[f'L{width}_floor_ns']:.1f} with the same lanes: ratio {lanes[f'L{width}_ratio']:.2f}")
    print(f"  DP-SGD, default L = {lanes['default']} over L = 1: {lanes['speedup']:.2f}x faster")
    print(f"SAGD step (Zhou et al., n = {s['n']}, d = {s['d']}): {s['kernel_ns_per_step'] / 1e3:.1f} us, "
          f"{s['kernel_over_floor']:.2f} x its floor (one pass for the mean gradient + the draws)")
    for width in o["widths"]:
        key = f"huber_d10_L{width}"
        print(f"online Huber d = 10 (Shi et al.), L = {width}: {o[key + '_ns_per_step']:.1f} ns per replication-step, "
              f"{o[key + '_kernel_over_floor']:.2f} x its floor with the same lanes; per-user budgets "
              f"{o[key + '_per_user_kernel_over_floor']:.2f}")
    default = o["default"]
    if default in o["widths"] and 1 in o["widths"]:
        speedup = o["huber_d10_L1_ns_per_step"] / o[f"huber_d10_L{default}_ns_per_step"]
        print(f"  online Huber, default L = {default} over L = 1: {speedup:.2f}x faster")
    return out


if __name__ == "__main__":
    sys.exit(main())

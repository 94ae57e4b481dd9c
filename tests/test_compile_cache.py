"""numba's cache keyed on the sources each kernel compiles (ldpsim.engine.dialect.numba_cache).

Each test works on a copy of the package, with a cache folder of its own, and
runs kernels in fresh processes: it edits a file of the copy and checks what
the next process compiles (numba's compile events) and what numbers it gets.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import ldpsim

PACKAGE = Path(__file__).resolve().parents[1] / "ldpsim"

#: One short path of the quantile model and (optionally) of the mean model, at one lane; prints the
#: numbers and the functions numba compiled (not those it loaded from the cache).
SCRIPT = """
import json, sys
import numpy as np
from numba.core import event
import ldpsim
from ldpsim.models import MeanModel, QuantileModel
from ldpsim.recursion.kernels import run_paths
from ldpsim.inference.streaming import StreamLayout

compiled = []


class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__qualname__ + str(ev.data["args"]))

    def on_end(self, ev):
        pass


event.register("numba:compile", Listener())
layout = StreamLayout.build(200, 0.75, 0.51)
out = {}
models = {"quantile": QuantileModel(0.5, 1.0), "mean": MeanModel(1.0, "laplace")}
for name in sys.argv[1:]:
    state = run_paths(models[name], np.random.default_rng(3), 200, 1.0, 0.51, 0.0, [layout])[0]
    out[name] = float(state.theta_bar[0])
print(json.dumps({"theta_bar": out, "compiled": compiled}))
"""


@pytest.fixture
def copy(tmp_path):
    """A copy of the package, a cache folder, and a runner of :data:`SCRIPT` in a new process."""
    root = tmp_path / "src"
    shutil.copytree(PACKAGE, root / "ldpsim", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(PYTHONPATH=str(root), XDG_CACHE_HOME=str(tmp_path / "cache"))

    def run(*models):
        done = subprocess.run([sys.executable, "-c", SCRIPT, *models], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    run.root = root / "ldpsim"
    return run


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _kernels(compiled, name="_scalar_path"):
    return [c for c in compiled if c.startswith(name + "(")]


def test_warm_process_compiles_nothing_and_unrelated_edits_keep_the_cache(copy):
    cold = copy("quantile")
    assert _kernels(cold["compiled"]), "the first process compiles the kernel"
    warm = copy("quantile")
    assert warm["compiled"] == []
    assert warm["theta_bar"] == cold["theta_bar"]
    # the command line, the reports and the figures: no kernel reads them
    _edit(copy.root / "cli.py", '"""', '"""\n# an edit of a comment\n')
    for path in (copy.root / "reporting").glob("*.py"):
        path.write_text(path.read_text() + "\n# an edit\n")
    edited = copy("quantile")
    assert edited["compiled"] == []
    assert edited["theta_bar"] == cold["theta_bar"]


@pytest.mark.slow  # subprocesses compiling in a copy of the package: 8-10 s of the fast tier
def test_an_edit_of_an_inlined_helper_in_another_module_gives_new_numbers(copy):
    """The quantile gradient is inlined into the kernel of recursion/kernels.py from models/quantile.py."""
    before = copy("quantile")
    _edit(copy.root / "models" / "quantile.py", "return where(report, gradient.high, gradient.low)",
          "return where(report, gradient.high, gradient.low) * 2.0")
    after = copy("quantile")
    assert _kernels(after["compiled"]), "the kernel that inlines the edited gradient is compiled again"
    assert after["theta_bar"]["quantile"] != before["theta_bar"]["quantile"]
    _edit(copy.root / "models" / "quantile.py", " * 2.0", "")  # undone: the old numbers again
    again = copy("quantile")
    assert again["theta_bar"] == before["theta_bar"]


@pytest.mark.slow  # subprocesses compiling in a copy of the package: 8-10 s of the fast tier
def test_an_edit_of_a_model_recompiles_that_models_kernels_only(copy):
    first = copy("quantile", "mean")
    assert len(_kernels(first["compiled"])) == 2
    _edit(copy.root / "models" / "quantile.py", '"""Quantile', '"""The quantile')  # its docstring: the file changed
    second = copy("quantile", "mean")
    kernels = _kernels(second["compiled"])
    assert len(kernels) == 1 and "Quantile" in kernels[0], second["compiled"]
    assert second["theta_bar"] == first["theta_bar"]
    # a helper of the mean model's module recompiles the mean model's kernel, not the quantile one's
    _edit(copy.root / "models" / "mean.py", '"""', '"""\n# an edit\n')
    third = copy("quantile", "mean")
    kernels = _kernels(third["compiled"])
    assert len(kernels) == 1 and "Mean" in kernels[0], third["compiled"]


def test_the_sources_of_a_function_are_its_file_and_where_its_constants_and_modules_come_from():
    """``RATIO_CHUNK`` and ``FIRST_FILL`` of recursion/steps.py are frozen into the kernel of recursion/kernels.py."""
    from ldpsim.engine.dialect.numba_cache import note_function, recording
    from ldpsim.recursion import kernels

    with recording() as frame:
        note_function(kernels._scalar_path)
    names = {Path(f).relative_to(PACKAGE).as_posix() for f in frame.files}
    assert names == {"recursion/kernels.py", "recursion/steps.py"}
    with recording() as outside:
        pass
    assert outside.files == set()  # nothing is recorded outside a compilation's frame


# --- the kernels of a run, listed before they compile, and compiled side by side -----------------------------

def test_the_plan_lists_a_runs_kernels_without_compiling_any():
    from numba.core import event

    from ldpsim.engine.runs import compiling

    config = ldpsim.load_config({"model": "quantile", "n": 2000, "reps": 2, "epsilon": [1, "inf"],
                                 "methods": ["BM", "HulC", "OBM"]})
    compiled = []

    class Listener(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"])

        def on_end(self, ev):
            pass

    listener = Listener()
    event.register("numba:compile", listener)
    try:
        found = compiling.plan(config.study, config, lanes=1)
    finally:
        event.unregister("numba:compile", listener)
    assert compiled == []
    assert found.complete
    described = [(k.name, k.describe()["record"], k.describe()["lanes"], k.describe()["parts"]) for k in found.kernels]
    # per record: one pass per zoo method, the classic methods' (and the timing of the main path alone) in them
    assert described == [("recursion.kernels._scalar_path", record, 1, part)
                         for record in ("QuantileParams(QuantileRR, NormalLaw)", "QuantileParams(QuantilePlain, NormalLaw)")
                         for part in ("hulc", "obm")]


def test_kernels_command_lists_and_compiles_side_by_side(tmp_path):
    """``kernels --compile`` in a fresh cache: two kernels compiled in two processes, then listed as cached."""
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    config = tmp_path / "c.yaml"
    config.write_text("model: quantile\nn: 2000\nreps: 2\nepsilon: [1, inf]\nmethods: [BM, SN]\n")

    def kernels(*flags):
        done = subprocess.run([sys.executable, "-m", "ldpsim", "kernels", str(config), "--lanes", "1", *flags],
                              env=env, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr
        return done.stdout

    first = kernels("--compile")
    assert "0 of 2 kernels cached" in first and "side by side on up to" in first
    assert "QuantileRR" in first and "QuantilePlain" in first
    assert "compiled in" in first and "on 2 core(s)" in first or (os.cpu_count() or 1) < 2
    second = kernels()
    assert "2 of 2 kernels cached" in second


def _twice(x):
    return x * 2.0


def test_the_jit_options_are_part_of_a_cache_entrys_key():
    """numba keys on the bytecode: the same function compiled with other options would load the other's code."""
    import numba
    from numba.core import types

    plain = numba.njit(cache=True)(_twice)
    borrowed = numba.njit(cache=True, _nrt=False)(_twice)
    sig = (types.float64,)
    keys = [d._cache._index_key(sig, d.targetctx.codegen()) for d in (plain, borrowed)]
    assert keys[0] != keys[1]


def test_a_kernel_only_function_is_refused_from_python_not_crashed():
    from ldpsim.engine.dialect.jit import DISABLED, jit

    inner = jit(kernel_only=True)(_twice)
    outer = jit(lambda x: inner(x) + 1.0)
    if DISABLED:
        pytest.skip("NUMBA_DISABLE_JIT: plain Python")
    assert outer(2.0) == 5.0
    with pytest.raises(TypeError, match=r"compiled for ldpsim's kernels only.*\.py_func"):
        inner(2.0)
    assert inner.py_func(2.0) == 4.0


@pytest.mark.skipif(sys.platform == "win32", reason="no fcntl: numba's own unlocked save")
def test_an_entry_is_saved_under_a_lock_on_its_index(tmp_path):
    # numba saves an entry by reading the index, adding the entry and writing index and data back, unlocked: two
    # processes that finish two specialisations of one function at once (compile_kernels' workers) could take the
    # same data file, and lose an entry or point it at the other's machine code (ldpsim.engine.dialect.numba_cache._save)
    import fcntl
    import threading

    from numba.core import caching

    cache = caching.IndexDataCacheFile(str(tmp_path), "f-1.py311", ("stamp", 1))
    done = threading.Event()
    with open(cache._index_path + ".lock", "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # as another process saving an entry of the same function
        thread = threading.Thread(target=lambda: (cache.save(("key",), {"data": 1}), done.set()), daemon=True)
        thread.start()
        assert not done.wait(0.5)  # the save waits for the lock
        fcntl.flock(lock.fileno(), fcntl.LOCK_UN)
    thread.join(10)
    assert done.is_set() and cache.load(("key",)) == {"data": 1}


#: A function numba takes about a second to compile, compiled after a barrier both processes reach.
RACE = """
import json, os, sys, time
from numba import njit
from numba.core import event
import ldpsim  # noqa: F401  (its numba cache)

compiled = []


class Listener(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)

    def on_end(self, ev):
        pass


event.register("numba:compile", Listener())
sys.path.insert(0, sys.argv[1])
from slow_module import slow

open(os.path.join(sys.argv[1], f"ready{sys.argv[2]}"), "w").close()
while not all(os.path.exists(os.path.join(sys.argv[1], f"ready{i}")) for i in (0, 1)):
    time.sleep(0.005)
value = njit(cache=True)(slow)(0.5)
print(json.dumps({"compiled": compiled, "value": value}))
"""


def test_two_processes_needing_one_kernel_at_once_compile_it_once(tmp_path):
    # pytest's workers and two runs started together: the second waits for the first's entry and loads it
    body = "\n".join(f"    x = x * {1 + k / 1000} + math.sin(x + {k})" for k in range(400))
    (tmp_path / "slow_module.py").write_text(f"import math\ndef slow(x):\n{body}\n    return x\n")
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(tmp_path / "cache"))
    procs = [subprocess.Popen([sys.executable, "-c", RACE, str(tmp_path), str(i)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in (0, 1)]
    outs = []
    for proc in procs:
        stdout, stderr = proc.communicate(timeout=600)
        assert proc.returncode == 0, stderr[-3000:]
        outs.append(json.loads(stdout.strip().splitlines()[-1]))
    assert sorted(len(o["compiled"]) for o in outs) == [0, 1], outs
    assert outs[0]["value"] == outs[1]["value"]

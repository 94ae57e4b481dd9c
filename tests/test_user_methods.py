"""Users' interval methods (ldpsim.extend.IntervalMethod) in files of their own.

What a user relies on: a method file runs in the coverage study with the
numbers of the kernels (its state equals what the kernel's own sums give,
its twin is the kernel, any lanes give the same bytes); examples/my_batch_means.py
is the built-in BM to the bit; every mistake in the file is one line naming
file and line (a compile error at most 15); an edit of its update gives new
numbers, never stale machine code; a method that cannot run says so in one line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import ldpsim
from ldpsim.api import load_config
from ldpsim.engine.errors import ConfigError
from ldpsim.engine.dialect.rng import as_generator
from ldpsim.inference import user_methods
from ldpsim.inference.streaming import StreamLayout
from ldpsim.models import build_model
from ldpsim.recursion.kernels import run_paths_lanes
from ldpsim.recursion.twins import path_twin
from ldpsim.studies import STUDIES

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
MY_BM = f"{EXAMPLES / 'my_batch_means.py'}:MyBatchMeans"
T_BM = f"{EXAMPLES / 't_batch_means.py'}:StudentBatchMeans"
SOURCE = (EXAMPLES / "my_batch_means.py").read_text()  # a method that asks for segments
T_SOURCE = (EXAMPLES / "t_batch_means.py").read_text()  # a method with a state and an update of its own
QUICK = dict(model="quantile", tau=0.5, n=20000, reps=16, seed=7, methods=["BM", MY_BM])


def write(tmp_path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def variant(tmp_path, old: str, new: str, name: str = "bad_bm.py", source: str = SOURCE) -> str:
    """examples/my_batch_means.py (or ``source``, t_batch_means.py) with one piece of code replaced; its spec."""
    assert old in source
    return f"{write(tmp_path, name, source.replace(old, new))}:" + ("MyBatchMeans" if source is SOURCE
                                                                   else "StudentBatchMeans")


def _makes(spec: str, setting, dim: int, options=None):
    method = user_methods.build(user_methods.canonical(spec), options or {})
    return [partial(user_methods.kernel_state, method, spec, setting, dim)], method


# --- the example is the built-in BM, to the bit ----------------------------------------------------------------


def test_my_batch_means_gives_the_builtin_bm_rows_to_the_bit():
    rows = ldpsim.run(QUICK, progress=False).rows
    bm, mine = rows
    assert bm["method"] == "BM" and mine["method"] == "MyBatchMeans"
    assert {k: v for k, v in bm.items() if k != "method"} == {k: v for k, v in mine.items() if k != "method"}
    # the built-in rows are those of a run without the user's method
    assert ldpsim.run(dict(QUICK, methods=["BM"]), progress=False).rows == [bm]


def test_the_examples_batch_ends_are_chen_et_als_as_ldpsim_computes_them():
    from ldpsim.engine.runs import usercode
    from ldpsim.inference.streaming import batch_ends

    module = usercode.load_file(EXAMPLES / "my_batch_means.py")
    for n in (50, 1000, 12345, 10**6, 10**7, 10**8, 3 * 10**8, 2**40):
        for gamma in (0.3, 0.51, 0.6, 2 / 3, 0.75, 0.9):
            np.testing.assert_array_equal(module.batch_ends(n, gamma), batch_ends(n, gamma), err_msg=f"{n} {gamma}")


@pytest.mark.parametrize("lanes", [1, 8])
def test_the_kernels_batch_sums_of_the_user_method_are_the_builtins(lanes):
    config = load_config(dict(QUICK, n=5000))
    s = config.settings[0]
    model = build_model(s)
    layout = StreamLayout.build(s.n, s.beta, s.gamma, blocks=False)
    makes, _ = _makes(MY_BM, s, 1)
    gens = [as_generator(r) for r in range(lanes + 2)]  # a remainder beyond the lanes: padding lanes
    states = [st[0] for st in run_paths_lanes(model, gens, s.n, s.c, s.gamma, s.theta0, [layout], 1, lanes,
                                              users=makes)]
    for state in states:
        np.testing.assert_array_equal(state.own[0].ends, layout.batch_ends)
        np.testing.assert_array_equal(state.own[0].sums, state.batches)  # the same additions in the same order


class _Thirds(user_methods.IntervalMethod):
    """A method that asks for segments other than the batches: three equal thirds of the path."""

    def segments(self, setting, dim):
        return [setting.n // 3, 2 * setting.n // 3, setting.n]

    def interval(self, state, theta_bar, setting):
        return theta_bar - 1.0, theta_bar + 1.0


class _Tail(_Thirds):
    """Segments that leave out the path's start: steps 101..n in two."""

    def segments(self, setting, dim):
        return np.array([100, setting.n // 2, setting.n])


@pytest.mark.parametrize("model_name, extra", [("quantile", {"tau": 0.5}), ("linear", {"dim": 2})])
@pytest.mark.parametrize("with_bm", [True, False])
def test_segments_of_several_methods_are_the_sums_of_the_iterates_kernel_twin_and_definition(model_name, extra,
                                                                                            with_bm):
    # BM's batches (when BM runs) or the first method's segments take the kernel's batch stream (a register); the
    # others stream beside it (SegmentSums): kernel = twin, to the bit, at 1 and 3 lanes, and = the path's sums
    config = load_config(dict(model=model_name, n=3000, reps=2, seed=5, methods=["BM", MY_BM], **extra))
    s = config.settings[0]
    model = build_model(s)
    layout = StreamLayout.build(s.n, s.beta, s.gamma, blocks=True, batches=with_bm)
    methods = [user_methods.build(user_methods.canonical(MY_BM), {}), _Thirds(), _Tail()]
    makes = [partial(user_methods.kernel_state, m, "m", s, model.dim) for m in methods]
    gens = [as_generator(r) for r in range(3)]
    kernel = [run_paths_lanes(model, gens, s.n, s.c, s.gamma, s.theta0, [layout], 1, 3, users=makes),
              [run_paths_lanes(model, [g], s.n, s.c, s.gamma, s.theta0, [layout], 1, 1, users=makes)[0]
               for g in (as_generator(r) for r in range(3))]]
    for r in range(3):
        twin, path = path_twin(model, as_generator(r), s.n, s.c, s.gamma, s.theta0, layout, users=makes)
        for run in kernel:
            state = run[r][0]
            np.testing.assert_array_equal(state.blocks, twin.blocks)
            for got, want in zip(state.own, twin.own):
                np.testing.assert_array_equal(got.ends, want.ends)
                np.testing.assert_array_equal(got.sums, want.sums)
        for record in twin.own:
            starts = np.concatenate([[0], record.ends[:-1]])
            assert record.sums.shape == (len(record.ends), model.dim)
            for k, (a, b) in enumerate(zip(starts, record.ends)):
                np.testing.assert_allclose(record.sums[k], path[a:b].sum(axis=0), rtol=1e-12)


SEGMENT_ERRORS = {
    "not increasing": ("return [setting.n // 3, 2 * setting.n // 3, setting.n]", "return [5, 5, setting.n]",
                       r"segments\(\) gave ends \[5, 5, 4000\]; they must increase strictly from at least 1 to at "
                       r"most n = 4000$"),
    "beyond n": ("return [setting.n // 3, 2 * setting.n // 3, setting.n]", "return [1, setting.n + 1]",
                 r"they must increase strictly from at least 1 to at most n = 4000$"),
    "not integers": ("return [setting.n // 3, 2 * setting.n // 3, setting.n]", "return [0.5, 2.5]",
                     r"segments\(\) gave \[0.5, 2.5\]; a non-empty sequence of integer steps is expected$"),
    "empty": ("return [setting.n // 3, 2 * setting.n // 3, setting.n]", "return []",
              r"segments\(\) gave \[\]; a non-empty sequence of integer steps is expected$"),
    "raises": ("return [setting.n // 3, 2 * setting.n // 3, setting.n]", "return [setting.oops]",
               r"Thirds.segments\(\) failed: AttributeError: .*oops.* \(thirds.py, line 5\)$"),
    "both": ("    def interval(", "    def state(self, setting, dim, lanes):\n        return None\n\n    def interval(",
             r"Thirds defines both state\(\) and segments\(\); keep one$"),
    "neither": ("    def segments(self, setting, dim):", "    def segments_(self, setting, dim):",
                r"Thirds defines neither state\(\) nor segments\(\); define one$"),
}
_THIRDS = """\
from ldpsim.extend import IntervalMethod

class Thirds(IntervalMethod):
    def segments(self, setting, dim):
        return [setting.n // 3, 2 * setting.n // 3, setting.n]

    def interval(self, state, theta_bar, setting):
        return theta_bar - 1.0, theta_bar + 1.0
"""


@pytest.mark.parametrize("case", list(SEGMENT_ERRORS))
def test_mistakes_in_the_segments_a_method_asks_for_are_one_line(tmp_path, case):
    old, new, pattern = SEGMENT_ERRORS[case]
    assert old in _THIRDS
    path = write(tmp_path, "thirds.py", _THIRDS.replace(old, new))
    with pytest.raises(ConfigError, match=pattern) as info:
        load_config(dict(QUICK, n=4000, methods=["BM", f"{path}:Thirds"]))
    assert "\n" not in str(info.value)


# the vector kernel's twin in the slow tier: its compilation for the users' records is the fast tier's largest
@pytest.mark.parametrize("model_name, extra", [("quantile", {"tau": 0.5}),
                                               pytest.param("linear", {"dim": 2}, marks=pytest.mark.slow)])
def test_the_twin_of_a_user_method_is_the_kernel_scalar_and_vector(model_name, extra):
    config = load_config(dict(model=model_name, n=3000, reps=3, seed=7, methods=["BM", MY_BM, T_BM], **extra))
    s, study = config.settings[0], STUDIES["coverage"]
    kernel = study.run_chunk(s, config.options, config.seed, 0, 3, lanes=1)
    twin = study.run_chunk(s, config.options, config.seed, 0, 3, twin=True)
    assert set(kernel) == set(twin) >= {"method_ok", "estimate"}
    for name in kernel:
        if name != "seconds":
            np.testing.assert_array_equal(kernel[name], twin[name], err_msg=f"{model_name}: {name}")


def test_a_path_twin_streams_the_users_state_as_the_kernel():
    config = load_config(dict(model="linear", dim=2, n=2000, reps=2, methods=["BM", MY_BM]))
    s = config.settings[0]
    model = build_model(s)
    layout = StreamLayout.build(s.n, s.beta, s.gamma, blocks=False)
    makes, _ = _makes(MY_BM, s, model.dim)
    kernel = run_paths_lanes(model, [as_generator(3)], s.n, s.c, s.gamma, s.theta0, [layout], users=makes)[0][0]
    twin, path = path_twin(model, as_generator(3), s.n, s.c, s.gamma, s.theta0, layout, users=makes)
    np.testing.assert_array_equal(kernel.own[0].sums, twin.own[0].sums)
    # and the definition: the sums of the iterates over each batch
    starts = np.concatenate([[0], layout.batch_ends[:-1]])
    for k, (a, b) in enumerate(zip(starts, layout.batch_ends)):
        np.testing.assert_allclose(twin.own[0].sums[k], path[a:b].sum(axis=0), rtol=1e-12)


@pytest.mark.slow  # the kernel compiles at 8 lanes and at 1 for the user's record
def test_lanes_1_and_8_give_the_same_bytes(tmp_path):
    cfg = dict(QUICK, methods=["BB", "BM", "SN", "oracle", MY_BM, T_BM], reps=20)
    one = ldpsim.run(cfg, out=tmp_path / "one", lanes=1, progress=False)
    eight = ldpsim.run(cfg, out=tmp_path / "eight", lanes=8, progress=False)
    assert (tmp_path / "one" / "summary.csv").read_bytes() == (tmp_path / "eight" / "summary.csv").read_bytes()
    assert one.rows == eight.rows


# --- the run: rows, tables, figure, meta, the zoo and looks ---------------------------------------------------


def test_a_users_method_has_rows_in_summary_table_figure_and_its_file_in_meta(tmp_path):
    result = ldpsim.run(dict(QUICK, methods=["BM", "SN", MY_BM, T_BM], tbm_batches=5), out=tmp_path / "r",
                        progress=False)
    assert [r["method"] for r in result.rows] == ["BM", "SN", "MyBatchMeans", "tBM"]
    table = (tmp_path / "r" / "table.md").read_text()
    assert "| MyBatchMeans |" in table and "| tBM " in table
    assert (tmp_path / "r" / "coverage.png").exists()
    files = {Path(f["path"]).name for f in result.meta["user_files"]}
    assert files == {"my_batch_means.py", "t_batch_means.py"}
    assert (tmp_path / "r" / "user_files" / "t_batch_means.py").exists()
    assert result.meta["config"]["tbm_batches"] == 5


@pytest.mark.slow  # the zoo's and the looks' kernels compiled for the user's record
def test_a_users_method_beside_the_zoo_and_at_looks(tmp_path):
    zoo = ldpsim.run(dict(QUICK, n=4000, reps=8, methods=["BM", "OBM", MY_BM]), out=tmp_path / "zoo", progress=False)
    by = {r["method"]: r for r in zoo.rows}
    assert {k: v for k, v in by["BM"].items() if k != "method"} == {
        k: v for k, v in by["MyBatchMeans"].items() if k != "method"}
    zoo_rows = {r["method"]: r for r in zoo.tables["zoo"]}
    assert zoo_rows["MyBatchMeans"]["privacy_cost"] == 1
    # its record: the M + 1 batch ends and sums (d = 1)
    assert zoo_rows["MyBatchMeans"]["state_floats"] == 2 * zoo_rows["BM"]["state_floats"]
    looks = ldpsim.run(dict(QUICK, n=20000, reps=4, methods=["BM", MY_BM], looks=3, first_look=5000),
                       out=tmp_path / "looks", progress=False)
    rows = {(r["method"], r["look"]): r for r in looks.tables["looks"]}
    for look in (1, 2, 3):  # at each look the user's run of n = t: its batches for t, as BM's at that look
        a, b = rows[("BM", look)], rows[("MyBatchMeans", look)]
        # before n the checkpoint kernel groups BM's additions otherwise (rounding, ~1e-15); at n they are the run's
        assert a["coverage"] == b["coverage"] and a["length"] == pytest.approx(b["length"], rel=1e-9, abs=0)
        assert look < 3 or a["length"] == b["length"]


# --- the second example ----------------------------------------------------------------------------------------


def test_the_student_batch_means_interval_is_its_formula():
    module = user_methods.method_class(user_methods.canonical(T_BM))
    method = module(tbm_batches=4)

    class Setting:
        n, level = 40, 0.9

    state = method.state(Setting, 1, 1)
    np.testing.assert_array_equal(state.ends, [10, 20, 30, 40])
    update = user_methods.method_update.registry[type(state)]
    xs = np.arange(1.0, 41.0) ** 0.5
    for i, x in enumerate(xs, start=1):
        update(state, i, x)
    means = xs.reshape(4, 10).mean(axis=1)
    theta_bar = np.array([xs.mean()])
    lo, hi = method.interval(state, theta_bar, Setting)
    half = stats.t.ppf(0.95, 3) * means.std(ddof=1) / 2.0
    np.testing.assert_allclose([lo[0], hi[0]], [xs.mean() - half, xs.mean() + half], rtol=1e-13)


def test_student_batch_means_covers_iid_normal_means_at_its_level():
    # i.i.d. N(0, 1) "iterates": the batch means are exactly i.i.d. normal, so the t interval is exact
    module = user_methods.method_class(user_methods.canonical(T_BM))
    method = module(tbm_batches=5)

    class Setting:
        n, level = 50, 0.9

    gen = np.random.default_rng(1)
    covered = 0
    reps = 4000
    for _ in range(reps):
        state = method.state(Setting, 1, 1)
        update = user_methods.method_update.registry[type(state)]
        xs = gen.standard_normal(Setting.n)
        for i, x in enumerate(xs, start=1):
            update(state, i, x)
        lo, hi = method.interval(state, np.array([xs.mean()]), Setting)
        covered += lo[0] <= 0.0 <= hi[0]
    assert abs(covered / reps - 0.9) < 4 * np.sqrt(0.09 / reps)


# --- what cannot run says so in one line ----------------------------------------------------------------------

ERRORS = {
    "syntax": ("    def interval(self, state, theta_bar, setting):", "    def interval(self, state, theta_bar, setting)",
               r"line \d+: SyntaxError"),
    "import": ("import math\n", "import math\nraise ValueError('boom')\n", r"failed to load: ValueError: boom \(bad_bm.py"),
    "unregistered": ("@register_update(EqualBatches)\n", "", r"no update is registered for EqualBatches records: "
                                                             r"decorate it with @register_update\(EqualBatches\)$"),
    "state not a record": ("lane_array((self.batches, dim), lanes))", "lane_array((self.batches, dim), lanes))[:]",
                           r"state\(\) returned a tuple, not a NamedTuple record"),
    "update raises": ("    if i == state.ends[k]:", "    if i == state.nothing[k]:",
                      r"the update registered for EqualBatches failed: AttributeError: .*nothing.* "
                      r"\(bad_bm.py, line \d+\)$"),
    "no interval": ("    def interval(self, state, theta_bar, setting):", "    def interval_(self, state, theta_bar, setting):",
                    r"MyBatchMeans does not define interval\(\)$"),
    "validate": ("            raise ValueError(f\"n = {setting.n}", "            raise ValueError(f\"too short: n = {setting.n}",
                 None),
    "key of the run": ("class MyBatchMeans(IntervalMethod):\n", "class MyBatchMeans(IntervalMethod):\n"
                                                                "    def __init__(self, gamma=0.5):\n        pass\n",
                       r"its parameter 'gamma' has the name of the config key gamma; rename the parameter$"),
    "dims": ("class MyBatchMeans(IntervalMethod):\n", "class MyBatchMeans(IntervalMethod):\n    dims = (2,)\n",
             r"MyBatchMeans runs on models of dimension 2 \(MyBatchMeans.dims\), not d = 1 of model 'quantile'$"),
    "a built-in's name": ("class MyBatchMeans(IntervalMethod):\n", "class MyBatchMeans(IntervalMethod):\n"
                                                                   "    name = 'BM'\n",
                          r"MyBatchMeans.name = 'BM' is the name of a built-in method; give it another$"),
    "two of one name": ("class MyBatchMeans(IntervalMethod):\n", "class MyBatchMeans(IntervalMethod):\n"
                                                                  "    name = 'tBM'\n",
                        r"methods names two methods called 'tBM'"),
}


_OWN_STATE = ("unregistered", "state not a record", "update raises")  # t_batch_means.py's: a state and an update


@pytest.mark.parametrize("case", list(ERRORS))
def test_mistakes_in_a_method_file_are_one_line(tmp_path, case):
    old, new, pattern = ERRORS[case]
    spec = variant(tmp_path, old, new, source=T_SOURCE if case in _OWN_STATE else SOURCE)
    cfg = dict(QUICK, n=10) if case == "validate" else QUICK  # n = 10: one batch after the burn-in
    with pytest.raises(ConfigError, match=pattern or r"MyBatchMeans cannot run this setting: too short: n = 10 with "
                                                     r"gamma = 0.51 leaves fewer than two batches") as info:
        load_config(dict(cfg, methods=["BM", spec] + ([T_BM] if case == "two of one name" else [])))
    assert "\n" not in str(info.value)


def test_an_exception_in_interval_is_one_line_naming_the_line(tmp_path):
    spec = variant(tmp_path, "        sums = state.sums[1:]\n",
                   "        sums = state.sums[1:] / 0 + state.oops\n")
    with pytest.raises(ConfigError, match=r"MyBatchMeans.interval\(\) failed: AttributeError: .*oops.* "
                                          r"\(bad_bm.py, line \d+\)$"):
        ldpsim.run(dict(QUICK, reps=2, methods=["BM", spec]), progress=False)


def test_misnamed_files_and_classes_are_one_line(tmp_path):
    for text, pattern in ((f"{tmp_path}/nowhere.py:X", r"file '.*nowhere.py' not found$"),
                          (f"{EXAMPLES / 'my_batch_means.py'}:Nope", r"has no class 'Nope'; it defines MyBatchMeans$"),
                          (f"{EXAMPLES / 't_batch_means.py'}:EqualBatches",
                           r"EqualBatches is a class, not a subclass of ldpsim.extend.IntervalMethod$")):
        with pytest.raises(ConfigError, match=pattern) as info:
            load_config(dict(QUICK, methods=["BM", text]))
        assert "\n" not in str(info.value)


def test_where_a_users_method_cannot_run_is_one_line(tmp_path):
    looks_off = variant(tmp_path, "class MyBatchMeans(IntervalMethod):\n",
                        "class MyBatchMeans(IntervalMethod):\n    looks = False\n", "no_looks.py")
    with pytest.raises(ConfigError, match=r"has no interval at a look \(MyBatchMeans.looks = False\)"):
        load_config(dict(QUICK, methods=["BM", looks_off], looks=3))
    from ldpsim.studies.coverage.trace import resolve_trace

    with pytest.raises(ConfigError, match=r"a user's method: trace draws .* a user's method runs in `ldpsim run`$"):
        resolve_trace(dict(model="quantile", n=2000, methods=["BM", MY_BM]))
    with pytest.raises(ConfigError, match=r"methods contains"):
        load_config(dict(study="dpsgd", n=100, methods=["plugin", MY_BM]))


def test_the_api_takes_the_class_itself():
    from ldpsim.engine.runs import usercode

    module = usercode.load_file(EXAMPLES / "my_batch_means.py")
    by_class = load_config(dict(QUICK, methods=["BM", module.MyBatchMeans])).methods
    assert by_class == load_config(QUICK).methods


def test_a_method_file_in_a_config_is_found_from_the_configs_folder(tmp_path):
    relative = os.path.relpath(EXAMPLES / "my_batch_means.py", tmp_path)
    config = write(tmp_path, "c.yaml", f"model: quantile\nn: 4000\nreps: 2\nmethods: [BM, {relative}:MyBatchMeans]\n")
    methods = load_config(str(config)).methods
    assert methods[0] == "BM" and methods[1].startswith(str((EXAMPLES / "my_batch_means.py").resolve())
                                                         + ":MyBatchMeans#")


def test_code_numba_cannot_compile_is_at_most_15_lines_naming_the_place(tmp_path, capsys):
    from ldpsim.cli import main

    spec = variant(tmp_path, "    add_iterate(state.acc, theta)", "    add_iterate(state.acc, helper(theta))",
                   source=T_SOURCE)
    path = Path(spec.rpartition(":")[0])
    path.write_text(path.read_text().replace("@register_update(EqualBatches)", "def helper(x):\n    return x\n\n\n"
                                                                                "@register_update(EqualBatches)"))
    config = write(tmp_path, "c.yaml",
                   f"model: quantile\nn: 4000\nreps: 4\nmethods: [BM, {path.name}:StudentBatchMeans]\n")
    assert main(["run", str(config), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert 3 <= len(err) <= 15
    assert f"{path.name}, line" in err[0] and "does not compile into the kernels" in err[0]
    assert any("Untyped global name 'helper'" in ln for ln in err) and "NUMBA_DISABLE_JIT=1" in err[-1]


# --- no stale cache -------------------------------------------------------------------------------------------

_RUN = textwrap.dedent("""
    import json, sys, ldpsim
    rows = ldpsim.run(dict(model="quantile", n=4000, reps=8, seed=3, methods=["BM", sys.argv[1]]), progress=False,
                      n_jobs=1).rows
    print(json.dumps([rows[1]["length"], rows[0]["length"]]))
""")


@pytest.mark.slow  # subprocesses that compile the kernel for the user's record twice
def test_editing_the_update_gives_new_numbers_never_stale_code(tmp_path):
    path = write(tmp_path, "edited_bm.py", T_SOURCE)
    script = write(tmp_path, "run.py", _RUN)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}

    def lengths():
        done = subprocess.run([sys.executable, str(script), f"{path}:StudentBatchMeans"], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout)

    mine, builtin = lengths()
    # (a scale: the batch means' spread is blind to a shift of the iterates, not to a scale)
    path.write_text(T_SOURCE.replace("add_iterate(state.acc, theta)", "add_iterate(state.acc, 1.5 * theta)"))
    edited, builtin_again = lengths()  # the update is kernel code: a stale kernel would give the old length
    assert builtin_again == builtin and edited == pytest.approx(1.5 * mine, rel=1e-9) and edited != mine


def test_examples_are_documented():
    docs = (ROOT / "docs" / "extending.md").read_text()
    for name in ("my_batch_means.py", "t_batch_means.py", "MyBatchMeans", "StudentBatchMeans"):
        assert name in docs


def test_kernels_of_a_users_record_compile_here_not_in_a_worker():
    # a worker process cannot import a file this process loaded by path: such a kernel is compiled here
    import numba

    from ldpsim.engine.runs.compiling import Kernel, _portable
    from ldpsim.models import QuantileModel
    from ldpsim.recursion import kernels

    config = load_config(dict(QUICK, n=5000))
    makes, _ = _makes(T_BM, config.settings[0], 1)
    users = numba.typeof(makes[0](1))
    builtin = numba.typeof(QuantileModel(epsilon=1.0, tau=0.5).kernel_params())
    assert _portable(Kernel(kernels._scalar_path, (builtin,), False)) is not None
    assert _portable(Kernel(kernels._scalar_path, (builtin, users), False)) is None

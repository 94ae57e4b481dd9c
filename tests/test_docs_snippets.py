"""Every command and Python example of the README and the documentation runs.

The snippets are read from the pages themselves (indented and fenced code blocks, and inline code that
starts with a command), so a snippet added to a page is run without a line here, and one that stops
working fails. Each page's snippets run in order, in a sandbox folder that sees the repository's
``configs/``, ``examples/`` and ``scripts/`` and a copy of the committed runs a snippet names, so that
nothing in the repository is written.

How a snippet runs:

* ``python -m ldpsim run`` runs small: the config's replications and sizes cut down as
  ``tests/test_lanes.py`` cuts them (``--reps``, ``--n``, ``B``, ``T``, ...), everything else as
  written. Its config's kernels decide the tier: the quantile model's (compiled by the fast tier
  anyway) in the fast tier, the others (the method zoo, regression and online models, DP-SGD, SAGD,
  a user's model) in the slow tier. ``trace`` runs at n = 2000, ``audit`` at 1e4 draws, ``kernels
  --compile`` in the slow tier; ``table``, ``compare``, ``check``, ``keys``, ``kernels`` and ``fit``
  as written.
* A Python block runs as written; one that is an excerpt of a file in ``examples/`` (the tutorials
  quote them) is checked line by line against that file, which ``tests/test_extend.py`` runs.
* ``python scripts/...`` runs small in the slow tier, or, for the benchmarks and the scripts that
  install packages or rerun every committed run, prints its ``--help`` (their flags checked).
* A synopsis (``python -m ldpsim run CONFIG [--reps R] ...``) is checked against the parser: the
  command and each flag exist.
* Installing (``pip install``), the test suite itself (``pytest``), ``mkdocs`` (built by
  ``tests/test_docs_site.py``) and a dask scheduler and its workers (started by
  :func:`test_the_cluster_tutorial_runs_on_a_scheduler_and_workers` of this file) are not run per line.
"""

from __future__ import annotations

import csv
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from ldpsim.docgen import ROOT

#: The pages whose snippets run (docs/changelog.md and docs/contributing.md include CHANGELOG.md and CONTRIBUTING.md).
PAGES = ["README.md", "CONTRIBUTING.md"] + [str(p.relative_to(ROOT)) for p in sorted((ROOT / "docs").rglob("*.md"))
                                            if p.name not in ("changelog.md", "contributing.md")]

#: Configs whose kernels the fast tier compiles anyway: their snippets run there, small.
FAST_CONFIGS = {"configs/quantile.yaml", "configs/trajectory_quantile.yaml", "configs/sweep_gamma_beta.yaml",
                "configs/trace_quantile.yaml"}
#: What a small run keeps of a config (as tests/test_lanes.py's small committed configs).
SMALL = {"reps": 9, "n": 2000, "T": 300, "B": 50, "T2_max": 50}
#: Scripts that only print their --help here, and why.
HELP_ONLY = {
    "bench.py": "a benchmark: minutes of every core, its timings are the point",
    "bench_zoo.py": "a benchmark", "bench_dpsgd.py": "a benchmark", "bench_online.py": "a benchmark",
    "bench_sagd.py": "a benchmark", "lanes_breakdown.py": "a benchmark",
    "pilot_accuracy.py": "times a run of about 20 s per study against its estimate",
    "floors.py": "installs the oldest declared versions into a virtual environment",
}
#: Commands that are not run line by line, and why.
EXTERNAL = {
    "pip": "installs packages (the tests run in the installed environment)",
    "pytest": "the test suite itself",
    "mkdocs": "the documentation site: tests/test_docs_site.py builds it with --strict",
    "dask": "a scheduler and its workers: test_the_cluster_tutorial_runs_on_a_scheduler_and_workers",
    "venv": "creates a virtual environment",
    "cmp": "test_the_readme_first_command_gives_the_committed_table_1",
}


@dataclass(frozen=True)
class Snippet:
    page: str
    line: int
    kind: str  # "shell" or "python"
    text: str

    def __str__(self):
        return f"{self.page}:{self.line}: {self.text.splitlines()[0][:100]}"


_COMMAND = re.compile(r"^(\$ )?((LDPSIM_TRACEBACK|NUMBA_DISABLE_JIT)=\S+ )?"
                      r"(python3?|\.venv/bin/(python|dask)|dask|cmp)\b")
_INLINE = re.compile(r"`((?:\.venv/bin/)?python3? (?:-m ldpsim|scripts/)[^`]*)`")


def snippets(page: str) -> list[Snippet]:
    """The commands and Python blocks of a page, in order."""
    lines = (ROOT / page).read_text().splitlines()
    out, i, fenced = [], 0, None
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            lang, start, body = line[3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            if lang == "python":
                out.append(Snippet(page, start, "python", "\n".join(body)))
            i += 1
            continue
        if line.startswith("    ") and (i == 0 or not lines[i - 1].strip()) and _COMMAND.match(line.strip()):
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                text = lines[i].strip()
                while text.endswith("\\") and i + 1 < len(lines):  # a continued line
                    i += 1
                    text = text[:-1] + " " + lines[i].strip()
                if _COMMAND.match(text):
                    out += [Snippet(page, i + 1, "shell", part.strip()) for part in text.split(" && ")]
                i += 1
            continue
        for match in _INLINE.finditer(line):
            out += [Snippet(page, i + 1, "shell", part.strip()) for part in match.group(1).split(" && ")]
        i += 1
    return out


# --- plans: how each command runs ---

@dataclass
class Plan:
    tier: str  # "fast", "slow", "help", "synopsis", "external"
    run: object = None  # a callable (sandbox) -> None
    why: str = ""


def _words(text: str) -> tuple[dict, list[str]]:
    """Environment assignments and the words of one command (its comment dropped, the prompt too)."""
    text = text.removeprefix("$ ")
    words = shlex.split(text, comments=True)
    env = {}
    while words and re.fullmatch(r"[A-Z_]+=\S*", words[0]):
        key, _, value = words.pop(0).partition("=")
        env[key] = value
    if words and words[0] in ("python3", ".venv/bin/python"):
        words[0] = "python"
    return env, words


def _is_synopsis(words: list[str]) -> bool:
    """A command written with placeholders (CONFIG, DIR, [--reps R], ...), not to be run as it stands."""
    return any(w.startswith("[") or w == "..." or re.fullmatch(r"[A-Z][A-Z0-9_]*(=[A-Z_]+)?(\.csv|\.py:Class)?", w)
               for w in words)


def _flags_of(words: list[str]) -> list[str]:
    return [w.strip("[]").split("=")[0] for w in words if w.strip("[]").startswith("--")]


def _cli_parser():
    import argparse

    from ldpsim import cli

    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


def _check_synopsis(words: list[str]):
    def check(sandbox):
        if words[1:3] == ["-m", "ldpsim"]:
            commands = _cli_parser()
            if words[3] == "COMMAND":  # any command: the flags every one takes
                known = {"--help"}
            else:
                assert words[3] in commands, f"no command {words[3]}"
                known = {s for a in commands[words[3]]._actions for s in a.option_strings}
        else:  # a script
            proc = subprocess.run([sys.executable, str(ROOT / words[1]), "--help"], capture_output=True, text=True,
                                  cwd=sandbox, timeout=120)
            assert proc.returncode == 0, proc.stderr
            known = set(re.findall(r"--[\w-]+", proc.stdout))
        unknown = [f for f in _flags_of(words[2:]) if f not in known]
        assert not unknown, f"flags the command does not take: {unknown}"
    return check


def _copy_results(words: list[str], sandbox: Path) -> None:
    """The committed runs a command names (results/NAME), copied into the sandbox once."""
    for word in words:
        match = re.match(r"results/([\w.]+)", word)
        committed, copy = ROOT / "results" / (match.group(1) if match else ""), sandbox / "results" / (
            match.group(1) if match else "")
        if match and committed.is_dir() and not copy.exists():
            shutil.copytree(committed, copy, ignore=shutil.ignore_patterns("chunks"))


def _ldpsim(argv: list[str], env: dict, codes=(0,)):
    def run(sandbox):
        from ldpsim.cli import main

        _copy_results(argv, sandbox)
        old = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            code = main(argv)
        finally:
            for k, v in old.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        assert code in codes, f"exit status {code}"
    return run


#: A run this small (SGD steps in all) runs as written.
AS_WRITTEN = 2e8


def _steps(argv: list[str]) -> float:
    """The SGD steps of ``run CONFIG ...`` as written (its settings' n times the replications)."""
    import warnings

    import ldpsim
    from ldpsim import cli
    from ldpsim.engine.errors import ConfigWarning

    args = cli._parser().parse_args(argv)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConfigWarning)
        config = ldpsim.load_config(str(ROOT / args.config), overrides_from="--set", **cli._overrides(args))
    return float(sum(s.n for s in config.settings) * config.reps) if config.study.name == "coverage" else float("inf")


def _small_run(args: list[str]) -> tuple[list[str], str]:
    """``run CONFIG ...`` made small (unless it is small as written), and its tier."""
    config, rest = args[0], args[1:]
    user = any("examples/" in w for w in rest) or config.startswith("examples/")
    tier = "fast" if config in FAST_CONFIGS and not user else "slow"
    if "--n" in rest and "--reps" in rest and tier == "fast" and _steps(["run", *args]) <= AS_WRITTEN:
        kept = [w for i, w in enumerate(rest) if w != "--n-jobs" and (i == 0 or rest[i - 1] != "--n-jobs")]
        return ["run", config, *kept, "--quiet", "--n-jobs", "1"], tier
    kept, i, sets = [], 0, set()
    while i < len(rest):
        word = rest[i]
        if word in ("--reps", "--n-jobs", "--n"):
            i += 1
            while i < len(rest) and not rest[i].startswith("--"):
                i += 1
            continue
        if word == "--quiet":
            i += 1
            continue
        if word == "--set":
            sets.add(rest[i + 1].split("=")[0])
        kept.append(word)
        i += 1
    raw = yaml.safe_load((ROOT / config).read_text())
    study = raw.get("study", "coverage")
    extra = ["--reps", str(SMALL["reps"]), "--n", "200" if study.startswith("sagd") else str(SMALL["n"])]
    for key in ("T", "B", "T2_max"):
        if key in raw and key not in sets:
            extra += ["--set", f"{key}={SMALL[key]}"]
    if study == "trajectory" and "checkpoints" not in sets:
        extra += ["--set", "checkpoints=8"]
    if "first_look" in raw and "first_look" not in sets:
        extra += ["--set", "first_look=0"]
    if "ob_paths" not in sets and any(m in str(raw.get("methods", "")) for m in ("OB", "OB_split")):
        extra += ["--set", "ob_paths=5"]
    if "--out" not in kept:  # the default out, results/<stem>, may be a committed run's name: the sandbox's own
        extra += ["--out", f"results/{Path(config).stem}_small"]
    return ["run", config, *kept, *extra, "--quiet", "--n-jobs", "1"], tier


def plan(snippet: Snippet) -> Plan:
    """How a snippet runs (or why it is not run line by line)."""
    if snippet.kind == "python":
        return _python_plan(snippet)
    env, words = _words(snippet.text)
    if not words:
        return Plan("external", why="an empty line")
    head = words[0].rsplit("/", 1)[-1]
    if head in ("dask", "cmp") or words[:3] in (["python", "-m", "pip"], ["python", "-m", "pytest"],
                                               ["python", "-m", "mkdocs"], ["python", "-m", "venv"]):
        key = head if head in ("dask", "cmp") else words[2]
        return Plan("external", why=EXTERNAL[key])
    if _is_synopsis(words):
        return Plan("synopsis", _check_synopsis(words))
    if words[:2] == ["python", "-c"]:
        return Plan("fast", lambda sandbox: _subprocess(["python", *words[1:]], env, sandbox))
    if words[:3] == ["python", "-m", "ldpsim.docgen"]:
        from ldpsim import docgen

        return Plan("fast", lambda sandbox: _assert(docgen.main(["--check"]) == 0, "stale generated tables"))
    if words[0] == "python" and words[1].startswith("scripts/"):
        return _script_plan(words, env)
    if words[:3] == ["python", "-m", "ldpsim"]:
        return _ldpsim_plan(words[3:], env)
    raise AssertionError(f"{snippet}: no rule says how to run this snippet; add one to tests/test_docs_snippets.py")


def _assert(condition, message):
    assert condition, message


def _subprocess(words: list[str], env: dict, sandbox: Path):
    proc = subprocess.run([sys.executable, *words[1:]], cwd=sandbox, capture_output=True, text=True, timeout=1800,
                          env={**os.environ, **env})
    assert proc.returncode == 0, f"{' '.join(words)}: exit {proc.returncode}\n{proc.stderr[-2000:]}"


def _script_plan(words: list[str], env: dict) -> Plan:
    name = Path(words[1]).name
    if name in HELP_ONLY or (name == "reproduce_results.py" and len(words) == 2):
        why = HELP_ONLY.get(name, "reruns every committed run, about 50 minutes")
        return Plan("help", _check_synopsis(words), why=why)
    args = list(words[2:])
    if name == "audit_privacy.py":  # never the docs' table: printed, at 1e4 draws
        args = [a for i, a in enumerate(args) if a != "--draws" and (i == 0 or args[i - 1] != "--draws")]
        args += ["--draws", "1e4", "--no-write"] if "--no-write" not in args else ["--draws", "1e4"]
    if name == "trace_memory.py":
        args = ["--n", "1e4", "2e4"]
    if name == "path_curvature.py":  # one path per noise level, not four
        args = ["1"]
    return Plan("slow", lambda sandbox: _subprocess(["python", str(ROOT / words[1]), *args], env, sandbox))


def _ldpsim_plan(argv: list[str], env: dict) -> Plan:
    if not argv:  # `python -m ldpsim` named in a sentence: its help
        return Plan("fast", lambda sandbox: _subprocess(["python", "-m", "ldpsim", "--help"], env, sandbox))
    command = argv[0]
    if len(argv) == 1:  # `python -m ldpsim run` named in a sentence: the command exists
        return Plan("synopsis", _check_synopsis(["python", "-m", "ldpsim", command]))
    if command == "run":
        if "--scheduler" in argv:  # a cluster's scheduler: started by the cluster test
            return Plan("external", why=EXTERNAL["dask"])
        small, tier = _small_run(argv[1:])
        return Plan(tier, _ldpsim(small, env))
    if command == "trace":
        kept = [w for i, w in enumerate(argv) if w != "--n" and (i == 0 or argv[i - 1] != "--n")]
        return Plan("fast" if argv[1] in FAST_CONFIGS else "slow", _ldpsim(kept + ["--n", "2000"], env))
    if command == "kernels":
        return Plan("slow" if "--compile" in argv and argv[1] not in FAST_CONFIGS else "fast", _ldpsim(argv, env))
    if command == "audit":
        kept = [w for i, w in enumerate(argv) if w != "--draws" and (i == 0 or argv[i - 1] != "--draws")]
        return Plan("fast", _ldpsim(kept + ["--draws", "1e4"], env))
    if command == "check":
        return Plan("fast", _ldpsim(argv, env, codes=(0, 1)))  # 1: an assumption fails (the sweep's corner)
    if command in ("table", "compare", "keys", "fit"):
        return Plan("fast", _ldpsim(argv, env))
    raise AssertionError(f"no rule for python -m ldpsim {command}")


_EXAMPLES = {p: p.read_text() for p in sorted((ROOT / "examples").glob("*.py"))}


def _python_plan(snippet: Snippet) -> Plan:
    code = snippet.text
    significant = [line.split("#")[0].rstrip() for line in code.splitlines()]
    significant = [line.strip() for line in significant if line.strip() and line.strip() != "..."]
    # an excerpt of an example file: every line of it is in that file
    heads = [line for line in significant if line.startswith(("class ", "def ", "@"))]
    best = max(_EXAMPLES.values(), key=lambda text: sum(line in text for line in significant))
    source = best if heads and any(line in best for line in heads) else None
    if source is not None:
        def check(sandbox):
            missing = [line for line in significant if line not in source and not line.startswith(("from ", "import "))]
            assert not missing, f"lines not in the example file they quote: {missing}"
        return Plan("fast", check)

    def run(sandbox):
        _copy_results(re.findall(r"results/[\w.]+", code), sandbox)
        namespace = {"__name__": "__snippet__"}
        exec(compile(code, f"{snippet.page}:{snippet.line}", "exec"), namespace)
    return Plan("fast", run)


# --- the sandbox and the tests ---

@pytest.fixture
def sandbox(tmp_path, monkeypatch):
    for name in ("configs", "examples", "scripts"):
        (tmp_path / name).symlink_to(ROOT / name)
    (tmp_path / "results").mkdir()
    import numpy as np  # the data of the fit tutorial, for the pages that fit data.csv

    rng = np.random.default_rng(1)
    x1, x2 = rng.normal(size=2000), rng.normal(size=2000)
    np.savetxt(tmp_path / "data.csv", np.column_stack([1 + 2 * x1 - x2 + rng.normal(size=2000), x1, x2]),
               delimiter=",", header="y,x1,x2", comments="")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    return tmp_path


ALL = [s for page in PAGES for s in snippets(page)]


def test_every_snippet_has_a_plan():
    # a snippet no rule covers fails here, naming it: decide how it runs (or why it cannot) in this file
    plans = [plan(s) for s in ALL]
    assert {p.tier for p in plans} <= {"fast", "slow", "help", "synopsis", "external"}
    assert sum(p.tier == "fast" for p in plans) >= 30 and any(p.tier == "slow" for p in plans)
    assert len({s.text for s in ALL}) >= 60  # the pages hold this many distinct snippets: none was missed


def _run_page(page: str, tiers: tuple[str, ...], sandbox: Path):
    done = set()
    for snippet in snippets(page):
        p = plan(snippet)
        if p.tier not in tiers or (snippet.kind, snippet.text) in done:
            continue
        done.add((snippet.kind, snippet.text))
        try:
            p.run(sandbox)
        except BaseException as exc:
            raise AssertionError(f"{snippet}\n{type(exc).__name__}: {exc}") from exc


def _tier(snippet: Snippet) -> str:
    try:
        return plan(snippet).tier
    except Exception:  # test_every_snippet_has_a_plan names it
        return "fast"


FAST_PAGES = [p for p in PAGES if any(_tier(s) in ("fast", "synopsis") for s in snippets(p))]
SLOW_PAGES = [p for p in PAGES if any(_tier(s) in ("slow", "help") for s in snippets(p))]


@pytest.mark.filterwarnings("ignore::ldpsim.ConfigWarning")  # the sweep's corner lies outside the theory on purpose
@pytest.mark.parametrize("page", FAST_PAGES)
def test_the_snippets_of_a_page_run(page, sandbox):
    _run_page(page, ("fast", "synopsis"), sandbox)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::ldpsim.ConfigWarning")
@pytest.mark.parametrize("page", SLOW_PAGES)
def test_the_compile_heavy_snippets_of_a_page_run(page, sandbox):
    _run_page(page, ("slow", "help"), sandbox)


def _rows(path: Path, n: int) -> dict:
    with open(path) as fh:
        rows = [r for r in csv.DictReader(fh) if int(float(r.get("n", n))) == n]
    return {(r["tau"], r["method"]): {k: r[k] for k in ("coverage", "coverage_se", "length", "length_se", "bias", "sd")}
            for r in rows}


def test_the_readme_first_command_gives_the_committed_table_1(sandbox):
    # the README's first command, its n = 1e6 column (1e9 SGD steps): the committed numbers, to the last digit written
    readme = (ROOT / "README.md").read_text()
    first = next(line.strip() for line in readme.splitlines() if line.strip().startswith("python3 -m venv"))
    env, words = _words(first.split("&&")[-1])
    assert words[:5] == ["python", "-m", "ldpsim", "run", "configs/quantile.yaml"] and "--out" in words
    from ldpsim.cli import main

    out = words[words.index("--out") + 1]
    assert main(words[3:] + ["--n", "1e6", "--quiet"]) == 0
    assert f"cmp {out}/summary.csv results/quantile/summary.csv" in " ".join(readme.split())
    assert _rows(sandbox / out / "summary.csv", 10**6) == _rows(ROOT / "results" / "quantile" / "summary.csv", 10**6)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::ldpsim.ConfigWarning")  # the tutorial's grid crosses beta = gamma
def test_the_cluster_tutorial_runs_on_a_scheduler_and_workers(sandbox):
    # docs/tutorials/cluster.md, part 3: a scheduler and two workers of our own, on this machine, then the run
    pytest.importorskip("distributed")
    commands = [s.text for s in snippets("docs/tutorials/cluster.md")]
    scheduler = next(c for c in commands if "dask scheduler" in c)
    worker = next(c for c in commands if "dask worker" in c)
    run = next(c for c in commands if "--scheduler" in c and "ldpsim run" in c)
    dask = str(Path(sys.executable).parent / "dask")
    started = []
    try:
        started.append(subprocess.Popen([dask, *_words(scheduler)[1][1:]], cwd=sandbox, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL))
        for _ in range(120):
            if (sandbox / "scheduler.json").exists():
                break
            time.sleep(0.5)
        started.append(subprocess.Popen([dask, *_words(worker)[1][1:]], cwd=sandbox, stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL))
        argv, _ = _small_run(_words(run)[1][4:])
        _ldpsim(argv, {})(sandbox)
    finally:
        for proc in started:  # only the processes this test started
            proc.terminate()
        for proc in started:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()

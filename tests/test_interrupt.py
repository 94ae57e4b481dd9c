"""Stopping a run: SIGTERM and Ctrl-C stop it (its kernels included) and keep its finished chunks; compiling says
so and can be interrupted.

No timing is asserted: stopping is checked by a kernel returning at all (a guard of minutes against a run of
hours).
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time

import numpy as np
import pytest

from ldpsim.engine.dialect import interrupt
from ldpsim.engine.runs.config import ConfigError
from ldpsim.engine.dialect.rng import as_generator

from run_helpers import ROOT, TINY, api_run, checked_cli, cli, online_model, write


# --- signals stop a run, and leave what it finished ---------------------------------------------------------


def test_sigterm_is_handled_as_an_interrupt(tmp_path, capsys, monkeypatch):
    (tmp_path / "c.yaml").write_text(TINY)

    def terminated(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # a batch system's time limit, mid-run
        pytest.fail("SIGTERM did not stop the run")

    monkeypatch.setattr("ldpsim.engine.runs.run.simulate", terminated)
    handler = signal.getsignal(signal.SIGTERM)
    status, _, err = cli(capsys, "run", tmp_path / "c.yaml", "--out", tmp_path / "o", "--quiet")
    assert status == 143 and err == "ldpsim: terminated; finished chunks are saved, rerun with --resume to continue\n"
    assert signal.getsignal(signal.SIGTERM) == handler and not (tmp_path / "o").exists()


def _signal_when_running(signum, after=0.3):
    """Send ``signum`` to this process once a task runs (the kernel holds a worker thread, not the main one)."""
    def send():
        deadline = time.monotonic() + 300
        while interrupt._active == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(after)
        os.kill(os.getpid(), signum)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


#: A first setting that finishes at once, then one replication of 1e10 steps (minutes) to be interrupted.
LONG_REPLICATION = {"model": "mean", "n": [2000, 10 ** 10], "reps": 1, "seed": 5}


@pytest.mark.parametrize("n_jobs,backend", [(1, "loky"), (2, "threading")])
def test_sigterm_stops_a_long_replication_and_keeps_the_saved_chunks(tmp_path, capsys, n_jobs, backend):
    config = write(tmp_path, LONG_REPLICATION)
    sender = _signal_when_running(signal.SIGTERM)
    status, _, err = checked_cli(capsys, "run", config, "--out", tmp_path / "o", "--quiet", "--n-jobs", n_jobs,
                         "--backend", backend)
    sender.join()
    assert status == 143 and err.endswith("ldpsim: terminated; finished chunks are saved, rerun with --resume "
                                          "to continue\n"), err
    assert interrupt.wait_idle(60) and not interrupt.requested()  # no kernel left running in this process
    meta = json.loads((tmp_path / "o" / "meta.json").read_text())
    assert meta["status"] == "interrupted" and meta["invocations"][-1]["status"] == "interrupted"
    assert len(list((tmp_path / "o" / "chunks").glob("*.npz"))) == meta["invocations"][-1]["chunks_computed"] == 1


def test_ctrl_c_in_the_python_api_stops_the_kernel_of_this_process(tmp_path):
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)  # as in a terminal or a notebook
    try:
        sender = _signal_when_running(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            api_run(LONG_REPLICATION, out=tmp_path / "o")
        sender.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert interrupt.wait_idle(60) and not interrupt.requested()
    assert json.loads((tmp_path / "o" / "meta.json").read_text())["status"] == "interrupted"


def test_an_interrupted_threading_run_leaves_no_kernel_running(tmp_path):
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        sender = _signal_when_running(signal.SIGINT)
        with pytest.raises(KeyboardInterrupt):
            api_run({"model": "mean", "n": 10 ** 10, "reps": 2, "seed": 1}, n_jobs=2, backend="threading")
        sender.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    assert interrupt.wait_idle(60)  # the kernels of both threads stopped (they used to run to their end)


def test_sigterm_stops_a_trace(tmp_path, capsys):
    sender = _signal_when_running(signal.SIGTERM, after=0.0)
    # the trace's kernel runs in a task of its own: count it as one
    original = interrupt.in_worker_thread

    def counted(func, *args, **kwargs):
        def task(*a, **k):
            with interrupt.task():
                return func(*a, **k)
        return original(task, *args, **kwargs)

    try:
        interrupt.in_worker_thread = counted
        status, _, err = checked_cli(capsys, "trace", ROOT / "configs" / "trace_quantile.yaml", "--n", "1e11", "--out",
                             tmp_path / "o")
    finally:
        interrupt.in_worker_thread = original
    sender.join()
    assert status == 143 and err == "ldpsim: terminated\n"  # a trace saves nothing to resume
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("delay", [0.0, 0.05])
def test_sigterm_just_after_a_two_worker_run_finished_leaves_it_complete(tmp_path, delay):
    # it printed "wrote ...", then died of the signal during its exit (exit -15 or 143) with loky's raw warnings
    # about leaked semaphores and joblib's temporary folder
    import json
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    lines = []
    with subprocess.Popen([sys.executable, "-m", "ldpsim", "run", str(ROOT / "configs" / "quantile.yaml"), "--reps",
                           "16", "--n", "1e5", "--set", "tau=0.5", "--out", str(out), "--quiet", "--n-jobs", "2"],
                          stderr=subprocess.PIPE, text=True, cwd=tmp_path) as proc:
        for line in proc.stderr:
            lines.append(line)
            if line.startswith("ldpsim: wrote"):
                time.sleep(delay)
                proc.send_signal(signal.SIGTERM)
                break
        rest = proc.stderr.read()
        status = proc.wait(timeout=300)
    assert status == 0, "".join(lines) + rest
    assert rest.strip() == "" and "Warning" not in "".join(lines), "".join(lines) + rest
    assert json.loads((out / "meta.json").read_text())["status"] == "complete"
    assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN  # (this process's own handler is untouched)


# --- kernels stop when asked --------------------------------------------------------------------------------


def _kernels():
    """Calls of every path kernel that would take hours (1e12 steps) if it did not stop."""
    from ldpsim.inference.streaming import StreamLayout
    from ldpsim.models import QuantileModel, QuantileRegressionModel
    from ldpsim.models.erm import ErmModel
    from ldpsim.recursion.kernels import run_path
    from ldpsim.studies.coverage.trace import TraceLayout, run_trace
    from ldpsim.studies.dpsgd.kernel import draw_data, run_dpgd, run_dpsgd
    from ldpsim.studies.sagd.common import path_params
    from ldpsim.studies.sagd.kernel import LAP, PathParams, replicate_paths
    from ldpsim.studies.trajectory.kernel import run_trajectory

    n = 10 ** 12
    layout = StreamLayout.build(n, 0.75, 0.51, blocks=False, batches=False)
    data = draw_data(as_generator(1), "linear", np.eye(3), 50, 1.0)
    run = PathParams(LAP, n, 1, 25, 0.01, 0.1, 0.9, 0.9, 1.0, 0.0, n, True)
    return {
        "scalar path": lambda: run_path(QuantileModel(0.5, 1.0), as_generator(1), n, 1.0, 0.51, 0.0, layout),
        "vector path": lambda: run_path(QuantileRegressionModel(0.5, epsilon=1.0), as_generator(1), n, 1.0, 0.51,
                                        0.0, layout),
        "trajectory": lambda: run_trajectory(online_model(), as_generator(1), n, 0.2, 0.5, 0.0, np.array([10, n])),
        "trace": lambda: run_trace(QuantileModel(0.5, 1.0), as_generator(1), 1.0, 0.51, 0.0,
                                   TraceLayout.build(np.array([10, n]), 0.75, 0.51, blocks=False, batches=False)),
        "dpsgd": lambda: run_dpsgd(as_generator(1), *data[1:], "linear", "swor", n, 1, 0.2, 0.501, 1.0, 0.5, 0.0,
                                   layout),
        "dpgd": lambda: run_dpgd(as_generator(1), *data[1:], "linear", 10 ** 9, 0.5, 1.0, 0.1, 0.0),
        "sagd": lambda: replicate_paths(ErmModel("logistic", 5, nodes=8), as_generator(1), 50, [run], 0.0, [1.0],
                                        []),
    }


@pytest.mark.parametrize("kernel", sorted(_kernels()))
def test_every_kernel_stops_when_the_run_is_interrupted(kernel):
    call = _kernels()[kernel]
    outcome = []

    def target():
        try:
            call()
            outcome.append("returned")
        except interrupt.Interrupted:
            outcome.append("interrupted")
        except BaseException as exc:  # pragma: no cover - reported below
            outcome.append(repr(exc))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    try:
        time.sleep(0.3)  # compiled or not, the stop comes while (or before) the kernel runs
        interrupt.request_stop()
        thread.join(300)  # a guard against hours, not a timing
    finally:
        interrupt.clear()
    assert not thread.is_alive() and outcome == ["interrupted"], outcome


def test_a_stop_asked_of_an_earlier_run_does_not_stop_the_next(tmp_path):
    interrupt.request_stop()  # left over (a run interrupted in this process)
    assert api_run({"model": "mean", "n": 5000, "reps": 3}).meta["n_failed"] == 0
    assert not interrupt.requested()


# --- compiling: said, and stoppable -------------------------------------------------------------------------


def test_a_long_compilation_is_said_with_its_elapsed_time(monkeypatch):
    from ldpsim.engine.dialect import interrupt

    monkeypatch.setattr(interrupt, "COMPILE_NOTICE", 0.2)
    monkeypatch.setattr(interrupt, "COMPILE_REMINDER", 0.3)
    lines = []
    assert interrupt.while_compiling(lambda: time.sleep(0.9) or 42, lines.append, "the kernels of zoo_quantile") == 42
    assert lines[0].startswith("compiling the kernels of zoo_quantile: first run only, numba caches them (")
    assert any(line.startswith("still compiling the kernels of zoo_quantile (") for line in lines[1:-1])
    assert re.fullmatch(r"compiled the kernels of zoo_quantile in \d+ s", lines[-1])
    quiet = []  # a cached kernel loads at once: not a word
    interrupt.while_compiling(lambda: None, quiet.append)
    assert quiet == []


def test_an_error_while_compiling_reaches_the_caller():
    from ldpsim.engine.dialect import interrupt

    def fails():
        raise ConfigError("a user's model does not compile")

    with pytest.raises(ConfigError, match="does not compile"):
        interrupt.while_compiling(fails, lambda line: None)


def test_a_signal_during_compilation_stops_the_wait_within_a_second():
    # numba compiling in the main thread held SIGTERM for minutes (killed by SIGKILL), and an interrupt raised
    # inside its compiler left "no compiled object yet": the main thread now only waits
    import os
    import signal
    import threading

    from ldpsim.engine.dialect import interrupt

    class Stop(KeyboardInterrupt):
        pass

    def handler(signum, frame):  # as the CLI's SIGTERM handler (pytest-xdist's workers ignore SIGINT)
        raise Stop()

    previous = signal.signal(signal.SIGUSR1, handler)
    timer = threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGUSR1))
    start = time.monotonic()
    timer.start()
    try:
        with pytest.raises(Stop):
            interrupt.while_compiling(lambda: time.sleep(10), lambda line: None)
        assert time.monotonic() - start < 3  # (the compile would have taken 10 s)
    finally:
        timer.cancel()
        signal.signal(signal.SIGUSR1, previous)

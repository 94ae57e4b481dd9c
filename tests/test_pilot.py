"""The run-time estimate: a run beyond the limit is refused before any work (unless ``--allow-long``), from a
static model of every study's steps or, where it cannot decide, a pilot of the run's own kernels."""

from __future__ import annotations

import pytest

import ldpsim
from ldpsim.cli import main
from ldpsim.engine.runs.config import ConfigError

from run_helpers import ROOT, api_run, checked_cli, no_work, one_error_line, one_line_error_after_warnings, write


# --- a run of years is refused with its estimate ------------------------------------------------------------


LONG = [
    ("dpsgd", {"study": "dpsgd", "n": 200000, "kappa": 3}, "one replication alone takes"),
    ("sagd_concentration", {"study": "sagd_concentration", "T": 4e13, "n": 200, "oracle": "lap", "batch_size": 1,
                            "nodes": 8}, "years"),
    ("coverage", {"model": "quantile", "n": 1e13, "reps": 500}, "years"),
    ("trajectory", {"study": "trajectory", "model": "huber_mallows", "dim": 200, "n": 1e12, "reps": 100}, "years"),
]


@pytest.mark.parametrize("study,mapping,fragment", LONG, ids=[s for s, _, _ in LONG])
def test_a_run_of_years_is_refused_with_its_estimate(tmp_path, capsys, monkeypatch, study, mapping, fragment):
    no_work(monkeypatch)
    status, _, err = checked_cli(capsys, "run", write(tmp_path, mapping), "--out", tmp_path / "o", "--quiet")
    one_line_error_after_warnings(status, err, "this run would take about", fragment, "more than the limit of 7 days",
                   "--allow-long")
    assert not (tmp_path / "o").exists()
    with pytest.raises(ldpsim.ConfigError, match="this run would take about"):
        api_run(mapping)


def test_allow_long_lets_a_long_run_start(tmp_path, capsys, monkeypatch):
    started = []

    def stop_here(*args, **kwargs):
        started.append(True)
        raise KeyboardInterrupt

    monkeypatch.setattr("ldpsim.engine.runs.run.simulate", stop_here)
    config = write(tmp_path, LONG[0][1])
    status, _, err = checked_cli(capsys, "run", config, "--out", tmp_path / "o", "--quiet", "--allow-long")
    assert status == 130 and started
    with pytest.raises(KeyboardInterrupt):
        api_run(LONG[0][1], allow_long=True)
    with pytest.raises(ldpsim.ConfigError, match="allow_long = 'yes' is not True or False"):
        api_run(LONG[0][1], allow_long="yes")
    status, _, err = checked_cli(capsys, "run", config, "--set", "allow_long=true")
    one_line_error_after_warnings(status, err, "allow_long is not a config key; run takes it as --allow-long")


def test_a_trace_of_years_is_refused(tmp_path, capsys):
    status, _, err = checked_cli(capsys, "trace", ROOT / "configs" / "trace_quantile.yaml", "--n", "1e15", "--out",
                         tmp_path / "o")
    one_line_error_after_warnings(status, err, "would take about", "--allow-long")
    assert not (tmp_path / "o").exists()


# --- the static estimate counts every zoo method's passes ---------------------------------------------------


def test_the_static_time_estimate_counts_every_zoo_methods_pass():
    from ldpsim.studies.coverage.zoo import pass_factor, zoo_cost

    config = ldpsim.load_config(str(ROOT / "configs" / "zoo_quantile.yaml"))
    study, s = config.study, config.settings[0]
    plain = ldpsim.load_config({"model": "quantile", "n": s.n, "reps": 2, "epsilon": s.epsilon})
    ratio = study.seconds(s, config.options) / plain.study.seconds(plain.settings[0], plain.options)
    assert ratio == pytest.approx(zoo_cost(config.options)) and ratio > 200  # OB and OB_split: B + 1 paths each
    assert pass_factor("OB", {"ob_paths": 100}) == 101 and zoo_cost({"methods": ["BB", "SN"], "ob_paths": 100}) == 1


def test_a_zoo_config_far_beyond_the_limit_is_refused_without_allow_long(tmp_path, capsys, monkeypatch):
    # 5e6 replications were estimated at 11 hours (weeks in fact: OB's 100 perturbed paths) and started; now the
    # pilot refuses them (20 days, measured once on a loaded machine) after compiling the kernels for minutes,
    # so this test asks for 1e6 of n = 1e8, which the static model, counting every method's pass, refuses before
    # any work (2e4 days by it; without the zoo's passes it was 210 times less)
    monkeypatch.chdir(ROOT)
    assert main(["run", "configs/zoo_quantile.yaml", "--reps", "1000000", "--n", "1e8", "--out",
                 str(tmp_path / "r")]) == 2
    err = one_error_line(capsys)
    assert "--allow-long" in err, err
    assert not (tmp_path / "r").exists()


# --- a pilot of the run's own kernels (its accuracy: scripts/pilot_accuracy.py) -----------------------------


def test_the_time_check_pilots_only_where_the_static_model_cannot_decide(monkeypatch):
    # a run of about 23 hours was refused as "about 14 days" (the static model, 6-23 times too high for some
    # studies, 14-49 times too low for the zoo): between 1/100 and 100 times the limit a pilot decides
    from ldpsim.engine.runs import pilot

    def no_pilot(*args, **kwargs):
        raise AssertionError("piloted")

    monkeypatch.setattr(pilot, "measured_tasks", no_pilot)
    study_of = (lambda config: monkeypatch.setattr(config.study, "warm_up_units", lambda *a, **k: []) or config.study)
    small = ldpsim.load_config({"model": "quantile", "n": 1e5, "reps": 10})
    assert pilot.check_run_time(study_of(small), small, 1) < 1.0
    absurd = ldpsim.load_config({"model": "quantile", "n": 2 ** 52, "reps": 500})
    with pytest.raises(ConfigError, match=r"estimated from its steps and their cost measured on a 2-core laptop"):
        pilot.check_run_time(study_of(absurd), absurd, 1)
    close = ldpsim.load_config({"model": "quantile", "n": 3e10, "reps": 500})  # static: about 7 days on 2 workers
    static = pilot.check_time(pilot.static_tasks(close.study, close.settings, close.options, 500), 2, allow_long=True)
    assert pilot.MAX_RUN_SECONDS / 100 < static < 100 * pilot.MAX_RUN_SECONDS
    basis = "a pilot of its own kernels on this machine"
    monkeypatch.setattr(pilot, "measured_tasks", lambda *a, **k: ([(3600.0, 500)], basis, 0.0))
    with pytest.raises(ConfigError, match=rf"^this run would take about .* \(estimated from {basis}\), more than"):
        pilot.check_run_time(study_of(close), close, 2)
    monkeypatch.setattr(pilot, "measured_tasks", lambda *a, **k: ([(60.0, 500)], basis, 0.0))
    assert pilot.check_run_time(study_of(close), close, 2) <= 500 * 60.0


def test_the_pilot_fits_a_line_through_two_sizes_and_times_the_first_group_apart(monkeypatch):
    from ldpsim.engine.runs import pilot

    config = ldpsim.load_config({"model": "quantile", "n": 1e7, "reps": 100})
    study, (setting,) = config.study, config.settings
    calls = []

    def fake_run(study_, members, options, seed, start, stop, lanes):  # a group's seconds: 0.01 + 0.5 static
        calls.append((members[0].n, start))
        static = pilot._static(study_, members, options)
        return 0.01 + 0.5 * static + (0.2 * static if start == 0 else 0.0)

    monkeypatch.setattr(pilot, "_run", fake_run)
    found = pilot.pilot(study, [setting], config.options, 1, lanes=4)
    assert found.width == 4 and found.fixed == pytest.approx(0.01) and found.slope == pytest.approx(0.5)
    full = study.seconds(setting, config.options)
    assert found.per_replication(full) == pytest.approx((0.01 + 0.5 * full) / 4)
    assert found.first_extra(full) == pytest.approx(0.2 * full)
    sizes = sorted({n for n, _ in calls})
    assert sizes[0] >= 5000 and sizes[-1] < setting.n  # smaller copies, never the run itself
    tasks, basis, _ = pilot.measured_tasks(study, config.settings, config.options, 100, 1, lanes=4)
    assert tasks == [(pytest.approx(found.per_replication(full) + found.first_extra(full) / 100), 100)]
    assert basis == "a pilot of its own kernels on this machine"


def test_settings_that_differ_in_size_share_one_pilot_of_the_real_kernel():
    from ldpsim.engine.runs import pilot

    config = ldpsim.load_config({"model": "quantile", "n": [2e5, 1e6], "reps": 50, "methods": ["SN", "oracle"]})
    config.study.warm_up(config)
    tasks, _, others = pilot.measured_tasks(config.study, config.settings, config.options, 50, 1)
    assert others is None or 0.0 <= others <= (__import__("os").cpu_count() or 1)
    (small, reps), (large, _) = tasks
    assert reps == 50 and 0 < small < large < 1.0


@pytest.mark.parametrize("config_file, overrides", [
    ("quantile.yaml", {}), ("zoo_quantile.yaml", {}), ("trajectory_quantile.yaml", {}), ("dpsgd_valid.yaml", {}),
    ("sagd_rate.yaml", {}), ("sagd_concentration.yaml", {}), ("sagd_generalization.yaml", {}),
])
def test_every_study_has_a_pilot_copy_with_fewer_steps_of_the_same_kernels(config_file, overrides):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = ldpsim.load_config(str(ROOT / "configs" / config_file), **overrides)
    study = config.study
    for s in config.settings[:4]:
        copy = study.pilot_setting(s, config.options, 0.01)
        assert study.steps(copy) < study.steps(s) or study.steps(s) <= 5000, (s, copy)
        changed = {k for k, v in s.as_dict().items() if copy.as_dict()[k] != v}
        assert changed <= set(study.size_keys) | {"kappa", "accountant", "T_factor"}, changed
        assert study.pilot_setting(s, config.options, 1.0) is s

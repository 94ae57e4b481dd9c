"""The run-time estimate against the real wall time: one run of about 20 s per study.

For each run: the static model's estimate (steps times a per-step cost measured
once on a laptop), the pilot's (ldpsim.engine.runs.pilot: the run's own kernels on a
smaller copy of each class of settings, scaled by the static model), the pilot's
own seconds, and the run's wall time on the same workers (kernels compiled
beforehand, so that compilation is in neither). The pilot is asked to be
within a factor 2 of the wall time.

    python scripts/pilot_accuracy.py                 # every study, about 4 minutes on 2 cores
    python scripts/pilot_accuracy.py --only zoo      # runs whose label contains 'zoo'
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import ldpsim
from ldpsim.engine.runs import pilot
from ldpsim.engine.errors import ConfigWarning
from ldpsim.engine.runs.resources import check_time

ROOT = Path(__file__).resolve().parents[1]

#: label -> (config file, overrides): runs of about 20 s on 2 workers of the 2-core VM
RUNS = {
    "coverage quantile": ("quantile.yaml", {"n": [1e6, 1e7], "reps": 200}),
    "coverage quantile_regression": ("quantile_regression.yaml", {"n": 1e6, "reps": 400}),
    "coverage zoo_quantile": ("zoo_quantile.yaml", {"reps": 60, "epsilon": [1, "inf"]}),
    "trajectory": ("trajectory_quantile.yaml", {"reps": 1600}),
    "dpsgd": ("dpsgd.yaml", {"n": [500, 1000], "model": "linear", "design": "identity", "reps": 800}),
    "sagd_rate": ("sagd_rate.yaml", {"n": [1000, 10000], "model": "logistic", "reps": 120}),
    "sagd_concentration": ("sagd_concentration.yaml", {"sigma": [0.5, 2], "model": "logistic", "reps": 90}),
    "sagd_generalization": ("sagd_generalization.yaml", {"sigma": [0.01, 0.1], "model": "logistic", "reps": 100}),
}


def measure(label: str, config_file: str, overrides: dict, workers: int) -> dict:
    config = ldpsim.load_config(str(ROOT / "configs" / config_file), **overrides)
    study = config.study
    study.warm_up(config)  # compiled (or loaded) before any clock starts
    static = check_time(pilot.static_tasks(study, config.settings, config.options, config.reps), workers,
                        allow_long=True)
    tic = time.perf_counter()
    estimate = pilot.estimate_seconds(study, config, workers)
    spent = time.perf_counter() - tic
    tic = time.perf_counter()
    ldpsim.run(config, n_jobs=workers, progress=False)
    wall = time.perf_counter() - tic
    return {"run": label, "static_s": static, "pilot_s": estimate, "pilot_cost_s": spent, "wall_s": wall,
            "pilot_over_wall": estimate / wall, "static_over_wall": static / wall}


def main() -> None:
    warnings.simplefilter("ignore", ConfigWarning)  # (the configs' out-of-theory notes)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run only the runs whose label contains this")
    parser.add_argument("--n-jobs", type=int, default=2, help="workers (default 2)")
    args = parser.parse_args()
    rows = []
    for label, (config_file, overrides) in RUNS.items():
        if args.only and args.only not in label:
            continue
        row = measure(label, config_file, overrides, args.n_jobs)
        rows.append(row)
        print(f"{row['run']:<30} static {row['static_s']:8.1f} s  pilot {row['pilot_s']:6.1f} s (cost "
              f"{row['pilot_cost_s']:.2f} s)  wall {row['wall_s']:6.1f} s  pilot / wall {row['pilot_over_wall']:.2f}"
              f"  static / wall {row['static_over_wall']:.2f}", flush=True)
    bad = [r["run"] for r in rows if not 0.5 <= r["pilot_over_wall"] <= 2.0]
    print(f"pilot within a factor 2 of the wall time: {len(rows) - len(bad)} of {len(rows)}"
          + (f" (not: {', '.join(bad)})" if bad else ""))


if __name__ == "__main__":
    main()

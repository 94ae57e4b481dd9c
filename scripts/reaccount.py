"""Redo the privacy accounting of a finished dpsgd run: privacy.csv, the tables and meta.json's privacy entries.

The accounting depends on the settings alone (the noise, the steps, the
sampling), not on the replications, except for the clipping rates, which are
kept from the run's own privacy.csv. Runs made before the ``accountant`` key
existed were calibrated by the CLT: their config gains ``accountant: clt``
(and ``delta: 1e-5``, the delta they reported at), which is what they ran.

    python scripts/reaccount.py results/dpsgd results/dpsgd_iterations
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ldpsim.reporting.csvio import read_csv, write_csv
from ldpsim.studies.dpsgd.calibration import calibrate
from ldpsim.studies.dpsgd.summary import privacy_row

KEPT = ("clip_rate_path", "clip_rate_path_se", "clip_rate_star", "clip_rate_star_se")


def main(out: Path) -> None:
    meta_path = out / "meta.json"
    meta = json.loads(meta_path.read_text())
    values = meta["config"]
    if "accountant" not in values:
        values.update(accountant="clt", delta=1e-5, epsilon=None)
        meta.setdefault("notes", []).append("accountant: clt and delta: 1e-5 added by scripts/reaccount.py: the run "
                                            "was calibrated by the CLT, before the key existed")
    # the run's own command (meta.json's config lists per-model defaults such as clip as if they were grid axes)
    from ldpsim import api
    from ldpsim.cli import _overrides, _parser

    args = _parser().parse_args(meta["command"][1:])
    config = api.load_config(args.config, **_overrides(args))  # 002's configs now say accountant: clt
    old = read_csv(out / "privacy.csv")
    if len(old) != len(config.settings):
        raise SystemExit(f"{out}: {len(old)} rows in privacy.csv for {len(config.settings)} settings")
    keys = [k for k in config.varied if k != "n"]
    rows = []
    for setting, before in zip(config.settings, old):
        ident = {k: getattr(setting, k) for k in keys}
        row = privacy_row(ident, setting, config.options["methods"], calibrate(setting, config.options["methods"]),
                          _empty_chunk())
        if abs(row["sigma"] - float(before["sigma"])) > 1e-12 * row["sigma"]:
            raise SystemExit(f"{out}: sigma {row['sigma']} differs from the run's {before['sigma']}")
        row.update({k: float(before[k]) for k in KEPT})
        rows.append(row)
    write_csv(rows, out / "privacy.csv")
    meta["privacy"] = rows
    meta_path.write_text(json.dumps(meta, indent=2, default=str) + "\n")
    print(f"{out}: privacy.csv and meta.json re-accounted ({len(rows)} settings)")


def _empty_chunk():
    import numpy as np

    return {"ok": np.zeros(0, dtype=bool), "clip_path": np.zeros(0), "clip_star": np.zeros(0)}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path, help="directories of finished dpsgd runs")
    for run in parser.parse_args().runs:
        main(run)

"""Recompute summary.csv and the tables of a finished run from its saved chunks.

For when the reporting code gained a statistic after a long run: the chunks
hold every replication's theta_bar and interval ends, so the summary can be
redone without rerunning the paths. Chunk files are matched to the run's
settings by their replication ranges (one key per setting, in the order of
meta.json's settings); meta.json is left as the run wrote it.

    python scripts/resummarize.py results/quantile_regression
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

from ldpsim import config as cfg
from ldpsim.driver import chunk_size
from ldpsim.experiment import title_of, write_tables
from ldpsim.replication import ChunkResult
from ldpsim.summary import summarize, write_csv


def main(out: Path) -> None:
    meta = json.loads((out / "meta.json").read_text())
    config = cfg.resolve({k: v for k, v in meta["config"].items() if v is not None or k == "mechanism"})
    files = sorted((out / "chunks").glob("*.npz"))
    by_key: dict[str, list[Path]] = {}
    for f in files:
        by_key.setdefault(f.name.split("_")[0], []).append(f)
    results = []
    for setting in config.settings:
        size = min(config.reps, chunk_size(setting.n))
        matches = [fs for fs in by_key.values()
                   if len(fs) == -(-config.reps // size) and all(_range(f)[1] - _range(f)[0] <= size for f in fs)
                   and any(_range(f) == (0, size) for f in fs)]
        if len(matches) != 1:
            sys.exit(f"cannot tell the chunks of n = {setting.n} apart ({len(matches)} candidate keys)")
        parts = []
        for f in sorted(matches[0], key=_range):
            with np.load(f) as data:
                parts.append(ChunkResult(data["theta_bar"], data["bounds"], data["ok"]))
        results.append(ChunkResult.concatenate(parts))
    rows = summarize(config, results)
    write_csv(rows, out / "summary.csv")
    write_tables(out, rows, title_of(meta["name"], config.values, config.varied))
    print(f"rewrote {out / 'summary.csv'}, table.md, table.tex from {len(files)} chunks")


def _range(path: Path) -> tuple[int, int]:
    _, start, stop = path.stem.split("_")
    return int(start), int(stop)


if __name__ == "__main__":
    main(Path(sys.argv[1]))

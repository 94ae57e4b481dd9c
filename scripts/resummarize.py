"""Recompute summary.csv and the tables of a finished run from its saved chunks.

For when the reporting code gained a statistic after a long run: the chunks
hold every replication's arrays (for the coverage study theta_bar and the
interval ends), so the summary can be redone without rerunning the paths. Chunk files are matched to the run's
settings by their key if the compute code is unchanged since the run, else by
their replication ranges (one key per setting, in the order of meta.json's
settings); meta.json is left as the run wrote it.

    python scripts/resummarize.py results/quantile_regression
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ldpsim import studies as cfg
from ldpsim.engine.runs.chunks import chunk_key, chunk_size, concatenate, load_chunk
from ldpsim.reporting.csvio import write_csv


def main(out: Path) -> None:
    meta = json.loads((out / "meta.json").read_text())
    config = cfg.resolve({k: v for k, v in meta["config"].items() if v is not None or k == "mechanism"})
    files = sorted((out / "chunks").glob("*.npz"))
    by_key: dict[str, list[Path]] = {}
    for f in files:
        by_key.setdefault(f.name.split("_")[0], []).append(f)
    results = []
    for setting in config.settings:
        key = chunk_key(config.study, setting, config)
        if key in by_key:
            results.append(concatenate([load_chunk(f) for f in sorted(by_key[key], key=_range)]))
            continue
        size = min(config.reps, chunk_size(config.study.steps(setting)))
        matches = [fs for fs in by_key.values()
                   if len(fs) == -(-config.reps // size) and all(_range(f)[1] - _range(f)[0] <= size for f in fs)
                   and any(_range(f) == (0, size) for f in fs)]
        if len(matches) != 1:
            sys.exit(f"cannot tell the chunks of n = {setting.n} apart ({len(matches)} candidate keys)")
        results.append(concatenate([load_chunk(f) for f in sorted(matches[0], key=_range)]))
    tables = config.study.summarize(config, results)
    for name, rows in tables.items():
        write_csv(rows, out / f"{name}.csv")
    written = config.study.write_outputs(out, tables, meta)
    print(f"rewrote {', '.join(f'{name}.csv' for name in tables)}, {', '.join(written)} in {out} "
          f"from {len(files)} chunks")


def _range(path: Path) -> tuple[int, int]:
    _, start, stop = path.stem.split("_")
    return int(start), int(stop)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="directory of a finished run, with its chunks/")
    main(parser.parse_args().run)

"""Rerun committed results and check that their CSV tables reproduce byte for byte.

For each ``results/<name>/`` (or those named on the command line) this reruns
the command its ``meta.json`` records, into a scratch directory, and compares
every committed CSV table (``summary.csv``, ``rates.csv``, ``trace.csv``, and a run with looks'
``looks.csv`` and ``uniform.csv``)
with the rerun's. It is the check that a change of code changed no number:

    python scripts/reproduce_results.py                 # every run (about 50 minutes on 2 cores)
    python scripts/reproduce_results.py sweep_gamma_beta nonprivate

Exit status 0 if every table is identical, 1 if one differs.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("summary.csv", "rates.csv", "trace.csv", "looks.csv", "uniform.csv")


def rerun(run_dir: Path, scratch: Path) -> tuple[bool, str]:
    meta = json.loads((run_dir / "meta.json").read_text())
    if isinstance(meta["command"], str):  # a script's output (results/accountants): not an ldpsim run
        return True, f"{run_dir.name}: made by `{meta['command']}`, not by ldpsim's CLI: not rerun here"
    command = list(meta["command"])
    if command[0] == "ldpsim":
        command = command[1:]
    for flag in ("--out", "--resume"):  # always a fresh directory
        if flag in command:
            i = command.index(flag)
            del command[i: i + (2 if flag == "--out" else 1)]
    out = scratch / run_dir.name
    tic = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "ldpsim", *command, "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - tic
    if proc.returncode != 0:
        return False, f"{run_dir.name}: rerun failed ({proc.stderr.strip().splitlines()[-1:]})"
    lines, same = [], True
    for name in TABLES:
        if (run_dir / name).exists():
            equal = (out / name).exists() and (out / name).read_bytes() == (run_dir / name).read_bytes()
            same &= equal
            lines.append(f"{name} {'identical' if equal else 'DIFFERS'}")
    return same, f"{run_dir.name}: {', '.join(lines)} ({' '.join(command)}; {seconds:.0f} s)"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="names under results/ (default: all)")
    args = parser.parse_args(argv)
    runs = [ROOT / "results" / name for name in args.runs] or sorted(
        p for p in (ROOT / "results").iterdir() if (p / "meta.json").exists())
    ok = True
    with tempfile.TemporaryDirectory() as scratch:
        for run_dir in runs:
            same, line = rerun(run_dir, Path(scratch))
            ok &= same
            print(line, flush=True)
    print("all identical" if ok else "SOME TABLES DIFFER")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

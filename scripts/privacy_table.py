"""What the CLT costs: epsilon by the CLT, PLD and RDP for one noise, and the noise each needs for one target.

For DP-SGD with Poisson batches (add/remove neighbours) over a grid of steps
T (1e2 .. 1e6), sampling rates q (1e-3 .. 0.1) and delta (1e-5, 1e-8), and for
Xia, Zhang & Cai's own settings (batches of one without replacement, replace-one
neighbours, T = n^2, n = 500 .. 1500): the noise multiplier sigma_CLT that
the CLT of Bu et al. calibrates for epsilon = TARGET, the epsilon that PLD
and RDP (dp-accounting, valid upper bounds) give for that same noise, and
the noise each valid accountant needs for the target (how much more noise an
honest guarantee costs). Writes ``results/accountants/accountants.csv`` and
``table.md`` (copied into docs/privacy.md).

    python scripts/privacy_table.py            # about 10 minutes on 2 cores, cached afterwards
    python scripts/privacy_table.py --table    # table.md redrawn from accountants.csv, nothing computed
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

from ldpsim.privacy.accountants import calibrate_sigma, epsilon_pair
from ldpsim.reporting.csvio import read_csv, write_csv

TARGET = 3.0
STEPS = (100, 1_000, 10_000, 100_000, 1_000_000)
RATES = (0.001, 0.01, 0.1)
DELTAS = (1e-5, 1e-8)
#: Xia, Zhang & Cai's Figure 2: mu = 2 is epsilon 10.0 at 1e-5 by the CLT; batches of 1 of n, T = n^2
PAPER = ((500, 250_000), (1000, 1_000_000), (1500, 2_250_000))
PAPER_TARGET = 10.0


def row(sampling, steps, n, m, delta, target, valid):
    sigma_clt = calibrate_sigma(target, delta, "clt", sampling, steps, n, m)
    out = {"sampling": sampling, "T": steps, "q": m / n, "n": n, "m": m, "delta": delta, "target": target,
           "sigma_clt": sigma_clt}
    for name in ("pld", "rdp"):
        if name in valid:
            out[f"eps_{name}_at_sigma_clt"] = epsilon_pair(name, sampling, sigma_clt, steps, n, m, delta)[0]
            sigma = calibrate_sigma(target, delta, name, sampling, steps, n, m)
            out[f"sigma_{name}"] = sigma
            out[f"noise_ratio_{name}"] = sigma / sigma_clt
        else:
            out[f"eps_{name}_at_sigma_clt"] = out[f"sigma_{name}"] = out[f"noise_ratio_{name}"] = float("nan")
    return out


def fmt(x, digits=3):
    return "-" if x != x else f"{x:.{digits}g}"


def markdown(rows) -> str:
    head = ("| sampling | T | q | delta | sigma (CLT) | eps PLD at it | eps RDP at it | sigma PLD | sigma RDP | "
            "noise x (valid / CLT) |\n|---|---|---|---|---|---|---|---|---|---|\n")
    lines = []
    for r in rows:
        valid = r["sigma_pld"] if r["sigma_pld"] == r["sigma_pld"] else r["sigma_rdp"]
        lines.append(f"| {r['sampling']} | {r['T']:,} | {r['q']:g} | {r['delta']:g} | {fmt(r['sigma_clt'], 4)} | "
                     f"{fmt(r['eps_pld_at_sigma_clt'])} | {fmt(r['eps_rdp_at_sigma_clt'])} | {fmt(r['sigma_pld'], 4)} "
                     f"| {fmt(r['sigma_rdp'], 4)} | {fmt(valid / r['sigma_clt'])} |")
    return head + "\n".join(lines) + "\n"


def render(rows) -> str:
    """``table.md``: the Poisson grid, then the paper's settings."""
    table = markdown([r for r in rows if r["sampling"] == "poisson"])
    paper = markdown([r for r in rows if r["sampling"] == "swor"])
    return (f"# epsilon = {TARGET:g}: the CLT's noise, what valid accountants say of it, and the noise they need\n\n"
            f"Poisson batches, n = 1e5 (add/remove neighbours):\n\n{table}\n"
            f"Figure 2 of Xia, Zhang & Cai 2025 (batches of one without replacement, T = n^2, "
            f"epsilon = {PAPER_TARGET:g} at 1e-5; replace-one neighbours: no PLD in dp-accounting):\n\n{paper}")


def main(table_only: bool = False) -> None:
    out = Path("results/accountants")
    if table_only:  # the committed numbers, drawn again: accountants.csv and meta.json are left as they are
        (out / "table.md").write_text(render(read_csv(out / "accountants.csv", text_columns=("sampling",))))
        print((out / "table.md").read_text())
        return
    out.mkdir(parents=True, exist_ok=True)
    tic = time.time()
    rows = []
    for delta in DELTAS:
        for q in RATES:
            for steps in STEPS:
                n = 100_000
                rows.append(row("poisson", steps, n, round(q * n), delta, TARGET, ("pld", "rdp")))
                print(f"poisson q = {q:g}, T = {steps:.0e}, delta = {delta:g}: {time.time() - tic:.0f} s", file=sys.stderr)
    for n, steps in PAPER:
        rows.append(row("swor", steps, n, 1, 1e-5, PAPER_TARGET, ("rdp",)))
    write_csv(rows, out / "accountants.csv")
    (out / "table.md").write_text(render(rows))
    (out / "meta.json").write_text(json.dumps({"command": "python scripts/privacy_table.py",
                                               "wall_time_s": round(time.time() - tic, 1),
                                               "machine": platform.platform()}, indent=2) + "\n")
    print((out / "table.md").read_text())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", action="store_true",
                        help="redraw table.md from the committed accountants.csv (no accounting)")
    args = parser.parse_args()  # --help before minutes of work
    main(table_only=args.table)

"""``table.md`` of the SAGD studies: the privacy header, the theorems' conditions, the results with SEs."""

from __future__ import annotations

import math

from tabulate import tabulate

from ...reporting.rates import format_rate


def _num(x, digits: int = 4) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, bool):
        return "yes" if x else "no"
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    if isinstance(x, int):
        return f"{x:,}"
    return f"{x:.{digits}g}"


def _cell(mean, se, digits: int = 3) -> str:
    if mean is None or (isinstance(mean, float) and not math.isfinite(mean)):
        return "-"
    return f"{mean:.{digits}g} ({_num(se, 2)})"


def _keys(rows, before: str, skip=()) -> list[str]:
    columns = list(rows[0]) if rows else []
    return [c for c in columns[: columns.index(before)] if c not in skip] if before in columns else []


def _table(body, head) -> str:
    return tabulate(body, head, tablefmt="github", disable_numparse=True) + "\n"


def _guarantee_text(p: dict) -> str:
    """``epsilon = 0.2064 at delta = 1e-05 (PLD; Thm 3.20 0.3077, PLD / Thm 3.20 = 0.67; basic 1.335)``."""
    text = f"epsilon = {_num(p['epsilon'])} at delta = {_num(p['delta'])}"
    if "epsilon_pld" not in p:  # a table written before the PLD column: Theorem 3.20 alone
        return f"{text} by Thm 3.20 (basic composition {_num(p['epsilon_basic'])})"
    ratio = p["epsilon_pld"] / p["epsilon_advanced"] if p["epsilon_advanced"] > 0 else math.nan
    return (f"{text} ({p['accountant']}; Thm 3.20 {_num(p['epsilon_advanced'])}, PLD / Thm 3.20 = "
            f"{_num(ratio, 2)}; basic {_num(p['epsilon_basic'])})")


def privacy_lines(privacy: list[dict], label: str = "oracle") -> list[str]:
    """One line per setting: the guarantee (the tightest valid accountant) beside the lemma's printed value."""
    lines = []
    for p in privacy:
        who = p.get(label, p.get("method"))
        extra = ", ".join(f"{k} = {_num(p[k])}" for k in p if k in ("model", "d", "n", "sigma", "threshold"))
        if who in ("lap", "sagd_lap"):
            text = (f"DPG-Lap ({extra}): {_num(p['compositions'])} steps of eps0 = 2 G1 / (n sigma) = "
                    f"{_num(p['epsilon_step'])}: {_guarantee_text(p)}; Lemma 2 as printed "
                    f"{_num(p['epsilon_lemma'])}, its proof's last line {_num(p['epsilon_lemma_proof'])}")
        else:
            paid = ""
            if "queries" in p:
                paid = f"; privacy-paying queries {_cell(p['queries'], p.get('queries_se'))} of T = {_num(p['T'])}"
            text = (f"DPG-Sparse ({extra}): budget C_s = {_num(p['compositions'])} answers of "
                    f"{_num(p['epsilon_step'])} each (AboveThreshold + Laplace, for S1): {_guarantee_text(p)}; "
                    f"Lemma 3 as printed {_num(p['epsilon_lemma'])}{paid}")
        lines.append("- " + text)
    return lines


def render_concentration(tables: dict, title: str | None = None) -> str:
    """Frequencies against the bound, per oracle: sigma rows, mu columns; then the parts and the conditions."""
    rows, privacy = tables["summary"], tables.get("privacy", [])
    keys = _keys(rows, "oracle")
    parts = [f"# {title}\n"] if title else []
    parts.append("Privacy per setting (docs/corrections.md items 18-20):\n")
    parts.append("\n".join(privacy_lines(privacy)) + "\n")
    parts.append("Frequency of ||g~_t - grad f(w_t)|| >= sqrt(d) sigma (1 + mu) over all steps and replications "
                 "(cluster SE), and the bound d beta + d e^-mu of Theorems 1 and 3; `!` marks a frequency above "
                 "the bound by more than 2 SE.\n")
    mus = sorted({r["mu"] for r in rows})
    groups: dict[tuple, dict] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys) + (r["oracle"], r["sigma"]), {})[r["mu"]] = r
    body, above = [], 0
    for ident, by_mu in groups.items():
        cells = []
        for mu in mus:
            r = by_mu.get(mu)
            if r is None:
                cells.append("")
                continue
            se = r["frequency_se"] if math.isfinite(r["frequency_se"]) else 0.0
            flag = "!" if r["frequency"] > r["bound"] + 2.0 * se else ""
            above += bool(flag)
            cells.append(f"{_cell(r['frequency'], r['frequency_se'])} / {r['bound']:.3g}{flag}")
        first = next(iter(by_mu.values()))
        body.append(list(ident) + [_num(first["T"]), _num(first["theorem_ok"]), _num(first["lemma1_ok"])] + cells)
    parts.append(_table(body, keys + ["oracle", "sigma", "T", "theorem's range", "Lemma 1"]
                        + [f"mu = {m:g}: freq (SE) / bound" for m in mus]))
    parts.append(f"Cells above the bound by more than 2 SE: {above} of {sum(len(g) for g in groups.values())}.\n")

    parts.append("The proofs' two parts: empirical error ||g~_t - g^_t|| >= sqrt(d) sigma mu against d e^-mu "
                 "(g^ = g^_S1 for DPG-Sparse), and generalization error ||g^_t - grad f(w_t)|| >= sqrt(d) sigma "
                 "against d beta.\n")
    body = []
    for ident, by_mu in groups.items():
        first = next(iter(by_mu.values()))
        body.append(list(ident) + [_cell(first["frequency_generalization"], first["frequency_generalization_se"])
                                   + f" / {first['bound_generalization']:.3g}"]
                    + [_cell(by_mu[m]["frequency_empirical"], by_mu[m]["frequency_empirical_se"])
                       + f" / {by_mu[m]['bound_empirical']:.3g}" if m in by_mu else "" for m in mus])
    parts.append(_table(body, keys + ["oracle", "sigma", "generalization / d beta"]
                        + [f"mu = {m:g}: empirical / d e^-mu" for m in mus]))

    if privacy:
        parts.append("Conditions. Printed: Theorem 1's 2 n sigma^2 / G1^2 <= T <= n^2 sigma^4 / (169 ln(1/(sigma beta)) "
                     "G1^2), Theorem 3's n sigma^2 / (2 G1^2) <= C_s <= n^2 sigma^4 / (676 ln(1/(sigma beta)) G1^2). "
                     "Derived (Lemma 1 with the transfer theorem's own conditions): tau = sigma / W, "
                     "delta* = tau beta / (26 ln(26/tau)), epsilon at delta* (the tightest valid accountant) <= tau / 13 and "
                     "n_protected >= 2 ln(8/delta*) / (tau/13)^2.\n")
        pkeys = _keys(privacy, "oracle")
        body = []
        for p in privacy:
            used = p["T"] if p["oracle"] == "lap" else p["budget"]
            body.append([p[k] for k in pkeys] + [p["oracle"], p["sigma"], p["theorem"], _num(used),
                                                 f"[{_num(p['range_lo'])}, {_num(p['range_hi'])}]"
                                                 + (" (empty)" if p["range_lo"] > p["range_hi"] else ""),
                                                 _num(p["theorem_ok"]), _num(p["tau"]), _num(p["delta_star"]),
                                                 _num(p["epsilon_star"]), _num(p["epsilon_max"]),
                                                 f"{_num(p['n_protected'])} vs {_num(p['n_min'])}",
                                                 _num(p["lemma1_ok"]) + (" (tau >= 1)" if p["lemma1_vacuous"] in (True, "True") else "")])
        parts.append(_table(body, pkeys + ["oracle", "sigma", "theorem", "T or C_s", "printed range", "holds",
                                           "tau", "delta*", "eps(delta*)", "tau/13", "n_protected vs n_min",
                                           "Lemma 1 holds"]))
    failed = {r["n_failed"] for r in rows}
    if failed != {0}:
        parts.append(f"Failed (diverged) replications, excluded: {', '.join(str(f) for f in sorted(failed))}.\n")
    return "\n".join(parts)


def render_rate(tables: dict, title: str | None = None) -> str:
    """Fitted exponents next to -2/3, then the values per n with the schedule and privacy."""
    rows, rates, privacy = tables["summary"], tables.get("rates", []), tables.get("privacy", [])
    parts = [f"# {title}\n"] if title else []
    parts.append("Exponent of n: least-squares slope of log E[.] against log n over the grid, 95% delta-method "
                 "interval; theory -2/3 (Theorems 2 and 4, logarithmic factors aside). `min`: min_t ||grad f(w_t)||^2 "
                 "(the theorems' quantity); `mean`: (1/T) sum_t ||grad f(w_t)||^2 (what Theorem 7's proof bounds).\n")
    if rates:
        keys = _keys(rates, "estimator")
        body = [[r[k] for k in keys] + [r["estimator"], format_rate(r), f"{r['theory']:.4g}",
                                        f"{_num(r['n_from'])} - {_num(r['n_to'])} ({r['points']})"] for r in rates]
        parts.append(_table(body, keys + ["estimator", "slope [95% CI]", "theory", "n range (points)"]))
    keys = _keys(rows, "estimator")
    groups: dict[tuple, dict] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys) + (r["n"],), {})[r["estimator"]] = r
    body = []
    for ident, by_est in groups.items():
        first = next(iter(by_est.values()))
        body.append(list(ident) + [_num(first["sigma"]), _num(first["T"]), _num(first["steps"])]
                    + [_cell(by_est[e]["grad_norm2"], by_est[e]["grad_norm2_se"]) if e in by_est else "-"
                       for e in ("min", "mean")]
                    + [_cell(first["queries"], first["queries_se"]) if first["oracle"] == "sparse" else "-",
                       _num(first["epsilon"])])
    parts.append("Per n: sigma = n^-1/3, T (theorem's T x T_factor), steps done, E[min_t ||grad f||^2] and "
                 "E[mean_t ||grad f||^2] (SE), privacy-paying queries (DPG-Sparse), epsilon (the tightest valid accountant "
                 "of the privacy lines below).\n")
    parts.append(_table(body, keys + ["n", "sigma", "T", "steps", "min_t ||grad f||^2", "mean_t ||grad f||^2",
                                      "queries", "epsilon"]))
    if privacy:
        parts.append("Privacy per setting:\n")
        parts.append("\n".join(privacy_lines(privacy)) + "\n")
        t_theorem = ", ".join(f"{p['oracle']} n = {p['n']}: {p['T_theorem']:.3g}" for p in privacy)
        parts.append(f"The theorems' own T (before T_factor): {t_theorem}.\n")
    return "\n".join(parts)


def render_generalization(tables: dict, title: str | None = None) -> str:
    """Overfitting per method (final test loss, its rise, the gap, against RMSprop), then losses by epoch."""
    rows, overfit, privacy = tables["summary"], tables.get("overfit", []), tables.get("privacy", [])
    parts = [f"# {title}\n"] if title else []
    if privacy:
        parts.append("Privacy of the SAGD runs:\n")
        parts.append("\n".join(privacy_lines(privacy, "method")) + "\n")
    keys = _keys(overfit, "method")
    parts.append("Per method, on the same training sets (mean (SE) over replications): test loss (population, "
                 "exact) at the last epoch, its minimum along the path, rise = final - minimum, generalization gap "
                 "(test - train) at the last epoch, final test loss minus RMSprop's (paired).\n")
    body = [[r[k] for k in keys] + [r["method"], _cell(r["final_test"], r["final_test_se"], 4),
                                    _cell(r["min_test"], r["min_test_se"], 4), _cell(r["rise"], r["rise_se"]),
                                    _cell(r["final_gap"], r["final_gap_se"]),
                                    _cell(r.get("vs_rmsprop", math.nan), r.get("vs_rmsprop_se", math.nan)),
                                    _num(r["f_star"])] for r in overfit]
    parts.append(_table(body, keys + ["method", "final test", "min test", "rise", "final gap", "vs RMSprop",
                                      "f*"]))
    epochs = sorted({r["epoch"] for r in rows})
    shown = sorted({epochs[round(i * (len(epochs) - 1) / 4)] for i in range(5)})
    keys = _keys(rows, "method")
    groups: dict[tuple, dict] = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in keys) + (r["method"],), {})[r["epoch"]] = r
    body = [list(ident) + [f"{_cell(by_e[e]['train_loss'], by_e[e]['train_loss_se'])} / "
                           f"{_cell(by_e[e]['test_loss'], by_e[e]['test_loss_se'])}" for e in shown]
            for ident, by_e in groups.items()]
    parts.append("Train / test loss (SE) by epoch; every recorded epoch is in summary.csv.\n")
    parts.append(_table(body, keys + ["method"] + [f"epoch {e}" for e in shown]))
    return "\n".join(parts)


__all__ = ["privacy_lines", "render_concentration", "render_generalization", "render_rate"]

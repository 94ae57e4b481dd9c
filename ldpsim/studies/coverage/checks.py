"""Which assumptions of the block-bootstrap theorem a config meets, before any run.

``python -m ldpsim check CONFIG`` prints, for each distinct combination of
the keys that enter the assumptions (``n``, ``B``, ``level`` and ``theta0``
do not), a verdict on each condition of Theorem 3.2 of Dette & Graw (000):

* ``gamma`` in (1/2, 1) (Assumption A.1 (5));
* ``gamma < beta``, so that blocks of length ``l = floor(n^beta)`` and
  ``m = n / l`` blocks satisfy ``m^gamma l^(gamma - 1) -> 0`` (Remark 3.1 (a));
* bounded multipliers (``|epsilon_i| <= C``): uniform, Rademacher and Mammen
  are bounded, Gaussian is not;
* condition (14) of Assumption A.2 (5), checked numerically for every
  eigenvalue of ``G`` (:func:`condition14`);
* for private settings, the privacy guarantee (information, not a verdict).

:func:`check_config` returns the verdicts; the CLI prints them and exits with
status 0 if every condition holds, 1 if one fails, 2 on bad input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ...engine.runs.usercode import display
from ...engine.runs.config import Config, Setting
from ...inference.intervals import uses_blocks
from ...models import build_model

#: Multiplier laws with bounded support (Theorem 3.2 asks ``|epsilon_i| <= C``).
BOUNDED_MULTIPLIERS = {
    "uniform": "uniform on [-sqrt(3), sqrt(3)]",
    "rademacher": "+-1",
    "mammen": "two-point, |eps| <= (1 + sqrt 5) / 2",
}
#: How far :func:`condition14` looks for ``b0`` by default.
B_MAX = 1_000_000
#: Keys that do not enter any assumption: settings differing only in them share a verdict.
IRRELEVANT_KEYS = ("n", "B", "level", "theta0")


def condition14_sums(lam: float, c: float, gamma: float, b_max: int) -> np.ndarray:
    """Left side of condition (14) for ``b0 = 1, ..., b_max``, one eigenvalue.

    ``S(b0) = sum_{j=1}^{b0} lam^2 eta_j^2 prod_{k=j+1}^{b0} (1 - lam eta_k)^2``
    with ``eta_j = c j^-gamma``, computed by the recursion
    ``S(b) = (1 - lam eta_b)^2 S(b - 1) + lam^2 eta_b^2``, ``S(0) = 0``: O(b_max)
    work, and every term is a sum of non-negative numbers (no cancellation).

    Parameters
    ----------
    lam : float
        An eigenvalue of ``G`` (positive).
    c, gamma : float
        Step sizes ``eta_j = c j^-gamma``.
    b_max : int
        Last ``b0``.

    Returns
    -------
    numpy.ndarray
        ``S(1), ..., S(b_max)``, shape ``(b_max,)``.
    """
    out = np.empty(b_max)
    s = 0.0
    for b in range(1, b_max + 1):
        le = lam * c * b ** -gamma
        s = (1.0 - le) * (1.0 - le) * s + le * le  # a product overflows to inf where ** would raise
        out[b - 1] = s
    return out


@dataclass(frozen=True)
class Condition14:
    """Outcome of :func:`condition14`.

    Attributes
    ----------
    b0 : int or None
        The smallest ``b0 <= b_max`` at which both parts of Assumption A.2 (5)
        hold for every eigenvalue; ``None`` if there is none.
    eigenvalues : tuple of float
        Eigenvalues of ``G``.
    lhs, rhs : tuple of float
        Per eigenvalue, the two sides of (14) at ``b0`` (at ``b_max`` if none).
    b_max : int
        How far the search went.
    """

    b0: int | None
    eigenvalues: tuple[float, ...]
    lhs: tuple[float, ...]
    rhs: tuple[float, ...]
    b_max: int

    @property
    def holds(self) -> bool:
        return self.b0 is not None


def condition14(eigenvalues, c: float, gamma: float, b_max: int = B_MAX) -> Condition14:
    """Search the ``b0`` of Assumption A.2 (5) of 000.

    The assumption asks for *one* ``b0`` in N with ``b0^gamma >= 2 lam c``
    and (14), ``S(b0) >= lam eta_{b0} / 2`` (see :func:`condition14_sums`),
    for every eigenvalue ``lam`` of ``G``. (14) is the base case of an
    induction, so one such ``b0`` suffices; this returns the smallest, found
    by streaming ``S(b)`` for all eigenvalues at once and stopping at the
    first ``b`` where both parts hold for all of them.

    Parameters
    ----------
    eigenvalues : array_like
        Eigenvalues of ``G`` (must be positive: G positive definite).
    c, gamma : float
        Step sizes ``eta_j = c j^-gamma``.
    b_max : int
        Give up after this ``b0``.

    Returns
    -------
    Condition14
    """
    lams = [float(x) for x in np.atleast_1d(eigenvalues)]
    if not lams or min(lams) <= 0.0:
        return Condition14(None, tuple(lams), (), (), 0)
    s = [0.0] * len(lams)
    lam_max = max(lams)
    if math.log(2.0 * lam_max * c) > gamma * math.log(b_max):  # b0^gamma >= 2 lambda c fails for all b0 <= b_max
        return Condition14(None, tuple(lams), (), (), b_max)
    for b in range(1, b_max + 1):
        eta = c * b ** -gamma
        ok = b ** gamma >= 2.0 * lam_max * c
        for i, lam in enumerate(lams):
            le = lam * eta
            s[i] = (1.0 - le) * (1.0 - le) * s[i] + le * le  # a product overflows to inf where ** would raise
            ok = ok and s[i] >= le / 2.0
        if ok:
            return Condition14(b, tuple(lams), tuple(s), tuple(lam * eta / 2.0 for lam in lams), b_max)
    eta = c * b_max ** -gamma
    return Condition14(None, tuple(lams), tuple(s), tuple(lam * eta / 2.0 for lam in lams), b_max)


@dataclass(frozen=True)
class Verdict:
    """One line of the check.

    Attributes
    ----------
    name : str
        The condition.
    holds : bool or None
        ``None`` for information (privacy) and conditions that do not apply.
    detail : str
        The numbers behind the verdict.
    """

    name: str
    holds: bool | None
    detail: str


@dataclass
class SettingCheck:
    """Verdicts for one group of settings that agree on every key that enters the assumptions.

    Attributes
    ----------
    label : str
        The group's values of the varied keys (empty if nothing relevant varies).
    ns : list of int
        The sample sizes of the group.
    verdicts : list of Verdict
    """

    label: str
    ns: list[int] = field(default_factory=list)
    verdicts: list[Verdict] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return all(v.holds is not False for v in self.verdicts)


def _g(x: float) -> str:
    return f"{x:.4g}"


def check_setting(setting: Setting, methods, b_max: int = B_MAX, options: dict | None = None) -> list[Verdict]:
    """Verdicts of one setting (see the module docstring).

    Parameters
    ----------
    setting : Setting
    methods : sequence of str
        The run's methods: the bootstrap conditions apply only with ``BB``.
    b_max : int
        Search limit for :func:`condition14`.

    Returns
    -------
    list of Verdict
    """
    out = []
    g, beta = setting.gamma, setting.beta
    out.append(Verdict("gamma in (1/2, 1)", 0.5 < g < 1.0, f"gamma = {g}"))
    bb = uses_blocks(methods)
    if bb:
        out.append(Verdict("gamma < beta (Theorem 3.2)", g < beta, f"gamma = {g} {'<' if g < beta else '>='} beta = {beta}"))
        bounded = setting.multiplier in BOUNDED_MULTIPLIERS
        detail = BOUNDED_MULTIPLIERS.get(setting.multiplier, "unbounded")
        out.append(Verdict("bounded multipliers", bounded, f"{setting.multiplier}: {detail}"))
    else:
        out.append(Verdict("gamma < beta (Theorem 3.2)", None, "n/a: no BB among the methods"))
        out.append(Verdict("bounded multipliers", None, "n/a: no BB among the methods"))
    model = build_model(setting)
    G = np.asarray(model.hessian(), dtype=float)
    eig = np.linalg.eigvalsh((G + G.T) / 2.0)
    res = condition14(eig, setting.c, g, b_max)
    lam_txt = ", ".join(_g(x) for x in res.eigenvalues)
    if res.holds:
        sides = "; ".join(f"S = {_g(a)} >= lambda eta_b0 / 2 = {_g(b)}" for a, b in zip(res.lhs, res.rhs))
        detail = (f"lambda(G) = {lam_txt}, eta_j = {setting.c:g} j^-{g}: smallest b0 = {res.b0} "
                  f"(b0^gamma = {_g(res.b0 ** g)} >= 2 lambda_max c = {_g(2 * max(res.eigenvalues) * setting.c)}; {sides})")
    elif not res.eigenvalues or min(res.eigenvalues) <= 0:
        detail = f"lambda(G) = {lam_txt}: G is not positive definite"
    else:
        detail = f"lambda(G) = {lam_txt}, eta_j = {setting.c:g} j^-{g}: no b0 <= {res.b_max} satisfies it"
    out.append(Verdict("condition (14), Assumption A.2 (5)", res.holds, detail))
    if model.declared or model.estimated_parts():
        out.append(Verdict("model", None, _model_detail(setting, model)))
    # a user's model declares its privacy without a mechanism object (Model.declared_guarantee)
    private = model.mechanism is not None or (model.declared and not math.isinf(setting.epsilon))
    out.append(Verdict("privacy", None, model.guarantee if private else "none (epsilon = inf: non-private SGD)"))
    if private:
        out += _zoo_privacy(setting, model, methods, options or {})
    return out


def _model_detail(setting: Setting, model) -> str:
    """A user's model (its file, keys and truth), or a built-in one whose oracle is estimated."""
    from ...engine.runs import usercode
    from ...models.truth import truth_of

    parts = []
    if model.declared:
        source = usercode.source_of(setting.model) or {}
        keys = ", ".join(f"{k} = {getattr(setting, k)}" for k in type(model).keys) or "no keys besides epsilon"
        parts.append(f"{usercode.shown(setting.model)} (a user's file, SHA-256 {source.get('sha256', '?')[:16]}); "
                     f"{keys}")
    estimated = model.estimated_parts()
    if estimated:
        truth = truth_of(model)
        sigma = ", ".join(f"{_g(v)} +- {_g(e)}" for v, e in zip(np.diag(truth.sigma), np.diag(truth.sigma_se)))
        parts.append(f"oracle estimated ({' and '.join(estimated)} by Monte Carlo, {truth.samples} draws): "
                     f"diag Sigma = {sigma}")
    elif model.declared:
        check = getattr(setting, "truth_check", True)
        parts.append("G and S given by the model" + (", checked against Monte Carlo within 4 SE" if check else
                                                     ", NOT checked (truth_check: false)"))
    return "; ".join(parts)


def _zoo_privacy(setting: Setting, model, methods, options: dict) -> list[Verdict]:
    """The privacy of the zoo's online bootstraps, whose users answer ``B + 1`` times (docs/zoo.md)."""
    from .zoo import ZOO_KEYS, answers, user_privacy, zoo_methods

    options = {**{k.name: k.default for k in ZOO_KEYS}, **options}
    return [Verdict(f"privacy ({m})", None, user_privacy(m, setting, options).describe())
            for m in zoo_methods(methods) if answers(m, options) > 1]


def check_config(config: Config, b_max: int = B_MAX) -> list[SettingCheck]:
    """Verdicts for every distinct combination of the keys that enter the assumptions.

    Settings that differ only in :data:`IRRELEVANT_KEYS` (``n``, ``B``,
    ``level``, ``theta0``) share one :class:`SettingCheck`, which lists their
    ``n``.

    Parameters
    ----------
    config : Config
    b_max : int
        Search limit for :func:`condition14`.

    Returns
    -------
    list of SettingCheck
        In grid order.
    """
    shown = [k for k in config.varied if k not in IRRELEVANT_KEYS]
    groups: dict[tuple, SettingCheck] = {}
    for s in config.settings:
        ident = tuple((k, v) for k, v in s.as_dict().items() if k not in IRRELEVANT_KEYS)
        if ident not in groups:
            # a key the setting does not read (the mechanism at epsilon = inf) is left out, as in the tables
            label = ", ".join(f"{k} = {display(getattr(s, k))}" for k in shown if getattr(s, k) is not None)
            groups[ident] = SettingCheck(label, [], check_setting(s, config.methods, b_max, config.options))
        if s.n not in groups[ident].ns:
            groups[ident].ns.append(s.n)
    return list(groups.values())


def render(checks: list[SettingCheck]) -> str:
    """The verdict table as text: one block per group, a ``[ok]``/``[FAIL]``/``[info]`` line per condition."""
    lines = []
    for chk in checks:
        ns = ", ".join(f"{n:.0e}".replace("e+0", "e").replace("e+", "e") for n in chk.ns)
        lines.append(f"{chk.label or 'setting'} (n = {ns}): {'all hold' if chk.holds else 'FAILS'}")
        for v in chk.verdicts:
            tag = {True: "ok", False: "FAIL", None: "info" if v.name.startswith(("privacy", "model")) else "n/a"}[v.holds]
            lines.append(f"  [{tag:>4}] {v.name}: {v.detail}")
    failed = sum(not c.holds for c in checks)
    lines.append(f"verdict: {'every assumption holds' if not failed else f'{failed} of {len(checks)} combination(s) fail an assumption'}"
                 f" ({len(checks)} combination(s) of the keys that enter the assumptions)")
    return "\n".join(lines)


__all__ = ["B_MAX", "BOUNDED_MULTIPLIERS", "Condition14", "SettingCheck", "Verdict", "check_config",
           "check_setting", "condition14", "condition14_sums", "render"]

"""The method zoo in the coverage study (issue 20): what each method adds to a run, and its interval.

A ``methods:`` entry of :data:`~ldpsim.inference.methods.ZOO_METHODS` is
declared in the registry (:mod:`ldpsim.inference.methods`: its schedule, keys,
interval, state size and pass cost); here the run asks the kernel for it
(:func:`zoo_spec`: its schedule, its paths of its own, its state;
:mod:`ldpsim.recursion.zoo` runs them in the main path's pass over the same
observations) and turns the state it streamed into its interval
(:func:`zoo_bounds`). The study calls these; the driver does not know the zoo exists.

Each method with paths of its own draws its privacy noise (and OB its
weights) from a stream of its own, child ``code`` of the replication's seed
(:data:`~ldpsim.recursion.zoo.STREAM_CODES`): the main path, and so every
other method's numbers, are those of a run without it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ...engine.runs.config import ConfigError
from ...engine.dialect.rng import BIT_GENERATOR
from ...inference.critical_values import normal_quantile
from ...inference.methods import CLASSIC_METHODS, STREAM_CODES, ZOO_METHODS, ZooInputs, get, keys_of, readers
from ...inference import user_methods
from ...inference.methods.bootstrap import MIN_BOOTSTRAP_DRAWS, min_bootstrap_draws
from ...privacy.composition import basic_composition
from ...recursion.keys import check_model
from ...recursion.zoo import ZooSpec

#: The zoo's per-run keys (one value per run, like ``methods``; they change no stream of the main path), as the
#: zoo's methods declare them.
ZOO_KEYS = keys_of(ZOO_METHODS, grid=False)
ZOO_KEY_NAMES = tuple(k.name for k in ZOO_KEYS)
#: The methods each zoo key is read by.
ZOO_KEY_METHODS = {k.name: readers(k.name, ZOO_METHODS) for k in ZOO_KEYS}


def idle_zoo_keys(options) -> list[str]:
    """A warning (a list of one, or empty) naming the zoo keys set away from their default whose methods do not run."""
    idle = [(k.name, ZOO_KEY_METHODS[k.name]) for k in ZOO_KEYS
            if options[k.name] != k.default and not any(m in options["methods"] for m in ZOO_KEY_METHODS[k.name])]
    if not idle:
        return []
    keys = ", ".join(f"{name} = {options[name]!r} (read by {', '.join(readers)})" for name, readers in idle)
    return [f"{keys} change{'s' if len(idle) == 1 else ''} nothing: methods lists no method that reads "
            f"{'it' if len(idle) == 1 else 'them'}"]
#: The methods whose paths run in the kernel (the others keep state of the main path only).
PATH_METHODS = tuple(STREAM_CODES)


def answers(method: str, options) -> int:
    """How often each user answers for ``method`` (its registry entry's ``answers``; once for most)."""
    counted = get(method).answers if method in ZOO_METHODS else None
    return 1 if counted is None else int(counted(options))


def splits_budget(method: str) -> bool:
    """Whether ``method`` splits the run's budget among its answers (``OB_split``) rather than multiplying it."""
    return method in ZOO_METHODS and "split_budget" in get(method).tags


def zoo_methods(methods) -> tuple:
    """The zoo's methods among ``methods``, in their order."""
    return tuple(m for m in methods if m in ZOO_METHODS)


def classic_methods(methods) -> tuple:
    """BB, BBjoint, BM, SN, oracle and the asymptotic confidence sequences among ``methods``, in their order."""
    return tuple(m for m in methods if m in CLASSIC_METHODS)


def _gdp(setting) -> bool:
    return getattr(setting, "mechanism", None) == "gdp"


def split_setting(setting, options):
    """OB_split's setting: each of the ``B + 1`` answers at ``1 / (B + 1)`` of the run's budget.

    ``epsilon / (B + 1)`` (and ``delta / (B + 1)`` for a Gaussian mechanism's
    ``(epsilon, delta)``), or ``mu / sqrt(B + 1)`` under GDP, so that the
    answers compose to the run's budget (:func:`user_privacy`). Without
    privacy the setting itself.
    """
    answers = options["ob_paths"] + 1
    if _gdp(setting):
        return setting if math.isinf(setting.mu) else setting.replace(mu=setting.mu / math.sqrt(answers))
    if setting.epsilon is None or math.isinf(setting.epsilon):
        return setting
    if getattr(setting, "delta", None) is not None:  # set only where the mechanism reads it (a Gaussian one)
        return setting.replace(epsilon=setting.epsilon / answers, delta=setting.delta / answers)
    return setting.replace(epsilon=setting.epsilon / answers)


@dataclass(frozen=True)
class UserPrivacy:
    """What one user pays for a method: ``answers`` answers of budget ``answer`` each, composing to ``total``.

    Attributes
    ----------
    answers : int
        How many privatized answers each user gives.
    answer, total : dict
        ``{"epsilon": e, "delta": d}`` (``delta`` 0 for a pure mechanism) or
        ``{"mu": m}`` under GDP; empty without privacy.
    factor : float
        The total epsilon (mu; and delta) over the run's: the table's privacy
        cost. Without privacy, the factor an infinite budget is multiplied by;
        with a budget drawn per user, the factor of each user's own.
    """

    answers: int
    answer: dict
    total: dict
    factor: float

    def describe(self) -> str:
        """One line: the answers, each one's budget and what they compose to, with the theorem."""
        if not self.total:
            return "no privacy (an infinite budget)"
        if "mu" in self.total:
            return (f"each user answers {self.answers} time(s) at mu = {self.answer['mu']:.6g}: mu = "
                    f"{self.total['mu']:.6g} GDP per user (Dong, Roth & Su 2022, Cor. 2)")
        each = f"epsilon = {self.answer['epsilon']:.6g}" + (f", delta = {self.answer['delta']:.6g}"
                                                           if self.answer["delta"] else "")
        return (f"each user answers {self.answers} time(s) at {each}: (epsilon = {self.total['epsilon']:.6g}, "
                f"delta = {self.total['delta']:.6g}) LDP per user by sequential composition (Dwork & Roth 2014, "
                "Thm 3.16)")


def user_privacy(method: str, setting, options) -> UserPrivacy:
    """The privacy each user pays for ``method`` in ``setting``: the one place it is computed.

    ``OB`` asks each user ``B + 1`` times at the run's budget; ``OB_split``
    ``B + 1`` times at :func:`split_setting`'s; every other method once
    (HulC's segments and HiGrad's threads use disjoint observations, OBM and
    the plug-in post-process the main path's answers). ``k`` answers of
    ``(epsilon, delta)`` compose to ``(k epsilon, k delta)`` (Dwork & Roth
    2014, Thm 3.16), ``k`` answers of ``mu``-GDP to ``sqrt(k) mu`` exactly
    (Dong, Roth & Su 2022, Cor. 2). ``check``, the zoo table and docs/zoo.md
    state what this returns.
    """
    count = answers(method, options)
    split = splits_budget(method)
    each = split_setting(setting, options) if split else setting
    gdp = _gdp(setting)
    # OB pays k answers at the run's budget; OB_split k at 1 / k of it (sqrt(k) under GDP), which compose to it
    factor = 1 if split or count == 1 else (math.sqrt(count) if gdp else count)
    if getattr(setting, "budget", None):  # each user's own budget, drawn (OB and OB_split refuse it): answered once
        return UserPrivacy(count, {}, {}, factor)
    if gdp:
        if math.isinf(setting.mu):
            return UserPrivacy(count, {}, {}, factor)
        return UserPrivacy(count, {"mu": each.mu}, {"mu": math.sqrt(count) * each.mu}, factor)
    if setting.epsilon is None or math.isinf(setting.epsilon):  # no privacy: the factor of an infinite budget
        return UserPrivacy(count, {}, {}, factor)
    delta = getattr(each, "delta", None) or 0.0
    epsilon, total_delta = basic_composition(each.epsilon, count, delta)
    return UserPrivacy(count, {"epsilon": each.epsilon, "delta": delta}, {"epsilon": epsilon, "delta": total_delta},
                       factor)


def validate_zoo(setting, options) -> None:
    """One-line errors for a setting the zoo's methods of ``options`` cannot run."""
    methods = zoo_methods(options["methods"])
    if not methods:
        return
    if setting.batch_size != 1:
        raise ConfigError(f"batch_size = {setting.batch_size}: the zoo's methods ({', '.join(methods)}) run one "
                          "observation a step; use batch_size = 1")
    boot = [m for m in methods if get(m).answers is not None]  # users answer more than once
    if boot and getattr(setting, "budget", None):
        raise ConfigError(f"methods {', '.join(boot)} split or multiply a budget per answer; budget = "
                          f"{setting.budget!r} draws one per user: give epsilon (or mu) instead")
    kind, paths = options["ob_interval"], options["ob_paths"]
    if boot and kind != "normal" and paths < min_bootstrap_draws(setting.level):
        # the quantiles of B averages are their extremes below 2 / (1 - level) (2 paths at 0.9 covered 0.44)
        raise ConfigError(f"ob_paths = {paths} bootstrap paths are too few for ob_interval = {kind} at level = "
                          f"{setting.level}: its quantiles need ob_paths >= max({MIN_BOOTSTRAP_DRAWS}, 2 / (1 - level)) "
                          f"= {min_bootstrap_draws(setting.level)}, as BB's B")
    if any(splits_budget(m) for m in methods) and split_setting(setting, options) is not setting:
        try:  # its answers' model, at a budget B + 1 times smaller, must be computable as the main path's is
            check_model(split_setting(setting, options))
        except ConfigError as exc:
            raise ConfigError(f"OB_split's answers, each at 1 / (ob_paths + 1) = 1 / {paths + 1} of the budget: {exc}; "
                              "lower ob_paths or raise the budget") from None
    for m in methods:  # a schedule that does not fit the setting is refused as it is built
        if get(m).layout is not None:
            get(m).layout(setting, options)


def zoo_spec(setting, options, methods=None, build=None) -> ZooSpec | None:
    """What the kernel streams for the zoo's methods (``methods``, default those of ``options``); ``None``: none.

    ``build(setting)`` makes a setting's model (``OB_split``'s at ``epsilon / (B + 1)``).
    """
    methods = zoo_methods(options["methods"] if methods is None else methods)
    if not methods:
        return None
    s = setting

    def layout(m):
        return get(m).layout(s, options) if m in methods else None

    # the kernel's record has a part per method (ldpsim.recursion.zoo); each schedule as its method declares it
    split_model = build(split_setting(s, options)) if "OB_split" in methods else None
    return ZooSpec(layout("HulC"), layout("HiGrad"), "OB" in methods, "OB_split" in methods, int(options["ob_paths"]),
                   split_model, layout("OBM"), "plugin_oracle" in methods, float(s.theta0))


def method_generator(gen: np.random.Generator, method: str) -> np.random.Generator:
    """Method ``method``'s stream in the replication of ``gen``: child ``STREAM_CODES[method]`` of its seed.

    ``gen`` draws from ``SeedSequence(root, spawn_key=(setting, r))``; the
    method from ``SeedSequence(root, spawn_key=(setting, r, code))``.
    """
    seq = gen.bit_generator.seed_seq
    child = np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, STREAM_CODES[method]),
                                   pool_size=seq.pool_size)
    return np.random.Generator(BIT_GENERATOR(child))


def zoo_generators(spec: ZooSpec | None, gens) -> dict | None:
    """Per method with paths of its own in ``spec``, one generator per replication of ``gens``."""
    if spec is None:
        return None
    asked = {"HulC": spec.hulc is not None, "HiGrad": spec.higrad is not None, "OB": spec.ob,
             "OB_split": spec.ob_split}
    return {m: [method_generator(g, m) for g in gens] for m in PATH_METHODS if asked[m]}


def replication_index(gen: np.random.Generator) -> int:
    """The replication ``r`` whose generator ``gen`` is (its seed's ``spawn_key`` ends with ``r``)."""
    key = gen.bit_generator.seed_seq.spawn_key
    return int(key[-1]) if key else -1


def zoo_bounds(methods, arrays: dict, theta_bar: np.ndarray, setting, options, spec: ZooSpec, hessian):
    """Each zoo method's ``(lo, hi)`` ``(d,)`` and its point estimate ``(d,)`` from one replication's state.

    Each as its registry entry computes it (:mod:`ldpsim.inference.methods`).

    Returns
    -------
    dict
        ``method -> (lo, hi, estimate)``; NaN where the method's state is not finite.
    """
    inputs = ZooInputs(theta_bar, setting, options, spec, hessian)
    out = {}
    for m in zoo_methods(methods):
        lo, hi, est = get(m).interval(arrays[m], inputs)
        out[m] = (np.asarray(lo, dtype=float), np.asarray(hi, dtype=float), np.asarray(est, dtype=float))
    return out


def state_floats(method: str, d: int, setting, options) -> int:
    """Floats a replication keeps for ``method`` beyond the main path's ``theta`` and its running sum.

    A user's method: the numbers of the state record it builds for ``setting``.
    """
    if user_methods.is_user_method(method):
        instance = user_methods.build(method, options)
        return user_methods.state_floats(user_methods.kernel_state(instance, method, setting, d, 1))
    return int(get(method).state_floats(d, setting, options))


def pass_factor(method: str, options) -> float:
    """Cost of ``method``'s kernel pass (the main path and the method alone) in main paths, for the time estimate.

    From the per-step times of docs/zoo.md (scripts/bench_zoo.py, quantile,
    8 lanes): HulC 1.8, HiGrad 1.7, OBM 1.9 and plugin_oracle 1.2 times the
    main path, rounded up; OB about one path per perturbed path besides the
    main one (B = 100: 99 times), OB_split one more (its own main path).
    Declared with each method (its entry's ``pass_cost``).
    """
    return float(get(method).pass_cost(options))


def zoo_cost(options) -> float:
    """A replication's kernel passes in main paths: 1 without the zoo, each zoo method's pass summed with it."""
    methods = zoo_methods(options["methods"])
    return sum(pass_factor(m, options) for m in methods) if methods else 1.0


def privacy_factor(method: str, options, setting=None) -> float:
    """The privacy cost per user as a factor of the run's epsilon (of mu under GDP): :func:`user_privacy`'s.

    ``B + 1`` for OB (``sqrt(B + 1)`` under GDP), 1 for every other method (a
    setting without privacy if ``setting`` is None). A Gaussian mechanism's
    delta scales by the same factor.
    """
    if setting is None:
        return 1 if splits_budget(method) else answers(method, options)
    return user_privacy(method, setting, options).factor


def oracle_length(sigma: np.ndarray, n: int, level: float) -> np.ndarray:
    """``2 z sqrt(Sigma_jj / n)``: the oracle interval's length per coordinate (deterministic)."""
    return 2.0 * normal_quantile(level) * np.sqrt(np.diag(sigma) / n)


class Stopwatch:
    """Seconds per replication of each method, measured in a timed pass of one lanes group.

    ``seconds[method]`` is the wall time of a kernel pass that runs the main
    path and that method's paths and state (a classic method: the main path
    alone) over the group's replications, divided by their number, plus the
    time its interval takes from the state.
    """

    def __init__(self):
        self.seconds = {}

    def time(self, method: str, func, count: int, repeat: int = 2) -> None:
        """Add the least of ``repeat`` timings of ``func()`` over ``count`` replications (the first may load code)."""
        best = math.inf
        for _ in range(repeat):
            start = time.perf_counter()
            func()
            best = min(best, time.perf_counter() - start)
        self.seconds[method] = self.seconds.get(method, 0.0) + best / count

    def add(self, method: str, seconds: float) -> None:
        self.seconds[method] = self.seconds.get(method, 0.0) + seconds


def nan_seconds(methods) -> np.ndarray:
    return np.full(len(methods), math.nan)


__all__ = ["PATH_METHODS", "Stopwatch", "ZOO_KEYS", "ZOO_KEY_NAMES", "answers", "classic_methods", "method_generator",
           "ZOO_KEY_METHODS", "idle_zoo_keys", "oracle_length", "pass_factor", "privacy_factor", "replication_index", "split_setting", "splits_budget", "state_floats", "UserPrivacy",
           "user_privacy", "validate_zoo",
           "zoo_bounds", "zoo_cost",
           "zoo_generators", "zoo_methods", "zoo_spec"]

"""``ldpsim fit``'s options, grouped: the budget, DP-SGD's settings, what is reported, and what and how to fit.

:func:`ldpsim.fit.fit` keeps its keywords (and the command line its flags);
it packs them into a :class:`FitOptions` that the stages read. The groups
follow what the options decide: :class:`Budget` the privacy of the whole
release, :class:`Descent` the path, :class:`Report` what is printed beside
it. Their values are checked, in one place and before the data are read, by
:func:`ldpsim.fit.refusals.check_options`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..studies.dpsgd.calibration import SHARE_MOMENTS  # (the study's budget_of = release shares the budget as fit does)

#: Default cap on the number of DP-SGD steps (``T = n^2`` for a large ``n`` would take long).
MAX_STEPS = 100_000_000
#: Smallest number of steps (the random-scaling interval needs a path).
MIN_STEPS = 100
#: Default share of the GDP budget ``mu^2`` for the private scaling (A~ and S~: :data:`SHARE_MOMENTS`).
SHARE_SCALING = 0.1
#: Share of ``mu^2`` for the private histogram of the per-example gradient norms at the estimate, over the clip
#: (:func:`ldpsim.fit.path.clip_histogram`): how often the clip binds, said in every output (issue 44).
SHARE_CLIP = 0.02
#: Budgets (epsilon at delta) the accountants are asked to calibrate to (as the dpsgd study's).
EPSILON_RANGE = (1e-3, 100.0)
#: Confidence levels the random-scaling critical values cover.
LEVEL_RANGE = (0.05, 0.9999)
SCALINGS = ("private", "none", "nonprivate")
#: The accountant of each sampling scheme fit accepts (replace-one neighbours; see :mod:`ldpsim.fit`).
FIT_ACCOUNTANTS = {"swor": ("rdp", "clt"), "poisson": ("pld",)}


@dataclass(frozen=True)
class Budget:
    """The privacy budget of the whole release, and its split in Gaussian DP.

    ``epsilon`` at ``delta``, or ``mu``-GDP read at ``delta`` (one of the two);
    ``accountant`` ``None`` takes the valid one for the sampling scheme;
    ``share_moments`` and ``share_scaling`` are the shares of ``mu^2`` for
    ``A~`` and ``S~`` and for the private scaling.
    """

    epsilon: float | None = None
    delta: float = 1e-5
    mu: float | None = None
    accountant: str | None = None
    share_moments: float = SHARE_MOMENTS
    share_scaling: float = SHARE_SCALING


@dataclass(frozen=True)
class Descent:
    """DP-SGD's settings: ``T = min(n^kappa, max_steps)`` steps of batches of ``batch_size`` drawn by ``sampling``.

    Step size ``c t^-gamma``; per-example gradients clipped at ``clip`` and
    Hessians (for ``A~``) at ``clip_hessian``, ``None`` for the model's
    defaults (:func:`ldpsim.fit.calibrate.calibrate`).
    """

    sampling: str = "swor"
    kappa: float = 2.0
    max_steps: int = MAX_STEPS
    batch_size: int = 1
    c: float = 0.2
    gamma: float = 0.501
    clip: float | None = None
    clip_hessian: float | None = None


@dataclass(frozen=True)
class Report:
    """What the output holds besides the private release: the intervals' level and what is shown NOT privately."""

    level: float = 0.95
    show_nonprivate: bool = False
    show_values: bool = False
    show_seed: bool = False


@dataclass(frozen=True)
class FitOptions:
    """Everything :func:`ldpsim.fit.fit` is asked: the model and its columns, their scaling, the seed, the groups.

    ``scaling`` is one of :data:`SCALINGS` for the columns without public
    ``bounds``; ``seed`` ``None`` draws fresh entropy.
    """

    model: str = "linear"
    response: str = "y"
    covariates: list[str] | None = None
    scaling: str = "private"
    bounds: object = None
    seed: int | None = None
    budget: Budget = field(default_factory=Budget)
    descent: Descent = field(default_factory=Descent)
    report: Report = field(default_factory=Report)


__all__ = ["EPSILON_RANGE", "FIT_ACCOUNTANTS", "LEVEL_RANGE", "MAX_STEPS", "MIN_STEPS", "SCALINGS", "SHARE_CLIP",
           "SHARE_MOMENTS", "SHARE_SCALING", "Budget", "Descent", "FitOptions", "Report"]

"""The DP-SGD study's own intervals (Xia, Zhang & Cai 2025): plug-in, random scaling and DP-GD.

The study (:mod:`ldpsim.studies.dpsgd.study`) computes them on a sample with
the private moments ``A~``, ``S~`` (:mod:`ldpsim.inference.dpsgd`); BB, BM and
the oracle of that study are declared with the coverage study's
(:mod:`.bootstrap`, :mod:`.batch_means`, :mod:`.oracle`). Tags: ``path``, the
method analyses the DP-SGD path (its estimate is ``theta_bar_T``);
``private_moments``, its interval needs ``A~`` and ``S~`` (budget ``mu_var``);
``random_scaling``, a random-scaling pivot (undefined on a deterministic path).
"""

from __future__ import annotations

from .. import dpsgd as dpi
from .base import Method, register

_RS = frozenset({"path", "random_scaling"})
_MOMENTS = frozenset({"private_moments"})

register(*(
    Method(name, text, studies={"dpsgd": position}, kind="dpsgd", default_in=("dpsgd",) if default else (),
           tags=tags, interval=interval, models="linear, logistic (the study's)", looks="no",
           streams="the DP-SGD path's random-scaling sums" if "path" in tags else "nothing of the path")
    for name, text, position, default, tags, interval in (
        ("plugin", "theta_bar +- z sqrt((V~ + (f V~ + m sigma_1^2 A~^-2)/(km))/n), V~ = A~^-1 S~ A~^-1, k = T/n: "
                   "(4.2) with 1/n and Theorem 2's sampling term", 10, True, _MOMENTS | {"path"}, dpi.plugin),
        ("plugin_raw", "(4.1): theta_bar +- z sqrt(V~/n)", 20, True, _MOMENTS | {"path"}, dpi.plugin),
        ("RS", "random scaling (4.6) with V^ = (m/T^2) sum_t S_t^2 times rho = V~/(V~ + m sigma_1^2 A~^-2) + 1/(km): "
               "(4.7) made exact", 30, True, _MOMENTS | _RS, dpi.random_scaling),
        ("RS_raw", "(4.6): theta_bar +- cv sqrt(V^/n), cv = 6.747 at 95%", 40, True, _RS, dpi.random_scaling),
        ("RS_paper", "(4.7) as printed (rho without the 1/(km))", 50, False, _MOMENTS | _RS, dpi.random_scaling),
        ("DPGD", "noisy gradient descent, T2 = `T2_every`, 2 `T2_every`, ... <= `T2_max` steps of size `gd_step`, "
                 "noise 2 gd_step clip sqrt(T2)/(n mu) per step; theta~ +- z sqrt(V~/n + that noise's variance)",
         90, False, _MOMENTS, dpi.wald),
    )
))

__all__: list = []

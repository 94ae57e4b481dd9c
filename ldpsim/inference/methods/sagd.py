"""The paths of SAGD's generalization study (Zhou et al. 2020, Section C): SAGD with two oracles, RMSprop, Adam.

Not interval methods: the study's ``methods:`` key names them, and each has a
code in SAGD's kernel (:mod:`ldpsim.studies.sagd.kernel`), which dispatches on
it. The codes are the kernel's constants; committed runs were made with them.
"""

from __future__ import annotations

from .base import Method, register

register(*(
    Method(name, text, studies={"sagd_generalization": position}, kind="optimizer",
           default_in=("sagd_generalization",), code=code, looks="no", models="logistic, welsch (the study's)",
           streams="the adaptive update's moments on the training set")
    for name, text, position, code in (
        ("sagd_lap", "SAGD with the DPG-Lap oracle: the empirical gradient plus Lap(sigma) per coordinate", 10, 0),
        ("sagd_sparse", "SAGD with the DPG-Sparse oracle (Thresholdout) while its budget lasts", 20, 1),
        ("rmsprop", "the same update with the exact empirical gradient (non-private)", 30, 2),
        ("adam", "Adam on the exact empirical gradient (non-private)", 40, 3),
    )
))

__all__: list = []

"""The DP-SGD study of Xia, Zhang & Cai (002): central DP-SGD with random subsampling on a sample.

:mod:`.kernel` draws the sample and runs DP-SGD (and the DP-GD baseline) with
plain-Python twins; :mod:`.glm` holds what linear and logistic regression
need (designs, the private A~ and S~, the full-sample fits); :mod:`.study`
declares the keys and computes a replication's intervals
(:mod:`ldpsim.inference.dpsgd`); :mod:`.summary`, :mod:`.tables` and
:mod:`.figures` summarise and draw. The estimator on a user's CSV (``ldpsim
fit``) is :mod:`ldpsim.fit`, which runs this study's kernel and ``glm``.
"""

from .study import DpsgdStudy

__all__ = ["DpsgdStudy"]

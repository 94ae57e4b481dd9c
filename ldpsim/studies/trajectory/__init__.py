"""The trajectory study: the squared error of LDP-SGD's last iterate and average along the path.

:mod:`.kernel` runs one path (every model and mechanism) and records
``||theta_k - theta*||^2`` and ``||theta_bar_k - theta*||^2`` at log-spaced
checkpoints, with a plain-Python twin; :mod:`.study` declares the keys and
summarises replications into mean distances with standard errors and
fitted decay rates with intervals (:mod:`.summary`, shared with later
studies of rates); :mod:`.tables` and :mod:`.figure` draw them.
"""

from .study import TrajectoryStudy

__all__ = ["TrajectoryStudy"]

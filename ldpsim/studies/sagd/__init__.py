"""Stable adaptive gradient descent (SAGD) with differentially private gradient oracles (paper 001).

:mod:`.kernel` runs SAGD (the RMSprop-type update) on a training set drawn
per replication, with the DPG-Lap and DPG-Sparse oracles and the
non-private RMSprop and Adam baselines, and its plain-Python twin;
:mod:`.accounting` gives each setting's privacy (Lemmas 2 and 3 as printed,
and Dwork & Roth's advanced composition) and the conditions of Theorems 1
and 3. Three studies use them:

* ``sagd_concentration`` (:mod:`.concentration`): the frequency of
  ``||g~_t - grad f(w_t)|| >= sqrt(d) sigma (1 + mu)`` against
  ``d beta + d e^(-mu)`` over a sigma x mu grid;
* ``sagd_rate`` (:mod:`.rate`): ``min_t ||grad f(w_t)||^2`` against n with
  Theorem 2's schedule, and its fitted exponent next to -2/3;
* ``sagd_generalization`` (:mod:`.generalization`): train and test loss over
  epochs of SAGD, RMSprop and Adam on the same training sets.

The models (logistic regression, the non-convex Welsch regression) and their
exact population risks are in :mod:`ldpsim.models.erm`.
"""

from .concentration import ConcentrationStudy
from .generalization import GeneralizationStudy
from .rate import RateStudy

__all__ = ["ConcentrationStudy", "GeneralizationStudy", "RateStudy"]

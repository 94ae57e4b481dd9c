"""Privacy: the mechanisms that privatize data or gradients, and the accountants behind every guarantee stated.

:mod:`.mechanisms` holds randomized response, the Laplace and the (analytic)
Gaussian mechanism, their calibration from a gradient's sensitivity, the
guarantee each gives in words, and the noise records the kernels draw from;
:mod:`.online` 004's mechanisms and per-user budgets. :mod:`.gdp` is Gaussian
differential privacy (mu-GDP <-> (epsilon, delta)); :mod:`.accountants` gives
the (epsilon, delta) of a DP-SGD release by dp-accounting's PLD and RDP
accountants, by exact GDP composition, or by the CLT of Bu et al. that 002
uses (its closed forms in :mod:`.clt`: an approximation, labelled so), and
calibrates the noise to a target; :mod:`.poisson` accounts Poisson batches
under replace-one neighbours (``ldpsim fit``); :mod:`.composition` composes
pure mechanisms (SAGD); :mod:`.scaling` scales data columns without leaking
them. Models choose a mechanism; nothing here knows a model.
"""

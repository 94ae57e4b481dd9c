"""Privacy: the mechanisms that privatize one observation's gradient, and their guarantees.

:mod:`.mechanisms` holds randomized response, the Laplace and the (analytic)
Gaussian mechanism, their calibration from a gradient's sensitivity, the
guarantee each gives in words, and the noise records the kernels draw from.
:mod:`.gdp` is Gaussian differential privacy (mu-GDP <-> (epsilon, delta));
:mod:`.accounting` calibrates central DP-SGD to a mu-GDP target over T
subsampled steps (the CLT of Bu et al.) and compares it with dp-accounting.
Models choose a mechanism; nothing here knows a model.
"""

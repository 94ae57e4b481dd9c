"""Privacy: the mechanisms that privatize one observation's gradient, and their guarantees.

:mod:`.mechanisms` holds randomized response, the Laplace and the (analytic)
Gaussian mechanism, their calibration from a gradient's sensitivity, the
guarantee each gives in words, and the noise records the kernels draw from.
Models choose a mechanism; nothing here knows a model.
"""

"""Inference from a streamed path: the state the kernels keep, and the intervals built from it.

:mod:`.streaming` fixes where the blocks and batches of a path of ``n`` steps
end (:class:`~.streaming.StreamLayout`) and holds what one path leaves for
inference (:class:`~.streaming.PathState`: block sums, batch sums, the
random-scaling variance, the average), so memory never grows with ``n``.
:mod:`.intervals` builds the confidence intervals from that state, one
function per method (multiplier block bootstrap BB and its simultaneous box
BBjoint, batch means BM, random scaling SN, the oracle);
:mod:`.critical_values` computes SN's critical values; :mod:`.dpsgd` holds the
plug-in and random-scaling intervals of central DP-SGD on a sample (002) with
their finite-sample corrections.
"""

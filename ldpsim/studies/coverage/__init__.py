"""The coverage study of Dette & Graw (000): confidence intervals for theta* and how often they cover it.

:mod:`.study` says what a replication computes (one LDP-SGD path, then the
BB / BBjoint / BM / SN / oracle intervals) and how replications are
summarised (:mod:`.summary`) and drawn (:mod:`.tables`, :mod:`.heatmaps`).
Two commands belong to it: ``trace`` (:mod:`.trace`, Figure 1: one path with
its intervals at log-spaced checkpoints) and ``check`` (:mod:`.checks`, the
assumptions of Theorem 3.2 before a run).
"""

from .study import CoverageStudy

__all__ = ["CoverageStudy"]

"""Reporting: what every study's outputs are made of, and the papers' published numbers.

:mod:`.csvio` writes and reads the long-format CSV tables (``summary.csv``,
``rates.csv``) so that a file is a pure function of the numbers;
:mod:`.stats` computes Monte Carlo statistics with their standard errors
(proportions, means, log-log slopes with intervals) and :mod:`.rates` the decay
rate of a curve of means (``rates.csv``'s rows); :mod:`.figures` loads
matplotlib (a dependency, imported when a figure is drawn) or says in one line that it is missing;
:mod:`.meta` records versions, the git commit and the machine in
``meta.json``; :mod:`.reference` holds the papers' tables and compares a run
with them (``ldpsim compare``). Studies draw their own tables and figures
with these; nothing here knows a study.
"""

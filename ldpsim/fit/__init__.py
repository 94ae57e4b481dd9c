"""``ldpsim fit``: DP-SGD and its private intervals on a user's CSV file, private as a whole by default.

Reads a CSV file (:mod:`.read`), scales the columns (:mod:`ldpsim.privacy.scaling`),
fits a linear or logistic model with an intercept by DP-SGD (002's
Algorithm 1 with per-example clipping), and releases

* the scaling of every column that is not given public bounds: a private
  centre and scale from Gaussian histograms that adapt to the column's
  location and spread (default), the public bounds of ``bounds``, the
  columns as they are (``scaling = 'none'``: the user states they are on a
  public scale), or, only when asked (``scaling = 'nonprivate'``), the
  sample means and SDs, which the guarantee then does NOT cover;
* ``theta_bar_T`` of DP-SGD (``T = min(n^kappa, max_steps)`` steps, batches of
  ``m`` by ``sampling``);
* the private ``A~``, ``S~`` and from them the corrected plug-in and
  random-scaling intervals (:mod:`ldpsim.inference.dpsgd`), mapped back to
  the original scale (slopes over the covariate's scale, times the
  response's for linear; the intercept at the scaling centres).
* a histogram of the per-example gradient norms at ``theta_bar`` over the
  clip (:func:`.path.clip_histogram`): how often the clip binds. Where it
  does, the estimate is consistent for the minimiser of the clipped
  (Huber-like) loss, not OLS or the logistic MLE, and the output opens by
  saying so (:func:`.result.clip_lines`).

**The budget is the whole release's.** ``epsilon`` at ``delta`` (or ``mu``-GDP,
read at ``delta``) is split over the parts in the Gaussian-DP scale, where
composition adds ``mu^2``: with ``mu_T`` the GDP parameter of ``(epsilon,
delta)`` on its own, ``A~`` and ``S~`` together get ``mu = sqrt(share_moments)
mu_T``, the scaling histograms ``sqrt(share_scaling) mu_T``, the clip histogram
``sqrt(SHARE_CLIP) mu_T`` (exact Gaussian mechanisms), and the path the rest: its noise is solved so that the
accountant's epsilon of everything is within 1% of the target. The printed
guarantee is ``(epsilon, delta)``-DP by that accountant under replace-one
neighbours (data sets of the same ``n`` differing in one row: ``n``, ``T`` and
the sampling rate ``m / n`` are public): RDP for batches without replacement
(:func:`ldpsim.privacy.accountants.calibrate_sigma` with ``whole=True``), PLD for
Poisson batches (:func:`ldpsim.privacy.poisson.poisson_epsilons`: dp-accounting's replace-one PLD of
the Poisson-subsampled Gaussian; an add/remove guarantee would not cover a
release whose ``T`` and rate are functions of ``n``). The CLT's figure for the
same noise is printed beside it as a comparison (an approximation, not a
bound). Cyclic passes are refused: with noise, each pass costs budget and
the intervals, derived for random batches, do not cover.

**When the release would be unreliable, fit says so instead of printing an
interval**, and decides it from public or private quantities only, so that the
refusal itself is covered by the guarantee (it is post-processing of what was
released up to that point; a refusal on the raw data would be a release of
its own):

* from public quantities (``n``, ``d``, the budget and the options), before any
  statistic of the values is computed: a path the clipped gradients cannot carry :data:`.refusals.MIN_REACH` from
  its start (``c clip sum_t t^-gamma``), fewer rows than the private scaling
  needs for a normal column at this budget (:func:`ldpsim.privacy.scaling.rows_needed`);
* from the released scaling histograms: a histogram that shows nothing above
  its noise (:class:`~ldpsim.privacy.scaling.ScalingFailed`);
* from the private ``A~`` and the path: a covariate with public ``bounds``
  whose variance, read off ``A~``, is within :data:`.refusals.CONSTANT_Z` noise SDs of 0
  (bounds that clip every value); ``A~`` whose noise (SD ``sd`` per entry,
  public) swamps the loss's curvature, its smallest eigenvalue more than
  :data:`.refusals.NOISE_FLOOR` noise SDs below 0, where :func:`~ldpsim.inference.dpsgd.sandwich`
  would floor it and make up the variance (too few rows for this budget and
  ``d``: 60 covariates at n = 2000); a path that cannot forget its start along
  ``A~``'s flattest direction (``c lambda sum_t t^-gamma`` below
  :data:`.refusals.MIN_FORGET`); a path that oscillates (last step times the curvature above 2); a path that did not
  settle (the random-scaling variance, read off the path, more than
  :data:`.refusals.SETTLE_RATIO` times what ``A~`` and ``S~`` say it should be, far
  beyond the pivot's law). Between :data:`.refusals.PLUGIN_SETTLE` (the law's 99% point)
  and that, only the plug-in interval is withheld, with a note: its variance
  (*) is then too small (clipping along a noisy path flattens the loss the path
  sees), while random scaling reads the variance off the path.

Before calibrating, fit also asks the accountant what ``A~``, ``S~`` and the
scaling cost alone: RDP's conversion loses against their exact Gaussian
figure, and a split that leaves the path nothing is named as such.

Bad input raises :class:`~ldpsim.engine.errors.ConfigError` with one line,
before any work on the data where it can: the options, the file
(:func:`.read.read_table`, whose messages leave data values out unless
``show_values``), collinear covariates or separated logistic data
(:func:`.read.check_design`). Those checks read the raw data and answer its
owner; the guarantee covers a run on data that passes them.

**The stages**, one module each, in the order :func:`~.estimator.fit` calls
them (its keywords grouped into the small dataclasses of :mod:`.options`):

1. read and scale (:mod:`.scale`, the file's rules in :mod:`.read`): the
   columns, which are scaled by public bounds and which privately, and the
   checks on the raw data; after calibration, the scaling itself and the
   design;
2. calibrate (:mod:`.calibrate`): the budget split, ``T``, the clipping and
   the path's noise, from public quantities only;
3. path (:mod:`.path`): DP-SGD on the scaled data, and the private ``A~``
   and ``S~`` at its average;
4. intervals (:mod:`.intervals`): the plug-in and random-scaling intervals on
   the original scale;
5. result (:mod:`.result`): the guarantee and :class:`~.result.FitResult`.

The refusals they ask are all in :mod:`.refusals`; the accountant of Poisson
batches under replace-one neighbours is :mod:`ldpsim.privacy.poisson`, beside
the other accountants.
"""

from .estimator import fit
from .options import Budget, Descent, FitOptions, Report
from .result import FitResult

__all__ = ["Budget", "Descent", "FitOptions", "FitResult", "Report", "fit"]

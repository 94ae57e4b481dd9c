"""Studies: what a Monte Carlo run computes, summarises and draws.

A study (:class:`~.base.Study`) declares its config keys, what one
replication computes (a jitted kernel and its Python twin), how chunks of
replications are summarised and how the summaries are drawn. The engine
runs any study the same way. A config names its study with the ``study``
key:

* ``coverage`` (default, :mod:`.coverage`): confidence intervals and their
  coverage (000, Tables 1-2);
* ``trajectory`` (:mod:`.trajectory`): ``E||theta_k - theta*||^2`` of the
  last iterate and the average along the path, and the rates they decay at;
* ``dpsgd`` (:mod:`.dpsgd`): central DP-SGD on a sample (002): privacy
  accounting, plug-in and random-scaling intervals, BB and BM on the same
  paths, DP-GD;
* ``sagd_concentration``, ``sagd_rate``, ``sagd_generalization``
  (:mod:`.sagd`): stable adaptive gradient descent with private gradient
  oracles on a training set (001).

Adding a study is one module or subpackage here with a :class:`~.base.Study`
subclass, listed in :data:`STUDIES`, plus a config.
"""

from __future__ import annotations

from pathlib import Path

from ..engine.runs import config as cfg
from ..engine.runs.config import Config
from ..engine.errors import ConfigError
from .base import Study
from .coverage import CoverageStudy
from .dpsgd import DpsgdStudy
from .sagd import ConcentrationStudy, GeneralizationStudy, RateStudy
from .trajectory import TrajectoryStudy

#: Studies by their config name; the first is the default.
STUDIES: dict[str, Study] = {s.name: s for s in (CoverageStudy(), TrajectoryStudy(), DpsgdStudy(),
                                                 ConcentrationStudy(), RateStudy(), GeneralizationStudy())}
#: The study of a config that does not name one.
DEFAULT_STUDY = "coverage"


def get_study(name) -> Study:
    """The study called ``name``, with a one-line error naming the choices."""
    if not isinstance(name, str) or name not in STUDIES:
        raise ConfigError(f"study = {cfg.show(name)} is not one of: {', '.join(STUDIES)}")
    return STUDIES[name]


def resolve(mapping: dict, where: str = "config") -> Config:
    """Validate a raw mapping (its ``study`` key picks the study) into a :class:`~ldpsim.engine.runs.config.Config`."""
    study = get_study(mapping.get("study", DEFAULT_STUDY))
    return cfg.resolve(mapping, study, where)


def load(path: str | Path | None = None, overrides: dict | None = None, overrides_from: str = "--set") -> Config:
    """Load a config file, apply overrides (which win), and validate.

    Parameters
    ----------
    path : str or Path, optional
        YAML file; defaults only if omitted.
    overrides : dict, optional
        Key -> value from the command line (``--set``, ``--n``, ...) or the
        Python API, checked against the keys of the config's study.
    overrides_from : str
        Where the overrides came from, for error messages.

    Returns
    -------
    Config
    """
    mapping = cfg.load_yaml(path) if path is not None else {}
    where = f"config file {str(path)!r}" if path is not None else "config"
    if path is not None:  # a user's file named in the config is found from the config's folder
        mapping = anchor_user_files(mapping, Path(path).parent)
    overrides = dict(overrides or {})
    study = get_study(overrides.get("study", mapping.get("study", DEFAULT_STUDY)))
    keys = study.config_keys({**mapping, **overrides})
    cfg.check_keys(overrides, overrides_from, [k.name for k in keys + cfg.RUN_KEYS] + ["study"])
    mapping.update(overrides)
    return cfg.resolve(mapping, study, where)


def anchor_user_files(mapping: dict, folder: Path) -> dict:
    """``mapping`` with the relative paths of users' files (``model``, ``mechanism``, ``streams``, ``methods``) from ``folder``."""
    from ..engine.runs.usercode import anchor

    return {k: anchor(v, folder) if k in ("model", "mechanism", "streams", "methods") else v for k, v in mapping.items()}


__all__ = ["DEFAULT_STUDY", "STUDIES", "Study", "get_study", "load", "resolve"]

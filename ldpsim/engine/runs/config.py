"""Run configuration: YAML (or command-line) values validated against a study's keys.

A study declares its config keys as :class:`Key` objects: the type, the
default, the allowed range and whether a list value is a grid axis. Keys are
named after the papers' symbols and double as command-line names
(``--set KEY=VALUE`` works for each). :func:`resolve` checks every value
(one-line :class:`~ldpsim.engine.errors.ConfigError` naming the key, the
value and what is allowed), expands the grid keys into the Cartesian grid of
:class:`Setting` objects (the last grid key, ``n``, varying fastest) and asks
the study to complete, cross-check and seed each setting. Conditions under
which the theory does not hold give one
:class:`~ldpsim.engine.errors.ConfigWarning` per kind.

Nothing here knows a study: :mod:`ldpsim.studies` picks the study named by
the ``study`` key and hands it to :func:`resolve`.
"""

from __future__ import annotations

import difflib
import itertools
import math
import os
import re
import reprlib
import stat
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml

from ..errors import ConfigError, ConfigWarning


class _Shown(reprlib.Repr):
    # bounded: a YAML alias bomb or a list of a million values still prints as one short line
    def __init__(self):
        super().__init__()
        self.maxlevel, self.maxlist, self.maxtuple, self.maxdict, self.maxstring, self.maxother = 3, 8, 8, 6, 60, 60

    def repr_float(self, x, level):
        return str(x)

    def repr_NoneType(self, x, level):
        return "null"


_SHOWN = _Shown()


def show(value) -> str:
    """A value as messages print it: strings quoted, ``None`` as ``null``, long lists cut short."""
    if value is None:
        return "null"
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**20:
        # an integer read from 1e30 prints as 1e+30, not as 31 digits (or not at all past 4300 digits)
        return f"{float(value):g}" if value.bit_length() <= 1000 else f"{'-' if value < 0 else ''}2^{value.bit_length()}"
    return _SHOWN.repr(value)


@dataclass(frozen=True)
class Range:
    """An interval of allowed numbers, printed as in the messages: ``(0, 1)``, ``[1, inf)``.

    Parameters
    ----------
    text : str
        The interval in the usual notation, ``(0, inf]``, ``[0.05, 0.9999]``.
    label : str, optional
        What messages say instead of ``text`` (``"the finite reals"``).
    """

    text: str
    label: str | None = None
    low: float = field(init=False)
    high: float = field(init=False)

    def __post_init__(self):
        match = re.fullmatch(r"([\[(])\s*([^,]+),\s*([^\])]+)([\])])", self.text)
        if match is None:
            raise ValueError(f"bad interval {self.text!r}")
        object.__setattr__(self, "low", float(match.group(2)))
        object.__setattr__(self, "high", float(match.group(3)))

    def __contains__(self, x) -> bool:
        low_ok = x >= self.low if self.text[0] == "[" else x > self.low
        high_ok = x <= self.high if self.text[-1] == "]" else x < self.high
        return bool(low_ok and high_ok)

    def __str__(self) -> str:
        return self.label or self.text


def plain(value):
    """``value`` with numpy scalars and arrays turned into Python numbers and lists (inside lists and dicts too).

    The API takes ``n=np.int64(2000)``, ``reps=np.int32(3)``, ``tau=np.array([0.5, 0.9])``
    as it takes ``2000``, ``3`` and ``[0.5, 0.9]``.
    """
    if hasattr(value, "dtype") and hasattr(value, "tolist"):  # a numpy scalar or array (numpy not imported here)
        return plain(value.tolist())
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(plain(v) for v in value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    return value


def check_range(key: str, value, ok: bool, allowed) -> None:
    """Raise ``"{key} = {value} is outside {allowed}"`` unless ``ok``."""
    if not ok:
        raise ConfigError(f"{key} = {show(value)} is outside {allowed}")


def as_int(key: str, value) -> int:
    """An integer from an int, an integral float or a number written as a string (``"1e6"``)."""
    if isinstance(value, bool):
        raise ConfigError(f"{key} = {show(value)} is not an integer")
    if isinstance(value, int):
        return value
    number = value
    if isinstance(value, str):  # PyYAML reads 1e8 as a string
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(f"{key} = {show(value)} is not an integer") from None
    if isinstance(number, float) and math.isfinite(number) and number.is_integer():
        return int(number)
    raise ConfigError(f"{key} = {show(value)} is not an integer")


def as_float(key: str, value) -> float:
    """A float from a number or a number written as a string (``"inf"``, ``"5e-1"``); NaN is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ConfigError(f"{key} = {show(value)} is not a number")
    try:
        number = float(value)
    except ValueError:
        raise ConfigError(f"{key} = {show(value)} is not a number") from None
    if math.isnan(number):
        raise ConfigError(f"{key} = {show(value)} is not a number")
    return number


#: What a single value of each kind is called in messages.
_KIND_NAMES = {"int": "integer", "float": "number", "choice": "value", "choices": "list", "any": "value"}


@dataclass(frozen=True)
class Key:
    """One config key of a study.

    Parameters
    ----------
    name : str
        The key, as configs and ``--set`` spell it.
    kind : {'int', 'float', 'choice', 'choices', 'any'}
        ``choice``: one of ``choices``; ``choices``: a non-empty list of
        ``choices``, kept in their order; ``any``: converted by ``convert``.
    default : object
        Value when the config does not give one.
    grid : bool
        Whether a list value expands into a grid axis; other keys take one
        value per run.
    range : Range, optional
        Allowed numbers (``int`` and ``float`` keys).
    choices : tuple of str
        Allowed values (``choice`` and ``choices`` keys).
    nullable : bool
        Whether ``None`` is a value (``mechanism``: the model's own default).
    convert : callable, optional
        ``convert(name, value) -> value`` for ``any`` keys; raises ConfigError.
    help : str
        One line for the README's key table and ``--help``.
    label : str, optional
        What the key allows, as messages say it (default: from ``kind``, ``range`` and ``choices``).
    hint : str
        Added to the refusal of a value of the wrong kind (a user's key whose default fixed its kind).
    """

    name: str
    kind: str = "float"
    default: Any = None
    grid: bool = True
    range: Range | None = None
    choices: tuple = ()
    nullable: bool = False
    convert: Callable | None = None
    help: str = ""
    label: str | None = None
    hint: str = ""

    def allowed(self) -> str:
        """What values the key takes, as messages say it."""
        if self.label is not None:
            return self.label
        if self.kind in ("choice", "choices"):
            return "one of: " + ", ".join(self.choices) if self.kind == "choice" else "a list of: " + ", ".join(
                self.choices)
        kind = _KIND_NAMES.get(self.kind, "value")
        article = "an" if kind[0] in "aeiou" else "a"
        return f"{article} {kind} in {self.range}" if self.range is not None else f"{article} {kind}"

    def parse(self, value):
        """One value of this key, converted and checked (a grid key's list: one element)."""
        if value is None:
            if self.nullable:
                return None
            # `methods:` with nothing after it, or `--set tau=`
            raise ConfigError(f"{self.name} = null has no value; give {self.allowed()}")
        if self.kind == "int":
            try:
                value = as_int(self.name, value)
            except ConfigError as exc:
                if not self.hint:
                    raise
                raise ConfigError(f"{exc} {self.hint}") from None
        elif self.kind == "float":
            value = as_float(self.name, value)
        elif self.kind == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise ConfigError(f"{self.name} = {show(value)} is not one of: {', '.join(self.choices)}")
        elif self.kind == "choices":
            given = as_list(value)
            if isinstance(value, dict):
                raise ConfigError(f"{self.name} = {show(value)} is a mapping; give {self.allowed()}")
            for item in given:
                if not isinstance(item, str) or item not in self.choices:
                    raise ConfigError(f"{self.name} contains {show(item)}; allowed: {', '.join(self.choices)}")
            if not given:
                raise ConfigError(f"{self.name} = [] is empty; allowed: {', '.join(self.choices)}")
            return tuple(c for c in self.choices if c in given)
        elif self.convert is not None:
            value = self.convert(self.name, value)
        if self.range is not None:
            check_range(self.name, value, value in self.range, self.range)
        return value

    def values(self, raw) -> list:
        """All values given for this key: a grid key's list (repeats dropped), or the one value."""
        if self.kind == "choices" or not isinstance(raw, (list, tuple)):
            return [self.parse(raw)]
        if not self.grid:
            raise ConfigError(f"{self.name} = {show(raw)} must be a single {_KIND_NAMES.get(self.kind, 'value')}, "
                              "not a list")
        if not raw:
            raise ConfigError(f"{self.name} = [] is empty")
        return list(dict.fromkeys(self.parse(v) for v in raw))  # drop repeats, keep order


def as_list(value) -> list:
    """``value`` as a list (a scalar is a list of one; ``None`` is the empty list)."""
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


class Setting:
    """One point of a study's grid: a value per grid key, and the identity of its random streams.

    Values read as attributes (``setting.tau``); a setting is immutable,
    hashable and picklable (tasks carry it to workers).

    Parameters
    ----------
    values : dict
        Grid key -> value, in the study's key order.
    seed_key : int
        Replication ``r`` of the setting draws from
        ``SeedSequence(root, spawn_key=(seed_key, r))`` (:mod:`ldpsim.engine.dialect.rng`).
    """

    __slots__ = ("_values", "seed_key")

    def __init__(self, values: dict, seed_key: int = 0):
        object.__setattr__(self, "_values", dict(values))
        object.__setattr__(self, "seed_key", int(seed_key))

    def __getattr__(self, name):
        try:
            return self._values[name]
        except KeyError:
            raise AttributeError(f"setting has no key {name!r}") from None

    def __setattr__(self, name, value):
        raise AttributeError("a Setting is immutable; use replace()")

    def as_dict(self) -> dict[str, Any]:
        """Key -> value, in the study's key order."""
        return dict(self._values)

    def replace(self, **changes) -> "Setting":
        """A copy with some values changed (same seed key)."""
        return Setting({**self._values, **changes}, self.seed_key)

    def _identity(self):
        return tuple(self._values.items()), self.seed_key

    def __eq__(self, other):
        return isinstance(other, Setting) and self._identity() == other._identity()

    def __hash__(self):
        return hash(self._identity())

    def __reduce__(self):
        return Setting, (self._values, self.seed_key)

    def __repr__(self):
        return "Setting(" + ", ".join(f"{k}={v!r}" for k, v in self._values.items()) + ")"


@dataclass(frozen=True)
class Config:
    """A validated run: the study, its grid of settings and its per-run keys.

    The per-run keys of the study (``methods``, ``checkpoints``, ...) read as
    attributes too: ``config.methods`` is ``config.options["methods"]``.

    Attributes
    ----------
    study : ldpsim.studies.base.Study
        What the run computes (``study.name`` is the config's ``study`` value).
    settings : tuple of Setting
        Grid points, the last grid key (``n``) varying fastest.
    reps : int
        Monte Carlo replications per setting.
    seed : int
        Root seed.
    options : dict
        The study's per-run keys (not grid axes).
    varied : tuple of str
        Grid keys with more than one value.
    values : dict
        The resolved key -> value (or list) mapping, as recorded in meta.json.
    """

    study: Any
    settings: tuple[Setting, ...]
    reps: int
    seed: int
    options: dict
    varied: tuple[str, ...]
    values: dict

    def __getattr__(self, name):
        options = self.__dict__.get("options", {})
        if name in options:
            return options[name]
        raise AttributeError(f"config has no key {name!r}")


#: Keys every study takes, after its own: which study, how many replications, the root seed.
RUN_KEYS = (
    Key("reps", "int", 500, grid=False, range=Range("[1, inf)"), help="Monte Carlo replications per setting"),
    Key("seed", "int", 20240501, grid=False, range=Range("[0, inf)"), help="root seed"),
)


#: Most settings one run may have (the grid is checked before it is expanded).
MAX_SETTINGS = 100_000


def check_run_memory(study, settings, options: dict, reps: int, workers: int = 1) -> None:
    """Refuse a run whose replications would not fit in memory, before any work (one line).

    Checks the largest per-replication estimate of the study
    (:meth:`~ldpsim.studies.base.Study.memory`) times ``workers``, and the
    arrays the driver keeps for all ``reps`` replications of every setting
    until the summary.
    """
    from .resources import check_memory

    worst, worst_total = [], -1.0
    for s in settings:
        terms = study.memory(s, options)
        total = sum(b for b, _ in terms)
        if total > worst_total:
            worst, worst_total = terms, total
    if worst:
        check_memory(worst, per="per replication" if workers == 1 else "at once",
                     hint="lower --n-jobs (n_jobs)" if workers > 1 else "", copies=workers)
    kept = reps * sum(study.kept_bytes(s, options) for s in settings)
    if kept:
        check_memory([(kept, f"the arrays of reps = {show(reps)} replications x {len(settings)} settings")],
                     per="for the results", hint="lower reps or split the grid into several runs")


def check_keys(mapping: dict, where: str, allowed) -> None:
    """Refuse a key that is not in ``allowed``, with a guess at the one meant."""
    allowed = list(allowed)
    for key in mapping:
        if key not in allowed:
            guess = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {guess[0]!r}?)" if guess else ""
            raise ConfigError(f"unknown key {show(key)} in {where}{hint}; allowed: {', '.join(allowed)}")


#: Keys a setting may blank on purpose although given: ``budget`` as a number becomes ``mu`` or ``epsilon``,
#: and a mechanism named beside an infinite budget is the spelling of a non-private run.
_BLANKED_ON_PURPOSE = ("budget", "mechanism")


def check_read(mapping: dict, axes: dict, settings) -> None:
    """Refuse a key the user gave that no setting reads (the study blanked it in every one).

    A grid over models blanks ``tau`` for ``linear``; that is what a grid
    means. But ``epsilon: 0.5`` beside ``mechanism: gdp`` (whose budget is
    ``mu``), ``delta`` beside a pure mechanism or ``tau`` for ``linear``
    alone would run a different experiment than the one written, silently.
    An infinite ``epsilon`` or ``mu`` is exempt: it is how any budget key says
    "non-private".
    """
    for key, given in mapping.items():
        if key not in axes or key in _BLANKED_ON_PURPOSE or given is None:
            continue
        values = [v for v in (given if isinstance(given, list) else [given]) if v is not None]
        if not values or (key in ("epsilon", "mu") and all(isinstance(v, (int, float)) and math.isinf(v)
                                                           for v in values)):
            continue
        if any(getattr(s, key, None) is not None for s in settings):
            continue
        first = settings[0]
        what = ", ".join(f"{k} = {show(getattr(first, k))}" for k in ("model", "mechanism")
                         if getattr(first, k, None) is not None)
        other = {"epsilon": "mu", "mu": "epsilon"}.get(key)
        budget = (f"; its budget is {other} = {show(getattr(first, other))}"
                  if other and getattr(first, other, None) is not None else "")
        where = f" ({what}{budget})" if what else ""
        raise ConfigError(f"{key} = {show(given)} is read by no setting of this run{where}: remove it, or "
                          "change what it belongs to")


def warn_grouped(found: dict[str, list[str]], kinds: dict[str, tuple[str, str]], total: int) -> None:
    """One :class:`ConfigWarning` per kind of condition, however many settings meet it.

    Parameters
    ----------
    found : dict
        Kind -> the messages of the settings that meet it.
    kinds : dict
        Kind -> (what the condition is called, why it matters).
    total : int
        Number of settings.

    A kind met with one message (one offending value) warns with that
    message; a sweep that crosses a boundary on purpose (``beta <= gamma`` in
    10 of 50 cells) gets one line counting the settings and naming the first.
    """
    for kind, messages in found.items():
        distinct = list(dict.fromkeys(messages))
        if len(distinct) == 1:
            text = distinct[0]
        else:
            label, why = kinds[kind]
            first = distinct[0].split(":")[0].split(";")[0]
            text = f"{label} in {len(messages)} of {total} settings (first: {first}): {why}"
        warnings.warn(text, ConfigWarning, stacklevel=4)


def resolve(mapping: dict, study, where: str = "config") -> Config:
    """Validate a raw key -> value mapping (defaults filled in) into a :class:`Config` of ``study``.

    Parameters
    ----------
    mapping : dict
        The study's keys (``study`` itself, if present, is taken as already
        read); grid keys may hold lists.
    study : ldpsim.studies.base.Study
        Declares the keys (``study.keys``) and completes, checks and seeds
        each setting.
    where : str
        Where the mapping came from, for error messages.

    Returns
    -------
    Config

    Raises
    ------
    ConfigError
        On the first bad key or value.
    """
    for k, v in mapping.items():
        if isinstance(v, (set, frozenset)):  # the grid's and the table's order would be the hash order
            raise ConfigError(f"{k} = {show(v)} is a set, which keeps no order: give a list")
    mapping = {k: plain(v) for k, v in mapping.items() if k != "study"}
    keys = tuple(study.config_keys(mapping)) + RUN_KEYS
    check_keys(mapping, where, [k.name for k in keys] + ["study"])
    raw = {k.name: mapping.get(k.name, k.default) for k in keys}

    options = {}
    for key in keys:
        if not key.grid:
            options[key.name] = key.values(raw[key.name])[0]
    axes = {key.name: key.values(raw[key.name]) for key in keys if key.grid}
    size = math.prod(len(v) for v in axes.values())
    if size > MAX_SETTINGS:  # before expanding it: a grid of 10^12 points would not fit in memory
        shape = " x ".join(f"{len(v)} {k}" for k, v in axes.items() if len(v) > 1)
        raise ConfigError(f"the grid has {size} settings ({shape}); at most {MAX_SETTINGS} in one run: "
                          "split it into several runs")
    combos = (dict(zip(axes, combo)) for combo in itertools.product(*axes.values()))
    # a study blanks keys a setting does not read, so that repeats collapse
    settings = tuple(dict.fromkeys(study.make_setting(values) for values in combos))
    check_read(mapping, axes, settings)

    for s in settings:
        study.validate(s, options)
    check_run_memory(study, settings, options, options["reps"])
    found: dict[str, list[str]] = {}
    for s in settings:
        for kind, message in study.warnings(s, options):
            found.setdefault(kind, []).append(message)
    warn_grouped(found, study.warning_kinds, len(settings))

    axes = {k: list(dict.fromkeys(getattr(s, k) for s in settings)) for k in axes}
    varied = tuple(k for k in axes if len(axes[k]) > 1)
    values = {k: (v if len(v) > 1 else v[0]) for k, v in axes.items()}
    values.update({k: list(v) if isinstance(v, tuple) else v for k, v in options.items()})
    values["study"] = study.name
    reps, seed = options.pop("reps"), options.pop("seed")
    return Config(study, settings, reps, seed, options, varied, values)


#: A config is a few lines; a file larger than this is not one (``/dev/zero``, a data file given by mistake).
MAX_CONFIG_BYTES = 1 << 20


#: Most values (list items and mapping entries, aliases counted each time they are used) a config may hold.
MAX_CONFIG_VALUES = 100_000


def _too_many_values(data, limit: int) -> bool:
    """Whether ``data`` holds more than ``limit`` values once its shared (aliased) parts are counted per use."""
    count, stack = 0, [data]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            items = list(item.keys()) + list(item.values())
        elif isinstance(item, (list, tuple)):
            items = item
        else:
            continue
        count += len(items)
        if count > limit:
            return True
        stack.extend(items)
    return False


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML's safe loader, refusing a key given twice in one mapping (YAML forbids it; PyYAML keeps the last).

    Merge keys (``<<: *x``) work as in PyYAML's: the merged mapping's keys, each overridden by a key given beside it.
    """


def _unique_mapping(loader, node, deep=False):
    seen = set()
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *x`: construct_mapping merges it, a key given here wins
            continue
        key = loader.construct_object(key_node, deep=deep)
        try:
            duplicate = key in seen
        except TypeError:  # an unhashable key: PyYAML's own error says so
            break
        if duplicate:
            raise yaml.constructor.ConstructorError(None, None, f"key {show(key)} is given twice",
                                                    key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _unique_mapping)


def read_text(path: Path, what: str) -> str:
    """The UTF-8 text of a small file, with one-line errors (``what`` names it: ``config file 'x.yaml'``)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise ConfigError(f"{what} not found") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise ConfigError(f"{what} cannot be read: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(mode):
        raise ConfigError(f"{what} is a directory, not a file")
    if not (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):  # a pipe (<(...)) is fine, a device is not
        raise ConfigError(f"{what} is not a regular file")
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{what} cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{what} is larger than {MAX_CONFIG_BYTES >> 20} MiB: not a config")
    try:
        return data.decode("utf-8-sig")  # a byte-order mark, as some editors write, is fine
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ConfigError(f"{what} is not UTF-8 text (byte 0x{data[exc.start]:02x} at line {line})") from None


def load_yaml(path: str | Path) -> dict:
    """Read a config file into a mapping, with one-line errors."""
    what = f"config file {str(path)!r}"
    text = read_text(Path(path), what)
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "syntax error"
        raise ConfigError(f"{what} is not valid YAML: {problem}{where}") from None
    except RecursionError:
        raise ConfigError(f"{what} is not valid YAML: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if "4300" in text or "Exceeds the limit" in text:
            text = "an integer with more than 4300 digits"
        raise ConfigError(f"{what} is not valid YAML: {text}") from None
    if _too_many_values(data, MAX_CONFIG_VALUES):  # aliases of aliases: 3 kB can stand for 10^9 values
        raise ConfigError(f"{what} expands to more than {MAX_CONFIG_VALUES} values (YAML aliases repeating lists "
                          "inside lists): a config is a few keys with short lists")
    if data is None:  # a file saved empty, or the wrong file: running every default would hide it
        raise ConfigError(f"{what} holds no keys (it is empty or all comments): give at least the model "
                          "(model: quantile); python -m ldpsim keys MODEL lists a model's keys")
    if not isinstance(data, dict):
        raise ConfigError(f"{what} must hold a mapping of keys to values")
    return data


def parse_assignment(text: str) -> tuple[str, Any]:
    """Parse a ``--set KEY=VALUE`` argument; VALUE is read as YAML (``[0.5, 0.9]``, ``inf``).

    The key is checked later, against the keys of the config's study.
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"--set expects KEY=VALUE, got {text!r}")
    try:
        parsed = yaml.load(value, Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except (yaml.YAMLError, RecursionError, ValueError):
        parsed = value  # not YAML: the key's check says what is wrong with the text
    if _too_many_values(parsed, MAX_CONFIG_VALUES):
        raise ConfigError(f"--set {key}=... expands to more than {MAX_CONFIG_VALUES} values (YAML aliases repeating "
                          "lists inside lists)")
    return key, parsed


__all__ = ["Config", "ConfigError", "ConfigWarning", "Key", "MAX_SETTINGS", "RUN_KEYS", "Range", "Setting", "as_float",
           "as_int", "as_list", "check_keys", "check_range", "check_run_memory", "load_yaml",
           "parse_assignment", "plain", "read_text", "resolve", "show"]

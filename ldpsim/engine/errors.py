"""The exceptions ldpsim turns into one-line messages at the command line."""

from __future__ import annotations


class ConfigError(ValueError):
    """Input that cannot be run (a config value, a path, a file); the message is one line."""


class ConfigWarning(UserWarning):
    """A config value that runs but lies outside what the theory covers."""


class MissingExtra(RuntimeError):
    """An optional dependency (an ``ldpsim[...]`` extra) is not installed; the message is one line."""


__all__ = ["ConfigError", "ConfigWarning", "MissingExtra"]

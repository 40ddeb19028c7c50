"""The plain checks every config section shares (a value one of a few choices, a positive integer), each one
`ConfigError` line naming the field. Imports only `errors`, so a stage package's section (`<package>/<name>_config.py`)
uses it without importing the rest of the configuration."""

from __future__ import annotations

from llm_perf_opt.errors import ConfigError


def _one_of(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError.field(name, value, f"must be one of {', '.join(allowed)}")


def _positive_int(name: str, value: object, what: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError.field(name, value, f"must be a positive integer {what}".rstrip())

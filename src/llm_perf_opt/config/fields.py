"""The plain checks every config section shares (a value one of a few choices, a positive integer), each one
`ConfigError` line naming the field. Imports only `errors`, so a stage package's section (`<package>/<name>_config.py`)
uses it without importing the rest of the configuration."""

from __future__ import annotations

from llm_perf_opt.errors import ConfigError

# The largest batch any job takes (`workload.batch`, `workload.pages`, `serve.batches`): the largest batch the
# serving math searches (`analytic.sizing`), four times the top of the default latency curve. A bound the work
# respects, checked before anything is built: a batch of 10^9 is one line, never a list of 10^9 pages.
MAX_BATCH = 4096


def _one_of(name: str, value: object, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError.field(name, value, f"must be one of {', '.join(allowed)}")


def _positive_int(name: str, value: object, what: str = "") -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ConfigError.field(name, value, f"must be a positive integer {what}".rstrip())


def _batch(name: str, value: object, what: str = "(pages served together)") -> None:
    """A positive integer no larger than MAX_BATCH."""
    _positive_int(name, value, what)
    if value > MAX_BATCH:  # type: ignore[operator]
        raise ConfigError.field(
            name,
            value,
            f"must be at most {MAX_BATCH:,} (the largest batch any job takes, the top of the serving math's "
            "search; ./dev size finds the best batch itself)",
        )

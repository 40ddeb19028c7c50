"""Fixtures of the trace job's tests: the session's default run (`default_run` in tests/conftest.py,
`pipelines/trace.py` as `./dev trace` runs it: tiny twin, Gundam, letter page, CPU, profile on,
hardware=measured) under the names its tests read it by. The same run with sdpa attention, without its timing
stages and timed afterwards (`untimed_run`, `timed_run`) is in tests/conftest.py: the report tests read it too."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def traced_run(default_run) -> Path:
    """The default `./dev trace` run, as the trace job leaves it (the session's `default_run`)."""
    return default_run[0]


@pytest.fixture(scope="session")
def default_trace(default_run):
    """(run dir, completed process) of `./dev trace` with its defaults (twin_tiny, gundam, CPU, profile on,
    hardware=measured): the session's `default_run` (tests/conftest.py)."""
    return default_run

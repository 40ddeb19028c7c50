"""Fixtures for the twin tests: the tiny twin (built once per session)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # --import-mode=importlib: make twin_testlib importable
    sys.path.insert(0, str(HERE))

from llm_perf_opt.dsocr.spec import ModelSpec  # noqa: E402 (after the sys.path line above)


@pytest.fixture(scope="session")
def tiny_spec() -> ModelSpec:
    return ModelSpec.tiny()


@pytest.fixture(scope="session")
def twin_tiny(tiny_spec):
    from llm_perf_opt.dsocr.twin import build_twin

    return build_twin(tiny_spec, seed=0)

"""Shared by the export tests: one run of the export stage on the tiny twin in Gundam mode (shared by the
tests that read its files). Helpers live in export_helpers (this directory is put on sys.path)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # --import-mode=importlib: make export_helpers importable
    sys.path.insert(0, str(HERE))

from export_helpers import GUNDAM_SMALL_PAGE, job_inputs, open_session, typed_cfg  # noqa: E402


@pytest.fixture(scope="session")
def gundam_export(tmp_path_factory) -> tuple[object, Path, dict]:
    """(cfg, run dir, the stage's return value) of the export stage on twin_tiny, Gundam, 2 crops."""
    from llm_perf_opt.export import run_export_stage

    cfg = typed_cfg("model=twin_tiny", *GUNDAM_SMALL_PAGE)
    out = tmp_path_factory.mktemp("gundam_export")
    with open_session(cfg) as session:
        result = run_export_stage(cfg, session, job_inputs(cfg), out)
    return cfg, out, result

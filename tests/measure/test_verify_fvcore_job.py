"""`verify.fvcore=true`: the trace job counts the real prefill with fvcore too and reconciles it in
verification.json (off by default: `"fvcore": null`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from llm_perf_opt.measure import load_verification

pytestmark = pytest.mark.slow

REPO_ROOT = Path(__file__).resolve().parents[2]


def _trace(run_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "llm_perf_opt.jobs.trace",
            f"hydra.run.dir={run_dir}",
            "model=twin_tiny",
            "workload=tiny",
            "trace.capture=false",
            "profile=off",
            "~hardware",
            *overrides,
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
    )


def test_trace_job_reconciles_fvcore_when_asked(tmp_path):
    proc = _trace(tmp_path, "verify.fvcore=true")
    assert proc.returncode == 0, proc.stderr[-3000:]
    v = load_verification(tmp_path / "verification.json")
    assert v.passed and v.fvcore is not None and v.fvcore.ok, v.fvcore
    assert v.fvcore_reconciliation is not None and v.fvcore_reconciliation["ok"]
    prefill = next(c for c in v.checks if c.stage == "prefill")
    assert v.fvcore_reconciliation["torch_total"] == prefill.total_row.measured
    assert prefill.total_row.fvcore == v.fvcore.total > 0
    assert "fvcore - torch =" in proc.stdout  # the console table reconciles it too


def test_fvcore_is_off_by_default(default_run):
    """The default job (the session's `default_run`, tests/conftest.py) runs no fvcore."""
    v = load_verification(default_run[0] / "verification.json")
    assert v.fvcore is None and v.passed

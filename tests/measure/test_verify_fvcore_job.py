"""`verify.fvcore=true`: the trace job counts the real prefill with fvcore too and reconciles it in
verification.json (off by default: `"fvcore": null`)."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir

from llm_perf_opt.measure import load_verification
from llm_perf_opt.runs.entry import CONF_DIR

pytestmark = pytest.mark.slow


def test_trace_job_reconciles_fvcore_when_asked(tmp_path, capsys):
    """The trace job (`trace.job.run_trace`, in this process) on the tiny twin, the forward counted, no capture."""
    from llm_perf_opt.trace.job import run_trace

    overrides = ["model=twin_tiny", "workload=tiny", "trace.capture=false", "profile=off", "~hardware"]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        raw = compose(config_name="config", overrides=[*overrides, "verify.fvcore=true"])
    assert run_trace(raw, tmp_path).status == "ok"
    v = load_verification(tmp_path / "verification.json")
    assert v.passed and v.fvcore is not None and v.fvcore.ok, v.fvcore
    assert v.fvcore_reconciliation is not None and v.fvcore_reconciliation["ok"]
    prefill = next(c for c in v.checks if c.stage == "prefill")
    assert v.fvcore_reconciliation["torch_total"] == prefill.total_row.measured
    assert prefill.total_row.fvcore == v.fvcore.total > 0
    assert "fvcore - torch =" in capsys.readouterr().out  # the console table reconciles it too


def test_fvcore_is_off_by_default(default_run):
    """The default job (the session's `default_run`, tests/conftest.py) runs no fvcore."""
    v = load_verification(default_run[0] / "verification.json")
    assert v.fvcore is None and v.passed

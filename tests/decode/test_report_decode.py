"""The sweep report of a multirun with decode steps shows FLOPs and KV-cache bytes per step (a real sweep of
the tiny twin, then `./dev report`)."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from llm_perf_opt import units
from llm_perf_opt.report.collect import collect_sweep
from llm_perf_opt.report.table import COLUMNS, build_rows, fmt

pytestmark = pytest.mark.slow
REPO_ROOT = Path(__file__).resolve().parents[2]
STEPS = 2


def job(name: str, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(REPO_ROOT / "pipelines" / f"{name}.py"), *args]
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=900,
                          env=dict(os.environ, HYDRA_FULL_ERROR="1"))


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    sweep_dir = tmp_path_factory.mktemp("sweeps") / "decode"
    proc = job("sweep", "model=twin_tiny", "workload=tiny,small", f"trace.decode_steps={STEPS}", "profile=off",
               f"hydra.sweep.dir={sweep_dir}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    proc = job("report", str(sweep_dir))
    assert proc.returncode == 0, proc.stderr[-4000:]
    return sweep_dir


def test_rows_hold_per_step_flops_and_kv_bytes(sweep):
    jobs = collect_sweep(sweep).jobs
    rows = build_rows(jobs)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    for job_, row in zip(jobs, rows):
        steps = job_.summary.decode.rows
        assert row["decode_steps"] == STEPS and row["decode_steps_verified"] == f"{STEPS}/{STEPS}"
        assert row["decode_flops_per_step"] == [s["flops_measured"] for s in steps] == row["decode_flops_per_step_analytic"]
        assert row["kv_bytes_per_step"] == [s["kv_bytes_measured"] for s in steps] == row["kv_bytes_per_step_analytic"]
        assert row["kv_bytes_per_step"][1] > row["kv_bytes_per_step"][0]  # one more token cached
        assert row["decode_s_per_step"] == [None, None]  # profile=off: not timed


def test_markdown_and_csv_show_them(sweep):
    md = (sweep / "report.md").read_text()
    assert "FLOPs per decode step" in md and "KV cache per step" in md and "decode steps verified" in md
    rows = build_rows(collect_sweep(sweep).jobs)
    kinds = {c.key: c.kind for c in COLUMNS}
    for row in rows:
        shown = fmt(row["kv_bytes_per_step"], kinds["kv_bytes_per_step"])
        assert shown == " / ".join(units.nbytes(v) for v in row["kv_bytes_per_step"]) and shown in md
        assert fmt(row["decode_flops_per_step"], kinds["decode_flops_per_step"]) in md
    with open(sweep / "report.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert table[0]["kv_bytes_per_step"] == ";".join(str(v) for v in rows[0]["kv_bytes_per_step"])
    assert table[0]["decode_steps"] == str(STEPS)


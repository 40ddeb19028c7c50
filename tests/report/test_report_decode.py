"""The sweep report of a multirun with decode steps shows FLOPs and KV-cache bytes per step (a real sweep of
the tiny twin: the quick gate's, tiny and gundam with 2 decode steps and no profile; then `./dev report`)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from llm_perf_opt import units
from llm_perf_opt.report.collect import collect_sweep
from llm_perf_opt.report.table import COLUMNS, build_rows, fmt

pytestmark = pytest.mark.slow
STEPS = 2


@pytest.fixture(scope="module")
def sweep(tmp_path_factory, quick_gate) -> Path:
    """A copy of the quick gate's sweep (the session's: tests/conftest.py) and `./dev report` of it (its
    `main`, in this process: the report command's own process is tested in tests/report)."""
    from llm_perf_opt.jobs.report import main as report

    assert quick_gate.proc.returncode == 0, quick_gate.proc.stderr[-4000:]
    sweep_dir = tmp_path_factory.mktemp("sweeps") / "decode"
    shutil.copytree(quick_gate.out / "sweep", sweep_dir)
    overrides = (sweep_dir / "0" / ".hydra" / "overrides.yaml").read_text()
    assert f"trace.decode_steps={STEPS}" in overrides and "profile=off" in overrides, overrides
    assert report([str(sweep_dir)]) == 0
    return sweep_dir


def test_rows_hold_per_step_flops_and_kv_bytes(sweep):
    jobs = collect_sweep(sweep).jobs
    rows = build_rows(jobs)
    assert [r["status"] for r in rows] == ["ok", "ok"]
    for job_, row in zip(jobs, rows):
        steps = job_.summary.decode.rows
        assert row["decode_steps"] == STEPS and row["decode_steps_verified"] == f"{STEPS}/{STEPS}"
        assert (
            row["decode_flops_per_step"]
            == [s["flops_measured"] for s in steps]
            == row["decode_flops_per_step_analytic"]
        )
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

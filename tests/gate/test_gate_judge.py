"""The gate's verdict on real run directories (copies of the quick gate's jobs), altered the way a broken
run would leave them: a grouping check that mismatched, a job that failed, files that are missing. The
files are written and read with the project's own artifact writers and loaders."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from llm_perf_opt.callgraph.grouped import load_grouped_json
from llm_perf_opt.errors import TraceError
from llm_perf_opt.gate.judge import judge_job, judge_sweep
from llm_perf_opt.measure import load_verification, write_verification
from llm_perf_opt.measure.agreement import VerificationRow
from llm_perf_opt.report.collect import collect_sweep
from llm_perf_opt.run_artifacts import ErrorRecord, run_file

pytestmark = pytest.mark.slow

RTOL = 1e-3


@pytest.fixture
def sweep_copy(quick_gate, tmp_path) -> Path:
    assert quick_gate.proc.returncode == 0, quick_gate.proc.stderr[-2000:]
    dest = tmp_path / "sweep"
    shutil.copytree(quick_gate.out / "sweep", dest)
    return dest


def job(sweep: Path, num: int):
    return next(j for j in collect_sweep(sweep).jobs if j.num == num)


def test_the_untouched_jobs_pass(sweep_copy):
    verdicts = judge_sweep(collect_sweep(sweep_copy).jobs, ["workload=tiny", "workload=gundam"], RTOL)
    assert [v.passed for v in verdicts] == [True, True]
    assert any("rows in 4 checks" in n for n in verdicts[1].notes)  # vision, prefill, 2 decode steps


def test_a_grouping_mismatch_is_one_line(sweep_copy):
    path = sweep_copy / "1" / run_file("grouped").file
    grouped = load_grouped_json(path)
    check = grouped.checks[0]
    check.update(status="mismatch", observed=11, expected=12, detail="12 SAM blocks logged, 11 grouped")
    grouped.save(path)
    verdict = judge_job(job(sweep_copy, 1), "workload=gundam", RTOL)
    assert [f.kind for f in verdict.findings] == ["GroupingMismatch"]
    assert verdict.findings[0].line() == (
        f"FAIL job 1 [workload=gundam] | stage grouping | part {check['name']} | runtime log 12 | grouped graph 11 | "
        "error mismatch: 12 SAM blocks logged, 11 grouped"
    )
    case = verdict.junit_case("verify.quick")
    assert case.status == "failure" and case.failures[0].kind == "GroupingMismatch"


def test_a_row_beyond_rtol_is_judged_by_the_gates_rtol(sweep_copy):
    """The gate re-judges every row at its own rtol, whatever the job wrote as `ok`."""
    path = sweep_copy / "0" / "verification.json"
    v = load_verification(path)
    check = v.checks[1]
    row = check.rows[0]
    bumped = VerificationRow(
        row.stage, row.part, row.analytic + row.measured // 100, row.measured, 0.01, True, row.label, row.fvcore
    )  # 1% off, yet marked ok by a lax writer
    check.rows[0] = bumped
    write_verification(path, v)
    verdict = judge_job(job(sweep_copy, 0), "workload=tiny", RTOL)
    assert [f.kind for f in verdict.findings] == ["Divergence"]
    finding = verdict.findings[0]
    assert (finding.stage, finding.part, finding.error) == ("prefill", "(total)", "1% > rtol 0.1%")
    assert judge_job(job(sweep_copy, 0), "workload=tiny", 0.02).passed  # at 2% it passes


def test_a_failed_job_is_a_junit_error_with_its_status(sweep_copy):
    job_dir = sweep_copy / "1"
    (job_dir / "summary.json").unlink()
    try:
        raise TraceError("TorchLens refused the capture")
    except TraceError as exc:
        ErrorRecord.from_exception(exc, {"workload": "gundam"}).save(job_dir / "error.json")
    verdict = judge_job(job(sweep_copy, 1), "workload=gundam", RTOL)
    assert not verdict.ran
    assert [f.line() for f in verdict.findings] == [
        "FAIL job 1 [workload=gundam] | stage job | part — | analytic — | measured — | "
        "error failed: TraceError: TorchLens refused the capture"
    ]
    case = verdict.junit_case("verify.quick")
    assert case.status == "error" and "Traceback" in case.errors[0].detail


def test_missing_artifacts_are_failures_not_passes(sweep_copy):
    job_dir = sweep_copy / "0"
    (job_dir / "verification.json").unlink()
    (job_dir / run_file("grouped").file).unlink()
    verdict = judge_job(job(sweep_copy, 0), "workload=tiny", RTOL)
    assert [(f.kind, f.stage) for f in verdict.findings] == [("Missing", "verify"), ("Missing", "grouping")]


def test_a_job_that_never_started_fails(sweep_copy):
    shutil.rmtree(sweep_copy / "1")
    jobs = collect_sweep(sweep_copy).jobs  # multirun.yaml plans two jobs
    verdicts = judge_sweep(jobs, ["workload=tiny", "workload=gundam"], RTOL)
    assert [v.passed for v in verdicts] == [True, False]
    assert verdicts[1].findings[0].error.startswith("failed: not started")


def test_kv_cache_bytes_that_differ_fail_whatever_the_rtol(sweep_copy):
    """KV-cache bytes are products of shapes: one byte off is a divergence, even at a lax rtol."""
    from dataclasses import replace

    path = sweep_copy / "0" / "verification.json"
    v = load_verification(path)
    assert [r.step for r in v.kv_cache] == [0, 1, 2] and all(r.ok for r in v.kv_cache)  # the quick jobs decode 2 steps
    row = v.kv_cache[2]
    v.kv_cache[2] = replace(row, measured=row.measured + 2, ok=False)
    write_verification(path, v)
    for rtol in (RTOL, 0.5):
        verdict = judge_job(job(sweep_copy, 0), "workload=tiny", rtol)
        assert [f.kind for f in verdict.findings] == ["Divergence"]
        f = verdict.findings[0]
        assert (f.stage, f.part) == ("decode (step 2)", f"KV cache ({row.context_len} tokens)")
        assert f.error == "+2 B (KV-cache bytes must be equal)"


def test_activation_bytes_beyond_rtol_are_a_divergence(sweep_copy):
    from dataclasses import replace

    path = sweep_copy / "0" / "verification.json"
    v = load_verification(path)
    assert v.activation and all(r.ok for r in v.activation)
    i = next(i for i, r in enumerate(v.activation) if r.part)  # a part, not the total
    r = v.activation[i]
    v.activation[i] = replace(r, analytic=r.analytic * 2, rel_error=0.5, ok=False)
    write_verification(path, v)
    verdict = judge_job(job(sweep_copy, 0), "workload=tiny", RTOL)
    assert [(f.kind, f.stage) for f in verdict.findings] == [("Divergence", "prefill (activation bytes)")]
    assert verdict.findings[0].error == "50% > rtol 0.1%"

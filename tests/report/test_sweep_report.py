"""A real sweep of the trace job and its report: files, one row per job, CSV columns, failures, progress."""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys

import pytest
from job_scripts import run_job_in_process
from shared_runs import SMALL_SWEEP_PAGE

from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.errors import ExitCode
from llm_perf_opt.report.serving_report import SERVING_COLUMNS
from llm_perf_opt.report.table import job_columns
from llm_perf_opt.run_artifacts import load_error

from .conftest import run_report, run_sweep

EXPECTED_COLUMNS = {
    "job",
    "status",
    "model",
    "mode",
    "page",
    "grid",
    "views",
    "image_tokens",
    "seq_len",
    "params",
    "ops",
    "module_calls",
    "flops_vision_measured",
    "flops_vision_analytic",
    "rel_error_vision",
    "flops_prefill_measured",
    "flops_prefill_analytic",
    "rel_error_prefill",
    "activation_bytes_prefill",
    "capture_s",
    "grouped_svg",
}
WORKLOADS = {"tiny": VisionWorkload(512, 512, False), "gundam": VisionWorkload(1024, 640, True)}


def read_csv(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def test_report_files_and_one_row_per_job(ok_sweep):
    sweep, _ = ok_sweep
    proc = run_report(sweep)
    assert proc.returncode == 0, proc.stderr
    assert "2 jobs (2 ok, 0 failed)" in proc.stdout
    for name in ("report.csv", "report.md", "report.html"):
        assert (sweep / name).is_file(), name
    job_dirs = sorted(p for p in sweep.iterdir() if (p / ".hydra").is_dir())
    rows = read_csv(sweep / "report.csv")
    assert len(rows) == len(job_dirs) == 2
    assert EXPECTED_COLUMNS <= set(rows[0]), EXPECTED_COLUMNS - set(rows[0])
    # every column with the per-part ones of v1's reported parts, then the predicted times per GPU (default:
    # h100_sxm; report.sweep_hardware: the ideal TTFT, the eager TTFT and decode step), then the serving columns
    # (the jobs ran with hardware=measured, so each wrote serving.json)
    v1_parts = ("sam", "clip", "projector", "decoder", "lm_head")
    assert list(rows[0]) == (
        [c.key for c in job_columns(v1_parts)]
        + ["ttft_h100_sxm_s", "ttft_eager_h100_sxm_s", "decode_eager_h100_sxm_s"]
        + [c.key for c in SERVING_COLUMNS]
    )
    by_mode = {r["mode"]: r for r in rows}
    assert set(by_mode) == {"tiny", "gundam"}
    for mode, row in by_mode.items():
        assert row["status"] == "ok"
        layout = compute_view_layout(WORKLOADS[mode], *SMALL_SWEEP_PAGE)  # the sweep's page
        assert int(row["image_tokens"]) == layout.image_tokens
        assert row["grid"] == f"{layout.w_crop}x{layout.h_crop}"
        assert int(row["views"]) == layout.num_views
        assert float(row["flops_prefill_analytic"]) > float(row["flops_vision_analytic"]) > 0
    assert float(by_mode["gundam"]["flops_prefill_analytic"]) > float(by_mode["tiny"]["flops_prefill_analytic"])
    plots = sweep / "report_plots"
    for stem in ("tokens_by_mode", "flops_by_mode", "flops_by_part"):
        assert (plots / f"{stem}.svg").stat().st_size > 1000
        assert (plots / f"{stem}.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (sweep / "report.html").read_text(encoding="utf-8")
    assert page.count("<svg") >= 3 and "report_plots/flops_by_part.png" in page
    md = (sweep / "report.md").read_text(encoding="utf-8")
    assert "| job | status |" in md and "![" in md


def test_sweep_prints_progress(ok_sweep):
    _, proc = ok_sweep
    err = proc.stderr
    assert "sweep: 2 jobs" in err
    assert "job 1/2 start: model=twin_tiny workload=tiny" in err
    assert "job 2/2 ok in" in err
    assert "sweep done: 2 jobs (2 ok, 0 failed)" in err


def test_failing_job_is_recorded_and_the_sweep_goes_on(failing_sweep):
    sweep, proc = failing_sweep
    assert (sweep / "0" / "summary.json").is_file() and (sweep / "2" / "summary.json").is_file()
    error = load_error(sweep / "1" / "error.json")
    assert error.type == "ConfigError" and "workload.base_size=1000" in error.message and error.expected
    assert not (sweep / "1" / "summary.json").exists()  # refused before any model was built
    assert "job 2/3 failed: ConfigError" in proc.stderr and "job 3/3 ok" in proc.stderr

    rep = run_report(sweep)
    assert rep.returncode == ExitCode.JOBS_FAILED, rep.stderr  # scripts and CI notice the failed job
    assert "3 jobs (2 ok, 1 failed)" in rep.stdout
    rows = {int(r["job"]): r for r in read_csv(sweep / "report.csv")}
    assert rows[0]["status"] == rows[2]["status"] == "ok"
    assert rows[1]["status"].startswith("failed: ConfigError: workload.base_size=1000 is invalid")
    assert rows[1]["image_tokens"] == ""  # nothing invented for a failed job
    page = (sweep / "report.html").read_text(encoding="utf-8")
    assert "<h2>Failures</h2>" in page and "1/error.json" in page
    assert "status-failed" in page


def test_dead_and_unstarted_jobs(failing_sweep, tmp_path):
    sweep = tmp_path / "copy"
    shutil.copytree(failing_sweep[0], sweep)
    (sweep / "0" / "summary.json").unlink()  # died without a word
    shutil.rmtree(sweep / "2")  # never started
    rep = run_report(sweep, "--no-plots")
    assert rep.returncode == ExitCode.JOBS_FAILED, rep.stderr
    rows = {int(r["job"]): r for r in read_csv(sweep / "report.csv")}
    assert len(rows) == 3  # multirun.yaml says 3 jobs
    assert rows[0]["status"].startswith("failed: no result: no summary.json or error.json")
    assert rows[2]["status"].startswith("failed: not started")
    assert (
        rows[2]["overrides"] == "model=twin_tiny trace=forward_only profile=off ~hardware=null workload.base_size=1280"
    )


def test_report_of_a_directory_that_is_no_sweep(tmp_path):
    rep = run_report(tmp_path / "nowhere")
    assert rep.returncode == 2 and "no such sweep directory" in rep.stderr
    rep = run_report(tmp_path)
    assert rep.returncode == 2 and "not a sweep (no multirun.yaml)" in rep.stderr


def test_joblib_launcher_is_refused_before_any_job(tmp_path):
    sweep = tmp_path / "joblib"
    proc = run_sweep(
        sweep,
        "model=twin_tiny",
        "workload=tiny,gundam",
        "hydra.launcher._target_=hydra_plugins.hydra_joblib_launcher.joblib_launcher.JoblibLauncher",
    )
    assert proc.returncode == 2
    assert "error: hydra.launcher=hydra_plugins.hydra_joblib_launcher" in proc.stderr
    assert "is not supported" in proc.stderr and "TorchLens" in proc.stderr and "submitit_local" in proc.stderr
    assert not sweep.exists()


@pytest.mark.slow
def test_submitit_local_launcher(tmp_path):
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="the 'cluster' extra is not installed")
    sweep = tmp_path / "submitit"
    proc = run_sweep(
        sweep,
        "hydra/launcher=submitit_local",
        "model=twin_tiny",
        "trace=forward_only",
        "profile=off",
        "~hardware",  # the launcher is under test, not the roofline stage: each job process skips its plots
        "workload=tiny,small",
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (sweep / ".submitit").is_dir()
    assert "sweep done: 2 jobs (2 ok, 0 failed or unfinished)" in proc.stderr
    logs = "".join(p.read_text() for p in (sweep / ".submitit").rglob("*_log.err"))
    assert "job 1/2 start" in logs and "job 2/2 ok" in logs  # progress from inside the job processes
    rep = run_report(sweep, "--no-plots")
    assert rep.returncode == 0 and "2 jobs (2 ok, 0 failed)" in rep.stdout


def test_slurm_launcher_config_composes():
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher", reason="the 'cluster' extra is not installed")
    proc = run_job_in_process(
        "trace", "hydra/launcher=slurm", "hydra.launcher.partition=gpu", "--cfg", "hydra", "-p", "hydra.launcher"
    )
    assert proc.returncode == 0, proc.stderr
    assert "SlurmLauncher" in proc.stdout and "partition: gpu" in proc.stdout and "timeout_min: 120" in proc.stdout


def test_reading_a_sweep_does_not_import_torch(ok_sweep):
    code = (
        "import sys; from llm_perf_opt.report.collect import collect_sweep; "
        "from llm_perf_opt.report.table import build_rows; "
        f"rows = build_rows(collect_sweep({str(ok_sweep[0])!r}).jobs); "
        "print(len(rows), 'torch' in sys.modules)"
    )
    # a subprocess: the test is about what importing the reader pulls into a fresh interpreter
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "False"]

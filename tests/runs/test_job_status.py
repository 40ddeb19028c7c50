"""summary.json never lies about a job's state: everything is validated before any work, an error or
Ctrl-C is recorded with its stage, a killed job reads as failed, and Ctrl-C is one line and exit 130."""

from __future__ import annotations

import json
import shutil
import signal
from pathlib import Path

import pytest
import torch
from job_scripts import one_line_error, run_job, start_job, wait_for_line, wait_until

from llm_perf_opt.artifacts import read_json
from llm_perf_opt.errors import ExitCode, PatchError
from llm_perf_opt.report.collect import read_job
from llm_perf_opt.run_artifacts import RUN_FILES, load, load_summary
from llm_perf_opt.run_lock import holder
from llm_perf_opt.runs.job_run import JobRun

TINY = ("model=twin_tiny", "workload=tiny")
RUN_TO_CAPTURE = (*TINY, "profile=off")  # the stages up to the capture, without the profile's seven forwards


def assert_every_file_whole(run_dir: Path) -> None:
    """Every JSON file parses (the registry's artifacts load with their typed loaders); no temporary file
    of an interrupted atomic write is left behind."""
    assert not list(run_dir.rglob(".*.tmp")), list(run_dir.rglob(".*.tmp"))
    for path in run_dir.rglob("*.json"):
        read_json(path)
    for entry in RUN_FILES:
        if entry.is_artifact and (run_dir / entry.file).is_file():
            load(entry.role, run_dir / entry.file)


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a GPU")
def test_cuda_without_a_gpu_fails_before_any_work(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_job("trace", *TINY, "runtime=cuda", f"hydra.run.dir={run_dir}")
    assert "runtime.device='cuda' is invalid: needs a CUDA GPU" in one_line_error(proc)
    assert not (run_dir / "summary.json").exists() and not (run_dir / "costs.json").exists()
    assert proc.stdout == ""  # no cost table either


@pytest.mark.vendor
def test_changed_vendor_code_fails_before_any_work(tmp_path, vendor_dir):
    changed = tmp_path / "vendor"
    shutil.copytree(vendor_dir, changed, ignore=shutil.ignore_patterns("*.safetensors", "__pycache__"))
    code = (changed / "deepencoder.py").read_text()
    # a function the runtime patches replace, renamed (its one caller too): the code still imports and builds
    (changed / "deepencoder.py").write_text(code.replace("quick_gelu(", "quick_gelu_v2("))
    run_dir = tmp_path / "run"
    proc = run_job("trace", "model=vendor", f"model.path={changed}", "workload=tiny", f"hydra.run.dir={run_dir}")
    line = one_line_error(proc)
    assert "deepencoder has no quick_gelu" in line and "the vendor code changed" in line
    assert not (run_dir / "summary.json").exists() and proc.stdout == ""


def test_a_failure_is_recorded_with_its_stage(tmp_path):
    """The bookkeeping every job uses, on a real summary: the stage, then the error, written atomically."""
    from llm_perf_opt.run_artifacts import Summary

    summary = Summary.from_data(json.loads((Path(__file__).parent / "data" / "summary_base.json").read_text()))
    summary.status = "running"
    run = JobRun(tmp_path)
    run.attach(summary, lambda: summary.save(tmp_path / "summary.json"))
    run.step("capture")
    assert load_summary(tmp_path / "summary.json").stage == "capture"
    run.stopped(PatchError("patch target X is missing"))
    run.stopped(KeyboardInterrupt())  # the first end wins
    saved = load_summary(tmp_path / "summary.json")
    assert (saved.status, saved.stage, saved.error.type) == ("failed", "capture", "PatchError")
    assert saved.error.message == "patch target X is missing" and saved.memory.peak_rss_bytes > 0


@pytest.mark.slow
def test_ctrl_c_is_one_line_exit_130_and_leaves_whole_files(tmp_path):
    run_dir = tmp_path / "run"
    proc = start_job("trace", *RUN_TO_CAPTURE, f"hydra.run.dir={run_dir}")
    wait_for_line(proc, "capturing the forward with TorchLens")  # printed as the capture stage starts
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=300)
    assert proc.returncode == ExitCode.INTERRUPTED
    lines = [line for line in rest.splitlines() if line.strip()]
    assert lines[-1] == f"interrupted at stage capture; partial results in {run_dir}", rest[-3000:]
    assert "Traceback" not in rest
    summary = load_summary(run_dir / "summary.json")
    assert (summary.status, summary.stage, summary.error.type) == ("interrupted", "capture", "KeyboardInterrupt")
    assert summary.forward is not None and summary.trace is None  # what ran before is kept
    assert_every_file_whole(run_dir)
    assert holder(run_dir) is None
    job = read_job(run_dir, tmp_path)
    assert job.status == "interrupted at stage capture" and job.failed


@pytest.mark.slow
def test_ctrl_c_stops_a_sweep_with_one_line(tmp_path):
    sweep = tmp_path / "sweep"
    proc = start_job("sweep", "model=twin_tiny", "workload=tiny,small", "profile=off", f"hydra.sweep.dir={sweep}")
    wait_for_line(proc, "job 1/2: forward")
    proc.send_signal(signal.SIGINT)
    _, rest = proc.communicate(timeout=300)
    assert proc.returncode == ExitCode.INTERRUPTED
    last = [line for line in rest.splitlines() if line.strip()][-1]
    assert last.startswith("interrupted at stage ") and last.endswith(f" of job 1/2; partial results in {sweep / '0'}")
    assert "Traceback" not in rest
    assert load_summary(sweep / "0" / "summary.json").status == "interrupted"
    assert not (sweep / "1").exists()
    assert_every_file_whole(sweep / "0")


@pytest.mark.slow
def test_a_killed_job_reads_as_failed_never_as_running(tmp_path):
    run_dir = tmp_path / "run"
    proc = start_job("trace", *RUN_TO_CAPTURE, f"hydra.run.dir={run_dir}")
    try:
        wait_for_line(proc, "capturing the forward with TorchLens")
        wait_until(lambda: load_summary(run_dir / "summary.json").stage == "capture", what="stage capture")
        alive = read_job(run_dir, tmp_path)
        assert alive.status == "running at stage capture" and alive.running and not alive.failed
    finally:
        proc.kill()  # SIGKILL: no chance to write anything
        proc.communicate(timeout=60)
    assert load_summary(run_dir / "summary.json").status == "running"  # what the file says ...
    dead = read_job(run_dir, tmp_path)  # ... and what the report makes of it
    assert dead.status.startswith("failed: no result: summary.json says running") and dead.failed
    assert "killed at stage capture" in dead.status and "trace.log" in dead.status
    assert_every_file_whole(run_dir)

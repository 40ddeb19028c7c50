"""`./dev analyze` and `./dev calibrate` as the user runs them (the job command in this process; a subprocess where
the test is about the process: what it imports, a second process waiting on the cache's lock): predictions printed
and written, bad input as one line with nothing written."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading

import pytest
import torch
from job_scripts import run_job_in_process
from roofline_helpers import REPO_ROOT, error_lines, run_job

from llm_perf_opt.analytic.roofline_artifact import load_roofline
from llm_perf_opt.analytic.time.hardware import load_hardware
from llm_perf_opt.analytic.time.ideal import predict_latency
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.measure.calibrate import load_calibration

pytestmark = pytest.mark.slow


def run_here(job: str, run_dir, *overrides: str) -> subprocess.CompletedProcess:
    """`./dev JOB hydra.run.dir=RUN_DIR OVERRIDES` in this process (`run_job_in_process`: the exit code and what the
    job prints, without a Python start-up per run)."""
    return run_job_in_process(job, f"hydra.run.dir={run_dir}", *overrides)


def _outputs(run_dir):
    return sorted(p.name for p in run_dir.glob("*.json")) if run_dir.exists() else []


def imported_modules(stderr: str) -> list[str]:
    """The modules a process imported by import statements (`importlib.import_module` is not timed), from its
    `-X importtime` lines (PYTHONPROFILEIMPORTTIME=1) on stderr."""
    return [
        line.rsplit("|", 1)[1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and not line.rstrip().endswith("| package")
    ]


def test_analyze_prints_and_writes_gundam_on_h100(tmp_path):
    # a subprocess: the test is about what the job's process imports (-X importtime)
    proc = run_job(
        "analyze", tmp_path, "hardware=h100_sxm", "workload=gundam", env={**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    # no model is built, so none of the model stack is imported (start-up in a fraction of a second)
    imported = imported_modules(proc.stderr)
    assert "llm_perf_opt.analytic.roofline_artifact" in imported and len(imported) > 100, len(imported)
    heavy = sorted({m.split(".")[0] for m in imported} & {"torch", "transformers", "torchlens", "torchvision"})
    assert heavy == [], heavy
    assert proc.stdout.startswith("deepseek-ocr | mode gundam")  # the full model by default
    assert "predicted: vision" in proc.stdout and "prefill (time to first token)" in proc.stdout
    assert "NVIDIA H100 Tensor Core GPU datasheet" in proc.stdout
    art = load_roofline(tmp_path / "roofline.json")
    model = DeepseekOCRAnalyticModel.for_page(ModelSpec.deepseek_ocr(), VisionWorkload(1024, 640, True), 1700, 2200)
    lat = predict_latency(model.stages(), load_hardware("h100_sxm").roof())
    assert art.figures["ttft_s"] == pytest.approx(lat.ttft_s)
    assert art.figures["vision_s"] == pytest.approx(lat.vision_s)
    assert art.figures["decode_s_per_token"] == pytest.approx(lat.decode_s)
    assert _outputs(tmp_path) == ["costs.json", "roofline.json", "serving.json"]


def test_analyze_still_takes_the_tiny_twin_and_runs_without_hardware(tmp_path):
    proc = run_here("analyze", tmp_path / "a", "model=twin_tiny", "hardware=l40s")
    assert proc.returncode == 0, proc.stderr
    assert load_roofline(tmp_path / "a" / "roofline.json").model == "deepseek-ocr-tiny"
    proc = run_here("analyze", tmp_path / "b")
    assert proc.returncode == 0, proc.stderr
    assert "no predicted times" in proc.stderr and _outputs(tmp_path / "b") == ["costs.json"]


def test_analyze_takes_the_vendor_model(tmp_path, vendor_dir):
    proc = run_here("analyze", tmp_path, "model=vendor", f"model.path={vendor_dir}", "hardware=h200")
    assert proc.returncode == 0, proc.stderr
    assert load_roofline(tmp_path / "roofline.json").roof.hardware == "h200"


@pytest.mark.parametrize(
    "overrides, first_words",
    [
        (["hardware=h999"], "error: hardware='h999' is invalid: one of a100_40gb, a100_80gb"),
        (["hardware=h100_sxm", "hardware.vector_tflops.value=0"], "error: hardware.vector_tflops.value=0"),
        (["hardware=h100_sxm", "hardware.dtype=float8"], "error: hardware.dtype='float8'"),
    ],
)
def test_bad_hardware_is_one_line_and_writes_nothing(tmp_path, overrides, first_words):
    proc = run_here("analyze", tmp_path / "run", *overrides)
    assert proc.returncode == 2
    lines = error_lines(proc)
    assert len(lines) == 1 and lines[0].startswith(first_words), proc.stderr
    assert "Traceback" not in proc.stderr and _outputs(tmp_path / "run") == []


def test_measured_without_the_dtype_is_one_line(tmp_path):
    proc = run_here(
        "analyze",
        tmp_path / "run",
        "hardware=measured",
        "hardware.quick=true",
        f"hardware.cache_dir={tmp_path / 'cache'}",
        "hardware.dtype=float16",
    )
    assert proc.returncode == 2
    lines = error_lines(proc)
    assert len(lines) == 1 and "hardware.dtype='float16' is invalid: measured has no matmul peak" in lines[0]
    assert _outputs(tmp_path / "run") == []


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the failure on a machine without CUDA")
def test_measured_where_calibration_fails_is_one_line(tmp_path, no_files_under):
    proc = run_here(
        "analyze", tmp_path / "run", "hardware=measured", "runtime=cuda", f"hardware.cache_dir={tmp_path / 'cache'}"
    )
    assert proc.returncode == 2
    lines = error_lines(proc)
    assert len(lines) == 1 and lines[0].startswith("error: hardware=measured: runtime.device='cuda'"), proc.stderr
    assert _outputs(tmp_path / "run") == []
    no_files_under(tmp_path / "cache")


def test_calibrate_prints_caches_and_reuses(tmp_path):
    args = ("hardware.quick=true", f"hardware.cache_dir={tmp_path / 'cache'}")
    first = run_here("calibrate", tmp_path / "one", *args)
    assert first.returncode == 0, first.stderr
    assert "matmul float32" in first.stdout and "bandwidth" in first.stdout and "how:" in first.stdout
    cached = list((tmp_path / "cache").glob("*.json"))
    assert len(cached) == 1 and "wrote " + str(cached[0]) in first.stderr
    copy = load_calibration(tmp_path / "one" / "calibration.json")
    # another process holding the cache's lock (as while it calibrates): the job waits for it, then reuses the file
    with open(f"{cached[0]}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        waiting = subprocess.Popen(
            [
                sys.executable,
                str(REPO_ROOT / "pipelines" / "calibrate.py"),
                f"hydra.run.dir={tmp_path / 'waits'}",
                *args,
            ],
            cwd=REPO_ROOT,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        watchdog = threading.Timer(300, waiting.kill)  # a job that blocks without saying so fails, never hangs
        watchdog.start()
        seen = []
        for line in waiting.stderr:
            seen.append(line)
            if "waiting for another process calibrating into" in line:
                break
        assert seen and seen[-1].rstrip().endswith(str(cached[0])), "".join(seen)
        fcntl.flock(lock, fcntl.LOCK_UN)
    out, err = waiting.communicate(timeout=300)
    watchdog.cancel()
    assert waiting.returncode == 0 and "reused " + str(cached[0]) in err, err
    second = run_here("calibrate", tmp_path / "two", *args, "hardware=h100_sxm")
    assert second.returncode == 0, second.stderr
    assert "reused " + str(cached[0]) in second.stderr
    assert "measured/datasheet" in second.stdout and "datasheet NVIDIA H100 SXM5 80GB" in second.stdout
    assert load_calibration(tmp_path / "two" / "calibration.json").to_dict() == copy.to_dict()
    third = run_here("calibrate", tmp_path / "three", *args, "hardware.recalibrate=true")
    assert third.returncode == 0 and "wrote " + str(cached[0]) in third.stderr


# ------------------------------------------------------------------ issue 34, group 6: paths from another directory
@pytest.mark.parametrize(
    "given, meant",
    [
        ("hydra.run.dir='dir with space/run17'", "{cwd}/dir with space/run17"),
        ('hydra.run.dir="it\'s/run"', "{cwd}/it's/run"),
        ("hydra.run.dir=dïr/run18", "{cwd}/dïr/run18"),
        ("hydra.run.dir='/abs/dïr with space'", "/abs/dïr with space"),
        ("hydra.run.dir=plain/run", "{cwd}/plain/run"),
        ("hardware.cache_dir='cache dir'", "{cwd}/cache dir"),
        ("workload.page.image=pàge.png", "pàge.png"),  # the schema resolves it: only quoted
    ],
)
def test_path_overrides_from_outside_the_repository_reach_hydra_verbatim(tmp_path, monkeypatch, given, meant):
    """Hydra's override grammar reads the rewritten value back as the path the user meant: a quoted value is
    seen as a path (relative or absolute), and one the grammar cannot read unquoted is quoted."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from llm_perf_opt.jobs.cli import absolute_path_overrides

    monkeypatch.setenv("LLM_PERF_OPT_CWD", str(tmp_path))
    (rewritten,) = absolute_path_overrides([given])
    assert OverridesParser.create().parse_override(rewritten).value() == meant.format(cwd=tmp_path), rewritten
    assert absolute_path_overrides(["hydra.run.dir=a,b", "hydra.run.dir=x/${now:%H}"]) == [
        "hydra.run.dir=a,b",
        "hydra.run.dir=x/${now:%H}",
    ]  # Hydra's own syntax (a sweep, an interpolation) is left to Hydra


def test_a_quoted_non_ascii_run_dir_from_another_directory_is_made(tmp_path, monkeypatch, capsys):
    from llm_perf_opt.jobs.cli import main

    monkeypatch.setenv("LLM_PERF_OPT_CWD", str(tmp_path))
    assert main(["analyze", "model=twin_tiny", "hydra.run.dir='dïr with space/run17'"]) == 0, capsys.readouterr().err
    assert (tmp_path / "dïr with space" / "run17" / "costs.json").is_file()


def test_a_batch_beyond_the_bound_is_refused_before_the_job_or_hydra_is_imported():
    """The 10^9 batch of every job: one line, exit 2, and nothing heavy imported first (the refusal takes a fraction
    of the start-up time); the message is the job's own validation's."""
    from llm_perf_opt.config.fields import MAX_BATCH
    from llm_perf_opt.early_refusal import batch_beyond_bound

    said = batch_beyond_bound(["model=twin", "workload.batch=1000000000"])
    assert said is not None and said.startswith("workload.batch=1000000000 is invalid: must be at most 4,096")
    assert batch_beyond_bound(["workload.batch=1,2,5000"]).startswith("workload.batch=5000 is invalid")
    assert batch_beyond_bound([f"workload.batch={MAX_BATCH}", "+workload.batch=abc", "serve.output_tokens=9"]) is None
    code = (
        "import sys; from llm_perf_opt.early_refusal import refused\n"
        "rcs = [refused(['workload.batch=1000000000']) for job in ('analyze', 'size', 'trace', 'sweep')]\n"
        "print(rcs, sorted(m for m in ('hydra', 'omegaconf', 'torch', 'numpy') if m in sys.modules))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[2, 2, 2, 2] []", proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith("error: workload.batch=1000000000 is invalid") for line in lines)

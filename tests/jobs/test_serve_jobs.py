"""./dev size and ./dev analyze's serving figures end to end (subprocesses, real config, real files)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from shared_runs import load_benchmark

from llm_perf_opt.analytic.serving_file import load_serving

ROOT = Path(__file__).resolve().parents[2]
CUSTOM = [
    "hardware=custom",
    "hardware.matmul_tflops.bfloat16.value=500",
    "hardware.vector_tflops.value=60",
    "hardware.memory_bandwidth_gbs.value=2000",
]


def run(job: str, out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "pipelines" / f"{job}.py"), *args, f"hydra.run.dir={out}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_size_prints_requirements_and_replicas(tmp_path):
    r = run("size", tmp_path, "tpot_s=0.02", "ttft_s=1", "pages_per_day=1000000", "hardware=h100_sxm")
    assert r.returncode == 0, r.stderr
    assert "replicas:" in r.stdout and "matmul TFLOP/s" in r.stdout and "bandwidth GB/s" in r.stdout
    s = load_serving(tmp_path)
    assert s.job == "size" and s.level == "ideal" and s.sizing["replicas"] >= 1
    assert len(s.sizing["requirements"]) == 3
    assert (tmp_path / "curve.csv").read_text().startswith("batch,")


def test_analyze_serving_at_batch(tmp_path):
    r = run(
        "analyze", tmp_path, "hardware=a100_80gb", "workload=gundam", "workload.batch=32", "serve.output_tokens=1000"
    )
    assert r.returncode == 0, r.stderr
    for text in ("TTFT", "TPOT", "tokens/s", "pages/day", "memory", "binding constraint"):
        assert text in r.stdout
    s = load_serving(tmp_path)
    assert s.batch == 32 and s.point["memory"]["fits"] is True


@pytest.mark.parametrize(
    "job, args, field",
    [
        ("analyze", ["hardware=a100_80gb", "workload.batch=0"], "workload.batch"),
        ("analyze", ["hardware=a100_80gb", "workload.batch=-3"], "workload.batch"),
        ("analyze", ["hardware=a100_80gb", "workload.batch=5000"], "workload.batch"),
        ("analyze", ["hardware=a100_80gb", "serve.output_tokens=9000"], "serve.output_tokens"),
        ("size", ["tpot_s=0.00001", "ttft_s=1", "pages_per_day=10", "hardware=h100_sxm"], "size.tpot_s"),
        ("size", ["tpot_s=0.02", "ttft_s=1", "hardware=h100_sxm"], "size.pages_per_day"),
        ("size", ["tpot_s=0.02", "ttft_s=1", "pages_per_day=10", *CUSTOM], "hardware.memory_gb.value"),
    ],
)
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, job, args, field):
    r = run(job, tmp_path, *args)
    assert r.returncode == 2, r.stderr
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and field in errors[0], r.stderr
    assert not (tmp_path / "serving.json").exists() and not (tmp_path / "costs.json").exists()


def test_bench_sizing_arguments():
    sizing = load_benchmark("sizing")
    args = sizing.parse_args(["--pages", "4", "--batches", "3", "--devices", "h100_sxm"])
    assert (args.pages, args.batches, args.devices) == (4, 3, ["h100_sxm"])

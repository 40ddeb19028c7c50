"""benchmarks/serving_curve.py: the tiny twin at batches 1, 2, 4 and 8 on one CPU thread (the session's curve), its
JSON record (rows, measured and predicted figures, labels), its markdown table and the calibration written beside it;
no CUDA: `--runtime cuda` refused in one line, exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from shared_runs import load_benchmark

from llm_perf_opt.measure.allocator import allocator_regime, regime_label

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def curve(tiny_curve) -> tuple[dict, str, Path]:
    """The session's curve (conftest.py `tiny_curve`: batches 1, 2, 4, 8, one thread, fastest of 5)."""
    doc = json.loads((tiny_curve / "serving_curve.json").read_text())
    return doc, (tiny_curve / "serving_curve.md").read_text(), tiny_curve


BATCHES = (1, 2, 4, 8)


def test_the_record_has_a_row_per_batch_and_phase(curve):
    doc, _, _ = curve
    assert (doc["schema"], doc["schema_version"]) == ("llm_perf_opt.serving_curve", 1)
    data = doc["data"]
    rows = data["rows"]
    assert [(r["batch"], r["phase"], r["step"]) for r in rows] == [
        (b, phase, step) for b in BATCHES for phase, step in (("prefill", 0), ("decode", 1), ("decode", 2))
    ]
    assert data["failed"] == [] and data["skipped"] == []
    cfg = data["config"]
    assert (cfg["model"], cfg["mode"], cfg["runtime"], cfg["batches"]) == ("twin_tiny", "tiny", "cpu", list(BATCHES))
    assert cfg["threads"] == 1
    assert cfg["device"] == "cpu" and cfg["torch"] == torch.__version__ and cfg["host"] and cfg["dtype"] == "float32"
    assert cfg["allocator"] == regime_label(allocator_regime())  # this process's, measured in


def test_every_row_is_measured_and_predicted(curve):
    rows = curve[0]["data"]["rows"]
    assert len(rows) == 3 * len(BATCHES)
    for r in rows:
        assert r["wall_s"] > 0 and r["device_s"] == r["wall_s"]  # CPU: device = wall
        assert r["samples"] == 5 and len(r["wall_samples_s"]) == 5 and r["wall_s"] == min(r["wall_samples_s"])
        assert r["cpu_s"] > 0  # one thread: the thread's CPU time too
        p = r["predicted"]
        assert p["ideal_s"] > 0 and p["kernel_s"] > 0 and p["eager_s"] >= p["kernel_s"], r
        assert r["tokens_per_s"] > 0
    prefill = {r["batch"]: r for r in rows if r["phase"] == "prefill"}
    decode = [r for r in rows if r["phase"] == "decode"]
    assert len(prefill) == len(BATCHES) and len(decode) == 2 * len(BATCHES)
    assert prefill[2]["tokens"] == 2 * prefill[1]["tokens"]  # the batch's sequences are of one length here
    assert prefill[2]["predicted"]["ideal_s"] > prefill[1]["predicted"]["ideal_s"]  # the analytic model at batch 2
    for r in decode:  # decode step k attends over the prompt and the k - 1 tokens before it
        assert r["context_len"] == r["seq_len"] + r["step"] - 1 and r["tokens"] == r["batch"]
    assert prefill[1]["pages_per_s"] == pytest.approx(1 / prefill[1]["wall_s"])


def test_each_call_is_also_priced_at_the_experts_it_touched(curve):
    """Beside the serving forecast (uniform routing), each region's eager level at the experts its logged call
    touched: the same at one decode token (exactly top_k), no more where the call touched fewer than expected."""
    rows = curve[0]["data"]["rows"]
    compared = 0
    for r in rows:
        e, p, pt = r["experts"], r["predicted"], r["predicted_touched"]
        assert pt["experts_per_layer"] == pytest.approx(e["mean"]) and pt["ideal_s"] == p["ideal_s"]
        if e["mean"] == pytest.approx(p["experts_per_layer"]):
            assert pt["eager_s"] == pytest.approx(p["eager_s"]) and pt["kernels"] == p["kernels"]
        elif e["mean"] < p["experts_per_layer"]:
            assert pt["kernels"] < p["kernels"] and pt["eager_s"] < p["eager_s"]
        compared += 1
    assert compared == 3 * len(BATCHES)
    batch_1_steps = [r for r in rows if r["batch"] == 1 and r["phase"] == "decode"]
    assert len(batch_1_steps) == 2 and all(r["experts"]["mean"] == r["experts"]["top_k"] for r in batch_1_steps)


def test_the_calibration_is_named_with_its_time_and_written_beside_the_curve(curve):
    """The calibration the predictions read: named with its time, and copied beside the curve (`calibration.json`),
    so that the folder replays offline (`hardware.calibration=`): the same file the cache holds."""
    from llm_perf_opt.measure.calibrate import load_calibration

    cal = curve[0]["data"]["predicted_by"]["calibration"]
    assert Path(cal["path"]).is_file() and cal["created"] and isinstance(cal["reused"], bool)
    assert f"Calibration: {Path(cal['path']).name}, made {cal['created']}" in curve[1]
    assert cal["copy"] == "calibration.json"
    copied = load_calibration(curve[2] / "calibration.json")
    assert copied.created == cal["created"] and copied.threads == 1
    assert copied.plan.name == "quick"  # --quick-calibration (conftest.py `tiny_curve`)
    assert copied.to_dict() == load_calibration(cal["path"]).to_dict()


def test_labels_say_how_it_was_measured_and_predicted(curve):
    data = curve[0]["data"]
    assert "perf_counter" in data["measured_by"]["wall"] and "device time = wall" in data["measured_by"]["device"]
    pred = data["predicted_by"]
    assert pred["hardware_kind"] == "measured" and pred["levels"] == ["ideal", "kernel", "eager"]
    assert "roofline" in pred["convention"] and pred["roof"] and pred["figures"]
    assert all("CPU: no separate device" in r["how"]["device"] for r in data["rows"])


def test_the_table_has_a_line_per_row(curve):
    doc, md, _ = curve
    body = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| batch")]
    assert len(body) == len(doc["data"]["rows"]) == 3 * len(BATCHES)
    assert "| 8 | decode 2 |" in md and "Predicted on" in md


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_runtime_cuda_without_a_gpu_is_one_line_and_exit_2(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "serving_curve.py"), "--runtime", "cuda", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "runtime.device" in lines[0] and "cuda" in lines[0], proc.stderr
    assert not out.exists()


def test_help_works():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "serving_curve.py"), "--help"], capture_output=True, text=True
    )
    assert proc.returncode == 0 and "--batches" in proc.stdout and "--budget-s" in proc.stdout


def _same(x, y) -> bool:
    if isinstance(x, torch.Tensor):
        return torch.equal(x, y)
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(_same(i, j) for i, j in zip(x, y))
    return x == y


def test_the_pages_built_once_give_each_batch_the_trace_jobs_inputs():
    from llm_perf_opt.prepare.builders import build_job_inputs

    bench = load_benchmark("serving_curve")
    jobs = bench.jobs_for(bench.parse_args(["--batches", "1,2,3"]))
    samples = bench.Samples(jobs)
    cpu = torch.device("cpu")
    compared = 0
    for b in (1, 2, 3):
        ours = samples.inputs(jobs[b]).forward_kwargs(cpu, torch.float32)
        theirs = build_job_inputs(jobs[b]).forward_kwargs(cpu, torch.float32)
        assert ours.keys() == theirs.keys() and ours["input_ids"].shape[0] == b
        for key in ours:
            assert _same(ours[key], theirs[key]), (b, key)
            compared += 1
    assert compared >= 12

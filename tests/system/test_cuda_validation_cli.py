"""benchmarks/cuda_validation.py refuses in one line (exit 2, nothing written) without CUDA, and its table reads a
run directory's summary.json (here the CPU run of a tiny-twin trace job: the same fields)."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import torch
from shared_runs import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "cuda_validation.py"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a machine without CUDA")
def test_refuses_without_cuda(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run([sys.executable, str(SCRIPT), "--out", str(out)], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs a CUDA GPU" in lines[0] and proc.stdout == ""
    assert not out.exists()


def test_models_default_to_the_twin_and_vendor_when_set(monkeypatch):
    cv = load_benchmark("cuda_validation")
    monkeypatch.delenv("DSOCR_MODEL_PATH", raising=False)
    assert cv.models(cv.parse_args([])) == ["twin"]
    monkeypatch.setenv("DSOCR_MODEL_PATH", "/somewhere")
    args = cv.parse_args([])
    assert cv.models(args) == ["twin", "vendor"] and args.decode_steps == 8 and args.modes == "tiny,base,gundam"


def test_runs_tables_read_the_model_and_the_mode_from_each_summary(default_run, tmp_path):
    run, _ = default_run
    cv = load_benchmark("cuda_validation")
    assert cv.main(["--runs", str(run), "--out", str(tmp_path / "t")]) == 0
    data = json.loads((tmp_path / "t" / "cuda_validation.json").read_text())
    assert len(data["jobs"]) == 1 and data["jobs"][0]["model"] == "twin_tiny" and data["jobs"][0]["mode"] == "gundam"
    assert data["rows"] and {(r["model"], r["mode"]) for r in data["rows"]} == {("twin_tiny", "gundam")}
    assert "| twin_tiny | gundam | prefill |" in (tmp_path / "t" / "cuda_validation.md").read_text()
    # a run at batch 2 (its summary's tokens.batch, as RecordedRun reads it) says so in the mode column
    two = tmp_path / "batch2"
    two.mkdir()
    doc = json.loads((run / "summary.json").read_text())
    assert doc["data"]["tokens"]["batch"] == 1
    doc["data"]["tokens"]["batch"] = 2
    (two / "summary.json").write_text(json.dumps(doc))
    rows, facts = cv.rows_of(two)
    assert rows and facts["mode"] == "gundam (batch 2)" and {r["mode"] for r in rows} == {"gundam (batch 2)"}


def test_the_kit_packs_the_replay_files_and_leaves_out_the_largest_optional_ones_to_fit(default_run, tmp_path):
    run, _ = default_run
    cv = load_benchmark("cuda_validation")
    rec = tmp_path / "rec" / "gpu-x"
    cv._copy_run(run, rec / "twin_tiny-gundam")
    kept = sorted(p.name for p in (rec / "twin_tiny-gundam").iterdir())
    assert "summary.json" in kept and ("verification.json" in kept or "verification.json.gz" in kept)
    assert not {"run.html", "callgraph.json"} & set(kept) and set(kept) <= {*cv.RUN_FILES, "verification.json.gz"}
    env = {"date": "2026-11-27T00:00:00+00:00", "commit": "abc", "python": "3", "torch": "t"}
    record = {"budget_s": 60, "steps": [{"step": "trace twin_tiny gundam", "exit": 0, "seconds": 1.0, "command": "x"}]}
    archive = tmp_path / "a.tar.gz"
    assert cv.pack(rec, archive, env, record) == []
    with tarfile.open(archive) as tar:
        names = tar.getnames()
    assert "gpu-x/README.md" in names and "gpu-x/twin_tiny-gundam/summary.json" in names
    # reproducible: packed again (the README rewritten, a second later), the same bytes; so the size it is judged
    # by does not move (it moved by a few bytes with the files' times, and a limit 1 byte under could fit as is)
    first = archive.read_bytes()
    time.sleep(1.1)
    assert cv.pack(rec, archive, env, record) == [] and archive.read_bytes() == first
    # over the size limit: the largest optional files go first, and the README says which
    optional = [p for p in (rec / "twin_tiny-gundam").iterdir() if p.name in cv.OPTIONAL_LARGE]
    assert optional
    small = archive.stat().st_size - 1
    cv.ARCHIVE_MAX = small
    try:
        dropped = cv.pack(rec, archive, env, record)
    finally:
        cv.ARCHIVE_MAX = 16_000_000
    assert dropped and archive.stat().st_size <= small or len(dropped) == len(optional)
    assert "Left out to keep the tarball under 16 MB: " + ", ".join(dropped) in (rec / "README.md").read_text()


def test_the_kit_runs_the_steps_named_in_their_order_and_refuses_an_unknown_one(tmp_path):
    cv = load_benchmark("cuda_validation")
    got = cv.kit_steps("trace twin gundam, trace twin_tiny tiny")
    assert [cv.step_label(kind, arg) for kind, arg, _, _ in got] == ["trace twin_tiny tiny", "trace twin gundam"]
    assert len(cv.kit_steps("")) == len(cv.KIT_STEPS) == 9
    out = tmp_path / "kit"
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--runtime", "cpu", "--budget", "60", "--out", str(out), "--steps", "trace x"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "--steps" in lines[0] and "'trace x'" in lines[0], proc.stderr
    assert not out.exists()


def test_a_second_recording_of_the_same_day_gets_the_time_of_day(tmp_path):
    cv = load_benchmark("cuda_validation")
    assert cv.recording_name("NVIDIA H200", "2026-11-27T16:35:00+00:00", tmp_path) == "nvidia-h200-2026-11-27"
    (tmp_path / "h200-2026-11-27").mkdir()
    name = cv.recording_name("H200", "2026-11-27T16:35:00+00:00", tmp_path)
    assert name.startswith("h200-2026-11-27-") and len(name) == len("h200-2026-11-27-1635") and name[-4:].isdigit()


def test_a_kit_trace_at_batch_is_its_own_run_folder_with_its_batch_and_steps(tmp_path):
    """`trace twin tiny 8`: the run folder `twin-tiny-b8`, `workload.batch=8`, its own one decode step; a trace
    without a batch keeps `<model>-<mode>` and the kit's --decode-steps."""
    cv = load_benchmark("cuda_validation")
    args = cv.parse_args(["--runtime", "cpu", "--budget", "60"])
    steps = {cv.step_label(kind, arg): (arg, n) for kind, arg, _, n in cv.KIT_STEPS if kind == "trace"}
    name, cmd = cv.kit_trace(*steps["trace twin tiny 8"], args, tmp_path)
    assert name == "twin-tiny-b8" and "workload.batch=8" in cmd and "trace.decode_steps=1" in cmd
    assert f"hydra.run.dir={tmp_path / name}" in cmd and "model=twin" in cmd and "workload=tiny" in cmd
    name, cmd = cv.kit_trace(*steps["trace twin_tiny tiny"], args, tmp_path)
    assert name == "twin_tiny-tiny" and not any(c.startswith("workload.batch=") for c in cmd)
    assert f"trace.decode_steps={args.decode_steps}" in cmd

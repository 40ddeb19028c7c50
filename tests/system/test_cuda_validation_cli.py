"""benchmarks/cuda_validation.py refuses in one line (exit 2, nothing written) without CUDA, and its table reads a
run directory's summary.json (here the CPU run of a tiny-twin trace job: the same fields)."""

from __future__ import annotations

import subprocess
import sys
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

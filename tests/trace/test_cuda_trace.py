"""The trace job's timing stages on CUDA: GPU kernel time per module (attributed to the module range that
launched it), NVTX ranges allowed, the calibrated roof with the GPU's datasheet beside it. Skipped without
a CUDA GPU."""

from __future__ import annotations

import pytest
import torch
from timing_helpers import run_pipeline

from llm_perf_opt.analytic.time.hardware import datasheet_for_device
from llm_perf_opt.callgraph.schema import load_callgraph_json
from llm_perf_opt.run_artifacts import load, load_summary

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is false)"),
]


@pytest.fixture(scope="module")
def cuda_trace(tmp_path_factory):
    root = tmp_path_factory.mktemp("cuda_trace")
    proc = run_pipeline(
        "trace",
        f"hydra.run.dir={root / 'run'}",
        f"hardware.cache_dir={root / 'calibration'}",
        "runtime=cuda",
        "runtime.attn_implementation=sdpa",
        "profile.nvtx=true",
        timeout=1200,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return root / "run"


def test_module_times_are_gpu_kernel_time(cuda_trace):
    times = load("profile", cuda_trace)
    assert times.method["activities"] == ["cpu", "cuda"] and times.method["nvtx"] is True
    assert times.coverage["time_base"] == "device" and times.problems == []
    root = times.call("")
    for r, total in enumerate(times.wall["device_total_s"]["repeats"]):
        # every kernel is in some module, a fusion group's kernel named like its op too (test_profiler_events.py)
        assert root.inclusive_s.repeats[r] == pytest.approx(total, rel=1e-6)
    cg = load_callgraph_json(cuda_trace / "callgraph.json")
    assert cg.module_times_method["time_base"].startswith("device")
    assert {a for a, n in cg.call_counts.items() if n > 0} <= set(cg.module_times)


def test_roofs_of_the_gpu(cuda_trace):
    summary = load_summary(cuda_trace / "summary.json")
    rf = summary.roofline
    assert rf.primary == "measured" and rf.roofs["measured"]["same_device"]
    sheet = datasheet_for_device(torch.cuda.get_device_name())
    if sheet is not None:  # the datasheet of this GPU beside its calibration, efficiencies against both
        assert list(rf.roofs) == ["measured", sheet] and rf.roofs[sheet]["same_device"]
        assert rf.row("sam")["predicted"][sheet]["efficiency"] is not None
    assert rf.row("forward")["predicted"]["measured"]["efficiency"] is not None
    text = (cuda_trace / "roofline.svg").read_text()
    assert "measured (measured" in text and (sheet is None or f"{sheet} (datasheet" in text)

"""Kernels attributed to module ranges (`measure.profiler_events.read_ranges`): every device activity a CPU op launched
inside a range counts there, including a kernel that bears its launching op's own name (a TorchScript fusion group:
CLIP's scripted quick_gelu on CUDA); only a module range's GPU-side image is not work. The recorded H200 traces name
the residue the CUDA tests found (`pytest_cuda.txt`: root kernel time 0.1% below the device total): exactly those
fusion kernels, which the attribution now counts."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from torch.autograd import DeviceType
from torch.autograd.profiler_util import FunctionEvent

from llm_perf_opt.measure.profiler_events import read_ranges
from llm_perf_opt.measure.recorded_runs import recorded_runs

GPU_DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"


def _events():
    """One module range `model.clip` (CPU, 0-100 us) holding two ops: `aten::mm` launching `gemm_kernel` (3 us) and
    a fusion group `fused__mul_sigmoid` launching its kernel of the same name (1 us); the range lists its own GPU
    image (`model.clip`, 5 us) among its kernels, as some torch versions do. Real FunctionEvents, linked as the
    profiler links them (kernels by correlation, cpu_parent by containment)."""
    rng = FunctionEvent(1, "model.clip", 0, 0, 100)
    mm = FunctionEvent(2, "aten::mm", 0, 10, 20)
    fused = FunctionEvent(3, "fused__mul_sigmoid", 0, 30, 40)
    for op in (mm, fused):
        op.set_cpu_parent(rng)
    mm.append_kernel("gemm_kernel", 0, 3.0)
    fused.append_kernel("fused__mul_sigmoid", 0, 1.0)
    rng.append_kernel("model.clip", 0, 5.0)
    device = [
        FunctionEvent(4, "gemm_kernel", 7, 21, 24, device_type=DeviceType.CUDA),
        FunctionEvent(5, "fused__mul_sigmoid", 7, 41, 42, device_type=DeviceType.CUDA),
        FunctionEvent(6, "model.clip", 7, 20, 25, device_type=DeviceType.CUDA),  # the range's image: no work
    ]
    return [rng, mm, fused, *device]


def test_a_kernel_named_like_its_launching_op_is_attributed():
    found = read_ranges(_events(), {"model.clip"}, device=True)
    (clip,) = found.ranges["model.clip"]
    assert found.device_total_us == pytest.approx(4.0)  # the two kernels; not the range's image
    assert clip.device_self_us == pytest.approx(4.0) == found.device_total_us  # the fusion kernel counts
    assert found.device_unattributed_us == 0.0


def _traced_runs():
    runs = [r for r in recorded_runs(GPU_DATA) if r.file("profile.trace.json") and r.file("profile.json")]
    assert runs, f"no recorded run under {GPU_DATA} has profile.trace.json.gz and profile.json.gz"
    return runs


@pytest.mark.parametrize("run", _traced_runs(), ids=lambda r: r.label)
def test_replay_kernels_outside_module_ranges_are_fusion_kernels(run):
    """In the recorded trace of the last profiled forward: every device activity was launched inside a module range;
    the kernels the rule before this fix left out of every range (named like the CPU op that launched them, an op that
    is not a range) are TorchScript fusion groups launched in CLIP; and the gap the run recorded between the device
    total and the root's kernel time is exactly their time (a recording made before the fix) or nothing (after)."""
    events = json.loads(gzip.open(run.file("profile.trace.json")).read())["traceEvents"]
    profile = json.loads(gzip.open(run.file("profile.json")).read())["data"]
    ranges = [e for e in events if e.get("cat") == "user_annotation"]
    ops_by_id = {e["args"]["External id"]: e for e in events if e.get("cat") == "cpu_op" and "External id" in e["args"]}
    launches = {e["args"]["correlation"]: e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")}
    device = [e for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    assert len(device) > 100

    def ranges_around(e):
        return [
            r for r in ranges if r["tid"] == e["tid"] and r["ts"] <= e["ts"] <= e["ts"] + e["dur"] <= r["ts"] + r["dur"]
        ]

    assert all(ranges_around(launches[k["args"]["correlation"]]) for k in device)  # nothing launched outside
    names = {r["name"] for r in ranges}
    fused = [
        k
        for k in device
        if ops_by_id.get(k["args"].get("External id"), {}).get("name") == k["name"] and k["name"] not in names
    ]
    assert all(k["name"].startswith("fused__") for k in fused)  # TorchScript fusion groups ...
    for k in fused:  # ... of CLIP's scripted quick_gelu
        assert any(
            r["name"].startswith("model.vision_model") for r in ranges_around(launches[k["args"]["correlation"]])
        )
    r = profile["trace_repeat"]
    total = profile["wall"]["device_total_s"]["repeats"][r]
    root = next(c for c in profile["calls"] if c["path"] == "")
    gap_s = total - root["inclusive_s"]["repeats"][r]
    fused_s = sum(k["dur"] for k in fused) * 1e-6
    assert gap_s == pytest.approx(fused_s, rel=1e-6, abs=1e-12) or gap_s == pytest.approx(0.0, abs=1e-12)
    assert gap_s <= 0.01 * total  # 0.15% (tiny twin, Tiny) to 0.6% (full twin, Gundam) on the H200

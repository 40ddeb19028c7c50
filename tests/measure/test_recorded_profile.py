"""The recorded runs beside a calibration file: the H200 recording's profile trace (tests/data/gpu/h200-2026-11-26/,
copied from ../shared/gpu-runs/), its kernels' device durations and the host's time per kernel; a trace of another
device or one that cannot be read is left out, with why."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from llm_perf_opt.measure.recorded_profile import (
    is_gemm_kernel,
    one_block,
    one_wave,
    read_json_file,
    read_recorded_profile,
    recordings_beside,
    small_kind,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu" / "h200-2026-11-26"
H200 = DATA / "NVIDIA_H200-torch2.11.0+cu130-threads16-cuda.json"
RUN = DATA / "twin_tiny-tiny"


def test_the_recorded_trace_gives_device_kernels_and_host_time():
    assert H200.is_file() and (RUN / "profile.trace.json.gz").is_file(), "the H200 recording is missing"
    doc = read_json_file(RUN / "profile.trace.json.gz")
    kernels = [e for e in doc["traceEvents"] if e.get("cat") == "kernel"]
    rec = read_recorded_profile(RUN / "profile.trace.json.gz")
    assert rec.device_name == "NVIDIA H200" and rec.run == RUN and rec.multiprocessors == 132
    assert rec.kernels == len(kernels) == 602  # one profiled forward of the tiny twin in Tiny mode, bfloat16
    assert rec.kernel_s == tuple(e["dur"] * 1e-6 for e in kernels)  # microseconds in the file
    assert 0 < min(rec.kernel_s) < 2e-6  # the device-only time of a tiny kernel on an H200: about a microsecond
    # the GEMM kernels among them, by name: cuBLASLt's nvjet, CUTLASS gemm, split-K reduce; not cuDNN's conv / SDPA
    names = [e["name"] for e in kernels]
    gemm = [e["dur"] * 1e-6 for e in kernels if is_gemm_kernel(e["name"])]
    assert rec.gemm_kernel_s == tuple(gemm) and 50 <= len(gemm) < 602
    assert sum("nvjet" in n for n in names) <= len(gemm)
    assert not any(is_gemm_kernel(n) for n in names if "sdpa" in n or "convolve" in n or "fprop" in n)
    # the one-wave small kernels (2 to 132 blocks) by kind, by name: TensorIterator's and the reductions'
    blocks = [e["args"]["grid"][0] * e["args"]["grid"][1] * e["args"]["grid"][2] for e in kernels]
    for kind, durations in rec.wave_kernel_s.items():
        want = [e["dur"] * 1e-6 for e, b in zip(kernels, blocks) if small_kind(e["name"]) == kind and 1 < b <= 132]
        assert durations == tuple(want) and len(want) >= 20
    assert sorted(rec.wave_kernel_s) == ["cast", "copy", "elementwise", "reduction"]
    # the one-block small kernels (a decode row's): ~1.1 µs each, the kernel level's floor
    one = [e["dur"] * 1e-6 for e, b in zip(kernels, blocks) if small_kind(e["name"]) and b == 1]
    assert rec.block_kernel_s == tuple(one) and len(one) >= 100
    assert 1.0e-6 < sorted(one)[len(one) // 2] < 1.3e-6
    # the convolution calls (aten::convolution: SAM's patch embedding and neck): all their kernels summed, the layout
    # transforms cuDNN runs around the convolution included; the 1 x 1 neck is one GEMM kernel
    assert len(rec.conv_call_s) == 5 and sum(rec.conv_call_s) < sum(rec.kernel_s)
    transforms = [e["dur"] * 1e-6 for e in kernels if "nchwToNhwc" in e["name"] or "nhwcToNchw" in e["name"]]
    assert len(transforms) == 9 and sum(transforms) < sum(rec.conv_call_s) - max(rec.conv_call_s)
    assert min(rec.conv_call_s) < 3e-6 < 8e-6 < sorted(rec.conv_call_s)[1] < 11e-6 < 40e-6 < max(rec.conv_call_s)
    profile = read_json_file(RUN / "profile.json.gz")["data"]
    wall = profile["wall"]
    assert (rec.plain_min_s, rec.profiled_min_s) == (wall["plain_s"]["min"], wall["profiled_s"]["min"])
    assert rec.plain_min_s < rec.profiled_min_s  # the profiler slows the host
    # the trace is the last round's (trace_repeat 1 of 2), whose profiled forward is not the fastest: 37.5 ms, 27.9
    assert profile["trace_repeat"] == 1 and rec.profiled_traced_s == wall["profiled_s"]["repeats"][1]
    assert rec.profiled_traced_s > 1.3 * rec.profiled_min_s
    # the host thread's busy time: at most the traced forward's span, and most of it (a host-bound forward)
    ops = [e for e in doc["traceEvents"] if e.get("cat") == "cpu_op"]
    span = (max(e["ts"] + e["dur"] for e in ops) - min(e["ts"] for e in ops)) * 1e-6
    assert 0.5 * span < rec.host_busy_s <= span and rec.sync_wait_s >= 0
    # scaled by the fastest plain / the traced profiled forward (by the fastest profiled one it read 25.3 µs, 35% high)
    per_kernel = rec.host_per_kernel_s()
    assert per_kernel == pytest.approx(rec.host_busy_s / 602 * rec.plain_min_s / rec.profiled_traced_s)
    assert 17e-6 < per_kernel < 21e-6  # ~19 µs per kernel: the eager forward's host cost on this host
    # the ops the host called that launched device work: each outermost op once, its inner kernels with it (an
    # autocast cast, cuDNN's layout transforms, SDPA's memset): within 1% of TorchLens' 498 (the kernel-count check)
    assert 493 <= rec.ops <= 503 and rec.host_per_op_s() == pytest.approx(rec.plain_host_s() / rec.ops)


def test_small_kernel_kinds_by_name_and_one_wave_by_grid():
    assert small_kind("void at::native::vectorized_elementwise_kernel<8, at::native::silu_kernel>") == "elementwise"
    assert small_kind("void at::native::elementwise_kernel<128, 4, gpu_kernel_impl_nocast<CUDAFunctor_add>>") == (
        "elementwise"
    )
    assert small_kind("void at::native::unrolled_elementwise_kernel<direct_copy_kernel_cuda(...)>") == "copy"
    assert small_kind("void at::native::(anonymous namespace)::CatArrayBatchedCopy<...>") == "copy"
    assert small_kind("void at::native::vectorized_elementwise_kernel<8, bfloat16_copy_kernel_cuda(...)>") == "cast"
    assert small_kind("fused__autocast_to__12152488584593855096") == "cast"
    assert small_kind("void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float>") == "reduction"
    assert small_kind("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, MeanOps>>") == "reduction"
    for other in (
        "nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN",
        "void implicit_convolve_sgemm<__nv_bfloat16, __nv_bfloat16, 1024, 5, 5, 3, 3, 3, 1>",
        "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64",
        "void at::native::radixSortKVInPlace<-2, -1, 32, 32, long, long, unsigned int>",
        "void at::native::sbtopk::gatherTopK<float, unsigned int, 2, false>",
        "void cudnn::engines_precompiled::nchwToNhwcKernel<__nv_bfloat16>",
    ):
        assert small_kind(other) is None, other
    assert one_wave([64, 1, 1], 132) and one_wave([2, 1, 1], 132) and one_wave([4, 33, 1], 132)
    assert not one_wave([1, 1, 1], 132) and not one_wave([133, 1, 1], 132) and not one_wave([64, 1, 1], None)
    assert one_block([1, 1, 1]) and not one_block([2, 1, 1]) and not one_block(None) and not one_block([])


def test_gemm_kernel_names():
    assert is_gemm_kernel("nvjet_sm90_tst_8x64_64x16_4x1_v_bz_TNN")
    assert is_gemm_kernel("void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_16x16_32x1_tn_align2>")
    assert is_gemm_kernel("void cublasLt::splitKreduce_kernel<32, 16, int, float, __nv_bfloat16>")
    assert not is_gemm_kernel("void implicit_convolve_sgemm<__nv_bfloat16, __nv_bfloat16, 1024, 5, 5, 3, 3, 3, 1>")
    assert not is_gemm_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x64")
    assert not is_gemm_kernel("void at::native::vectorized_elementwise_kernel<8, at::native::silu_kernel>")


def test_runs_beside_the_file_of_its_device_only(tmp_path):
    shutil.copy(H200, tmp_path / H200.name)
    assert recordings_beside(tmp_path / H200.name, "NVIDIA H200") == ([], [])  # the file alone
    shutil.copytree(RUN, tmp_path / "run")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "profile.trace.json.gz").write_bytes(b"not gzip")
    (tmp_path / "plain").mkdir()  # an uncompressed trace is read too
    with gzip.open(RUN / "profile.trace.json.gz", "rt") as fh:
        (tmp_path / "plain" / "profile.trace.json").write_text(fh.read())
    found, left_out = recordings_beside(tmp_path / H200.name, "NVIDIA H200")
    assert [r.run.name for r in found] == ["plain", "run"]
    assert found[0].kernel_s == found[1].kernel_s
    assert found[0].plain_min_s is None and found[0].host_per_kernel_s() is None  # no profile.json beside it
    assert len(left_out) == 1 and "broken" in left_out[0] and "not readable" in left_out[0]
    found, left_out = recordings_beside(tmp_path / H200.name, "NVIDIA A100")
    assert found == [] and len(left_out) == 3
    assert sum("recorded on NVIDIA H200, not NVIDIA A100" in line for line in left_out) == 2


def test_a_file_that_is_no_trace_is_named(tmp_path):
    (tmp_path / "profile.trace.json").write_text(json.dumps({"events": []}))
    with pytest.raises(ValueError, match="no traceEvents"):
        read_recorded_profile(tmp_path / "profile.trace.json")


def test_the_traced_forward_is_the_trace_repeat_else_the_last(tmp_path):
    from llm_perf_opt.measure.recorded_profile import _walls

    wall = {"plain_s": {"min": 0.01}, "profiled_s": {"min": 0.02, "repeats": [0.03, 0.02, 0.04]}}
    (tmp_path / "profile.json").write_text(json.dumps({"data": {"wall": wall, "trace_repeat": 1}}))
    assert _walls(tmp_path) == (0.01, 0.02, 0.02)
    (tmp_path / "profile.json").write_text(json.dumps({"data": {"wall": wall}}))  # written before trace_repeat
    assert _walls(tmp_path) == (0.01, 0.02, 0.04)
    del wall["profiled_s"]["repeats"]
    (tmp_path / "profile.json").write_text(json.dumps({"data": {"wall": wall}}))
    assert _walls(tmp_path) == (0.01, 0.02, 0.02)
    (tmp_path / "profile.json").unlink()
    assert _walls(tmp_path) == (None, None, None)

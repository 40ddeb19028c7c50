"""`measure.calibrate_levels`: the host's figures are measured on one thread, and torch's thread count is put back."""

from __future__ import annotations

import pytest
import torch

from llm_perf_opt.measure.calibrate_levels import (
    LEVELS_VERSION,
    measure_conv_fixed,
    measure_gemm_fixed,
    measure_host,
    measure_min_kernel,
    measure_resident_gemv,
    measure_wave_kernels,
    profiled_rounds,
    wave_kernel_cases,
)
from llm_perf_opt.measure.level_fillers import WAVE_KINDS


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_host_figures_are_measured_on_one_thread(dtype):
    """Version 7: dispatch_s and op_s on one thread (a loaded host's parallel regions wait for their other threads,
    which is the kernels' cost, not the host's per op); the thread count the caller had is restored."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        host = measure_host(dtype, rounds=3, warmup=1)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert LEVELS_VERSION >= 7 and host["host_threads"] == 1
    assert "one thread" in host["op_module"] and "set_num_threads(1)" in host["op"] and "thread_time" in host["op"]
    assert host["op_kernels"] > 20  # 4 blocks of ~10 non-view kernels each
    assert 0 < host["dispatch_s"] < host["op_s"] < 1e-3, host  # a per-op cost of µs, never a scheduler's ms
    assert host["op_s"] == pytest.approx(host["op_forward_s"] / host["op_kernels"])


def test_the_resident_gemv_measures_the_cached_rate_and_the_cache_the_thread_keeps():
    """CPU (`gemv_cached`, `llc`): the cached rate is the smallest size's; the cache kept is the largest size at least
    the geometric mean of the cached and the streaming rates: every size against a very slow stream, none against a
    stream faster than any cache (then 0: no step is taken as cache-resident)."""
    k, sizes = 64, (1, 2)
    slow = measure_resident_gemv(k, torch.float32, 2, streaming_bps=1.0, sizes_mib=sizes)
    n = (1 << 20) // (k * 4)
    assert slow["gemv_cached"]["bytes"] == (n * k + k + n) * 4 and slow["gemv_cached"]["bytes_per_s"] > 1e8
    assert slow["llc"]["bytes"] == 2 << 20
    assert (
        "3 untimed calls" in slow["gemv_cached"]["op"] and "1 MiB" in slow["llc"]["op"] and "2 MiB" in slow["llc"]["op"]
    )
    fast = measure_resident_gemv(k, torch.float32, 2, streaming_bps=1e15, sizes_mib=sizes)
    assert fast["llc"]["bytes"] == 0


def test_the_row_products_are_a_share_of_the_one_row_product_timed_the_same_way():
    """CPU (`gemv_rows`): every row count of GEMV_ROW_COUNTS over the streamed weight (at its K) and over the cached
    one (at its K and each of GEMV_ROW_K), each rate as a share of the one-row product's at the streamed weight's K
    timed the same way (1 there exactly); the op names both weights, the warm calls and every K."""
    from llm_perf_opt.measure.calibrate_levels import GEMV_ROW_COUNTS, GEMV_ROW_K, measure_row_products

    k, n = 256, 2048  # a 2 MiB float32 weight streamed, a 1 MiB one re-read
    got = measure_row_products(torch.randn(n, k).t(), 2, cached_mib=1)["gemv_rows"]
    rows = got["rows"]
    ks = sorted({*GEMV_ROW_K, k})
    assert [(r["k"], r["m"]) for r in rows] == [(kk, m) for kk in ks for m in GEMV_ROW_COUNTS]
    assert len(rows) == len(ks) * len(GEMV_ROW_COUNTS) and GEMV_ROW_COUNTS[0] == 1 and len(ks) == 2
    (one,) = [r for r in rows if (r["k"], r["m"]) == (k, 1)]
    assert one["share"] == one["cached_share"] == 1.0
    streamed = [r for r in rows if "share" in r]
    assert [r["k"] for r in streamed] == [k] * len(GEMV_ROW_COUNTS)  # streamed: the GEMV's K only
    for r in rows:
        assert r["cached_bytes_per_s"] > 1e8
        assert r["cached_share"] == pytest.approx(r["cached_bytes_per_s"] / one["cached_bytes_per_s"])
    for r in streamed:
        assert r["bytes_per_s"] > 1e8 and r["share"] == pytest.approx(r["bytes_per_s"] / one["bytes_per_s"])
    assert "streaming 2 MiB" in got["op"] and "re-reading 1 MiB" in got["op"] and "3 untimed calls" in got["op"]
    assert all(f"k {kk}: 1 " in got["op"] for kk in ks) and "at k 256 (the streaming GEMV's)" in got["op"]


def test_the_profiled_figures_read_their_trace_as_a_recording_is_read():
    """The CUDA figures measured under torch.profiler (min kernel, GEMM, convolution call, one-wave kernels) share one
    path: eager rounds profiled, the Chrome trace exported and read by `read_recorded_profile`. On the CPU the path
    runs whole and finds no device kernel, so each figure says it was not measured (and is 0 / absent), never a
    number."""
    cpu = torch.device("cpu")
    calls = [fn for kind in WAVE_KINDS for fn in wave_kernel_cases(cpu, torch.bfloat16)[kind]]
    assert len(calls) == 13
    recorded = profiled_rounds(calls, 2, cpu, "cpu_check")
    assert (recorded.wave_kernel_s, recorded.block_kernel_s, recorded.conv_call_s) == ({}, (), ())
    value, why = measure_min_kernel(cpu, torch.bfloat16, 1)
    assert value == 0.0 and why.startswith("not measured: the profiler recorded no one-block kernel"), why
    value, why = measure_gemm_fixed(cpu, torch.float32, 1)
    assert value == 0.0 and why.startswith("not measured: the profiler recorded no GEMM kernel"), why
    value, why = measure_conv_fixed(cpu, torch.float32, 1)
    assert value == 0.0 and why.startswith("not measured: the profiler recorded no aten::convolution call"), why
    values, ops = measure_wave_kernels(cpu, torch.bfloat16, 1)
    assert values == {} and sorted(ops) == sorted(WAVE_KINDS)
    assert all(text.startswith("not measured: the profiler recorded no one-wave kernel") for text in ops.values()), ops

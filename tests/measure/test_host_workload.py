"""The host's cost per kernel on a decoder-shaped workload (`measure.host_workload`) and the device-only CUDA timing
of the level calibration (`measure.calibrate_levels`, version 6 on)."""

from __future__ import annotations

import pytest
import torch

from llm_perf_opt.measure.calibrate_levels import LEVELS_VERSION, count_kernels, fastest_consistent, measure_levels
from llm_perf_opt.measure.host_workload import LAYERS, DecodeStep, measure_host_workload, step_runner


def test_the_workload_is_a_decode_step_with_its_kernels_counted_and_the_syncs_taken_out():
    run = step_runner(torch.device("cpu"), torch.float32)
    kernels = count_kernels(run)
    # per layer: norms, projections, rotary, cache cats, attention, router, top-k, expert loop; then head + argmax
    assert kernels > 25 * LAYERS
    assert count_kernels(run) == kernels  # the same ops every step (a fresh cache each time)
    got = measure_host_workload(torch.device("cpu"), torch.float32, 0.0, count_kernels, 3, 1, fastest_consistent, 2)
    assert got["op_kernels"] == kernels and got["op_syncs"] == 0  # the CPU is synchronous: no round trips
    assert (
        len(got["op_samples"]) == 3
        and got["op_forward_s"] == min(got["op_samples"])
        or got["op_forward_s"] in (got["op_samples"])
    )
    assert got["op_s"] == pytest.approx(got["op_forward_s"] / kernels)
    assert "MoE decoder" in got["op_module"] and f"{kernels} non-view aten ops" in got["op_module"]
    # with a sync cost the syncs' round trips come out of the wall before dividing by the kernels
    assert DecodeStep.SYNCS == LAYERS + 1


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_cuda_figures_are_device_time_from_graph_replay_and_the_host_is_measured_on_the_device():
    lv = measure_levels(torch.device("cuda"), torch.bfloat16, quick=True)
    assert lv["version"] == LEVELS_VERSION >= 7
    # a replayed graph of tiny adds shows the kernel's device time + the gap to the next, well under the eager launch
    # rate of a host-bound stream (events around back-to-back launches: what version 5 called the minimum kernel
    # time); the min kernel is a one-block kernel's own CUPTI duration, about the graph's period: neither bounds the
    # other (on the H200 of 2026-11-27 16:35 the duration over the period was 0.89 and 1.02 in the calibration, 1.14
    # in this test)
    assert 0 < lv["min_kernel_graph_s"] < lv["launch_rate_s"] and "CUDA graph" in lv["min_kernel_graph_op"]
    assert (
        0.5 < lv["min_kernel_s"] / lv["min_kernel_graph_s"] < 2 and "one-block kernel durations" in lv["min_kernel_op"]
    )
    # every tier a graph of many calls: a one-call graph's events hold its launch (10-25 us): in the first version-8
    # calibration a medium add, copy and fill came out at 0.12, 0.50 and 0.07 of the large one's bytes per second
    # (bfloat16), in the fixed one of 16:48 at 0.88, 0.95 and 0.48
    assert lv["tiers_single"] == []
    for tier in ("elementwise", "copy", "write"):
        assert lv[tier]["medium"]["bytes_per_s"] > 0.25 * lv[tier]["large"]["bytes_per_s"], (tier, lv[tier])
    assert "graph" in lv["timer"]
    assert lv["launch_timed"] == []  # every case of the grid was captured
    # the fixed GEMM time: the shortest eager GEMM kernels' CUPTI durations, above the shortest kernel's device time;
    # the multiprocessors as torch names them
    assert lv["min_kernel_s"] < lv["gemm_fixed_s"] < 20e-6 and "GEMM kernel durations" in lv["gemm_fixed_op"]
    # a convolution call's fixed time: its kernel and cuDNN's layout transforms, above a GEMM's
    assert lv["gemm_fixed_s"] < lv["conv_fixed_s"] < 50e-6 and "convolution calls' device times" in lv["conv_fixed_op"]
    assert lv["multiprocessors"] == torch.cuda.get_device_properties(0).multi_processor_count > 0
    host = lv["host"]
    assert host["op_syncs"] == DecodeStep.SYNCS and host["sync_s"] > 0
    assert host["op_s"] > 0 and "op_cpu_s" in host and "autocast bfloat16" in host["op_module"]
    # per op the step calls (autocast's casts launched inside the products): fewer ops than aten ops
    assert host["op_unit"] == "op" and 0 < host["op_ops"] < host["op_kernels"]


def test_the_ops_the_step_calls_count_an_ops_inner_kernels_with_it():
    from llm_perf_opt.measure.calibrate_levels import count_ops

    x, w = torch.randn(4, 8), torch.randn(8, 8)
    assert count_ops(lambda: x.view(2, 16).t()) == 0  # views launch nothing
    assert count_kernels(lambda: torch.nn.functional.linear(x, w)) >= 1
    assert count_ops(lambda: torch.nn.functional.linear(x, w)) == 1  # one op, whatever it dispatches below
    assert count_ops(lambda: (x + 1).relu().sum()) == 3
    run = step_runner(torch.device("cpu"), torch.float32)
    ops, kernels = count_ops(run), count_kernels(run)
    assert LAYERS * 20 < ops < kernels and count_ops(run) == ops
    got = measure_host_workload(
        torch.device("cpu"), torch.float32, 0.0, count_kernels, 3, 1, fastest_consistent, 2, count_ops=count_ops
    )
    assert (got["op_ops"], got["op_kernels"], got["op_unit"]) == (ops, kernels, "op")
    assert got["op_s"] == pytest.approx(got["op_forward_s"] / ops) and f"its {ops} ops that launch" in got["op_module"]

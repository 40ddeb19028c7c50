"""`measure.calibrate_levels`: the host's figures are measured on one thread, and torch's thread count is put back."""

from __future__ import annotations

import pytest
import torch

from llm_perf_opt.measure.calibrate_levels import LEVELS_VERSION, measure_host


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

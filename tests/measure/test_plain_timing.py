"""measure.plain_timing: one region's wall and device time with no capture and no module ranges."""

from __future__ import annotations

import time

import pytest
import torch

from llm_perf_opt.measure.plain_timing import CPU_BY, DEVICE_BY_CPU, DEVICE_BY_CUDA, kernel_time_s, time_region

CPU = torch.device("cpu")


def _matmul(device: torch.device):
    a = torch.randn(256, 256, device=device)
    return lambda: a @ a


def test_warmup_and_repeats_are_counted_and_the_fastest_kept():
    calls = []

    def fn():
        calls.append(1)
        return torch.ones(4).sum()

    timed, out = time_region(fn, CPU, warmup=2, repeats=4)
    assert len(calls) == 6 and float(out) == 4.0
    assert timed.samples == 4 and timed.warmup == 2 and not timed.stopped_early
    assert timed.wall_s == min(timed.wall_samples_s) > 0
    assert min(timed.wall_samples_s) <= timed.wall_median_s <= max(timed.wall_samples_s)
    assert timed.device_s == timed.wall_s and timed.how["device"] == DEVICE_BY_CPU and timed.span_s is None


def test_one_thread_records_the_threads_cpu_time_beside_the_wall():
    """On one thread cpu_s is the thread's CPU time (time.thread_time) of each call, the fastest kept: a sleep
    (the thread off the core, as when other processes hold it) is in the wall and not in cpu_s; on two threads
    there is no cpu_s."""
    before = torch.get_num_threads()
    a = torch.randn(128, 128)

    def fn():
        time.sleep(0.02)
        return a @ a

    try:
        torch.set_num_threads(1)
        one, _ = time_region(fn, CPU, warmup=1, repeats=3)
        torch.set_num_threads(2)
        two, _ = time_region(fn, CPU, warmup=0, repeats=1)
    finally:
        torch.set_num_threads(before)
    assert one.how["cpu"] == CPU_BY and len(one.cpu_samples_s) == 3 and one.cpu_s == min(one.cpu_samples_s) > 0
    assert one.wall_s >= 0.02 > one.cpu_s and one.to_dict()["cpu_s"] == one.cpu_s
    assert two.cpu_s is None and two.cpu_samples_s == [] and "cpu" not in two.how


def test_a_deadline_stops_the_repeats_after_one_sample():
    calls = []
    timed, _ = time_region(lambda: calls.append(1), CPU, warmup=1, repeats=5, deadline=time.perf_counter() - 1)
    assert len(calls) == 2 and timed.samples == 1 and timed.stopped_early
    assert timed.to_dict()["samples"] == 1 and timed.to_dict()["stopped_early"] is True


def test_bad_counts_are_refused():
    with pytest.raises(ValueError, match="repeats must be >= 1"):
        time_region(lambda: None, CPU, repeats=0)


def test_no_device_activity_on_the_cpu():
    assert kernel_time_s(_matmul(CPU), CPU) == 0.0


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_device_time_is_the_kernel_sum_within_the_wall():
    dev = torch.device("cuda")
    timed, _ = time_region(_matmul(dev), dev, warmup=1, repeats=3)
    assert timed.how["device"] == DEVICE_BY_CUDA
    assert 0 < timed.device_s <= timed.wall_s * 1.5 and timed.span_s is not None and timed.span_s > 0

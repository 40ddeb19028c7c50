"""Time one region of a model's run (a prefill, a decode step) with no capture and no module ranges: what a
throughput measurement at batch can afford.

    timed, out = time_region(lambda: model(**kwargs), device, warmup=1, repeats=3, deadline=t_end)

How (`RegionTime.how` says it in the record):

* wall: `time.perf_counter` around each call, with `torch.cuda.synchronize()` before and after on CUDA; `warmup`
  untimed calls first, then `repeats` timed ones; the figure is the fastest sample (the median and every sample
  are kept beside it).
* device, CUDA: the sum of the durations of every kernel, memcpy and memset of one extra call under
  `torch.profiler` (CPU and CUDA activities as the profile stage, no module ranges, no shapes; summed by
  `profiler_events.read_ranges`):
  the time the device was busy, not the span of the stream. The span (a `torch.cuda.Event` pair around each
  timed call, `elapsed_time`) is kept as `span_s` of the fastest sample: on a host-bound stream it is close to the
  wall time, so it does not measure the kernels.
* device, CPU: there is no separate device; `device_s` is the wall time and `how` says so.
* cpu, CPU on one thread (`torch.get_num_threads() == 1`): `cpu_s`, the calling thread's CPU time of the fastest
  such sample (`time.thread_time` around each timed call: user + system time of the one thread that runs the
  forward and its kernels). On an idle host it equals the wall time; on a loaded one it leaves out the time other
  processes held the core (preemption), which the wall counts. With more threads it is None (the other threads'
  work is not on the calling thread's clock).

A `deadline` (a `time.perf_counter` value) stops the repeats early, after at least one timed sample; the
record says how many samples it has.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import torch

WALL_BY = "time.perf_counter around the call (torch.cuda.synchronize before and after on CUDA); fastest sample"
DEVICE_BY_CUDA = (
    "sum of kernel/memcpy/memset durations of one extra call under torch.profiler (CPU and CUDA activities, "
    "no module ranges)"
)
SPAN_BY_CUDA = "torch.cuda.Event pair around the fastest timed call (stream span: includes idle gaps)"
DEVICE_BY_CPU = "CPU: no separate device; device time = wall time"
CPU_BY = (
    "CPU, one thread: time.thread_time around the call (user + system time of the thread that runs the forward and "
    "its kernels; preemption by other processes not counted); fastest sample"
)


@dataclass
class RegionTime:
    """One region's measured time (seconds)."""

    wall_s: float  # fastest timed sample
    wall_median_s: float
    wall_samples_s: list[float]
    device_s: Optional[float]  # CUDA: kernel-time sum of one extra call; CPU: wall_s
    span_s: Optional[float] = None  # CUDA: event span of the fastest sample
    cpu_s: Optional[float] = None  # CPU on one thread: the thread's CPU time, fastest sample (see the docstring)
    cpu_samples_s: list[float] = field(default_factory=list)
    warmup: int = 0
    stopped_early: bool = False  # the deadline cut the repeats short
    how: dict[str, str] = field(default_factory=dict)

    @property
    def samples(self) -> int:
        return len(self.wall_samples_s)

    def to_dict(self) -> dict[str, Any]:
        return {
            "wall_s": self.wall_s,
            "wall_median_s": self.wall_median_s,
            "wall_samples_s": list(self.wall_samples_s),
            "device_s": self.device_s,
            "span_s": self.span_s,
            "cpu_s": self.cpu_s,
            "cpu_samples_s": list(self.cpu_samples_s),
            "samples": self.samples,
            "warmup": self.warmup,
            "stopped_early": self.stopped_early,
            "how": dict(self.how),
        }


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def kernel_time_s(fn: Callable[[], Any], device: torch.device) -> float:
    """Seconds of device activity (kernels, copies, sets summed) of one call of `fn` on a CUDA device (the profile
    stage's activities, CPU and CUDA; on the CPU there is no device activity: 0.0)."""
    from torch.profiler import ProfilerActivity, profile

    from llm_perf_opt.measure.kineto_log import quiet_kineto
    from llm_perf_opt.measure.profiler_events import read_ranges

    quiet_kineto()
    _sync(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities, record_shapes=False, with_stack=False, profile_memory=False) as prof:
        fn()
        _sync(device)
    return read_ranges(prof.events(), set(), device=True).device_total_us / 1e6


def time_region(
    fn: Callable[[], Any],
    device: torch.device,
    *,
    warmup: int = 1,
    repeats: int = 3,
    deadline: Optional[float] = None,
    device_time: bool = True,
) -> tuple[RegionTime, Any]:
    """(the region's time, the last call's output): `warmup` untimed calls, `repeats` timed ones (fewer past
    `deadline`, at least one), and on CUDA with `device_time` one more call under the profiler."""
    if repeats < 1 or warmup < 0:
        raise ValueError(f"repeats must be >= 1 and warmup >= 0, got repeats={repeats}, warmup={warmup}")
    cuda = device.type == "cuda"
    out = None
    for _ in range(warmup):
        out = fn()
    _sync(device)
    walls: list[float] = []
    spans: list[Optional[float]] = []
    cpus: list[float] = []
    one_thread = not cuda and torch.get_num_threads() == 1
    stopped = False
    for i in range(repeats):
        if i and deadline is not None and time.perf_counter() >= deadline:
            stopped = True
            break
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            _sync(device)
            t0 = time.perf_counter()
            start.record()
            out = fn()
            end.record()
            _sync(device)
            walls.append(time.perf_counter() - t0)
            spans.append(start.elapsed_time(end) / 1e3)
        else:
            c0, t0 = time.thread_time(), time.perf_counter()
            out = fn()
            walls.append(time.perf_counter() - t0)
            cpus.append(time.thread_time() - c0)
            spans.append(None)
    best = min(range(len(walls)), key=walls.__getitem__)
    how = {"wall": WALL_BY}
    if cuda:
        device_s = None
        if device_time and not (deadline is not None and time.perf_counter() >= deadline):
            try:
                device_s = kernel_time_s(fn, device)
                how["device"] = DEVICE_BY_CUDA
            except Exception as exc:  # noqa: BLE001 - a profiler failure loses the device time, not the wall
                first = str(exc).splitlines()[0] if str(exc) else ""
                how["device"] = f"not measured: the profiler failed ({type(exc).__name__}: {first})"
        else:
            how["device"] = "not measured (deadline)" if device_time else "not measured"
        how["span"] = SPAN_BY_CUDA
    else:
        device_s = walls[best]
        how["device"] = DEVICE_BY_CPU
        if one_thread:
            how["cpu"] = CPU_BY
    return (
        RegionTime(
            wall_s=walls[best],
            wall_median_s=statistics.median(walls),
            wall_samples_s=walls,
            device_s=device_s,
            span_s=spans[best],
            cpu_s=min(cpus) if one_thread else None,
            cpu_samples_s=cpus if one_thread else [],
            warmup=warmup,
            stopped_early=stopped,
            how=how,
        ),
        out,
    )

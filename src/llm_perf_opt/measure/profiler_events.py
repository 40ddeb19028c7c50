"""The one adapter over torch.profiler's results: module ranges' CPU spans and the device time of the
kernels launched inside each, plus the Chrome trace export.

How kernels are attributed to module ranges (CUDA): the profiler (Kineto/CUPTI) links every device
activity (kernel, memcpy, memset) to the CPU event that launched it through its correlation id; torch
stores it in that event's `kernels` list. A CPU event belongs to the innermost module range that
encloses it on its thread (`FunctionEvent.cpu_parent` chain, built from time containment). So a
kernel counts toward the module whose range was the innermost one open when its launch was issued on
the CPU, whenever and for however long it ran on the GPU: asynchronous execution does not move it to a
later module. Its duration is the GPU execution time (CUPTI start to end), not the launch time. A range's
device self time is the sum over the kernels attributed to it; inclusive adds its child calls'.
Kernels overlapping on several streams each count in full (a sum of kernel times, not a span).
`gpu_user_annotation` spans (the GPU-side image of a module range, which some torch versions also list among
that range's kernels under the range's own name) are excluded: they are not work. Only a module range's image is
excluded that way: a CPU op may launch a kernel of its own name (a TorchScript fusion group, `fused__...`, launches
the kernel it compiled under its name: CLIP's scripted quick_gelu on CUDA), and that kernel is work. Excluding
it by name alone left it out of every module while the device total counted it (H200 recording
`tests/data/gpu/h200-2026-11-26`: 2.0 us of 1,362 us in the tiny twin's forward, 33.3 us of 12,835 us in the full
twin's: one fused kernel per CLIP layer).

The FunctionEvent fields read here (`device_type`, `is_async`, `time_range`, `kernels`, `cpu_parent`)
are stable since torch 2.0; the version gate below says which torch this adapter was written for.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import torch
from torch.autograd import DeviceType

from llm_perf_opt.artifacts import atomic_path
from llm_perf_opt.errors import TraceError

MIN_TORCH = (2, 4)


def _torch_version() -> tuple[int, int]:
    major, minor = torch.__version__.split("+")[0].split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


def check_torch() -> None:
    if _torch_version() < MIN_TORCH:
        raise TraceError(
            f"measured module times need torch >= {'.'.join(map(str, MIN_TORCH))} "
            f"(FunctionEvent.kernels / cpu_parent, forward hooks with always_call); found {torch.__version__}"
        )


@dataclass
class RangeEvent:
    """One module range as the profiler recorded it (times in microseconds from the trace start)."""

    name: str
    start_us: float
    end_us: float
    device_self_us: float = 0.0  # kernels launched while this was the innermost module range open

    @property
    def cpu_us(self) -> float:
        return self.end_us - self.start_us


@dataclass
class ProfiledRanges:
    """The module ranges of one profiled forward, by name, each name's occurrences in time order."""

    ranges: dict[str, list[RangeEvent]]
    device: bool  # device activity was recorded (CUDA)
    device_total_us: float = 0.0  # every kernel / memcpy / memset in the trace
    device_unattributed_us: float = 0.0  # launched outside every module range
    notes: list[str] = field(default_factory=list)


def _direct_device_us(event: Any, names: set[str]) -> float:
    """Device time of the activities this CPU event launched itself (not its children's); a module range's
    GPU-side image (a kernel entry under the range's own name, `names`) is not work."""
    image = event.name in names
    return float(sum(k.duration for k in event.kernels if not (image and k.name == event.name)))


def read_ranges(events: Iterable[Any], names: set[str], device: bool) -> ProfiledRanges:
    """Module ranges (CPU events named in `names`) with the device time attributed to each."""
    check_torch()
    by_name: dict[str, list[tuple[Any, RangeEvent]]] = defaultdict(list)
    launchers: list[Any] = []
    device_total = 0.0
    for event in events:
        if event.device_type == DeviceType.CPU:
            if event.is_async:
                continue
            if event.name in names:
                tr = event.time_range
                by_name[event.name].append((event, RangeEvent(event.name, float(tr.start), float(tr.end))))
            if device and event.kernels:
                launchers.append(event)
        elif device and not getattr(event, "is_user_annotation", False) and event.name not in names:
            device_total += float(event.time_range.end - event.time_range.start)
    own = {id(ev): rng for pairs in by_name.values() for ev, rng in pairs}
    unattributed = 0.0
    for event in launchers:
        us = _direct_device_us(event, names)
        if not us:
            continue
        node = event
        while node is not None and id(node) not in own:
            node = node.cpu_parent
        if node is None:
            unattributed += us
        else:
            own[id(node)].device_self_us += us
    ranges = {name: [rng for _, rng in sorted(pairs, key=lambda p: p[1].start_us)] for name, pairs in by_name.items()}
    return ProfiledRanges(
        ranges=ranges, device=device, device_total_us=device_total, device_unattributed_us=unattributed
    )


def export_chrome_trace(prof: Any, path: str | os.PathLike) -> Path:
    """`prof.export_chrome_trace`, written to a temporary file beside `path` and renamed (atomic)."""
    with atomic_path(path) as tmp:
        prof.export_chrome_trace(tmp)
    return Path(path)

"""A recorded run's profile beside a calibration file: which runs belong to the calibration, and what their profile
traces measured of the device and of the host. No torch: the files are read as JSON (gzip-compressed or not).

Which runs (`recordings_beside`): the folder of the calibration file and each folder directly inside it that holds
a torch.profiler Chrome trace (`profile.trace.json.gz`, else `profile.trace.json`: the trace job's profile stage
writes it, `benchmarks/cuda_validation.py` compresses it) whose `deviceProperties` name the calibration's device
(`device_name`, as `torch.cuda.get_device_name` gave it). A trace that cannot be read is left out with its reason.

What each trace gives (`RecordedProfile`):

* `kernel_s`: every CUDA kernel's device duration (`cat == "kernel"` events, microseconds in the file): device-only
  time, as CUPTI recorded it, whatever the host was doing; `gemm_kernel_s`: those of the GEMM kernels among them
  (`is_gemm_kernel`: cuBLAS / cuBLASLt / CUTLASS matrix products by kernel name); `multiprocessors`: the device's
  streaming multiprocessors (`deviceProperties[0].numSms`); `wave_kernel_s`: per small-kernel kind (`small_kind`:
  elementwise, copy, cast, reduction, by kernel name) the durations of its kernels whose grid is one wave of more
  than one block (2 to `multiprocessors` blocks: the size class whose time is the kind's fixed cost, not its work);
  `block_kernel_s`: the durations of the small kernels (any of those kinds) launched on a single block (`one_block`:
  a decode row's add, cast or copy; the kernel level's floor, `level_fillers.min_kernel_from_recording`);
  `conv_call_s`: per
  convolution call (`aten::convolution`) the device time of the kernels it launched (`conv_calls`: the convolution
  kernel with cuDNN's layout transforms), `level_fillers.conv_fixed_from_recording`;
* `host_busy_s`: the host thread's time in the traced forward: from the first to the last CPU-side op event
  (`cat == "cpu_op"`) of the thread that issued the most of them (the Python thread), less the time it spent waiting
  in device synchronisations (`cuda_runtime` events named `*Synchronize*`: waiting for the device, not host work);
* `kernels`: how many kernels that forward ran on the device;
* `ops`: how many ops the host thread called that launched device work: its outermost CPU op events
  (`cat == "cpu_op"` not inside another of the thread's ops) under which a kernel or memset was launched (tied by
  correlation id). An op's inner kernels (an autocast cast before a product, cuDNN's layout transforms around a
  convolution, SDPA's memset) are launched by the dispatcher inside it: they count once, with their op. What the
  cost formulas list as `Kernels.op_count` and TorchLens records (the kernel-count check's measured column);
* `plain_min_s` / `profiled_traced_s`: the fastest plain forward of the same run and the wall of the profiled
  forward this trace recorded (`profile.json(.gz)` beside the trace: `wall.plain_s.min`, and
  `wall.profiled_s.repeats[trace_repeat]`, the trace being the last profiled round's; `profiled_min_s` the fastest
  profiled forward, kept for the label; None without profile.json): the profiler slows the host (it records every
  op), and the traced forward's wall against the fastest plain one says by how much;
* `outer_ops`: per op name, how many outermost ops of the host thread the traced forward called and their median
  duration (launching or not: views and metadata ops included), what `measure.host_pace` compares between the runs
  of one recording.
"""

from __future__ import annotations

import bisect
import functools
import gzip
import json
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

TRACE_NAMES = ("profile.trace.json.gz", "profile.trace.json")
# the kernel names of matrix products (nn.Linear, torch.matmul) on CUDA: cuBLASLt's nvjet kernels (Hopper),
# cuBLAS / CUTLASS gemm kernels and cuBLASLt's split-K reduction; cuDNN's convolution and attention kernels
# (fprop, convolve, sdpa, fmha) are not among them
GEMM_KERNEL = re.compile(r"nvjet|gemm|splitKreduce", re.IGNORECASE)
NOT_GEMM_KERNEL = re.compile(r"conv|fprop|sdpa|fmha|flash", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def is_gemm_kernel(name: str) -> bool:
    """Whether a CUDA kernel of this name is a matrix product's (see `GEMM_KERNEL`; memoized as `small_kind`)."""
    return bool(GEMM_KERNEL.search(name)) and not NOT_GEMM_KERNEL.search(name)


# The small-kernel kinds of the kernel level (`analytic.costs.KERNEL_KINDS`) by CUDA kernel name, first match wins:
# PyTorch's TensorIterator and reduction kernels. Not among them: matrix products, convolutions, attention, and the
# sorts / top-k / scans (single-block radix sorts of tens of µs: another cost than a norm's or a sum's)
SMALL_KINDS = (
    (
        "other",
        re.compile(r"nvjet|gemm|splitKreduce|conv|fprop|nchwToNhwc|nhwcToNchw|sdpa|fmha|flash|sort|topk|scan", re.I),
    ),
    ("reduction", re.compile(r"layer_norm|reduce_kernel|softmax|norm", re.I)),
    ("cast", re.compile(r"(?<!direct)_copy_kernel|autocast", re.I)),  # bfloat16_copy_kernel_cuda, fused autocast
    # direct_copy: contiguous copies and TensorIterator's casting copy (LoadWithCast: an upcast to float32)
    ("copy", re.compile(r"direct_copy|CatArray|gather|index|scatter|upsample|fill|arange", re.I)),
    ("elementwise", re.compile(r"elementwise", re.I)),
)


@functools.lru_cache(maxsize=4096)
def small_kind(name: str) -> Optional[str]:
    """The kernel level's small-kernel kind of a CUDA kernel of this name (elementwise, copy, cast, reduction; see
    `SMALL_KINDS`), None for any other kernel. Memoized: a trace repeats a few hundred names thousands of times."""
    for kind, pattern in SMALL_KINDS:
        if pattern.search(name):
            return None if kind == "other" else kind
    return None


def one_wave(grid: Any, multiprocessors: Optional[int]) -> bool:
    """Whether a kernel launched on `grid` ([x, y, z] blocks) is one wave of more than one block on a device of
    `multiprocessors` (False when either is unknown)."""
    if not multiprocessors or not isinstance(grid, (list, tuple)) or not grid:
        return False
    blocks = 1
    for g in grid:
        blocks *= int(g)
    return 1 < blocks <= multiprocessors


def one_block(grid: Any) -> bool:
    """Whether a kernel launched on `grid` ([x, y, z] blocks) is a single block (False when unknown)."""
    return isinstance(grid, (list, tuple)) and bool(grid) and all(int(g) == 1 for g in grid)


CONV_OP = "aten::convolution"  # the op of a convolution call (nn.Conv2d, F.conv2d): cuDNN's kernels run inside it
DEVICE_WORK = ("kernel", "gpu_memset", "gpu_memcpy")


def conv_calls(events: list[dict], ops: list[dict]) -> tuple[float, ...]:
    """Per `CONV_OP` call of the host thread (`ops`: its CPU op events), the device time of every kernel, memset
    and memcpy it launched (its runtime launch calls within the op's span, tied to the device work by correlation
    id): the convolution kernel and cuDNN's layout transforms (NCHW to NHWC of the input and the weights, back for
    the result) around it."""
    calls = sorted((float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in ops if e.get("name") == CONV_OP)
    if not calls:
        return ()
    thread = {(e.get("pid"), e.get("tid")) for e in ops}
    launched = {
        (e.get("args") or {}).get("correlation"): float(e["ts"])
        for e in events
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and (e.get("pid"), e.get("tid")) in thread and "ts" in e
    }
    starts = [c[0] for c in calls]
    out = [0.0] * len(calls)
    for e in events:
        if e.get("cat") not in DEVICE_WORK or "dur" not in e:
            continue
        ts = launched.get((e.get("args") or {}).get("correlation"))
        if ts is None:
            continue
        i = bisect.bisect_right(starts, ts) - 1
        if i >= 0 and ts <= calls[i][1]:
            out[i] += float(e["dur"]) * 1e-6
    return tuple(t for t in out if t > 0)


PROFILE_NAMES = ("profile.json.gz", "profile.json")


@dataclass(frozen=True)
class RecordedProfile:
    """What one recorded profile trace measured (see the module docstring)."""

    trace: Path
    device_name: str
    kernel_s: tuple[float, ...]
    host_busy_s: float
    sync_wait_s: float
    plain_min_s: Optional[float] = None
    profiled_min_s: Optional[float] = None
    gemm_kernel_s: tuple[float, ...] = ()
    multiprocessors: Optional[int] = None  # the device's streaming multiprocessors (deviceProperties' numSms)
    wave_kernel_s: Mapping[str, tuple[float, ...]] = field(default_factory=dict)  # small kind -> one-wave durations
    block_kernel_s: tuple[float, ...] = ()  # the one-block small kernels' durations (grid of one block)
    conv_call_s: tuple[float, ...] = ()  # per convolution call (`CONV_OP`): the device time of all its kernels
    ops: int = 0  # the host thread's outermost ops that launched a kernel or memset (see the module docstring)
    profiled_traced_s: Optional[float] = None  # the wall of the profiled forward this trace recorded
    outer_ops: Mapping[str, tuple[int, float]] = field(default_factory=dict)  # op name -> (calls, median seconds)

    @property
    def kernels(self) -> int:
        return len(self.kernel_s)

    @property
    def run(self) -> Path:
        return self.trace.parent

    def plain_host_s(self) -> Optional[float]:
        """The traced forward's host time as a plain forward would spend it: the host's busy time in the trace scaled
        by the fastest plain forward / the traced profiled forward (None without profile.json). The traced forward,
        not the fastest profiled one: the trace is the last round's, and the rounds' profiled walls differ (2026-11-26
        twin_tiny-tiny: 27.9 and 37.5 ms; the trace is the 37.5 ms one)."""
        if not self.plain_min_s or not self.profiled_traced_s:
            return None
        return self.host_busy_s * (self.plain_min_s / self.profiled_traced_s)

    def host_per_kernel_s(self) -> Optional[float]:
        """Host seconds per device kernel in a plain forward (`plain_host_s` / kernels; None without either)."""
        host = self.plain_host_s()
        return host / self.kernels if host and self.kernels else None

    def host_per_op_s(self) -> Optional[float]:
        """Host seconds per op that launched device work in a plain forward (`plain_host_s` / `ops`)."""
        host = self.plain_host_s()
        return host / self.ops if host and self.ops else None


def read_json_file(path: Path) -> Any:
    """A JSON file, gzip-compressed when its name ends in .gz; OSError / ValueError when it cannot be read."""
    if path.name.endswith(".gz"):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            return json.load(fh)
    return json.loads(path.read_text(encoding="utf-8"))


def _first(folder: Path, names: tuple[str, ...]) -> Optional[Path]:
    return next((folder / n for n in names if (folder / n).is_file()), None)


def _walls(run: Path) -> tuple[Optional[float], Optional[float], Optional[float]]:
    """(fastest plain, fastest profiled, traced profiled) forward of profile.json beside a trace: the traced one is
    `profiled_s.repeats[trace_repeat]` (a profile.json without `trace_repeat`: the last repeat, the round whose trace
    is kept; without the repeats: the fastest); (None, None, None) without it."""
    path = _first(run, PROFILE_NAMES)
    if path is None:
        return None, None, None
    try:
        data = read_json_file(path).get("data") or {}
        wall = data.get("wall") or {}
        profiled = wall["profiled_s"]
        repeats = [float(v) for v in profiled.get("repeats") or []]
        at = data.get("trace_repeat")
        traced = repeats[int(at) if at is not None else -1] if repeats else float(profiled["min"])
        return float(wall["plain_s"]["min"]), float(profiled["min"]), traced
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None, None, None


def outermost(ops: list[dict]) -> list[dict]:
    """The op events of `ops` (one thread's) not inside another of them, in call order."""
    outer: list[dict] = []
    end = -1.0
    for e in sorted(ops, key=lambda e: (float(e["ts"]), -float(e["dur"]))):
        if float(e["ts"]) >= end:
            outer.append(e)
            end = float(e["ts"]) + float(e["dur"])
    return outer


def outer_op_durations(ops: list[dict]) -> dict[str, tuple[int, float]]:
    """{op name: (calls, median seconds)} of the outermost ops of `ops` (one thread's op events)."""
    by: dict[str, list[float]] = {}
    for e in outermost(ops):
        by.setdefault(str(e.get("name")), []).append(float(e["dur"]) * 1e-6)
    return {name: (len(d), statistics.median(d)) for name, d in sorted(by.items())}


def launching_ops(events: list[dict], ops: list[dict]) -> int:
    """How many of the host thread's outermost CPU ops (`ops`: its op events) launched a kernel or memset (their
    runtime launch calls within the op's span, tied to the device work by correlation id)."""
    if not ops:
        return 0
    outer = [(float(e["ts"]), float(e["ts"]) + float(e["dur"])) for e in outermost(ops)]
    device = {(e.get("args") or {}).get("correlation") for e in events if e.get("cat") in ("kernel", "gpu_memset")}
    thread = {(e.get("pid"), e.get("tid")) for e in ops}
    starts = [o[0] for o in outer]
    hit = set()
    for e in events:
        if (
            e.get("cat") in ("cuda_runtime", "cuda_driver")
            and (e.get("pid"), e.get("tid")) in thread
            and "ts" in e
            and (e.get("args") or {}).get("correlation") in device
        ):
            ts = float(e["ts"])
            i = bisect.bisect_right(starts, ts) - 1
            if i >= 0 and ts <= outer[i][1]:
                hit.add(i)
    return len(hit)


def read_recorded_profile(trace: Path) -> RecordedProfile:
    """One trace (see the module docstring); ValueError naming what is wrong when it is not a profiler trace."""
    try:
        doc = read_json_file(trace)
    except (OSError, ValueError, EOFError) as exc:
        raise ValueError(f"not readable ({type(exc).__name__}: {exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise ValueError("not a Chrome trace (no traceEvents list)")
    props = [d for d in doc.get("deviceProperties") or [] if isinstance(d, dict)]
    names = [str(d.get("name")) for d in props]
    raw_sms = props[0].get("numSms") if props else None
    events = [e for e in doc["traceEvents"] if isinstance(e, dict) and e.get("ph") == "X"]
    timed = [e for e in events if e.get("cat") == "kernel" and "dur" in e]
    kernels = tuple(float(e["dur"]) * 1e-6 for e in timed)
    gemms = tuple(float(e["dur"]) * 1e-6 for e in timed if is_gemm_kernel(str(e.get("name", ""))))
    sms = int(raw_sms) if isinstance(raw_sms, int) and raw_sms > 0 else None
    wave: dict[str, list[float]] = {}
    block: list[float] = []
    for e in timed:
        kind = small_kind(str(e.get("name", "")))
        grid = (e.get("args") or {}).get("grid")
        if kind and one_wave(grid, sms):
            wave.setdefault(kind, []).append(float(e["dur"]) * 1e-6)
        elif kind and one_block(grid):
            block.append(float(e["dur"]) * 1e-6)
    ops = [e for e in events if e.get("cat") == "cpu_op" and "ts" in e and "dur" in e]
    busy = wait = 0.0
    if ops:
        thread = Counter((e.get("pid"), e.get("tid")) for e in ops).most_common(1)[0][0]
        ops = [e for e in ops if (e.get("pid"), e.get("tid")) == thread]
        start = min(float(e["ts"]) for e in ops)
        end = max(float(e["ts"]) + float(e["dur"]) for e in ops)
        wait = sum(
            float(e["dur"])
            for e in events
            if e.get("cat") == "cuda_runtime"
            and "Synchronize" in str(e.get("name"))
            and (e.get("pid"), e.get("tid")) == thread
            and start <= float(e.get("ts", -1)) <= end
        )
        busy = max(end - start - wait, 0.0) * 1e-6
    convs = conv_calls(events, ops)
    plain, profiled, traced = _walls(trace.parent)
    return RecordedProfile(
        trace,
        names[0] if names else "",
        kernels,
        busy,
        wait * 1e-6,
        plain,
        profiled,
        gemms,
        sms,
        {k: tuple(v) for k, v in sorted(wave.items())},
        tuple(block),
        convs,
        launching_ops(events, ops),
        traced,
        outer_op_durations(ops),
    )


_CACHE: dict[tuple[str, int, int], RecordedProfile | str] = {}


def _cached(trace: Path) -> RecordedProfile | str:
    """The trace read once per process (a job checks the file before its run and reads it again to predict)."""
    st = trace.stat()
    key = (str(trace.resolve()), st.st_mtime_ns, st.st_size)
    if key not in _CACHE:
        try:
            _CACHE[key] = read_recorded_profile(trace)
        except ValueError as exc:
            _CACHE[key] = str(exc)
    return _CACHE[key]


def run_profile(run: Path) -> Optional[RecordedProfile]:
    """The recorded profile of the run folder `run` (its trace read once per process); None without a readable
    trace."""
    trace = _first(Path(run), TRACE_NAMES)
    got = _cached(trace) if trace is not None else None
    return got if isinstance(got, RecordedProfile) else None


def recordings_beside(path: Path, device_name: str) -> tuple[list[RecordedProfile], list[str]]:
    """(the recorded profiles of `device_name` beside the calibration file `path`, sorted by run folder; the traces
    left out, each 'TRACE: why')."""
    folder = Path(path).parent
    found, left_out = [], []
    for run in [folder, *sorted(p for p in folder.iterdir() if p.is_dir())]:
        trace = _first(run, TRACE_NAMES)
        if trace is None:
            continue
        got = _cached(trace)
        if isinstance(got, str):
            left_out.append(f"{trace}: {got}")
        elif got.device_name != device_name:
            left_out.append(f"{trace}: recorded on {got.device_name or 'an unnamed device'}, not {device_name}")
        else:
            found.append(got)
    return found, left_out

"""What a calibration of an older kernel-level version lacks, and how it is filled: one declared table (`FILLERS`).

A calibration outlives the code that measured it (a recorded GPU run is evidence long after the GPU is gone), so a
file of an older `calibrate_levels.LEVELS_VERSION` is read, not refused. Each `Filler` names a figure of one dtype's
kernel-level and host figures (a dotted path in `levels[dtype]`), the version that gave it its present meaning, and
the device types on which an older figure of that name means something else. For each such figure, in this order:

1. the figure as the file has it, when the file is of that version or newer (and, for a meaning changed within a
   version, has the figure's `present_with` marker beside it), or of a device type the change does not touch (there a
   figure the file lacks stays absent: the time model reads it as none, e.g. a CPU file's `gemm_fixed_s`);
2. `from_recording`: computed from the recorded runs beside the file (`measure.recorded_profile`);
3. `older`: the file's own figure of the older meaning, kept and labelled with what it measured;
4. `default`: a named default;
5. else the file is refused, naming the file and the figure (`MissingFigure`).

Every filled figure says where it came from (`fill_levels` returns {figure: source}; the figure's own description
field, e.g. `min_kernel_op`, is replaced by it, so the time model's sources and the label say it too).

To add the figures of a new version: one `Filler` row below (with a `from_recording` function when a recording can
give it); the known version follows (`known_levels_version`).

Launch-bound figures (`LAUNCH_BOUND`, `launch_bound`): a CUDA file older than `TIMED_ON_DEVICE_SINCE` timed each
case with CUDA events around back-to-back eager launches, so a case whose device time is shorter than the host's
cost of issuing it measured that cost, not the device. Such a figure is an upper bound of the device time,
labelled, and set aside where its row says so (where what stands in is nearer the device time, measured). A case
is launch-bound when its per-call time is within `LAUNCH_BOUND_FACTOR` of the fastest call of its own kind in the
file (each kind's host cost per call differs: a torch.add, a transpose copy, a cuBLAS matmul, an SDPA call). A
launch-bound bandwidth tier set aside takes its kind's large tier (bytes / large bandwidth; the kernel level floors
it by the min kernel time, itself filled from the recording's kernel durations); a launch-bound GEMM or attention
point set aside leaves its curve (a row of the GEMM grid left without a point leaves `gemm_rows`: its products read
the curve over x; an attention curve left without a point: the GEMM curve). A stand-in needs the device-only figures
only a recording gives an old file (its min kernel, its fixed GEMM time): a file alone keeps every launch-bound
figure, labelled (`launch_bound_rules`).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Optional, Sequence

from llm_perf_opt.measure.recorded_profile import RecordedProfile

MIN_KERNEL_PERCENTILE = 50  # a one-block kernel's device time: the median of the recorded one-block small kernels
MIN_RECORDED_KERNELS = 100  # fewer recorded one-block kernels than this say nothing about them
GEMM_FIXED_PERCENTILE = 5  # a GEMM's fixed device time: a low percentile of the recorded GEMM kernel durations
MIN_RECORDED_GEMMS = 50  # fewer recorded GEMM kernels than this say nothing about the shortest one
CONV_FIXED_PERCENTILE = 50  # a convolution call's fixed device time: the median of the recorded calls' times
MIN_RECORDED_CONVS = 4  # fewer recorded convolution calls than this say nothing about the shortest one
WAVE_KERNEL_PERCENTILE = 50  # a one-wave kernel's device time: the median of the recorded ones of its kind
MIN_RECORDED_WAVE_KERNELS = 20  # fewer recorded one-wave kernels of a kind than this say nothing about it
WAVE_KINDS = ("elementwise", "copy", "cast", "reduction")  # the kinds with a one-wave figure (`wave_kernel_s`)


@dataclass(frozen=True)
class Filled:
    value: float
    source: str  # how it was obtained: which recording, which events, which statistic
    origin: str = "recording"  # "recording", "older" (the file's figure of the older meaning, kept), "default" or
    # "launch-bound" (`launch_bound`: the figure set aside, value the stand-in or the number of points left out)


@dataclass(frozen=True)
class NamedDefault:
    """A default with a name: a constant, or another figure of the same file, and why it stands in."""

    name: str
    why: str
    value: Callable[[Mapping[str, Any]], Optional[float]]  # one dtype's levels -> the value (None: not there)


@dataclass(frozen=True)
class Filler:
    """One figure of `levels[dtype]` and how a file older than `since` gets it (see the module docstring)."""

    figure: str  # dotted path in one dtype's levels: "min_kernel_s", "host.op_s"
    since: int  # the LEVELS_VERSION that gave the figure its present meaning
    means: str  # what the figure is from `since` on
    devices: tuple[str, ...]  # device types whose older figure means something else ("cuda"); others keep theirs
    from_recording: Optional[Callable[[Sequence[RecordedProfile]], Optional[Filled]]]
    older: Optional[str]  # what the older figure of this name measured (kept with this label); None: never kept
    default: Optional[NamedDefault] = None
    describes: Optional[str] = None  # the dotted path of the figure's description text, replaced when filled
    # a dotted path whose presence marks a file of version `since` or newer as measuring the figure's present meaning
    # (a meaning changed within a version: files written before the change lack it); None: the version alone
    present_with: Optional[str] = None
    # (dotted path, value) set beside a figure filled from a recording (a figure whose unit the recording fixes:
    # `host.op_unit`); a figure kept or defaulted leaves it as the file has it
    marks: Optional[tuple[str, Any]] = None


class MissingFigure(ValueError):
    """A figure neither the file, a recording nor a named default supplies: `figure` is its path under levels."""

    def __init__(self, figure: str, why: str) -> None:
        super().__init__(f"{figure}: {why}")
        self.figure, self.why = figure, why


def percentile(values: Sequence[float], p: float) -> float:
    """The nearest-rank p-th percentile (p in 0..100) of `values`."""
    s = sorted(values)
    return s[max(0, math.ceil(p / 100 * len(s)) - 1)]


def _runs(recordings: Sequence[RecordedProfile]) -> str:
    return ", ".join(f"{r.run.name}/{r.trace.name}" for r in recordings)


def _percentile_filled(
    durations: list[float], minimum: int, p: float, what: str, recordings: Sequence[RecordedProfile]
) -> Optional[Filled]:
    """The `p`th percentile of the recorded `durations` as a filled figure naming `what` they are and the runs; None
    under `minimum` of them (too few to say anything)."""
    if len(durations) < minimum:
        return None
    value = percentile(durations, p)
    return Filled(
        value,
        f"from the recording beside the file: the {p}th percentile of {len(durations):,} {what} in "
        f"{_runs(recordings)}: {value * 1e6:.3g} µs",
    )


def min_kernel_from_recording(recordings: Sequence[RecordedProfile]) -> Optional[Filled]:
    """The device-only time of a one-block kernel, the kernel level's floor of every kernel: the
    `MIN_KERNEL_PERCENTILE`th percentile of the recorded one-block small kernels' durations
    (`RecordedProfile.block_kernel_s`: TensorIterator and reduction kernels launched on a single block, by kernel name
    and grid, CUPTI's device timestamps, whatever the host did), pooled over the runs: what a kernel of a decode row
    takes (an add, a cast, a copy of a few hundred elements: ~1.1 µs on an H200), not the shortest kernel's outlier
    (0.6-0.7 µs fills). None under `MIN_RECORDED_KERNELS`."""
    durations = [d for r in recordings for d in r.block_kernel_s if d > 0]
    return _percentile_filled(
        durations,
        MIN_RECORDED_KERNELS,
        MIN_KERNEL_PERCENTILE,
        "one-block small kernel durations (elementwise, copy, cast, reduction kernels by name on a grid of one "
        "block; device-only, torch.profiler/CUPTI)",
        recordings,
    )


def gemm_fixed_from_recording(recordings: Sequence[RecordedProfile]) -> Optional[Filled]:
    """The fixed device time of one matrix-product kernel: the `GEMM_FIXED_PERCENTILE`th percentile of the recorded
    GEMM kernels' durations (`RecordedProfile.gemm_kernel_s`: cuBLAS / cuBLASLt / CUTLASS kernels by name; CUPTI's
    device timestamps), pooled over the runs. The shortest GEMMs of a forward (a tiny model's projections, a
    router's, a few tokens through a small weight) have negligible work: their duration is the fixed part. None
    under `MIN_RECORDED_GEMMS`."""
    durations = [d for r in recordings for d in r.gemm_kernel_s if d > 0]
    return _percentile_filled(
        durations,
        MIN_RECORDED_GEMMS,
        GEMM_FIXED_PERCENTILE,
        "GEMM kernel durations (cuBLAS / cuBLASLt / CUTLASS kernels by name; device-only, torch.profiler/CUPTI)",
        recordings,
    )


def conv_fixed_from_recording(recordings: Sequence[RecordedProfile]) -> Optional[Filled]:
    """The fixed device time of one convolution call: the `CONV_FIXED_PERCENTILE`th percentile of the recorded calls'
    device times (`RecordedProfile.conv_call_s`: per `aten::convolution`, the convolution kernel and cuDNN's layout
    transforms around it, CUPTI's device timestamps), pooled over the runs. Most calls of these forwards are small
    (SAM's neck on its 16 x 16 map: three transforms of ~1.5 µs and a 4-5 µs kernel, ~10 µs a call, where its work
    at the GEMM rate is under 1 µs): their time is the call's fixed part. A median, not a low percentile: the
    shortest calls are 1 x 1 convolutions cuDNN runs as one GEMM kernel (~2.5 µs, no transforms), a minority the
    kernel level cannot tell apart by its census. None under `MIN_RECORDED_CONVS`."""
    durations = [d for r in recordings for d in r.conv_call_s if d > 0]
    return _percentile_filled(
        durations,
        MIN_RECORDED_CONVS,
        CONV_FIXED_PERCENTILE,
        "convolution calls' device times (aten::convolution: its kernels and cuDNN's layout transforms summed; "
        "device-only, torch.profiler/CUPTI)",
        recordings,
    )


def wave_kernel_from_recording(kind: str) -> Callable[[Sequence[RecordedProfile]], Optional[Filled]]:
    """The device time of a one-wave kernel of `kind` (more than one block, at most one per multiprocessor: a
    TensorIterator or reduction kernel over a few thousand to ~100k elements, whose time is its fixed cost, not its
    bytes): the `WAVE_KERNEL_PERCENTILE`th percentile of the recorded kernels of that kind and size
    (`RecordedProfile.wave_kernel_s`: the kind by kernel name, `recorded_profile.small_kind`; the grid from the
    trace; CUPTI's device timestamps), pooled over the runs. None under `MIN_RECORDED_WAVE_KERNELS`."""

    def fill(recordings: Sequence[RecordedProfile]) -> Optional[Filled]:
        durations = [d for r in recordings for d in r.wave_kernel_s.get(kind, ()) if d > 0]
        return _percentile_filled(
            durations,
            MIN_RECORDED_WAVE_KERNELS,
            WAVE_KERNEL_PERCENTILE,
            f"one-wave {kind} kernel durations (kind by kernel name, 2 to numSms blocks; device-only, "
            "torch.profiler/CUPTI)",
            recordings,
        )

    return fill


def multiprocessors_from_recording(recordings: Sequence[RecordedProfile]) -> Optional[Filled]:
    """The device's streaming multiprocessors as the recorded traces name them (`deviceProperties[0].numSms`); None
    when no trace says, or two traces disagree."""
    counts = {r.multiprocessors for r in recordings if r.multiprocessors}
    if len(counts) != 1:
        return None
    (value,) = counts
    return Filled(
        float(value),
        f"from the recording beside the file: the profile traces' deviceProperties numSms ({_runs(recordings)}): "
        f"{value}",
    )


def host_op_from_recording(recordings: Sequence[RecordedProfile]) -> Optional[Filled]:
    """Host seconds per op of this model's own eager forward on the device's host, pooled over the recorded runs:
    the host thread's busy time in each traced forward (its CPU-side op events, first to last, less its waits in
    device syncs), scaled by the fastest plain forward / that traced profiled forward (the profiler slows the host;
    `RecordedProfile.plain_host_s`), summed, over the ops those forwards called that launched device work, summed
    (`RecordedProfile.ops`: an op's inner kernels, an autocast cast, cuDNN's layout transforms, SDPA's memset, count
    with it; what the cost formulas' `Kernels.op_count` lists). Per op, not per kernel: the host pays Python, the
    module and the dispatcher once per op, and the dispatcher launches the op's inner kernels with it (the full
    twin's prefill: 20.1-20.9 µs per op on both dates, 18.2-18.5 per kernel, its decode step 23.6-26.1 per op, 22.7-25.1
    per kernel: per op the two stages are 1.18x apart, per kernel 1.28x). Pooled (each op weighs the same), not a
    median of the runs: a short forward's figure carries its one plain wall's noise (the tiny twin's: 11.5 to 20.5 ms
    for the same forward). On a host-bound forward this is the host's cost per op, Python and module code included;
    where the device was busy longer than the host it is an upper bound. None without a run that has both a trace
    and its profile.json."""
    usable = [(r, r.plain_host_s()) for r in recordings if r.ops and r.plain_host_s()]
    if not usable:
        return None
    ops = sum(r.ops for r, _ in usable)
    value = sum(h for _, h in usable) / ops
    runs = "; ".join(
        f"{r.run.name}: {r.host_busy_s * 1e3:.4g} ms host x plain {r.plain_min_s * 1e3:.4g} ms / traced profiled "
        f"{r.profiled_traced_s * 1e3:.4g} ms / {r.ops:,} ops = {h / r.ops * 1e6:.3g} µs"
        for r, h in usable
    )
    return Filled(
        value,
        "from the recording beside the file: host time per op of the model's eager forward (the host thread's CPU op "
        "events in the profile trace, less its sync waits, scaled by the fastest plain / the traced profiled forward; "
        "per outermost op that launched a kernel or memset), pooled over "
        f"{len(usable)} run(s) ({runs}): {value * 1e6:.3g} µs per op",
    )


TIMED_ON_DEVICE_SINCE = 6  # version 6: each case timed by a CUDA-graph replay (device time), not eager launches
LAUNCH_BOUND_FACTOR = 1.5  # a call within this factor of its kind's fastest call measured the launch, not the device


@dataclass(frozen=True)
class LaunchBound:
    """One kind of case of an older CUDA file whose launch-bound figures are labelled (see the module docstring)."""

    figure: str  # "elementwise", "copy": tiers {small, medium, large}; "gemm", "attention": lists of points
    fastest: str  # the kind's fastest call in the file (its host cost per call): "min_kernel_s" or "own"
    set_aside: bool  # True: what `instead` says stands in; False: kept as an upper bound, labelled
    instead: str  # what stands in for a launch-bound figure, or why it is kept


# Set aside where what stands in is nearer the device time per kernel (|log(figure / device time)|), measured on the
# H200 file of 2026-11-26 (bfloat16) against the CUDA kernel durations of its own recorded runs and of the
# device-timed version-6 recording of 2026-11-27 (same H200), with the fixed GEMM time (`gemm_fixed_s`) in the kernel
# level: a 64k-element add runs 1.0-1.4 µs on the device (launch-bound 8.9 µs; bytes / large bandwidth floored by
# the recorded min kernel: 0.96 µs), a 64k-element layout copy ~2.2 µs (launch-bound 12.0 µs; stand-in 0.96 µs), an
# expert's 8 x 1280 x 896 product 4.4-5.2 µs (launch-bound 11.3 µs; the curve of the large products + the fixed GEMM
# time: 2.9 µs), a 100 x 1280 x 1280 projection ~5 µs (7.5 µs; 3.1 µs); SAM's two SDPA kernels 8.2 and 20.2 µs (the
# launch-bound attention curve: 6.2 and 18.9 µs, nearer; the GEMM curve: 1.2 and 2.8 µs): attention is kept. With
# these set aside the file's replay (`tests/measure/test_replay_levels.py`, its 40 units) has 19 within 25% instead
# of 17, median |kernel level / device time - 1| 0.32 instead of 0.35; its small kernels now sit at the recorded
# min kernel (0.9-1 µs, the 5th percentile) where eager ones take 1-2.5 µs: SAM, CLIP and the decoder at 0.6-1.0 of
# their device time. The figures set aside are labelled (`launch_bound`'s sources: the time model's notes).
LAUNCH_BOUND: tuple[LaunchBound, ...] = (
    # the 1-element torch.add of min_kernel_s is an elementwise call: the elementwise kind's fastest
    LaunchBound("elementwise", "min_kernel_s", True, "set aside: the large tier's bandwidth stands in (nearer)"),
    LaunchBound("copy", "own", True, "set aside: the large tier's bandwidth stands in (nearer)"),
    LaunchBound("gemm", "own", True, "set aside: the curve of the other products + the fixed GEMM time (nearer)"),
    LaunchBound("attention", "own", False, "kept: the GEMM curve is further from it (SAM's SDPA 7x too fast)"),
)


def launch_bound_rules(recorded: bool) -> tuple[LaunchBound, ...]:
    """`LAUNCH_BOUND` for a file with its recording beside it (`recorded`): the stand-ins need the device-only min
    kernel and fixed GEMM time only a recording gives an old file. A file alone keeps every launch-bound figure,
    labelled: a stand-in would be floored by the file's own launch-bound min kernel, and a file alone prints the
    figures its recorded run printed."""
    if recorded:
        return LAUNCH_BOUND
    why = "kept: no recording beside the file gives the device-only min kernel and fixed GEMM time a stand-in needs"
    return tuple(replace(r, set_aside=False, instead=why) for r in LAUNCH_BOUND)


def launch_bound(
    levels: Mapping[str, Any], device_type: str, rules: Sequence[LaunchBound] = LAUNCH_BOUND
) -> tuple[dict[str, Any], dict[str, Filled]]:
    """(one dtype's levels with its launch-bound figures set aside where the rule says so, {figure: what is
    launch-bound, and what was done}); a file of `TIMED_ON_DEVICE_SINCE` or newer, or not CUDA, as it is (see the
    module docstring). Call it before `fill_levels`: it reads the file's own `min_kernel_s` (the launch rate of a
    1-element add)."""
    out = copy.deepcopy(dict(levels))
    if int(out.get("version", 1)) >= TIMED_ON_DEVICE_SINCE or device_type != "cuda":
        return out, {}
    why = (
        f"launch-bound: timed by CUDA events around back-to-back eager launches (version {out.get('version', 1)}), "
        f"within {LAUNCH_BOUND_FACTOR:g}x of the kind's fastest call"
    )
    done: dict[str, Filled] = {}
    for rule in rules:
        got = out.get(rule.figure)
        if not got:
            continue
        cases = list(got.values()) if isinstance(got, Mapping) else list(got)
        timed = [float(c["seconds"]) for c in cases if c.get("seconds")]
        if not timed:
            continue
        # a file without min_kernel_s (refused by `fill_levels` without a recording): the kind's own fastest
        own = out.get("min_kernel_s") if rule.fastest == "min_kernel_s" else None
        fastest = float(own) if own is not None else min(timed)
        bound = LAUNCH_BOUND_FACTOR * fastest
        if isinstance(got, Mapping):  # tiers: a launch-bound tier takes the large tier's bandwidth
            large = got.get("large") or {}
            for tier, case in got.items():
                if tier == "large" or not case.get("seconds") or float(case["seconds"]) > bound:
                    continue
                kept = float(case["bytes_per_s"])
                if rule.set_aside:
                    case["bytes_per_s"] = float(large["bytes_per_s"])
                done[f"{rule.figure}.{tier}.bytes_per_s"] = Filled(
                    float(case["bytes_per_s"]),
                    f"{why} ({fastest * 1e6:.3g} µs): {float(case['seconds']) * 1e6:.3g} µs per call, "
                    f"{kept / 1e9:.3g} GB/s a lower bound of its device bandwidth; {rule.instead}",
                    "launch-bound",
                )
        else:  # points: a launch-bound point leaves its curve
            left = [c for c in cases if c.get("seconds") and float(c["seconds"]) <= bound]
            if not left:
                continue
            if rule.set_aside:
                out[rule.figure] = [c for c in cases if c not in left]
                out[f"{rule.figure}_launch_bound"] = left
            lo, hi = (f(float(c["seconds"]) for c in left) * 1e6 for f in (min, max))
            done[rule.figure] = Filled(
                float(len(left)),
                f"{why} ({fastest * 1e6:.3g} µs): {len(left)} of {len(cases)} point(s) at {lo:.3g}-{hi:.3g} "
                f"µs per call, upper bounds of their device times; {rule.instead}",
                "launch-bound",
            )
    return out, done


FILLERS: tuple[Filler, ...] = (
    Filler(
        figure="min_kernel_s",
        # version 7 files written since carry it (`calibrate_levels.measure_min_kernel`: CUPTI durations of eager
        # one-block kernels), with the graph-timed figure beside it (`min_kernel_graph_s`); an older CUDA file's
        # min_kernel_s is a CUDA-graph replay period (version 6: the kernel + the gap to the next one, 1.55 µs on
        # the H200 of 2026-11-27 where its recorded one-block kernels take 1.1 µs) or a launch rate (before)
        since=7,
        present_with="min_kernel_graph_s",
        means="the device-only time of a one-block kernel (CUPTI duration, no gap to the next kernel)",
        devices=("cuda",),
        from_recording=min_kernel_from_recording,
        older="launch-bound before version 6 (CUDA events around back-to-back launches measure the host's launch "
        "rate, not a kernel's device time), in version 6 the period of a CUDA graph of 1-element adds (each kernel + "
        "the gap to the next): an upper bound of a one-block kernel's own device time",
        describes="min_kernel_op",
    ),
    Filler(
        figure="gemm_fixed_s",
        # measured since version 6 files carry it (`calibrate_levels`: the shortest eager GEMM kernels' CUPTI
        # durations); a version-6 file written before has none and takes it from its recording
        since=6,
        means="the fixed device time of one matrix-product kernel (the shortest GEMM kernels' device durations)",
        devices=("cuda",),
        from_recording=gemm_fixed_from_recording,
        older=None,
        default=NamedDefault(
            "0",
            "no recording beside the file: GEMMs costed by their work alone, floored by the min kernel time (the "
            "levels before this figure)",
            lambda lv: 0.0,
        ),
        describes="gemm_fixed_op",
    ),
    Filler(
        figure="conv_fixed_s",
        # measured since version 7 files carry it (`calibrate_levels.measure_conv_fixed`: CUPTI durations of eager
        # small convolutions' kernels per call); a CUDA file written before has none and takes it from its recording
        since=7,
        means="the fixed device time of one convolution call (its kernel and cuDNN's layout transforms)",
        devices=("cuda",),
        from_recording=conv_fixed_from_recording,
        older=None,
        default=NamedDefault(
            "0",
            "no recording beside the file: convolutions costed by their work alone, floored by the min kernel time "
            "(the levels before this figure)",
            lambda lv: 0.0,
        ),
        describes="conv_fixed_op",
    ),
    Filler(
        figure="multiprocessors",
        since=6,  # as gemm_fixed_s: version-6 files written since carry it
        means="the device's streaming multiprocessors (the fused attention's occupancy)",
        devices=("cuda",),
        from_recording=multiprocessors_from_recording,
        older=None,
        default=NamedDefault(
            "0",
            "no recording beside the file: the attention curve as calibrated, no occupancy (the levels before it)",
            lambda lv: 0.0,
        ),
        describes="multiprocessors_op",
    ),
    *(
        Filler(
            figure=f"wave_kernel_s.{kind}",
            # measured since version 7 files carry it (`calibrate_levels.measure_wave_kernels`: CUPTI durations of
            # eager one-wave kernels of the kind); a CUDA file written before has none and takes it from its recording
            since=7,
            means=f"the device time of a one-wave {kind} kernel (2 to one block per multiprocessor: its fixed cost)",
            devices=("cuda",),
            from_recording=wave_kernel_from_recording(kind),
            older=None,
            default=NamedDefault(
                "0",
                "no recording beside the file: every small kernel floored by the min kernel time (the levels before "
                "this figure)",
                lambda lv: 0.0,
            ),
            describes=f"wave_kernel_op.{kind}",
        )
        for kind in WAVE_KINDS
    ),
    Filler(
        figure="host.op_s",
        # 9: the host's cost per op measured on this model's own eager forward (version 6 measured it per aten op on a
        # decoder-shaped workload, `measure.host_workload`: 32 µs per op on the H200 host of 2026-11-27, 1.3-1.7x
        # what that host spent per kernel in the model's own forwards recorded beside it, 18-26 µs). Declared ahead
        # of the calibration that measures it: versions 7 (the CPU host figures on one thread) and 8 (the write
        # bandwidth, the attention at head dim 16) still write the workload's op_s on CUDA (per op the workload calls
        # since `host.op_unit`), so a version-7 or -8 CUDA file's op_s is filled like a version-6 one's wherever its
        # recording is beside it
        since=9,
        means="the host's cost per op of the model's own eager forward on the device (module calls, launches)",
        devices=("cuda",),
        from_recording=host_op_from_recording,
        older="version 5: a tiny module forward on CPU tensors per aten op, with no device launch in it (a lower "
        "bound of the host's cost per kernel on the device); versions 6-8: a decoder-shaped workload per aten op, or "
        "per op it calls where the file says `op_unit: op` (`measure.host_workload`), not the model's own code",
        default=NamedDefault(
            "host.dispatch_s",
            "the bare dispatcher's cost per op (no module code, no launch): a lower bound",
            lambda lv: (lv.get("host") or {}).get("dispatch_s"),
        ),
        describes="host.op_module",
        marks=("host.op_unit", "op"),
    ),
)


def known_levels_version(fillers: Sequence[Filler] = FILLERS) -> int:
    """The newest kernel-level version this code reads: the one it measures, or one whose figures it declares."""
    from llm_perf_opt.measure.calibrate_levels import LEVELS_VERSION

    return max([LEVELS_VERSION, *(f.since for f in fillers)])


def _get(levels: Mapping[str, Any], dotted: str) -> Any:
    node: Any = levels
    for key in dotted.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _set(levels: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    node = levels
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def fill_levels(
    levels: Mapping[str, Any],
    device_type: str,
    recordings: Callable[[], Sequence[RecordedProfile]],
    fillers: Sequence[Filler] = FILLERS,
) -> tuple[dict[str, Any], dict[str, Filled]]:
    """(one dtype's levels with every declared figure present, {figure: how it was filled} for those not taken as
    the file has them). `recordings` is called at most once, and only when a figure needs it. MissingFigure when a
    figure has no source (see the module docstring)."""
    out = copy.deepcopy(dict(levels))
    version = int(out.get("version", 1))
    filled: dict[str, Filled] = {}
    found: Optional[Sequence[RecordedProfile]] = None
    for f in fillers:
        have = _get(out, f.figure)
        if device_type not in f.devices:  # a device the change does not touch: its figures as they are
            continue
        current = version >= f.since and (f.present_with is None or _get(out, f.present_with) is not None)
        if have is not None and current:
            continue
        got = None
        if f.from_recording is not None:
            if found is None:
                found = recordings()
            got = f.from_recording(found) if found else None
        if got is None and have is not None and f.older is not None:
            got = Filled(float(have), f"the file's version-{version} figure, kept: {f.older}", "older")
        if got is None and f.default is not None:
            value = f.default.value(out)
            if value is not None:
                got = Filled(float(value), f"named default {f.default.name}: {f.default.why}", "default")
        if got is None:
            why = "absent from the file" if have is None else f"the file's version-{version} figure means another thing"
            raise MissingFigure(
                f.figure, f"{why}, and no recording beside the file or named default supplies {f.means}"
            )
        _set(out, f.figure, got.value)
        if f.marks is not None and got.origin == "recording":
            _set(out, f.marks[0], f.marks[1])
        if f.describes:
            _set(out, f.describes, got.source)
        filled[f.figure] = got
    return out, filled

"""Measured time per module: the `profile` stage of the trace job.

    call = ForwardCall.from_session(session, inputs)
    times = profile_forward(call, cfg.profile, trace_path=run_dir / "profile.trace.json")
    times.write(run_dir / "profile.json")
    module_time_table(times)  # {module path: {inclusive_s, self_s, calls, min_s, max_s}} for the call graph

How it measures, in order, all under the forward's own context (no_grad, the session's patches):

1. `warmup` plain forwards (not timed); on CUDA then `PLAIN_BEFORE_PROFILER` timed plain forwards, before any
   profiled one (a plain forward right after a profiled one is slower on CUDA: see there), counted in `plain_s`.
2. `repeats` rounds of one plain forward and one profiled forward; the order alternates between rounds
   (plain first in even rounds, profiled first in odd ones) so a slow drift of the machine hits both.
   A costly forward gets fewer rounds (`planned_rounds`): no more than fit in `budget_cpu_s` at two forwards
   of the warm-up forward's process CPU time each (with no warm-up: at the first round's), and at least one.
   `method` records the rounds run (`repeats`), the rounds asked (`repeats_asked`) and why.
   Each forward is timed with `time.perf_counter` around `model(**kwargs)`, with `torch.cuda.synchronize()`
   before and after on CUDA (never inside the module hooks).
3. A profiled forward runs with one `record_function` range per module call (`module_ranges`: forward
   pre/post hooks, removed afterwards, also when the forward raises) inside a fresh
   `torch.profiler.profile` session (CPU activity everywhere, CUDA activity on CUDA; no shapes, stacks or
   memory recorded, to keep its overhead down). Hooks are installed and the profiler started before
   the clock starts, and stopped after it stops.

Per module call and repeat: on CPU, inclusive time is the wall-clock span of its range. On CUDA it is
GPU time: every kernel, memcpy and memset the profiler saw is tied by its correlation id to the CPU op
that launched it (CUPTI records the launch's correlation; torch lists the activity in that op's
`kernels`), and that op belongs to the innermost module range enclosing it on the CPU thread. The
activity's GPU duration counts as self time of that module call, whenever it ran on the GPU (an
asynchronous kernel is not credited to whichever module happens to be on the CPU when it executes), and
as inclusive time of every call enclosing it. Kernels launched outside every module range are reported
in `problems`, never dropped silently; the GPU-side images of the ranges (`gpu_user_annotation`) are not
work and are not counted. The CPU span of each range is kept beside the GPU time (`cpu_inclusive_s`).
Self time is inclusive minus the child calls' inclusive time. Statistics over the repeats: median, min,
max. (`profiler_events` is the code of this attribution.)

Honesty figures, measured in the same run: the overhead (median profiled wall time / median plain wall
time, same number of each), and the coverage: the top-level parts' inclusive times (the DeepSeek-OCR
parts of the family's vocabulary) summed and set against the profiled forward's wall time, with the uncovered
remainder split into work inside the root's range but outside the parts, and time outside the root's
range (the call into the root and its hooks; on CUDA also GPU idle time).
"""

from __future__ import annotations

import gc
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, ContextManager, Mapping, Optional

import torch
from torch import nn

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.allocator import allocator_regime, regime_label
from llm_perf_opt.measure.calibrate import device_name
from llm_perf_opt.measure.kineto_log import quiet_kineto
from llm_perf_opt.measure.module_ranges import ModuleCall, module_ranges, range_name, unhooked_modules
from llm_perf_opt.measure.module_times import (
    CallTimes,
    ModuleTimes,
    Stat,
    path_inclusive_repeats,
)
from llm_perf_opt.measure.profile_config import ProfileConfig
from llm_perf_opt.measure.profiler_events import ProfiledRanges, check_torch, export_chrome_trace, read_ranges

# A self time below this (seconds) is floating-point rounding of nested spans, not a negative time.
_ROUNDING_S = 1e-9


@dataclass
class ForwardCall:
    """What to run: `model(**kwargs)` inside `context()`; the session's forward, or any model's."""

    model: nn.Module
    kwargs: Mapping[str, Any]
    context: Callable[[], ContextManager[Any]] = torch.no_grad
    device: Optional[torch.device] = None  # inferred from the model's parameters when None
    describe: dict[str, Any] = field(default_factory=dict)  # dtype, autocast, ... for `method`

    @classmethod
    def from_session(cls, session: Any, inputs: Any) -> "ForwardCall":
        """A `DeepSeekOCRSession` forward on `inputs` (its kwargs, its `forward_context`)."""
        return cls(
            model=session.model,
            kwargs=session.forward_kwargs(inputs),
            context=session.forward_context,
            device=session.device,
            describe={
                "dtype": str(session.dtype).replace("torch.", ""),
                "autocast": session.autocast,
                "attn_implementation": session.attn_implementation,
                "source": session.source,
            },
        )

    def resolved_device(self) -> torch.device:
        if self.device is not None:
            return torch.device(self.device)
        param = next(self.model.parameters(), None)
        return param.device if param is not None else torch.device("cpu")


def default_parts(model: nn.Module, vocabulary: Any = None) -> dict[str, str]:
    """{alias: module path} of the family's parts (`PartVocabulary.parts`) the model has."""
    names = {path for path, _ in model.named_modules()}
    return {p.alias: p.path for p in (vocabulary.parts if vocabulary is not None else ()) if p.path in names}


def default_layers(model: nn.Module, vocabulary: Any = None) -> dict[str, str]:
    """{alias: module path} of the decoder layers the model has (`decoder.layer.<i>`): clocked in the plain forwards
    as their stack is, so that a layer and the decoder are one quantity (a layer is never slower than its stack)."""
    if vocabulary is None:
        return {}
    names = {path for path, _ in model.named_modules()}
    out, i = {}, 0
    while (path := vocabulary.decoder_layer_path(i)) in names:
        out[f"{vocabulary.layer_alias_prefix}{i}"] = path
        i += 1
    return out


# ---------------------------------------------------------------------------------------------- running
def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


REWARM_BELOW_S = 0.05  # forwards shorter than this run once more, untimed, between the collection and the clock
# CUDA: plain forwards timed after the warm-up, before the first profiled forward, beside the rounds' (`plain_s`
# holds them all). A plain forward after a profiled one is slower on CUDA: the full twin's prefill on the H200 of
# 2026-11-26/27 took 66.8 / 67.8 / 95.9 ms in round 0 (before any profiled forward) and 1.23-1.9x that in rounds 1
# and 2 (127.3 / 86.3 / 130.0 and 116.9 / 83.6 / 125.0 ms); the tiny twin's, re-warmed, 1.12-1.53x in round 1. So
# the fastest plain forward rested on one sample, and on a single one wherever `profile.repeats=1` (the 2026-11-26
# sweep: 20.5 and 29.6 ms for forwards measured at 11.5 and 16.4 ms elsewhere, their profiled walls alike)
PLAIN_BEFORE_PROFILER = 3


def plain_before_profiler(device: torch.device) -> int:
    """How many plain forwards `profile_forward` times before its first profiled one: `PLAIN_BEFORE_PROFILER` on
    CUDA, none on the CPU (its measurements as they were: the slowing was seen on the H200 recordings)."""
    return PLAIN_BEFORE_PROFILER if device.type == "cuda" else 0


def planned_rounds(repeats: int, budget_cpu_s: Optional[float], round_cpu_s: float) -> int:
    """Rounds of one plain and one profiled forward to run: `repeats`, or fewer when they would take more than
    `budget_cpu_s` at `round_cpu_s` each (the process CPU time of two forwards), but at least one. CPU time, not
    wall time: on a shared machine other processes stretch a forward's wall time many times over (the tiny
    twin's default forward: 3 to 57 s of wall time, 1.0 to 5.5 s of CPU time, on this 2-core machine under
    load), and how often a small model is measured should not depend on its neighbours."""
    if budget_cpu_s is None or round_cpu_s <= 0:
        return repeats
    return max(1, min(repeats, int(budget_cpu_s // round_cpu_s)))


class PartClock:
    """`time.perf_counter` around every call of the parts' modules (a part that is a container without a forward,
    such as the decoder's ModuleList: around each of its children), in the plain forwards on a synchronous
    device: the parts' times without the profiler's per-op cost, which on the CPU is of the order of the host's
    own cost per op and doubles a host-bound part such as a decode step's decoder. Two hooks per part call."""

    def __init__(self, model: nn.Module, parts: Mapping[str, str]) -> None:
        from llm_perf_opt.measure.module_ranges import is_container

        modules = dict(model.named_modules())
        self.targets = {
            alias: (list(modules[path].children()) if is_container(modules[path]) else [modules[path]])
            for alias, path in parts.items()
            if path in modules
        }
        self.last: dict[str, float] = {}  # the parts that ran in the last forward (a part not called: absent)
        self._totals: dict[str, float] = {}
        self._handles: list[Any] = []

    def _done(self, alias: str, started: list[float]) -> None:
        self._totals[alias] = self._totals.get(alias, 0.0) + time.perf_counter() - started.pop()

    def __enter__(self) -> "PartClock":
        self._totals = {}
        for alias, modules in self.targets.items():
            for module in modules:
                started: list[float] = []
                self._handles.append(
                    module.register_forward_pre_hook(lambda _m, _a, s=started: s.append(time.perf_counter()))
                )
                self._handles.append(  # prepended: the clocks on one module nest (a layer inside its stack)
                    module.register_forward_hook(lambda _m, _a, _o, s=started, a=alias: self._done(a, s), prepend=True)
                )
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self._handles:
            h.remove()
        self._handles.clear()
        self.last = dict(self._totals)


def _timed(
    call: ForwardCall, device: torch.device, rewarm: bool = False, clock: Optional[PartClock] = None
) -> tuple[float, float]:
    """(wall seconds, process CPU seconds) of one forward, synchronised on CUDA. A full garbage collection
    first, outside the clock: the previous profiled forward leaves thousands of profiler events with
    reference cycles, which would otherwise be collected during whichever forward comes next; the collector
    stays off while the clock runs. `rewarm`: one more forward, untimed, after the collection (it walks every
    Python object and leaves the caches cold: +1.1 ms on a 2.4 ms decode step of the tiny twin, which a
    generation loop never pays). `clock`: the parts' times of this forward (`PartClock.last`)."""
    gc.collect()
    if rewarm:
        call.model(**call.kwargs)  # untimed; its output is dropped at once
    _sync(device)
    gc.disable()
    try:
        with clock if clock is not None else nullcontext():
            cpu, start = time.process_time(), time.perf_counter()
            out = call.model(**call.kwargs)
            _sync(device)
            seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
    finally:
        gc.enable()
    del out
    return seconds, cpu_seconds


@dataclass
class _Repeat:
    """One profiled forward: the hooks' calls, the profiler's ranges, the wall time."""

    calls: list[ModuleCall]
    ranges: ProfiledRanges
    wall_s: float
    cpu_s: float
    postprocess_s: float
    profiler: Any = None  # kept for the Chrome trace (last repeat only)


def _profiled(call: ForwardCall, device: torch.device, cfg: ProfileConfig, keep: bool) -> _Repeat:
    from torch.profiler import ProfilerActivity, profile

    quiet_kineto()  # no `USDT: ... profiler_start/stop` lines on stderr (measure.kineto_log)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    names = {range_name(path) for path, _ in call.model.named_modules()}
    with module_ranges(call.model, nvtx=cfg.nvtx) as ranges:
        with profile(activities=activities, record_shapes=False, with_stack=False, profile_memory=False) as prof:
            wall, cpu = _timed(call, device)
    start = time.perf_counter()
    found = read_ranges(prof.events(), names, device=device.type == "cuda")
    postprocess = time.perf_counter() - start
    return _Repeat(
        calls=list(ranges.calls),
        ranges=found,
        wall_s=wall,
        cpu_s=cpu,
        postprocess_s=postprocess,
        profiler=prof if keep else None,
    )


def profile_forward(
    call: ForwardCall,
    cfg: ProfileConfig,
    trace_path: str | Path | None = None,
    parts: Optional[Mapping[str, str]] = None,
    progress: Optional[Callable[[str], None]] = None,
    layers: Optional[Mapping[str, str]] = None,
) -> ModuleTimes:
    """Warm up, then time plain and profiled forwards (interleaved) and return the time per module call.

    `trace_path`: where to write the Chrome trace of the last profiled forward (None: none, also when
    `cfg.chrome_trace` is false). `parts`: {alias: module path} for the coverage check (default: the
    DeepSeek-OCR parts the model has). `layers`: {alias: module path} clocked in the plain forwards beside the
    parts (the decoder layers: `default_layers`), outside the coverage; their times in `coverage["layers"]`.
    """
    check_torch()
    if not isinstance(cfg, ProfileConfig):
        raise ConfigError.field("profile", type(cfg).__name__, "must be a ProfileConfig")
    if not cfg.enabled:
        raise ConfigError.field("profile.enabled", cfg.enabled, "profile_forward runs only with profile.enabled=true")
    device = call.resolved_device()
    cfg.check_device(device.type)
    say = progress or (lambda _msg: None)
    trace = Path(trace_path) if trace_path is not None and cfg.chrome_trace else None
    plain: list[tuple[float, float]] = []
    repeats: list[_Repeat] = []
    part_paths = dict(parts) if parts is not None else default_parts(call.model)
    layer_paths = dict(layers or {})
    clocked = {**part_paths, **layer_paths}
    clock = PartClock(call.model, clocked) if device.type == "cpu" else None  # CUDA: the ranges' kernel time
    plain_parts: list[dict[str, float]] = []

    def plain_forward() -> None:
        plain.append(_timed(call, device, rewarm=rewarm, clock=clock))
        if clock is not None:
            plain_parts.append(dict(clock.last))

    with call.context():
        start = time.perf_counter()
        warm = [_timed(call, device) for _ in range(cfg.warmup)]
        warmup_s = time.perf_counter() - start
        rewarm = bool(warm) and min(w for w, _ in warm) < REWARM_BELOW_S  # the forward, not the collections
        say(f"profile: {cfg.warmup} warm-up forward(s) in {warmup_s:.2f} s")
        # the pace of a round: two forwards at the warm-up's CPU time (no warm-up: the first round's own)
        pace = ("warm-up", 2 * min(c for _, c in warm)) if warm else None
        rounds = cfg.repeats
        before = [_timed(call, device, rewarm=rewarm) for _ in range(plain_before_profiler(device))]
        if before:
            fastest = min(w for w, _ in before)
            say(f"profile: {len(before)} plain forward(s) before the profiler, fastest {fastest:.3f} s")

        def plan() -> int:
            n = planned_rounds(cfg.repeats, cfg.budget_cpu_s, pace[1])
            if n < cfg.repeats:
                say(
                    f"profile: {n} of {cfg.repeats} round(s): a round takes about {pace[1]:.1f} CPU-s (two forwards "
                    f"at the {pace[0]}'s), profile.budget_cpu_s={cfg.budget_cpu_s:g}"
                )
            return n

        if pace is not None:
            rounds = plan()
        r = 0
        while r < rounds:
            # the Chrome trace is the last round's (with no warm-up the first round's is kept until another runs)
            keep = trace is not None and (r == rounds - 1 or pace is None)
            if repeats:
                repeats[-1].profiler = None
            if r % 2 == 0:
                plain_forward()
                repeats.append(_profiled(call, device, cfg, keep))
            else:
                repeats.append(_profiled(call, device, cfg, keep))
                plain_forward()
            if pace is None:
                pace = ("first round", plain[-1][1] + repeats[-1].cpu_s)
                rounds = plan()
            r += 1
            say(f"profile: repeat {r}/{rounds}: plain {plain[-1][0]:.3f} s, profiled {repeats[-1].wall_s:.3f} s")
    times = _assemble(call, device, cfg, plain, repeats, warmup_s, before)
    times.method.update(_rounds_method(cfg, rounds, pace))
    times.coverage = coverage(times, part_paths, plain_parts)
    plain_layers = {
        alias: {"path": path, "plain_inclusive_s": Stat.of([p[alias] for p in plain_parts]).to_dict()}
        for alias, path in layer_paths.items()
        if plain_parts and all(alias in p for p in plain_parts)
    }
    if plain_layers:
        times.coverage["layers"] = plain_layers
    times.wall["plain_rewarmed"] = rewarm
    if trace is not None:  # written last, so a failure above leaves no trace without its profile
        export_chrome_trace(repeats[-1].profiler, trace)
        times.trace_file = trace.name
        times.trace_repeat = len(repeats) - 1
    return times


def _rounds_method(cfg: ProfileConfig, rounds: int, pace: Optional[tuple[str, float]]) -> dict[str, Any]:
    """`method`'s record of how many rounds ran and why (`planned_rounds`)."""
    return {
        "repeats": rounds,
        "repeats_asked": cfg.repeats,
        "budget_cpu_s": cfg.budget_cpu_s,
        "round_cpu_s": pace[1] if pace is not None else None,
        "rounds_rule": "repeats = min(repeats_asked, max(1, floor(budget_cpu_s / round_cpu_s))), where round_cpu_s "
        "is two forwards at the warm-up forward's process CPU time (no warm-up: the first round's plain + profiled "
        "forward); budget_cpu_s null: repeats_asked",
    }


# ---------------------------------------------------------------------------------------------- assembling
def _repeat_times(rep: _Repeat, problems: list[str], r: int) -> dict[tuple[str, int], dict[str, Any]]:
    """{(path, call): {parent, cpu_inc, cpu_self, dev_inc, dev_self}} for one profiled forward (seconds)."""
    occurrences: dict[str, int] = {}
    for c in rep.calls:
        occurrences[c.path] = occurrences.get(c.path, 0) + 1
    for path, n in occurrences.items():
        got = len(rep.ranges.ranges.get(range_name(path), []))
        if got != n:
            problems.append(
                f"repeat {r}: module {path or '(root)'!r} was called {n} time(s) but the profiler "
                f"recorded {got} range(s); its calls are left out"
            )
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for c in rep.calls:
        if len(rep.ranges.ranges.get(range_name(c.path), [])) != occurrences[c.path]:
            continue
        ev = rep.ranges.ranges[range_name(c.path)][c.index]
        parent = rep.calls[c.parent].key if c.parent is not None else None
        out[c.key] = {
            "parent": parent,
            "cpu_inc": ev.cpu_us * 1e-6,
            "dev_self": ev.device_self_us * 1e-6,
            "children": [],
        }
    for key, row in out.items():
        if row["parent"] in out:
            out[row["parent"]]["children"].append(key)
    for key in reversed(list(out)):  # children come after their parent in call order
        row = out[key]
        kids = [out[k] for k in row["children"]]
        row["cpu_self"] = row["cpu_inc"] - sum(k["cpu_inc"] for k in kids)
        row["dev_inc"] = row["dev_self"] + sum(k["dev_inc"] for k in kids)
        if row["cpu_self"] < 0:
            if row["cpu_self"] < -_ROUNDING_S:
                problems.append(
                    f"repeat {r}: call {key[1]} of {key[0] or '(root)'!r}: children's ranges add up to "
                    f"{-row['cpu_self'] * 1e6:.3f} µs more than its own"
                )
            else:
                row["cpu_self"] = 0.0
    return out


def _assemble(
    call: ForwardCall,
    device: torch.device,
    cfg: ProfileConfig,
    plain: list[tuple[float, float]],
    repeats: list[_Repeat],
    warmup_s: float,
    before: Optional[list[tuple[float, float]]] = None,
) -> ModuleTimes:
    """`plain`: the rounds' plain forwards (paired with their profiled ones); `before`: the plain forwards timed
    before the first profiled one (`PLAIN_BEFORE_PROFILER`), in `plain_s` with the rounds' but in no pair."""
    use_device = device.type == "cuda"
    before = list(before or [])
    problems: list[str] = []
    per_repeat = [_repeat_times(rep, problems, r) for r, rep in enumerate(repeats)]
    keys: dict[tuple[str, int], Optional[tuple[str, int]]] = {}
    for rows in per_repeat:
        for key, row in rows.items():
            keys.setdefault(key, row["parent"])
    partial = [k for k in keys if any(k not in rows for rows in per_repeat)]
    if partial:
        problems.append(
            f"{len(partial)} module call(s) did not occur in every repeat (value-dependent control "
            f"flow?), e.g. {partial[0][0]!r} call {partial[0][1]}; their statistics cover fewer repeats"
        )
    calls: list[CallTimes] = []
    for key, parent in keys.items():
        rows = [rows[key] for rows in per_repeat if key in rows]
        cpu_inc = Stat.of(r["cpu_inc"] for r in rows)
        cpu_self = Stat.of(r["cpu_self"] for r in rows)
        if use_device:
            # device self = the kernels attributed to this range itself = inclusive - children's inclusive
            calls.append(
                CallTimes(
                    key[0],
                    key[1],
                    parent,
                    Stat.of(r["dev_inc"] for r in rows),
                    Stat.of(r["dev_self"] for r in rows),
                    cpu_inclusive_s=cpu_inc,
                    cpu_self_s=cpu_self,
                )
            )
        else:
            calls.append(CallTimes(key[0], key[1], parent, cpu_inc, cpu_self))
    for r, rep in enumerate(repeats):
        if rep.ranges.device_unattributed_us > 0:
            problems.append(
                f"repeat {r}: {rep.ranges.device_unattributed_us / 1e3:.3f} ms of device time was launched "
                "outside every module range (not in any module's time)"
            )
    first = repeats[0].calls if repeats else []
    unhooked = {
        path: {"kind": u.kind, "caller": u.caller, "note": u.describe()}
        for path, u in unhooked_modules(call.model, first).items()
    }
    plain_s, profiled_s = Stat.of(w for w, _ in before + plain), Stat.of(rep.wall_s for rep in repeats)
    plain_cpu, profiled_cpu = Stat.of(c for _, c in before + plain), Stat.of(rep.cpu_s for rep in repeats)
    wall = {
        "plain_s": plain_s.to_dict(),
        "profiled_s": profiled_s.to_dict(),
        "overhead_ratio": profiled_s.median / plain_s.median if plain_s.median > 0 else None,
        # the least disturbed forward of each kind: interference from other processes only adds time
        "overhead_ratio_min": profiled_s.min / plain_s.min if plain_s.min > 0 else None,
        # median over the rounds of profiled / plain within a round (adjacent in time: robust to slow drift)
        "overhead_ratio_paired": Stat.of(rep.wall_s / w for rep, (w, _) in zip(repeats, plain) if w > 0).median,
        # process CPU time (all threads): less sensitive than wall time to other processes on a shared machine
        "plain_cpu_s": plain_cpu.to_dict(),
        "profiled_cpu_s": profiled_cpu.to_dict(),
        "overhead_ratio_cpu": profiled_cpu.median / plain_cpu.median if plain_cpu.median > 0 else None,
        "warmup_s": warmup_s,
        "postprocess_s": Stat.of(rep.postprocess_s for rep in repeats).to_dict(),
        # how many of plain_s's forwards ran before the first profiled one (the first ones of its repeats)
        "plain_before_profiler": len(before),
    }
    if use_device:
        wall["device_total_s"] = Stat.of(rep.ranges.device_total_us * 1e-6 for rep in repeats).to_dict()
    return ModuleTimes(
        method=_method(call, device, cfg), wall=wall, coverage={}, calls=calls, unhooked=unhooked, problems=problems
    )


def _method(call: ForwardCall, device: torch.device, cfg: ProfileConfig) -> dict[str, Any]:
    cuda = device.type == "cuda"
    return {
        "warmup": cfg.warmup,
        "repeats": cfg.repeats,
        "order": "after the warm-up"
        + (
            f", {plain_before_profiler(device)} plain forwards (before any profiled one: in plain_s, in no pair)"
            if plain_before_profiler(device)
            else ""
        )
        + ", one plain and one profiled forward per round, plain first in even rounds and profiled first in odd ones",
        "statistics": "median, min and max over the repeats; self = inclusive - child calls' inclusive, per repeat",
        "synchronisation": (
            "torch.cuda.synchronize() before and after each timed forward; none inside module hooks"
            if cuda
            else "none needed: CPU ops complete on the calling thread before they return"
        ),
        "device": str(device),
        "device_name": device_name(device),  # as the calibration names it (the CPU model on CPU)
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        # the host allocator serving the forward's tensors (`measure.allocator`): on the CPU a result above glibc's
        # mmap threshold faults its pages in on every call under its defaults, not under raised thresholds
        "allocator": regime_label(allocator_regime()),
        "activities": ["cpu", "cuda"] if cuda else ["cpu"],
        "time_base": (
            "device: GPU kernel, memcpy and memset durations, each attributed to the module range whose "
            "code launched it (profiler correlation id -> launching CPU op -> innermost enclosing module "
            "range); cpu_* fields hold the ranges' CPU spans"
            if cuda
            else "cpu: wall-clock span of each module call's record_function range on the calling thread"
        ),
        "ranges": "record_function per module call, opened in a forward pre-hook and closed in a forward hook "
        "(always_call); a module run through m.forward(x) gets its range from a forward shim (an instance-level "
        "forward, removed afterwards); modules whose class forward is called explicitly have none "
        "(see unhooked)",
        "profiler": "torch.profiler.profile, one session per profiled forward, record_shapes/with_stack/"
        "profile_memory off",
        "nvtx": cfg.nvtx,
        "torch": torch.__version__,
        "model": type(call.model).__name__,
        "forward": dict(call.describe),
    }


# ---------------------------------------------------------------------------------------------- coverage
def coverage(
    times: ModuleTimes, parts: Mapping[str, str], plain_parts: Optional[list[Mapping[str, float]]] = None
) -> dict[str, Any]:
    """The parts' inclusive times against the profiled forward's wall time, per repeat, and what is left;
    `plain_parts`: each plain forward's part times (`PartClock`), kept per part as `plain_inclusive_s`."""
    wall = times.wall["profiled_s"]["repeats"]
    n = len(wall)
    root = path_inclusive_repeats(times, "") or [0.0] * n
    found: dict[str, Any] = {}
    absent: list[str] = []
    covered = [0.0] * n
    for alias, path in parts.items():
        values = path_inclusive_repeats(times, path)
        if values is None:
            absent.append(alias)
            continue
        covered = [c + v for c, v in zip(covered, values)]
        stat = Stat.of(values)
        found[alias] = {
            "path": path,
            "inclusive_s": stat.to_dict(),
            "share_of_wall": stat.median / Stat.of(wall).median if wall and Stat.of(wall).median else None,
        }
        plain = [p[alias] for p in plain_parts or [] if alias in p]
        if plain:
            found[alias]["plain_inclusive_s"] = Stat.of(plain).to_dict()
    ratios = [c / w if w > 0 else 0.0 for c, w in zip(covered, wall)]
    return {
        "time_base": "device" if times.method.get("activities", []) == ["cpu", "cuda"] else "cpu",
        "wall_s": Stat.of(wall).to_dict(),
        "root_s": Stat.of(root).to_dict(),
        "parts": found,
        "absent_parts": absent,
        "covered_s": Stat.of(covered).to_dict(),
        "coverage": Stat.of(ratios).median if ratios else None,
        "coverage_min": min(ratios) if ratios else None,
        "coverage_of_root": Stat.of(c / r if r > 0 else 0.0 for c, r in zip(covered, root)).median if n else None,
        "uncovered_s": Stat.of(w - c for w, c in zip(wall, covered)).to_dict(),
        "outside_parts_s": Stat.of(r - c for r, c in zip(root, covered)).to_dict(),
        "outside_root_s": Stat.of(w - r for w, r in zip(wall, root)).to_dict(),
        "note": (
            "covered = sum of the parts' inclusive times; uncovered = wall - covered = outside_parts (work in "
            "the root's range outside every part) + outside_root (the call into the root module, its hooks"
            + ("; GPU idle time between kernels)" if times.method.get("activities") == ["cpu", "cuda"] else ")")
        ),
    }

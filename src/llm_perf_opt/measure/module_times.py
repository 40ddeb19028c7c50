"""`ModuleTimes`: measured time per module call and per module, and its artifact `profile.json`.

Schema `llm_perf_opt.profile`, version 1. `data` holds

* `method`: how it was measured (warm-up, repeats, synchronisation, device, threads, activities, time
  base, how kernels are attributed, hooks, NVTX);
* `wall`: the plain and the profiled forward's wall time (median/min/max over the repeats) and their
  ratio, the profiling overhead (`overhead_ratio`, medians); beside it the ratio of the minimums
  (`overhead_ratio_min`), the median of the per-round ratios (`overhead_ratio_paired`) and the ratio of
  process CPU times (all threads, `overhead_ratio_cpu`), which other processes on a shared machine
  disturb less than the median wall times;
* `coverage`: the top-level parts' inclusive times against the forward's wall time, with the uncovered
  remainder split into work in the root outside the parts and time outside the root's range;
* `calls`: one row per module call (path, call index, runtime parent call), inclusive and self time as
  `{median, min, max, repeats: [...]}` in seconds; on CUDA the primary time is GPU kernel time and the
  CPU span of the range is kept beside it (`cpu_inclusive_s`, `cpu_self_s`);
* `modules`: per module path, summed over its calls (`module_time_table`);
* `unhooked`: modules without a range although modules below them ran (containers; modules run through
  `type(m).forward(m, x)`), with where their time went;
* `problems`: anything that makes a figure doubtful (range counts that do not match the hooks' calls,
  device time launched outside every module range, call sequences that differ between repeats).

Self time = inclusive − the inclusive times of the call's child calls (the calls that started while it
was the innermost open range), per repeat; statistics are taken over the repeats afterwards, so
`median(self) <= median(inclusive)` and a child's median never exceeds its parent's (order statistics
keep a per-repeat ordering), while a sum of children's medians may exceed the parent's median by noise.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

from llm_perf_opt.artifacts import read_artifact, write_artifact
from llm_perf_opt.errors import ArtifactError

PROFILE_SCHEMA = "llm_perf_opt.profile"
PROFILE_SCHEMA_VERSION = 1
KNOWN_VERSIONS = (1,)
PROFILE_FILE = "profile.json"
TRACE_FILE = "profile.trace.json"


@dataclass(frozen=True)
class Stat:
    """One figure over the repeats, in seconds."""

    repeats: tuple[float, ...]

    @classmethod
    def of(cls, values: Iterable[float]) -> "Stat":
        return cls(tuple(float(v) for v in values))

    @property
    def median(self) -> float:
        return statistics.median(self.repeats) if self.repeats else 0.0

    @property
    def min(self) -> float:
        return min(self.repeats) if self.repeats else 0.0

    @property
    def max(self) -> float:
        return max(self.repeats) if self.repeats else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"median": self.median, "min": self.min, "max": self.max, "repeats": list(self.repeats)}

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> "Stat":
        if not isinstance(raw, Mapping) or "repeats" not in raw:
            raise ArtifactError(f"{where}: expected an object with 'repeats'")
        return cls.of(raw["repeats"])


@dataclass(frozen=True)
class CallTimes:
    """One module call: its inclusive and self time over the repeats."""

    path: str
    call: int  # 0 = the module's first call in the forward
    parent: Optional[tuple[str, int]]  # the runtime caller's (path, call); None for the outermost call
    inclusive_s: Stat
    self_s: Stat
    cpu_inclusive_s: Optional[Stat] = None  # CUDA: the CPU span of the range (launch side)
    cpu_self_s: Optional[Stat] = None

    @property
    def key(self) -> tuple[str, int]:
        return (self.path, self.call)

    def to_dict(self) -> dict[str, Any]:
        out = {
            "path": self.path,
            "call": self.call,
            "parent": list(self.parent) if self.parent else None,
            "inclusive_s": self.inclusive_s.to_dict(),
            "self_s": self.self_s.to_dict(),
        }
        if self.cpu_inclusive_s is not None:
            out["cpu_inclusive_s"] = self.cpu_inclusive_s.to_dict()
            out["cpu_self_s"] = self.cpu_self_s.to_dict() if self.cpu_self_s is not None else None
        return out

    @classmethod
    def from_dict(cls, raw: Any, where: str) -> "CallTimes":
        if not isinstance(raw, Mapping):
            raise ArtifactError(f"{where}: expected an object")
        for key in ("path", "call", "parent", "inclusive_s", "self_s"):
            if key not in raw:
                raise ArtifactError(f"{where}: missing field '{key}'")
        parent = raw["parent"]
        cpu_inc, cpu_self = raw.get("cpu_inclusive_s"), raw.get("cpu_self_s")
        return cls(
            path=str(raw["path"]),
            call=int(raw["call"]),
            parent=(str(parent[0]), int(parent[1])) if parent else None,
            inclusive_s=Stat.from_dict(raw["inclusive_s"], f"{where}.inclusive_s"),
            self_s=Stat.from_dict(raw["self_s"], f"{where}.self_s"),
            cpu_inclusive_s=Stat.from_dict(cpu_inc, f"{where}.cpu_inclusive_s") if cpu_inc else None,
            cpu_self_s=Stat.from_dict(cpu_self, f"{where}.cpu_self_s") if cpu_self else None,
        )


@dataclass
class ModuleTimes:
    """Measured time per module call of one forward (see the module docstring for every field)."""

    method: dict[str, Any]
    wall: dict[str, Any]
    coverage: dict[str, Any]
    calls: list[CallTimes]
    unhooked: dict[str, dict[str, Any]] = field(default_factory=dict)  # path -> {kind, caller, note}
    problems: list[str] = field(default_factory=list)
    trace_file: Optional[str] = None
    trace_repeat: Optional[int] = None

    # ------------------------------------------------------------------ views
    @property
    def repeats(self) -> int:
        return int(self.method.get("repeats", 0))

    @property
    def overhead_ratio(self) -> Optional[float]:
        return self.wall.get("overhead_ratio")

    def call(self, path: str, index: int = 0) -> CallTimes:
        for c in self.calls:
            if c.path == path and c.call == index:
                return c
        raise KeyError(f"no call {index} of module {path!r}")

    def calls_of(self, path: str) -> list[CallTimes]:
        return [c for c in self.calls if c.path == path]

    def children(self, call: CallTimes) -> list[CallTimes]:
        return [c for c in self.calls if c.parent == call.key]

    @property
    def containers(self) -> list[str]:
        """Modules without a forward (ModuleList, ModuleDict) whose members were called."""
        return [p for p, u in self.unhooked.items() if u.get("kind") == "container"]

    @property
    def called_paths(self) -> list[str]:
        seen: dict[str, None] = {}
        for c in self.calls:
            seen.setdefault(c.path)
        return list(seen)

    def summary(self) -> dict[str, Any]:
        """The headline figures for a run's summary.json (medians, seconds)."""
        cov, wall = self.coverage, self.wall
        return {
            "warmup": self.method.get("warmup"),
            "repeats": self.repeats,
            "repeats_asked": self.method.get("repeats_asked", self.repeats),  # fewer ran: a costly forward
            "time_base": cov.get("time_base"),
            "plain_s": wall["plain_s"]["median"],
            "profiled_s": wall["profiled_s"]["median"],
            "overhead_ratio": wall.get("overhead_ratio"),
            "overhead_ratio_cpu": wall.get("overhead_ratio_cpu"),
            "coverage": cov.get("coverage"),
            "uncovered_s": (cov.get("uncovered_s") or {}).get("median"),
            "parts_s": {alias: row["inclusive_s"]["median"] for alias, row in cov.get("parts", {}).items()},
            "module_calls": len(self.calls),
            "problems": len(self.problems),
        }

    # ------------------------------------------------------------------ artifact
    def to_dict(self) -> dict[str, Any]:
        return {
            "method": dict(self.method),
            "wall": dict(self.wall),
            "coverage": dict(self.coverage),
            "calls": [c.to_dict() for c in self.calls],
            "modules": module_time_table(self),
            "unhooked": dict(self.unhooked),
            "problems": list(self.problems),
            "trace_file": self.trace_file,
            "trace_repeat": self.trace_repeat,
        }

    def write(self, path: str | Path, config: Any = None) -> Path:
        return write_artifact(path, PROFILE_SCHEMA, PROFILE_SCHEMA_VERSION, self.to_dict(), config=config)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = PROFILE_FILE) -> "ModuleTimes":
        def need(key: str, kind: type) -> Any:
            if key not in data:
                raise ArtifactError(f"{where}: {PROFILE_SCHEMA} data lacks required field '{key}'")
            if not isinstance(data[key], kind):
                raise ArtifactError(f"{where}: field '{key}' must be a {'list' if kind is list else 'object'}")
            return data[key]

        try:
            return cls(
                method=dict(need("method", dict)),
                wall=dict(need("wall", dict)),
                coverage=dict(need("coverage", dict)),
                calls=[CallTimes.from_dict(c, f"{where}: calls[{i}]") for i, c in enumerate(need("calls", list))],
                unhooked={str(k): dict(v) for k, v in need("unhooked", dict).items()},
                problems=[str(p) for p in need("problems", list)],
                trace_file=data.get("trace_file"),
                trace_repeat=data.get("trace_repeat"),
            )
        except (TypeError, ValueError, IndexError) as exc:
            raise ArtifactError(f"{where}: malformed {PROFILE_SCHEMA} data ({type(exc).__name__}: {exc})") from None


REQUIRED_FIELDS = ("method", "wall", "coverage", "calls", "unhooked", "problems")


def load_module_times(path: str | Path) -> ModuleTimes:
    """Read `profile.json`; ArtifactError names an unknown version or a missing field."""
    _, data = read_artifact(path, PROFILE_SCHEMA, KNOWN_VERSIONS, required=REQUIRED_FIELDS)
    return ModuleTimes.from_dict(data, str(path))


# ---------------------------------------------------------------------------------------------- per module
def _repeats(times: ModuleTimes) -> int:
    return times.repeats or max((len(c.inclusive_s.repeats) for c in times.calls), default=0)


def _sum_repeats(calls: Iterable[CallTimes], attr: str, repeats: int) -> list[float]:
    out = [0.0] * repeats
    for c in calls:
        for i, v in enumerate(getattr(c, attr).repeats[:repeats]):
            out[i] += v
    return out


def outermost_calls(times: ModuleTimes, inside: Callable[[str], bool]) -> list[CallTimes]:
    """The calls of paths selected by `inside` that no other selected call encloses at run time (so a
    module calling itself, or a container's nested members, are not counted twice)."""
    index = {c.key: c for c in times.calls}
    out = []
    for c in times.calls:
        if not inside(c.path):
            continue
        parent = c.parent
        while parent is not None and not inside(parent[0]):
            node = index.get(parent)
            parent = node.parent if node else None
        if parent is None:
            out.append(c)
    return out


def _under(prefix: str) -> Callable[[str], bool]:
    head = f"{prefix}." if prefix else ""
    return lambda p: p.startswith(head)


def path_inclusive_repeats(times: ModuleTimes, path: str) -> Optional[list[float]]:
    """Per-repeat inclusive time of a module summed over its calls; for a container (`model.layers`) the
    sum over its members' calls. None when the path has no calls and is not a container."""
    if path in times.containers:
        calls = outermost_calls(times, _under(path))
    else:
        calls = outermost_calls(times, lambda p: p == path)
    if not calls:
        return None
    return _sum_repeats(calls, "inclusive_s", _repeats(times))


def module_time_table(times: ModuleTimes) -> dict[str, dict[str, Any]]:
    """{module path: {inclusive_s, self_s, calls, min_s, max_s, source}} summed over each module's calls.

    Keys are `named_modules()` paths, the root is "". Per repeat a module's calls are summed, then the
    median is taken (`inclusive_s`, `self_s`), with the min and max of that inclusive sum over the repeats
    (`min_s`, `max_s`). Containers (ModuleList/ModuleDict, e.g. `model.layers`) have no range; they get
    the sum of their members' calls (`source: "members"`, self 0, calls 0). Modules run through
    `type(m).forward(m, x)` get no row: their time is part of their caller's self time (`ModuleTimes.unhooked`);
    modules run through `m.forward(x)` have ranges (the forward shim of `module_ranges`).
    """
    repeats = _repeats(times)
    index = {c.key: c for c in times.calls}
    by_path: dict[str, list[CallTimes]] = {}
    for c in times.calls:
        by_path.setdefault(c.path, []).append(c)

    def recursive(c: CallTimes) -> bool:  # enclosed by another call of the same module
        parent = c.parent
        while parent is not None:
            if parent[0] == c.path:
                return True
            node = index.get(parent)
            parent = node.parent if node else None
        return False

    table: dict[str, dict[str, Any]] = {}
    for path, calls in by_path.items():
        inc = Stat.of(_sum_repeats([c for c in calls if not recursive(c)], "inclusive_s", repeats))
        slf = Stat.of(_sum_repeats(calls, "self_s", repeats))
        table[path] = {
            "inclusive_s": inc.median,
            "self_s": slf.median,
            "calls": len(calls),
            "min_s": inc.min,
            "max_s": inc.max,
            "source": "ranges",
        }
    for path in times.containers:
        inc = Stat.of(_sum_repeats(outermost_calls(times, _under(path)), "inclusive_s", repeats))
        table[path] = {
            "inclusive_s": inc.median,
            "self_s": 0.0,
            "calls": 0,
            "min_s": inc.min,
            "max_s": inc.max,
            "source": "members",
        }
    return table

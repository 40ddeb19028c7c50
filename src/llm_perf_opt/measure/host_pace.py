"""How fast each recorded run's host ran beside the other runs of its recording: the host pace.

A recording's runs share one calibration, measured once at its start, and its host is a virtual machine whose speed
drifts: the same forward of the same model, recorded on a borrowed H200 machine on two days, took 11.5 ms on one and
15.5 ms on the other (host-bound, its device time 1.4 ms both times). A prediction from the calibration cannot
follow that drift; the pace says, for each run, how much of a miss is the host's state during that run rather than the
time model.

Pace of a run = the weighted geometric mean, over the op names its profile trace shares with at least one other run
of the recording, of (its median duration of that op / the median over the runs of their medians), weighted by its
calls of the op (`RecordedProfile.outer_ops`: the host thread's outermost ops, launching or not). Same op, same
shapes class, same profiler: a ratio of 1.4 means the run's host spent 1.4x as long per op as the recording's typical
run. It compares the traced profiled forward (the profiler's own cost per op is in both sides of the ratio), taken in
the same minute as the run's plain forwards. No torch: the traces are read as JSON (`measure.recorded_profile`).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from llm_perf_opt.measure.recorded_profile import RecordedProfile

MEASURED_BY = (
    "host pace: the run's traced forward's median duration per op name / the median of the recording's runs' "
    "medians, geometric mean weighted by the run's calls (its outermost host ops, views included; op names in at "
    "least two runs)"
)


@dataclass(frozen=True)
class HostPace:
    """One run's host pace (see the module docstring) and what it was measured on."""

    run: Path
    pace: float
    ops: int  # the run's calls of the op names compared
    names: int  # the op names compared


def host_paces(profiles: Sequence[RecordedProfile]) -> dict[Path, HostPace]:
    """{run folder: its pace} of the runs of one recording that share op names with another run (see the module
    docstring); {} with fewer than two such runs."""
    seen: dict[str, list[float]] = {}
    for p in profiles:
        for name, (_, median) in p.outer_ops.items():
            if median > 0:
                seen.setdefault(name, []).append(median)
    reference = {name: statistics.median(m) for name, m in seen.items() if len(m) >= 2}
    out = {}
    for p in profiles:
        shared = [
            (n, median, reference[name])
            for name, (n, median) in p.outer_ops.items()
            if name in reference and median > 0
        ]
        calls = sum(n for n, _, _ in shared)
        if not calls:
            continue
        log_pace = sum(n * math.log(median / ref) for n, median, ref in shared) / calls
        out[p.run] = HostPace(p.run, math.exp(log_pace), calls, len(shared))
    return out if len(out) >= 2 else {}

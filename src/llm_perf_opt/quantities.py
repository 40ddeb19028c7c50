"""The named time quantities: every time the run page, the compare page and the console tables show is one of
these, and says which next to the number (`Quantity.label`), so two different figures for "the prefill" are never
read as one contradicting the other.

* `fastest`: the fastest plain run, wall (no profiler); a part its plain-forward clock on the CPU, its module
  ranges on CUDA. The time-levels table, the run page's chart and headline, the accuracy.
* `median_plain`: the median plain forward, wall (no profiler). The roofline table's `forward` row.
* `ranges`: the median over the profiled forwards of the module's ranges (inclusive, its calls summed): on the CPU
  wall-clock spans under the profiler, on CUDA device time. The roofline table's parts, the grouped graph, the
  icicle, the part table, the compare page.
* `first_forward`: the job's first forward, wall (cold: allocations, lazy initialisation). The run page's facts.
* `ideal` / `kernel` / `eager`: predicted at that time level (`analytic.time.convention.LEVELS`).

Within one quantity a child is never larger than its parent: the decoder's layers are timed as the decoder is (the
plain-forward clock on the CPU: `measure.profile.PartClock`), never a profiled layer under a plain parent.

`BOUND_LEVEL` names the one level whose bound the page and the tables show as "bound"; `bound_label()` says it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Quantity:
    key: str
    label: str  # shown next to every number of this quantity
    how: str  # one sentence: how it is measured or predicted


QUANTITIES: dict[str, Quantity] = {
    q.key: q
    for q in (
        Quantity(
            "fastest",
            "measured: fastest plain run, wall",
            "the fastest of the plain forwards (no profiler); a part the fastest of its plain-forward clocks on "
            "the CPU (perf_counter hooks), of its module ranges' inclusive time on CUDA; a decode step the "
            "fastest plain forward of the step",
        ),
        Quantity(
            "median_plain",
            "measured: median plain forward, wall",
            "the median of the plain forwards (no profiler), wall-clock",
        ),
        Quantity(
            "ranges",
            "measured: profiled module ranges, median",
            "the median over the profiled forwards of the module's ranges, inclusive, its calls summed "
            "(CPU: wall-clock spans under the profiler, which adds its cost per op; CUDA: device time)",
        ),
        Quantity(
            "first_forward",
            "measured: first forward, wall (cold)",
            "the job's first forward, wall-clock, with its one-off allocations and lazy initialisation",
        ),
        Quantity("ideal", "predicted: ideal", "the roofline: max(compute, memory) per unit, summed"),
        Quantity("kernel", "predicted: kernel", "per launched kernel at the device's efficiency for its shape"),
        Quantity("eager", "predicted: eager", "the kernel level + the host's dispatch per kernel and its syncs"),
    )
}
PREDICTED = ("ideal", "kernel", "eager")
BOUND_LEVEL = "eager"  # the level whose bound is "the bound" (its verdict: host / compute / memory / launch)


def label(key: str) -> str:
    """The label of a quantity (KeyError for a name not in the registry: a figure without a quantity is a bug)."""
    return QUANTITIES[key].label


def bound_level(levels: list[str] | tuple[str, ...]) -> str | None:
    """The level whose bound is shown: `BOUND_LEVEL` when present, else the most detailed level present."""
    if BOUND_LEVEL in levels:
        return BOUND_LEVEL
    present = [lv for lv in PREDICTED if lv in levels]
    return present[-1] if present else None


def bound_label(level: str | None) -> str:
    return f"bound at the {level} level" if level else "bound"

"""A console table of a profile (`ModuleTimes`): how it was measured, the overhead, the coverage of the
forward by the parts and each part's inclusive time with its spread over the repeats."""

from __future__ import annotations

from llm_perf_opt import units
from llm_perf_opt.measure.module_times import ModuleTimes


def render_profile(times: ModuleTimes) -> str:
    wall, cov, m = times.wall, times.coverage, times.method
    base = "GPU kernel time" if cov.get("time_base") == "device" else "CPU wall-clock spans"
    lines = [
        f"profile: {m.get('warmup')} warm-up + {times.repeats} plain and {times.repeats} profiled forwards "
        f"(interleaved) on {m.get('device')} ({m.get('device_name')}, {m.get('threads')} threads); module times "
        f"are {base}, medians over the repeats",
        *(
            [f"  {times.repeats} of {m['repeats_asked']} round(s): {m.get('rounds_rule')}"]
            if m.get("repeats_asked", times.repeats) != times.repeats
            else []
        ),
        f"  plain forward {units.seconds(wall['plain_s']['median'])}, "
        f"profiled {units.seconds(wall['profiled_s']['median'])}: "
        f"overhead {wall['overhead_ratio']:.3f}x (process CPU time {wall['overhead_ratio_cpu']:.3f}x)",
        f"  the parts cover {units.percent(cov.get('coverage'))} of the profiled forward "
        f"(uncovered {units.seconds((cov.get('uncovered_s') or {}).get('median'))}: outside the parts "
        f"{units.seconds((cov.get('outside_parts_s') or {}).get('median'))}, outside the root's range "
        f"{units.seconds((cov.get('outside_root_s') or {}).get('median'))})",
        "",
        f"{'part':12s} {'inclusive':>10s} {'min':>10s} {'max':>10s} {'share':>7s}",
    ]
    for alias, row in cov.get("parts", {}).items():
        stat = row["inclusive_s"]
        lines.append(
            f"{alias:12s} {units.seconds(stat['median']):>10s} {units.seconds(stat['min']):>10s} "
            f"{units.seconds(stat['max']):>10s} {units.percent(row.get('share_of_wall')):>7s}"
        )
    if cov.get("absent_parts"):
        lines.append(f"parts without a time (not in this model): {', '.join(cov['absent_parts'])}")
    lines.append(
        f"{len(times.calls)} module calls timed; "
        f"{sum(1 for u in times.unhooked.values() if u.get('kind') != 'container')} modules without a range"
    )
    for problem in times.problems:
        lines.append(f"problem: {problem}")
    return "\n".join(lines)

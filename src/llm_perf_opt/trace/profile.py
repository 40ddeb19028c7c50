"""The trace job's profile stage: measured time per module call of the job's forward (`measure.profile`).

Writes `profile.json` (every module call, how it was measured, the overhead and the coverage) and
`profile.trace.json` (the last profiled forward as a Chrome trace: Perfetto, chrome://tracing), prints
the per-part table, and returns the `ModuleTimes` for the stages after it: the per-module table goes
into `callgraph.json` (`module_times`), the parts' times into the roofline stage's comparison.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from llm_perf_opt.config import RootConfig
from llm_perf_opt.measure.module_times import PROFILE_FILE, TRACE_FILE, ModuleTimes, module_time_table
from llm_perf_opt.measure.profile import ForwardCall, default_layers, default_parts, profile_forward
from llm_perf_opt.measure.profile_summary import ProfileFigures
from llm_perf_opt.measure.profile_table import render_profile
from llm_perf_opt.typecheck import typed


def run_profile_stage(
    cfg: RootConfig,
    session: Any,
    inputs: Any,
    out_dir: Path,
    raw_cfg: Any = None,
    progress: Optional[Callable[[str], None]] = None,
    parts: Any = None,
) -> ModuleTimes:
    """Profile the session's forward on `inputs` (cfg.profile: warm-up, repeats, NVTX, Chrome trace); `parts`:
    the family's vocabulary (the parts whose time coverage is reported)."""
    say = progress or (lambda _msg: None)
    cfg.profile.check_device(session.device.type)
    budget = cfg.profile.budget_cpu_s
    say(
        f"profiling the forward: {cfg.profile.warmup} warm-up, {cfg.profile.repeats} plain + "
        f"{cfg.profile.repeats} profiled forwards, one range per module call"
        + (
            f" (fewer if the warm-up forward takes over {budget / (2 * cfg.profile.repeats):.3g} CPU-s: "
            f"profile.budget_cpu_s={budget:g})"
            if budget
            else ""
        )
    )
    times = profile_forward(
        ForwardCall.from_session(session, inputs),
        cfg.profile,
        trace_path=out_dir / TRACE_FILE,
        progress=say,
        parts=default_parts(session.model, parts),
        layers=default_layers(session.model, parts),
    )
    times.write(out_dir / PROFILE_FILE, config=raw_cfg)
    print(render_profile(times))
    s = times.summary()
    say(
        f"profile: {s['repeats']} of {s['repeats_asked']} round(s), overhead {s['overhead_ratio']:.3f}x, "
        f"parts cover {s['coverage']:.1%} of the forward; "
        f"wrote {PROFILE_FILE}" + (f" and {TRACE_FILE}" if times.trace_file else "")
    )
    return times


def profile_figures(times: ModuleTimes) -> ProfileFigures:
    """summary.json's `profile` section."""
    return typed(ProfileFigures, {**times.summary(), "file": PROFILE_FILE, "trace_file": times.trace_file}, "profile")


def callgraph_times(times: ModuleTimes) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """(`module_times`, `module_times_method`) for callgraph.json: the per-module table and how it was
    measured."""
    m = times.method
    method = {
        key: m.get(key)
        for key in (
            "warmup",
            "repeats",
            "device",
            "device_name",
            "threads",
            "allocator",
            "activities",
            "time_base",
            "synchronisation",
            "statistics",
        )
    }
    method["file"] = PROFILE_FILE
    method["fields"] = (
        "inclusive_s / self_s: seconds, median over the repeats of the module's calls summed; "
        "min_s / max_s: of the inclusive sum; calls: calls in the forward; source: ranges, or "
        "members for a container (the sum of its members' calls)"
    )
    return module_time_table(times), method

"""The three time levels (`analytic.time_levels`) for a job's primary roof, beside the measured times.

Device and host figures: on `hardware=measured` the calibration's kernel-level and host figures for the
prediction dtype (this device, this host); on a datasheet its min_kernel_us / launch_us / sync_us and this
host's cached CPU calibration. Measured times are the profile's (`measure.efficiency.compare` rows: the plain
forward's wall time for `forward`, each part's inclusive time), matched by stage and part alias: `prefill`
is the whole forward.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from llm_perf_opt.analytic import time_levels as TL


def job_time_model(cfg: Any, roof: Any) -> TL.TimeModel:
    levels = None
    if cfg.hardware is not None and cfg.hardware.kind == "measured":
        from llm_perf_opt.measure.calibrate import measured_hardware

        levels = measured_hardware(cfg.hardware, cfg.runtime)[1].levels
    return TL.time_model_for(roof, cfg.hardware, levels, getattr(cfg.hardware, "cache_dir", "tmp/calibration"),
                             synchronous=str(cfg.runtime.device).startswith("cpu") and levels is not None)


def measured_by_stage(rows: Sequence[Any]) -> dict[str, dict[str, float]]:
    """{stage: {"" or part alias: seconds}} from the comparison rows (prefill = the forward)."""
    out: dict[str, dict[str, float]] = {"prefill": {}, "vision": {}}
    for r in rows:
        if r.measured_s is None:
            continue
        if r.name == "forward":
            out["prefill"][""] = r.measured_s
        elif r.name == "vision":
            out["vision"][""] = r.measured_s
        else:
            out["prefill"][r.name] = r.measured_s
            out["vision"][r.name] = r.measured_s
    return out


def levels_section(cfg: Any, model: Any, latency: Any, rows: Sequence[Any],
                   decode_measured: Optional[Mapping[str, float]] = None) -> tuple[dict[str, Any], str]:
    """(summary section, console table) of the levels on the primary roof."""
    tm = job_time_model(cfg, latency.roof)
    levels = TL.latency_levels(model.stages(), latency, tm)
    measured = measured_by_stage(rows)
    if decode_measured:
        measured["decode"] = dict(decode_measured)
    section = {
        "device": tm.label, "convention": dict(TL.CONVENTION), "missing": dict(tm.missing),
        "stages": {s: {alias: {**lt.to_dict(), "measured_s": measured.get(s, {}).get(alias),
                               "eager_over_measured": (lt.eager_s / measured[s][alias]) if lt.eager_s and
                               measured.get(s, {}).get(alias) else None}
                       for alias, lt in parts.items()} for s, parts in levels.items()},
    }
    return section, TL.render_levels(levels, tm, measured)

"""The three time levels (`analytic.time.levels`) for a job's primary roof, beside the measured times.

Device and host figures: on `hardware=measured` the calibration's kernel-level and host figures for the
prediction dtype (this device, this host; or, with `hardware.calibration`, the recorded device and its host); on a
datasheet its min_kernel_us / launch_us / sync_us and this host's cached CPU calibration.

Measured (`MEASURED_BY`), the fastest-run convention (the calibration's figures are fastest consistent samples,
`measure.calibrate_levels`): the prefill is the fastest plain forward (no profiler); vision the fastest of the
per-repeat sums of SAM, CLIP and the projector; a part the fastest of its times in the plain forwards on the CPU
(`measure.profile.PartClock`: perf_counter hooks around the part, no profiler), else of its per-repeat inclusive
times in the profiled forwards (module ranges: on CUDA their kernel time), a decoder layer the same way as its
stack (one quantity: `quantities`, a layer never slower than the decoder); a decode step the fastest plain
forward of the first timed step (the analytic decode stage's context) and its parts' fastest times, the same way.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

from llm_perf_opt.analytic.time import convention, levels
from llm_perf_opt.analytic.time.figures import TimeModel, time_model_for

CPU_TIME_BY = (
    "process CPU time (time.process_time, user + sys) of the fastest plain forward: with one thread the "
    "forward's time without the waits for the core that other processes cause; with more threads the sum "
    "over threads (not a wall time), so shown only for runtime.threads=1"
)
MEASURED_BY = (
    "fastest run: prefill = the fastest plain forward (wall, no profiler; a forward under 50 ms re-run once "
    "after the garbage collection, untimed, so that its caches are warm as in a generation loop); vision = "
    "fastest per-repeat sum of SAM, CLIP, projector; parts = on the CPU the fastest plain-forward time of "
    "the part (perf_counter hooks, no profiler), on CUDA the fastest per-repeat inclusive time of the part's "
    "module ranges in the profiled forwards; decode = the fastest plain forward of decode step 1 and its "
    "parts' fastest times, the same way"
)


def job_time_model(cfg: Any, roof: Any) -> TimeModel:
    """The levels' figures of a job's roof: on `hardware=measured` its calibration (device and host: this machine's,
    or the file `hardware.calibration` names), else the datasheet and this host's cached calibration
    (`hardware.cache_dir`, default `config.paths.calibration_dir()`)."""
    calibrated, synchronous = None, False
    if cfg.hardware is not None and cfg.hardware.kind == "measured":
        from llm_perf_opt.measure.calibrate import measured_hardware

        cal = measured_hardware(cfg.hardware, cfg.runtime)[1]
        # the calibrated device's kind: this machine's runtime.device, or a recorded file's own device
        calibrated, synchronous = cal.levels, cal.device_type == "cpu"
    return time_model_for(
        roof,
        cfg.hardware,
        calibrated,
        getattr(cfg.hardware, "cache_dir", None),
        synchronous=synchronous,
    )


def measured_by_stage(times: Any, vocabulary: Any) -> dict[str, dict[str, float]]:
    """{stage: {"" or part alias: seconds}} from a profile (`ModuleTimes`), fastest run (see MEASURED_BY); the
    parts are the family's (`vocabulary`: a `family.PartVocabulary`, the analytic model's)."""
    from llm_perf_opt.measure.module_times import path_inclusive_repeats

    out: dict[str, dict[str, float]] = {"prefill": {}, "vision": {}}
    if times is None or vocabulary is None:
        return out
    plain = (times.wall.get("plain_s") or {}).get("min")
    if plain:
        out["prefill"][""] = float(plain)
    series = [path_inclusive_repeats(times, p) for p in vocabulary.vision_paths]
    if series and all(s is not None for s in series):
        out["vision"][""] = min(sum(v) for v in zip(*series))  # type: ignore[arg-type]
    plain_runs = {
        alias: r["plain_inclusive_s"]["repeats"]
        for alias, r in (times.coverage or {}).get("parts", {}).items()
        if (r.get("plain_inclusive_s") or {}).get("repeats")
    }
    plain = {alias: min(runs) for alias, runs in plain_runs.items()}
    for part in vocabulary.parts:
        values = path_inclusive_repeats(times, part.path)
        if part.alias in plain:
            out["prefill"][part.alias] = out["vision"][part.alias] = float(plain[part.alias])
        elif values:
            out["prefill"][part.alias] = out["vision"][part.alias] = min(values)
    vision_plain = [plain_runs.get(vocabulary.alias(p)) for p in vocabulary.vision_paths]
    if vision_plain and all(v is not None for v in vision_plain):
        out["vision"][""] = float(min(sum(v) for v in zip(*vision_plain)))  # type: ignore[arg-type]
    # a layer is timed as its stack is (one quantity: a layer is never slower than the decoder): the plain-forward
    # clock when the stack has one (`coverage["layers"]`), else the profiled ranges; a run that clocked the stack
    # but not its layers (profile.json from before the layer clocks) has no layer figure rather than a mixed one
    layer_plain = {
        alias: r["plain_inclusive_s"]["min"]
        for alias, r in ((times.coverage or {}).get("layers") or {}).items()
        if (r.get("plain_inclusive_s") or {}).get("min") is not None
    }
    stack = vocabulary.alias(vocabulary.decoder_stack)
    i = 0
    while True:
        alias = f"{vocabulary.layer_alias_prefix}{i}"
        values = path_inclusive_repeats(times, vocabulary.decoder_layer_path(i))
        if not values and alias not in layer_plain:
            break
        if alias in layer_plain:
            out["prefill"][alias] = float(layer_plain[alias])
        elif stack not in plain and values:
            out["prefill"][alias] = min(values)
        i += 1
    return out


def cpu_time_measured(times: Any, decode: Any, threads: Optional[int]) -> dict[str, dict[str, float]]:
    """{stage: {"": CPU seconds}} of the prefill and decode step 1 (see CPU_TIME_BY); empty unless one thread."""
    if threads != 1:
        return {}
    out: dict[str, dict[str, float]] = {}
    cpu = ((times.wall.get("plain_cpu_s") or {}).get("min")) if times is not None else None
    if cpu:
        out["prefill"] = {"": float(cpu)}
    rows = (decode.get("rows") if isinstance(decode, Mapping) else getattr(decode, "rows", None)) if decode else None
    first = next((r for r in rows or [] if r.get("step") == 1 and r.get("min_cpu_s")), None)
    if first is not None:
        out["decode"] = {"": float(first["min_cpu_s"])}
    return out


def decode_measured(decode: Any) -> dict[str, float]:
    """{"" or part alias: seconds} of decode step 1 (the analytic decode stage's context), fastest run."""
    if decode is None:
        return {}
    rows = decode.get("rows") if isinstance(decode, Mapping) else getattr(decode, "rows", None)
    first = next((r for r in rows or [] if r.get("step") == 1 and r.get("min_s") is not None), None)
    if first is None:
        return {}
    out = {"": float(first["min_s"])}
    out.update({a: float(v) for a, v in (first.get("parts_min_s") or {}).items()})
    out.update({a: float(v) for a, v in (first.get("parts_plain_min_s") or {}).items()})
    return out


ROUTING_ASSUMED = (
    "kernels of a run without its routing: the cost formulas' uniform routing, min(E, T x top_k) experts per MoE "
    "layer and call"
)
ROUTING_TAKEN = "kernels that ran: the routed experts the run's routing left without tokens taken off"
STEP_STAGE = {0: "prefill", 1: "decode"}  # routing step -> the analytic stage it ran in (decode = step 1's context)


def stages_that_ran(stages: Mapping[str, Any], unrouted: Optional[Mapping[int, Mapping[str, int]]]) -> dict[str, Any]:
    """The stages with the kernels the run did not launch taken off (`analytic.kernels_taken_off`): `unrouted` is
    {routing step: {experts path: kernels}} (`Family.unrouted_expert_kernels`, or a recorded run's kernel-count
    rows); steps other than the prefill (0) and decode step 1 are not levelled. Without it, the stages as given
    (uniform routing: `ROUTING_ASSUMED`)."""
    from llm_perf_opt.analytic.kernels_taken_off import kernels_taken_off

    out = dict(stages)
    for step, paths in (unrouted or {}).items():
        name = STEP_STAGE.get(int(step))
        if name in out and paths:
            out[name] = kernels_taken_off(out[name], paths)
    return out


def levels_section(
    cfg: Any,
    model: Any,
    latency: Any,
    times: Any = None,
    decode_times: Optional[Mapping[str, float]] = None,
    cpu_times: Optional[Mapping[str, Mapping[str, float]]] = None,
    unrouted: Optional[Mapping[int, Mapping[str, int]]] = None,
) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """(summary section, console table, roofline.json's levels payload) of the levels on the primary roof;
    `unrouted`: the run's routing (`stages_that_ran`), so that its kernel and eager levels sum the kernels that ran
    (the ideal level counts FLOPs and bytes, which do not depend on the routing)."""
    cpu_times = cpu_times or {}
    tm = job_time_model(cfg, latency.roof)
    stages = stages_that_ran(model.stages(), unrouted)
    by_stage = levels.latency_levels(stages, latency, tm)
    measured = measured_by_stage(times, getattr(model, "vocabulary", None))
    if decode_times:
        measured["decode"] = dict(decode_times)
    section = {
        "device": tm.label,
        "convention": dict(convention.LEVELS),
        "missing": dict(tm.missing),
        "measured_by": MEASURED_BY,
        "routing": ROUTING_TAKEN if unrouted else ROUTING_ASSUMED,
        **({"cpu_time_by": CPU_TIME_BY} if cpu_times else {}),
        "stages": {
            s: {
                alias: {
                    **lt.to_dict(),
                    "measured_s": measured.get(s, {}).get(alias),
                    "eager_over_measured": (lt.eager_s / measured[s][alias])
                    if lt.eager_s and measured.get(s, {}).get(alias)
                    else None,
                    **(
                        {
                            "measured_cpu_s": cpu_times[s][alias],
                            "eager_over_cpu": lt.eager_s / cpu_times[s][alias] if lt.eager_s else None,
                        }
                        if alias in cpu_times.get(s, {})
                        else {}
                    ),
                }
                for alias, lt in parts.items()
            }
            for s, parts in by_stage.items()
        },
    }
    text = levels.render_levels(by_stage, tm, measured) + f"\nmeasured: {MEASURED_BY}\nrouting: {section['routing']}"
    for s, by in cpu_times.items():
        lt = by_stage.get(s, {}).get("")
        if lt is not None and lt.eager_s and by.get(""):
            text += f"\n{s}: CPU time {by[''] * 1e3:.4g} ms, eager / CPU time {lt.eager_s / by['']:.2f}"
    if cpu_times:
        text += f"\nCPU time: {CPU_TIME_BY}"
    return section, text, levels.levels_payload(by_stage, tm, levels.latency_paths(stages, tm))


def accuracy_rows(section: Mapping[str, Any], min_share: float = 0.05) -> list[dict[str, Any]]:
    """The units the accuracy target names: every stage, every part holding at least `min_share` of its stage's
    measured time, and the decode step (each with eager / measured)."""
    rows = []
    for stage, parts in (section.get("stages") or {}).items():
        whole = (parts.get("") or {}).get("measured_s")
        for alias, e in parts.items():
            m = e.get("measured_s")
            if m is None or e.get("eager_s") is None:
                continue
            if alias and (not whole or m < min_share * whole):
                continue
            rows.append(
                {
                    "stage": stage,
                    "unit": alias or "(stage)",
                    "measured_s": m,
                    "eager_s": e["eager_s"],
                    "kernel_s": e.get("kernel_s"),
                    "ideal_s": e.get("ideal_s"),
                    "ratio": e["eager_s"] / m,
                    "verdict": e.get("verdict"),
                    "measured_cpu_s": e.get("measured_cpu_s"),
                    "ratio_cpu": e.get("eager_over_cpu"),
                }
            )
    return rows


def describe_accuracy(rows: Sequence[Mapping[str, Any]], bound: float = 0.25) -> str:
    """One line: how many units are within `bound` of measured, and the worst."""
    if not rows:
        return "accuracy: no unit has both a measured time and an eager prediction"
    bad = [r for r in rows if abs(r["ratio"] - 1) > bound]
    worst = max(rows, key=lambda r: abs(r["ratio"] - 1))
    return (
        f"accuracy (eager / measured, fastest run): {len(rows) - len(bad)}/{len(rows)} units within "
        f"{bound:.0%}; worst {worst['stage']} {worst['unit']} {worst['ratio']:.2f}"
    )

"""The trace job's decode stages (`trace.decode_steps=N`): what the capture runs, the routing record, and
the per-step rows of summary.json.

* `capture_plan`: the runtime patches of the capture (the trace patches plus `routing`) and, with N > 0,
  the `model_runtime.decode.DecodeProgram` that runs the prefill and N greedy steps inside one traced call (the
  decoder's modules show 1 + N calls, the vision modules one); each step reports itself (`on_step`), so
  a job killed during decode leaves a summary that says which step it was in.
* `routing_stage`: `routing.json` from the capture's runtime log (`model_runtime.routing`), and its summary with
  the analytic model's expert bytes beside the ones the routing really reads.
* `decode_stage`: per step, from the run's artifacts (verification.json: FLOPs per step and KV-cache
  bytes; runtime_log.json: past length and new tokens as the patches logged them) and, with the profile
  stage on, the time per step beside its roofline prediction (`measure.decode_timing`, with `hardware=`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Optional

from llm_perf_opt.config import RootConfig
from llm_perf_opt.family import ModelFamily
from llm_perf_opt.run_artifacts import DecodeSummary, RoutingSummary, typed

Progress = Callable[[str], None]


def capture_plan(
    cfg: RootConfig,
    session: Any,
    family: ModelFamily,
    on_step: Optional[Callable[[Any], None]] = None,
) -> tuple[tuple[str, ...], Optional[Any]]:
    """(patches, program) of the capture: no program for a prefill-only job. ConfigError naming
    trace.decode_steps when the model has no KV-cache path."""
    steps = cfg.trace.decode_steps
    if steps <= 0:
        return family.trace_patches, None
    family.check_kv_cache_path(session.model, steps)
    return family.trace_patches, family.decode_program(steps, on_step=on_step)


def routing_stage(
    session: Any,
    out_dir: Path,
    family: ModelFamily,
    analytic: Any = None,
    config: Any = None,
) -> Optional[RoutingSummary]:
    """routing.json and its summary from the capture's runtime log; None when no MoE gate ran."""
    log = family.load_runtime_log(out_dir)
    record = family.routing_record(log.events("routing"), session)
    if record is None:
        return None
    record.write(out_dir / family.routing_file, config=config)
    return typed(RoutingSummary, record.summary(_analytic_expert_bytes(analytic, record)), "routing")


def _analytic_expert_bytes(analytic: Any, record: Any) -> Optional[dict[int, dict[int, int]]]:
    """{step: {layer: routed-expert weight bytes the analytic model charges}} for the record's steps."""
    if analytic is None:
        return None
    out: dict[int, dict[int, int]] = {}
    for step in record.steps:
        stage = analytic.prefill() if step == 0 else analytic.decode(analytic.seq_len + step - 1)
        out[step] = {
            layer: stage.parts[f"{analytic.vocabulary.decoder_layer_path(layer)}.mlp.experts"].weight_bytes
            for layer in record.layers
        }
    return out


def job_roof(cfg: RootConfig) -> Any:
    """The roof of the job's predictions (`hardware=`), or None without one or without the profile stage."""
    if cfg.hardware is None or not cfg.profile.enabled:
        return None
    from llm_perf_opt.measure.calibrate import hardware_for, roof_for
    from llm_perf_opt.runs.entry import progress

    hardware = hardware_for(cfg, progress)
    return roof_for(cfg, hardware) if hardware is not None else None


def decode_stage(
    cfg: RootConfig,
    session: Any,
    inputs: Any,
    analytic: Any,
    out_dir: Path,
    progress: Progress,
    roof: Any,
    family: ModelFamily,
) -> DecodeSummary:
    """The per-step rows of summary.json (N = trace.decode_steps > 0)."""
    from llm_perf_opt.measure import load_verification

    steps = cfg.trace.decode_steps
    rows: dict[int, dict[str, Any]] = {k: {"step": k} for k in range(1, steps + 1)}
    if (out_dir / family.runtime_log_file).is_file():
        for e in family.load_runtime_log(out_dir).events("llm_stack"):
            if e.get("step") in rows:
                rows[e["step"]].update(past_len=e.get("past_len"), new_tokens=e.get("new_tokens", e.get("seq_len")))
    kv_prefill = None
    if (out_dir / "verification.json").is_file():
        v = load_verification(out_dir / "verification.json")
        for check in v.decode_checks():
            if check.step in rows:
                total = check.total_row
                rows[check.step].update(
                    flops_context=check.shapes.get("past_len"),
                    flops_analytic=total.analytic,
                    flops_measured=total.measured,
                    flops_rel_error=total.rel_error,
                    flops_rows=len(check.rows),
                    flops_ok=check.passed,
                )
        for r in v.kv_cache:
            if r.step in rows:
                rows[r.step].update(
                    kv_tokens=r.context_len, kv_bytes_analytic=r.analytic, kv_bytes_measured=r.measured, kv_ok=r.ok
                )
            elif r.step == 0:
                kv_prefill = r.to_dict()
    timing = None
    if cfg.profile.enabled:
        from llm_perf_opt.measure.decode_timing import time_decode_steps
        from llm_perf_opt.measure.profile import default_parts

        progress(
            f"timing {steps} decode step(s) (profile: {cfg.profile.warmup} warm-up, {cfg.profile.repeats} "
            "repeats each)" + (f"; roofline on {roof.label}" if roof is not None else "")
        )
        timing = time_decode_steps(
            session.model,
            session.forward_kwargs(inputs),
            steps,
            cfg.profile,
            context=session.forward_context,
            device=session.device,
            describe={"source": session.source, "dtype": str(session.dtype)},
            analytic=analytic,
            roof=roof,
            progress=progress,
            greedy_decode=family.greedy_decode,
            parts=default_parts(session.model, family.parts),
        )
        for t in timing:
            rows[t["step"]].update({k: v for k, v in t.items() if k not in ("step", "past_len")})
    out = {
        "steps": steps,
        "rows": [rows[k] for k in sorted(rows)],
        "kv_cache_after_prefill": kv_prefill,
        "timed": timing is not None,
        "time_method": (
            "median of profile.repeats plain forwards of the step after profile.warmup, "
            "perf_counter around the forward (CUDA synchronised)"
        )
        if timing is not None
        else None,
    }
    return typed(DecodeSummary, out, "decode")


def print_decode(summary: DecodeSummary) -> None:
    """One line per step: FLOPs and KV bytes verified, time measured / predicted."""
    from llm_perf_opt import units

    print(f"decode: {summary.steps} step(s)")
    for r in summary.rows:
        line = (
            f"  step {r['step']:>3}  past {r.get('past_len', '?'):>5}  FLOPs {units.flops(r.get('flops_measured'))}"
            f" ({'exact' if r.get('flops_ok') else 'NOT VERIFIED'})  KV {units.nbytes(r.get('kv_bytes_measured'))}"
            f" ({'ok' if r.get('kv_ok') else 'NOT VERIFIED'})"
        )
        if r.get("measured_s") is not None:
            line += f"  time {units.seconds(r['measured_s'])}"
        if r.get("predicted_s") is not None:
            line += f"  predicted {units.seconds(r['predicted_s'])} ({r.get('bound')}-bound, {r.get('roof')})"
        print(line)

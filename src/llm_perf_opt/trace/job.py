"""The trace job: its stages in order (`STAGES`), each a `trace.stage.Stage` that reads and writes typed artifacts
in the run directory and its own section of summary.json; `run_stages` runs them with the run control."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig

from llm_perf_opt.analytic import COSTS_SCHEMA, COSTS_SCHEMA_VERSION
from llm_perf_opt.analytic.analytic_summary import AnalyticFigures, StageFigures
from llm_perf_opt.analytic.table import render_costs_table
from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.callgraph.capture import capture_callgraph
from llm_perf_opt.callgraph.capture_summary import GroupingSummary, TraceStats
from llm_perf_opt.callgraph.render import group_and_render
from llm_perf_opt.callgraph.schema import load_callgraph_json
from llm_perf_opt.config import RootConfig
from llm_perf_opt.export import plan_targets, run_export_stage
from llm_perf_opt.family import ModelFamily
from llm_perf_opt.measure import (
    VERIFICATION_SCHEMA,
    VERIFICATION_SCHEMA_VERSION,
    check_model_agreement,
    render_table,
)
from llm_perf_opt.measure.verify_summary import FlopsCheck, PartFlops, VerificationFigures
from llm_perf_opt.prepare.builders import analytic_model_for, build_job_inputs
from llm_perf_opt.prepare.validate import ValidJob, validate
from llm_perf_opt.report.run_page import write_run_page
from llm_perf_opt.run_artifacts import (
    LayoutView,
    ModelInfo,
    PageInfo,
    ParamCounts,
    RuntimeInfo,
    Summary,
    TokenCounts,
    WorkloadInfo,
    typed,
)
from llm_perf_opt.runs import job_run
from llm_perf_opt.runs.entry import progress
from llm_perf_opt.runs.job_run import JobRun
from llm_perf_opt.runs.memory import JobMemory, rss_bytes
from llm_perf_opt.trace.decode import capture_plan, decode_stage, job_roof, print_decode, routing_stage
from llm_perf_opt.trace.graph import costs_on_graph
from llm_perf_opt.trace.profile import callgraph_times, profile_figures, run_profile_stage
from llm_perf_opt.trace.roofline import run_roofline_stage
from llm_perf_opt.trace.serving import serving_stage
from llm_perf_opt.trace.stage import Stage, TraceRun, run_stages
from llm_perf_opt.trace.trace_summary import ForwardFigures, GraphFigures


def run_trace(raw_cfg: DictConfig, out_dir: Path) -> Summary:
    """summary.json always, ending in a true status; with trace.enabled the session, a timed forward and the
    enabled stages. Each stage runs in `run.step(name)`, so an error or Ctrl-C records where it stopped."""
    run = JobRun.current_or_new(out_dir)
    try:
        return _trace_stages(raw_cfg, Path(out_dir), run)
    except BaseException as exc:
        run.stopped(exc)  # summary.json: failed / interrupted, with the stage and the message
        raise


def _trace_stages(raw_cfg: DictConfig, out_dir: Path, run: JobRun) -> Summary:
    ctx = TraceRun(raw_cfg, out_dir, run, t_job=time.perf_counter())
    run_stages(STAGES, ctx)
    summary = ctx.summary
    summary.job_seconds = round(time.perf_counter() - ctx.t_job, 3)
    run.finish_ok()
    progress(f"run page: {write_run_page(out_dir, ctx.family.parts)}")
    progress(f"done in {summary.job_seconds:.1f} s: {out_dir / 'summary.json'}")
    return summary


# ============================================================================================== the stages
def validate_stage(ctx: TraceRun) -> None:
    ctx.job = validate(ctx.raw_cfg)  # every rule, before any work
    ctx.cfg, ctx.family = ctx.job.cfg, ctx.job.family
    progress(f"run dir {ctx.out_dir}")
    for note in ctx.job.notes:  # the vendor's own conversion of the page image, said (summary.json: page.notes)
        progress(f"note: {note}")


def inputs_stage(ctx: TraceRun) -> None:
    cfg, family = ctx.cfg, ctx.family
    inputs = ctx.inputs = build_job_inputs(ctx.job)
    # trace.export: a bad export.* value (unknown submodule, crops in a no-crop mode) fails here, before any work
    ctx.export_plan = (
        plan_targets(cfg.export, ctx.job.spec, inputs.layout, inputs.seq_len, cfg.workload.name, family=family)
        if cfg.trace.export
        else None
    )
    summary = ctx.summary = base_summary(cfg, ctx.job, inputs)
    # summary.json from now on: the layout is known, so a job killed later still leaves it behind
    ctx.run.attach(summary, lambda: summary.save(ctx.out_dir / "summary.json", config=ctx.raw_cfg))
    print_summary(summary, ctx.family)


def analytic_stage(ctx: TraceRun) -> None:
    layout = ctx.inputs.layout
    ctx.analytic = (
        analytic_model_for(ctx.job, layout.page_width, layout.page_height, seq_len=ctx.inputs.seq_len)
        if ctx.cfg.trace.analytic
        else None
    )
    if ctx.analytic is not None:
        write_artifact(
            ctx.out_dir / "costs.json", COSTS_SCHEMA, COSTS_SCHEMA_VERSION, ctx.analytic.to_dict(), config=ctx.raw_cfg
        )
        ctx.summary.analytic = analytic_figures(ctx.analytic, ctx.family)
        print(render_costs_table(ctx.analytic))


def session_stage(ctx: TraceRun) -> None:
    cfg, family = ctx.cfg, ctx.family
    progress(f"opening session: model={cfg.model.name} on {cfg.runtime.device} ({cfg.runtime.dtype})")
    session = ctx.open_session(family.open_session(cfg.model, cfg.runtime))
    family.check_kv_cache_path(session.model, cfg.trace.decode_steps)  # decode needs one: refused before any work
    ctx.summary.session = session.describe()
    ctx.summary.params = typed(ParamCounts, session.parameter_counts(), "params")


def forward_stage(ctx: TraceRun) -> None:
    forward = ctx.summary.forward = timed_forward(ctx.session, ctx.inputs)
    progress(f"forward {forward.seconds:.2f} s, logits {forward.logits_shape}")


def profile_stage(ctx: TraceRun) -> None:
    ctx.times = run_profile_stage(
        ctx.cfg, ctx.session, ctx.inputs, ctx.out_dir, ctx.raw_cfg, progress, parts=ctx.family.parts
    )
    ctx.summary.profile = profile_figures(ctx.times)


def capture_label(ctx: TraceRun) -> str:
    n = ctx.cfg.trace.decode_steps
    return f"capture: prefill + {n} decode step(s) (0/{n} done)" if n else "capture"


def capture_stage(ctx: TraceRun) -> None:
    cfg, family, summary, n = ctx.cfg, ctx.family, ctx.summary, ctx.cfg.trace.decode_steps

    def on_step(s: Any) -> None:  # a job killed during decode says which step it reached
        progress(f"capture: decode step {s.step}/{n} (past {s.past_len})")
        ctx.run.step(f"capture: prefill + {n} decode step(s) ({s.step}/{n} done)")

    patches, program = capture_plan(cfg, ctx.session, family, on_step=on_step)
    stats, grouping = trace_and_group(
        cfg, ctx.session, ctx.inputs, ctx.out_dir, ctx.raw_cfg, ctx.times, patches, program, family=family
    )
    summary.trace = typed(TraceStats, stats, "trace")
    summary.grouping = typed(GroupingSummary, grouping, "grouping")
    summary.routing = routing_stage(ctx.session, ctx.out_dir, family, ctx.analytic, ctx.raw_cfg)


def verify_stage(ctx: TraceRun) -> None:
    flops, parts, verification, ctx.measured = check_against_measured(
        ctx.cfg, ctx.session, ctx.inputs, ctx.analytic, ctx.out_dir, ctx.raw_cfg, ctx.family
    )
    summary = ctx.summary
    summary.flops = {stage: typed(FlopsCheck, entry, f"flops.{stage}") for stage, entry in flops.items()}
    summary.parts = {part: typed(PartFlops, entry, f"parts.{part}") for part, entry in parts.items()}
    summary.verification = typed(VerificationFigures, verification, "verification")


def decode_steps_stage(ctx: TraceRun) -> None:
    roof = job_roof(ctx.cfg)
    ctx.summary.decode = decode_stage(
        ctx.cfg, ctx.session, ctx.inputs, ctx.analytic, ctx.out_dir, progress, roof, ctx.family
    )
    print_decode(ctx.summary.decode)


def export_stage(ctx: TraceRun) -> None:
    ctx.summary.export = run_export_stage(
        ctx.cfg,
        ctx.session,
        ctx.inputs,
        ctx.out_dir,
        raw_cfg=ctx.raw_cfg,
        plan=ctx.export_plan,
        progress=progress,
        callgraph=ctx.out_dir / "callgraph.json" if ctx.cfg.trace.capture else None,
    )


def roofline_stage(ctx: TraceRun) -> None:
    cfg, layout = ctx.cfg, ctx.inputs.layout
    ctx.summary.roofline = run_roofline_stage(
        cfg,
        ctx.analytic,
        ctx.times,
        ctx.out_dir,
        ctx.raw_cfg,
        progress=progress,
        decode=ctx.summary.decode,
        title=f"Roofline: {cfg.model.name}, {cfg.workload.name}, page {layout.page_width}x{layout.page_height}",
        # the time levels sum the kernels that ran: the routed experts the capture's routing left idle taken off
        unrouted=ctx.family.unrouted_expert_kernels(ctx.analytic, ctx.out_dir),
    )


def serving_section_stage(ctx: TraceRun) -> None:
    ctx.summary.serving = serving_stage(ctx.cfg, ctx.analytic, ctx.out_dir, ctx.raw_cfg, progress)


def graph_costs_stage(ctx: TraceRun) -> None:
    ctx.summary.graph = graph_costs(ctx.cfg, ctx.analytic, ctx.measured, ctx.out_dir, ctx.raw_cfg, ctx.family)


def _traced(ctx: TraceRun) -> bool:
    return ctx.cfg.trace.enabled


def _predicted(ctx: TraceRun) -> bool:
    return ctx.analytic is not None and ctx.cfg.hardware is not None


# The trace job, in order (the trace package's docstring lists them with their files). Every stage after
# `session` up to `export` runs inside the model's session; the session is closed before `roofline`.
STAGES: tuple[Stage, ...] = (
    Stage("validate", validate_stage, reads=("raw_cfg",), writes=("job", "cfg", "family")),
    Stage(
        "inputs",
        inputs_stage,
        reads=("job", "cfg", "family"),
        writes=("inputs", "export_plan", "summary"),
    ),
    Stage(
        "analytic",
        analytic_stage,
        reads=("job", "cfg", "inputs", "family"),
        writes=("analytic", "costs", "summary.analytic"),
    ),
    Stage(
        "session",
        session_stage,
        reads=("cfg", "family"),
        writes=("session", "summary.session", "summary.params"),
        when=_traced,
        session=True,
    ),
    Stage(
        "forward",
        forward_stage,
        reads=("session", "inputs"),
        writes=("summary.forward",),
        when=_traced,
        session=True,
    ),
    Stage(
        "profile",
        profile_stage,
        reads=("cfg", "session", "inputs", "family"),
        writes=("times", "profile", "profile_trace", "summary.profile"),
        when=lambda ctx: _traced(ctx) and ctx.cfg.profile.enabled,
        session=True,
    ),
    Stage(
        "capture",
        capture_stage,
        reads=("cfg", "session", "inputs", "family", "times", "analytic"),
        writes=(
            "callgraph",
            "runtime_log",
            "grouped",
            "grouped_dot",
            "grouped_svg",
            "grouped_mmd",
            "routing",
            "summary.trace",
            "summary.grouping",
            "summary.routing",
        ),
        when=lambda ctx: _traced(ctx) and ctx.cfg.trace.capture,
        session=True,
        label=capture_label,
    ),
    Stage(
        "verify",
        verify_stage,
        reads=("cfg", "session", "inputs", "analytic", "family"),
        writes=("measured", "verification", "summary.flops", "summary.parts", "summary.verification"),
        when=lambda ctx: _traced(ctx) and ctx.cfg.trace.verify and ctx.analytic is not None,
        session=True,
    ),
    Stage(
        "decode",
        decode_steps_stage,
        reads=("cfg", "session", "inputs", "analytic", "family"),
        writes=("summary.decode",),
        when=lambda ctx: _traced(ctx) and ctx.cfg.trace.decode_steps > 0,
        session=True,
    ),
    Stage(
        "export",
        export_stage,
        reads=("cfg", "session", "inputs", "export_plan"),
        writes=("export", "summary.export"),
        when=lambda ctx: _traced(ctx) and ctx.export_plan is not None,
        session=True,
    ),
    Stage(
        "roofline",
        roofline_stage,
        reads=("cfg", "analytic", "times", "inputs"),
        writes=("roofline", "roofline_svg", "roofline_png", "summary.roofline"),
        when=_predicted,
    ),
    Stage(
        "serving",
        serving_section_stage,
        reads=("cfg", "analytic"),
        writes=("serving", "curve_csv", "curve_svg", "curve_png", "summary.serving"),
        when=_predicted,
    ),
    Stage(
        "graph costs",
        graph_costs_stage,
        reads=("cfg", "analytic", "measured", "family"),
        writes=("module_costs", "grouped_svg", "model_explorer", "model_explorer_raw", "summary.graph"),
        when=lambda ctx: _traced(ctx) and ctx.cfg.trace.capture,  # after every stage that measures or predicts
    ),
)


def base_summary(cfg: RootConfig, job: ValidJob, inputs: Any) -> Summary:
    layout = inputs.layout
    w = cfg.workload
    return Summary(
        model=ModelInfo(name=cfg.model.name, source=cfg.model.source, spec=job.spec.name),
        workload=WorkloadInfo(mode=w.name, extra={k: getattr(w, k) for k in job.family.workload_knobs}),
        page=PageInfo(
            width=layout.page_width,
            height=layout.page_height,
            image=w.page.image,
            extra={"notes": list(job.notes)} if job.notes else {},
        ),
        layout=typed(LayoutView, layout.as_dict(), "layout"),
        tokens=TokenCounts(
            image=layout.image_tokens,
            prompt=len(inputs.prompt_token_ids),
            sequence=inputs.seq_len,
            prompt_source=inputs.prompt_source,
            batch=inputs.batch,
            lengths=list(inputs.lengths),
        ),
        tensors=inputs.shapes(),
        runtime=RuntimeInfo(
            device=cfg.runtime.device,
            dtype=cfg.runtime.dtype,
            attn_implementation=cfg.runtime.attn_implementation,
            autocast=cfg.runtime.autocast,
        ),
        status="running",
    )


def analytic_figures(analytic: Any, family: ModelFamily) -> AnalyticFigures:
    """Per stage: flops, flops_matmul, io/weight/activation bytes; per reported part: prefill matmul FLOPs."""
    stages = {
        name: StageFigures(
            flops=stage.total.flops,
            flops_matmul=stage.total.flops_matmul,
            io_bytes=stage.total.io_bytes,
            weight_bytes=stage.total.weight_bytes,
            activation_bytes=stage.total.activation_bytes,
        )
        for name, stage in analytic.stages().items()
    }
    prefill = analytic.prefill()
    return AnalyticFigures(stages, {part: prefill.part(part).flops_matmul for part in family.parts.reported})


def timed_forward(session: Any, inputs: Any) -> ForwardFigures:
    """One plain forward (no tracing, no counting): wall time, peak memory, logits shape."""
    kwargs = session.forward_kwargs(inputs)
    if session.device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    rss_before = rss_bytes()
    t0 = time.perf_counter()
    with session.forward_context():
        out = session.model(**kwargs)
    if session.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    logits = out.logits
    peak_rss = peak_rss_bytes()  # the forward's peak, read before the check below allocates anything
    return ForwardFigures(
        seconds=round(seconds, 4),
        logits_shape=list(logits.shape),
        logits_finite=logits_finite(logits),
        peak_rss_bytes=peak_rss,
        peak_cuda_bytes=torch.cuda.max_memory_allocated(session.device) if session.device.type == "cuda" else None,
        rss_before_bytes=rss_before,
    )


def logits_finite(logits: torch.Tensor) -> bool:
    """Every logit finite: the largest and the smallest are (a NaN makes both reductions NaN, +inf the largest,
    -inf the smallest). Two reductions allocate nothing the size of the logits: `torch.isfinite(logits.float())`
    on the tiny twin's 908 x 129,280 logits made a float32 copy and isfinite's temporaries (0.8 GB, more than the
    forward, which the job's peak memory then counted), and chunking it took 0.8 CPU-s against 0.1 here."""
    return bool(torch.isfinite(logits.amax())) and bool(torch.isfinite(logits.amin()))


def peak_rss_bytes() -> int:
    """Peak resident memory of the job so far (its own, not the process's maximum: `job_memory`)."""
    run = job_run.current()
    return (run.memory if run is not None else JobMemory()).peak_rss()


def trace_and_group(
    cfg: RootConfig,
    session: Any,
    inputs: Any,
    out_dir: Path,
    raw_cfg: DictConfig,
    times: Any = None,
    patches: tuple[str, ...] | None = None,
    program: Any = None,
    *,
    family: ModelFamily,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """TorchLens capture under the logging patches -> callgraph.json (with the profile's per-module times
    when `times`, a ModuleTimes, is given), runtime_log.json, grouped graphs. `program`: the prefill and
    the decode steps in one traced call (`decode_stage.capture_plan`)."""
    steps = f" and {cfg.trace.decode_steps} decode step(s)" if program is not None else ""
    progress(f"capturing the forward{steps} with TorchLens (no activations saved)")
    kwargs = session.forward_kwargs(inputs, use_cache=True) if program is not None else session.forward_kwargs(inputs)
    patches = family.trace_patches if patches is None else patches
    with session.forward_context(), family.runtime_patches(session, patches) as log:
        cg = capture_callgraph(session.model, kwargs, model_name=cfg.model.name, progress=progress, program=program)
    cg.runtime_log = log.events()
    if times is not None:
        cg.module_times, cg.module_times_method = callgraph_times(times)
    cg.save(out_dir / "callgraph.json", config=raw_cfg)
    log.save(out_dir / family.runtime_log_file, config=raw_cfg)
    progress(
        f"call graph: {cg.total_ops():,} ops, {cg.total_module_calls():,} module calls "
        f"in {cg.stats.get('capture_seconds', float('nan')):.1f} s"
    )
    grouped, files = group_and_render(
        cg,
        out_dir,
        max_depth=cfg.render.max_depth,
        formats=cfg.render.formats,
        runtime_log=cg.runtime_log,
        checks=family.runtime_checks,
        config=raw_cfg,
    )
    grouping = grouped.summary()
    grouping["files"] = {fmt: path.name for fmt, path in files.items()}
    grouping["notes"] = grouped.notes
    bad = grouping["mismatches"]
    progress(
        f"grouped graph: {grouping['nodes']} nodes; runtime checks {grouping['checks']}"
        + (f"; MISMATCH: {bad}" if bad else "")
    )
    stats = {k: v for k, v in cg.stats.items() if isinstance(v, (int, float, str, bool)) or v is None}
    stats.update(num_ops=cg.total_ops(), module_calls=cg.total_module_calls())
    return stats, grouping


def check_against_measured(
    cfg: RootConfig, session: Any, inputs: Any, analytic: Any, out_dir: Path, raw_cfg: DictConfig, family: ModelFamily
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], Any]:
    """Measured FLOPs (the prefill and each decode step, at least the first; with verify.fvcore also fvcore's
    count of the prefill), KV-cache bytes and activation bytes against the analytic model ->
    verification.json; also returns the prefill's MeasuredFlops."""
    steps = tuple(range(1, max(cfg.trace.decode_steps, 1) + 1))  # with decode_steps=0, still the first step
    progress(f"counting FLOPs on the real forward (FlopCounterMode) and {len(steps)} decode step(s)")
    with session.forward_context():
        meas = family.measure(session.model, session.forward_kwargs(inputs), decode_steps=steps)
    fv = None
    if cfg.verify.fvcore:
        from llm_perf_opt.measure import fvcore_flops

        progress("counting the prefill again with fvcore (jit trace; a second opinion, reconciled by op family)")
        with session.forward_context():
            fv = fvcore_flops(session.model, session.forward_kwargs(inputs, use_cache=False))
        progress(f"fvcore: {'ok' if fv.ok else 'FAILED: ' + str(fv.error)}")
    v = check_model_agreement(
        analytic, meas.prefill, meas.decode, rtol=cfg.verify.rtol, fvcore=fv, kv_cache_bytes=meas.kv_cache_bytes
    )
    if (out_dir / "callgraph.json").is_file():  # activation bytes against the op outputs TorchLens recorded
        cg = load_callgraph_json(out_dir / "callgraph.json")
        v.activation = activation_bytes_rows(analytic, cg, v.rtol)
        from llm_perf_opt.measure.kernel_counts import dsocr_kernel_rows

        v.kernels = dsocr_kernel_rows(analytic, cg, unrouted=family.unrouted_expert_kernels(analytic, out_dir))
    write_artifact(
        out_dir / "verification.json", VERIFICATION_SCHEMA, VERIFICATION_SCHEMA_VERSION, v.to_dict(), config=raw_cfg
    )
    print(render_table(v))
    flops: dict[str, Any] = {}
    parts: dict[str, Any] = {}
    part_paths = {family.parts.path(p): p for p in family.parts.reported}
    for row in v.rows:
        entry = {"analytic": row.analytic, "measured": row.measured, "rel_error": row.rel_error, "ok": row.ok}
        if row.part == "":
            flops.setdefault(row.stage, entry)  # decode: the first step (the analytic decode stage's context)
        elif row.stage == "prefill" and row.part in part_paths:
            parts[part_paths[row.part]] = {
                "flops_analytic": row.analytic,
                "flops_measured": row.measured,
                "rel_error": row.rel_error,
                "ok": row.ok,
            }
    verification = {
        "passed": v.passed,
        "rtol": v.rtol,
        "rows": len(v.rows),
        "failures": len(v.failures),
        "max_rel_error": v.max_rel_error,
        "ops_without_formula": meas.prefill.matmul_like_without_formula,
        "activation_passed": v.activation_passed,
        "activation_failures": sum(1 for r in v.activation if not r.ok),
        "kernels_passed": v.kernels_passed,
        "kernel_failures": sum(1 for r in v.kernels if not r.ok),
    }
    return flops, parts, verification, meas.prefill


def activation_bytes_rows(analytic: Any, cg: Any, rtol: float) -> list[Any]:
    """Activation bytes per part (the prefill, plus each decode step the capture holds) against TorchLens' op
    outputs (measure.agreement.activation_rows)."""
    from llm_perf_opt.callgraph.op_families import layer_norm_statistics
    from llm_perf_opt.measure.agreement import activation_rows, captured_stages, program_bytes

    # the capture holds the prefill and the decode steps the job traced (decode step k: context seq_len + k - 1)
    steps = max(int(cg.stats.get("root_forward_calls") or 1) - 1, 0)
    rows = activation_rows(
        captured_stages(analytic, steps),
        cg.op_output_bytes,
        layer_norm_statistics(cg.module_types, cg.output_metadata),
        rtol,
        program_bytes=program_bytes(getattr(analytic, "batch", 1), steps),
    )
    bad = [r for r in rows if not r.ok]
    progress(
        f"activation bytes vs TorchLens: {len(rows) - len(bad)}/{len(rows)} parts within rtol"
        + (f"; off: {', '.join(f'{r.part or chr(40) + chr(41)} {r.unexplained:+,} B' for r in bad)}" if bad else "")
    )
    return rows


def graph_costs(
    cfg: RootConfig, analytic: Any, measured: Any, out_dir: Path, raw_cfg: DictConfig, family: ModelFamily
) -> GraphFigures:
    """Costs on every grouped node (module_costs.json), the renderings and model_explorer/ (graph_stage)."""
    cg = load_callgraph_json(out_dir / "callgraph.json")
    section = costs_on_graph(
        out_dir,
        cg,
        analytic=analytic.prefill() if analytic is not None else None,
        dtype_bytes=analytic.dtype_bytes if analytic is not None else None,
        measured=measured,
        max_depth=cfg.render.max_depth,
        formats=cfg.render.formats,
        color_by=cfg.render.color_by,
        config=raw_cfg,
        progress=progress,
        checks=family.runtime_checks,
    )
    return typed(GraphFigures, section, "graph")


def print_summary(summary: Summary, family: ModelFamily) -> None:
    """The run's model, workload, page, layout and tokens, in the family's words (`ModelFamily.console_summary`)."""
    print(family.console_summary(summary))

"""`./dev analyze`: the analytic cost model alone, for any workload and page size; no model is built.
With `hardware=NAME` (a datasheet, `custom`, or `measured`: this machine, calibrated and cached) it also predicts
vision, prefill and decode times per stage and part (roofline.json), and the serving figures at
`workload.batch` with `serve.output_tokens` per page: TTFT, TPOT, tokens/s, pages/day, memory and the binding
constraint, with the latency-vs-throughput curve (serving.json, curve.csv, curve.svg/.png)."""

from __future__ import annotations

from functools import partial

import hydra
from omegaconf import DictConfig

from llm_perf_opt.analytic import COSTS_SCHEMA, COSTS_SCHEMA_VERSION
from llm_perf_opt.analytic.roofline_artifact import write_roofline
from llm_perf_opt.analytic.roofline_table import render_roofline_table
from llm_perf_opt.analytic.serving import curve_rows
from llm_perf_opt.analytic.serving_file import SERVING_FILE, write_serving
from llm_perf_opt.analytic.serving_run import analyze_serving, csv_text, serving_model_for, serving_record
from llm_perf_opt.analytic.serving_text import render_engine, render_measured
from llm_perf_opt.analytic.table import render_costs_table
from llm_perf_opt.analytic.time.ideal import predict_latency
from llm_perf_opt.artifacts import atomic_write_text, write_artifact
from llm_perf_opt.config.options import check_group_options
from llm_perf_opt.measure.calibrate import hardware_for, roof_for
from llm_perf_opt.measure.curve_conditions import check_curve_conditions
from llm_perf_opt.prepare.builders import analytic_model_for, model_for_dtype
from llm_perf_opt.prepare.validate import validate
from llm_perf_opt.report.serving_report import write_curve_plot
from llm_perf_opt.runs.entry import CONF_DIR, progress, reports_errors, run_dir


def plan(raw: DictConfig, log=progress, measure: bool = True) -> tuple:
    """Every check of the job, before any work that grows with the batch: the config (`validate`), the roof,
    and at `workload.batch` with a roof the serving figures (output length, memory: the largest batch that
    fits), all on the first page alone; then the batch's costs, identical pages priced once. Returns (job,
    hardware, roof, model, serving). `measure=False` (the check before the run directory exists): a roof that
    must be measured first (`hardware=measured`) is left to the job, and nothing is priced."""
    job = validate(raw, runs_model=False)  # every rule, before any work; no pixels, no model: any page size
    cfg = job.cfg
    check_curve_conditions(cfg)  # serve.measured: a CPU curve of this job's threads and allocator regime
    if not measure and cfg.hardware is not None and cfg.hardware.kind == "measured":
        return job, None, None, None, None
    width, height = job.page_size
    hardware = hardware_for(cfg, log)  # hardware=measured calibrates (or reuses the cache) first
    roof = roof_for(cfg, hardware) if hardware is not None else None
    first = analytic_model_for(job, width, height, batch=False)
    if roof is not None:  # bytes follow the predicted dtype
        first = model_for_dtype(first, roof.dtype)
    serving = None
    if roof is not None:  # every check (batch, output length, memory) before the batch is priced or anything written
        from llm_perf_opt.measure.engine_figures import engine_figures

        sm = serving_model_for(cfg, first, roof)
        serving = (sm, analyze_serving(cfg, sm, hardware, roof, *engine_figures(cfg, roof)))
    if not measure:
        return job, hardware, roof, None, serving
    model = first
    if cfg.workload.batch > 1:
        model = analytic_model_for(job, width, height)
        if roof is not None:
            model = model_for_dtype(model, roof.dtype)
    return job, hardware, roof, model, serving


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="analyze")
@reports_errors(check=partial(plan, log=lambda _: None, measure=False))  # before the run directory is created
def main(raw: DictConfig) -> None:
    job, hardware, roof, model, serving = plan(raw)
    cfg, spec = job.cfg, job.spec
    width, height = job.page_size
    latency = predict_latency(model.stages(), roof) if roof is not None else None
    path = write_artifact(run_dir() / "costs.json", COSTS_SCHEMA, COSTS_SCHEMA_VERSION, model.to_dict(), config=raw)
    lay = model.layout
    print(
        f"{spec.name} | mode {cfg.workload.name} | page {width}x{height} | grid {lay.w_crop}x{lay.h_crop} | "
        f"image tokens {lay.image_tokens} | sequence {model.seq_len} | bytes per element {model.dtype_bytes}"
        + (f" | batch {model.batch} (costs of the batched forward)" if getattr(model, "batch", 1) > 1 else "")
    )
    print(render_costs_table(model))
    progress(f"wrote {path}")
    if latency is None:
        progress("no predicted times: pass hardware=NAME (conf/hardware/: h100_sxm, ..., or measured)")
        return
    print()
    print(render_roofline_table(latency))
    print()
    table, payload = _levels_table(cfg, model, latency)
    print(table)
    progress(
        f"wrote {write_roofline(run_dir() / 'roofline.json', model, latency, hardware, config=raw, levels=payload)}"
    )
    sm, runs = serving
    for run in runs:
        print()
        print(render_engine(run, hardware.name, hardware.memory_bytes))
    if runs[0].measured:
        print(render_measured(runs[0].measured))
    record = serving_record("analyze", cfg, sm, hardware, roof, runs)
    first = runs[0]
    atomic_write_text(run_dir() / "curve.csv", csv_text(curve_rows(first.points)))
    write_curve_plot(
        first.points,
        first.knee,
        run_dir(),
        progress,
        f"{spec.name} {cfg.workload.name} {width}x{height} on {hardware.name}, "
        f"{cfg.serve.output_tokens} tokens/page, engine {first.engine.name} ({first.engine.level} level)",
    )
    progress(f"wrote {write_serving(run_dir() / SERVING_FILE, record, config=raw)}")


def _levels_table(cfg, model, latency) -> tuple[str, dict]:
    """(console table, roofline.json's levels payload): ideal / kernel / eager per stage and part, kernel counts
    and verdicts (analytic.time.levels), on the figures the trace job's levels use (`levels_stage.job_time_model`)."""
    from llm_perf_opt.analytic.time import levels
    from llm_perf_opt.measure.levels_stage import job_time_model

    tm = job_time_model(cfg, latency.roof)
    by_stage = levels.latency_levels(model.stages(), latency, tm)
    return levels.render_levels(by_stage, tm), levels.levels_payload(
        by_stage, tm, levels.latency_paths(model.stages(), tm)
    )


if __name__ == "__main__":
    check_group_options()
    main()

"""`./dev size ttft_s=1 tpot_s=0.02 pages_per_day=1000000 hardware=h100_sxm`: the matmul TFLOP/s, memory
bandwidth and memory a device needs for serving targets, which one binds, and the replicas of the named device
for the daily volume (`analytic.sizing`); `hardware=custom` takes every figure from the command line. No model
is built. Writes serving.json (and curve.csv, curve.svg, curve.png: the latency-vs-throughput curve on the named
device, its knee marked)."""

from __future__ import annotations

from functools import partial
from typing import Optional

import hydra
from omegaconf import DictConfig

from llm_perf_opt.analytic.serving import curve_rows, latency_curve
from llm_perf_opt.analytic.serving_file import SERVING_FILE, write_serving
from llm_perf_opt.analytic.serving_run import (
    EngineServing,
    allowance_for,
    csv_text,
    engine_setup,
    measured_for,
    serving_model_for,
    serving_record,
)
from llm_perf_opt.analytic.serving_text import render_curve, render_engines, render_measured, render_sizing
from llm_perf_opt.analytic.sizing import Targets, size
from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.config.options import check_group_options
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.calibrate import hardware_for, roof_for
from llm_perf_opt.measure.curve_conditions import check_curve_conditions
from llm_perf_opt.measure.engine_figures import engine_figures
from llm_perf_opt.prepare.builders import analytic_model_for, model_for_dtype
from llm_perf_opt.prepare.validate import validate
from llm_perf_opt.report.serving_report import write_curve_plot
from llm_perf_opt.runs.entry import CONF_DIR, progress, reports_errors, run_dir

# Bare targets on the command line (`tpot_s=0.02`) mean the size job's own keys.
TARGET_KEYS = {
    "ttft_s": "size.ttft_s",
    "tpot_s": "size.tpot_s",
    "pages_per_day": "size.pages_per_day",
    "max_scale": "size.max_scale",
    "output_tokens": "serve.output_tokens",
}


def engine_list(args: list[str]) -> list[str]:
    """`serve.engine=hf_eager,vllm` (no --multirun) as the list `serve.engine=[hf_eager,vllm]`: one row per engine
    in one job (with --multirun it stays a sweep)."""
    if "--multirun" in args or "-m" in args:
        return list(args)
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        if sep and key.lstrip("+") == "serve.engine" and "," in value and not value.startswith("["):
            arg = f"{key}=[{value}]"
        out.append(arg)
    return out


def expand_targets(args: list[str]) -> list[str]:
    """Bare targets as the job's keys; a target given twice (`tpot_s=0.02 size.tpot_s=0.5`, where Hydra would
    silently keep the last) is one ConfigError naming both; an engine list as a list (`engine_list`)."""
    out, given = [], {}
    full_keys = set(TARGET_KEYS.values())
    for arg in engine_list(args):
        key, sep, value = arg.partition("=")
        if sep and key in TARGET_KEYS:
            arg = f"{TARGET_KEYS[key]}={value}"
        full, _, _ = arg.partition("=")
        if sep and full in full_keys:
            if full in given:
                raise ConfigError.field(
                    full, value, f"is given twice ({given[full]} and {key}={value}): give each target once"
                )
            given[full] = f"{key}={value}"
        out.append(arg)
    return out


def plan(raw: DictConfig, log=progress, measure: bool = True) -> Optional[tuple]:
    """Every check and the whole sizing (pure arithmetic on the first page: milliseconds): the config, the
    targets, the reference device, `size()` (a latency target no device within max_scale meets is refused) and
    the curve. Returns (job, hardware, roof, model, sm, sizing, (points, knee, fit)). `measure=False` (the check
    before the run directory exists): None for a reference that must be measured first (`hardware=measured`),
    whose checks the job makes once it has the roof."""
    job = validate(raw, runs_model=False)
    cfg = job.cfg
    check_curve_conditions(cfg)  # serve.measured: a CPU curve of this job's threads and allocator regime
    if cfg.size is None:
        raise ConfigError("size: the targets are missing (ttft_s=..., tpot_s=..., pages_per_day=...)")
    if cfg.hardware is None:
        raise ConfigError("hardware: size needs a reference device (hardware=h100_sxm, or hardware=custom ...)")
    if cfg.workload.batch != 1:
        raise ConfigError.field(
            "workload.pages" if cfg.workload.pages else "workload.batch",
            list(cfg.workload.pages) or cfg.workload.batch,
            "size chooses the batch itself (the smallest batch that carries pages_per_day within the latency "
            "targets, up to the largest that fits): leave it out; ./dev analyze workload.batch=N gives the "
            "figures at one batch",
        )
    if not measure and cfg.hardware.kind == "measured":
        return None
    hardware = hardware_for(cfg, log)
    roof = roof_for(cfg, hardware)
    width, height = job.page_size
    model = model_for_dtype(analytic_model_for(job, width, height, batch=False), roof.dtype)
    sm = serving_model_for(cfg, model, roof)
    targets = Targets(
        None if cfg.size.ttft_s is None else float(cfg.size.ttft_s),
        float(cfg.size.tpot_s),
        float(cfg.size.pages_per_day),
        cfg.serve.output_tokens,
    )
    allowance = allowance_for(cfg)
    time_model, generate = engine_figures(cfg, roof)
    runs, refused = [], {}
    engines = engine_setup(cfg, sm, roof, time_model, generate)
    for engine, timing, paged in engines:
        try:
            sizing = size(
                sm,
                hardware,
                roof,
                targets,
                allowance,
                max_scale=float(cfg.size.max_scale),
                timing=timing,
                paged=paged,
                engine=engine.name,
            )
        except ConfigError as exc:
            if len(engines) == 1:
                raise
            refused[engine.name] = str(exc)  # a list of engines: this one's row says why it cannot
            continue
        points, knee, fit = latency_curve(
            sm,
            roof,
            cfg.serve.output_tokens,
            cfg.serve.batches,
            allowance,
            hardware.memory_bytes,
            continuous=True,
            timing=timing,
            paged=paged,
        )
        gen = timing.generate
        runs.append(
            EngineServing(
                engine,
                timing,
                paged,
                sizing.batch,
                None,
                points,
                knee,
                {"static": None, "continuous": fit},
                sizing,
                gen,
            )
        )
    if not runs:  # every engine of the list refused: the first one's reason
        raise ConfigError(next(iter(refused.values())))
    runs[0].measured = measured_for(cfg, sm, roof, time_model)
    for run in runs:
        run.refused = refused
    return job, hardware, roof, model, sm, runs


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="size")
@reports_errors(check=partial(plan, log=lambda _: None, measure=False))  # before the run directory is created
def main(raw: DictConfig) -> None:
    job, hardware, roof, model, sm, runs = plan(raw)
    cfg = job.cfg
    width, height = job.page_size
    lay = model.layout
    print(
        f"{model.spec.name} | mode {cfg.workload.name} | page {width}x{height} | image tokens {lay.image_tokens} "
        f"| prompt {sm.prompt_tokens} tokens | weights {sm.weight_bytes / 1e9:,.2f} GB ({roof.dtype})"
    )
    for run in runs:
        print(f"engine {run.engine.name}: {run.engine.summary} [{run.engine.level} level]")
        print(render_sizing(run.sizing))
        print(render_curve(run.points, run.knee, continuous=True))
    if len(runs) + len(runs[0].refused) > 1:
        print(render_engines(runs, runs[0].refused))
    if runs[0].measured:
        print(render_measured(runs[0].measured))
    record = serving_record("size", cfg, sm, hardware, roof, runs)
    out = run_dir()
    first = runs[0]
    atomic_write_text(out / "curve.csv", csv_text(curve_rows(first.points)))
    write_curve_plot(
        first.points,
        first.knee,
        out,
        progress,
        f"{model.spec.name} {cfg.workload.name} {width}x{height} on {hardware.name}, "
        f"{cfg.serve.output_tokens} tokens/page, engine {first.engine.name} ({first.engine.level} level)",
    )
    progress(f"wrote {write_serving(out / SERVING_FILE, record, config=raw)}")


if __name__ == "__main__":
    check_group_options()
    main()

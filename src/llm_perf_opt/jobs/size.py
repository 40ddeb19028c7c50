"""`./dev size ttft_s=1 tpot_s=0.02 pages_per_day=1000000 hardware=h100_sxm`: the matmul TFLOP/s, memory
bandwidth and memory a device needs for serving targets, which one binds, and the replicas of the named device
for the daily volume (`analytic.sizing`); `hardware=custom` takes every figure from the command line. No model
is built. Writes serving.json (and curve.csv, curve.svg, curve.png: the latency-vs-throughput curve on the named
device, its knee marked)."""

from __future__ import annotations

from functools import partial

import hydra
from omegaconf import DictConfig

from llm_perf_opt.analytic.serving import curve_rows, latency_curve
from llm_perf_opt.analytic.serving_file import SERVING_FILE, write_serving
from llm_perf_opt.analytic.serving_run import allowance_for, csv_text, serving_model_for, serving_record
from llm_perf_opt.analytic.serving_text import render_curve, render_sizing
from llm_perf_opt.analytic.sizing import Targets, size
from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.config.options import check_group_options
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.calibrate import hardware_for, roof_for
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


def expand_targets(args: list[str]) -> list[str]:
    out = []
    for arg in args:
        key, sep, value = arg.partition("=")
        out.append(f"{TARGET_KEYS[key]}={value}" if sep and key in TARGET_KEYS else arg)
    return out


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="size")
@reports_errors(check=partial(validate, runs_model=False))  # before the run directory is created
def main(raw: DictConfig) -> None:
    job = validate(raw, runs_model=False)
    cfg = job.cfg
    if cfg.size is None:
        raise ConfigError("size: the targets are missing (ttft_s=..., tpot_s=..., pages_per_day=...)")
    if cfg.hardware is None:
        raise ConfigError("hardware: size needs a reference device (hardware=h100_sxm, or hardware=custom ...)")
    hardware = hardware_for(cfg, progress)
    roof = roof_for(cfg, hardware)
    width, height = job.page_size
    model = model_for_dtype(analytic_model_for(job, width, height), roof.dtype)
    sm = serving_model_for(cfg, model, roof)
    targets = Targets(
        float(cfg.size.ttft_s), float(cfg.size.tpot_s), float(cfg.size.pages_per_day), cfg.serve.output_tokens
    )
    allowance = allowance_for(cfg)
    sizing = size(sm, hardware, roof, targets, allowance, cfg.serve.level, float(cfg.size.max_scale))
    points, knee, fit = latency_curve(
        sm,
        roof,
        cfg.serve.output_tokens,
        cfg.serve.batches,
        allowance,
        hardware.memory_bytes,
        cfg.serve.level,
        continuous=True,
    )
    lay = model.layout
    print(
        f"{model.spec.name} | mode {cfg.workload.name} | page {width}x{height} | image tokens {lay.image_tokens} "
        f"| prompt {sm.prompt_tokens} tokens | weights {sm.weight_bytes / 1e9:,.2f} GB ({roof.dtype})"
    )
    print(render_sizing(sizing))
    print(render_curve(points, knee, continuous=True))
    record = serving_record(
        "size", cfg, sm, hardware, roof, None, points, knee, {"static": None, "continuous": fit}, sizing
    )
    out = run_dir()
    atomic_write_text(out / "curve.csv", csv_text(curve_rows(points)))
    write_curve_plot(
        points,
        knee,
        out,
        progress,
        f"{model.spec.name} {cfg.workload.name} {width}x{height} on {hardware.name}, "
        f"{cfg.serve.output_tokens} tokens/page, {cfg.serve.level} level",
    )
    progress(f"wrote {write_serving(out / SERVING_FILE, record, config=raw)}")


if __name__ == "__main__":
    check_group_options()
    main()

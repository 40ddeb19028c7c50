"""The trace job's serving stage: with `hardware=` set, the serving figures of the job's page at
`workload.batch` on the job's primary roof (the same math as `./dev analyze hardware=...`: `analytic.serving_run`),
written as `serving.json`, `curve.csv` and `curve.svg/png`; summary.json's `serving` section holds the flat
fields (`Serving.summary()`). Predicted only: nothing here is measured. A device whose memory the batch
overflows is reported (`serve_memory_fits` false), not refused: the trace already ran. A serving setting the
model cannot take (output tokens beyond its positions) leaves the stage out with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from llm_perf_opt.analytic.serving import curve_rows
from llm_perf_opt.analytic.serving_file import SERVING_FILE, write_serving
from llm_perf_opt.analytic.serving_run import analyze_serving, csv_text, serving_model_for, serving_record
from llm_perf_opt.analytic.serving_text import render_engine
from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.config import RootConfig
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.calibrate import hardware_for, roof_for
from llm_perf_opt.prepare.builders import model_for_dtype
from llm_perf_opt.report.serving_report import write_curve_plot


def serving_stage(
    cfg: RootConfig, analytic: Any, out_dir: Path, raw_cfg: Any, progress: Callable[[str], None]
) -> dict[str, Any]:
    hardware = hardware_for(cfg, progress)
    roof = roof_for(cfg, hardware)
    model = model_for_dtype(analytic, roof.dtype)
    s = cfg.serve
    try:
        sm = serving_model_for(cfg, model, roof)
    except ConfigError as exc:
        progress(f"serving: left out: {exc}")
        return {"skipped": str(exc)}
    from llm_perf_opt.measure.engine_figures import engine_figures

    capacity = hardware.memory_bytes
    try:  # a batch beyond the memory is reported (serve_memory_fits false), not refused: the trace already ran
        runs = analyze_serving(cfg, sm, hardware, roof, *engine_figures(cfg, roof), refuse=False)
    except ConfigError as exc:  # an engine the device lacks a figure for
        progress(f"serving: left out: {exc}")
        return {"skipped": str(exc)}
    for run in runs:
        print(render_engine(run, hardware.name, capacity))
    record = serving_record("trace", cfg, sm, hardware, roof, runs)
    first = runs[0]
    atomic_write_text(out_dir / "curve.csv", csv_text(curve_rows(first.points)))
    write_curve_plot(
        first.points,
        first.knee,
        out_dir,
        progress,
        f"{sm.name} on {hardware.name}, {s.output_tokens} tokens/page, engine {first.engine.name} "
        f"({first.engine.level} level)",
    )
    progress(f"wrote {write_serving(out_dir / SERVING_FILE, record, config=raw_cfg)}")
    return record.summary()

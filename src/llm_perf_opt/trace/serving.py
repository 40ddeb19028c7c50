"""The trace job's serving stage: with `hardware=` set, the serving figures of the job's page at
`workload.batch` on the job's primary roof (the same math as `./dev analyze hardware=...`: `analytic.serving_run`),
written as `serving.json`, `curve.csv` and `curve.svg/png`; summary.json's `serving` section holds the flat
fields (`Serving.summary()`). Predicted only: nothing here is measured. A device whose memory the batch
overflows is reported (`serve_memory_fits` false), not refused: the trace already ran. A serving setting the
model cannot take (output tokens beyond its positions) leaves the stage out with its reason."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from llm_perf_opt.analytic.memory_model import max_batch
from llm_perf_opt.analytic.serving import curve_rows, latency_curve, serving_point
from llm_perf_opt.analytic.serving_file import SERVING_FILE, write_serving
from llm_perf_opt.analytic.serving_run import allowance_for, csv_text, serving_model_for, serving_record
from llm_perf_opt.analytic.serving_text import render_point
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
    s, batch = cfg.serve, cfg.workload.batch
    try:
        sm = serving_model_for(cfg, model, roof)
    except ConfigError as exc:
        progress(f"serving: left out: {exc}")
        return {"skipped": str(exc)}
    allowance, capacity = allowance_for(cfg), hardware.memory_bytes
    point = serving_point(sm, roof, batch, s.output_tokens, allowance, capacity, s.level)
    fits = {
        "static": max_batch(sm, s.output_tokens, capacity, allowance) if capacity else None,
        "continuous": max_batch(sm, s.output_tokens, capacity, allowance, continuous=True) if capacity else None,
    }
    points, knee, _ = latency_curve(sm, roof, s.output_tokens, s.batches, allowance, capacity, s.level)
    print(render_point(point, hardware.name, capacity, fits["static"]))
    record = serving_record("trace", cfg, sm, hardware, roof, point, points, knee, fits)
    atomic_write_text(out_dir / "curve.csv", csv_text(curve_rows(points)))
    write_curve_plot(
        points, knee, out_dir, progress, f"{sm.name} on {hardware.name}, {s.output_tokens} tokens/page, {s.level} level"
    )
    progress(f"wrote {write_serving(out_dir / SERVING_FILE, record, config=raw_cfg)}")
    return record.summary()

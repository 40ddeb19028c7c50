"""`./dev analyze`: the analytic cost model alone, for any workload and page size; no model is built.
With `hardware=NAME` (a datasheet, or `measured`: this machine, calibrated and cached) it also predicts
vision, prefill and decode times per stage and part (roofline.json)."""
from __future__ import annotations

import hydra
from omegaconf import DictConfig

from llm_perf_opt.analytic import COSTS_SCHEMA, COSTS_SCHEMA_VERSION
from llm_perf_opt.analytic.roofline import predict_latency
from llm_perf_opt.analytic.roofline_artifact import write_roofline
from llm_perf_opt.analytic.roofline_table import render_roofline_table
from llm_perf_opt.analytic.table import render_costs_table
from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.measure.calibrate import hardware_for, roof_for
from llm_perf_opt.runs.entry import CONF_DIR, progress, reports_errors, run_dir
from llm_perf_opt.config.options import check_group_options
from llm_perf_opt.trace.roofline import model_for_dtype
from llm_perf_opt.trace.builders import analytic_model_for
from llm_perf_opt.trace.validate import validate


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="analyze")
@reports_errors
def main(raw: DictConfig) -> None:
    job = validate(raw, runs_model=False)  # every rule, before any work; no pixels, no model: any page size
    cfg, spec = job.cfg, job.spec
    width, height = job.page_size
    hardware = hardware_for(cfg, progress)  # hardware=measured calibrates (or reuses the cache) first
    roof = roof_for(cfg, hardware) if hardware is not None else None
    model = analytic_model_for(job, width, height)
    if roof is not None:  # bytes follow the predicted dtype
        model = model_for_dtype(model, roof.dtype)
    latency = predict_latency(model.stages(), roof) if roof is not None else None
    path = write_artifact(run_dir() / "costs.json", COSTS_SCHEMA, COSTS_SCHEMA_VERSION, model.to_dict(), config=raw)
    lay = model.layout
    print(f"{spec.name} | mode {cfg.workload.name} | page {width}x{height} | grid {lay.w_crop}x{lay.h_crop} | "
          f"image tokens {lay.image_tokens} | sequence {model.seq_len} | bytes per element {model.dtype_bytes}")
    print(render_costs_table(model))
    progress(f"wrote {path}")
    if latency is None:
        progress("no predicted times: pass hardware=NAME (conf/hardware/: h100_sxm, ..., or measured)")
        return
    print()
    print(render_roofline_table(latency))
    progress(f"wrote {write_roofline(run_dir() / 'roofline.json', model, latency, hardware, config=raw)}")


if __name__ == "__main__":
    check_group_options()
    main()

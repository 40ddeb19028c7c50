"""`./dev analyze`: the analytic cost model alone, for any workload and page size; no model is built."""
from __future__ import annotations

import hydra
from omegaconf import DictConfig

from llm_perf_opt.analytic import COSTS_SCHEMA, COSTS_SCHEMA_VERSION, DeepseekOCRAnalyticModel, costs_dict
from llm_perf_opt.analytic.table import render_costs_table
from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.config import to_typed_config
from llm_perf_opt.pipelines.common import CONF_DIR, progress, reports_errors, run_dir
from llm_perf_opt.pipelines.trace_job import analytic_model_for, model_spec_for, page_size


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
@reports_errors
def main(raw: DictConfig) -> None:
    cfg = to_typed_config(raw)
    spec = model_spec_for(cfg)
    width, height = page_size(cfg)
    model: DeepseekOCRAnalyticModel = analytic_model_for(cfg, spec, width, height)
    path = write_artifact(run_dir() / "costs.json", COSTS_SCHEMA, COSTS_SCHEMA_VERSION, costs_dict(model), config=raw)
    lay = model.layout
    print(f"{spec.name} | mode {cfg.workload.name} | page {width}x{height} | grid {lay.w_crop}x{lay.h_crop} | "
          f"image tokens {lay.image_tokens} | sequence {model.seq_len} | bytes per element {model.dtype_bytes}")
    print(render_costs_table(model))
    progress(f"wrote {path}")


if __name__ == "__main__":
    main()

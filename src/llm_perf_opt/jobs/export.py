"""`./dev export`: torch.export of DeepSeek-OCR submodules at the shapes of one workload and page.

Writes `<run dir>/export/`: `<submodule>.ops.csv` op tables, `summary.json` (schema
`llm_perf_opt.export`: FLOPs exported vs FlopCounterMode vs analytic, op counts vs TorchLens, MoE
refusals and remedies), and with `export.onnx=true` ONNX files of a CLIP block and the dense layer.

The default model is the one every job defaults to (`twin_tiny`: seconds, a few hundred MB); the real
shapes of DeepSeek-OCR need `model=twin` (or `model=vendor`), which builds the 3.3B-parameter model:
on a shared machine run it under the big-run lock (`flock /tmp/llm-perf-opt-big.lock ./dev export
model=twin workload=gundam`). Flash attention cannot be exported: a `flash_attention_2` runtime is
opened with `sdpa` here (the vendor decoder: eager).
"""

from __future__ import annotations

import dataclasses

import hydra
from omegaconf import DictConfig

from llm_perf_opt.export import plan_targets, run_export_stage
from llm_perf_opt.prepare.builders import build_job_inputs
from llm_perf_opt.prepare.validate import validate
from llm_perf_opt.runs.entry import CONF_DIR, progress, reports_errors, run_dir


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="config")
@reports_errors(check=validate)  # before the run directory is created
def main(raw: DictConfig) -> None:
    job = validate(raw)  # every rule, before any work
    cfg, spec = job.cfg, job.spec
    inputs = build_job_inputs(job)
    plan = plan_targets(
        cfg.export, spec, inputs.layout, inputs.seq_len, mode=cfg.workload.name, family=job.family
    )  # bad input: here
    runtime = cfg.runtime
    if runtime.attn_implementation == "flash_attention_2":
        progress("export: flash_attention_2 is not exportable; opening the model with sdpa")
        runtime = dataclasses.replace(runtime, attn_implementation="sdpa")
    out = run_dir()
    progress(f"export: {', '.join(plan.names())} -> {out / 'export'}")
    with job.family.open_session(cfg.model, runtime) as session:
        run_export_stage(cfg, session, inputs, out, raw_cfg=raw, progress=progress, plan=plan)


if __name__ == "__main__":
    main()

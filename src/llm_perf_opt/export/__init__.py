"""Static export of DeepSeek-OCR submodules: `torch.export` op tables cross-checked against the analytic
model, and ONNX files for Netron.

Modules, one idea each: `targets` (which submodules, at which call and so which shapes), `hooks` (their
real inputs from one forward), `modules` (what torch.export gets: the submodule, or a decode layer with
its KV cache as tensors), `moe` (the fixed-routing remedy for data-dependent MoE routing), `program`
(torch.export to the export IR and core ATen), `flops` (torch's FLOP formulas on the graph), `optable`
(op tables, CSV), `flops_check` (exported vs FlopCounterMode vs analytic FLOPs), `opcount_check` (op
counts vs TorchLens, decompositions), `onnx_files` (ONNX + checker + ONNX Runtime), `summary`
(`export/summary.json`), `stage` (all of it).
"""
from llm_perf_opt.export.stage import EXPORT_DIR, run_export_stage
from llm_perf_opt.export.summary import (
    EXPORT_SCHEMA,
    EXPORT_SCHEMA_VERSION,
    ExportSummary,
    SubmoduleExport,
    load_export_summary,
)
from llm_perf_opt.export.targets import ExportPlan, ExportTarget, plan_targets

__all__ = [
    "EXPORT_DIR", "EXPORT_SCHEMA", "EXPORT_SCHEMA_VERSION", "ExportPlan", "ExportSummary", "ExportTarget",
    "SubmoduleExport", "load_export_summary", "plan_targets", "run_export_stage",
]

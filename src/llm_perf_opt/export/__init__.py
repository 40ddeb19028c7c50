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
# The names below load on first use (PEP 562): importing a submodule does not import torch.export.
from __future__ import annotations

import importlib

_LAZY = {
    'EXPORT_DIR': 'llm_perf_opt.export.stage',
    'run_export_stage': 'llm_perf_opt.export.stage',
    'EXPORT_SCHEMA': 'llm_perf_opt.export.summary',
    'EXPORT_SCHEMA_VERSION': 'llm_perf_opt.export.summary',
    'ExportSummary': 'llm_perf_opt.export.summary',
    'SubmoduleExport': 'llm_perf_opt.export.summary',
    'load_export_summary': 'llm_perf_opt.export.summary',
    'ExportPlan': 'llm_perf_opt.export.targets',
    'ExportTarget': 'llm_perf_opt.export.targets',
    'plan_targets': 'llm_perf_opt.export.targets',
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "EXPORT_DIR", "EXPORT_SCHEMA", "EXPORT_SCHEMA_VERSION", "ExportPlan", "ExportSummary", "ExportTarget",
    "SubmoduleExport", "load_export_summary", "plan_targets", "run_export_stage",
]

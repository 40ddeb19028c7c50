"""Static export of DeepSeek-OCR submodules: `torch.export` op tables cross-checked against the analytic
model, and ONNX files for Netron.

Modules, one idea each: `targets` (which submodules, at which call and so which shapes), `hooks` (their
real inputs from one forward), `modules` (what torch.export gets: the submodule, or a decode layer with
its KV cache as tensors), `moe` (the fixed-routing remedy for data-dependent MoE routing), `program`
(torch.export to the export IR and core ATen), `flops` (torch's FLOP formulas on the graph), `optable`
(op tables, CSV), `flops_check` (exported vs FlopCounterMode vs analytic FLOPs), `opcount_check` (op
counts vs TorchLens, decompositions), `onnx_files` (ONNX + checker + ONNX Runtime), `summary`
(`export/summary.json`), `stage` (all of it).

Its data in the run: `run_files.py` (`export/summary.json`), `export_config.py` (the `export` config section).
"""

# The names below load on first use (PEP 562): importing a submodule does not import torch.export.
from __future__ import annotations

from llm_perf_opt.lazy import lazy_attributes, lazy_names

_LAZY = {
    "llm_perf_opt.export.stage": ("EXPORT_DIR", "run_export_stage"),
    "llm_perf_opt.export.summary": (
        "EXPORT_SCHEMA",
        "EXPORT_SCHEMA_VERSION",
        "ExportSummary",
        "SubmoduleExport",
        "load_export_summary",
    ),
    "llm_perf_opt.export.targets": ("ExportPlan", "ExportTarget", "plan_targets"),
}

__getattr__ = lazy_attributes(__name__, _LAZY, globals())

__all__ = lazy_names(_LAZY)

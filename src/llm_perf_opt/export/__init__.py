"""Static export of a model's submodules: `torch.export` op tables cross-checked against the analytic model and the
measured FLOPs, and ONNX files for Netron. A stage package above `measure`; importing it imports no torch.export.

| file | job |
|---|---|
| `targets.py` | which submodules are exported, and at which call of the forward (so at which shapes) |
| `hooks.py` | the real inputs of each target call, taken from one real forward with module hooks |
| `modules.py` | what `torch.export` is given for a recorded call: a module (or a decode layer with its cache) |
| `moe.py` | the remedy for a MoE layer `torch.export` refuses: routing fixed to the one the real forward took |
| `program.py` | `torch.export` of one call, to two graphs: the export IR and core ATen |
| `flops.py` | FLOPs on an exported graph, from torch's own formulas: one record per op node |
| `optable.py` | op tables: the ops of one exported graph, one row per aten op and input signature (CSV) |
| `flops_check.py` | FLOPs of one exported call three ways (exported, FlopCounterMode, analytic), which must agree |
| `opcount_check.py` | op counts of one exported call against TorchLens, and the ops export decomposes |
| `onnx_files.py` | ONNX files of exported calls, each checked twice (ONNX checker, ONNX Runtime) |
| `summary.py` | `export/summary.json`: what the export stage did for each submodule, and its loader |
| `stage.py` | the export stage: plan, record, export, tabulate, cross-check; writes `<out>/export/` |
| `export_config.py` | the `export` config section: torch.export of submodules (`./dev export`, `trace.export=true`) |
| `run_files.py` | this package's run files: `export/summary.json` |
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

"""Analytic costs: pure per-op cost functions (`costs`), the cost registry keyed by module class
(`registry`, each model family's classes under its own namespace), named cost trees and `StageCost`
(`stage`), and the artifact of an analytic model's costs, costs.json (`costs_file`). The families compose
their stages from these (the DeepSeek-OCR compositions: `dsocr.analytic`,
`dsocr2.analytic`, on `deepseek_ocr_shared.analytic`); never runs torch. How long the costs
take on a device (hardware, the ideal / kernel / eager levels, the levels at batch B, their convention) is the
time model, the subpackage `analytic.time`; serving and sizing (`serving*`, `memory_model`, `moe_batch`, `sizing`)
and roofline.json (`roofline_artifact`, `roofline_table`) build on it.

Its data in the run: `run_files.py` (costs.json, roofline.json, serving.json, curve.csv), `hardware_config.py` and
`serve_config.py` (the `hardware`, `serve` and `size` config sections), `analytic_summary.py` (summary.json's
`analytic`).
"""

from llm_perf_opt.analytic.costs import ELEMENTWISE_FLOPS, LayerCost, UnsupportedLayerError
from llm_perf_opt.analytic.costs_file import (
    COSTS_FILE,
    COSTS_READS,
    COSTS_SCHEMA,
    COSTS_SCHEMA_VERSION,
    STAGES,
    Costs,
    StageCosts,
    load_costs,
    write_costs,
)
from llm_perf_opt.analytic.dtypes import dtype_bytes
from llm_perf_opt.analytic.registry import (
    collect_costs,
    layer_cost,
    module_cost,
    register_children,
    register_cost,
    supported_modules,
    unsupported,
)
from llm_perf_opt.analytic.stage import CostNode, StageCost

__all__ = [
    "COSTS_FILE",
    "COSTS_READS",
    "COSTS_SCHEMA",
    "COSTS_SCHEMA_VERSION",
    "CostNode",
    "Costs",
    "ELEMENTWISE_FLOPS",
    "LayerCost",
    "STAGES",
    "StageCost",
    "StageCosts",
    "UnsupportedLayerError",
    "collect_costs",
    "dtype_bytes",
    "layer_cost",
    "load_costs",
    "module_cost",
    "register_children",
    "register_cost",
    "supported_modules",
    "unsupported",
    "write_costs",
]

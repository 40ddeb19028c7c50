"""Analytic costs: pure per-op cost functions (`costs`), the cost registry keyed by module class
(`registry`, each model family's classes under its own namespace), named cost trees and `StageCost`
(`stage`), and the artifact of an analytic model's costs, costs.json (`costs_file`). The families compose
their stages from these (the DeepSeek-OCR composition is `deepseek_ocr_shared.analytic`); never runs torch."""

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

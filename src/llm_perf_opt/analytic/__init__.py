"""Analytic costs: pure per-layer cost functions (`costs`), named cost trees and `StageCost` (`stage`),
and the DeepSeek-OCR composition (`dsocr`). Needs only `ModelSpec` + `ViewLayout`; never runs torch."""
from llm_perf_opt.analytic.costs import (
    ELEMENTWISE_FLOPS,
    LayerCost,
    UnsupportedLayerError,
    collect_costs,
    cost_function,
    layer_cost,
    register_cost,
    supported_kinds,
)
from llm_perf_opt.analytic.dsocr import (
    STAGES,
    DeepseekOCRAnalyticModel,
    VisionPass,
    analytic_costs,
    costs_dict,
    default_seq_len,
    dtype_bytes,
    vision_passes,
)
from llm_perf_opt.analytic.stage import CostNode, StageCost

COSTS_SCHEMA = "costs"
COSTS_SCHEMA_VERSION = 1

__all__ = [
    "COSTS_SCHEMA", "COSTS_SCHEMA_VERSION", "CostNode", "DeepseekOCRAnalyticModel", "ELEMENTWISE_FLOPS",
    "LayerCost", "STAGES", "StageCost", "UnsupportedLayerError", "VisionPass",
    "analytic_costs", "collect_costs", "cost_function", "costs_dict", "default_seq_len", "dtype_bytes",
    "layer_cost", "register_cost", "supported_kinds", "vision_passes",
]

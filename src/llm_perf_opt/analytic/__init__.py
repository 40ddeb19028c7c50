"""Analytic costs: pure per-op cost functions (`costs`), the cost registry keyed by module class
(`registry`, with the DeepSeek-OCR classes in `dsocr_modules`), named cost trees and `StageCost`
(`stage`), and the DeepSeek-OCR stage composition (`dsocr`). Needs only `ModelSpec` + `ViewLayout`;
never runs torch."""
from llm_perf_opt.analytic.costs import ELEMENTWISE_FLOPS, LayerCost, UnsupportedLayerError
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

COSTS_SCHEMA = "costs"
COSTS_SCHEMA_VERSION = 1

__all__ = [
    "COSTS_SCHEMA", "COSTS_SCHEMA_VERSION", "CostNode", "DeepseekOCRAnalyticModel", "ELEMENTWISE_FLOPS",
    "LayerCost", "STAGES", "StageCost", "UnsupportedLayerError", "VisionPass", "analytic_costs", "collect_costs",
    "costs_dict", "default_seq_len", "dtype_bytes", "layer_cost", "module_cost", "register_children",
    "register_cost", "supported_modules", "unsupported", "vision_passes",
]

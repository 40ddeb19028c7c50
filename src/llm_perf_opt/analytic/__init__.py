"""Analytic costs: pure per-op cost functions (`costs`), the cost registry keyed by module class
(`registry`, with the DeepSeek-OCR classes in `dsocr_modules`), named cost trees and `StageCost`
(`stage`), the DeepSeek-OCR stage composition (`dsocr`) and its artifact, costs.json (`costs_file`). Needs only `ModelSpec` + `ViewLayout`;
never runs torch."""
from llm_perf_opt.analytic.costs import ELEMENTWISE_FLOPS, LayerCost, UnsupportedLayerError
from llm_perf_opt.analytic.costs_file import (
    COSTS_FILE,
    COSTS_READS,
    COSTS_SCHEMA,
    COSTS_SCHEMA_VERSION,
    Costs,
    StageCosts,
    load_costs,
    write_costs,
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
    "COSTS_FILE", "COSTS_READS", "COSTS_SCHEMA", "COSTS_SCHEMA_VERSION", "CostNode", "Costs",
    "DeepseekOCRAnalyticModel", "ELEMENTWISE_FLOPS", "LayerCost", "STAGES", "StageCost", "StageCosts",
    "UnsupportedLayerError", "VisionPass", "analytic_costs", "collect_costs", "costs_dict", "default_seq_len",
    "dtype_bytes", "layer_cost", "load_costs", "module_cost", "register_children", "register_cost",
    "supported_modules", "unsupported", "vision_passes", "write_costs",
]

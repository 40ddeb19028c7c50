"""Analytic costs: pure cost formulas of shapes (no torch runs here), the cost registry keyed by module class (each
model family's classes under its own namespace), `StageCost` trees, and the serving, sizing and roofline figures
built on the time model. Generic: the families compose their stages from these (the DeepSeek-OCR compositions:
`dsocr.analytic`, `dsocr2.analytic`, on `deepseek_ocr_shared.analytic`); no module here imports a family.

| file | job |
|---|---|
| `costs.py` | pure per-op cost functions: shapes in, `LayerCost` out (exact integers); the FLOP and byte conventions |
| `registry.py` | the cost registry: a module class name -> the shape-only formula of one call (`module_cost`) |
| `stage.py` | `CostNode` trees named by module path, and `StageCost`: the cost of one stage, per part |
| `kernels_taken_off.py` | a stage with some paths' kernels taken off: the routed experts a run's routing left idle |
| `dtypes.py` | element sizes of the dtypes the analytic models count bytes in |
| `execution.py` | `Execution`: where a forward runs (device, CUDA autocast, GPU); the SDPA backend it gets and makes |
| `autocast.py` | CUDA autocast's op policy: which op casts which inputs to 16 bits or float32, what it returns |
| `costs_file.py` | `costs.json`: the analytic costs of one job, its schema, typed view (`Costs`) and loader |
| `artifact_fields.py` | reading the analytic and measure artifacts: older schema names, an unknown one refused |
| `table.py` | a short console table of the analytic costs: one row per stage and part |
| `roofline_artifact.py` | `roofline.json`: the predictions of one page on one roof, schema-versioned, and its loader |
| `roofline_table.py` | a console table of roofline predictions: the roof and its sources, stages, top-level parts |
| `serving_model.py` | `ServingModel`: everything the serving math needs about one model on one page shape |
| `moe_batch.py` | MoE at batch: the routed experts a batch of tokens touches, the expert weight bytes a step reads |
| `memory_model.py` | device memory of a serving replica at batch B: what it holds, whether it fits, the largest batch |
| `serving.py` | serving figures on one device: TTFT, TPOT, tokens/s, pages/day at batch B, the curve as B grows |
| `sizing.py` | the device a set of serving targets needs, and how many of a named device a daily volume needs |
| `serving_measured.py` | a serving curve measured with plain forwards beside `hf_eager`'s prediction, the ratios |
| `serving_run.py` | what `analyze hardware=...`, `size` and the serving stage share: the figures, `serving.json` |
| `serving_file.py` | `serving.json`: the serving figures of one run, typed, and its loader |
| `serving_text.py` | the printed serving and sizing figures: plain text lines |
| `hardware_config.py` | the `hardware` config section: a roof for predictions (datasheet figures or a measured roof) |
| `serve_config.py` | the `serve` and `size` config sections: serving figures and `./dev size` targets |
| `analytic_summary.py` | summary.json's `analytic` section: totals per stage, prefill matmul FLOPs per part |
| `run_files.py` | this package's run files: `costs.json`, `roofline.json`, `serving.json`, `curve.csv` |
| `serve_engines/` | the serving engines (ideal, hf_eager, cuda_graphs, vllm): level, batching, memory, assumptions |
| `time/` | the time model: how long the costs take on a device (hardware; the ideal / kernel / eager levels) |
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

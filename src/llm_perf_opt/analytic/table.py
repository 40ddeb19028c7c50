"""A short console table of the analytic costs: one row per stage and top-level part."""
from __future__ import annotations

from llm_perf_opt.analytic.dsocr import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr import parts as P


def _g(value: int) -> str:
    return f"{value / 1e9:12,.2f}"


def render_costs_table(model: DeepseekOCRAnalyticModel) -> str:
    """GFLOPs (matmul + other), weight, I/O and activation bytes in GB, per stage and part."""
    header = f"{'stage / part':22s} {'GFLOP':>12s} {'matmul':>12s} {'weights GB':>12s} {'I/O GB':>12s} {'activ. GB':>12s}"
    lines = [header, "-" * len(header)]
    for name, stage in model.stages().items():
        t = stage.total
        label = f"{name} (ctx {model.context_len})" if name == "decode" else name
        lines.append(f"{label:22s} {_g(t.flops)} {_g(t.flops_matmul)} {_g(t.weight_bytes)} {_g(t.io_bytes)} "
                     f"{_g(t.activation_bytes)}")
        summary = stage.summary()
        for part in (p.alias for p in P.PARTS):
            if part in summary:
                c = summary[part]
                lines.append(f"  {part:20s} {_g(c.flops)} {_g(c.flops_matmul)} {_g(c.weight_bytes)} "
                             f"{_g(c.io_bytes)} {_g(c.activation_bytes)}")
    return "\n".join(lines)

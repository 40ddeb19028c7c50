"""A short console table of the analytic costs: one row per stage and part (the family's parts vocabulary)."""

from __future__ import annotations

from typing import Any

from llm_perf_opt import units
from llm_perf_opt.analytic.costs import LayerCost

_COLUMNS = ("FLOP", "matmul FLOP", "weights", "I/O", "activations")


def _row(label: str, c: LayerCost) -> str:
    cells = (
        units.flops(c.flops),
        units.flops(c.flops_matmul),
        units.nbytes(c.weight_bytes),
        units.nbytes(c.io_bytes),
        units.nbytes(c.activation_bytes),
    )
    return f"{label:22s} " + " ".join(f"{cell:>12s}" for cell in cells)


def render_costs_table(model: Any) -> str:
    """FLOPs (all, matmul), weight, I/O and activation bytes per stage and part."""
    header = f"{'stage / part':22s} " + " ".join(f"{name:>12s}" for name in _COLUMNS)
    lines = [header, "-" * len(header)]
    for name, stage in model.stages().items():
        lines.append(_row(f"{name} (ctx {model.context_len})" if name == "decode" else name, stage.total))
        summary = stage.summary()
        for part in model.vocabulary.parts:
            if part.alias in summary:
                lines.append(_row(f"  {part.alias}", summary[part.alias]))
    return "\n".join(lines)

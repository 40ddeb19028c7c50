"""Kernel counts of the analytic model against the ops a TorchLens capture recorded, per forward pass.

The capture (`callgraph.capture`) keeps `op_counts_by_pass`: pass 1 is the prefill (which also holds the vision
stage), pass k + 1 decode step k (context seq_len + k - 1). Each analytic stage is checked against its pass with
`measure.agreement.kernel_rows` (exact integers: a row passes only when the counts are equal).
"""
from __future__ import annotations

from typing import Any

from llm_perf_opt.measure.agreement import KernelRow, kernel_rows


def dsocr_kernel_rows(analytic: Any, cg: Any, parts: str = "all") -> list[KernelRow]:
    """Rows for the vision and prefill stages (pass 1) and every decode step the capture holds."""
    by_pass = cg.op_counts_by_pass or ({"1": cg.op_counts} if cg.op_counts else {})
    if not by_pass:
        return []
    rows: list[KernelRow] = []
    first = by_pass.get("1", {})
    # with decode steps the capture runs a greedy program: one argmax per pass outside the model
    loop = 1 if len(by_pass) > 1 else 0
    rows += kernel_rows(analytic.vision(), first, parts=parts)
    rows += kernel_rows(analytic.prefill(), first, parts=parts, program_kernels=loop)
    for key in sorted((k for k in by_pass if k != "1"), key=int):
        step = int(key) - 1
        rows += kernel_rows(analytic.decode(analytic.seq_len + step - 1), by_pass[key], step=step, parts=parts,
                            program_kernels=loop)
    return rows

"""Kernel counts of the analytic model against the ops a TorchLens capture recorded, per forward pass.

The capture (`callgraph.capture`) keeps `op_counts_by_pass`: pass 1 is the prefill (which also holds the vision
stage), pass k + 1 decode step k (context seq_len + k - 1). Each analytic stage is checked against its pass with
`measure.agreement.kernel_rows` (exact integers: a row passes only when the counts are equal).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Optional

from llm_perf_opt.measure.agreement import KernelRow, kernel_rows


def _routed(rows: list[KernelRow], unrouted: Mapping[str, int]) -> list[KernelRow]:
    """`rows` with the kernels of the experts the routing left empty taken off every row whose subtree holds
    them (`unrouted`: experts container path -> kernels; the stage total "" holds every one)."""
    if not unrouted:
        return rows
    out = []
    for r in rows:
        off = sum(k for path, k in unrouted.items() if r.part == "" or path == r.part or path.startswith(r.part + "."))
        out.append(replace(r, analytic=r.analytic - off, unrouted=off) if off else r)
    return out


def dsocr_kernel_rows(
    analytic: Any, cg: Any, parts: str = "all", unrouted: Optional[Mapping[int, Mapping[str, int]]] = None
) -> list[KernelRow]:
    """Rows for the vision and prefill stages (pass 1) and every decode step the capture holds. `unrouted`:
    {step (0: the prefill): {experts container path: kernels}} the analytic list launches for experts the
    capture's routing sent no token (the family's `unrouted_expert_kernels`), taken off those rows."""
    unrouted = unrouted or {}
    by_pass = cg.op_counts_by_pass or ({"1": cg.op_counts} if cg.op_counts else {})
    if not by_pass:
        return []
    rows: list[KernelRow] = []
    first = by_pass.get("1", {})
    # with decode steps the capture runs a greedy program: one argmax per pass outside the model; at batch > 1
    # it also hands the next step two tensors it builds outside the capture (the attention mask grown by a column,
    # the position ids), which TorchLens records as two opaque ops at the root of the pass before that step
    loop = 1 if len(by_pass) > 1 else 0
    last = max((int(k) for k in by_pass), default=1)
    handed = 2 if loop and getattr(analytic, "batch", 1) > 1 else 0

    def program(pass_: int) -> int:
        return loop + (handed if pass_ < last else 0)

    rows += kernel_rows(analytic.vision(), first, parts=parts)
    rows += _routed(
        kernel_rows(analytic.prefill(), first, parts=parts, program_kernels=program(1)), unrouted.get(0, {})
    )
    for key in sorted((k for k in by_pass if k != "1"), key=int):
        step = int(key) - 1
        rows += _routed(
            kernel_rows(
                analytic.decode(analytic.seq_len + step - 1),
                by_pass[key],
                step=step,
                parts=parts,
                program_kernels=program(int(key)),
            ),
            unrouted.get(step, {}),
        )
    return rows

"""Replay a recorded run's checks: its verification rows (kernel counts and activation bytes against TorchLens) with
the analytic side recomputed by today's cost formulas, the measured side as the run recorded it.

The analytic model is the one of the run's own configuration (built by the caller: `prepare.builders.
analytic_model_of_run`); each recorded row is recomputed exactly as the trace job computed it:

* kernel counts (`replay_kernel_rows`): the row's stage (vision, the prefill, decode step k at context
  seq_len + k - 1), its part's analytic kernel count of ops (`agreement.analytic_kernel_count`), less the routed
  experts' kernels the recorded routing left without tokens (the row's `unrouted`, as recorded); exact;
* activation bytes (`replay_activation_rows`): the part's analytic activation bytes summed over the captured program
  (the prefill and the run's decode steps, `agreement.captured_stages`, plus the greedy loop's argmax for the whole
  forward) against the recorded materialised op outputs plus the LayerNorm statistics; within `rtol`.
"""

from __future__ import annotations

from typing import Any, Sequence

from llm_perf_opt.analytic.stage import StageCost
from llm_perf_opt.measure.agreement import (
    DEFAULT_RTOL,
    ActivationRow,
    KernelRow,
    activation_row,
    analytic_kernel_count,
    captured_stages,
    program_bytes,
    stages_activation_bytes,
)


def _stage_of(analytic: Any, stage: str, step: int | None) -> StageCost:
    if stage == "vision":
        return analytic.vision()
    if stage == "prefill":
        return analytic.prefill()
    if stage == "decode" and step is not None and step >= 1:
        return analytic.decode(analytic.seq_len + step - 1)
    raise ValueError(f"a recorded kernel row of stage {stage!r}, step {step!r}: no analytic stage")


def replay_kernel_rows(analytic: Any, recorded: Sequence[KernelRow]) -> list[KernelRow]:
    """Each recorded kernel-count row, its analytic count recomputed (its `unrouted` taken off, as recorded)."""
    out = []
    for r in recorded:
        count = analytic_kernel_count(_stage_of(analytic, r.stage, r.step), r.part) - r.unrouted
        out.append(KernelRow(r.stage, r.part, count, r.measured, r.step, r.unrouted))
    return out


def recorded_unrouted(recorded: Sequence[KernelRow]) -> dict[int, dict[str, int]]:
    """{routing step: {experts path: kernels}} of the routed experts a run's routing left without tokens, from its
    recorded kernel-count rows (each experts path's `unrouted`: the prefill's rows are step 0, decode step k's k):
    what `levels_stage.stages_that_ran` takes off, so that a replayed run's time levels sum the kernels that ran,
    as the trace job's do from its `routing.json`. A recording without routing.json (2026-11-26) keeps it here."""
    out: dict[int, dict[str, int]] = {}
    for r in recorded:
        if r.unrouted and r.part.endswith(".experts") and r.stage in ("prefill", "decode"):
            out.setdefault(0 if r.stage == "prefill" else int(r.step or 1), {})[r.part] = r.unrouted
    return out


def replay_activation_rows(
    analytic: Any, recorded: Sequence[ActivationRow], decode_steps: int, rtol: float = DEFAULT_RTOL
) -> list[ActivationRow]:
    """Each recorded activation row, its analytic bytes recomputed over the captured program (`decode_steps`: the
    run's), against its recorded materialised bytes and LayerNorm statistics."""
    stages = captured_stages(analytic, decode_steps)
    loop = program_bytes(getattr(analytic, "batch", 1), decode_steps)
    return [
        activation_row(r.part, stages_activation_bytes(stages, r.part, loop), r.observed, r.families, r.unseen, rtol)
        for r in recorded
    ]

"""A stage with some module paths' kernels taken off: the kernels a run did not launch (`kernels_taken_off`).

The cost formulas count the kernels of the work a shape implies. One thing they cannot know is data-dependent:
the MoE layer's expert loop runs one MLP per expert that its gate sent any token, and the formula assumes uniform
routing (min(E, T x top_k) experts get tokens). A run whose routing is known (the trace job's `routing.json`, a
recorded run's kernel-count rows) launched fewer: the family says how many kernels per path did not run
(`Family.unrouted_expert_kernels`: {step: {experts path: kernels}}). The time levels of that run take them off
here, so that the kernel and eager levels sum the kernels that ran.

How: at each named path, the node's own kernels (the experts container carries its routed work as one aggregate of
identical per-expert MLPs, `Kernels.times(experts)`) are scaled by kept / listed per kernel key (rounded to whole
kernels), kept = listed - taken off. The remaining experts keep the formula's shape (its rows per expert under
uniform routing): the count changes, not the kernel shapes; FLOPs and bytes are untouched (the routed rows are the
same T x top_k whatever the routing). A path whose kernels are not all its nodes' own, or that lists fewer
kernels than are taken off, is refused (ValueError): nothing is silently clipped.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

from llm_perf_opt.analytic.costs import Kernels
from llm_perf_opt.analytic.stage import CostNode, StageCost


def _scaled(kernels: Kernels, keep: int, listed: int) -> Kernels:
    return Kernels({k: round(n * keep / listed) for k, n in kernels.counts.items() if round(n * keep / listed) > 0})


def _rebuild(node: CostNode, prefix: str, off: Mapping[str, tuple[int, int]]) -> CostNode:
    """`node` (at `prefix`) with the own kernels of every path in `off` ({path: (kept, listed)}) scaled; untouched
    subtrees are shared, as the stage shares identical blocks."""
    changed = False
    children = []
    for name, child in node.children:
        path = f"{prefix}.{name}" if prefix else name
        new = child
        if path in off:
            kept, listed = off[path]
            new = replace(child, own=replace(child.own, kernels=_scaled(child.own.kernels, kept, listed)))
        elif any(p.startswith(path + ".") for p in off):
            new = _rebuild(child, path, off)
        changed = changed or new is not child
        children.append((name, new))
    return replace(node, children=tuple(children)) if changed else node


def kernels_taken_off(stage: StageCost, taken_off: Mapping[str, int]) -> StageCost:
    """`stage` with `taken_off[path]` kernels fewer at each path (see the module docstring); the same stage when
    nothing is taken off."""
    off: dict[str, tuple[int, int]] = {}
    for path, n in taken_off.items():
        if n <= 0:
            continue
        nodes = [node for p, node in stage.root.walk() if p == path]
        listed = sum(node.total.kernels.count for node in nodes)
        own = sum(node.own.kernels.count for node in nodes)
        if own != listed or listed < n:
            raise ValueError(
                f"{stage.stage} {path}: {n} kernels to take off, the path lists {listed} ({own} its own): "
                "only a path's own kernels can be scaled"
            )
        off[path] = (listed - n, listed)
    if not off:
        return stage
    return replace(stage, root=_rebuild(stage.root, "", off))

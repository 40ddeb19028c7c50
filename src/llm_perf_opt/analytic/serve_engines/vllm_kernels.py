"""The kernel list a vLLM-like engine runs, computed from the same analytic costs as the model's own code.

The family gives the stage at batch B with SDPA attention (`ServingModel.stage_at(..., "vllm")`: one fused
attention kernel per call, no materialised score matrix, as flash attention runs it). `fused_stage` then rewrites
each unit's own kernels (a unit: a leaf module call, or a module's own work outside its children):

* GEMMs and convolutions stay as the formulas count them (the same shapes: a fused QKV or gate-up projection reads
  the same weights and does the same FLOPs; the rate is read at each product's own shape, kept);
* in a routed-experts unit (`BatchRules.routed`) every set of identical per-expert GEMMs becomes ONE grouped GEMM per
  projection (vLLM's fused MoE): the summed FLOPs (all B x T x k routed rows) and bytes in one launch, the bytes
  scaled to the experts touched in expectation (`MoEShape.touched_per_layer`; the census lists min(E, T x k)),
  at the rate of the per-expert product's shape;
* attention kernels stay (the fused attention's own calibrated curve);
* every other kernel of the unit (norms, activations, rotary, routing softmax / top-k, the MoE's token sort and
  scatter, casts) is fused into ONE elementwise kernel: the unit's FLOPs, and the bytes of the largest of those
  kernels (a fused chain reads its inputs and writes its result once);
* no host syncs (the MoE's `.cpu()` is gone: a captured graph needs none).
"""

from __future__ import annotations

from dataclasses import replace

from llm_perf_opt.analytic.costs import Kernels
from llm_perf_opt.analytic.serving_model import ServingModel
from llm_perf_opt.analytic.stage import CostNode, StageCost

KEPT = ("gemm", "conv", "attention")


def fused_kernels(kernels: Kernels, routed: bool, ratio: float = 1.0) -> Kernels:
    """One unit's kernels as the engine launches them (see the module docstring); `ratio`: touched / listed experts
    of a routed unit."""
    out: dict = {}
    flops, largest = 0, 0
    for (kind, m, f, b, o), n in kernels.counts.items():
        if kind in KEPT:
            if routed and kind != "attention":
                key = (kind, m, f * n, int(round(b * n * ratio)), o * n)
                out[key] = out.get(key, 0) + 1
            else:
                key = (kind, m, f, b, o)
                out[key] = out.get(key, 0) + n
        else:
            flops += f * n
            largest = max(largest, b)
    if largest or flops:
        key = ("elementwise", 0, flops, largest, 0)
        out[key] = out.get(key, 0) + 1
    return Kernels(out)


def fused_stage(stage: StageCost, model: ServingModel, tokens: float) -> StageCost:
    """`stage` with every unit's kernels fused (see the module docstring); `tokens`: routed tokens per MoE layer."""
    rules, moe = model.rules, model.moe
    ratio = 1.0
    if moe is not None:
        listed = min(moe.n_experts, tokens * moe.top_k)
        ratio = min(1.0, moe.touched_per_layer(tokens) / listed) if listed > 0 else 1.0
    done: dict[int, CostNode] = {}

    def rebuild(node: CostNode, path: str) -> CostNode:
        routed = bool(path) and rules is not None and rules.routed(path, node.module)
        key = id(node) if not routed else -id(node)
        hit = done.get(key)
        if hit is not None:
            return hit
        children = tuple((name, rebuild(child, f"{path}.{name}" if path else name)) for name, child in node.children)
        own = replace(node.own, kernels=fused_kernels(node.own.kernels, routed, ratio), syncs=0)
        new = replace(node, own=own, children=children)
        done[key] = new
        return new

    return replace(stage, root=rebuild(stage.root, ""))

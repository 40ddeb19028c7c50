"""The remedy for a MoE layer that `torch.export` refuses: routing fixed to the one the real forward took.

In inference DeepSeek-V2's `moe_infer` copies the tokens-per-expert counts to the host
(`.cpu().numpy()`) and loops in Python over the experts that received tokens: which experts run, and
on how many rows, depends on the values of the gate's output, which a static graph cannot express.

`fixed_routing(moe, loads)` replaces the MoE module's `forward` (on that instance, for the duration of
the block) with the same computation in which the per-expert token counts are the constants `loads`
recorded from the real forward: the gate runs, the (token, slot) pairs are sorted by expert id, each
expert with a non-zero count runs once on its slice, the results are put back in slot order, weighted
and summed, and the shared experts are added, as the vendor's code does. The graph is then static
and has exactly the FLOPs of that forward. One guard is added: the counts the graph computes from the
gate are compared with the recorded ones (`aten._assert_async`), so running the exported program on an
input that routes differently fails instead of silently mixing up experts.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

import torch
from torch import nn

from llm_perf_opt.errors import PipelineError

REMEDY_GUARD_OPS = ("new_tensor", "eq", "all", "_assert_async")  # what the guard adds to the MoE computation


class RemedyError(PipelineError):
    """The fixed-routing remedy does not apply to this module."""


def is_moe(module: nn.Module) -> bool:
    return all(hasattr(module, a) for a in ("gate", "experts")) and isinstance(module.experts, nn.ModuleList)


def _fixed_forward(moe: nn.Module, loads: Sequence[int], run_experts_by_load: Callable[..., torch.Tensor]):
    n_experts = len(moe.experts)
    loads = [int(n) for n in loads]
    shared = getattr(moe, "shared_experts", None)

    def forward(hidden_states: torch.Tensor) -> torch.Tensor:
        identity = hidden_states
        shape = hidden_states.shape
        topk_ids, topk_weight, _ = moe.gate(hidden_states)
        x = hidden_states.view(-1, shape[-1])
        k = topk_ids.shape[1]
        counts = topk_ids.new_zeros((topk_ids.shape[0], n_experts))
        counts.scatter_(1, topk_ids, 1)
        per_expert = counts.sum(dim=0)
        torch._assert_async(
            torch.eq(per_expert, per_expert.new_tensor(loads)).all(),
            "MoE routing differs from the recorded one this program was exported with",
        )
        order = topk_ids.view(-1).argsort()
        grouped = x[order // k]
        y = run_experts_by_load(moe.experts, grouped, loads, order, topk_weight).view(*shape)
        if shared is not None:
            y = y + shared(identity)
        return y

    return forward


@contextmanager
def fixed_routing(
    moe: nn.Module, loads: Sequence[int], run_experts: Callable[..., torch.Tensor]
) -> Iterator[nn.Module]:
    """While the block runs, `moe(x)` computes with the per-expert token counts fixed to `loads`; `run_experts`:
    the family's grouped expert loop (DeepSeek-OCR: `deepseek_ocr_shared.twin.decoder.run_experts_by_load`, via the
    family object)."""
    if not is_moe(moe):
        raise RemedyError(f"{type(moe).__name__} has no gate and experts: not a MoE module")
    if len(loads) != len(moe.experts):
        raise RemedyError(f"routing has {len(loads)} experts, the module {len(moe.experts)}")
    if any(e is None for e in moe.experts) or getattr(moe, "ep_size", 1) != 1:
        raise RemedyError("expert parallelism (ep_size > 1): experts of other ranks are not in this module")
    if sum(loads) == 0:
        raise RemedyError("the recorded routing sent no token to any expert")
    had = "forward" in vars(moe)
    previous = vars(moe).get("forward")
    moe.forward = _fixed_forward(moe, loads, run_experts)
    try:
        yield moe
    finally:
        if had:
            moe.forward = previous
        else:
            del moe.forward

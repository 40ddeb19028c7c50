"""DeepSeek-OCR 2's runtime checks, plugged into the generic grouping (`group_callgraph(checks=RUNTIME_CHECKS)`).

v1's checks (`dsocr.checks`) over v2's parts, against the events of `dsocr2.patches`:

* `vision_passes:<module>` for SAM, the encoder (`qwen2_model`) and the projector;
* `decoder_layers`, `decoder_layer_calls`, `decode_loop`, `moe_routing`: v1's as they are (the same decoder
  stack `model.layers`, the same `lm_head`, the same MoE gates);
* `block_loop:<loop>` for SAM's blocks (`for 12` at full size) and the encoder's layers
  (`qwen2_model.model.model.layers`, `for 24`).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from llm_perf_opt.callgraph.checks import Event, RuntimeCheck, events_of
from llm_perf_opt.callgraph.grouped import GroupedGraph
from llm_perf_opt.dsocr import checks as V1
from llm_perf_opt.dsocr2.parts import VISION_LOOPS, VISION_PATHS


def vision_passes(
    grouped: GroupedGraph, events: Sequence[Event], module_types: Mapping[str, str]
) -> list[dict[str, Any]]:
    """`vision_passes:<module>` for SAM, the encoder and the projector."""
    vis_events = events_of(events, "vision_inputs")
    passes = [0 if e.get("vision") is False else e.get("vision_passes") for e in vis_events]
    return [
        V1._vision_check(grouped, path, vis_events, passes, module_types)  # noqa: SLF001
        for path in VISION_PATHS
    ]


def block_loops(
    grouped: GroupedGraph, events: Sequence[Event], module_types: Mapping[str, str]
) -> list[dict[str, Any]]:
    """`block_loop:<loop>` for SAM's blocks and the encoder's layers."""
    loop_events = events_of(events, "block_loop")
    return [
        V1._loop_check(
            grouped,
            loop,
            [e for e in loop_events if e.get("loop") == loop],  # noqa: SLF001
            module_types,
        )
        for loop in VISION_LOOPS
    ]


RUNTIME_CHECKS: tuple[RuntimeCheck, ...] = (
    vision_passes,
    V1.decoder_stack,
    block_loops,
    V1.decode_loop,
    V1.moe_routing,
)

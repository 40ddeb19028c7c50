"""DeepSeek-OCR v1's runtime checks, plugged into the generic grouping (`group_callgraph(checks=RUNTIME_CHECKS)`):
the checks both generations run (`deepseek_ocr_shared.checks`) over v1's vision parts and loops:

* `vision_passes:<module>` for SAM, CLIP and the projector;
* `decoder_layers`, `decoder_layer_calls`, `decode_loop`, `moe_routing`: the shared ones as they are;
* `block_loop:<loop>` for SAM's blocks and CLIP's layers (the `sam_blocks` and `clip_layers` patches).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from llm_perf_opt.callgraph.checks import Event, RuntimeCheck, events_of
from llm_perf_opt.callgraph.grouped import GroupedGraph
from llm_perf_opt.deepseek_ocr_shared.checks import decode_loop, decoder_stack, loop_check, moe_routing, vision_check
from llm_perf_opt.deepseek_ocr_shared.parts import SAM_BLOCKS
from llm_perf_opt.dsocr import parts

VISION_LOOPS = (SAM_BLOCKS, "model.vision_model.transformer.layers")


def vision_passes(
    grouped: GroupedGraph, events: Sequence[Event], module_types: Mapping[str, str]
) -> list[dict[str, Any]]:
    """`vision_passes:<module>` for every vision part: its calls against the logged vision passes."""
    vis_events = events_of(events, "vision_inputs")
    passes = [0 if e.get("vision") is False else e.get("vision_passes") for e in vis_events]
    return [vision_check(grouped, path, vis_events, passes, module_types) for path in parts.VISION_PATHS]


def block_loops(
    grouped: GroupedGraph, events: Sequence[Event], module_types: Mapping[str, str]
) -> list[dict[str, Any]]:
    """`block_loop:<loop>`: the loop's `for N` groups against the length the forward looped over."""
    loop_events = events_of(events, "block_loop")
    return [
        loop_check(grouped, loop, [e for e in loop_events if e.get("loop") == loop], module_types)
        for loop in VISION_LOOPS
    ]


RUNTIME_CHECKS: tuple[RuntimeCheck, ...] = (vision_passes, decoder_stack, block_loops, decode_loop, moe_routing)

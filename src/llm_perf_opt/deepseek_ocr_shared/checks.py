"""The runtime checks both DeepSeek-OCR generations run, plugged into the generic grouping through each family's
`checks.RUNTIME_CHECKS` (`dsocr.checks`, `dsocr2.checks`, which name their vision parts and loops).

They compare the grouped graph with the events the `vision_inputs` and `llm_stack` patches log
(`deepseek_ocr_shared.patches`), for the parts of `deepseek_ocr_shared.parts` and the family's vision parts:

* `vision_passes:<module>` for each vision part (`vision_check`): the module's calls in the graph against
  `vision_passes` summed over the `vision_inputs` events (an event with `"vision": false`, a decode step
  or a text-only call, counts as zero passes);
* `decoder_layers`: the distinct layers in the decoder stack's groups (`model.layers`, `for N` summed)
  against `llm_stack.num_layers`;
* `decoder_layer_calls`: the calls of each decoder layer against the number of `llm_stack` events (one
  per run of the stack);
* `block_loop:<loop>` for each vision loop (`loop_check`; v1: SAM's blocks and CLIP's layers): the distinct
  members of the loop's `for N` groups (one node when the blocks differ only in parameters, as SAM's windowed
  and global blocks do) against the length of the list the loop runs over (`block_loop` events of the loop
  patches, v1's `sam_blocks` and `clip_layers`).

With decode steps (a prefill and N greedy steps in one capture, `model_runtime.decode`), also:

* `decode_loop`: the `lm_head` calls in the graph against the `llm_stack` events (1 + N passes), and the
  events themselves: after the prefill each pass feeds one token and finds the cache grown by what the
  previous pass fed (past length = prompt + step - 1); vision ran in the prefill only.

With the `routing` patch (MoE gates), also:

* `moe_routing`: per MoE layer, the experts the graph called against the experts the gate's top-k hit
  over all steps (`routing` events, `model_runtime.routing`). The expert node is labelled from that record
  (`annotation`: its bracket, experts hit over the steps, and a line with the prefill and per-step
  counts), not from its own count.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Mapping, Sequence

from llm_perf_opt.callgraph.checks import (
    STATUS_MISMATCH,
    STATUS_NOT_CHECKED,
    STATUS_OK,
    Event,
    check_result,
    events_of,
)
from llm_perf_opt.callgraph.grouped import GroupedGraph, GroupNode
from llm_perf_opt.deepseek_ocr_shared.parts import DECODER_STACK, LM_HEAD, decoder_layer_index


def _short(path: str) -> str:
    return path.rpartition(".")[2]


# ---------------------------------------------------------------------------------------------- vision
def vision_check(
    grouped: GroupedGraph, path: str, vis_events: Sequence[Event], passes: list[Any], module_types: Mapping[str, str]
) -> dict[str, Any]:
    name = _short(path)
    check_name = f"vision_passes:{name}"
    nodes = [n for n in grouped.nodes if n.members and all(m == path for m in n.members)]
    if not nodes and path not in module_types:
        return check_result(check_name, STATUS_NOT_CHECKED, None, None, f"no module named '{name}' in the graph")
    observed = sum(n.calls for n in nodes)
    found = dict(patterns=[n.pattern for n in nodes], parfor=sorted({n.parfor for n in nodes if n.parfor is not None}))
    if not vis_events:
        return check_result(
            check_name, STATUS_NOT_CHECKED, None, observed, "no 'vision_inputs' event in the runtime log", **found
        )
    if any(not isinstance(p, int) for p in passes):
        return check_result(
            check_name,
            STATUS_NOT_CHECKED,
            None,
            observed,
            "a 'vision_inputs' event lacks an integer 'vision_passes'",
            **found,
        )
    expected = sum(passes)
    return check_result(
        check_name,
        STATUS_OK if expected == observed else STATUS_MISMATCH,
        expected,
        observed,
        f"calls of {name} in the graph vs vision_passes summed over {len(vis_events)} vision_inputs event(s)",
        **found,
    )


# ---------------------------------------------------------------------------------------------- decoder
def decoder_stack(
    grouped: GroupedGraph, events: Sequence[Event], module_types: Mapping[str, str]
) -> list[dict[str, Any]]:
    """`decoder_layers` and `decoder_layer_calls` against the `llm_stack` events."""
    stack_nodes = decoder_stack_nodes(grouped)
    if not stack_nodes:
        return [
            check_result("decoder_layers", STATUS_NOT_CHECKED, None, None, f"no called stack in '{DECODER_STACK}'"),
            check_result("decoder_layer_calls", STATUS_NOT_CHECKED, None, None, "no decoder stack found"),
        ]
    llm_events = events_of(events, "llm_stack")
    return [_layers_check(stack_nodes, llm_events), _layer_calls_check(stack_nodes, llm_events)]


def _layers_check(stack_nodes: list[GroupNode], llm_events: Sequence[Event]) -> dict[str, Any]:
    observed = len(OrderedDict.fromkeys(m for n in stack_nodes for m in n.members))
    groups = [{"pattern": n.pattern, "class_name": n.class_name, "for_n": n.for_n} for n in stack_nodes]
    if not llm_events:
        return check_result(
            "decoder_layers",
            STATUS_NOT_CHECKED,
            None,
            observed,
            "no 'llm_stack' event in the runtime log",
            groups=groups,
        )
    nums = sorted({e.get("num_layers") for e in llm_events if isinstance(e.get("num_layers"), int)})
    if not nums:
        return check_result(
            "decoder_layers",
            STATUS_NOT_CHECKED,
            None,
            observed,
            "'llm_stack' events lack an integer 'num_layers'",
            groups=groups,
        )
    return check_result(
        "decoder_layers",
        STATUS_OK if nums == [observed] else STATUS_MISMATCH,
        nums[0] if len(nums) == 1 else nums,
        observed,
        "distinct decoder layers in the stack groups (for N summed) vs llm_stack.num_layers",
        groups=groups,
    )


def _layer_calls_check(stack_nodes: list[GroupNode], llm_events: Sequence[Event]) -> dict[str, Any]:
    per_layer_calls = sorted({c for n in stack_nodes for c in _per_member_calls(n)})
    if not llm_events:
        return check_result(
            "decoder_layer_calls", STATUS_NOT_CHECKED, None, per_layer_calls, "no 'llm_stack' event in the runtime log"
        )
    expected = len(llm_events)
    observed: Any = per_layer_calls[0] if len(per_layer_calls) == 1 else per_layer_calls
    return check_result(
        "decoder_layer_calls",
        STATUS_OK if per_layer_calls == [expected] else STATUS_MISMATCH,
        expected,
        observed,
        "calls of each decoder layer vs the number of llm_stack events (one per stack run)",
    )


def _per_member_calls(node: GroupNode) -> list[int]:
    return list(node.member_calls) or ([node.calls] if len(node.members) == 1 else [])


def decoder_stack_nodes(grouped: GroupedGraph) -> list[GroupNode]:
    """The groups of the decoder layers `model.layers.<i>`: the stack groups (`layers.*`) and the
    singletons of the family (a lone dense layer 0 has a literal template), in node order."""
    layer_nodes = [
        n
        for n in grouped.nodes
        if n.members
        and all(decoder_layer_index(m) is not None for m in n.members)
        and (n.template.endswith("*") or len(n.members) == 1)
    ]
    stacks = [n for n in layer_nodes if n.template.endswith("*")]
    if not stacks:
        return []
    parent_ids = {n.parent for n in stacks}
    return [n for n in layer_nodes if n in stacks or n.parent in parent_ids]


# ---------------------------------------------------------------------------------------------- decode loop
def decode_loop(
    grouped: GroupedGraph, events: Sequence[Event], module_types: Mapping[str, str]
) -> list[dict[str, Any]]:
    """`decode_loop` when the log holds decode steps (none for a prefill-only forward)."""
    llm_events = events_of(events, "llm_stack")
    if len(llm_events) < 2 and not events_of(events, "decode_step"):
        return []
    passes = len(llm_events)
    past = [e.get("past_len") for e in llm_events]
    fed = [e.get("seq_len") for e in llm_events]
    expected = {
        "passes": passes,
        "past_len": [fed[0] + k - 1 if k and isinstance(fed[0], int) else 0 for k in range(passes)],
        "new_tokens": [fed[0]] + [1] * (passes - 1),
    }
    problems = []
    if past != expected["past_len"] or fed != expected["new_tokens"]:
        problems.append("llm_stack events do not chain (past length = prompt + step - 1, one new token per step)")
    vision = [e.get("vision") for e in events_of(events, "vision_inputs")]
    if any(vision[1:]):
        problems.append("the vision branch ran in a decode step")
    head = [n for n in grouped.nodes if n.members == [LM_HEAD.path]]
    observed = {"passes": sum(n.calls for n in head) if head else None, "past_len": past, "new_tokens": fed}
    if observed["passes"] != passes:
        problems.append(f"lm_head called {observed['passes']} times for {passes} llm_stack events")
    detail = (
        "lm_head calls vs llm_stack events (prefill + decode steps); past length and new tokens per step from the log"
    )
    return [
        check_result(
            "decode_loop",
            STATUS_MISMATCH if problems else STATUS_OK,
            expected,
            observed,
            detail + ("; " + "; ".join(problems) if problems else ""),
        )
    ]


# ---------------------------------------------------------------------------------------------- routing
def moe_routing(
    grouped: GroupedGraph, events: Sequence[Event], module_types: Mapping[str, str]
) -> list[dict[str, Any]]:
    """`moe_routing` when the log holds `routing` events; labels the expert nodes from that record."""
    from llm_perf_opt.errors import ArtifactError
    from llm_perf_opt.model_runtime import routing

    if not events_of(events, "routing"):
        return []
    try:
        record = routing.RoutingRecord.from_events(events)
    except ArtifactError as exc:
        return [check_result("moe_routing", STATUS_MISMATCH, None, None, f"routing events unusable: {exc}")]
    called: dict[int, set[int]] = {}
    nodes = []
    for n in grouped.nodes:
        found = [_expert_of(m) for m in n.members]
        if n.members and all(f is not None for f in found) and n.template.endswith("*"):
            nodes.append((n, sorted({layer for layer, _ in found})))  # type: ignore[misc]
            for layer, expert in found:  # type: ignore[misc]
                called.setdefault(layer, set()).add(expert)
    expected = {str(i): len(routing.hit_over_steps(record, i)) for i in record.layers}
    observed = {str(i): len(called.get(i, ())) for i in record.layers}
    same = all(routing.hit_over_steps(record, i) == called.get(i, set()) for i in record.layers)
    for node, layers in nodes:
        node.annotation = {
            k: v
            for k, v in (("bracket", routing.bracket(record, layers)), ("line", routing.label(record, layers)))
            if v
        }
    return [
        check_result(
            "moe_routing",
            STATUS_OK if same else STATUS_MISMATCH,
            expected,
            observed,
            "experts called in the graph vs experts the gates' top-k hit over all steps, per MoE "
            f"layer ({record.note})",
            steps=len(record.steps),
        )
    ]


def _expert_of(address: str) -> tuple[int, int] | None:
    """(layer, expert) for `model.layers.<i>.mlp.experts.<j>`, else None."""
    head, _, expert = address.rpartition(".experts.")
    if not expert.isdigit() or not head.endswith(".mlp"):
        return None
    layer = decoder_layer_index(head[: -len(".mlp")])
    return None if layer is None else (layer, int(expert))


# ---------------------------------------------------------------------------------------------- block loops
def loop_check(
    grouped: GroupedGraph, loop: str, loop_events: Sequence[Event], module_types: Mapping[str, str]
) -> dict[str, Any]:
    name = f"block_loop:{loop.removeprefix('model.')}"
    prefix = loop + "."
    nodes = [
        n
        for n in grouped.nodes
        if n.members
        and n.template.endswith("*")
        and all(m.startswith(prefix) and m[len(prefix) :].isdigit() for m in n.members)
    ]
    observed = len(OrderedDict.fromkeys(m for n in nodes for m in n.members)) if nodes else None
    found = dict(
        groups=[
            {"pattern": n.pattern, "for_n": n.for_n, "variants": [f"{v.label} x{len(v.members)}" for v in n.variants]}
            for n in nodes
        ]
    )
    if not nodes and loop not in module_types:
        return check_result(name, STATUS_NOT_CHECKED, None, None, f"no module {loop} in the graph", **found)
    lengths = sorted({e.get("length") for e in loop_events if isinstance(e.get("length"), int)})
    if not lengths:
        return check_result(
            name, STATUS_NOT_CHECKED, None, observed, f"no 'block_loop' event for {loop} in the runtime log", **found
        )
    expected = lengths[0] if len(lengths) == 1 else lengths
    ok = lengths == [observed] and len(nodes) == 1
    return check_result(
        name,
        STATUS_OK if ok else STATUS_MISMATCH,
        expected,
        observed,
        f"distinct members of the {loop} stack ({len(nodes)} group(s), one expected) vs the length "
        f"of the list its forward loops over ({len(loop_events)} block_loop event(s))",
        **found,
    )

"""Option C grouping on small hand-built graphs and tiny real modules: for N, parfor N, splits, checks."""

from __future__ import annotations

import json

import pytest
import torch
from callgraph_helpers import hook_capture, make_graph
from torch import nn

from llm_perf_opt.callgraph.checks import check_result
from llm_perf_opt.callgraph.grouped import GROUPED_SCHEMA, compact_ranges, load_grouped_json
from llm_perf_opt.callgraph.grouping import group_callgraph, pattern_of, summarize_parfor_edges, summarize_stacks
from llm_perf_opt.dsocr.checks import RUNTIME_CHECKS
from llm_perf_opt.errors import ArtifactError


def by_pattern(grouped, pattern):
    found = [n for n in grouped.nodes if n.pattern == pattern]
    assert len(found) == 1, (pattern, [n.pattern for n in grouped.nodes])
    return found[0]


# ------------------------------------------------------------------------------------------ helpers
def stack_graph(n_blocks=6, block_params=10, enc_calls=1, loop_calls=1, runtime_log=None):
    """root -> enc (called enc_calls times) -> enc.blocks.i (loop_calls per enc call) -> .lin"""
    mods = [("", "M", 0), ("enc", "Enc", 0), ("enc.blocks", "ModuleList", 0)]
    mods += [(f"enc.blocks.{i}", "Block", 0) for i in range(n_blocks)]
    mods += [(f"enc.blocks.{i}.lin", "Linear", block_params) for i in range(n_blocks)]
    calls = [("", "enc", enc_calls)]
    for i in range(n_blocks):
        calls += [
            ("enc", f"enc.blocks.{i}", enc_calls * loop_calls),
            (f"enc.blocks.{i}", f"enc.blocks.{i}.lin", enc_calls * loop_calls),
        ]
    ops = {f"enc.blocks.{i}": 3 for i in range(n_blocks)} | {f"enc.blocks.{i}.lin": 1 for i in range(n_blocks)}
    act = {f"enc.blocks.{i}": 100 for i in range(n_blocks)}
    return make_graph(mods, calls, ops=ops, activation_bytes=act, runtime_log=runtime_log)


def decoder_graph(n_layers=4, n_experts=16, called=None, vision_calls=2, runtime_log=None):
    """A DeepSeek-like shape: model.{sam_model, projector} called `vision_calls` times, model.layers.0 dense,
    model.layers.1.. MoE with `called[layer]` experts called once each."""
    called = called or {}
    mods = [
        ("", "CausalLM", 0),
        ("model", "OCRModel", 0),
        ("model.sam_model", "Encoder", 50),
        ("model.projector", "Projector", 0),
        ("model.projector.layers", "Linear", 20),
        ("model.layers", "ModuleList", 0),
        ("lm_head", "Linear", 7),
    ]
    calls = [
        ("", "model", 1),
        ("model", "model.sam_model", vision_calls),
        ("model", "model.projector", vision_calls),
        ("model.projector", "model.projector.layers", vision_calls),
    ]
    for i in range(n_layers):
        p = f"model.layers.{i}"
        mods += [(p, "DecoderLayer", 0), (f"{p}.attn", "Attention", 40), (f"{p}.norm", "RMSNorm", 4)]
        calls += [("model", p, 1), (p, f"{p}.norm", 1), (p, f"{p}.attn", 1)]
        if i == 0:
            mods += [(f"{p}.mlp", "MLP", 0), (f"{p}.mlp.up", "Linear", 64), (f"{p}.mlp.down", "Linear", 64)]
            calls += [(p, f"{p}.mlp", 1), (f"{p}.mlp", f"{p}.mlp.up", 1), (f"{p}.mlp", f"{p}.mlp.down", 1)]
        else:
            mods += [(f"{p}.mlp", "MoE", 0), (f"{p}.mlp.gate", "Gate", 8), (f"{p}.mlp.experts", "ModuleList", 0)]
            mods += [(f"{p}.mlp.experts.{e}", "MLP", 0) for e in range(n_experts)]
            mods += [(f"{p}.mlp.experts.{e}.up", "Linear", 16) for e in range(n_experts)]
            mods += [(f"{p}.mlp.experts.{e}.down", "Linear", 16) for e in range(n_experts)]
            calls += [(p, f"{p}.mlp", 1), (f"{p}.mlp", f"{p}.mlp.gate", 1)]
            for e in called.get(i, range(n_experts)):
                calls += [
                    (f"{p}.mlp", f"{p}.mlp.experts.{e}", 1),
                    (f"{p}.mlp.experts.{e}", f"{p}.mlp.experts.{e}.up", 1),
                    (f"{p}.mlp.experts.{e}", f"{p}.mlp.experts.{e}.down", 1),
                ]
    mods += [("model.norm", "RMSNorm", 4)]
    calls += [("model", "model.norm", 1), ("", "lm_head", 1)]
    return make_graph(mods, calls, runtime_log=runtime_log)


# ------------------------------------------------------------------------------------------ for N
def test_compact_ranges_and_patterns():
    assert compact_ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert compact_ranges([3]) == "3"
    assert pattern_of(["a.blocks.0", "a.blocks.1", "a.blocks.2"]) == ("a.blocks.[0-2]", [[0, 1, 2]])
    assert pattern_of(["s.0.l.1", "s.1.l.1", "s.0.l.2"]) == ("s.[0-1].l.[1-2]", [[0, 1], [1, 2]])
    assert pattern_of([""]) == ("(root)", [])


def test_stack_of_identical_blocks_is_one_for_node():
    g = group_callgraph(stack_graph(n_blocks=6, block_params=10))
    node = by_pattern(g, "enc.blocks.[0-5]")
    assert (node.class_name, node.for_n, node.static_n, node.sparse, node.parfor) == ("Block", 6, 6, False, 1)
    assert node.indices == [[0, 1, 2, 3, 4, 5]]
    assert node.members == [f"enc.blocks.{i}" for i in range(6)]
    # sums: params over the subtree (6 blocks x 10), calls, ops (self and subtree), activation bytes
    assert (node.params, node.calls, node.ops_self, node.ops_total, node.activation_bytes) == (60, 6, 18, 24, 600)
    lin = by_pattern(g, "enc.blocks.[0-5].lin")
    assert (lin.for_n, lin.parent, lin.depth) == (1, node.id, node.depth + 1)
    assert len(g.nodes) == 4  # root, enc, blocks, lin
    assert g.node(g.root).params == 60
    rows = summarize_stacks(g)
    assert [(r["pattern"], r["for_n"]) for r in rows] == [("enc.blocks.[0-5]", 6)]


def test_shared_block_called_k_times_is_parfor():
    g = group_callgraph(stack_graph(n_blocks=1, loop_calls=3))
    block = by_pattern(g, "enc.blocks.0")
    assert (block.for_n, block.parfor, block.calls, block.parent_calls) == (1, 3, 3, 1)
    rows = summarize_parfor_edges(g)
    assert [(r["child"], r["parfor"]) for r in rows] == [("enc.blocks.0", 3)]
    # a parent called twice with one call of the child each time is not a parfor
    g2 = group_callgraph(stack_graph(n_blocks=2, enc_calls=2, loop_calls=1))
    assert by_pattern(g2, "enc").parfor == 2
    assert by_pattern(g2, "enc.blocks.[0-1]").parfor == 1
    assert by_pattern(g2, "enc.blocks.[0-1]").calls == 4


def test_real_modules_stack_and_python_loop():
    class Block(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.lin = nn.Linear(d, d)

        def forward(self, x):
            return torch.relu(self.lin(x))

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList(Block(8) for _ in range(4))
            self.shared = Block(8)
            self.head = nn.Linear(8, 2)

        def forward(self, x):
            for b in self.blocks:
                x = b(x)
            for _ in range(3):
                x = self.shared(x)
            return self.head(x)

    net = Net()
    g = group_callgraph(hook_capture(net, lambda: net(torch.zeros(2, 8))))
    blocks = by_pattern(g, "blocks.[0-3]")
    assert (blocks.for_n, blocks.parfor, blocks.params) == (4, 1, 4 * (8 * 8 + 8))
    shared = by_pattern(g, "shared")
    assert (shared.for_n, shared.parfor, shared.calls) == (1, 3, 3)
    assert by_pattern(g, "shared.lin").parfor == 1  # once per call of its parent
    assert g.node(g.root).params == sum(p.numel() for p in net.parameters())
    assert blocks.output_shapes == []  # hook capture records no metadata: empty, not invented


def test_mixed_dense_and_moe_layers_split():
    log = [
        {"event": "llm_stack", "num_layers": 4, "seq_len": 10, "past_len": 0, "step": 0},
        {"event": "vision_inputs", "vision": True, "vision_passes": 2, "views": 7},
    ]
    g = group_callgraph(decoder_graph(n_layers=4, n_experts=4, runtime_log=log), checks=RUNTIME_CHECKS)
    dense = by_pattern(g, "model.layers.0")
    moe = by_pattern(g, "model.layers.[1-3]")
    assert (dense.for_n, moe.for_n, moe.static_n) == (1, 3, 4)
    assert dense.template == moe.template == "layers.*"
    assert by_pattern(g, "model.layers.[1-3].mlp").class_name == "MoE"
    assert by_pattern(g, "model.layers.0.mlp").class_name == "MLP"
    assert by_pattern(g, "model.layers.[1-3].mlp.experts.[0-3]").for_n == 4
    checks = {c["name"]: c for c in g.checks}
    assert checks["decoder_layers"]["status"] == "ok"
    assert (checks["decoder_layers"]["expected"], checks["decoder_layers"]["observed"]) == (4, 4)
    assert [x["for_n"] for x in checks["decoder_layers"]["groups"]] == [1, 3]
    assert checks["decoder_layer_calls"]["status"] == "ok"
    assert checks["vision_passes:sam_model"]["status"] == "ok"
    assert checks["vision_passes:projector"]["observed"] == 2
    assert checks["vision_passes:vision_model"]["status"] == "not checked"  # no such module here


def test_windowed_and_global_blocks_are_one_stack_with_two_variants():
    """Same class and child structure, different relative-position tables (direct params) and constructor
    params: one `for 6` node (the loop the code runs), its variants inside."""
    mods = [("", "Enc", 0), ("blocks", "ModuleList", 0)]
    calls = []
    ctor = {}
    for i in range(6):
        glob = i in (2, 5)
        mods += [(f"blocks.{i}", "Block", 0), (f"blocks.{i}.attn", "Attention", 90 if glob else 20)]
        calls += [("", f"blocks.{i}", 1), (f"blocks.{i}", f"blocks.{i}.attn", 1)]
        ctor[f"blocks.{i}"] = {"window_size": 0 if glob else 14, "layer_idx": i}  # layer_idx is ignored
    g = group_callgraph(make_graph(mods, calls, constructor_params=ctor))
    stack = by_pattern(g, "blocks.[0-5]")
    assert (stack.for_n, stack.static_n, stack.params) == (6, 6, 4 * 20 + 2 * 90)
    assert [(v.label, v.members, v.params) for v in stack.variants] == [
        ("window_size=14", ["blocks.0", "blocks.1", "blocks.3", "blocks.4"], 80),
        ("window_size=0", ["blocks.2", "blocks.5"], 180),
    ]
    assert stack.variants[1].differs == {"window_size": 0}
    assert stack.varying_params == ["window_size", "layer_idx"]
    attn = by_pattern(g, "blocks.[0-5].attn")  # the child differs in its parameter count only
    assert [(v.label, len(v.members)) for v in attn.variants] == [("params=20", 4), ("params=90", 2)]
    # a parameter deeper down labels the variant by its relative path when the top agrees
    ctor2 = {f"blocks.{i}.attn": {"window_size": 0 if i in (2, 5) else 14} for i in range(6)}
    mods2 = [(a, c, 20 if c == "Attention" else p) for a, c, p in mods]
    g2 = group_callgraph(make_graph(mods2, calls, constructor_params=ctor2))
    assert [v.label for v in by_pattern(g2, "blocks.[0-5]").variants] == ["attn.window_size=14", "attn.window_size=0"]
    # and without any difference (layer_idx only) there are no variants
    ctor3 = {f"blocks.{i}": {"window_size": 14, "layer_idx": i} for i in range(6)}
    g3 = group_callgraph(make_graph(mods2, calls, constructor_params=ctor3))
    assert by_pattern(g3, "blocks.[0-5]").for_n == 6 and by_pattern(g3, "blocks.[0-5]").variants == []


def test_variants_survive_the_json_round_trip(tmp_path):
    mods = [("", "M", 0)] + [(f"net.{i}", "Linear", 10 * (i + 1)) for i in range(3)]
    calls = [("", f"net.{i}", 1) for i in range(3)]
    ctor = {f"net.{i}": {"in_features": 4 * (i + 1), "out_features": 8} for i in range(3)}
    g = group_callgraph(make_graph(mods, calls, constructor_params=ctor))
    node = by_pattern(g, "net.[0-2]")  # a Sequential of three differently sized Linears: one loop, three variants
    assert node.for_n == 3 and [v.label for v in node.variants] == ["in_features=4", "in_features=8", "in_features=12"]
    back = load_grouped_json(g.save(tmp_path / "g.json"))
    assert [(v.label, v.members) for v in by_pattern(back, "net.[0-2]").variants] == [
        (v.label, v.members) for v in node.variants
    ]


def test_dense_family_with_different_call_counts_is_split():
    mods = [("", "M", 0)] + [(f"blocks.{i}", "Block", 1) for i in range(4)]
    calls = [("", "blocks.0", 1), ("", "blocks.1", 2), ("", "blocks.2", 1), ("", "blocks.3", 1)]
    g = group_callgraph(make_graph(mods, calls))
    assert by_pattern(g, "blocks.[0,2-3]").parfor == 1
    assert by_pattern(g, "blocks.1").parfor == 2


def test_nested_stacks():
    """stack.[0-1] each holding layers.[0-2], each holding blocks.[0-3]."""
    mods = [("", "Top", 0), ("stack", "ModuleList", 0)]
    calls = []
    for s in range(2):
        mods += [(f"stack.{s}", "Stage", 0), (f"stack.{s}.layers", "ModuleList", 0)]
        calls.append(("", f"stack.{s}", 1))
        for layer in range(3):
            lp = f"stack.{s}.layers.{layer}"
            mods += [(lp, "Layer", 0), (f"{lp}.blocks", "ModuleList", 0)]
            calls.append((f"stack.{s}", lp, 1))
            for b in range(4):
                mods += [(f"{lp}.blocks.{b}", "Block", 5)]
                calls.append((lp, f"{lp}.blocks.{b}", 1))
    g = group_callgraph(make_graph(mods, calls))
    assert [(n.pattern, n.for_n, n.depth) for n in g.nodes] == [
        ("(root)", 1, 0),
        ("stack.[0-1]", 2, 1),
        ("stack.[0-1].layers.[0-2]", 3, 2),
        ("stack.[0-1].layers.[0-2].blocks.[0-3]", 4, 3),
    ]
    leaf = g.nodes[-1]
    assert (len(leaf.members), leaf.params, leaf.calls) == (24, 120, 24)
    assert g.nodes[1].params == 120


def test_non_contiguous_called_experts():
    called = {1: [0, 3, 4, 9, 12], 2: [1, 3, 5, 6, 7, 8, 15]}
    g = group_callgraph(decoder_graph(n_layers=3, n_experts=16, called=called))
    experts = [n for n in g.nodes if n.template == "experts.*"]
    assert len(experts) == 1, [n.pattern for n in experts]
    e = experts[0]
    assert e.sparse and e.value_dependent and e.static_n == 16
    assert (e.for_min, e.for_n) == (5, 7)
    assert e.indices == [[1, 2], sorted(set(called[1]) | set(called[2]))]
    assert e.members == [f"model.layers.{i}.mlp.experts.{x}" for i in (1, 2) for x in called[i]]
    assert e.pattern == "model.layers.[1-2].mlp.experts.[0-1,3-9,12,15]"
    assert e.params == 12 * 32
    assert all(c.value_dependent for c in g.descendants(e.id))
    assert not by_pattern(g, "model.layers.[1-2].mlp").value_dependent
    # the MoE layers stay one stack although they called different experts
    assert by_pattern(g, "model.layers.[1-2]").for_n == 2
    from llm_perf_opt.callgraph.labels import display_pattern, display_patterns

    assert display_pattern(e) == "model.layers.[1-2].mlp.experts.[5-7 of 16]"  # per layer: 5 and 7 of 16
    up = by_pattern(g, "model.layers.[1-2].mlp.experts.[0-1,3-9,12,15].up")
    assert display_patterns(g)[up.id] == "model.layers.[1-2].mlp.experts.[5-7 of 16].up"  # as its parent
    # within one parent, the exact list while it is short, else a count
    g1 = group_callgraph(decoder_graph(n_layers=2, n_experts=16, called={1: [0, 3, 4, 9, 12]}))
    e1 = [n for n in g1.nodes if n.template == "experts.*"][0]
    assert (e1.sparse, e1.pattern) == (True, "model.layers.1.mlp.experts.[0,3-4,9,12]")
    assert display_pattern(e1) == "model.layers.1.mlp.experts.[0,3-4,9,12]"
    assert display_pattern(e1, max_ranges=3) == "model.layers.1.mlp.experts.[5 of 16]"


def test_routing_that_calls_every_expert_in_one_layer_does_not_split_the_stack():
    """Layer 1 routed to all 8 experts, layer 2 to 3 of them: one MoE stack, one (sparse) experts node."""
    g = group_callgraph(decoder_graph(n_layers=3, n_experts=8, called={1: range(8), 2: [1, 4, 6]}))
    assert by_pattern(g, "model.layers.[1-2]").for_n == 2
    (e,) = [n for n in g.nodes if n.template == "experts.*"]
    assert (e.sparse, e.for_min, e.for_n, len(e.members)) == (True, 3, 8, 11)


def test_experts_called_unevenly_over_several_parent_calls():
    """An MoE called in 3 steps (prefill + 2 decode steps), experts called in some of them."""
    mods = [("", "M", 0), ("moe", "MoE", 0), ("moe.experts", "ModuleList", 0)]
    mods += [(f"moe.experts.{e}", "MLP", 2) for e in range(8)]
    calls = [("", "moe", 3), ("moe", "moe.experts.0", 3), ("moe", "moe.experts.2", 1), ("moe", "moe.experts.5", 2)]
    g = group_callgraph(make_graph(mods, calls))
    (e,) = [n for n in g.nodes if n.template == "experts.*"]
    assert (e.sparse, e.for_n, e.calls, e.parent_calls, e.parfor) == (True, 3, 6, 3, None)
    assert e.member_calls == [3, 1, 2]
    assert e.calls_per_parent_call == [1 / 3, 1.0]
    from llm_perf_opt.callgraph.labels import node_label_lines

    assert node_label_lines(e)[1].startswith("calls 6 in 3 parent calls")


# ------------------------------------------------------------------------------------------ checks
def test_runtime_checks_are_a_plug_in():
    """The grouping runs whatever checks it is handed, in order, with the events and module classes;
    handed none, it checks nothing."""
    seen = {}

    def blocks_called(grouped, events, module_types):
        seen["events"], seen["types"] = list(events), dict(module_types)
        (node,) = [n for n in grouped.nodes if n.template == "blocks.*"]
        expected = sum(e["blocks"] for e in events if e.get("event") == "loop")
        return [
            check_result(
                "blocks",
                "ok" if node.calls == expected else "mismatch",
                expected,
                node.calls,
                "calls of the blocks vs the loop events",
            )
        ]

    log = [{"event": "loop", "blocks": 3}, "not an event"]
    g = group_callgraph(stack_graph(n_blocks=3), runtime_log=log, checks=[blocks_called])
    assert [(c["name"], c["status"], c["expected"], c["observed"]) for c in g.checks] == [("blocks", "ok", 3, 3)]
    assert seen["events"] == [log[0]] and seen["types"]["enc.blocks.0"] == "Block"
    assert group_callgraph(stack_graph(n_blocks=3), runtime_log=log).checks == []
    with pytest.raises(ValueError, match="status"):
        check_result("x", "fine", 1, 1, "")


def test_mismatch_against_runtime_log_is_reported():
    log = [
        {"event": "vision_inputs", "vision": True, "vision_passes": 2},
        {"event": "llm_stack", "num_layers": 5, "seq_len": 9, "past_len": 0, "step": 0},
    ]
    g = group_callgraph(decoder_graph(n_layers=4, n_experts=2, vision_calls=1, runtime_log=log), checks=RUNTIME_CHECKS)
    checks = {c["name"]: c for c in g.checks}
    sam = checks["vision_passes:sam_model"]
    assert (sam["status"], sam["expected"], sam["observed"]) == ("mismatch", 2, 1)
    dec = checks["decoder_layers"]
    assert (dec["status"], dec["expected"], dec["observed"]) == ("mismatch", 5, 4)
    summary = g.summary()
    assert summary["checks"]["mismatch"] == 3  # sam, projector, decoder layers
    assert {c["name"] for c in summary["mismatches"]} == {
        "vision_passes:sam_model",
        "vision_passes:projector",
        "decoder_layers",
    }


def test_missing_runtime_events_are_not_checked():
    g = group_callgraph(decoder_graph(n_layers=2, n_experts=2), checks=RUNTIME_CHECKS)
    statuses = {c["name"]: c["status"] for c in g.checks}
    assert statuses["vision_passes:sam_model"] == "not checked"
    assert statuses["decoder_layers"] == "not checked"
    assert statuses["decoder_layer_calls"] == "not checked"
    assert "ok" not in statuses.values()
    assert g.summary()["checks"]["ok"] == 0


def test_decode_steps_in_the_runtime_log():
    """A prefill plus one decode step: vision events without vision count as zero passes, one llm_stack
    event per stack run."""
    log = [
        {"event": "vision_inputs", "vision": True, "vision_passes": 2, "seq_len": 9},
        {"event": "llm_stack", "num_layers": 2, "seq_len": 9, "past_len": 0, "step": 0},
        {"event": "vision_inputs", "vision": False, "seq_len": 1},
        {"event": "llm_stack", "num_layers": 2, "seq_len": 1, "past_len": 9, "step": 1},
        {"event": "decode_step", "step": 1, "new_tokens": 1, "past_len": 9},
    ]
    g = group_callgraph(decoder_graph(n_layers=2, n_experts=2), runtime_log=log, checks=RUNTIME_CHECKS)
    checks = {c["name"]: c for c in g.checks}
    assert checks["vision_passes:sam_model"]["status"] == "ok"
    assert checks["decoder_layers"]["status"] == "ok"
    # the graph ran the stack once, the log says twice: reported
    assert (
        checks["decoder_layer_calls"]["status"],
        checks["decoder_layer_calls"]["expected"],
        checks["decoder_layer_calls"]["observed"],
    ) == ("mismatch", 2, 1)


def test_deepseek_checks_look_at_the_parts_by_path():
    """A module named like a part elsewhere in the tree is not the part: only `model.sam_model` is SAM,
    only `model.layers` is the decoder stack."""
    mods = [("", "M", 0), ("enc", "Enc", 0), ("enc.sam_model", "Encoder", 5), ("enc.layers", "ModuleList", 0)]
    mods += [(f"enc.layers.{i}", "Layer", 3) for i in range(3)]
    calls = [("", "enc", 1), ("enc", "enc.sam_model", 1)] + [("enc", f"enc.layers.{i}", 1) for i in range(3)]
    log = [{"event": "vision_inputs", "vision": True, "vision_passes": 1}, {"event": "llm_stack", "num_layers": 3}]
    g = group_callgraph(make_graph(mods, calls), runtime_log=log, checks=RUNTIME_CHECKS)
    statuses = {c["name"]: c["status"] for c in g.checks}
    assert statuses == {
        "vision_passes:sam_model": "not checked",
        "vision_passes:vision_model": "not checked",
        "vision_passes:projector": "not checked",
        "decoder_layers": "not checked",
        "decoder_layer_calls": "not checked",
        "block_loop:sam_model.blocks": "not checked",
        "block_loop:vision_model.transformer.layers": "not checked",
    }


# ------------------------------------------------------------------------------------------ flops, files
def test_grouped_json_roundtrip_and_rejections(tmp_path):
    g = group_callgraph(decoder_graph(n_layers=3, n_experts=8, called={1: [0, 2], 2: [5]}))
    path = g.save(tmp_path / "callgraph.grouped.json")
    doc = json.loads(path.read_text())
    assert (doc["schema"], doc["schema_version"]) == (GROUPED_SCHEMA, 2)
    back = load_grouped_json(path)
    assert back.to_dict() == json.loads(json.dumps(g.to_dict()))
    # version 1 (no variants or costs, a `flops` slot per node) still loads
    v1 = json.loads(json.dumps(doc))
    v1["schema_version"] = 1
    for key in ("metrics", "absent_metrics", "costs_stage"):
        v1["data"].pop(key)
    for node in v1["data"]["nodes"]:
        node.pop("variants"), node.pop("costs")
        node.update(flops=None, flops_missing=0)
    path.write_text(json.dumps(v1))
    old = load_grouped_json(path)
    assert [n.pattern for n in old.nodes] == [n.pattern for n in g.nodes] and old.metrics == []
    doc["schema_version"] = 99
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match="schema_version 99 is unknown"):
        load_grouped_json(path)
    doc["schema_version"] = 1
    del doc["data"]["nodes"][1]["pattern"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ArtifactError, match=r"nodes\[1\] lacks required field 'pattern'"):
        load_grouped_json(path)


def test_orphans_and_cycles_do_not_break_grouping():
    # edges that miss the root, and a module that (wrongly) calls its caller
    cg = make_graph([("", "M", 0), ("a", "A", 1), ("a.b", "B", 1)], [("a", "a.b", 1), ("a.b", "a", 1)])
    cg.edges.pop("", None)
    g = group_callgraph(cg)
    assert {n.pattern for n in g.nodes} >= {"(root)", "a", "a.b"}


def test_block_loop_check_compares_the_stack_with_the_loop_length():
    """SAM-like blocks (windowed and global) are one `for 6` node; the check compares 6 with the length the
    loop ran over, and says mismatch when the log says otherwise or the stack is split."""
    mods = [
        ("", "M", 0),
        ("model", "OCR", 0),
        ("model.sam_model", "Enc", 0),
        ("model.sam_model.blocks", "ModuleList", 0),
    ]
    mods += [(f"model.sam_model.blocks.{i}", "Block", 90 if i in (2, 5) else 20) for i in range(6)]
    calls = [("", "model", 1), ("model", "model.sam_model", 2)]
    calls += [("model.sam_model", f"model.sam_model.blocks.{i}", 2) for i in range(6)]
    ctor = {f"model.sam_model.blocks.{i}": {"window_size": 0 if i in (2, 5) else 14} for i in range(6)}
    events = [{"event": "block_loop", "loop": "model.sam_model.blocks", "length": 6}] * 2
    g = group_callgraph(make_graph(mods, calls, constructor_params=ctor), runtime_log=events, checks=RUNTIME_CHECKS)
    check = next(c for c in g.checks if c["name"] == "block_loop:sam_model.blocks")
    assert (check["status"], check["expected"], check["observed"]) == ("ok", 6, 6)
    assert check["groups"] == [
        {"pattern": "model.sam_model.blocks.[0-5]", "for_n": 6, "variants": ["window_size=14 x4", "window_size=0 x2"]}
    ]
    wrong = [{"event": "block_loop", "loop": "model.sam_model.blocks", "length": 12}]
    g2 = group_callgraph(make_graph(mods, calls, constructor_params=ctor), runtime_log=wrong, checks=RUNTIME_CHECKS)
    check = next(c for c in g2.checks if c["name"] == "block_loop:sam_model.blocks")
    assert (check["status"], check["expected"], check["observed"]) == ("mismatch", 12, 6)

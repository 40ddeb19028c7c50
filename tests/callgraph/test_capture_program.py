"""Several forwards in one TorchLens capture (`capture(program=...)`): the prefill and N decode steps of the
tiny twin in one call graph, with the addresses of a plain capture."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from llm_perf_opt.callgraph.capture import capture, graph_problems
from llm_perf_opt.dsocr.patches import DEFAULT_TRACE_PATCHES, TRACE_PATCHES, runtime_patches
from llm_perf_opt.errors import TraceError
from llm_perf_opt.model_runtime.decode import DecodeProgram

STEPS = 3


class Step(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(torch.relu(self.inner(x)))


def loop(n):
    def program(forward, x):
        out = None
        for _ in range(n):
            out = forward(x)
        return out

    return program


def test_a_program_runs_in_one_root_call_and_the_children_count_each_forward():
    model = Step()
    x = torch.randn(3, 4)
    with torch.no_grad():
        plain = model(x)
        result = capture(model, forward_args=(x,), program=loop(4))
    cg = result.callgraph
    assert cg.call_counts == {"": 1, "inner": 4, "head": 4}
    assert cg.edges == {"": {"inner": 4, "head": 4}}
    assert cg.stats["root_forward_calls"] == 4 and graph_problems(cg) == []
    assert torch.equal(result.output, plain)
    assert "forward" not in vars(model)  # the program was the root's body for the capture only


def test_the_root_forward_is_restored_when_the_program_raises():
    model = Step()

    def program(forward, x):
        forward(x)
        raise RuntimeError("boom in step 2")

    with pytest.raises(TraceError, match="boom in step 2"):
        capture(model, forward_args=(torch.randn(1, 4),), program=program)
    assert "forward" not in vars(model)
    with torch.no_grad():
        assert model(torch.randn(1, 4)).shape == (1, 2)


@pytest.fixture(scope="module")
def decode_capture(tiny):
    spec, model, kwargs = tiny
    program = DecodeProgram(STEPS)
    with torch.no_grad(), runtime_patches(model, TRACE_PATCHES) as log:  # what the trace job captures under
        result = capture(model, dict(kwargs, use_cache=True), model_name="twin_tiny", runtime_log=log, program=program)
    with torch.no_grad():  # the same loop without any capture or patch
        plain = DecodeProgram(STEPS)
        plain(lambda **kw: model(**kw), **dict(kwargs, use_cache=True))
    return spec, model, kwargs, result, program, plain, log


@pytest.mark.slow
def test_decoder_modules_show_one_plus_n_calls_and_vision_one(decode_capture):
    spec, model, kwargs, result, program, plain, log = decode_capture
    cg = result.callgraph
    assert graph_problems(cg) == []
    assert cg.call_counts[""] == 1 and cg.stats["root_forward_calls"] == 1 + STEPS
    assert cg.edges[""] == {"model": 1 + STEPS, "lm_head": 1 + STEPS}
    for i in range(spec.decoder.num_layers):
        assert cg.call_counts[f"model.layers.{i}"] == 1 + STEPS
        assert cg.call_counts[f"model.layers.{i}.self_attn"] == 1 + STEPS
    for part in ("model.sam_model", "model.vision_model", "model.projector"):
        assert cg.call_counts[part] == 1, part
    # addresses are the model's own: no wrapper prefix anywhere
    assert set(cg.module_types) == {name for name, _ in model.named_modules()}
    assert "forward" not in vars(model)


@pytest.mark.slow
def test_the_captured_loop_is_the_plain_loop(decode_capture):
    spec, model, kwargs, result, program, plain, log = decode_capture
    assert program.result.tokens == plain.result.tokens
    assert [s.to_dict() for s in program.result.steps] == [s.to_dict() for s in plain.result.steps]
    assert torch.equal(result.output.logits, plain.result.last.logits)


@pytest.mark.slow
def test_runtime_log_has_one_llm_stack_event_per_pass(decode_capture):
    spec, model, kwargs, result, program, plain, log = decode_capture
    seq_len = kwargs["input_ids"].shape[1]
    stack = [(e["step"], e["past_len"], e["new_tokens"]) for e in log.events("llm_stack")]
    assert stack == [(0, 0, seq_len)] + [(k, seq_len + k - 1, 1) for k in range(1, STEPS + 1)]
    assert [e["step"] for e in log.events("decode_step")] == list(range(1, STEPS + 1))
    assert [e["vision"] for e in log.events("vision_inputs")] == [True] + [False] * STEPS
    assert result.callgraph.runtime_log == log.events()


# ----------------------------------------------------------------------------- grouped graph and its checks
def _grouped(decode_capture, events=None):
    from llm_perf_opt.callgraph.grouping import group_callgraph
    from llm_perf_opt.dsocr.checks import RUNTIME_CHECKS

    result = decode_capture[3]
    return group_callgraph(result.callgraph, events, checks=RUNTIME_CHECKS)


@pytest.mark.slow
def test_grouped_graph_shows_the_loop_and_every_check_is_ok(decode_capture):
    from llm_perf_opt.callgraph.labels import display_patterns, node_label_lines

    spec, model, kwargs, result, program, plain, log = decode_capture
    grouped = _grouped(decode_capture)
    checks = {c["name"]: c for c in grouped.checks}
    assert {c["status"] for c in grouped.checks} == {"ok"}, grouped.checks
    assert set(checks) == {
        "vision_passes:sam_model",
        "vision_passes:vision_model",
        "vision_passes:projector",
        "decoder_layers",
        "decoder_layer_calls",
        "block_loop:sam_model.blocks",
        "block_loop:vision_model.transformer.layers",
        "decode_loop",
        "moe_routing",
    }
    assert checks["decoder_layer_calls"]["observed"] == 1 + STEPS
    assert checks["decode_loop"]["observed"]["passes"] == 1 + STEPS
    # the loop body: the language model and lm_head `parfor 1+N` under the root; vision once in 1+N calls
    (body,) = grouped.find("model")
    (head,) = grouped.find("lm_head")
    assert body.parfor == head.parfor == 1 + STEPS
    (sam,) = grouped.find("model.sam_model")
    assert (sam.calls, sam.parent_calls, sam.parfor) == (1, 1 + STEPS, None)
    layers = [n for n in grouped.nodes if n.pattern.startswith("model.layers.") and n.pattern.count(".") == 2]
    assert layers and all(
        (n.calls, n.parent_calls, n.parfor) == ((1 + STEPS) * len(set(n.members)), 1 + STEPS, 1) for n in layers
    )  # once per pass: 1 + N calls each
    # the expert nodes carry the routing record's counts, in their label
    patterns = display_patterns(grouped)
    experts = [n for n in grouped.nodes if ".mlp.experts." in n.pattern and n.template.endswith("*")]
    assert experts and all(n.annotation["line"].endswith("(weights unknown)") for n in experts)  # a bare model
    for n in experts:
        lines = node_label_lines(n, pattern=patterns[n.id])
        assert lines[-1] == n.annotation["line"] and "per decode step" in lines[-1]


@pytest.mark.slow
def test_a_log_that_disagrees_with_the_graph_is_a_mismatch(decode_capture):
    events = [dict(e) for e in decode_capture[3].callgraph.runtime_log]
    stack = [e for e in events if e["event"] == "llm_stack"]
    stack[2]["past_len"] += 1  # a step that did not find the cache grown by one token
    routing = [e for e in events if e["event"] == "routing"]
    routing[-1]["experts"] = [e + 100 for e in routing[-1]["experts"]]  # experts the graph never called
    checks = {c["name"]: c for c in _grouped(decode_capture, events).checks}
    assert checks["decode_loop"]["status"] == "mismatch" and "do not chain" in checks["decode_loop"]["detail"]
    assert checks["moe_routing"]["status"] == "mismatch"
    dropped = [e for e in events if e is not stack[-1]]  # one pass fewer in the log than in the graph
    checks = {c["name"]: c for c in _grouped(decode_capture, dropped).checks}
    assert checks["decode_loop"]["status"] == "mismatch"
    assert checks["decoder_layer_calls"]["status"] == "mismatch"


@pytest.mark.slow
def test_a_prefill_only_log_has_no_decode_loop_check(tiny):
    from llm_perf_opt.callgraph.grouping import group_callgraph
    from llm_perf_opt.dsocr.checks import RUNTIME_CHECKS

    spec, model, kwargs = tiny
    with torch.no_grad(), runtime_patches(model, DEFAULT_TRACE_PATCHES) as log:
        result = capture(model, kwargs, model_name="twin_tiny", runtime_log=log)
    names = [c["name"] for c in group_callgraph(result.callgraph, checks=RUNTIME_CHECKS).checks]
    assert "decode_loop" not in names and "moe_routing" not in names  # nothing to check: no decode, no routing

"""A MoE layer refuses torch.export (data-dependent routing); the fixed-routing remedy exports it with the
routing of the real call, computes what the real layer computes, and guards against other routings."""

from __future__ import annotations

import re

import pytest
import torch

from llm_perf_opt.deepseek_ocr_shared.twin.decoder import run_experts_by_load
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin
from llm_perf_opt.export.flops import graph_ops
from llm_perf_opt.export.modules import ExportCall
from llm_perf_opt.export.moe import RemedyError, fixed_routing
from llm_perf_opt.export.program import ExportRefused, export_graphs, run_program

TOKENS = 24


@pytest.fixture(scope="module")
def moe_call():
    torch.manual_seed(0)
    model = build_twin(ModelSpec.tiny())
    layer = model.model.layers[1]
    x = torch.randn(1, TOKENS, ModelSpec.tiny().decoder.hidden_size)
    mask = torch.full((1, 1, TOKENS, TOKENS), torch.finfo(torch.float32).min).triu(1)
    kwargs = {"attention_mask": mask, "position_ids": torch.arange(TOKENS)[None]}
    with torch.no_grad():
        ids = layer.mlp.gate(
            layer.post_attention_layernorm(x + layer.self_attn(layer.input_layernorm(x), **kwargs)[0])
        )[0]
        want = layer(x, **kwargs)[0]
    routing = torch.bincount(ids.reshape(-1), minlength=len(layer.mlp.experts)).tolist()
    return ExportCall(layer, (x,), kwargs), routing, want


def test_plain_export_is_refused_with_the_reason_in_one_line(moe_call):
    call, _, _ = moe_call
    with pytest.raises(ExportRefused) as err:
        export_graphs(call)
    message = str(err.value)
    assert "\n" not in message and "numpy" in message and "in moe_infer" in message


def test_fixed_routing_exports_the_real_computation(moe_call):
    call, routing, want = moe_call
    k = ModelSpec.tiny().decoder.num_experts_per_tok
    assert sum(routing) == TOKENS * k
    moe = call.module.mlp
    with fixed_routing(moe, routing, run_experts_by_load):
        graphs = export_graphs(call)
        with torch.no_grad():
            wrapped = call.run()[0]
    assert "forward" not in vars(moe)  # the instance is back to the class's forward
    torch.testing.assert_close(wrapped, want, rtol=0, atol=1e-6)
    got = run_program(graphs, call)[0]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
    called = {i for i, n in enumerate(routing) if n}
    experts = {
        int(m.group(1))
        for o in graph_ops(graphs.core)
        for path in o.modules
        if (m := re.fullmatch(r"mlp\.experts\.(\d+)", path))
    }
    assert experts == called  # exactly the experts the real call used, each once


def test_exported_program_refuses_another_routing(moe_call):
    call, routing, _ = moe_call
    with fixed_routing(call.module.mlp, routing, run_experts_by_load):
        graphs = export_graphs(call)
    other = ExportCall(call.module, (torch.randn_like(call.args[0]) * 3,), call.kwargs)
    with pytest.raises(RuntimeError, match="routing differs"):
        run_program(graphs, other)


def test_remedy_refuses_what_it_cannot_fix(moe_call):
    call, routing, _ = moe_call
    with pytest.raises(RemedyError, match="not a MoE module"):
        with fixed_routing(call.module.self_attn, routing, run_experts_by_load):
            pass
    with pytest.raises(RemedyError, match="routing has 3 experts"):
        with fixed_routing(call.module.mlp, [1, 2, 3], run_experts_by_load):
            pass

"""A decoder layer in decode takes its KV cache as two tensors (DecodeLayerWithCache): same output as the
layer with a transformers DynamicCache, and exportable."""

from __future__ import annotations

import pytest
import torch
from transformers.cache_utils import DynamicCache

from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin
from llm_perf_opt.export.flops import graph_ops, total_flops
from llm_perf_opt.export.modules import DecodeLayerWithCache, ExportCall
from llm_perf_opt.export.program import export_graphs, run_program

CONTEXT = 30
SPEC = ModelSpec.tiny()


def decode_inputs():
    d = SPEC.decoder
    key = torch.randn(1, d.num_kv_heads, CONTEXT, d.head_dim)
    value = torch.randn(1, d.num_kv_heads, CONTEXT, d.head_dim)
    x = torch.randn(1, 1, d.hidden_size)
    return x, key, value, {"position_ids": torch.tensor([[CONTEXT]]), "use_cache": True}


@pytest.fixture(scope="module")
def model():
    torch.manual_seed(0)
    return build_twin(SPEC)


@pytest.mark.parametrize("index", [0, 2])  # layer 2: the cache has no entries for layers 0 and 1
def test_decode_wrapper_matches_the_layer_with_a_dynamic_cache(model, index):
    layer = model.model.layers[index]
    x, key, value, kwargs = decode_inputs()
    with torch.no_grad():
        cache = DynamicCache()
        for i in range(index + 1):
            cache.update(key if i == index else key[:, :, :0], value if i == index else value[:, :, :0], i)
        want = layer(x, past_key_value=cache, **kwargs)[0]
        got, k, v = DecodeLayerWithCache(layer, index)(x, past_key=key, past_value=value, **kwargs)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    assert k.shape[-2] == v.shape[-2] == CONTEXT + 1
    torch.testing.assert_close(k, cache.key_cache[index], rtol=0, atol=0)


def test_decode_wrapper_exports_with_the_cache_as_inputs(model):
    layer = model.model.layers[0]
    x, key, value, kwargs = decode_inputs()
    wrapper = DecodeLayerWithCache(layer, 0)
    call = ExportCall(wrapper, (x,), {"past_key": key, "past_value": value, **kwargs}, prefix="layer")
    graphs = export_graphs(call)
    with torch.no_grad():
        want = call.run()
    out = run_program(graphs, call)
    for a, b in zip(out, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    placeholders = [n.name for n in graphs.program.graph.nodes if n.op == "placeholder"]
    assert {"past_key", "past_value"} <= set(placeholders)
    ops = graph_ops(graphs.core, call.relative_path)
    assert all(not m.startswith("layer") for o in ops for m in o.modules)  # paths relative to the layer
    d = SPEC.decoder
    # scores and P.V over CONTEXT + 1 keys, per head: the decode attention's bmm FLOPs
    attention = sum(
        o.flops
        for o in ops
        if o.op == "aten.bmm.default" and "self_attn" == o.module and o.source == "aten.matmul.default"
    )
    assert attention == 2 * 2 * d.num_heads * (CONTEXT + 1) * d.head_dim
    assert total_flops(ops) > attention

"""The cost registry is the path every analytic number takes: each module class of the model has a
mapping, each analytic node names the class it models, and that class is the one the twin has there."""
from __future__ import annotations

import pytest

from llm_perf_opt.analytic import DeepseekOCRAnalyticModel, registry
from llm_perf_opt.analytic.costs import UnsupportedLayerError
from llm_perf_opt.analytic.dsocr import clear_caches
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin

GUNDAM = VisionWorkload(base_size=1024, image_size=640, crop_mode=True)


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_every_module_class_of_the_full_twin_has_a_cost_mapping(attn):
    model = build_twin(ModelSpec.deepseek_ocr(), device="meta", attn_implementation=attn)
    classes = {type(m).__name__ for m in model.modules()}
    missing = registry.unsupported(type(m).__name__ for m in model.modules())
    assert missing == {}, f"module classes without a cost formula or an explicit 'counted by its children': {missing}"
    assert len(classes) >= 30  # the walk saw the whole tree (SAM, CLIP, projector, decoder, MoE)
    entries = registry.entries()
    for name in classes:  # each mapping says how it counts
        assert entries[name].derivation.strip(), name
    assert entries["ModuleList"].counted_by_children and entries["Sequential"].counted_by_children
    assert not entries["Block"].counted_by_children and not entries["DeepseekV2MoE"].counted_by_children


def test_an_unknown_class_is_reported_by_name_never_zero():
    assert registry.unsupported(["Linear", "MambaMixer", "Linear", "MambaMixer", "ModuleList"]) == {"MambaMixer": 2}
    assert registry.unsupported({"Linear": 4, "FlashMLA": 3}) == {"FlashMLA": 3}
    with pytest.raises(UnsupportedLayerError, match="MambaMixer"):
        registry.module_cost("MambaMixer", 4)
    with pytest.raises(UnsupportedLayerError, match="counted by its children"):
        registry.module_cost("ModuleList")
    with pytest.raises(UnsupportedLayerError, match="has a formula"):
        registry.children_node("Linear", ())


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_analytic_nodes_model_the_class_the_twin_has_at_that_path(attn):
    spec = ModelSpec.tiny()
    twin = build_twin(spec, device="meta", attn_implementation=attn)
    real = {name: type(m).__name__ for name, m in twin.named_modules()}
    m = DeepseekOCRAnalyticModel(spec, compute_view_layout(GUNDAM, 1700, 2200), decoder_attention=attn)
    for stage in m.stages().values():
        modules = stage.modules
        assert modules, stage.stage
        wrong = {path: (cls, real.get(path)) for path, cls in modules.items() if real.get(path) != cls}
        assert wrong == {}, f"{stage.stage}: analytic class != twin class at {wrong}"
    prefill = m.prefill().modules
    assert prefill["model.layers.0.self_attn"] == ("LlamaAttention" if attn == "eager" else "LlamaSdpaAttention")
    assert prefill["model.layers.1.mlp"] == "DeepseekV2MoE" and prefill["model.sam_model.blocks.0"] == "Block"
    assert m.prefill().root.module == "DeepseekOCRForCausalLM"


def test_caches_are_bounded_and_cleared():
    clear_caches()
    assert registry.module_cost.cache_info().currsize == 0
    m = DeepseekOCRAnalyticModel(ModelSpec.tiny(), compute_view_layout(GUNDAM, 1700, 2200))
    m.prefill()
    info = registry.module_cost.cache_info()
    assert 0 < info.currsize and info.maxsize is not None
    before = m.prefill()
    clear_caches()
    assert registry.module_cost.cache_info().currsize == 0
    again = DeepseekOCRAnalyticModel(ModelSpec.tiny(), compute_view_layout(GUNDAM, 1700, 2200)).prefill()
    assert again is not before and again.total == before.total  # rebuilt after clearing, same numbers


"""The cost registry is the path every analytic number takes: each module class of the model has a
mapping, each analytic node names the class it models, and that class is the one the twin (and the
vendor: its measured module tree, and its code when DSOCR_MODEL_PATH is set) has there."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from llm_perf_opt.analytic import registry
from llm_perf_opt.analytic.costs import UnsupportedLayerError
from llm_perf_opt.deepseek_ocr_shared.analytic import clear_caches
from llm_perf_opt.dsocr import parts
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin

GUNDAM = VisionWorkload(base_size=1024, image_size=640, crop_mode=True)
TWIN_TESTS = Path(__file__).resolve().parent / "twin"  # the vendor's measured module tree and loaders
VENDOR_TREE = TWIN_TESTS / "module_tree.json"


def _class_mismatches(model: DeepseekOCRAnalyticModel, real: dict[str, str]) -> dict[str, dict]:
    """{stage: {path: (analytic class, real class)}} wherever the analytic node models another class."""
    out = {}
    for stage in model.stages().values():
        # registry keys are namespaced per family ("dsocr.Block"); the torch.nn ones are bare ("Linear")
        wrong = {
            path: (cls, real.get(path))
            for path, cls in stage.modules.items()
            if real.get(path) != cls.removeprefix("dsocr.")
        }
        if wrong:
            out[stage.stage] = wrong
    return out


@pytest.mark.parametrize("attn", ["eager", "sdpa"])
def test_every_module_class_of_the_full_twin_has_a_cost_mapping(attn):
    model = build_twin(ModelSpec.deepseek_ocr(), device="meta", attn_implementation=attn)
    classes = {type(m).__name__ for m in model.modules()}
    missing = registry.unsupported((type(m).__name__ for m in model.modules()), "dsocr")
    assert missing == {}, f"module classes without a cost formula or an explicit 'counted by its children': {missing}"
    assert len(classes) >= 30  # the walk saw the whole tree (SAM, CLIP, projector, decoder, MoE)
    entries = registry.entries()
    for name in classes:  # each mapping says how it counts
        assert entries[registry.key(name, "dsocr")].derivation.strip(), name
    assert entries["ModuleList"].counted_by_children and entries["Sequential"].counted_by_children
    assert not entries["dsocr.Block"].counted_by_children and not entries["dsocr.DeepseekV2MoE"].counted_by_children


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
    assert all(stage.modules for stage in m.stages().values())
    assert _class_mismatches(m, real) == {}
    prefill = m.prefill().modules
    assert set(parts.BY_PATH) <= set(prefill)  # every part of the vocabulary is a node of the analytic tree
    assert prefill["model.layers.0.self_attn"] == (
        "dsocr.LlamaAttention" if attn == "eager" else "dsocr.LlamaSdpaAttention"
    )
    assert (
        prefill["model.layers.1.mlp"] == "dsocr.DeepseekV2MoE" and prefill["model.sam_model.blocks.0"] == "dsocr.Block"
    )
    assert m.prefill().root.module == "dsocr.DeepseekOCRForCausalLM"


def test_analytic_classes_match_the_vendor_module_tree():
    """Against the module tree measured on the vendor code (class of every named module, full size)."""
    tree = {name: cls for name, cls, _ in json.loads(VENDOR_TREE.read_text())["modules"]}
    assert registry.unsupported(tree.values(), "dsocr") == {}
    for workload in parts.modes().values():
        m = DeepseekOCRAnalyticModel(ModelSpec.deepseek_ocr(), compute_view_layout(workload, 1700, 2200))
        assert _class_mismatches(m, tree) == {}


@pytest.mark.vendor
def test_the_vendor_code_has_no_class_without_a_cost_mapping(vendor_dir):
    sys.path.insert(0, str(TWIN_TESTS))
    try:
        from twin_testlib import vendor_modeling, vendor_on_meta
    finally:
        sys.path.remove(str(TWIN_TESTS))
    with vendor_modeling(vendor_dir) as modeling:
        vendor = vendor_on_meta(modeling, modeling.DeepseekOCRConfig.from_pretrained(str(vendor_dir)))
    real = {name: type(module).__name__ for name, module in vendor.named_modules()}
    assert len(real) == 4083
    assert registry.unsupported(real.values(), "dsocr") == {}
    spec = ModelSpec.from_config_json(vendor_dir)
    m = DeepseekOCRAnalyticModel(spec, compute_view_layout(GUNDAM, 1700, 2200))
    assert _class_mismatches(m, real) == {}


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

"""Runtime patches on the tiny twin: the right events, bit-identical outputs, every original restored."""

from __future__ import annotations

import importlib

import pytest
import torch

from llm_perf_opt.config.schemas import ModelConfig, RuntimeConfig
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.patches import (
    DEFAULT_TRACE_PATCHES,
    PATCHES,
    Patch,
    available_patches,
    check_patches,
    model_code,
    quick_gelu_eager,
    register_patch,
    runtime_patches,
)
from llm_perf_opt.dsocr.session import DeepSeekOCRSession
from llm_perf_opt.errors import PatchError

twin_model = importlib.import_module("llm_perf_opt.dsocr.twin.model")
twin_clip = importlib.import_module("llm_perf_opt.dsocr.twin.clip")


def originals() -> dict:
    """Every attribute a patch may replace, as stored on its owner (absent -> None)."""
    cls = twin_model.DeepseekOCRModel
    return {
        "DeepseekOCRModel.forward": vars(cls).get("forward"),  # inherited (deepseek_ocr_shared.twin.model): None
        "DeepseekOCRModel._decode": vars(cls).get("_decode"),
        "clip.quick_gelu": vars(twin_clip).get("quick_gelu"),
        "model.print": vars(twin_model).get("print"),
        "Tensor.cuda": vars(torch.Tensor).get("cuda"),
    }


@pytest.fixture(scope="module")
def session():
    cfg = ModelConfig(name="twin_tiny", source="twin", spec="tiny")
    with DeepSeekOCRSession.open(cfg, RuntimeConfig(device="cpu", dtype="float32", attn_implementation="sdpa")) as s:
        yield s


@pytest.fixture(scope="module")
def crop_inputs(session):
    return build_inputs(session.spec, VisionWorkload(1024, 640, True), width=1700, height=2200)


@pytest.fixture(scope="module")
def small_inputs(session):
    return build_inputs(session.spec, VisionWorkload(512, 512, False))


@pytest.fixture(scope="module")
def baseline(session, crop_inputs):
    return session.forward(crop_inputs).logits


def test_registry_lists_the_patches():
    for name in ("quick_gelu", "vision_inputs", "llm_stack", "cuda_to_device", "autocast", "quiet_prints"):
        assert name in available_patches()
    assert DEFAULT_TRACE_PATCHES == ("quick_gelu", "vision_inputs", "llm_stack")


def test_crop_mode_events_and_bit_identical_outputs(session, crop_inputs, baseline):
    before = originals()
    with runtime_patches(session, DEFAULT_TRACE_PATCHES) as log:
        assert twin_clip.quick_gelu is quick_gelu_eager
        patched = session.forward(crop_inputs).logits
    assert originals() == before
    assert torch.equal(patched, baseline)  # read-only wrappers, same ops for quick_gelu

    assert [e["event"] for e in log] == ["vision_inputs", "llm_stack"]
    assert [e["seq"] for e in log] == [0, 1]
    vision = log.first("vision_inputs")
    assert vision["vision"] is True
    assert vision["num_images"] == 1
    assert vision["images_spatial_crop"] == [[2, 3]]
    assert vision["crops_per_image"] == [6]
    assert vision["views"] == 7
    assert vision["vision_passes"] == 2
    assert vision["seq_len"] == crop_inputs.seq_len
    layout = crop_inputs.layout
    assert (vision["views"], vision["vision_passes"]) == (layout.num_views, layout.vision_passes)
    stack = log.first("llm_stack")
    assert stack["num_layers"] == 3
    assert stack["seq_len"] == crop_inputs.seq_len
    assert stack["past_len"] == 0 and stack["step"] == 0
    assert log.count("decode_step") == 0
    assert log.patch_names() == list(DEFAULT_TRACE_PATCHES)
    assert log.patches[2]["targets"] == ["model.DeepseekOCRModel._decode"]


def test_no_crop_mode_event(session, small_inputs):
    with runtime_patches(session, ["vision_inputs"]) as log:
        session.forward(small_inputs)
    vision = log.first("vision_inputs")
    assert vision["crops_per_image"] == [0]
    assert vision["views"] == 1 and vision["vision_passes"] == 1
    assert vision["images_spatial_crop"] == [[1, 1]]


def test_decode_steps_are_logged(session, small_inputs):
    with runtime_patches(session, ["vision_inputs", "llm_stack"]) as log:
        result = session.greedy_decode(small_inputs, 2)
    assert len(result.tokens) == 3
    stacks = log.events("llm_stack")
    L = small_inputs.seq_len
    assert [(e["step"], e["seq_len"], e["past_len"]) for e in stacks] == [(0, L, 0), (1, 1, L), (2, 1, L + 1)]
    decode = log.events("decode_step")
    assert [(e["step"], e["context_len"]) for e in decode] == [(1, L + 1), (2, L + 2)]
    visions = log.events("vision_inputs")
    assert [v["vision"] for v in visions] == [True, False, False]
    seqs = [e["seq"] for e in log]
    assert seqs == list(range(len(seqs)))


def test_quick_gelu_replacement_is_equivalent():
    x = torch.randn(4, 33, generator=torch.Generator().manual_seed(0))
    assert torch.equal(quick_gelu_eager(x), twin_clip.quick_gelu(x))
    assert isinstance(twin_clip.quick_gelu, torch.jit.ScriptFunction)


def test_originals_restored_after_exception_in_forward(session, small_inputs):
    before = originals()
    own_cuda_before = vars(torch.Tensor).get("cuda")  # TorchLens, once used, leaves an inherited copy here

    def boom(module, args, output):
        raise RuntimeError("boom from a forward hook")

    hook = session.model.model.layers[1].register_forward_hook(boom)
    try:
        with pytest.raises(RuntimeError, match="boom"):
            with runtime_patches(session, DEFAULT_TRACE_PATCHES + ("cuda_to_device", "quiet_prints")) as log:
                assert "cuda" in vars(torch.Tensor)
                session.forward(small_inputs)
    finally:
        hook.remove()
    assert originals() == before
    assert vars(torch.Tensor).get("cuda") is own_cuda_before
    assert [e["event"] for e in log] == ["vision_inputs", "llm_stack"]  # logged before the failure


def test_originals_restored_after_exception_in_block(session):
    before = originals()
    with pytest.raises(KeyError):
        with runtime_patches(session, DEFAULT_TRACE_PATCHES):
            assert originals() != before
            raise KeyError("raised in the block")
    assert originals() == before


def test_unknown_patch_name(session):
    before = originals()
    with pytest.raises(PatchError) as info:
        with runtime_patches(session, ["vision_inputs", "no_such_patch"]):
            pass
    msg = str(info.value)
    assert "no_such_patch" in msg
    for known in ("quick_gelu", "vision_inputs", "llm_stack"):
        assert known in msg
    assert originals() == before


def test_missing_target_names_it_and_restores_earlier_patches(session, monkeypatch):
    before = originals()
    monkeypatch.delattr(twin_clip, "quick_gelu")
    with pytest.raises(PatchError) as info:
        with runtime_patches(session, ["vision_inputs", "llm_stack", "quick_gelu"]):
            pass
    msg = str(info.value)
    assert "quick_gelu" in msg and "clip.quick_gelu" in msg
    after = originals()
    assert after["DeepseekOCRModel.forward"] is before["DeepseekOCRModel.forward"]
    assert after["DeepseekOCRModel._decode"] is before["DeepseekOCRModel._decode"]


def test_missing_method_target(session):
    patch = Patch(
        name="test_missing_method",
        summary="test",
        apply=lambda ctx: ctx.wrap(ctx.target(), lambda f: f),
        targets={
            "twin": ("model", "DeepseekOCRModel.no_such_method"),
            "vendor": ("modeling_deepseekocr", "DeepseekOCRModel.no_such_method"),
        },
    )
    register_patch(patch)
    try:
        with pytest.raises(PatchError, match=r"model\.DeepseekOCRModel\.no_such_method"):
            with runtime_patches(session, ["test_missing_method"]):
                pass
        with pytest.raises(PatchError, match="no_such_method"):
            check_patches(session, ["test_missing_method"])
    finally:
        PATCHES.pop("test_missing_method")


def test_check_patches_resolves_targets(session):
    labels = check_patches(session, ["quick_gelu", "vision_inputs", "llm_stack", "cuda_to_device", "autocast"])
    assert labels == {
        "quick_gelu": "clip.quick_gelu",
        "vision_inputs": "model.DeepseekOCRModel.forward",
        "llm_stack": "model.DeepseekOCRModel._decode",
        "cuda_to_device": "torch.Tensor.cuda",
        "autocast": "(context only)",
    }


def test_cuda_to_device_moves_to_the_session_device(session):
    own_before = vars(torch.Tensor).get("cuda")
    with runtime_patches(session, ["cuda_to_device"]):
        t = torch.ones(3)
        moved = t.cuda()
        assert moved.device == torch.device("cpu") and moved is t
    assert vars(torch.Tensor).get("cuda") is own_before


def test_nested_blocks_restore_in_order(session, small_inputs):
    before = originals()
    with runtime_patches(session, ["llm_stack"]) as outer:
        inner_forward = vars(twin_model.DeepseekOCRModel)["_decode"]
        with runtime_patches(session, ["llm_stack", "vision_inputs"]) as inner:
            session.forward(small_inputs)
        assert vars(twin_model.DeepseekOCRModel)["_decode"] is inner_forward
    assert originals() == before
    assert outer.count("llm_stack") == 1 and inner.count("llm_stack") == 1


def test_works_on_a_bare_model(session, small_inputs):
    code = model_code(session.model)
    assert code.source == "twin" and {"model", "clip"} <= set(code.modules)
    with runtime_patches(session.model, ["llm_stack"]) as log:
        with torch.no_grad():
            session.model(**small_inputs.forward_kwargs(dtype=torch.float32))
    assert log.first("llm_stack")["num_layers"] == 3

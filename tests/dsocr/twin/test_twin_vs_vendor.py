"""Opt-in (DSOCR_MODEL_PATH): the twin against the vendor's own code.

Same module names and classes, same state-dict keys and shapes, and with the twin's weights loaded into
the vendor model (strict), the same logits on CPU in float32. The vendor hard-codes SAM, CLIP and the
projector at full size, so the fast checks keep the full vision stack and shrink only the decoder
(2 layers, 8 experts, top-2); the full model is compared in Tiny mode (about 13 GB, shared by both).
"""

from __future__ import annotations

import json

import pytest
import torch
from twin_testlib import (
    WORKLOADS,
    cuda_calls_are_noops,
    load_into_vendor,
    reduced_config_and_spec,
    vendor_modeling,
    vendor_on_meta,
)

from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin

pytestmark = pytest.mark.vendor

# Crop mode with 512-pixel views and a 1300x700 page: 2 crops (grid 2x1) + the global view, so the crop
# path, the stitching order, window padding (32 -> 42) and the rel-pos / CLIP position resizing all run,
# at a fraction of Gundam's cost on CPU.
SMALL_CROPS = (VisionWorkload(512, 512, True, tile_size=512), 1300, 700)


@pytest.fixture(scope="module")
def vendor(vendor_dir):
    with vendor_modeling(vendor_dir) as modeling:
        yield modeling


def _reduced(vendor, vendor_dir):
    return reduced_config_and_spec(vendor.DeepseekOCRConfig, ModelSpec, vendor_dir)


@pytest.fixture(scope="module")
def reduced_pair(vendor, vendor_dir):
    config, spec = _reduced(vendor, vendor_dir)
    twin = build_twin(spec, seed=1)
    ref = vendor_on_meta(vendor, config)
    load_into_vendor(ref, twin.state_dict())
    return spec, twin, ref


def _logits(model, kwargs):
    with torch.no_grad(), cuda_calls_are_noops():
        return model(**kwargs)


def test_module_tree_and_state_dict_keys_match_the_vendor(vendor, vendor_dir):
    config = vendor.DeepseekOCRConfig.from_pretrained(str(vendor_dir))
    ref = vendor_on_meta(vendor, config)
    twin = build_twin(ModelSpec.from_config_json(vendor_dir), device="meta")
    assert [(n, type(m).__name__) for n, m in twin.named_modules()] == [
        (n, type(m).__name__) for n, m in ref.named_modules()
    ]
    ref_sd, twin_sd = ref.state_dict(), twin.state_dict()
    assert {k: tuple(v.shape) for k, v in twin_sd.items()} == {k: tuple(v.shape) for k, v in ref_sd.items()}
    assert {k: v.dtype for k, v in twin_sd.items()} == {k: v.dtype for k, v in ref_sd.items()}
    assert sum(p.numel() for p in twin.parameters()) == sum(p.numel() for p in ref.parameters()) == 3_336_106_240
    index = vendor_dir / "model.safetensors.index.json"
    if index.is_file():  # the released checkpoint: every tensor except CLIP's position_ids buffer
        released = set(json.loads(index.read_text())["weight_map"])
        assert set(twin_sd) - released == {"model.vision_model.embeddings.position_ids"}
        assert released <= set(twin_sd)


@pytest.mark.parametrize("case", ["tiny", "small_crops"])
def test_same_logits_as_the_vendor_reduced_decoder(reduced_pair, case):
    spec, twin, ref = reduced_pair
    if case == "tiny":
        inputs = build_inputs(spec, WORKLOADS["tiny"])
    else:
        workload, width, height = SMALL_CROPS
        inputs = build_inputs(spec, workload, width=width, height=height)
        assert inputs.layout.num_crops == 2
    kw = inputs.forward_kwargs(dtype=torch.float32)
    a, b = _logits(twin, kw).logits, _logits(ref, kw).logits
    assert a.shape == b.shape == (1, inputs.seq_len, spec.decoder.vocab_size)
    diff = (a - b).abs().max().item()
    print(f"[{case}] max |logit diff| twin vs vendor: {diff:.3g} (max |logit| {b.abs().max().item():.3g})")
    assert diff <= 1e-4 * max(1.0, b.abs().max().item())


def test_same_decode_step_as_the_vendor(reduced_pair):
    spec, twin, ref = reduced_pair
    inputs = build_inputs(spec, WORKLOADS["tiny"])
    kw = {**inputs.forward_kwargs(dtype=torch.float32), "use_cache": True}
    # an all-zero image skips the vision branch in both (the logit tests above cover it): decoder only
    kw["images"] = [(torch.zeros_like(c), torch.zeros_like(g)) for c, g in kw["images"]]
    steps = []
    for model in (twin, ref):
        prefill = _logits(model, kw)
        steps.append(
            _logits(
                model,
                {"input_ids": torch.tensor([[1234]]), "use_cache": True, "past_key_values": prefill.past_key_values},
            )
        )
    (a, b) = steps
    assert len(a.past_key_values) == len(b.past_key_values) == spec.decoder.num_layers
    assert a.past_key_values[0][0].shape == b.past_key_values[0][0].shape
    torch.testing.assert_close(a.logits, b.logits, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bf16_autocast"])
def test_same_logits_as_the_vendor_full_size_tiny_mode(vendor, vendor_dir, dtype):
    """Full model, Tiny mode: float32 (about 14 GB) and bf16 weights under CPU autocast, as infer() runs."""
    psutil = pytest.importorskip("psutil")
    need = 16 if dtype == torch.float32 else 9
    if psutil.virtual_memory().available < need * 2**30:
        pytest.skip(f"needs about {need} GiB of free memory (the full model, shared by twin and vendor)")
    spec = ModelSpec.from_config_json(vendor_dir)
    twin = build_twin(spec, seed=0, dtype=dtype)
    ref = vendor_on_meta(vendor, vendor.DeepseekOCRConfig.from_pretrained(str(vendor_dir)))
    load_into_vendor(ref, twin.state_dict())
    inputs = build_inputs(spec, WORKLOADS["tiny"])
    kw = inputs.forward_kwargs(dtype=dtype)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16)
    with autocast:
        a = _logits(twin, kw).logits
        b = _logits(ref, kw).logits
    diff = (a - b).abs().max().item()
    print(
        f"[full size, tiny mode, {dtype}] max |logit diff| twin vs vendor: {diff:.3g} "
        f"(max |logit| {b.abs().max().item():.3g})"
    )
    assert a.shape == b.shape == (1, inputs.seq_len, 129280)
    assert torch.isfinite(a).all()
    tol = 1e-4 if dtype == torch.float32 else 2e-2
    assert diff <= tol * max(1.0, b.abs().max().item())

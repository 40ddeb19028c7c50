"""The DeepSeek-OCR 2 twin: the vendor's module tree at full size (meta device), a finite tiny forward,
the encoder mask, and inputs as infer() builds them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from llm_perf_opt.dsocr2.inputs import build_inputs
from llm_perf_opt.dsocr2.layout import VisionWorkload
from llm_perf_opt.dsocr2.spec import ModelSpec
from llm_perf_opt.dsocr2.twin import build_twin
from llm_perf_opt.dsocr2.twin.encoder import encoder_mask

DATA = Path(__file__).parent / "data"
VENDOR_PARAMETERS = 3_389_119_360  # facts/deepseek_ocr2.md: the vendor model built from config.json on meta
VENDOR_MODULES = 4204
INDEX_TENSORS = 2707


def test_full_size_tree_matches_the_vendor():
    model = build_twin(ModelSpec.deepseek_ocr2(), device="meta")
    assert sum(p.numel() for p in model.parameters()) == VENDOR_PARAMETERS
    assert len(list(model.named_modules())) == VENDOR_MODULES
    index = set(DATA.joinpath("weight_index_names.txt").read_text().split())
    assert len(index) == INDEX_TENSORS
    assert set(model.state_dict()) == index


def test_encoder_part_sizes():
    spec = ModelSpec.deepseek_ocr2()
    e = spec.encoder
    model = build_twin(spec, device="meta")
    kv = e.num_kv_heads * e.head_dim
    per_layer = (
        e.hidden_size * e.hidden_size
        + e.hidden_size  # q with bias
        + 2 * (e.hidden_size * kv + kv)  # k, v with bias
        + e.hidden_size * e.hidden_size  # o
        + 3 * e.hidden_size * e.intermediate_size  # gated MLP
        + 2 * e.hidden_size
    )  # two RMSNorms
    expected = e.num_layers * per_layer + e.hidden_size + sum(e.bank_sizes) * e.hidden_size
    assert sum(p.numel() for p in model.model.qwen2_model.parameters()) == expected == 358_256_512
    assert model.model.qwen2_model.query_768.weight.shape == (144, e.hidden_size)
    assert model.model.qwen2_model.query_1024.weight.shape == (256, e.hidden_size)
    assert model.get_submodule("model.qwen2_model.model.model.layers.23.self_attn.k_proj").out_features == kv


def test_encoder_mask_rule():
    n = 3
    types = torch.tensor([[0] * n + [1] * n])
    mask = encoder_mask(types, torch.float32, torch.device("cpu"))[0, 0]
    low = torch.finfo(torch.float32).min
    seen = 0
    for i in range(2 * n):
        for j in range(2 * n):
            sam_i, sam_j = i < n, j < n
            allowed = (sam_i and sam_j) or (not sam_i and sam_j) or (not sam_i and not sam_j and j <= i)
            assert mask[i, j].item() == (0.0 if allowed else low), (i, j)
            seen += 1
    assert seen == (2 * n) ** 2


@pytest.fixture(scope="module")
def tiny():
    return build_twin(ModelSpec.tiny(), seed=0)


def test_tiny_forward_with_crops(tiny):
    spec = ModelSpec.tiny()
    inputs = build_inputs(spec, VisionWorkload(), 1700, 2200)
    crops, glob = inputs.images[0]
    assert tuple(crops.shape) == (2 * 3, 3, 768, 768) and tuple(glob.shape) == (1, 3, 1024, 1024)
    assert inputs.input_ids[0, 0].item() == 0 and int(inputs.images_seq_mask.sum()) == 256 + 1 + 6 * 144
    assert (inputs.input_ids[inputs.images_seq_mask] == 128815).all()
    assert inputs.images_spatial_crop.tolist() == [[2, 3]]
    with torch.no_grad():
        out = tiny(**inputs.forward_kwargs(dtype=torch.float32))
    assert out.logits.shape == (1, inputs.seq_len, spec.decoder.vocab_size)
    assert torch.isfinite(out.logits).all()


def test_tiny_forward_without_crops(tiny):
    spec = ModelSpec.tiny()
    inputs = build_inputs(spec, VisionWorkload(), 600, 500)
    crops, _ = inputs.images[0]
    assert tuple(crops.shape) == (1, 3, 1024, 1024) and crops.dtype == torch.float32 and not crops.any()
    with torch.no_grad():
        out = tiny(**inputs.forward_kwargs(dtype=torch.float32))
    assert torch.isfinite(out.logits).all()


def test_seeded_weights_repeat(tiny):
    again = build_twin(ModelSpec.tiny(), seed=0)
    other = build_twin(ModelSpec.tiny(), seed=1)
    name = "model.qwen2_model.query_1024.weight"
    assert torch.equal(tiny.get_parameter(name), again.get_parameter(name))
    assert not torch.equal(tiny.get_parameter(name), other.get_parameter(name))


def test_parts_name_modules_of_the_twin(tiny):
    from llm_perf_opt.dsocr2 import parts

    names = dict(tiny.named_modules())
    checked = 0
    for part in parts.PARTS:
        assert part.path in names, part.path
        checked += 1
    assert checked == len(parts.PARTS) == 7
    assert parts.encoder_layer_path(1) in names and parts.alias("model.layers.2") == "decoder.layer.2"
    assert parts.VISION_PATHS == ("model.sam_model", "model.qwen2_model", "model.projector")

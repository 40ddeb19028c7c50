"""The inputs builder: the tensors infer() builds, for synthetic pages and real image files."""

from __future__ import annotations

import pytest
import torch
from PIL import Image

from llm_perf_opt.config.schemas import DEFAULT_PROMPT
from llm_perf_opt.deepseek_ocr_shared.inputs import FALLBACK_PROMPT_TOKENS, prompt_tokens
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError

SPEC = ModelSpec.deepseek_ocr()


def test_gundam_letter_page_tensors():
    inp = build_inputs(SPEC, VisionWorkload(1024, 640, True), 1700, 2200)
    n_prompt = len(FALLBACK_PROMPT_TOKENS[DEFAULT_PROMPT][1])
    assert n_prompt == 4
    assert inp.seq_len == 1 + 903 + n_prompt
    ids, mask = inp.input_ids[0], inp.images_seq_mask[0]
    assert ids[0].item() == SPEC.bos_token_id
    assert mask.sum().item() == 903 and bool((ids[mask] == SPEC.image_token_id).all())
    assert not mask[0] and not mask[-n_prompt:].any()
    crops, global_view = inp.images[0]
    assert crops.shape == (6, 3, 640, 640) and crops.dtype == torch.bfloat16
    assert global_view.shape == (1, 3, 1024, 1024) and global_view.dtype == torch.bfloat16
    assert inp.images_spatial_crop.tolist() == [[2, 3]]
    assert crops.float().sum().item() != 0 and global_view.float().sum().item() != 0


@pytest.mark.parametrize(
    "workload, side, tokens",
    [
        (VisionWorkload(512, 512, False), 512, 73),
        (VisionWorkload(1280, 1280, False), 1280, 421),
    ],
)
def test_no_crop_modes_have_zero_crop_tensor_of_base_size(workload, side, tokens):
    inp = build_inputs(SPEC, workload, 1700, 2200)
    crops, global_view = inp.images[0]
    assert crops.shape == (1, 3, workload.base_size, workload.base_size) and crops.dtype == torch.float32
    assert crops.abs().sum().item() == 0
    assert global_view.shape == (1, 3, side, side)
    assert inp.images_seq_mask.sum().item() == tokens
    assert inp.images_spatial_crop.tolist() == [[1, 1]]


def test_padding_is_grey_and_pixels_are_normalised():
    # A 2:1 landscape page padded into a 1024 square: top and bottom rows are the grey pad (127).
    inp = build_inputs(SPEC, VisionWorkload(1024, 1024, False), 2000, 1000)
    g = inp.images[0][1][0].float()
    grey = (127 / 255 - 0.5) / 0.5
    assert torch.allclose(g[:, 0, :], torch.full_like(g[:, 0, :], grey), atol=1e-2)
    assert g.min() >= -1.0 and g.max() <= 1.0


def test_real_image_file(tmp_path):
    path = tmp_path / "page.png"
    Image.new("RGB", (800, 600), (200, 30, 30)).save(path)
    inp = build_inputs(SPEC, VisionWorkload(1024, 640, True), image=path)
    assert (inp.layout.page_width, inp.layout.page_height) == (800, 600)
    assert inp.images_spatial_crop.tolist() == [[inp.layout.w_crop, inp.layout.h_crop]]


def test_bad_inputs(tmp_path):
    with pytest.raises(ConfigError, match="workload.page.image"):
        build_inputs(SPEC, VisionWorkload(), image=tmp_path / "missing.png")
    junk = tmp_path / "junk.png"
    junk.write_bytes(b"not a png")
    with pytest.raises(ConfigError, match="could not be read as an image"):
        build_inputs(SPEC, VisionWorkload(), image=junk)
    with pytest.raises(ConfigError, match="needs a tokenizer"):
        prompt_tokens("<image>\nSomething else.")
    with pytest.raises(ConfigError, match="exactly once"):
        prompt_tokens("no image here")


def test_forward_kwargs_casts_images_only():
    inp = build_inputs(ModelSpec.tiny(), VisionWorkload(512, 512, False), 700, 900)
    kw = inp.forward_kwargs(dtype=torch.float32)
    assert kw["images"][0][1].dtype == torch.float32 and kw["input_ids"].dtype == torch.long
    assert kw["images_spatial_crop"] is inp.images_spatial_crop

"""The tensors DeepSeek-OCR 2's `infer()` builds for one page, without running `infer()`.

`infer()` (modeling_deepseekocr2.py) tokenises the prompt around `<image>`, inserts the image-token ids
of the view layout (id 128815: 256 global + 1 separator + 144 per crop), prepends BOS (id 0), pads the
page (grey 127, aspect kept) to `base_size` as the global view and, when the page is larger than 768 on
a side, cuts `dynamic_preprocess`'s 768-pixel tiles row by row; pixels go through ToTensor +
Normalize(0.5, 0.5) and become bf16; without crops `images_crop` is a float32 zero tensor
(1, 3, base_size, base_size). `images` is `[(images_crop, images_ori)]`, `images_spatial_crop`
`[[w_crop, h_crop]]`. The pixel and token helpers are v1's (the same code in both vendor files); only the
layout differs (`dsocr2.layout`).
"""
from __future__ import annotations

from pathlib import Path

import torch
from PIL import Image

from llm_perf_opt.config.schemas import DEFAULT_PROMPT
from llm_perf_opt.dsocr.inputs import (
    Inputs,
    image_token_ids,
    load_page,
    prompt_tokens,
    render_views,
    synthetic_page,
)
from llm_perf_opt.dsocr2.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr2.spec import FAMILY, ModelSpec
from llm_perf_opt.errors import ConfigError

__all__ = ["Inputs", "build_inputs", "OFFICIAL_PROMPT"]

# The prompt of the model card's example; needs a tokenizer (no built-in token ids), so the default
# stays v1's "<image>\nFree OCR." whose ids are known without one.
OFFICIAL_PROMPT = "<image>\n<|grounding|>Convert the document to markdown. "


def build_inputs(
    spec: ModelSpec,
    workload: VisionWorkload,
    width: int = 1700,
    height: int = 2200,
    image: str | Path | Image.Image | None = None,
    prompt: str = DEFAULT_PROMPT,
    model_dir: str | Path | None = None,
    seed: int = 0,
) -> Inputs:
    """Everything `infer()` hands to `generate()` for one page (a file, a PIL image, or a synthetic page)."""
    if not isinstance(spec, ModelSpec):
        raise ConfigError.field("model spec", type(spec).__name__, f"must be a {FAMILY} ModelSpec")
    if image is None:
        page = synthetic_page(width, height, seed)
    elif isinstance(image, Image.Image):
        page = image.convert("RGB")
    else:
        page = load_page(image)
    layout = compute_view_layout(workload, page.width, page.height)
    before, after, source = prompt_tokens(prompt, model_dir)
    too_big = [t for t in before + after if t >= spec.decoder.vocab_size]
    if too_big:
        raise ConfigError(f"prompt token ids {too_big} are outside the model's vocabulary ({spec.decoder.vocab_size})")
    image_ids = image_token_ids(layout, spec.image_token_id)
    ids = [spec.bos_token_id] + before + image_ids + after
    mask = [False] * (1 + len(before)) + [True] * len(image_ids) + [False] * len(after)
    crops, global_view = render_views(page, workload, layout)  # reads only the layout's sizes
    return Inputs(
        input_ids=torch.tensor([ids], dtype=torch.long),
        images=[(crops, global_view)],
        images_seq_mask=torch.tensor([mask], dtype=torch.bool),
        images_spatial_crop=torch.tensor([[layout.w_crop, layout.h_crop]], dtype=torch.long),
        layout=layout,
        prompt_token_ids=before + after,
        prompt_source=source,
    )

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

from llm_perf_opt.deepseek_ocr_shared.inputs import Inputs, inputs_builder
from llm_perf_opt.dsocr2.layout import compute_view_layout
from llm_perf_opt.dsocr2.spec import FAMILY, ModelSpec

__all__ = ["Inputs", "build_inputs", "OFFICIAL_PROMPT"]

# The prompt of the model card's example; needs a tokenizer (no built-in token ids), so the default
# stays v1's "<image>\nFree OCR." whose ids are known without one.
OFFICIAL_PROMPT = "<image>\n<|grounding|>Convert the document to markdown. "


# build_inputs(spec, workload, width=1700, height=2200, image=None, prompt=DEFAULT_PROMPT, model_dir=None, seed=0):
# a spec of v1 (or anything but this family's ModelSpec) is refused
build_inputs = inputs_builder(compute_view_layout, ModelSpec, FAMILY)

"""The tensors DeepSeek-OCR v1's `infer()` builds for one page, without running `infer()`: the shared page inputs
(`deepseek_ocr_shared.inputs.page_inputs`: tokens, pixels, views) under v1's layout (`dsocr.layout`)."""

from __future__ import annotations

from llm_perf_opt.deepseek_ocr_shared.inputs import Inputs, inputs_builder
from llm_perf_opt.dsocr.layout import compute_view_layout

__all__ = ["Inputs", "build_inputs"]

# build_inputs(spec, workload, width=1700, height=2200, image=None, prompt=DEFAULT_PROMPT, model_dir=None, seed=0)
build_inputs = inputs_builder(compute_view_layout)

"""The tensors DeepSeek-OCR v1's `infer()` builds for one page, without running `infer()`: the shared page inputs
(`deepseek_ocr_shared.inputs.page_inputs`: tokens, pixels, views) under v1's layout (`dsocr.layout`)."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

from llm_perf_opt.config.schemas import DEFAULT_PROMPT
from llm_perf_opt.deepseek_ocr_shared.inputs import Inputs, page_inputs
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec


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
    return page_inputs(spec, workload, compute_view_layout, width, height, image, prompt, model_dir, seed)

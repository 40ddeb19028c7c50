"""The jobs' first step: the whole configuration checked, plain rules and DeepSeek-OCR rules, before any work.

`to_typed_config` runs the schemas' plain rules (types, ranges, choices, files that must exist); this
step adds the model's own: the vision workload (`dsocr.layout.VisionWorkload`: multiples of 64, crop
mode tiling at `image_size`), the prompt's `<image>` placeholder and its token ids, the page's size
(an image file's header), the model's dimensions (the twin's named spec or the vendor's config.json),
the decode steps (the prompt plus `trace.decode_steps` within the model's `max_position_embeddings`).
Every violation is one `ConfigError` line naming the field; nothing is built or written before it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from llm_perf_opt.config import RootConfig, to_typed_config
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError


@dataclass(frozen=True)
class ValidJob:
    """A configuration that passed every check, with what the checks computed."""

    cfg: RootConfig
    spec: ModelSpec
    workload: VisionWorkload
    page_width: int
    page_height: int
    prompt_tokens: int  # text tokens of the prompt (BOS and image tokens excluded)

    @property
    def page_size(self) -> tuple[int, int]:
        return self.page_width, self.page_height


def vision_workload(cfg: RootConfig) -> VisionWorkload:
    """The workload's vendor knobs as the DeepSeek-OCR type, which checks the model's rules."""
    w = cfg.workload
    return VisionWorkload(base_size=w.base_size, image_size=w.image_size, crop_mode=w.crop_mode,
                          tile_size=w.tile_size)


def model_spec_for(cfg: RootConfig) -> ModelSpec:
    """The ModelSpec without building a model: the twin's named spec or the vendor's config.json."""
    if cfg.model.source == "vendor":
        return ModelSpec.from_config_json(cfg.model.path)
    return ModelSpec.named(cfg.model.spec)


def page_size(cfg: RootConfig) -> tuple[int, int]:
    """(width, height) of the page: the image file's size when one is given (header only), else the config's."""
    from PIL import Image

    page = cfg.workload.page
    if page.image is None:
        return page.width, page.height
    try:
        with Image.open(page.image) as img:
            return img.size
    except (OSError, ValueError) as exc:
        raise ConfigError(f"workload.page.image={page.image!r} could not be read as an image: {exc}") from None


def tokenizer_dir(cfg: RootConfig) -> str | None:
    """The vendor model directory (its tokenizer, when it has one, gives the prompt tokens)."""
    return cfg.model.path if cfg.model.source == "vendor" else None


def validate(raw: Any) -> ValidJob:
    """Every rule, plain and DeepSeek-OCR's, on a composed config; ConfigError on the first violation."""
    from llm_perf_opt.dsocr.decode import check_decode_steps
    from llm_perf_opt.dsocr.inputs import prompt_tokens

    cfg = to_typed_config(raw)
    workload = vision_workload(cfg)
    spec = model_spec_for(cfg)
    width, height = page_size(cfg)
    before, after, _ = prompt_tokens(cfg.workload.prompt, tokenizer_dir(cfg))
    check_decode_steps(cfg.trace.decode_steps, 1 + compute_view_layout(workload, width, height).image_tokens
                       + len(before) + len(after), spec.decoder.max_position_embeddings)
    return ValidJob(cfg, spec, workload, width, height, len(before) + len(after))

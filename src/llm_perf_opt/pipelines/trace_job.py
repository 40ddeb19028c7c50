"""The trace job's stages in order; each stage reads and writes typed artifacts in the run directory."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig
from PIL import Image

from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.config import RootConfig, to_typed_config
from llm_perf_opt.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.inputs import Inputs, build_inputs, prompt_tokens
from llm_perf_opt.dsocr.layout import compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.pipelines.common import progress

SUMMARY_SCHEMA, SUMMARY_VERSION = "llm_perf_opt.summary", 1


def model_spec_for(cfg: RootConfig) -> ModelSpec:
    """The ModelSpec without building a model: the twin's named spec or the vendor's config.json."""
    if cfg.model.source == "vendor":
        return ModelSpec.from_config_json(cfg.model.path)
    return ModelSpec.named(cfg.model.spec)


def page_size(cfg: RootConfig) -> tuple[int, int]:
    """(width, height) of the page: the image file's size when one is given (header only), else the config's."""
    page = cfg.workload.page
    if page.image is None:
        return page.width, page.height
    try:
        with Image.open(page.image) as img:
            return img.size
    except (OSError, ValueError) as exc:
        raise ConfigError(f"workload.page.image={page.image!r} could not be read as an image: {exc}") from None


def prompt_token_count(cfg: RootConfig) -> int:
    before, after, _ = prompt_tokens(cfg.workload.prompt, cfg.model.path if cfg.model.source == "vendor" else None)
    return len(before) + len(after)


def analytic_model_for(cfg: RootConfig, spec: ModelSpec, width: int, height: int) -> DeepseekOCRAnalyticModel:
    """The analytic model with exactly the knobs the job runs: workload, page, prompt, dtype, attention."""
    # The vendor decoder has no SDPA path for plain multi-head attention: it is always eager.
    eager = cfg.model.source == "vendor" or cfg.runtime.attn_implementation == "eager"
    return DeepseekOCRAnalyticModel(
        spec, compute_view_layout(cfg.workload.vision(), width, height),
        prompt_tokens=prompt_token_count(cfg), dtype=cfg.runtime.dtype,
        decoder_attention="eager" if eager else "sdpa",
    )


def build_job_inputs(cfg: RootConfig, spec: ModelSpec) -> Inputs:
    w = cfg.workload
    return build_inputs(
        spec, w.vision(), width=w.page.width, height=w.page.height, image=w.page.image, prompt=w.prompt,
        model_dir=cfg.model.path if cfg.model.source == "vendor" else None,
    )


def run_trace(raw_cfg: DictConfig, out_dir: Path) -> dict[str, Any]:
    cfg = to_typed_config(raw_cfg)
    progress(f"run dir {out_dir}")
    spec = model_spec_for(cfg)
    inputs = build_job_inputs(cfg, spec)
    layout = inputs.layout
    summary: dict[str, Any] = {
        "model": {"name": cfg.model.name, "source": cfg.model.source, "spec": spec.name},
        "workload": {
            "mode": cfg.workload.name, "base_size": cfg.workload.base_size, "image_size": cfg.workload.image_size,
            "crop_mode": cfg.workload.crop_mode, "tile_size": cfg.workload.tile_size,
        },
        "page": {"width": layout.page_width, "height": layout.page_height, "image": cfg.workload.page.image},
        "layout": layout.as_dict(),
        "tokens": {
            "image": layout.image_tokens, "prompt": len(inputs.prompt_token_ids), "sequence": inputs.seq_len,
            "prompt_source": inputs.prompt_source,
        },
        "tensors": inputs.shapes(),
        "status": "ok",
    }
    write_artifact(out_dir / "summary.json", SUMMARY_SCHEMA, SUMMARY_VERSION, summary, config=raw_cfg)
    print_summary(summary)
    return summary


def print_summary(summary: dict[str, Any]) -> None:
    lay, tok = summary["layout"], summary["tokens"]
    wl = summary["workload"]
    print(
        f"{summary['model']['name']} | mode {wl['mode']} (base {wl['base_size']}, image {wl['image_size']}, "
        f"crop {wl['crop_mode']}) | page {lay['page_width']}x{lay['page_height']}\n"
        f"  grid {lay['w_crop']}x{lay['h_crop']} ({lay['num_crops']} crops, {lay['num_views']} views) | "
        f"image tokens {tok['image']} (global {lay['global_tokens']}, local {lay['local_tokens']}) | "
        f"sequence {tok['sequence']}"
    )

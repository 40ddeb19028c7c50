"""DeepSeek-OCR 2's loaders for the shared session (`deepseek_ocr_shared.session.DeepSeekSession`): the twin by
`model.spec` (`dsocr2.twin.build_twin`) and the vendor code (`modeling_deepseekocr2`, `deepencoderv2`, the
shared `modeling_deepseekv2`) through `model_runtime.vendor.load_vendor` with v2's class names and spec."""

from __future__ import annotations

import torch

from llm_perf_opt.config.schemas import ModelConfig
from llm_perf_opt.dsocr2.spec import FAMILY, ModelSpec
from llm_perf_opt.model_runtime import vendor
from llm_perf_opt.model_runtime.loading import LoadedModel

# What the pipeline relies on in the vendor code, by module (the classes the twin mirrors, the patch points).
REQUIRED_VENDOR_NAMES: dict[str, tuple[str, ...]] = {
    "modeling_deepseekocr2": (
        "DeepseekOCR2ForCausalLM",
        "DeepseekOCR2Model",
        "DeepseekOCR2Config",
        "DeepseekOCR2Model.forward",
    ),
    "modeling_deepseekv2": (
        "DeepseekV2Model",
        "DeepseekV2Model.forward",
        "DeepseekV2DecoderLayer",
        "DeepseekV2MoE",
        "MoEGate",
        "DeepseekV2MLP",
        "DeepseekV2RMSNorm",
    ),
    "deepencoderv2": (
        "ImageEncoderViT",
        "ImageEncoderViT.forward",
        "Qwen2Decoder2Encoder",
        "CustomQwen2Decoder",
        "CustomQwen2Decoder.forward",
        "MlpProjector",
    ),
}


def load_twin(model_cfg: ModelConfig, device: torch.device, dtype: torch.dtype, attn: str) -> LoadedModel:
    """The DeepSeek-OCR 2 twin named by `model.spec`, with seeded random weights (`model.seed`)."""
    from llm_perf_opt.dsocr2.twin import build_twin

    spec = ModelSpec.named(model_cfg.spec)
    with torch.random.fork_rng(devices=[]):
        model = build_twin(spec, device=device, dtype=dtype, attn_implementation=attn, seed=model_cfg.seed)
    return LoadedModel(model=model, spec=spec, source="twin", device=device, dtype=dtype, attn_implementation=attn)


def load_vendor(model_cfg: ModelConfig, device: torch.device, dtype: torch.dtype, attn: str) -> LoadedModel:
    """`DeepseekOCR2ForCausalLM` from the vendor code at `model.path` (checkpoint or random weights)."""
    return vendor.load_vendor(
        model_cfg,
        device,
        dtype,
        attn,
        required=REQUIRED_VENDOR_NAMES,
        model_module="modeling_deepseekocr2",
        model_class="DeepseekOCR2ForCausalLM",
        spec_from=ModelSpec.from_config_dict,
        family=FAMILY,
    )


LOADERS = {"twin": load_twin, "vendor": load_vendor}

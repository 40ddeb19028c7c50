"""DeepSeek-OCR v1's session: the twin by `model.spec` (`dsocr.twin.build_twin`) and the vendor code
(`modeling_deepseekocr`, `deepencoder`, `modeling_deepseekv2`) through `model_runtime.vendor.load_vendor`, in
the session both generations share (`deepseek_ocr_shared.session.DeepSeekSession`).

    with DeepSeekOCRSession.open(cfg.model, cfg.runtime) as session:
        out = session.forward(inputs)
"""

from __future__ import annotations

import torch

from llm_perf_opt.config.schemas import ModelConfig
from llm_perf_opt.deepseek_ocr_shared.session import DeepSeekSession
from llm_perf_opt.dsocr.parts import PARTS
from llm_perf_opt.dsocr.patches import builtin  # noqa: F401 - registers v1's patches and its twin package
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.model_runtime import vendor
from llm_perf_opt.model_runtime.loading import LoadedModel

FAMILY = "DeepSeek-OCR"
# What the pipeline relies on in the vendor code, by module: the classes the twin mirrors and the patch
# points. A missing name means the vendor code changed; the session refuses it with a PatchError.
REQUIRED_VENDOR_NAMES: dict[str, tuple[str, ...]] = {
    "modeling_deepseekocr": (
        "DeepseekOCRForCausalLM",
        "DeepseekOCRModel",
        "DeepseekOCRConfig",
        "DeepseekOCRModel.forward",
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
    "deepencoder": ("ImageEncoderViT", "VitModel", "MlpProjector", "quick_gelu", "Block", "NoTPTransformerBlock"),
}


def load_twin(model_cfg: ModelConfig, device: torch.device, dtype: torch.dtype, attn: str) -> LoadedModel:
    """The architecture twin named by `model.spec`, with seeded random weights (`model.seed`)."""
    try:
        from llm_perf_opt.dsocr.twin import build_twin
    except ImportError as exc:
        raise ConfigError(
            f"model=twin: the architecture twin (llm_perf_opt.dsocr.twin) cannot be imported: {exc}"
        ) from None
    spec = ModelSpec.named(model_cfg.spec)
    with torch.random.fork_rng(devices=[]):
        model = build_twin(spec, device=device, dtype=dtype, attn_implementation=attn, seed=model_cfg.seed)
    return LoadedModel(model=model, spec=spec, source="twin", device=device, dtype=dtype, attn_implementation=attn)


def load_vendor(model_cfg: ModelConfig, device: torch.device, dtype: torch.dtype, attn: str) -> LoadedModel:
    """`DeepseekOCRForCausalLM` from the vendor code at `model.path` (checkpoint or random weights)."""
    return vendor.load_vendor(
        model_cfg,
        device,
        dtype,
        attn,
        required=REQUIRED_VENDOR_NAMES,
        model_module="modeling_deepseekocr",
        model_class="DeepseekOCRForCausalLM",
        spec_from=ModelSpec.from_config_dict,
        family=FAMILY,
    )


LOADERS = {"twin": load_twin, "vendor": load_vendor}


class DeepSeekOCRSession(DeepSeekSession):
    """DeepSeek-OCR v1's loaded model (vendor or twin) and how to run it; open with `DeepSeekOCRSession.open(...)`."""

    loaders = LOADERS
    parts = PARTS

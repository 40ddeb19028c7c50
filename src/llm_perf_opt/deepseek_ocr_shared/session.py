"""The session of the DeepSeek-OCR model line (v1 and 2 alike): `model_runtime.session.Session` with what both
generations' `DeepseekOCR*Model` need. Each family's loaders and parts complete it (`dsocr.session`, or the
`loaders` / `part_list` that `open` takes); `family_loaders` makes those loaders from the family's names.

* parameter counts: the two learned separator vectors of `model.model` (`image_newline`, `view_seperator`;
  v2 has only the second) count as one entry;
* a decode step passes no images (the vision branch runs only for a prompt of more than one token);
* a vendor forward's debugging `print`s are silenced (`quiet_prints`, which a family may map to its own
  patch through `patch_names`).
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

import torch

from llm_perf_opt.config.schemas import ModelConfig
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.model_runtime import vendor
from llm_perf_opt.model_runtime.loading import LoadedModel
from llm_perf_opt.model_runtime.session import Session

# What the pipeline relies on in `modeling_deepseekv2` (the DeepSeek-V2 decoder both generations' vendor code loads).
DECODER_VENDOR_NAMES: tuple[str, ...] = (
    "DeepseekV2Model",
    "DeepseekV2Model.forward",
    "DeepseekV2DecoderLayer",
    "DeepseekV2MoE",
    "MoEGate",
    "DeepseekV2MLP",
    "DeepseekV2RMSNorm",
)

Loader = Callable[[ModelConfig, torch.device, torch.dtype, str], LoadedModel]


def family_loaders(
    *,
    spec_class: Any,
    twin_module: str,
    required: Mapping[str, tuple[str, ...]],
    model_module: str,
    model_class: str,
    family: str,
) -> dict[str, Loader]:
    """A family's session loaders, by `model.source`: "twin" (the `build_twin` of `twin_module`, imported when a
    twin is loaded, for the `spec_class.named(model.spec)` spec, seeded with `model.seed`) and "vendor"
    (`model_runtime.vendor.load_vendor` with the family's `required` names, `model_module.model_class`, its
    `spec_class.from_config_dict` and its label)."""

    def load_twin(model_cfg: ModelConfig, device: torch.device, dtype: torch.dtype, attn: str) -> LoadedModel:
        """The architecture twin named by `model.spec`, with seeded random weights (`model.seed`)."""
        try:
            build_twin = importlib.import_module(twin_module).build_twin
        except ImportError as exc:
            raise ConfigError(f"model=twin: the architecture twin ({twin_module}) cannot be imported: {exc}") from None
        spec = spec_class.named(model_cfg.spec)
        with torch.random.fork_rng(devices=[]):
            model = build_twin(spec, device=device, dtype=dtype, attn_implementation=attn, seed=model_cfg.seed)
        return LoadedModel(model=model, spec=spec, source="twin", device=device, dtype=dtype, attn_implementation=attn)

    def load_vendor(model_cfg: ModelConfig, device: torch.device, dtype: torch.dtype, attn: str) -> LoadedModel:
        """The family's `model_class` from the vendor code at `model.path` (checkpoint or random weights)."""
        return vendor.load_vendor(
            model_cfg,
            device,
            dtype,
            attn,
            required=required,
            model_module=model_module,
            model_class=model_class,
            spec_from=spec_class.from_config_dict,
            family=family,
        )

    return {"twin": load_twin, "vendor": load_vendor}


class DeepSeekSession(Session):
    separators = ("image_newline", "view_seperator")  # DeepseekOCRModel's learned separator vectors
    decode_step_inputs = {"images": None, "images_seq_mask": None, "images_spatial_crop": None}
    vendor_patches = ("quiet_prints",)

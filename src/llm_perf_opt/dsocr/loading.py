"""What loading a model gives the session: `LoadedModel`, and the twin's loader (`vendor.load_vendor` is
the vendor code's)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType

import torch
from torch import nn

from llm_perf_opt.config.schemas import ModelConfig
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError


@dataclass
class LoadedModel:
    """A built model in eval mode on its device, and what the loader did to get it."""

    model: nn.Module
    spec: ModelSpec
    source: str  # "twin" | "vendor"
    device: torch.device
    dtype: torch.dtype
    attn_implementation: str  # what the model was built with
    weights: str = "random"  # "random" | "checkpoint"
    vendor_modules: dict[str, ModuleType] = field(default_factory=dict)  # the vendor package's modules by short name
    measures: list[str] = field(default_factory=list)  # scoped measures taken, for summary.json
    warnings: list[str] = field(default_factory=list)  # to be raised as RuntimeWarnings by the caller
    load_seconds: float = 0.0  # set by the session, which times the whole open


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

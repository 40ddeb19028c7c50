"""What loading a model gives the session: `LoadedModel` (a family's twin loader and `vendor.load_vendor` each
return one)."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

import torch
from torch import nn


@dataclass
class LoadedModel:
    """A built model in eval mode on its device, and what the loader did to get it."""

    model: nn.Module
    spec: Any  # the family's ModelSpec (its `name` is reported)
    source: str  # "twin" | "vendor"
    device: torch.device
    dtype: torch.dtype
    attn_implementation: str  # what the model was built with
    weights: str = "random"  # "random" | "checkpoint"
    vendor_modules: dict[str, ModuleType] = field(default_factory=dict)  # the vendor package's modules by short name
    measures: list[str] = field(default_factory=list)  # scoped measures taken, for summary.json
    warnings: list[str] = field(default_factory=list)  # to be raised as RuntimeWarnings by the caller
    load_seconds: float = 0.0  # set by the session, which times the whole open

"""The attention-implementation rule, in one place: which implementation a model is built with.

`runtime.attn_implementation` is one of eager, sdpa, flash_attention_2. flash_attention_2 needs a CUDA
device and the `flash_attn` package; without the package the session falls back to sdpa (and says so),
while a direct `build_twin` refuses it. The config schema checks only what plain values can tell
(a CPU runtime with flash_attention_2); everything that needs torch or an import is checked here.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Optional

import torch

from llm_perf_opt.errors import ConfigError

ATTN_IMPLEMENTATIONS = ("eager", "sdpa", "flash_attention_2")
FIELD = "runtime.attn_implementation"


def flash_attn_importable() -> bool:
    """True when the `flash_attn` package imports (a broken CUDA build raises anything at import)."""
    if importlib.util.find_spec("flash_attn") is None:
        return False
    try:
        importlib.import_module("flash_attn")
    except Exception:  # noqa: BLE001
        return False
    return True


def resolve_attn_implementation(
    requested: str, device: Optional[torch.device | str] = None, *, fallback: bool = True
) -> tuple[str, list[str]]:
    """The implementation to build with, and the fallbacks taken (as messages).

    `device` None skips the device rule (the caller checks it where the device is known). Without
    `flash_attn`, flash_attention_2 becomes sdpa when `fallback`, else a ConfigError.
    """
    if requested not in ATTN_IMPLEMENTATIONS:
        raise ConfigError.field(FIELD, requested, f"one of {', '.join(ATTN_IMPLEMENTATIONS)}")
    if requested != "flash_attention_2":
        return requested, []
    if device is not None and torch.device(device).type != "cuda":
        raise ConfigError.field(
            FIELD,
            requested,
            f"flash_attention_2 needs runtime=cuda (device {str(torch.device(device))!r}); use eager or sdpa on CPU",
        )
    if flash_attn_importable():
        return requested, []
    if not fallback:
        raise ConfigError.field(FIELD, requested, "needs the flash_attn package (CUDA only); use eager or sdpa")
    return "sdpa", ["flash_attention_2 requested but flash_attn does not import: falling back to sdpa"]

"""DeepSeek-OCR v1's runtime patches of the loaded model code (vendor or twin), and the mechanism's names with them.

    from llm_perf_opt.dsocr.patches import runtime_patches
    with runtime_patches(session, ["quick_gelu", "vision_inputs", "llm_stack"]) as log:
        session.forward(inputs)
    log.save(run_dir)            # runtime_log.json

| file | job |
|---|---|
| `builtin.py` | v1's patches at v1's targets: `quick_gelu`, `vision_inputs`, `llm_stack`, the loops, `quiet_prints` |

The mechanism (targets, registry, restoration) is `model_runtime.patches` (its names are exported here, after
v1's patches are registered); the log they write is `model_runtime.runtime_log`.
"""

# The names below load on first use (PEP 562): importing this package imports no torch. Any of them loads
# `builtin` first, which registers v1's patches.
from __future__ import annotations

import importlib

from llm_perf_opt.lazy import lazy_attributes, lazy_names

_LAZY = {
    "llm_perf_opt.model_runtime.patches": (
        "PATCHES",
        "ModelCode",
        "Patch",
        "PatchContext",
        "PatchTarget",
        "available_patches",
        "check_patches",
        "get_patch",
        "model_code",
        "register_patch",
        "runtime_patches",
        "untracked",
    ),
    "llm_perf_opt.dsocr.patches.builtin": (
        "DEFAULT_TRACE_PATCHES",
        "LOOP_PATCHES",
        "TRACE_PATCHES",
        "quick_gelu_eager",
    ),
}


def _register_builtin() -> None:
    importlib.import_module("llm_perf_opt.dsocr.patches.builtin")  # registers the patches


__getattr__ = lazy_attributes(__name__, _LAZY, globals(), before=_register_builtin)

__all__ = lazy_names(_LAZY)

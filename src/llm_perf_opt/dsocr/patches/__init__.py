"""Runtime patches of the loaded model code (vendor or twin) and the `RuntimeLog` they write.

    from llm_perf_opt.dsocr.patches import runtime_patches
    with runtime_patches(session, ["quick_gelu", "vision_inputs", "llm_stack"]) as log:
        session.forward(inputs)
    log.save(run_dir)            # runtime_log.json

See `framework` (targets, registry, restoration) and `builtin` (the named patches).
"""

# The names below load on first use (PEP 562): reading a run's runtime_log.json (`./dev group`,
# `patches.runtime_log`) imports no torch. Any of them loads `builtin` first, which registers the patches.
from __future__ import annotations

import importlib

from llm_perf_opt.lazy import lazy_attributes, lazy_names

_LAZY = {
    "llm_perf_opt.dsocr.patches.framework": (
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
    "llm_perf_opt.dsocr.patches.runtime_log": (
        "RUNTIME_LOG_FILE",
        "RUNTIME_LOG_SCHEMA",
        "RUNTIME_LOG_VERSION",
        "RuntimeLog",
        "load_runtime_log",
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

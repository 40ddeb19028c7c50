"""Runtime patches of the loaded model code (vendor or twin) and the `RuntimeLog` they write.

    from llm_perf_opt.dsocr.patches import runtime_patches
    with runtime_patches(session, ["quick_gelu", "vision_inputs", "llm_stack"]) as log:
        session.forward(inputs)
    log.save(run_dir)            # runtime_log.json

See `framework` (targets, registry, restoration) and `builtin` (the named patches).
"""
from llm_perf_opt.dsocr.patches.framework import (
    PATCHES,
    ModelCode,
    Patch,
    PatchContext,
    PatchTarget,
    available_patches,
    check_patches,
    get_patch,
    model_code,
    register_patch,
    runtime_patches,
    untracked,
)
from llm_perf_opt.dsocr.patches.runtime_log import (
    RUNTIME_LOG_FILE,
    RUNTIME_LOG_SCHEMA,
    RUNTIME_LOG_VERSION,
    RuntimeLog,
    load_runtime_log,
)
from llm_perf_opt.dsocr.patches.builtin import (  # registers the patches
    DEFAULT_TRACE_PATCHES,
    LOOP_PATCHES,
    TRACE_PATCHES,
    quick_gelu_eager,
)

__all__ = [
    "DEFAULT_TRACE_PATCHES", "LOOP_PATCHES", "TRACE_PATCHES", "PATCHES", "ModelCode", "Patch", "PatchContext", "PatchTarget", "RUNTIME_LOG_FILE",
    "RUNTIME_LOG_SCHEMA", "RUNTIME_LOG_VERSION", "RuntimeLog", "available_patches", "check_patches", "get_patch",
    "load_runtime_log", "model_code", "quick_gelu_eager", "register_patch", "runtime_patches", "untracked",
]

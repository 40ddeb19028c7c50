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

_LAZY = {
    'PATCHES': 'llm_perf_opt.dsocr.patches.framework',
    'ModelCode': 'llm_perf_opt.dsocr.patches.framework',
    'Patch': 'llm_perf_opt.dsocr.patches.framework',
    'PatchContext': 'llm_perf_opt.dsocr.patches.framework',
    'PatchTarget': 'llm_perf_opt.dsocr.patches.framework',
    'available_patches': 'llm_perf_opt.dsocr.patches.framework',
    'check_patches': 'llm_perf_opt.dsocr.patches.framework',
    'get_patch': 'llm_perf_opt.dsocr.patches.framework',
    'model_code': 'llm_perf_opt.dsocr.patches.framework',
    'register_patch': 'llm_perf_opt.dsocr.patches.framework',
    'runtime_patches': 'llm_perf_opt.dsocr.patches.framework',
    'untracked': 'llm_perf_opt.dsocr.patches.framework',
    'RUNTIME_LOG_FILE': 'llm_perf_opt.dsocr.patches.runtime_log',
    'RUNTIME_LOG_SCHEMA': 'llm_perf_opt.dsocr.patches.runtime_log',
    'RUNTIME_LOG_VERSION': 'llm_perf_opt.dsocr.patches.runtime_log',
    'RuntimeLog': 'llm_perf_opt.dsocr.patches.runtime_log',
    'load_runtime_log': 'llm_perf_opt.dsocr.patches.runtime_log',
    'DEFAULT_TRACE_PATCHES': 'llm_perf_opt.dsocr.patches.builtin',
    'LOOP_PATCHES': 'llm_perf_opt.dsocr.patches.builtin',
    'TRACE_PATCHES': 'llm_perf_opt.dsocr.patches.builtin',
    'quick_gelu_eager': 'llm_perf_opt.dsocr.patches.builtin',
}


def __getattr__(name: str):
    if name in _LAZY:
        importlib.import_module("llm_perf_opt.dsocr.patches.builtin")  # registers the patches
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_TRACE_PATCHES", "LOOP_PATCHES", "TRACE_PATCHES", "PATCHES", "ModelCode", "Patch", "PatchContext", "PatchTarget", "RUNTIME_LOG_FILE",
    "RUNTIME_LOG_SCHEMA", "RUNTIME_LOG_VERSION", "RuntimeLog", "available_patches", "check_patches", "get_patch",
    "load_runtime_log", "model_code", "quick_gelu_eager", "register_patch", "runtime_patches", "untracked",
]

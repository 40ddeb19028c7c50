"""Typed configuration: one dataclass schema per Hydra config group, validated in `__post_init__`.

| file | job |
|---|---|
| `schemas.py` | `RootConfig` (one field per section) and the job's own sections: model, workload, page, runtime |
| `fields.py` | the plain checks every section shares (one of a few choices, a positive integer) |
| `registry.py` | the schemas in Hydra's ConfigStore; a composed DictConfig -> typed, validated `RootConfig` |
| `compose.py` | Hydra's compose API over `conf/`, for code outside a Hydra job |
| `paths.py`, `options.py`, `sweeps.py` | `conf/` and user paths, a group's options, sweep expansion |

The other sections are their stage packages' (`<package>/<name>_config.py`, listed in `schemas`). The names below
load on first use, so a section module can import `config.fields` without importing every section first.
"""

from llm_perf_opt.lazy import lazy_attributes, lazy_names

_LAZY = {
    "llm_perf_opt.config.registry": ("register_configs", "to_typed_config"),
    "llm_perf_opt.config.schemas": (
        "ExportConfig",
        "ModelConfig",
        "PageConfig",
        "RenderConfig",
        "RootConfig",
        "RuntimeConfig",
        "TraceConfig",
        "VerifyConfig",
        "WorkloadConfig",
    ),
}
__getattr__ = lazy_attributes(__name__, _LAZY, globals())
__all__ = lazy_names(_LAZY)

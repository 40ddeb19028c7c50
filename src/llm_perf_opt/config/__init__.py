"""Typed configuration: one dataclass schema per Hydra config group, validated in `__post_init__`. The config layer,
just above the base helpers: plain values only; nothing here imports torch or a family package.

| file | job |
|---|---|
| `schemas.py` | `RootConfig` (one field per section) and the job's own sections: model, workload, page, runtime |
| `fields.py` | the plain checks every section shares (one of a few choices, a positive integer) |
| `registry.py` | the schemas in Hydra's ConfigStore; a composed DictConfig -> typed, validated `RootConfig` |
| `compose.py` | Hydra's compose API over `conf/`, for code outside a Hydra job |
| `paths.py` | where the Hydra configuration lives: `conf/` at the repository root, shipped as package data |
| `options.py` | an unknown config-group option (`hardware=h999`) refused with one line, before Hydra composes |
| `sweeps.py` | the jobs a multirun expands to, computed from its config (e.g. Hydra's own `multirun.yaml`) |

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

"""Typed configuration: one dataclass schema per Hydra config group, validated in `__post_init__`."""

from llm_perf_opt.config.registry import register_configs, to_typed_config  # noqa: F401
from llm_perf_opt.config.schemas import (  # noqa: F401
    ExportConfig,
    ModelConfig,
    PageConfig,
    RenderConfig,
    RootConfig,
    RuntimeConfig,
    TraceConfig,
    VerifyConfig,
    WorkloadConfig,
)

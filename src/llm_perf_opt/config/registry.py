"""Registers the schemas in Hydra's ConfigStore and turns a composed DictConfig into typed, validated objects."""
from __future__ import annotations

from typing import Any

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from llm_perf_opt.config.schemas import RootConfig
from llm_perf_opt.errors import ConfigError


def register_configs() -> None:
    """`conf/config.yaml` starts its defaults list with `schema`, so every group file is type-checked; the
    `pid` resolver (`${pid:}`, the process id, cached like `${now:...}` so a sweep's jobs agree) makes the
    default run directories unique per process."""
    import os

    ConfigStore.instance().store(name="schema", node=RootConfig)
    if not OmegaConf.has_resolver("pid"):
        OmegaConf.register_new_resolver("pid", os.getpid, use_cache=True)


def to_typed_config(cfg: DictConfig | Any) -> RootConfig:
    """Instantiate the dataclasses (running every `__post_init__`); errors come out as one ConfigError."""
    if isinstance(cfg, RootConfig):
        return cfg
    try:
        obj = OmegaConf.to_object(cfg)
    except ConfigError:
        raise
    except OmegaConfBaseException as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, ConfigError):
            raise cause from None
        raise ConfigError(str(exc).splitlines()[0]) from None
    if not isinstance(obj, RootConfig):
        raise ConfigError(f"configuration did not compose into RootConfig (got {type(obj).__name__})")
    return obj

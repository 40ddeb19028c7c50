"""Registers the schemas in Hydra's ConfigStore and turns a composed DictConfig into typed, validated objects."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

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


@contextmanager
def omegaconf_errors_as_config_error(where: str = "") -> Iterator[None]:
    """OmegaConf's errors in the block as one ConfigError: the ConfigError a schema's `__post_init__` raised
    (which OmegaConf wraps) as itself, any other as its first line, after `where: ` when given."""
    try:
        yield
    except ConfigError:
        raise
    except OmegaConfBaseException as exc:
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, ConfigError):
            raise cause from None
        first = str(exc).splitlines()[0]
        key = getattr(exc, "full_key", None)
        if isinstance(exc, MissingMandatoryValue) and key:  # name the field, not the dataclass (hardware=custom)
            first = f"{key} is required and missing: give it on the command line ({key}=...)"
        raise ConfigError(f"{where}: {first}" if where else first) from None


def to_typed_config(cfg: DictConfig | Any) -> RootConfig:
    """Instantiate the dataclasses (running every `__post_init__`); errors come out as one ConfigError."""
    if isinstance(cfg, RootConfig):
        return cfg
    with omegaconf_errors_as_config_error():
        obj = OmegaConf.to_object(cfg)
    if not isinstance(obj, RootConfig):
        raise ConfigError(f"configuration did not compose into RootConfig (got {type(obj).__name__})")
    return obj

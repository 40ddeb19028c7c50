"""Registers the schemas in Hydra's ConfigStore and turns a composed DictConfig into typed, validated objects."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException

from llm_perf_opt.config.schemas import RootConfig, WorkloadConfig
from llm_perf_opt.errors import ConfigError

# The ConfigStore group of the families' workload schemas: `workload_schema/<family>`, which a family's workload
# files name first in their defaults list (`- /workload_schema/dsocr@_here_`).
WORKLOAD_SCHEMA_GROUP = "workload_schema"


def register_configs(workload_schemas: Optional[Mapping[str, type]] = None) -> None:
    """`conf/config.yaml` starts its defaults list with `schema`, so every group file is type-checked; the
    `pid` resolver (`${pid:}`, the process id, cached like `${now:...}` so a sweep's jobs agree) makes the
    default run directories unique per process.

    `workload_schemas` ({name: a subclass of `WorkloadConfig`}) are the model families' workload schemas, handed
    in by the family registry (`llm_perf_opt.families.register_configs`, which every job calls before composing:
    this layer imports no family); each is stored as `workload_schema/<name>`. The ConfigStore keeps what earlier
    calls stored, so a later call without them (a job's `runs.entry`, `config.compose`) keeps them."""
    import os

    store = ConfigStore.instance()
    store.store(name="schema", node=RootConfig)
    for name, schema in (workload_schemas or {}).items():
        if not (isinstance(schema, type) and issubclass(schema, WorkloadConfig)):
            raise ConfigError(
                f"the workload schema of {name!r} is {schema!r}, not a subclass of llm_perf_opt.config.schemas."
                "WorkloadConfig"
            )
        store.store(group=WORKLOAD_SCHEMA_GROUP, name=name, node=schema)
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


def unknown_keys(cfg: DictConfig, path: str = "") -> list[tuple[str, str]]:
    """(dotted key, the keys its schema allows) for every key of `cfg` that its dataclass schema does not
    know. Hydra's `+key=value` adds a key with `force_add`, which passes the struct flag of a typed node, and
    OmegaConf.to_object would set it as a stray attribute: a typo (`+workload.page.widht=800`) would be
    silently ignored. Free-form nodes (a `dict` field such as `verify.analytic_spec`) take any key."""
    from dataclasses import fields, is_dataclass

    found: list[tuple[str, str]] = []
    schema = OmegaConf.get_type(cfg)
    known = [f.name for f in fields(schema)] if schema is not None and is_dataclass(schema) else None
    for key in cfg.keys():
        dotted = f"{path}{key}"
        if known is not None and key not in known:
            found.append((dotted, ", ".join(known)))
            continue
        node = cfg._get_node(key)  # noqa: SLF001 - the node itself: no interpolation resolved
        if (
            isinstance(node, DictConfig)
            and not node._is_none()
            and not node._is_missing()
            and not node._is_interpolation()
        ):  # noqa: SLF001
            found += unknown_keys(node, dotted + ".")
    return found


def check_known_keys(cfg: DictConfig) -> None:
    """ConfigError naming the first key the schemas do not know (see `unknown_keys`)."""
    if not isinstance(cfg, DictConfig):
        return
    found = unknown_keys(cfg)
    if found:
        key, allowed = found[0]
        parent = key.rpartition(".")[0] or "the configuration"
        more = f" (and {len(found) - 1} more: {', '.join(k for k, _ in found[1:4])})" if len(found) > 1 else ""
        raise ConfigError(f"{key}: unknown key: {parent} has no such field (one of {allowed}){more}")


def to_typed_config(cfg: DictConfig | Any) -> RootConfig:
    """Instantiate the dataclasses (running every `__post_init__`); errors come out as one ConfigError.
    A key no schema knows (added with `+key=value`) is refused first."""
    if isinstance(cfg, RootConfig):
        return cfg
    check_known_keys(cfg)
    with omegaconf_errors_as_config_error():
        obj = OmegaConf.to_object(cfg)
    if not isinstance(obj, RootConfig):
        raise ConfigError(f"configuration did not compose into RootConfig (got {type(obj).__name__})")
    return obj

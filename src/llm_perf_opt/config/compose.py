"""Hydra's compose API over the project's `conf/`, for code that needs a config outside a Hydra job
(the analytic page sweep, tests, benchmarks): the same defaults, schemas and overrides a job gets.

Each call initialises Hydra on `conf_dir()` and restores whatever Hydra state was there before, so it
also works inside a running Hydra job. The model families' workload schemas, which their workload files name, are
registered by the family registry above this layer (`llm_perf_opt.families.register_configs()`, which every job
calls): a caller outside a job calls it first, else composing is refused in one line that says so.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from omegaconf import DictConfig

from llm_perf_opt.config.paths import conf_dir
from llm_perf_opt.config.registry import WORKLOAD_SCHEMA_GROUP, register_configs
from llm_perf_opt.errors import ConfigError

VERSION_BASE = "1.3"


@contextmanager
def _hydra() -> Iterator[None]:
    from hydra import initialize_config_dir

    register_configs()
    with initialize_config_dir(config_dir=str(conf_dir()), version_base=VERSION_BASE):
        yield


def compose(
    overrides: Sequence[str] = (), *, config_name: str = "config", return_hydra_config: bool = False
) -> DictConfig:
    """`conf/<config_name>.yaml` (the trace job's `config`, or a job's own: `analyze`, `calibrate`) composed
    with `overrides`, as that job would see it (before `to_typed_config`)."""
    return compose_each([overrides], config_name=config_name, return_hydra_config=return_hydra_config)[0]


def compose_each(
    override_lists: Sequence[Sequence[str]], *, config_name: str = "config", return_hydra_config: bool = False
) -> list[DictConfig]:
    """One composed config per list of overrides (Hydra initialised once for all of them)."""
    from hydra import compose as hydra_compose
    from hydra.errors import MissingConfigException

    with _hydra():
        try:
            return [
                hydra_compose(config_name=config_name, overrides=list(o), return_hydra_config=return_hydra_config)
                for o in override_lists
            ]
        except MissingConfigException as exc:
            if f"'{WORKLOAD_SCHEMA_GROUP}/" not in str(exc):
                raise
            raise ConfigError(
                f"{str(exc).splitlines()[0]} The model families' workload schemas are not registered: call "
                "llm_perf_opt.families.register_configs() before composing (every job does)"
            ) from None


def group_options(group: str) -> list[str]:
    """The options of a config group (`workload` -> ['base', 'gundam', ...]), as Hydra lists them."""
    from hydra.core.global_hydra import GlobalHydra

    with _hydra():
        return sorted(GlobalHydra.instance().config_loader().get_group_options(group))

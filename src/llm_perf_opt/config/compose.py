"""Hydra's compose API over the project's `conf/`, for code that needs a config outside a Hydra job
(the analytic page sweep, tests, benchmarks): the same defaults, schemas and overrides a job gets.

Each call initialises Hydra on `conf_dir()` and restores whatever Hydra state was there before, so it
also works inside a running Hydra job.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Sequence

from omegaconf import DictConfig

from llm_perf_opt.config.paths import conf_dir
from llm_perf_opt.config.registry import register_configs

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

    with _hydra():
        return [
            hydra_compose(config_name=config_name, overrides=list(o), return_hydra_config=return_hydra_config)
            for o in override_lists
        ]


def group_options(group: str) -> list[str]:
    """The options of a config group (`workload` -> ['base', 'gundam', ...]), as Hydra lists them."""
    from hydra.core.global_hydra import GlobalHydra

    with _hydra():
        return sorted(GlobalHydra.instance().config_loader().get_group_options(group))

"""The jobs a multirun expands to, computed from its config (e.g. Hydra's own `multirun.yaml`).

Hydra's basic sweeper runs the cartesian product of every comma-separated override, with the sweeper's
`params` first and the command-line overrides after them; a key given twice keeps its last value. This
module does the same with Hydra's public override parser, so the sweep's progress line ("job 3/16") and
the report ("not started") agree with what the sweeper launches, without Hydra's private sweeper
class. It lives in `config` so that both `pipelines` (the progress callback) and `report` (jobs that
never started) may import it. Nothing here imports torch.
"""

from __future__ import annotations

import itertools
from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf

BASIC_SWEEPER = "BasicSweeper"  # the tail of hydra.sweeper._target_ this expansion reproduces


def planned_jobs(cfg: Any, config_loader: Any = None) -> Optional[list[list[str]]]:
    """The per-job override lists of a multirun config (a full config with a `hydra` node, as in
    `multirun.yaml`, or a mapping that is one). None when the sweeper is not Hydra's basic sweeper, or
    when an override cannot be expanded without a config loader (e.g. `glob(...)` over a config group):
    a count is a convenience, unknown is an acceptable answer."""
    from hydra.core.override_parser.overrides_parser import OverridesParser
    from hydra.errors import HydraException

    if not isinstance(cfg, DictConfig):
        cfg = OmegaConf.create(cfg)
    target = str(OmegaConf.select(cfg, "hydra.sweeper._target_", default="") or "")
    if target and not target.endswith(BASIC_SWEEPER):
        return None
    params = OmegaConf.select(cfg, "hydra.sweeper.params", default=None) or {}
    task = OmegaConf.select(cfg, "hydra.overrides.task", default=None) or []
    arguments = [f"{k}={v}" for k, v in params.items()]
    arguments += (
        [str(o) for o in OmegaConf.to_container(task, resolve=False)]
        if OmegaConf.is_config(task)
        else [str(o) for o in task]
    )
    try:
        overrides = OverridesParser.create(config_loader=config_loader).parse_overrides(arguments)
        choices: dict[str, list[str]] = {}  # key -> its "key=value" options, in first-seen key order
        for override in overrides:
            key = override.get_key_element()
            if override.is_sweep_override():
                if not override.is_discrete_sweep():
                    return None  # range/interval sweeps are for other sweepers
                choices[key] = [f"{key}={value}" for value in override.sweep_string_iterator()]
            else:
                choices[key] = [f"{key}={override.get_value_element_as_str()}"]
    except (HydraException, ValueError, TypeError, AssertionError):
        return None
    return [list(job) for job in itertools.product(*choices.values())]

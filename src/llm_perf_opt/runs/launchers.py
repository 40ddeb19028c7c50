"""Which Hydra launchers a sweep may use (how many jobs a sweep expands to: `config.sweeps`).

* basic (the default): one job after another in this process. Works.
* submitit (`hydra/launcher=submitit_local`, `=slurm`, `=submitit_slurm`; the `cluster` extra): one
  process per job, locally or as a SLURM array. Works.
* joblib: refused. Its loky workers receive the task by pickling, and TorchLens either fails to pickle
  (`cannot pickle '_TorchLensModule'`) or refuses the capture in the child process, so every job would
  fail or, worse, silently lose its call graph. `check_launcher` turns that into one clear error at sweep
  start (the `SweepProgress` callback calls it in `on_multirun_start`) and, as a second line of defence,
  at job start.
"""

from __future__ import annotations

from typing import Any, Optional

from omegaconf import DictConfig, OmegaConf

from llm_perf_opt.errors import ConfigError

# substring of `hydra.launcher._target_` (lower case) -> why it cannot run the trace job
REFUSED_LAUNCHERS: dict[str, str] = {
    "joblib": (
        "the joblib launcher runs jobs in loky worker processes that receive the task by pickling, and the "
        "TorchLens capture breaks there (cannot pickle '_TorchLensModule', or the capture is refused in the "
        "child process)"
    ),
}
SUPPORTED_HINT = (
    "use the basic launcher (the default: jobs one after another), or one process per job with "
    "hydra/launcher=submitit_local (this machine) or hydra/launcher=slurm (a SLURM cluster; needs the "
    "'cluster' extra: pip install 'llm-perf-opt[cluster]')"
)


def _hydra_node(cfg: Any) -> Any:
    """The `hydra` node of a full config (root with a `hydra` key) or the node itself (HydraConfig.get())."""
    if cfg is None:
        from hydra.core.hydra_config import HydraConfig

        if not HydraConfig.initialized():
            return None
        return HydraConfig.get()
    if isinstance(cfg, DictConfig) and "hydra" in cfg:
        return cfg.hydra
    return cfg


def launcher_target(cfg: Any = None) -> Optional[str]:
    """`hydra.launcher._target_` of `cfg` (a full config or its hydra node), or of the running job."""
    node = _hydra_node(cfg)
    if node is None:
        return None
    target = OmegaConf.select(node, "launcher._target_", default=None) if OmegaConf.is_config(node) else None
    return str(target) if target is not None else None


def check_launcher(cfg: Any = None) -> None:
    """Raise ConfigError when the configured launcher cannot run the trace job (joblib)."""
    target = launcher_target(cfg)
    if not target:
        return
    for key, why in REFUSED_LAUNCHERS.items():
        if key in target.lower():
            raise ConfigError(f"hydra.launcher={target} is not supported: {why}. Instead, {SUPPORTED_HINT}.")

"""The `run` section: the run directory itself (run control)."""

from __future__ import annotations

from dataclasses import dataclass

from llm_perf_opt.errors import ConfigError


@dataclass
class RunConfig:
    """The run directory itself (Hydra's `hydra.run.dir` / `hydra.sweep.dir` say where it is)."""

    overwrite: bool = False  # reuse a directory that holds a finished run: its result files are removed first

    def __post_init__(self) -> None:
        if not isinstance(self.overwrite, bool):
            raise ConfigError.field("run.overwrite", self.overwrite, "must be true or false")

"""The Hydra callback that gives each run its own directory: locked for the job's life, never shared.

Registered in conf/config.yaml (`hydra.callbacks.run_dirs`). Hydra writes `.hydra/` and opens the job's
log in the run directory before the job's code runs, so the directory is claimed earlier, in
`on_run_start` (a single run) and `on_multirun_start` (the sweep directory), and each job directory of a
sweep in `on_job_start` (in the job's own process with submitit). A directory in use by a live run, or
holding a finished one, is refused with one line and exit code 2 before anything is written into it;
`run.overwrite=true` reuses a finished one (its previous result files removed first). See `run_lock`.

The default directories are unique per process (conf/config.yaml: time to the microsecond and the pid),
so two runs started in the same second never meet.
"""
from __future__ import annotations

import sys
from typing import Any, Optional

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from llm_perf_opt.errors import ConfigError, ExitCode
from llm_perf_opt.run_lock import RunLock, claim


def _overwrite(config: DictConfig) -> bool:
    return OmegaConf.select(config, "run.overwrite", default=False) is True


def _refuse(exc: ConfigError) -> None:
    # Hydra turns an exception raised by a callback into a warning and goes on: end the process here.
    print(f"error: {exc}", file=sys.stderr, flush=True)
    raise SystemExit(ExitCode.CONFIG) from None


class RunDirLock(Callback):
    """Claims hydra.run.dir / hydra.sweep.dir and each job directory (run_lock.claim) for this process."""

    def __init__(self) -> None:
        self._run: Optional[RunLock] = None
        self._sweep: Optional[RunLock] = None
        self._job: Optional[RunLock] = None

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        directory = OmegaConf.select(config, "hydra.run.dir")
        try:
            self._run = claim(str(directory), overwrite=_overwrite(config), field="hydra.run.dir")
        except ConfigError as exc:
            _refuse(exc)

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self._run is not None:
            self._run.release()
            self._run = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from llm_perf_opt.runs.launchers import check_launcher

        directory = OmegaConf.select(config, "hydra.sweep.dir")
        try:
            check_launcher(config)  # a refused launcher leaves no sweep directory behind
            self._sweep = claim(str(directory), overwrite=_overwrite(config), sweep=True, field="hydra.sweep.dir")
        except ConfigError as exc:
            _refuse(exc)

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self._sweep is not None:
            self._sweep.release()
            self._sweep = None

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        from hydra.types import RunMode

        if OmegaConf.select(config, "hydra.mode", default=None) != RunMode.MULTIRUN:
            return  # a single run's directory was claimed in on_run_start
        directory = OmegaConf.select(config, "hydra.runtime.output_dir")
        try:
            # A job directory of a sweep this process (or its launcher) claimed: new, or left over from the
            # sweep it replaces (run.overwrite=true removed those); another live job in it is still refused.
            self._job = claim(str(directory), overwrite=True, field="hydra.sweep.subdir")
        except ConfigError as exc:
            _refuse(exc)

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        if self._job is not None:
            self._job.release()
            self._job = None

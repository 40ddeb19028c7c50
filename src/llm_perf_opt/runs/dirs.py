"""The Hydra callback that gives each run its own directory: locked for the job's life, never shared.

Registered in conf/config.yaml (`hydra.callbacks.run_dirs`). Hydra writes `.hydra/` and opens the job's
log in the run directory before the job's code runs, so the directory is claimed earlier, in
`on_run_start` (a single run) and `on_multirun_start` (the sweep directory), and each job directory of a
sweep in `on_job_start` (in the job's own process with submitit). A directory in use by a live run, or
holding a finished one, is refused with one line and exit code 2 before anything is written into it;
`run.overwrite=true` reuses a finished one (its previous result files removed first). See `run_lock`.

The default directories are unique per process (conf/config.yaml: time to the microsecond and the pid),
so two runs started in the same second never meet.

Nothing is written for a refused run: before a directory is claimed (and so before Hydra creates it and
writes `.hydra/`), `on_run_start` runs the job's own checks (`register_check`: `reports_errors(check=...)`,
e.g. the trace job's `validate`) on the composed config, and `on_multirun_start` composes every job of the
sweep (a value of the wrong type, an unknown key) before the sweeper writes `multirun.yaml`. An empty
`hydra.run.dir` / `hydra.sweep.dir` is refused too (it would mean the current directory). A check that can only
run inside the job (one that needs a calibrated roof: `hardware=measured`) may still refuse it late: a single run
that ends, refused or interrupted, before writing any result is taken back (`discard_if_empty`: the directory
when this run created it, else what this run added: `.hydra/`, `.lock`, the log), so a refusal writes nothing
either way.
"""

from __future__ import annotations

import copy
import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from llm_perf_opt.errors import ConfigError, ExitCode, PipelineError, one_line, os_error_line
from llm_perf_opt.run_lock import RunLock, claim

# Hydra's job name (the job module's file name: trace, analyze, ...) -> the job's checks of its composed config
_CHECKS: dict[str, Callable[[DictConfig], Any]] = {}


# A single run's directory as this process claimed it: (created by the claim, the entries it held before)
_CLAIMED: dict[Path, tuple[bool, frozenset[str]]] = {}
BOOKKEEPING = (".hydra", ".lock")  # what Hydra and the lock put into a run directory before the job runs


def discard_if_empty(directory: str | os.PathLike) -> bool:
    """Take back a single run's directory that holds no result of this run (only `.hydra/`, `.lock` and the job's
    `*.log`): removed when this run created it, else emptied of what this run added. True when it was taken
    back; False when the run wrote a result (kept, with its status) or this process did not claim it."""
    path = Path(directory).absolute()
    claimed = _CLAIMED.get(path)
    if claimed is None or not path.is_dir():
        return False
    created, before = claimed
    added = [p for p in path.iterdir() if p.name not in before]
    if any(p.name not in BOOKKEEPING and not (p.suffix == ".log" and p.is_file()) for p in added):
        return False
    _close_logs_under(path)  # the job's log file, still open in this process (Hydra's job logging)
    if created:
        shutil.rmtree(path, ignore_errors=True)
    else:
        for p in added:
            shutil.rmtree(p, ignore_errors=True) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)
    _CLAIMED.pop(path, None)
    return True


def _close_logs_under(path: Path) -> None:
    """Close and detach every logging file handler writing into `path` (a taken-back run's log)."""
    import logging

    loggers = [logging.getLogger()] + [
        lg for lg in logging.Logger.manager.loggerDict.values() if isinstance(lg, logging.Logger)
    ]
    for lg in loggers:
        for handler in list(lg.handlers):
            name = getattr(handler, "baseFilename", None)
            if name and Path(name).is_relative_to(path):
                lg.removeHandler(handler)
                handler.close()


def discard_claimed() -> list[Path]:
    """Every single-run directory this process claimed and that holds no result, taken back
    (`discard_if_empty`): a job that Hydra itself could not start (its own `.hydra/` files on a full disk)."""
    return [p for p in list(_CLAIMED) if discard_if_empty(p)]


def register_check(job: str, check: Callable[[DictConfig], Any]) -> None:
    """`check(task_config)` runs before the run directory of job `job` is created; a PipelineError refuses it."""
    _CHECKS[job] = check


def task_config(config: DictConfig) -> DictConfig:
    """The job's config without the `hydra` node, as Hydra hands it to the task function."""
    task = copy.deepcopy(config)
    with read_write(task), open_dict(task):
        task.pop("hydra", None)
    return task


def _check_directory(config: DictConfig, key: str) -> None:
    value = OmegaConf.select(config, key)
    if value is None or not str(value).strip():
        raise ConfigError.field(
            key,
            "" if value is None else str(value),
            "must name a directory (empty would write the run's files into the current directory)",
        )


def _check_run(config: DictConfig) -> None:
    """The job's registered checks on its composed config (HydraConfig set, for `${hydra:...}`)."""
    from hydra.core.hydra_config import HydraConfig

    check = _CHECKS.get(str(OmegaConf.select(config, "hydra.job.name", default="")))
    if check is None:
        return
    HydraConfig.instance().set_config(config)
    check(task_config(config))


def _check_sweep_jobs(config: DictConfig) -> None:
    """Compose every job of the sweep (what Hydra's sweeper does only after writing multirun.yaml) and check
    its keys: a value of the wrong type or an unknown key stops the sweep before anything is written."""
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from llm_perf_opt.config.registry import check_known_keys
    from llm_perf_opt.config.sweeps import planned_jobs

    hydra = GlobalHydra.instance().hydra if GlobalHydra.instance().is_initialized() else None
    if hydra is None:
        return
    jobs = planned_jobs(config, hydra.config_loader)
    for overrides in jobs or []:
        try:
            composed = hydra.config_loader.load_sweep_config(config, list(overrides))
        except (HydraException, OmegaConfBaseException) as exc:
            raise ConfigError(one_line(exc)) from None
        check_known_keys(task_config(composed))


def _overwrite(config: DictConfig) -> bool:
    return OmegaConf.select(config, "run.overwrite", default=False) is True


def _refuse(exc: PipelineError) -> None:
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
            _check_directory(config, "hydra.run.dir")
            _check_run(config)  # the job's own checks: a refused run creates nothing
            path = Path(str(directory)).absolute()
            existed = path.is_dir()
            before = set(os.listdir(path)) if existed else set()
            self._run = claim(str(directory), overwrite=_overwrite(config), field="hydra.run.dir", clear=True)
            _CLAIMED[path] = (not existed, frozenset(before & set(os.listdir(path))))
        except PipelineError as exc:
            _refuse(exc)
        except OSError as exc:  # the directory cannot be listed or written (Hydra would only warn and go on)
            _refuse(ConfigError.field("hydra.run.dir", str(directory), f"cannot be written: {os_error_line(exc)}"))

    def on_run_end(self, config: DictConfig, **kwargs: Any) -> None:
        if self._run is not None:
            self._run.release()
            _CLAIMED.pop(self._run.dir, None)
            self._run = None

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        from llm_perf_opt.runs.launchers import check_launcher

        directory = OmegaConf.select(config, "hydra.sweep.dir")
        try:
            check_launcher(config)  # a refused launcher leaves no sweep directory behind
            _check_directory(config, "hydra.sweep.dir")
            _check_sweep_jobs(config)
            self._sweep = claim(str(directory), overwrite=_overwrite(config), sweep=True, field="hydra.sweep.dir")
        except PipelineError as exc:
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

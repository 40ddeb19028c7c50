"""What every Hydra entry point shares: config registration, the run directory, one-line errors."""
from __future__ import annotations

import functools
import sys
import time
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig

from llm_perf_opt.config import register_configs
from llm_perf_opt.config.paths import conf_dir
from llm_perf_opt.errors import PipelineError
from llm_perf_opt.run_artifacts import ErrorRecord, run_file

CONF_DIR = str(conf_dir())  # for @hydra.main(config_path=...)

register_configs()


def run_dir() -> Path:
    """The Hydra run (or multirun job) directory of the current job."""
    from hydra.core.hydra_config import HydraConfig

    return Path(HydraConfig.get().runtime.output_dir)


def is_multirun() -> bool:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    try:
        return HydraConfig.get().mode == RunMode.MULTIRUN
    except ValueError:
        return False


def progress(message: str) -> None:
    """Progress lines go to stderr, so stdout stays the job's result; in a multirun they carry 'job i/n'."""
    from llm_perf_opt.pipelines.callbacks import current_job

    job = current_job()
    print(f"[{time.strftime('%H:%M:%S')}] {job + ': ' if job else ''}{message}", file=sys.stderr, flush=True)


def reports_errors(task: Callable[[DictConfig], Any]) -> Callable[[DictConfig], Any]:
    """A PipelineError becomes one line on stderr and exit code 2; in a multirun the job writes
    `error.json` (type, message, config) instead and the sweep goes on."""

    @functools.wraps(task)
    def wrapper(cfg: DictConfig) -> Any:
        try:
            return task(cfg)
        except Exception as exc:  # noqa: BLE001 - every failure is recorded, then re-raised or reported
            expected = isinstance(exc, PipelineError)
            if is_multirun():
                write_error(exc, cfg)
                progress(f"job failed: {type(exc).__name__}: {exc} (error.json written; the sweep goes on)")
                return None
            if not expected:
                raise
            print(f"error: {exc}", file=sys.stderr)
            sys.exit(2)

    return wrapper


def write_error(exc: BaseException, cfg: DictConfig) -> Path:
    return ErrorRecord.from_exception(exc, cfg).save(run_dir() / run_file("error").file)

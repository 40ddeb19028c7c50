"""What every Hydra entry point shares: config registration, the run directory, progress lines, and how a
job ends (one-line errors, Ctrl-C, exit codes, memory handed back)."""

from __future__ import annotations

import functools
import logging
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable

from omegaconf import DictConfig

from llm_perf_opt.config import register_configs
from llm_perf_opt.config.paths import conf_dir
from llm_perf_opt.errors import ExitCode, PipelineError, is_write_error, os_error_line
from llm_perf_opt.run_artifacts import ErrorRecord, run_file
from llm_perf_opt.runs import memory as job_memory
from llm_perf_opt.runs import signals
from llm_perf_opt.runs.job_run import JobRun

CONF_DIR = str(conf_dir())  # for @hydra.main(config_path=...)
LOGGER = logging.getLogger("llm_perf_opt")
TASK_ERROR_FLAG = "_llm_perf_opt_task_error"  # set on an unexpected exception a job raised (cli: a bug, exit 1)

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
    """A progress line: stderr (stdout stays the job's result), and the job's log file (`trace.log`).

    Inside a Hydra job the `llm_perf_opt` logger has the project's handlers (conf/hydra/job_logging/
    project.yaml: stderr and the job's log file, same lines); outside one (a test, a benchmark calling a
    job function) the line goes to stderr directly. In a multirun lines carry 'job i/n'."""
    from llm_perf_opt.runs.callbacks import current_job

    job = current_job()
    text = f"{job + ': ' if job else ''}{message}"
    if LOGGER.handlers:
        LOGGER.info(text)
    else:
        print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)


def reports_errors(
    task: Callable[[DictConfig], Any] | None = None, *, check: Callable[[DictConfig], Any] | None = None
) -> Any:
    """How a job ends, whatever happens in it (`@reports_errors`, or `@reports_errors(check=validate)`):

    * `check(cfg)` (default: the schemas, `to_typed_config`) runs on the composed config before the run
      directory is created (`runs.dirs.register_check`), so a refused run writes nothing;

    * a `PipelineError` (bad input) is one line `error: ...` on stderr and exit code 2 (`ExitCode.CONFIG`);
      in a multirun the job writes `error.json` (type, message, config) instead and the sweep goes on; a single
      run refused before it wrote any result leaves nothing (`runs.dirs.discard_if_empty`);
    * Ctrl-C is one line `interrupted at stage X; partial results in DIR` and exit code 130, in a multirun
      too (the sweep stops); a single run stopped before it wrote any result says so and leaves nothing;
    * an output the file system refuses (a full disk, a read-only directory: `errors.is_write_error`) is one
      line naming the file, exit code 2, like bad input;
    * any other exception is a bug: recorded, then re-raised (Python's traceback, exit code 1); in a
      multirun it is recorded in `error.json` and the sweep goes on.

    Every way records the true status in `summary.json` when the job has one (`JobRun`), and afterwards
    the job's memory is handed back (`job_memory.release`) so the next job of a sweep starts clean."""
    if task is None:
        return functools.partial(reports_errors, check=check)
    job_name = task.__module__.rsplit(".", 1)[-1]
    from llm_perf_opt.config import to_typed_config
    from llm_perf_opt.runs.dirs import discard_if_empty, register_check

    register_check(job_name, check or to_typed_config)

    @functools.wraps(task)
    def wrapper(cfg: DictConfig) -> Any:
        run = JobRun.begin(run_dir(), stage=job_name)
        multirun = is_multirun()
        stopping = False  # Ctrl-C: the process ends, nothing to hand back
        signals.clear()
        try:
            # SIGTERM / SIGHUP (SLURM's time limit) end the job like Ctrl-C; fewer collections of what it builds
            with signals.handling(), job_memory.fewer_collections():
                result = task(cfg)
                signals.raise_pending()  # a signal a finalizer swallowed: the job did not end ok
            return result
        except KeyboardInterrupt as exc:
            stopping = True
            signals.ignore()
            run.stopped(exc)
            from llm_perf_opt.runs.callbacks import current_job

            job = current_job()
            signum = signals.signal_of(exc)
            by = "" if signum == signal.SIGINT else f" by {signal.Signals(signum).name}"
            where = f"at stage {run.stage}{' of ' + job if job else ''}"
            if not multirun and discard_if_empty(run.out_dir):
                print(f"interrupted{by} {where}, before any result was written: nothing kept", file=sys.stderr)
            else:
                print(f"interrupted{by} {where}; partial results in {run.out_dir}", file=sys.stderr, flush=True)
            raise SystemExit(ExitCode.INTERRUPTED) from None
        except Exception as exc:  # noqa: BLE001 - every failure is recorded, then re-raised or reported
            run.stopped(exc)
            expected = isinstance(exc, PipelineError) or is_write_error(exc)
            message = os_error_line(exc) if isinstance(exc, OSError) else str(exc)
            if multirun:
                try:
                    write_error(exc, cfg)
                    recorded = "error.json written"
                except OSError as write_failed:  # the same full disk: said, not a second traceback
                    recorded = f"error.json not written: {os_error_line(write_failed)}"
                progress(
                    f"job failed at stage {run.stage}: {type(exc).__name__}: {message} ({recorded}; the sweep goes on)"
                )
                return None
            if not expected:
                setattr(exc, TASK_ERROR_FLAG, True)
                raise
            discard_if_empty(run.out_dir)  # refused before any result: nothing written (the run's own files go)
            print(f"error: {message}", file=sys.stderr, flush=True)
            raise SystemExit(ExitCode.CONFIG) from None
        finally:
            run.end()
            del run
            if not stopping:
                released = job_memory.release()
                if multirun:
                    progress(f"memory handed back: {released}")

    return wrapper


def write_error(exc: BaseException, cfg: DictConfig) -> Path:
    return ErrorRecord.from_exception(exc, cfg).save(run_dir() / run_file("error").file)

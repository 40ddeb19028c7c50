"""Hydra callbacks of the project, registered in conf/config.yaml under `hydra.callbacks`.

`SweepProgress` makes a long multirun readable on stderr (stdout stays the jobs' results):

    [10:02:11] sweep: 6 jobs -> tmp/sweeps/2026-11-21/10-02-11 (launcher basic)
    [10:02:11] job 1/6 start: model=twin_tiny workload=tiny | sweep 0:00
    [10:02:19] job 1/6 ok in 8.1 s | sweep 0:08, about 0:40 left
    [10:02:19] job 2/6 start: model=twin_tiny workload=small | sweep 0:08
    ...
    [10:03:02] sweep done: 6 jobs (5 ok, 1 failed) in 0:51 -> ./dev report tmp/sweeps/...

and refuses, before any job starts, a launcher that cannot run the trace job (see `launchers`): it prints
"error: ..." and exits with status 2 (Hydra downgrades exceptions raised in callbacks to warnings).
`last_sweep()` keeps the counts, so the console script exits 3 when a job failed (`ExitCode`).
Stage lines printed by a job through `runs.entry.progress` can carry the same "job i/n" tag via
`current_job()`. A callback never fails a job: anything unexpected in the bookkeeping is ignored.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any, Optional, TextIO

from hydra.experimental.callback import Callback
from omegaconf import DictConfig, OmegaConf

from llm_perf_opt.config.sweeps import planned_jobs
from llm_perf_opt.errors import ConfigError, ExitCode, PipelineError
from llm_perf_opt.run_artifacts import load_error, load_summary, run_file
from llm_perf_opt.runs.launchers import check_launcher, launcher_target
from llm_perf_opt.units import clock

_CURRENT_JOB: Optional[str] = None
_LAST_SWEEP: Optional[dict[str, int]] = None  # {"jobs": n, "failed": k} of the last multirun in this process


def last_sweep() -> Optional[dict[str, int]]:
    """How the last multirun of this process ended ({"jobs", "failed"}), for the exit code; None if none ran."""
    return _LAST_SWEEP


def current_job() -> Optional[str]:
    """'job i/n' while a multirun job runs in this process (None otherwise), for progress lines."""
    return _CURRENT_JOB


def _is_multirun(config: DictConfig) -> bool:
    from hydra.types import RunMode

    mode = OmegaConf.select(config, "hydra.mode", default=None)
    return mode == RunMode.MULTIRUN or str(mode) == "MULTIRUN" or str(mode) == "RunMode.MULTIRUN"


def job_outcome(job_dir: Path, job_return: Any = None) -> str:
    """'ok', or 'failed: <type>: <message>' from the job's error.json, its summary.json's status, or the
    raised exception."""
    error = job_dir / run_file("error").file
    if error.is_file():
        try:
            record = load_error(error)
        except PipelineError as exc:
            return f"failed: error.json is unreadable ({exc})"
        return f"failed: {record.type}: {record.first_line}"
    summary = job_dir / run_file("summary").file
    if summary.is_file():
        try:
            status = load_summary(summary).status
        except PipelineError as exc:
            return f"failed: summary.json is unreadable ({exc})"
        if status != "ok":
            return f"failed: summary.json says {status!r}"
    if job_return is not None:
        from hydra.core.utils import JobStatus

        if getattr(job_return, "status", None) == JobStatus.FAILED:
            exc = job_return._return_value  # noqa: SLF001 - .return_value would re-raise it
            return f"failed: {type(exc).__name__}: {exc}"
    return "ok"


class SweepProgress(Callback):
    """Prints 'job i/n ... elapsed' lines for a multirun, and checks the launcher at sweep start."""

    def __init__(self, stream: Optional[TextIO] = None) -> None:
        self._stream = stream
        self._t0: Optional[float] = None
        self._total: Optional[int] = None
        self._sequential = True
        self._job_t0: dict[int, float] = {}
        self._done = 0
        self._failed = 0

    # ------------------------------------------------------------------ helpers
    def _say(self, message: str) -> None:
        stream = self._stream or sys.stderr
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=stream, flush=True)

    def _label(self, num: int) -> str:
        return f"job {num + 1}/{self._total if self._total else '?'}"

    def _sweepclock(self) -> str:
        return f"sweep {clock(time.time() - self._t0)}" if self._t0 is not None else ""

    # ------------------------------------------------------------------ Hydra hooks
    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        global _LAST_SWEEP
        _LAST_SWEEP = None
        # Hydra turns an exception raised by a callback into a warning and goes on, so a refused
        # launcher ends the process here (SystemExit is not an Exception), before any job starts.
        try:
            check_launcher(config)
        except ConfigError as exc:
            print(f"error: {exc}", file=self._stream or sys.stderr, flush=True)
            raise SystemExit(ExitCode.CONFIG) from None
        self._t0 = time.time()
        jobs = planned_jobs(config)
        self._total = len(jobs) if jobs is not None else None
        target = launcher_target(config) or "?"
        self._sequential = target.endswith("BasicLauncher")
        name = target.rsplit(".", 1)[-1].removesuffix("Launcher").lower() or target
        sweep_dir = OmegaConf.select(config, "hydra.sweep.dir", default="?")
        count = f"{self._total} jobs" if self._total is not None else "jobs"
        self._say(f"sweep: {count} -> {sweep_dir} (launcher {name})")

    def on_job_start(self, config: DictConfig, **kwargs: Any) -> None:
        global _CURRENT_JOB
        try:
            if not _is_multirun(config):
                return
            num = int(OmegaConf.select(config, "hydra.job.num", default=0))
            self._job_t0[num] = time.time()
            _CURRENT_JOB = self._label(num)
            overrides = " ".join(str(o) for o in OmegaConf.select(config, "hydra.overrides.task", default=[]) or [])
            self._say(f"{self._label(num)} start: {overrides or '(no overrides)'} | {self._sweepclock()}".rstrip(" |"))
        except Exception:  # noqa: BLE001 - progress output must never break a job
            pass

    def on_job_end(self, config: DictConfig, job_return: Any = None, **kwargs: Any) -> None:
        global _CURRENT_JOB
        try:
            if not _is_multirun(config):
                return
            num = int(OmegaConf.select(config, "hydra.job.num", default=0))
            out_dir = Path(str(OmegaConf.select(config, "hydra.runtime.output_dir", default=".")))
            outcome = job_outcome(out_dir, job_return)
            self._done += 1
            self._failed += outcome != "ok"
            took = time.time() - self._job_t0.pop(num, time.time())
            line = f"{self._label(num)} {outcome} in {took:.1f} s"
            if self._t0 is not None:
                elapsed = time.time() - self._t0
                line += f" | {self._sweepclock()}"
                if self._sequential and self._total and self._done < self._total:
                    line += f", about {clock(elapsed / self._done * (self._total - self._done))} left"
            self._say(line)
        except Exception:  # noqa: BLE001
            pass
        finally:
            _CURRENT_JOB = None

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        global _LAST_SWEEP
        try:
            sweep_dir = Path(str(OmegaConf.select(config, "hydra.sweep.dir", default="."))).absolute()
            took = clock(time.time() - self._t0) if self._t0 is not None else "?"
            if self._sequential:
                jobs, failed = self._done, self._failed
                counts = f"{jobs} jobs ({jobs - failed} ok, {failed} failed)"
            else:  # the jobs ran in other processes: count their outcomes from the job directories
                dirs = [d for d in sweep_dir.iterdir() if (d / ".hydra").is_dir()] if sweep_dir.is_dir() else []
                jobs = len(dirs)
                failed = sum(job_outcome(d) != "ok" or not (d / "summary.json").is_file() for d in dirs)
                counts = f"{jobs} jobs ({jobs - failed} ok, {failed} failed or unfinished)"
            if self._total is not None and jobs < self._total:
                failed += self._total - jobs
            _LAST_SWEEP = {"jobs": jobs, "failed": failed}
            self._say(f"sweep done: {counts} in {took} -> ./dev report {sweep_dir}")
        except Exception:  # noqa: BLE001
            pass

"""What a job is doing now, so that however it ends, `summary.json` says so truly.

A job calls `run.step(name)` as each stage starts; once the job has a `Summary` (`run.attach`), every step
start is written to it (`stage`), and the end is written too: "ok", "failed" with the error, or
"interrupted" (Ctrl-C), each with the stage where it happened and the job's own peak memory. Writes
are atomic, so `summary.json` is always whole. A job killed outright (SIGKILL, out of memory) cannot
write anything: it stays "running" and the report, finding no live holder of the run directory's lock,
shows it as failed.

`runs.entry.reports_errors` begins a `JobRun` for every Hydra job; code that runs a job directly
(tests, benchmarks) gets one from `JobRun.current_or_new`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Callable, Optional

from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.run_artifacts import JobError, JobMemoryFigures, Summary
from llm_perf_opt.runs import signals
from llm_perf_opt.runs.memory import JobMemory

_CURRENT: Optional["JobRun"] = None


class JobRun:
    """One job: its run directory, the stage it is in, its summary (once it has one) and its memory."""

    def __init__(self, out_dir: str | Path, stage: str = "start") -> None:
        self.out_dir = Path(out_dir)
        self.stage = stage
        self.summary: Optional[Summary] = None
        self._save: Optional[Callable[[], Any]] = None
        self.memory = JobMemory().start()
        self.ended: Optional[str] = None  # the terminal status once written
        # the directory itself, held open so its inode cannot be reused by a new directory of the same name
        try:
            self._dir_fd: Optional[int] = os.open(self.out_dir, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError:
            self._dir_fd = None

    def check_directory(self) -> None:
        """ArtifactError when the run directory was removed (or replaced) while the job ran: its files are
        gone, and a later write would silently make a new, partial directory (never `ok`)."""
        if self._dir_fd is None:
            return
        held = os.fstat(self._dir_fd)
        now = _identity(self.out_dir)
        if held.st_nlink == 0 or now != (held.st_dev, held.st_ino):
            raise ArtifactError(
                f"{self.out_dir}: the run directory was removed or replaced during stage "
                f"{self.stage}: the run's files are gone, so the run cannot end ok"
            )

    # ------------------------------------------------------------------ the current job
    @classmethod
    def begin(cls, out_dir: str | Path, stage: str = "start") -> "JobRun":
        global _CURRENT
        _CURRENT = cls(out_dir, stage)
        return _CURRENT

    @classmethod
    def current_or_new(cls, out_dir: str | Path) -> "JobRun":
        """The job `reports_errors` began for this directory, or a new one (not made current)."""
        run = _CURRENT
        if run is not None and run.out_dir.resolve() == Path(out_dir).resolve() and run.ended is None:
            return run
        return cls(out_dir)

    def end(self) -> None:
        global _CURRENT
        if _CURRENT is self:
            _CURRENT = None
        if self._dir_fd is not None:
            os.close(self._dir_fd)
            self._dir_fd = None
        self.summary, self._save = None, None  # the job's objects go with it

    # ------------------------------------------------------------------ progress
    def attach(self, summary: Summary, save: Callable[[], Any]) -> None:
        """From now on, stages and the end are written into `summary` (saved with `save()`)."""
        self.summary, self._save = summary, save
        summary.stage = self.stage
        self.save()

    def step(self, name: str) -> None:
        """A stage starts: `summary.json` names it while it runs (and keeps naming it if the job stops there).
        One line before the stage's code, so adding a stage to a job is adding a line.
        A signal a finalizer swallowed during the previous stage stops the job here (`signals`)."""
        signals.raise_pending()
        self.check_directory()
        self.stage = name
        if self.summary is not None:
            self.summary.stage = name
            self.save()

    def memory_figures(self) -> JobMemoryFigures:
        p = self.memory.peak()
        return JobMemoryFigures(
            peak_rss_bytes=p.peak_rss_bytes,
            method=p.method,
            rss_start_bytes=p.rss_start_bytes,
            peak_cuda_bytes=p.peak_cuda_bytes,
            cuda_method=p.cuda_method,
        )

    def save(self) -> None:
        if self.summary is not None and self._save is not None:
            self.summary.memory = self.memory_figures()
            self._save()

    # ------------------------------------------------------------------ the end
    def finish_ok(self) -> None:
        signals.raise_pending()  # never `ok` after a Ctrl-C or SIGTERM, even one a finalizer swallowed
        self.check_directory()  # nor when the run directory vanished under the job
        if self.summary is not None:
            self.summary.status = "ok"
            self.summary.stage = "done"
            self.save()
        self.ended = "ok"

    def stopped(self, exc: BaseException) -> None:
        """Record a job that raised: "interrupted" for Ctrl-C, "failed" otherwise (once; later calls no-op).
        A failure to write is reported on stderr and swallowed: the original error matters more. An interruption
        by a signal (`signals.pending()`) ignores further signals first (`signals.ignore()`: the process is
        ending): a second one landing during the write would abort it and leave summary.json at `running`
        with no error, and this record is made only once."""
        if self.ended is not None:
            return
        status = "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed"
        if status == "interrupted" and signals.pending() is not None:
            signals.ignore()
        self.ended = status
        if self.summary is None:
            return
        message = str(exc).strip() or ("Ctrl-C" if status == "interrupted" else type(exc).__name__)
        self.summary.status = status
        self.summary.error = JobError(type=type(exc).__name__, message=message)
        try:
            self.save()
        except Exception as write_error:  # noqa: BLE001
            print(
                f"warning: could not record the {status} status in {self.out_dir / 'summary.json'}: {write_error}",
                file=sys.stderr,
            )


def _identity(path: Path) -> Optional[tuple[int, int]]:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino


def current() -> Optional[JobRun]:
    return _CURRENT

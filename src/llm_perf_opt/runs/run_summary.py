"""summary.json's `memory` and `error` sections: run control's figures of the job (`runs.job_run`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class JobMemoryFigures:
    """The job's own peak memory (not the process's running maximum: see `runs.memory`)."""

    peak_rss_bytes: int
    method: str  # how the peak was measured (VmHWM reset at job start, or ru_maxrss where it cannot be)
    rss_start_bytes: Optional[int] = None  # resident memory when the job started
    peak_cuda_bytes: Optional[int] = None
    cuda_method: Optional[str] = None
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class JobError:
    """Why a job stopped (status failed / interrupted): the exception's type and message."""

    type: str
    message: str
    extra: dict = field(default_factory=dict)

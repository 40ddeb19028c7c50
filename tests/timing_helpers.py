"""Helpers of the tests of the trace job's timing stages and of predicted times in the reports (tests/trace,
tests/report): running a pipeline as `./dev` does, reading its one-line errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def run_pipeline(job: str, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`pipelines/<job>.py ARGS` from the repository root (what `./dev <job>` runs)."""
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "pipelines" / f"{job}.py"), *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=timeout,
    )


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    """stderr lines that are neither progress lines ([HH:MM:SS] ...) nor torch's profiler chatter."""
    return [
        line
        for line in proc.stderr.splitlines()
        if line.strip() and not line.startswith("[") and not line.startswith("USDT:")
    ]


def files_under(path: Path) -> list[str]:
    """Files a job wrote into its run directory, Hydra's own records (.hydra/, the log) and the directory's
    lock (`run_lock`: held by whoever claims the directory, results or not) left out."""
    from llm_perf_opt.run_lock import LOCK_FILE

    if not path.exists():
        return []
    return sorted(
        str(p.relative_to(path))
        for p in path.rglob("*")
        if p.is_file() and ".hydra" not in p.parts and p.suffix != ".log" and p.name != LOCK_FILE
    )

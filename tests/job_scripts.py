"""Running the real job scripts (pipelines/*.py, what ./dev runs) in subprocesses, and reading what they say
(the runs, config and system tests; tests/conftest.py puts this directory on sys.path)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Optional

REPO_ROOT = Path(__file__).resolve().parents[1]


def job_cmd(name: str, *args: str) -> list[str]:
    return [sys.executable, str(REPO_ROOT / "pipelines" / f"{name}.py"), *map(str, args)]


def run_job(
    name: str, *args: str, cwd: Optional[Path] = None, env: Optional[dict] = None, timeout: float = 600
) -> subprocess.CompletedProcess:
    return subprocess.run(
        job_cmd(name, *args),
        cwd=cwd or REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def start_job(name: str, *args: str, cwd: Optional[Path] = None) -> subprocess.Popen:
    """A job in the background, stderr piped line by line; SIGINT restored to Python's default handler (a
    background process may inherit it ignored)."""
    return subprocess.Popen(
        job_cmd(name, *args),
        cwd=cwd or REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for_line(proc: subprocess.Popen, marker: str, timeout: float = 300) -> list[str]:
    """Read the job's stderr until a line contains `marker`; the lines read."""
    lines: list[str] = []
    deadline = time.time() + timeout
    for line in proc.stderr:  # type: ignore[union-attr]
        lines.append(line)
        if marker in line:
            return lines
        if time.time() > deadline:
            break
    raise AssertionError(f"the job never printed {marker!r}:\n{''.join(lines[-40:])}")


def wait_until(check: Callable[[], bool], timeout: float = 300, what: str = "") -> None:
    deadline = time.time() + timeout
    while not check():
        if time.time() > deadline:
            raise AssertionError(f"timed out waiting for {what or check}")
        time.sleep(0.1)


def one_line_error(proc: subprocess.CompletedProcess, code: int = 2) -> str:
    """The single `error: ...` line a refused job printed on stderr (asserting there is nothing else)."""
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == code, (proc.returncode, proc.stderr[-3000:])
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr[-3000:]
    return lines[0]

"""Running the real job scripts (pipelines/*.py, what ./dev runs) in subprocesses, or the same command in this
process where a test is not about the process itself, and reading what they say (the runs, config and system
tests; tests/conftest.py puts this directory on sys.path)."""

from __future__ import annotations

import contextlib
import io
import logging
import os
import signal
import subprocess
import sys
import time
import traceback
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


def run_job_in_process(name: str, *args: str) -> subprocess.CompletedProcess:
    """`llm-perf-opt NAME ARGS` in this process (`jobs.cli.main`, what pipelines/NAME.py runs), as a completed
    process: the exit code (a refusal in a Hydra callback ends with SystemExit; a bug is exit code 1 with its
    traceback on stderr, as Python prints it) and what the job printed on stdout and stderr. A composition and
    the job, not a Python start-up (most of a light job's cost). The logging handlers a Hydra job installs (its
    stderr and log file) are removed afterwards, so nothing of this run writes into a later test's output."""
    from llm_perf_opt.jobs.cli import main

    loggers = [logging.getLogger(), logging.getLogger("llm_perf_opt")]
    before = [(list(lg.handlers), lg.level) for lg in loggers]
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([name, *map(str, args)])
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except Exception:  # noqa: BLE001 - what the process would print before exiting 1
                traceback.print_exc()
                code = 1
    finally:
        for lg, (handlers, level) in zip(loggers, before):
            for h in [h for h in lg.handlers if h not in handlers]:
                lg.removeHandler(h)
                h.close()
            lg.setLevel(level)
    return subprocess.CompletedProcess([name, *map(str, args)], int(code or 0), out.getvalue(), err.getvalue())


def start_job(name: str, *args: str, cwd: Optional[Path] = None, env: Optional[dict] = None) -> subprocess.Popen:
    """A job in the background, stderr piped line by line; SIGINT restored to Python's default handler (a
    background process may inherit it ignored)."""
    return subprocess.Popen(
        job_cmd(name, *args),
        cwd=cwd or REPO_ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
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

"""Real Hydra multiruns of the trace job on the tiny twin, run once per test session and shared."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from job_scripts import run_job_in_process
from shared_runs import made_once

from llm_perf_opt.errors import ExitCode

REPO_ROOT = Path(__file__).resolve().parents[2]


def job_script(name: str) -> list[str]:
    """The command of a job script in pipelines/ (what ./dev runs)."""
    return [sys.executable, str(REPO_ROOT / "pipelines" / f"{name}.py")]


def run_sweep(sweep_dir: Path, *overrides: str, timeout: float = 900) -> subprocess.CompletedProcess:
    """`pipelines/sweep.py OVERRIDES hydra.sweep.dir=SWEEP_DIR` (./dev sweep), a subprocess: the failing sweep's exit
    status (3) and its jobs' progress lines are what the script's process gives."""
    cmd = [*job_script("sweep"), *overrides, f"hydra.sweep.dir={sweep_dir}"]
    env = dict(os.environ, HYDRA_FULL_ERROR="1")
    return subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, env=env)


def run_report(*args: str) -> subprocess.CompletedProcess:
    """`./dev report ARGS` in this process (`run_job_in_process`: the exit code and what it prints, without a
    Python start-up per report)."""
    return run_job_in_process("report", *args)


@pytest.fixture(scope="session")
def ok_sweep(small_sweep) -> tuple[Path, subprocess.CompletedProcess]:
    """Two modes of the tiny twin (the full trace job): the session's `small_sweep` (tests/conftest.py)."""
    return small_sweep


@pytest.fixture(scope="session")
def failing_sweep(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """Three jobs, the middle one with an invalid base_size (not a multiple of 64): the sweep goes on, and
    exits 3 (a job failed) at the end. The forward only, no profile, no hardware (no roofline stage): its tests
    read statuses and errors."""

    def make(d: Path) -> tuple[Path, subprocess.CompletedProcess]:
        proc = run_sweep(
            d / "failing",
            "model=twin_tiny",
            "trace=forward_only",
            "profile=off",
            "~hardware",
            "workload.base_size=1024,1000,1280",
        )
        assert proc.returncode == ExitCode.JOBS_FAILED, proc.stderr[-4000:]
        return d / "failing", proc

    return made_once(tmp_path_factory, "failing_sweep", make)

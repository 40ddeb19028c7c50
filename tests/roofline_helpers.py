"""Helpers of the roofline, hardware, calibration and analyze-job tests (tests/analytic, tests/measure, tests/jobs):
composing the analyze config, running a pipeline as the CLI does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir

from llm_perf_opt.runs.entry import CONF_DIR

REPO_ROOT = Path(__file__).resolve().parents[1]


def compose_cfg(*overrides: str, config_name: str = "analyze"):
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        return compose(config_name=config_name, overrides=list(overrides))


def run_job(job: str, run_dir: Path, *overrides: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """`pipelines/<job>.py` in the repository root, as `./dev <job>` runs it."""
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "pipelines" / f"{job}.py"), f"hydra.run.dir={run_dir}", *overrides],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=300,
        env=env,
    )


def error_lines(proc: subprocess.CompletedProcess) -> list[str]:
    """stderr lines that are not progress lines ([HH:MM:SS] ...)."""
    return [line for line in proc.stderr.splitlines() if line.strip() and not line.startswith("[")]

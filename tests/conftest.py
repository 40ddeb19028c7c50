"""Shared fixtures: where the vendor code is (opt-in), CUDA availability, a real browser; the default trace
job and one small sweep, each run once per test session and read by the graph, timing, report and floor
tests (none of them writes into these directories: a test that changes a run works on a copy)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # --import-mode=importlib: the shared helpers (browser.py) import as top level
    sys.path.insert(0, str(TESTS))


@pytest.fixture
def browser():
    """A headless chromium through Playwright on the system's browser (`browser.py`: which one, and why a
    missing one skips here and fails under CI). Per test: Playwright's sync API allows one at a time."""
    from browser import chromium_browser

    with chromium_browser() as b:
        yield b


@pytest.fixture(scope="session")
def vendor_dir() -> Path:
    """The vendor model directory from DSOCR_MODEL_PATH; tests that need it skip without it."""
    path = os.environ.get("DSOCR_MODEL_PATH")
    if not path:
        pytest.skip("DSOCR_MODEL_PATH is not set (vendor code not available; see the README's Vendor model section)")
    p = Path(path)
    if not (p / "modeling_deepseekocr.py").is_file():
        pytest.skip(f"DSOCR_MODEL_PATH={path} has no modeling_deepseekocr.py")
    return p


def run_job_script(job: str, *args: str, timeout: float = 900, env: dict | None = None) -> subprocess.CompletedProcess:
    """`pipelines/<job>.py ARGS` from the repository root, what `./dev <job>` runs, in its own process."""
    return subprocess.run([sys.executable, str(REPO_ROOT / "pipelines" / f"{job}.py"), *map(str, args)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="session")
def calibration_dir(tmp_path_factory) -> Path:
    """The calibration cache of this session's `hardware=measured` jobs (one calibration, then reused)."""
    return tmp_path_factory.mktemp("calibration")


@pytest.fixture(scope="session")
def default_run(tmp_path_factory, calibration_dir) -> tuple[Path, subprocess.CompletedProcess]:
    """(run dir, completed process) of `./dev trace` with its defaults (twin_tiny, gundam, the letter page,
    CPU, profile on, hardware=measured), as ./dev runs it; only the run directory and the calibration
    cache are moved into temporary directories."""
    run = tmp_path_factory.mktemp("default_trace") / "run"
    proc = run_job_script("trace", f"hydra.run.dir={run}", f"hardware.cache_dir={calibration_dir}")
    assert proc.returncode == 0, proc.stderr[-4000:]
    return run, proc


@pytest.fixture(scope="session")
def small_sweep(tmp_path_factory, calibration_dir) -> tuple[Path, subprocess.CompletedProcess]:
    """(sweep dir, completed process) of `./dev sweep model=twin_tiny workload=tiny,gundam`: two jobs of the
    whole trace job (profile on, hardware=measured)."""
    sweep = tmp_path_factory.mktemp("sweeps") / "ok"
    proc = run_job_script("sweep", "model=twin_tiny", "workload=tiny,gundam", f"hardware.cache_dir={calibration_dir}",
                          f"hydra.sweep.dir={sweep}", env={"HYDRA_FULL_ERROR": "1"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    return sweep, proc

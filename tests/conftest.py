"""Shared fixtures: where the vendor code is (opt-in), CUDA availability, a real browser; the default trace
job, one small sweep and the quick gate, each run once per test session and read by the graph, timing,
report, decode, verify and floor tests (none of them writes into these directories: a test that changes a
run works on a copy)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# OpenMP threads that wait passively: torch's CPU kernels (GNU OpenMP) otherwise spin between parallel
# regions, and on a machine whose cores are shared (the suite's own job subprocesses, other users) the
# spinning is most of the CPU the suite spends: the default trace job takes about 3x the CPU time and wall
# time with spinning threads on a loaded 2-core machine (20 vs 55 CPU-s). Set before torch is first imported
# (libgomp reads it when it loads), here and in every job subprocess, which inherits it; results are unchanged.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # --import-mode=importlib: the shared helpers (browser.py) import as top level
    sys.path.insert(0, str(TESTS))

from shared_runs import SMALL_SWEEP_PAGE, GateRun, made_once, run_gate, run_job_script  # noqa: E402


@pytest.fixture
def browser():
    """A headless chromium through Playwright on the system's browser (`browser.py`: which one, and why a
    missing one skips here and fails under CI). Per test: Playwright's sync API allows one at a time."""
    from browser import chromium_browser

    with chromium_browser() as b:
        yield b


def _vendor_path(env: str, modeling: str, what: str) -> Path:
    path = os.environ.get(env)
    if not path:
        pytest.skip(f"{env} is not set ({what} vendor code not available; see docs/vendor.md)")
    p = Path(path)
    if not (p / modeling).is_file():
        pytest.skip(f"{env}={path} has no {modeling}")
    return p


@pytest.fixture(scope="session")
def vendor_dir() -> Path:
    """The vendor model directory from DSOCR_MODEL_PATH; tests that need it skip without it."""
    return _vendor_path("DSOCR_MODEL_PATH", "modeling_deepseekocr.py", "DeepSeek-OCR")


@pytest.fixture(scope="session")
def vendor2_dir() -> Path:
    """The DeepSeek-OCR 2 vendor directory from DSOCR2_MODEL_PATH; tests that need it skip without it."""
    return _vendor_path("DSOCR2_MODEL_PATH", "modeling_deepseekocr2.py", "DeepSeek-OCR 2")


@pytest.fixture(scope="session")
def calibration_dir(tmp_path_factory) -> Path:
    """The calibration cache of this session's `hardware=measured` jobs (one calibration, then reused)."""
    return made_once(tmp_path_factory, "calibration", lambda d: d)


@pytest.fixture(scope="session", autouse=True)
def session_calibration_cache(calibration_dir):
    """Every job of the session, in a subprocess or in a worker, whose configuration names no cache of its own
    calibrates into the session's cache (LLM_PERF_OPT_CALIBRATION_DIR: conf/hardware/measured.yaml), never
    into the checkout's tmp/calibration/: a fresh clone calibrates once, like a warm one, and a cache left
    there by older code is never read. Jobs started together wait for one calibration (its lock file)."""
    os.environ["LLM_PERF_OPT_CALIBRATION_DIR"] = str(calibration_dir)


@pytest.fixture(scope="session")
def default_run(tmp_path_factory, calibration_dir) -> tuple[Path, subprocess.CompletedProcess]:
    """(run dir, completed process) of `./dev trace` with its defaults (twin_tiny, gundam, the letter page,
    CPU, profile on, hardware=measured), as ./dev runs it; only the run directory and the calibration
    cache are moved into temporary directories."""

    def make(d: Path) -> tuple[Path, subprocess.CompletedProcess]:
        proc = run_job_script("trace", f"hydra.run.dir={d / 'run'}", f"hardware.cache_dir={calibration_dir}")
        assert proc.returncode == 0, proc.stderr[-4000:]
        return d / "run", proc

    return made_once(tmp_path_factory, "default_trace", make)


@pytest.fixture(scope="session")
def small_sweep(tmp_path_factory, calibration_dir) -> tuple[Path, subprocess.CompletedProcess]:
    """(sweep dir, completed process) of `./dev sweep model=twin_tiny workload=tiny,gundam` on a 1300 x 700 page
    (SMALL_SWEEP_PAGE: Gundam's smallest crop grid, 2 x 1): two jobs of the whole trace job (profile on,
    hardware=measured)."""

    def make(d: Path) -> tuple[Path, subprocess.CompletedProcess]:
        width, height = SMALL_SWEEP_PAGE
        proc = run_job_script(
            "sweep",
            "model=twin_tiny",
            "workload=tiny,gundam",
            f"workload.page.width={width}",
            f"workload.page.height={height}",
            f"hardware.cache_dir={calibration_dir}",
            f"hydra.sweep.dir={d / 'ok'}",
            env={"HYDRA_FULL_ERROR": "1"},
        )
        assert proc.returncode == 0, proc.stderr[-4000:]
        return d / "ok", proc

    return made_once(tmp_path_factory, "small_sweep", make)


@pytest.fixture(scope="session")
def quick_gate(tmp_path_factory) -> GateRun:
    """./dev verify verify=quick: the tiny twin on CPU, a plain and a crop mode (tiny, gundam), each with 2
    decode steps and no profile (conf/verify/quick.yaml); its sweep is `OUT/sweep`."""
    return made_once(tmp_path_factory, "quick_gate", lambda d: run_gate(d / "quick", "verify=quick"))

"""The cross-cutting tests: what belongs to the whole system, not to one package of src/llm_perf_opt/.

Here: the import layers, packaging and a quiet install, the docs site, one style (ruff), the benchmark
scripts, pixi.toml and the CI workflows in step with ./dev, bad input refused alike across jobs (and a
refused run leaving nothing behind, the robustness rows of issue 24), the runs the suite shares
(tests/shared_runs.py). A test of one package goes to tests/<package>/ (tests/conftest.py: where a test goes).

The fixture: one wheel of the project, built once per session and read by the packaging tests
(test_quiet_install.py reads its build output and contents, test_packaging.py installs it into a fresh
venv)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from shared_runs import made_once

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class BuiltWheel:
    path: Path  # the one .whl
    proc: subprocess.CompletedProcess  # `pip wheel -v`: its output carries setuptools' warnings


def source_copy(dest: Path) -> Path:
    """The files git would ship (tracked and not ignored), without .venv, tmp/ or build outputs."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for rel in listed:
        src = REPO_ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@pytest.fixture(scope="session")
def built_wheel(tmp_path_factory) -> BuiltWheel:
    """`pip wheel --no-deps --no-build-isolation -v` of a copy of the files git ships (the build backend of
    this venv: setuptools, as pyproject's [build-system] names it)."""

    def make(tmp: Path) -> tuple[Path, subprocess.CompletedProcess]:
        src = source_copy(tmp / "src-copy")
        out = tmp / "dist"
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v", "-w", str(out), str(src)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        wheels = list(out.glob("llm_perf_opt-*.whl"))
        assert len(wheels) == 1, wheels
        return wheels[0], proc

    return BuiltWheel(*made_once(tmp_path_factory, "wheel", make))

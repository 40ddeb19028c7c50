"""Running the job scripts (pipelines/*.py, what ./dev runs) in their own processes, for the runs the test
session shares (tests/conftest.py) and the gate runs of tests/verify; importable as a top-level module
(tests/conftest.py puts this directory on sys.path)."""
from __future__ import annotations

import os
import pickle
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional, TypeVar

REPO_ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")


def run_job_script(job: str, *args: str, timeout: float = 900,
                   env: Optional[dict] = None) -> subprocess.CompletedProcess:
    """`pipelines/<job>.py ARGS` from the repository root, what `./dev <job>` runs, in its own process."""
    return subprocess.run([sys.executable, str(REPO_ROOT / "pipelines" / f"{job}.py"), *map(str, args)],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


@dataclass
class GateRun:
    out: Path
    proc: subprocess.CompletedProcess

    @property
    def fail_lines(self) -> list[str]:
        return [line for line in self.proc.stdout.splitlines() if line.startswith("FAIL ")]


def run_gate(out: Path, *overrides: str, timeout: float = 600) -> GateRun:
    """`pipelines/verify.py OVERRIDES verify.out_dir=OUT` (./dev verify), HYDRA_FULL_ERROR unset."""
    cmd = [sys.executable, str(REPO_ROOT / "pipelines" / "verify.py"), *overrides, f"verify.out_dir={out}"]
    env = {k: v for k, v in os.environ.items() if k != "HYDRA_FULL_ERROR"}
    proc = subprocess.run(cmd, cwd=REPO_ROOT, capture_output=True, text=True, timeout=timeout, env=env)
    return GateRun(out, proc)


def made_once(tmp_path_factory, name: str, make: Callable[[Path], T]) -> T:
    """`make(dir)` run once per test run, its value shared by every pytest-xdist worker.

    Without xdist: `make` in a fresh temporary directory. Under xdist (./dev test runs one worker per core):
    the first worker to ask makes it in a directory beside the workers' own (`getbasetemp().parent`, which
    the workers share) while the others wait on a file lock, then every worker reads the pickled value. A
    `make` that raises leaves nothing behind, so the next worker to ask tries again and fails the same way.
    The value must pickle (paths, completed processes, dataclasses of them)."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return make(tmp_path_factory.mktemp(name))
    from filelock import FileLock

    root = tmp_path_factory.getbasetemp().parent
    done = root / f"{name}.pickle"
    with FileLock(str(root / f"{name}.lock")):
        if done.is_file():
            return pickle.loads(done.read_bytes())
        work = root / f"shared-{name}"
        if work.exists():
            shutil.rmtree(work)
        work.mkdir()
        value = make(work)
        done.write_bytes(pickle.dumps(value))
        return value

"""Running the job scripts (pipelines/*.py, what ./dev runs) in their own processes, for the runs the test
session shares (tests/conftest.py), and the gate runs of tests/gate (in this process); the full-size vendor
traces of the opt-in tests and their kernel-count check; loading a benchmark script. Importable as a top-level
module (tests/conftest.py puts this directory on sys.path)."""

from __future__ import annotations

import importlib.util
import json
import os
import pickle
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, Callable, Optional, TypeVar

REPO_ROOT = Path(__file__).resolve().parents[1]
T = TypeVar("T")
SMALL_SWEEP_PAGE = (1300, 700)  # the session's small sweep (tests/conftest.py): Gundam's smallest crop grid, 2 x 1
# the session's OCR-2 run (tests/conftest.py `ocr2_run`): the tiny OCR-2 twin, default workload (1024 global view,
# 768 crops), on a 1536 x 768 page: the smallest crop grid, 2 x 1 crops of 768
OCR2_PAGE = ("model=ocr2_twin_tiny", "workload=ocr2/default", "workload.page.width=1536", "workload.page.height=768")


def run_job_script(
    job: str, *args: str, timeout: float = 900, env: Optional[dict] = None
) -> subprocess.CompletedProcess:
    """`pipelines/<job>.py ARGS` from the repository root, what `./dev <job>` runs, in its own process."""
    return subprocess.run(
        [sys.executable, str(REPO_ROOT / "pipelines" / f"{job}.py"), *map(str, args)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


@dataclass
class GateRun:
    out: Path
    proc: subprocess.CompletedProcess

    @property
    def fail_lines(self) -> list[str]:
        return [line for line in self.proc.stdout.splitlines() if line.startswith("FAIL ")]


def run_gate(out: Path, *overrides: str) -> GateRun:
    """`./dev verify OVERRIDES verify.out_dir=OUT` in this process (`job_scripts.run_job_in_process`: the gate's
    exit status, its verdict on stdout, its files; no Python start-up), HYDRA_FULL_ERROR unset. The gate runs its
    sweep in a child process of its own, as always."""
    from job_scripts import run_job_in_process

    full_error = os.environ.pop("HYDRA_FULL_ERROR", None)
    try:
        proc = run_job_in_process("verify", *overrides, f"verify.out_dir={out}")
    finally:
        if full_error is not None:
            os.environ["HYDRA_FULL_ERROR"] = full_error
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


def load_benchmark(name: str) -> ModuleType:
    """benchmarks/<name>.py as a module (its `if __name__ == "__main__"` block not run)."""
    spec = importlib.util.spec_from_file_location(f"benchmark_{name}", REPO_ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


BIG_LOCK = Path("/tmp/llm-perf-opt-big.lock")  # one full-size model at a time on this machine


def trace_under_big_lock(run_dir: Path, *overrides: str) -> Any:
    """The trace job in this process (`trace.job.run_trace`) on `conf/` with `overrides`, holding the machine's
    big-run lock: the full-size vendor runs of the opt-in tests. Returns its Summary."""
    import fcntl

    from hydra import compose, initialize_config_dir

    from llm_perf_opt.runs.entry import CONF_DIR
    from llm_perf_opt.trace.job import run_trace

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        raw = compose(config_name="config", overrides=list(overrides))
    with open(BIG_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            return run_trace(raw, run_dir)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _moe_layer(part: str) -> Optional[int]:
    """The decoder layer of a per-layer row (`decoder.layer.i`, `model.layers.i[.mlp[.experts]]`), else None."""
    for prefix in ("decoder.layer.", "model.layers."):
        if part.startswith(prefix):
            rest = part[len(prefix) :].split(".")
            if len(rest) == 1 or rest[1:] in (["mlp"], ["mlp", "experts"]):
                return int(rest[0])
    return None


def assert_kernel_counts_exact_given_routing(
    run_dir: Path, moe_layers: range, steps: int, n_experts: int = 64, top_k: int = 6, kernels_per_expert: int = 5
) -> int:
    """A vendor run's kernel counts (verification.json) equal TorchLens's on every row, and each prefill row holding
    MoE layers took off `kernels_per_expert` (gate, up, act, mul, down) per expert of those layers that the random-
    weight gates sent no token, derived here from routing.json; decode rows (one token: top_k distinct experts)
    take off nothing. Returns how many rows it compared."""
    kc = json.loads((run_dir / "verification.json").read_text())["data"]["kernel_counts"]
    calls = json.loads((run_dir / "routing.json").read_text())["data"]["calls"]
    hit = {(c["layer"], c["step"]): len(c["experts"]) for c in calls}
    assert len(hit) == len(moe_layers) * (1 + steps)
    assert all(hit[(layer, k)] == top_k for layer in moe_layers for k in range(1, steps + 1))
    missing = {layer: kernels_per_expert * (n_experts - hit[(layer, 0)]) for layer in moe_layers}
    rows = kc["rows"]
    assert len(rows) == kc["n_rows"] >= 3 * (steps + 2)
    checked = 0
    for r in rows:
        expected = 0
        if r["stage"] == "prefill":
            layer = _moe_layer(r["part"])
            if r["part"] in ("", "model", "decoder", "model.layers"):
                expected = sum(missing.values())
            elif layer is not None:
                expected = missing.get(layer, 0)
        assert r["ok"] and r["analytic"] == r["measured"] and r.get("unrouted", 0) == expected, r
        checked += 1
    assert checked == len(rows)
    return checked

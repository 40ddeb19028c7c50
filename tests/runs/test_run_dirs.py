"""A run directory belongs to one process: unique defaults, a lock for the job's life, no mixing of runs.
Concurrency is tested with real processes (the job scripts ./dev runs)."""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
from job_scripts import one_line_error, run_job, run_job_in_process, start_job, wait_for_line

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.run_lock import LOCK_FILE, claim, holder


def data(path: Path) -> dict:
    return json.loads(path.read_text())["data"]


def test_two_default_runs_started_together_get_their_own_directories(tmp_path):
    """The issue's case: `./dev analyze workload=tiny & ./dev analyze workload=gundam` shared a directory."""
    results: dict[str, subprocess.CompletedProcess] = {}

    def go(mode: str) -> None:
        results[mode] = run_job("analyze", f"workload={mode}", cwd=tmp_path)  # default dir: tmp/runs/... of cwd

    threads = [threading.Thread(target=go, args=(m,)) for m in ("tiny", "gundam")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(p.returncode == 0 for p in results.values()), {m: p.stderr[-2000:] for m, p in results.items()}
    runs = sorted((tmp_path / "tmp" / "runs").glob("*/*"))
    assert len(runs) == 2 and all((r / "costs.json").is_file() for r in runs)
    overrides = sorted((r / ".hydra" / "overrides.yaml").read_text().strip() for r in runs)
    assert overrides == ["- workload=gundam", "- workload=tiny"]
    # the names sort in time order and carry the pid: HH-MM-SS.micro-PID
    for r in runs:
        clock, _, pid = r.name.rpartition("-")
        assert pid.isdigit() and len(clock.split(".")[1]) == 6, r.name


def test_a_second_run_is_refused_while_the_first_holds_the_directory(tmp_path):
    run_dir = tmp_path / "run"
    first = start_job(
        "trace",
        "model=twin_tiny",
        "workload=tiny",
        "trace=forward_only",
        "profile=off",
        "~hardware",
        f"hydra.run.dir={run_dir}",
    )
    try:
        wait_for_line(first, "opening session")
        info = holder(run_dir)
        assert info is not None and info["pid"] == first.pid
        second = run_job("analyze", "workload=gundam", f"hydra.run.dir={run_dir}")
        line = one_line_error(second)
        assert f"is in use by another run (pid {first.pid}" in line and str(run_dir) in line
        first.communicate(timeout=300)  # drains its stderr while it finishes
        assert first.returncode == 0
    finally:
        first.kill()
    assert holder(run_dir) is None  # the lock went with the process
    summary, costs = data(run_dir / "summary.json"), data(run_dir / "costs.json")
    assert summary["workload"]["mode"] == "tiny" and summary["status"] == "ok"
    assert costs == data(run_dir / "costs.json")  # untouched by the refused run


def test_a_finished_run_is_kept_unless_overwrite(tmp_path):
    run_dir = tmp_path / "run"
    assert run_job("analyze", "workload=tiny", f"hydra.run.dir={run_dir}").returncode == 0
    before = (run_dir / "costs.json").read_text()
    line = one_line_error(run_job("analyze", "workload=gundam", f"hydra.run.dir={run_dir}"))
    assert "already holds the results of another run (costs.json)" in line and "run.overwrite=true" in line
    assert (run_dir / "costs.json").read_text() == before
    (run_dir / "callgraph.json").write_text("{}")  # a file of the old run the new one would not write
    again = run_job("analyze", "workload=gundam", f"hydra.run.dir={run_dir}", "run.overwrite=true")
    assert again.returncode == 0, again.stderr
    assert (run_dir / "costs.json").read_text() != before
    assert not (run_dir / "callgraph.json").exists()  # nothing of the old run is mixed in


def test_a_sweep_directory_is_kept_unless_overwrite(tmp_path):
    """One sweep after another, never two at once: the three commands run in this process."""
    sweep = tmp_path / "sweep"
    args = (
        "model=twin_tiny",
        "trace=forward_only",
        "profile=off",
        "~hardware",
        "workload=tiny",
        f"hydra.sweep.dir={sweep}",
    )
    assert run_job_in_process("sweep", *args).returncode == 0
    line = one_line_error(run_job_in_process("sweep", *args))
    assert "hydra.sweep.dir=" in line and "already holds the results of another sweep" in line
    proc = run_job_in_process("sweep", *args, "run.overwrite=true")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert data(sweep / "0" / "summary.json")["status"] == "ok"


def test_a_run_directory_that_is_a_file_is_one_line(tmp_path):
    target = tmp_path / "file"
    target.write_text("x")
    line = one_line_error(run_job("analyze", f"hydra.run.dir={target}"))
    assert "is an existing file, not a directory" in line
    assert target.read_text() == "x"


def test_claim_and_holder_in_process(tmp_path):
    lock = claim(tmp_path / "d")
    assert holder(tmp_path / "d")["pid"] == os.getpid()
    with pytest.raises(ConfigError, match="in use by another run"):
        claim(tmp_path / "d")
    lock.release()
    assert holder(tmp_path / "d") is None and (tmp_path / "d" / LOCK_FILE).is_file()
    claim(tmp_path / "d").release()  # an empty directory can be claimed again

"""The job's log file (trace.log, where the README and the report send users for a killed job) holds the
progress lines stderr shows; stdout keeps only the job's results."""

from __future__ import annotations

import re

from job_scripts import run_job_in_process

from llm_perf_opt.run_artifacts import run_file

STAMP = re.compile(r"^\[(\d{4}-\d{2}-\d{2} )?\d{2}:\d{2}:\d{2}\] ")


def test_trace_log_holds_the_progress_lines(tmp_path):
    run_dir = tmp_path / "run"
    proc = run_job_in_process(
        "trace",
        "model=twin_tiny",
        "workload=tiny",
        "trace=forward_only",
        "profile=off",
        "~hardware",
        f"hydra.run.dir={run_dir}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    log = run_dir / run_file("log").file
    progress = [STAMP.sub("", line) for line in proc.stderr.splitlines() if STAMP.match(line)]
    logged = [STAMP.sub("", line) for line in log.read_text().splitlines() if STAMP.match(line)]
    assert any(line.startswith("opening session") for line in progress)
    assert any(line.startswith("done in") for line in progress)
    assert progress == logged
    assert "opening session" not in proc.stdout and "grid" in proc.stdout  # stdout: the results

"""A sweep releases what each job built, and each job reports its own peak memory.

The sweep runs in one process (Hydra's basic launcher, what `./dev sweep` does): `sweep_weakrefs.py` holds
weak references to every model and parameter the jobs build and checks them after each job."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from llm_perf_opt.run_artifacts import load_summary
from llm_perf_opt.runs.memory import HWM_METHOD, JobMemory, release, rss_bytes

HERE = Path(__file__).resolve().parent
LINUX_HWM = Path("/proc/self/clear_refs").exists()


@pytest.fixture(scope="module")
def weakref_sweep(tmp_path_factory):
    """gundam, then tiny on the tiny twin (the trace job: forward, capture, measured FLOPs, decode; the profile
    and roofline stages off, whose repeated forwards and plots build no model), on a page of 2 x 1 crops, in one
    process: the second job's model is built after the first one's is gone, and its peak is far below."""
    sweep = tmp_path_factory.mktemp("weakrefs") / "sweep"
    proc = subprocess.run(
        [
            sys.executable,
            str(HERE / "sweep_weakrefs.py"),
            str(sweep),
            "model=twin_tiny",
            "profile=off",
            "~hardware",
            "workload.page.width=1300",
            "workload.page.height=700",
            "workload=gundam,tiny",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines and lines[-1] == {"exit": 0}, proc.stderr[-4000:]
    return sweep, lines[:-1], proc.stderr


@pytest.mark.slow
def test_every_jobs_model_is_gone_after_the_job(weakref_sweep):
    _, jobs, _ = weakref_sweep
    assert [j["job"] for j in jobs] == [0, 1]
    for j in jobs:
        assert j["models"] == j["job"] + 1  # one model per job, all seen by the spy
        assert j["alive_models"] == 0 and j["alive_params"] == 0, j


@pytest.mark.slow
def test_each_job_reports_its_own_peak(weakref_sweep):
    sweep, _, stderr = weakref_sweep
    memory = [load_summary(sweep / str(n) / "summary.json").memory for n in range(2)]
    assert all(m is not None and m.peak_rss_bytes > 0 for m in memory)
    assert "memory handed back" in stderr
    if not LINUX_HWM:
        pytest.skip("no /proc/self/clear_refs: peaks are the process maximum here (the summary says so)")
    assert all(m.method == HWM_METHOD for m in memory)
    # ru_maxrss would give the tiny job (1) at least the gundam job's (0) peak; its own peak is far below
    assert memory[1].peak_rss_bytes < memory[0].peak_rss_bytes, memory
    assert all(m.rss_start_bytes <= m.peak_rss_bytes for m in memory)


@pytest.mark.skipif(not LINUX_HWM, reason="needs /proc/self/clear_refs (Linux)")
def test_the_peak_is_reset_per_job():
    block = bytearray(256 * 2**20)  # touched, so resident
    for i in range(0, len(block), 4096):
        block[i] = 1
    big = JobMemory().start().peak_rss()
    del block
    release()
    job = JobMemory().start()
    assert job.peak().method == HWM_METHOD
    assert job.peak_rss() < big - 128 * 2**20  # the earlier 256 MB are not this job's peak
    assert job.rss_start is not None and job.rss_start <= job.peak_rss()


def test_release_reports_what_it_did():
    text = release()
    assert text.startswith("gc")
    if sys.platform.startswith("linux") and rss_bytes() is not None:
        assert "RSS" in text

"""`report.compare` refuses the runs it cannot compare honestly and says what differs (issue 34, group 4), on real
runs of the session: the default trace job, the same without its timing stages, the trace job at batch 2 and
DeepSeek-OCR 2 (tests/conftest.py). A run whose status is changed is a copy: the session's runs stay as they are."""

from __future__ import annotations

import fcntl
import json
import os
import shutil

import pytest

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.report.compare import compare_runs, csv_text

pytestmark = pytest.mark.slow


def _with_status(run, dest, status: str, error: dict | None = None):
    shutil.copytree(run, dest)
    doc = json.loads((dest / "summary.json").read_text())
    doc["data"].update(status=status, stage="capture", error=error)
    (dest / "summary.json").write_text(json.dumps(doc))
    return dest


@pytest.mark.parametrize(
    "status, error, says",
    [
        ("failed", {"type": "TraceError", "message": "the capture broke"}, "ended failed at stage capture: TraceError"),
        ("interrupted", {"type": "KeyboardInterrupt", "message": "Ctrl-C"}, "ended interrupted at stage capture"),
        ("running", None, "was killed (status running, and no process holds it) at stage capture"),
    ],
)
def test_a_run_that_did_not_end_ok_is_refused(untimed_run, tmp_path, status, error, says):
    b = _with_status(untimed_run, tmp_path / "b", status, error)
    with pytest.raises(ConfigError) as exc:
        compare_runs(untimed_run, b)
    assert f"run B {b}: {says}" in str(exc.value) and "two runs that ended ok" in str(exc.value)


def test_a_live_run_and_a_run_without_its_call_graph_are_refused(untimed_run, tmp_path):
    live = tmp_path / "live"
    shutil.copytree(untimed_run, live)
    fd = os.open(live / ".lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as the job holds its directory while it runs
        with pytest.raises(ConfigError, match=r"run A .*: still running \(.*\): its files are not final"):
            compare_runs(live, untimed_run)
    finally:
        os.close(fd)
    compare_runs(live, untimed_run)  # the job ended: the same directory compares
    bare = tmp_path / "bare"
    shutil.copytree(untimed_run, bare)
    (bare / "callgraph.grouped.json").unlink()
    with pytest.raises(ConfigError, match=r"no call graph \(callgraph.grouped.json; regroup it with ./dev group"):
        compare_runs(untimed_run, bare)
    (bare / "callgraph.json").unlink()
    with pytest.raises(ConfigError, match=r"nor callgraph.json: traced with trace.capture=false\?\)"):
        compare_runs(untimed_run, bare)


def test_runs_at_two_batches_say_so_in_the_labels_page_and_csv(untimed_run, batch_run, tmp_path):
    cmp = compare_runs(untimed_run, batch_run)
    assert "batch 1" in cmp.a.label() and "batch 2" in cmp.b.label()
    said = dict(cmp.differences)
    assert said["batch"].startswith("batch 1 → 2: each run's FLOPs, bytes and times are of its whole batched forward")
    assert said["mode"] == "mode gundam → tiny: other views and image tokens"
    assert "family" not in said and "model" not in said  # the same model
    rows = [line for line in csv_text(cmp).splitlines() if line.startswith("differs,")]
    assert len(rows) == len(cmp.differences) >= 2 and any(r.startswith("differs,batch,") for r in rows)
    from llm_perf_opt.report.compare import write_comparison

    html = write_comparison(cmp, tmp_path / "out")["html"].read_text(encoding="utf-8")
    top = html[: html.index("<h2>The runs</h2>")]  # before the tables: what differs comes first
    assert 'data-what="batch"' in top and "divide by the batch for one sequence" in top


def test_runs_of_two_families_say_which_nodes_could_match(untimed_run, ocr2_run):
    run, _ = ocr2_run
    cmp = compare_runs(untimed_run, run, default_family="dsocr")
    said = dict(cmp.differences)
    assert cmp.a.family == "dsocr" and cmp.b.family == "dsocr2"
    assert said["family"].startswith("model family dsocr → dsocr2: two families' module trees")
    assert f"({len(cmp.only_a)} nodes only in A, {len(cmp.only_b)} only in B)" in said["family"]
    assert cmp.only_a and cmp.only_b and cmp.nodes  # the shared modules (SAM, the decoder) still match


def test_two_runs_of_one_config_differ_in_nothing_said(untimed_run):
    assert compare_runs(untimed_run, untimed_run).differences == []

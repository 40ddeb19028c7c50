"""The trace job with `trace.decode_steps=N` end to end on the tiny twin: decoder layers with 1 + N passes,
runtime checks ok, every step verified exactly, routing.json, per-step rows in summary.json, the time
per step beside its roofline prediction; bad input as one line; a job killed during decode."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from job_scripts import run_job_in_process

from llm_perf_opt.callgraph.grouped import load_grouped_json
from llm_perf_opt.callgraph.schema import load_callgraph_json
from llm_perf_opt.measure import load_verification
from llm_perf_opt.model_runtime.routing import load_routing
from llm_perf_opt.run_artifacts import RUN_FILES, load, load_summary
from llm_perf_opt.runs.entry import CONF_DIR

pytestmark = pytest.mark.slow
REPO_ROOT = Path(__file__).resolve().parents[2]
STEPS = 2  # two steps: a decode loop (each step after the first reads a grown cache)


def trace_cmd(run_dir: Path, *overrides: str) -> list[str]:
    return [sys.executable, str(REPO_ROOT / "pipelines" / "trace.py"), f"hydra.run.dir={run_dir}", *overrides]


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    from llm_perf_opt.trace.job import run_trace

    run_dir = tmp_path_factory.mktemp("decode_job")
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        raw = compose(
            config_name="config",
            overrides=[
                "model=twin_tiny",
                "workload=tiny",
                f"trace.decode_steps={STEPS}",
                "profile.warmup=0",
                "profile.repeats=1",
                "hardware=h100_sxm",
            ],
        )
    summary = run_trace(raw, run_dir)
    return run_dir, summary


def test_decoder_layers_show_one_plus_n_passes_and_the_checks_are_ok(job):
    run_dir, summary = job
    cg = load_callgraph_json(run_dir / "callgraph.json")
    for i in range(3):
        assert cg.call_counts[f"model.layers.{i}"] == 1 + STEPS
    assert cg.call_counts["model.sam_model"] == 1 and cg.call_counts[""] == 1
    grouped = load_grouped_json(run_dir / "callgraph.grouped.json")
    assert {c["name"]: c["status"] for c in grouped.checks} == {
        "vision_passes:sam_model": "ok",
        "vision_passes:vision_model": "ok",
        "vision_passes:projector": "ok",
        "decoder_layers": "ok",
        "decoder_layer_calls": "ok",
        "block_loop:sam_model.blocks": "ok",
        "block_loop:vision_model.transformer.layers": "ok",
        "decode_loop": "ok",
        "moe_routing": "ok",
    }
    assert summary.grouping.check_counts() == {"ok": 9, "mismatch": 0, "not checked": 0}
    assert summary.trace.raw["root_forward_calls"] == 1 + STEPS
    experts = [n for n in grouped.nodes if ".mlp.experts." in n.pattern and n.template.endswith("*")]
    assert experts and all(n.annotation["line"].endswith("per decode step (random weights)") for n in experts)


def test_runtime_log_records_each_step(job):
    run_dir, summary = job
    log = load("runtime_log", run_dir)
    L = summary.tokens.sequence
    assert [(e["step"], e["past_len"], e["new_tokens"]) for e in log.events("llm_stack")] == [(0, 0, L)] + [
        (k, L + k - 1, 1) for k in range(1, STEPS + 1)
    ]


def test_every_step_verified_exactly_with_its_kv_bytes(job):
    run_dir, summary = job
    v = load_verification(run_dir / "verification.json")
    assert v.passed and [c.step for c in v.decode_checks()] == list(range(1, STEPS + 1))
    assert all(r.rel_error == 0.0 for c in v.decode_checks() for r in c.rows)
    assert [r.step for r in v.kv_cache] == list(range(STEPS + 1)) and all(r.ok for r in v.kv_cache)
    rows = summary.decode.rows
    L = summary.tokens.sequence
    assert summary.decode.steps == STEPS and [r["step"] for r in rows] == list(range(1, STEPS + 1))
    for k, r in enumerate(rows, start=1):
        assert (r["past_len"], r["new_tokens"], r["flops_context"], r["kv_tokens"]) == (L + k - 1, 1, L + k - 1, L + k)
        assert r["flops_ok"] and r["flops_measured"] == r["flops_analytic"]
        assert r["kv_ok"] and r["kv_bytes_measured"] == r["kv_bytes_analytic"]
    assert summary.decode.raw["kv_cache_after_prefill"]["context_len"] == L


def test_each_step_timed_beside_its_prediction(job):
    run_dir, summary = job
    for r in summary.decode.rows:
        assert r["measured_s"] > 0 and r["repeats"] == 1
        assert r["predicted_s"] > 0 and r["roof"] == "NVIDIA H100 SXM5 80GB" and r["bound"] in ("compute", "memory")
        assert r["efficiency"] == pytest.approx(r["predicted_s"] / r["measured_s"])
        assert set(r["parts_s"]) >= {"decoder", "lm_head"} and "sam" not in r["parts_s"]  # no vision in decode
    assert summary.decode.raw["timed"] and "median" in summary.decode.raw["time_method"]


def test_routing_json_and_summary(job):
    run_dir, summary = job
    record = load_routing(run_dir / "routing.json")
    assert record.steps == list(range(STEPS + 1)) and record.layers == [1, 2]
    assert record.random_weights is True
    per_step = summary.routing.raw["decode"]["steps"]
    assert [r["distinct_experts"] for r in per_step] == [{"1": 2, "2": 2}] * STEPS  # one token, top-2
    assert summary.routing.random_weights is True and "not the trained model's" in summary.routing.note
    pre = summary.routing.raw["prefill"]
    assert (
        pre["tokens"] == summary.tokens.sequence
        and pre["expert_bytes_read_total"] <= pre["expert_bytes_analytic_total"]
    )


def test_summary_round_trips_and_every_file_is_registered(job):
    run_dir, summary = job
    on_disk = load_summary(run_dir / "summary.json")
    assert on_disk.to_data() == summary.to_data()
    assert on_disk.status == "ok" and on_disk.stage == "done"
    written = {p.name for p in run_dir.iterdir() if p.is_file()}
    assert written <= {f.file for f in RUN_FILES}, written - {f.file for f in RUN_FILES}
    loaded = set()
    for entry in RUN_FILES:
        if entry.is_artifact and entry.file in written:
            assert load(entry.role, run_dir) is not None, entry.role
            loaded.add(entry.role)
    assert {"callgraph", "grouped", "costs", "verification", "routing"} <= loaded, loaded


@pytest.mark.parametrize(
    "value, message",
    [
        ("-1", "error: trace.decode_steps=-1 is invalid: must be >= 0"),
        (
            "100000",
            "error: trace.decode_steps=100000 is invalid: must be at most 8114: the model has 8192 positions "
            "(max_position_embeddings) and the prompt takes 78",
        ),
    ],
)
def test_bad_decode_steps_is_one_line_and_nothing_is_written(tmp_path, value, message):
    proc = run_job_in_process("trace", f"hydra.run.dir={tmp_path}", "workload=tiny", f"trace.decode_steps={value}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert errors == [message] and "Traceback" not in proc.stderr
    assert not (tmp_path / "summary.json").exists()


def test_a_job_killed_during_decode_leaves_a_summary_that_says_so(tmp_path):
    # a subprocess: the test kills the job's process mid-decode
    proc = subprocess.Popen(
        trace_cmd(tmp_path, "workload=tiny", "trace.decode_steps=3", "profile=off"),
        cwd=REPO_ROOT,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )
    seen = []
    try:
        deadline = time.monotonic() + 300
        for line in proc.stderr:
            seen.append(line)
            if "capture: decode step 1/3" in line or time.monotonic() > deadline:
                break
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert any("capture: decode step 1/3" in line for line in seen), "".join(seen)[-2000:]
    summary = load_summary(tmp_path / "summary.json")
    assert summary.status == "running"  # it never finished
    assert summary.stage.startswith("capture: prefill + 3 decode step(s) (")  # 0/3 or 1/3 done when killed

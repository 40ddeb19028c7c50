"""The vendor code at full size (needs DSOCR_MODEL_PATH; about 7 GB in bf16, a few minutes on 2 cores): the
trace job with 2 decode steps, as with the twin. The test takes the machine's big-run lock itself
(/tmp/llm-perf-opt-big.lock), so it never runs beside another full-size model."""

from __future__ import annotations

import json

import pytest
from shared_runs import assert_kernel_counts_exact_given_routing, trace_under_big_lock

from llm_perf_opt.callgraph.grouped import load_grouped_json
from llm_perf_opt.callgraph.schema import load_callgraph_json
from llm_perf_opt.measure import load_verification
from llm_perf_opt.model_runtime.routing import load_routing

pytestmark = [pytest.mark.vendor, pytest.mark.slow]
STEPS = 2


@pytest.fixture(scope="module")
def vendor_job(vendor_dir, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("vendor_decode")
    summary = trace_under_big_lock(
        run_dir,
        "model=vendor",
        f"model.path={vendor_dir}",
        "runtime=cpu_bf16",
        "workload=tiny",
        f"trace.decode_steps={STEPS}",
        "profile.warmup=0",
        "profile.repeats=1",
    )
    return run_dir, summary


def test_vendor_decode_capture_checks_and_verification(vendor_job):
    run_dir, summary = vendor_job
    cg = load_callgraph_json(run_dir / "callgraph.json")
    for i in range(12):
        assert cg.call_counts[f"model.layers.{i}"] == 1 + STEPS
    assert cg.call_counts["model.sam_model"] == 1 and cg.call_counts[""] == 1
    grouped = load_grouped_json(run_dir / "callgraph.grouped.json")
    statuses = {c["name"]: c["status"] for c in grouped.checks}
    assert set(statuses.values()) == {"ok"} and {"decode_loop", "moe_routing", "decoder_layer_calls"} <= set(statuses)
    v = load_verification(run_dir / "verification.json")
    assert v.passed and [c.step for c in v.decode_checks()] == [1, 2]
    assert all(r.rel_error == 0.0 for c in v.decode_checks() for r in c.rows)
    assert [r.step for r in v.kv_cache] == [0, 1, 2] and all(r.ok for r in v.kv_cache)
    L = summary.tokens.sequence
    # bf16 keys and values of 12 layers x 10 heads x 128: 61,440 bytes per cached token
    assert [r.measured for r in v.kv_cache] == [(L + k) * 2 * 12 * 10 * 128 * 2 for k in range(STEPS + 1)]
    assert [r["flops_ok"] and r["kv_ok"] for r in summary.decode.rows] == [True] * STEPS


def test_vendor_routing(vendor_job):
    run_dir, summary = vendor_job
    record = load_routing(run_dir / "routing.json")
    assert record.layers == list(range(1, 12)) and record.steps == [0, 1, 2]
    assert (record.n_experts, record.top_k) == (64, 6) and record.random_weights is True
    decode = summary.routing.raw["decode"]["steps"]
    assert all(set(r["distinct_experts"].values()) == {6} for r in decode)  # one token: its 6 experts
    assert summary.routing.raw["prefill"]["tokens"] == summary.tokens.sequence


def test_vendor_kernel_counts_match_torchlens_per_part_and_step(vendor_job):
    """Issue 22: the analytic kernel list = the ops TorchLens records, per part of the vision and prefill stages and
    per decode step, on the vendor code (as on the tiny twin: tests of measure.kernel_counts). The cost formulas run
    min(E, T·top_k) = 64 routed experts per MoE layer in the prefill (uniform routing of the prompt's tokens); the
    vendor's random-weight gate sends them to fewer and its loop launches only those, 5 kernels each (gate, up,
    act, mul, down). The job counts the routed experts the gates chose (routing.json): every row is equal, and
    each prefill row holding MoE layers says it took off 5 kernels per expert of those layers that got no token,
    derived here from routing.json; decode rows (one token, 6 experts) take off nothing."""
    run_dir, _ = vendor_job
    doc = json.loads((run_dir / "verification.json").read_text())
    rows = doc["data"]["kernel_counts"]["rows"]
    assert sorted({r["step"] for r in rows if r["stage"] == "decode"}) == list(range(1, STEPS + 1))
    assert {r["stage"] for r in rows} == {"vision", "prefill", "decode"}
    # per part: SAM, CLIP, projector, decoder layers and lm_head in every stage that runs them
    for part in ("model.sam_model", "model.vision_model", "model.projector", "model.layers.0", "lm_head"):
        assert any(r["part"] == part for r in rows), part
    assert assert_kernel_counts_exact_given_routing(run_dir, range(1, 12), STEPS) == len(rows)

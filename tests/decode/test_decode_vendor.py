"""The vendor code at full size (needs DSOCR_MODEL_PATH; about 7 GB in bf16, a few minutes on 2 cores): the
trace job with 2 decode steps, as with the twin. The test takes the machine's big-run lock itself
(/tmp/llm-perf-opt-big.lock), so it never runs beside another full-size model."""
from __future__ import annotations

import fcntl
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from llm_perf_opt.callgraph.grouped import load_grouped_json
from llm_perf_opt.callgraph.schema import load_callgraph_json
from llm_perf_opt.dsocr.routing import load_routing
from llm_perf_opt.measure import load_verification
from llm_perf_opt.runs.entry import CONF_DIR

pytestmark = [pytest.mark.vendor, pytest.mark.slow]
BIG_LOCK = Path("/tmp/llm-perf-opt-big.lock")
STEPS = 2


@pytest.fixture(scope="module")
def vendor_job(vendor_dir, tmp_path_factory):
    from llm_perf_opt.trace.job import run_trace

    run_dir = tmp_path_factory.mktemp("vendor_decode")
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        raw = compose(config_name="config", overrides=[
            "model=vendor", f"model.path={vendor_dir}", "runtime=cpu_bf16", "workload=tiny",
            f"trace.decode_steps={STEPS}", "profile.warmup=0", "profile.repeats=1"])
    with open(BIG_LOCK, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            summary = run_trace(raw, run_dir)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
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


def _moe_layer(part: str) -> int | None:
    """The decoder layer of a per-layer row (`decoder.layer.i`, `model.layers.i[.mlp[.experts]]`), else None."""
    for prefix in ("decoder.layer.", "model.layers."):
        if part.startswith(prefix):
            rest = part[len(prefix):].split(".")
            if len(rest) == 1 or rest[1:] in (["mlp"], ["mlp", "experts"]):
                return int(rest[0])
    return None


def test_vendor_kernel_counts_match_torchlens_per_part_and_step(vendor_job):
    """Issue 22: the analytic kernel list = the ops TorchLens records, per part of the vision and prefill stages and
    per decode step, on the vendor code (as on the tiny twin: tests of measure.kernel_counts). The cost formulas run
    min(E, T·top_k) = 64 routed experts per MoE layer in the prefill (uniform routing of the prompt's tokens); the
    vendor's random-weight gate sends them to fewer and its loop launches only those, 5 kernels each (gate, up,
    act, mul, down). The job counts the routed experts the gates chose (routing.json): every row is equal, and
    each prefill row holding MoE layers says it took off 5 kernels per expert of those layers that got no token,
    derived here from routing.json; decode rows (one token, 6 experts) take off nothing."""
    import json

    run_dir, _ = vendor_job
    doc = json.loads((run_dir / "verification.json").read_text())
    kc = doc["data"]["kernel_counts"]
    rows = kc["rows"]
    steps = sorted({r["step"] for r in rows if r["stage"] == "decode"})
    assert steps == list(range(1, STEPS + 1))
    assert {r["stage"] for r in rows} == {"vision", "prefill", "decode"}
    # per part: SAM, CLIP, projector, decoder layers and lm_head in every stage that runs them
    for part in ("model.sam_model", "model.vision_model", "model.projector", "model.layers.0", "lm_head"):
        assert any(r["part"] == part for r in rows), part
    calls = load_routing(run_dir / "routing.json").calls
    hit = {(c.layer, c.step): len(c.experts) for c in calls}
    assert len(hit) == 11 * (1 + STEPS) and all(hit[(layer, k)] == 6 for layer in range(1, 12) for k in (1, 2))
    missing = {layer: 5 * (64 - hit[(layer, 0)]) for layer in range(1, 12)}
    assert len(rows) == kc["n_rows"] >= 3 * (STEPS + 2)
    checked = 0
    for r in rows:
        expected = 0
        if r["stage"] == "prefill":
            layer = _moe_layer(r["part"])
            if r["part"] in ("", "model", "decoder", "model.layers"):
                expected = sum(missing.values())
            elif layer is not None and layer != 0:
                expected = missing.get(layer, 0)
        # the analytic list given the run's routing equals TorchLens's; what it took off is the derivation above
        assert r["ok"] and r["analytic"] == r["measured"] and r.get("unrouted", 0) == expected, r
        checked += 1
    assert checked == len(rows)

"""The vendor code at batch 2, full size (needs DSOCR_MODEL_PATH; about 7 GB in bf16, a few minutes on 2 cores):
the trace job with `workload.batch=2` and 2 decode steps verifies FLOPs per stage, part and step, the KV cache
per step and the activation bytes exactly, as on the tiny twin (tests/dsocr/test_batch.py). The test takes the
machine's big-run lock itself (/tmp/llm-perf-opt-big.lock)."""

from __future__ import annotations

import pytest
from shared_runs import trace_under_big_lock

from llm_perf_opt.measure import load_verification

pytestmark = [pytest.mark.vendor, pytest.mark.slow]
STEPS, BATCH = 2, 2


@pytest.fixture(scope="module")
def vendor_batch_job(vendor_dir, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("vendor_batch")
    summary = trace_under_big_lock(
        run_dir,
        "model=vendor",
        f"model.path={vendor_dir}",
        "runtime=cpu_bf16",
        "workload=tiny",
        f"workload.batch={BATCH}",
        f"trace.decode_steps={STEPS}",
        "profile=off",
        "~hardware",
    )
    return run_dir, summary


def test_vendor_batch_flops_kv_and_activations_exact(vendor_batch_job):
    run_dir, summary = vendor_batch_job
    assert summary.status == "ok" and summary.tokens.batch == BATCH
    L = summary.tokens.sequence
    assert summary.tokens.lengths == [L] * BATCH  # two copies of one page: no padding
    v = load_verification(run_dir / "verification.json")
    assert v.passed
    rows = [r for c in v.decode_checks() for r in c.rows]
    assert [c.step for c in v.decode_checks()] == [1, 2] and rows and all(r.rel_error == 0.0 for r in rows)
    # bf16 keys and values of 12 layers x 10 heads x 128 per cached token, for each of the 2 sequences
    assert [r.measured for r in v.kv_cache] == [BATCH * (L + k) * 2 * 12 * 10 * 128 * 2 for k in range(STEPS + 1)]
    assert all(r.ok for r in v.kv_cache)
    # activation bytes per part (analytic against what TorchLens observed), every part compared
    assert len(v.activation) >= 5 and all(a.ok for a in v.activation), [(a.part, a.rel_error) for a in v.activation]

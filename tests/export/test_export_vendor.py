"""The export stage on the vendor code at full size (needs DSOCR_MODEL_PATH; builds the 3.3B-parameter
model, about 7 GB in bf16: run it under the big-run lock,
`DSOCR_MODEL_PATH=... flock /tmp/llm-perf-opt-big.lock ./dev test tests/export -m vendor`)."""

from __future__ import annotations

import pytest
from export_helpers import job_inputs, open_session, typed_cfg

from llm_perf_opt.export import load_export_summary, run_export_stage

pytestmark = [pytest.mark.vendor, pytest.mark.slow]


def test_vendor_submodules_export_and_agree_with_the_analytic_model(vendor_dir, tmp_path):
    cfg = typed_cfg("model=vendor", f"model.path={vendor_dir}", "workload=small", "runtime=cpu_bf16")
    inputs = job_inputs(cfg)
    with open_session(cfg) as session:
        assert session.source == "vendor"
        run_export_stage(cfg, session, inputs, tmp_path)
    summary = load_export_summary(tmp_path / "export" / "summary.json")
    assert [s.name for s in summary.submodules] == [
        "sam.global",
        "clip.global",
        "projector.global",
        "dense_layer",
        "moe_layer",
        "decode_layer",
    ]
    assert len(summary.notes) == 3  # the crop batch: none in a no-crop mode
    moe = summary.by_name("moe_layer")
    assert moe.status == "exported_with_remedy"
    assert "modeling_deepseekv2.py" in moe.reason and "moe_infer" in moe.reason
    for s in summary.submodules:
        assert s.exported, (s.name, s.reason)
        f = s.flops
        assert f["exported"] == f["eager"] == f["analytic"] > 0, (s.name, f["explanation"])
        assert s.output_check["ok"], (s.name, s.output_check)
        assert s.op_counts["reconciled"], (s.name, s.op_counts.get("notes"), s.op_counts.get("error"))

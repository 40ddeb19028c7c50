"""export.onnx=true: ONNX files of a CLIP block and the dense decoder layer that pass onnx.checker and
whose ONNX Runtime (CPU) output matches the eager module, checked by the stage and again here."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import torch
from export_helpers import job_inputs, open_session, typed_cfg

from llm_perf_opt.dsocr.parts import VOCABULARY
from llm_perf_opt.export import load_export_summary, run_export_stage
from llm_perf_opt.export.hooks import record_calls
from llm_perf_opt.export.modules import call_for, flat_tensors
from llm_perf_opt.export.targets import onnx_targets

pytestmark = pytest.mark.slow
RTOL, ATOL = 1e-4, 1e-4  # |ort - eager| <= ATOL + RTOL * |eager|, float32


def test_onnx_files_pass_the_checker_and_match_eager(tmp_path):
    cfg = typed_cfg(
        "model=twin_tiny",
        "workload=small",
        "export.submodules=[dense_layer]",
        "export.onnx=true",
        "export.callgraph=false",
        f"export.onnx_rtol={RTOL}",
        f"export.onnx_atol={ATOL}",
    )
    inputs = job_inputs(cfg)
    with open_session(cfg) as session:
        result = run_export_stage(cfg, session, inputs, tmp_path)
        assert result["onnx"] == {"clip.block": True, "dense_layer": True}
        summary = load_export_summary(tmp_path / "export" / "summary.json")
        by_name = {r["name"]: r for r in summary.onnx}
        for name in ("clip.block", "dense_layer"):
            rec = by_name[name]
            assert (
                rec["checker"] == "passed" and rec["ok"] and rec["max_abs_diff"] <= ATOL + RTOL * rec["max_abs_eager"]
            )
        # independently of the stage: load each file, check it, run it, compare with the eager module
        targets = onnx_targets(inputs.layout, inputs.seq_len, VOCABULARY)
        recorded = record_calls(session, inputs, targets)
        for target in targets:
            path = tmp_path / "export" / f"{target.name}.onnx"
            model = onnx.load(str(path))
            onnx.checker.check_model(model, full_check=True)
            call = call_for(session.model, recorded[target.name])
            sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
            tensors = {k: v for k, v in call.kwargs.items() if isinstance(v, torch.Tensor)}
            positional = iter(a for a in call.args if isinstance(a, torch.Tensor))
            feeds = {
                i.name: (tensors[i.name] if i.name in tensors else next(positional)).numpy() for i in sess.get_inputs()
            }
            got = sess.run(None, feeds)
            with torch.no_grad():
                want = [t.numpy() for t in flat_tensors(call.run())]
            assert len(got) == len(want)
            for g, w in zip(got, want):
                assert g.shape == w.shape
                np.testing.assert_allclose(g, w, rtol=RTOL, atol=ATOL)
    block = by_name["clip.block"]["onnx_inputs"][0]["shape"]
    assert block == [1, inputs.layout.global_grid**2 + 1, session.spec.clip.width]

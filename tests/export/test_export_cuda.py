"""The export stage on a CUDA device (tiny twin, bf16 autocast as the vendor runs, SDPA attention: the
export never takes flash-attn). Skipped without a GPU."""

from __future__ import annotations

import pytest
import torch
from export_helpers import GUNDAM_SMALL_PAGE, job_inputs, open_session, typed_cfg

from llm_perf_opt.export import load_export_summary, run_export_stage

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.slow,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]


def test_export_on_cuda_agrees_with_the_analytic_model(tmp_path):
    cfg = typed_cfg("model=twin_tiny", "runtime=cuda", "runtime.attn_implementation=sdpa", *GUNDAM_SMALL_PAGE)
    with open_session(cfg) as session:
        assert session.device.type == "cuda"
        run_export_stage(cfg, session, job_inputs(cfg), tmp_path)
    summary = load_export_summary(tmp_path / "export" / "summary.json")
    assert summary.runtime["device"].startswith("cuda")
    for s in summary.submodules:
        assert s.exported, (s.name, s.reason)
        assert s.flops["exported"] == s.flops["eager"] == s.flops["analytic"], (s.name, s.flops["explanation"])
        assert s.output_check["ok"], (s.name, s.output_check)

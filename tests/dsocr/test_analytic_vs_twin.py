"""The whole analytic model against the measured forward of `twin_tiny`, for every workload preset and page.

Every stage (vision, prefill, decode) and every part the analytic model names must be within 0.1% of
torch's FlopCounterMode (in practice they are equal). FLOPs are a function of the input tensor shapes
only (MoE routing moves tokens between experts, never their number), so a measured forward is reused
for pages whose `build_inputs` tensors have identical shapes — in the no-crop modes every page gives the
same shapes; the shapes are compared for real, never assumed.
"""

from __future__ import annotations

import pytest
import torch

from llm_perf_opt.dsocr import parts
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin
from llm_perf_opt.measure import check_model_agreement, render_table
from llm_perf_opt.model_runtime.measure import measure_forward

pytestmark = pytest.mark.slow

PRESETS = parts.modes()  # every workload preset of conf/workload/
PAGES = [(1700, 2200), (2200, 1700), (1000, 1000), (3000, 1000), (600, 500)]
SPEC = ModelSpec.tiny()


@pytest.fixture(scope="module")
def twin():
    torch.manual_seed(0)
    return build_twin(SPEC, dtype=torch.float32, seed=0)


_MEASURED: dict[tuple, object] = {}


def _shape_key(inputs) -> tuple:
    crops, global_view = inputs.images[0]
    return (
        tuple(inputs.input_ids.shape),
        tuple(crops.shape),
        bool(crops.abs().sum() > 0),
        tuple(global_view.shape),
        tuple(inputs.images_spatial_crop.flatten().tolist()),
    )


def _measured(twin, inputs, decode_steps=()):
    key = _shape_key(inputs) + (tuple(decode_steps),)
    if key not in _MEASURED:
        _MEASURED[key] = measure_forward(twin, inputs.forward_kwargs(dtype=torch.float32), decode_steps)
    return _MEASURED[key]


@pytest.mark.parametrize("page", PAGES, ids=[f"{w}x{h}" for w, h in PAGES])
@pytest.mark.parametrize("preset", list(PRESETS))
def test_prefill_and_vision_match_measured(twin, preset, page):
    workload = PRESETS[preset]
    inputs = build_inputs(SPEC, workload, *page)
    measured = _measured(twin, inputs)
    analytic = DeepseekOCRAnalyticModel(SPEC, inputs.layout, inputs.seq_len, dtype="float32")
    v = check_model_agreement(analytic, measured.prefill, rtol=1e-3)
    assert v.passed, render_table(v, parts="all", max_rows=400)
    # the comparison is not vacuous: every stage has FLOPs, SAM ran on every view
    vision, prefill = v.checks[0].total_row, v.checks[1].total_row
    assert vision.measured > 0 and prefill.measured > vision.measured
    assert len(v.rows) > 100
    assert not measured.prefill.matmul_like_without_formula


@pytest.mark.parametrize("preset,page", [("tiny", (1700, 2200)), ("gundam", (1000, 1000))])
def test_decode_steps_match_measured(twin, preset, page):
    inputs = build_inputs(SPEC, PRESETS[preset], *page)
    measured = _measured(twin, inputs, decode_steps=(1, 5))
    contexts = sorted(measured.decode)
    assert contexts == [inputs.seq_len, inputs.seq_len + 4]
    analytic = DeepseekOCRAnalyticModel(SPEC, inputs.layout, inputs.seq_len, dtype="float32")
    v = check_model_agreement(analytic, measured.prefill, measured.decode, rtol=1e-3)
    assert v.passed, render_table(v, parts="all", max_rows=400)
    d0, d1 = (measured.decode[c].total for c in contexts)
    d = SPEC.decoder
    # four more cached keys: Q·Kᵀ and P·V grow by 4 keys in every layer
    assert d1 - d0 == d.num_layers * 4 * 2 * 2 * d.num_heads * d.head_dim
    assert "model.sam_model" not in measured.decode[contexts[0]].by_module  # vision skipped in decode

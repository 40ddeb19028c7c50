"""The DeepSeek-OCR analytic model where the forward runs (`execution=`): FLOPs never change; the CPU is the model as
it always was; CUDA adds what autocast and SDPA do there (the recorded runs check the numbers: tests/measure/
test_replay_counts.py). On the CPU, SDPA's result keeps the (B, T, H, d) order of RoPE's query, so the attention's
`out.transpose(1, 2).contiguous()` copies nothing: the trace job's kernel counts and activation bytes agree with
TorchLens for `runtime.attn_implementation=sdpa` too."""

from __future__ import annotations

import json

import pytest

from llm_perf_opt.analytic.execution import CPU, Execution
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec

GUNDAM = VisionWorkload(1024, 640, True)
H200 = Execution("cuda", True, (9, 0))


def _model(spec, execution=None, **kw):
    layout = compute_view_layout(GUNDAM, 1700, 2200)
    extra = {} if execution is None else {"execution": execution}
    return DeepseekOCRAnalyticModel(spec, layout, dtype="bfloat16", decoder_attention="sdpa", **extra, **kw)


@pytest.mark.parametrize("spec", [ModelSpec.tiny(), ModelSpec.deepseek_ocr()], ids=["tiny", "full"])
def test_flops_do_not_depend_on_the_execution(spec):
    default, cpu, cuda = _model(spec), _model(spec, CPU), _model(spec, H200)
    compared = 0
    for name in ("vision", "prefill", "decode"):
        d, c, g = default.stage(name), cpu.stage(name), cuda.stage(name)
        assert d.to_dict() == c.to_dict() and d.total.kernels == c.total.kernels  # CPU: the formulas as they were
        for path in d.parts:
            assert (
                g.parts[path].flops == d.parts[path].flops and g.parts[path].flops_matmul == d.parts[path].flops_matmul
            )
            compared += 1
    assert compared > 100
    assert "execution" not in cpu.to_dict(with_parts=False)
    assert cuda.to_dict(with_parts=False)["execution"]["label"] == "cuda, compute capability 9.0, CUDA autocast"
    # a float32 model under CUDA autocast is costed without it (its weights' casts are not modelled)
    f32 = DeepseekOCRAnalyticModel(spec, compute_view_layout(GUNDAM, 1700, 2200), dtype="float32", execution=H200)
    assert not f32.execution.cuda_autocast and f32.with_dtype("bfloat16").execution == H200


def test_cuda_adds_the_copies_sdpa_and_autocast_make():
    spec = ModelSpec.tiny()
    cpu, cuda = _model(spec).prefill(), _model(spec, H200).prefill()
    attn = "model.layers.0.self_attn"
    # q, k, v made contiguous before SDPA with a mask; cuDNN's result after a contiguous q copies on the transpose
    assert cuda.parts[attn].op_kernel_count == cpu.parts[attn].op_kernel_count + 4
    assert cuda.parts[attn].kernels.by_kind()["memset"] == 1  # cuDNN's, inside the SDPA call
    # the MoE's tokens_per_expert.cpu(): a device-to-host copy on CUDA
    assert cuda.parts["model.layers.1.mlp"].op_kernel_count == cpu.parts["model.layers.1.mlp"].op_kernel_count + 1
    # vision: the same ops (autocast's casts are inside them), more bytes (float32 norms and CLIP's stream)
    for part in ("model.sam_model", "model.vision_model"):
        assert cuda.parts[part].op_kernel_count == cpu.parts[part].op_kernel_count
        assert cuda.parts[part].kernels.by_kind()["cast"] > 0
        assert cuda.parts[part].activation_bytes > cpu.parts[part].activation_bytes


@pytest.mark.slow
def test_trace_job_with_sdpa_on_the_cpu_agrees_with_torchlens(tmp_path):
    from hydra import compose, initialize_config_dir

    from llm_perf_opt.runs.entry import CONF_DIR
    from llm_perf_opt.trace.job import run_trace

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        raw = compose(
            config_name="config",
            overrides=[
                "workload=tiny",
                "runtime.attn_implementation=sdpa",
                "trace.decode_steps=1",
                "profile=off",
                "~hardware",
            ],
        )
    assert run_trace(raw, tmp_path).status == "ok"
    data = json.loads((tmp_path / "verification.json").read_text())["data"]
    kc, act = data["kernel_counts"], data["activation_bytes"]
    assert kc["passed"] and kc["n_failures"] == 0 and len(kc["rows"]) == kc["n_rows"] > 100
    assert act["passed"] and len(act["rows"]) == 10
    attn = [r for r in kc["rows"] if r["part"].startswith("model.layers.") and r["part"].endswith(".self_attn")]
    attn = [r for r in attn if r["stage"] == "prefill"]
    assert len(attn) == 3 and all(r["analytic"] == r["measured"] for r in attn)

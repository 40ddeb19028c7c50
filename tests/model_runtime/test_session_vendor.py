"""The vendor code at full size on CPU (needs DSOCR_MODEL_PATH; slow: about a minute per test, bf16 ~7 GB,
float32 ~14 GB). Run with `DSOCR_MODEL_PATH=models/deepseek-ocr pytest -m vendor -s` to see the timings."""

from __future__ import annotations

import gc
import resource
import time

import pytest
import torch

from llm_perf_opt.config.schemas import ModelConfig, RuntimeConfig
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.patches import DEFAULT_TRACE_PATCHES, check_patches, quick_gelu_eager, runtime_patches
from llm_perf_opt.dsocr.session import DeepSeekOCRSession

pytestmark = pytest.mark.vendor

FULL_SIZE_PARAMETERS = 3_336_106_240  # measured on the vendor code (random weights, no checkpoint)


def peak_rss_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2  # Linux: KiB


@pytest.mark.slow
@pytest.mark.parametrize("dtype,autocast", [("bfloat16", True), ("float32", False)], ids=["bf16-autocast", "fp32"])
def test_vendor_session_tiny_mode_forward(vendor_dir, dtype, autocast, process_state):
    before = process_state()
    t0 = time.perf_counter()
    session = DeepSeekOCRSession.open(
        ModelConfig(name="vendor", source="vendor", path=str(vendor_dir)),
        RuntimeConfig(device="cpu", dtype=dtype, attn_implementation="eager", autocast=autocast),
    )
    t_open = time.perf_counter() - t0
    try:
        assert session.source == "vendor"
        assert session.dtype == getattr(torch, dtype) and session.autocast is autocast
        assert {"modeling_deepseekocr", "modeling_deepseekv2", "deepencoder"} <= set(session.vendor_modules)
        assert type(session.model).__name__ == "DeepseekOCRForCausalLM"
        assert type(session.model).__module__ == session.vendor_modules["modeling_deepseekocr"].__name__
        assert session.model.model.layers[0].self_attn.__class__.__name__ == "LlamaAttention"
        if not list(vendor_dir.glob("*.safetensors")):
            assert session.weights == "random"
        counts = session.parameter_counts()
        assert counts["total"] == FULL_SIZE_PARAMETERS
        assert "other" not in counts
        assert all(p.device.type == "cpu" and p.dtype == session.dtype for p in session.model.parameters())
        # while the session is open but no forward runs, nothing is patched
        assert process_state() == before

        assert check_patches(session, DEFAULT_TRACE_PATCHES) == {
            "quick_gelu": "deepencoder.quick_gelu",
            "vision_inputs": "modeling_deepseekocr.DeepseekOCRModel.forward",
            "llm_stack": "modeling_deepseekv2.DeepseekV2Model.forward",
        }
        x = torch.randn(3, 257, 64, generator=torch.Generator().manual_seed(1))
        assert torch.equal(session.vendor_modules["deepencoder"].quick_gelu(x), quick_gelu_eager(x))

        inputs = build_inputs(session.spec, VisionWorkload(512, 512, False), model_dir=vendor_dir)  # Tiny
        t1 = time.perf_counter()
        with runtime_patches(session, DEFAULT_TRACE_PATCHES) as log:
            result = session.greedy_decode(inputs, 2)  # the prefill forward, then 2 one-token decode steps
        t_forward = time.perf_counter() - t1
        logits = result.prefill.logits
        assert logits.shape == (1, inputs.seq_len, session.spec.decoder.vocab_size)
        assert logits.dtype == torch.float32  # the vendor casts the logits
        assert torch.isfinite(logits).all()
        assert result.last.logits.shape == (1, 1, session.spec.decoder.vocab_size)
        assert torch.isfinite(result.last.logits).all()
        assert len(result.tokens) == 3
        vision = log.first("vision_inputs")
        assert (vision["views"], vision["vision_passes"], vision["crops_per_image"]) == (1, 1, [0])
        assert [v["vision"] for v in log.events("vision_inputs")] == [True, False, False]
        L = inputs.seq_len
        assert [(e["num_layers"], e["seq_len"], e["past_len"], e["step"]) for e in log.events("llm_stack")] == [
            (12, L, 0, 0),
            (12, 1, L, 1),
            (12, 1, L + 1, 2),
        ]
        assert [e["context_len"] for e in log.events("decode_step")] == [L + 1, L + 2]
        assert process_state() == before
        assert "print" not in vars(session.vendor_modules["modeling_deepseekocr"])  # quiet_prints undone
        assert vars(session.vendor_modules["deepencoder"])["quick_gelu"] is not quick_gelu_eager
    finally:
        session.release()
        del session
        gc.collect()
    assert process_state() == before
    print(
        f"\nvendor {dtype} autocast={autocast}: open {t_open:.1f} s, "
        f"Tiny-mode prefill ({inputs.seq_len} tokens) + 2 decode steps "
        f"{t_forward:.1f} s, peak RSS {peak_rss_gb():.2f} GiB"
    )

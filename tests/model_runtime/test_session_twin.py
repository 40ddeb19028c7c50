"""The session stage on the tiny twin: open, forward, decode, parameter counts, and a clean close."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from llm_perf_opt.config.schemas import ModelConfig, RuntimeConfig
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.session import DeepSeekOCRSession
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError, PipelineError
from llm_perf_opt.model_runtime import attention
from llm_perf_opt.model_runtime.attention import resolve_attn_implementation
from llm_perf_opt.model_runtime.process_state import ProcessStateGuard

TINY = ModelConfig(name="twin_tiny", source="twin", spec="tiny")
CPU = RuntimeConfig(device="cpu", dtype="float32", attn_implementation="sdpa")


@pytest.fixture(scope="module")
def session():
    with DeepSeekOCRSession.open(TINY, CPU) as s:
        yield s


@pytest.fixture(scope="module")
def small_inputs():
    return build_inputs(ModelSpec.tiny(), VisionWorkload(512, 512, False))


def test_open_gives_one_object(session):
    assert session.source == "twin"
    assert session.spec == ModelSpec.tiny()
    assert session.device == torch.device("cpu")
    assert session.dtype == torch.float32
    assert session.attn_implementation == "sdpa"
    assert session.autocast is False
    assert session.vendor_modules == {}
    assert session.weights == "random"
    assert type(session.model).__name__ == "DeepseekOCRForCausalLM"
    assert session.required_patches == ()
    assert not session.closed


def test_forward_crop_mode(session):
    spec = session.spec
    inputs = build_inputs(spec, VisionWorkload(1024, 640, True))  # 1700x2200 page: 2x3 grid
    out = session.forward(inputs)
    assert out.logits.shape == (1, inputs.seq_len, spec.decoder.vocab_size)
    assert out.logits.dtype == torch.float32
    assert torch.isfinite(out.logits).all()
    assert not out.logits.requires_grad  # the session runs under no_grad


def test_forward_accepts_ready_kwargs(session, small_inputs):
    kwargs = session.forward_kwargs(small_inputs, use_cache=True)
    assert kwargs["use_cache"] is True and kwargs["images"][0][1].dtype == torch.float32
    out = session.forward(kwargs)
    assert out.logits.shape[1] == small_inputs.seq_len and out.past_key_values is not None


def test_greedy_decode(session, small_inputs):
    result = session.greedy_decode(small_inputs, 2)
    assert len(result.tokens) == 3
    assert result.prefill.logits.shape[1] == small_inputs.seq_len
    assert result.last.logits.shape[1] == 1
    assert all(0 <= t < session.spec.decoder.vocab_size for t in result.tokens)


def test_parameter_counts(session):
    counts = session.parameter_counts()
    assert counts["total"] == sum(p.numel() for p in session.model.parameters())
    parts = [
        "embed_tokens",
        "sam_model",
        "vision_model",
        "projector",
        "layers",
        "norm",
        "lm_head",
        "image_newline+view_seperator",
    ]  # dsocr.parts, in forward order, then the separators (`DeepSeekSession.separators`)
    assert list(counts)[: len(parts)] == parts
    assert sum(counts[p] for p in parts) == counts["total"]
    d = session.spec.decoder
    assert counts["embed_tokens"] == d.vocab_size * d.hidden_size
    assert counts["image_newline+view_seperator"] == 2 * d.hidden_size
    assert session.describe()["parameters"] == counts


def test_describe_is_jsonable(session):
    import json

    info = session.describe()
    json.dumps(info)
    assert info["source"] == "twin" and info["weights"] == "random" and info["dtype"] == "float32"


def test_close_leaves_process_as_found(small_inputs, process_state):
    before = process_state()
    rng_before = torch.random.get_rng_state()
    with DeepSeekOCRSession.open(TINY, RuntimeConfig(device="cpu", threads=1)) as s:
        assert torch.get_num_threads() == 1
        s.forward(small_inputs)
    assert s.closed
    assert process_state() == before
    assert torch.equal(torch.random.get_rng_state(), rng_before)  # seeded build on a forked RNG
    with pytest.raises(PipelineError, match="closed"):
        s.forward(small_inputs)


def test_close_restores_disabled_weight_init():
    """The vendor's infer() calls disable_torch_init(): close() puts the reset_parameters back."""
    original_linear, original_ln = nn.Linear.reset_parameters, nn.LayerNorm.reset_parameters
    s = DeepSeekOCRSession.open(TINY, CPU)
    try:
        setattr(nn.Linear, "reset_parameters", lambda self: None)
        setattr(nn.LayerNorm, "reset_parameters", lambda self: None)
    finally:
        with pytest.warns(RuntimeWarning, match="reset_parameters"):
            restored = s.close()
    assert "torch.nn.Linear.reset_parameters" in restored
    assert nn.Linear.reset_parameters is original_linear
    assert nn.LayerNorm.reset_parameters is original_ln
    assert s.close() == []  # idempotent


def test_same_seed_same_weights():
    a = DeepSeekOCRSession.open(TINY, CPU)
    b = DeepSeekOCRSession.open(TINY, CPU)
    try:
        for (na, pa), (nb, pb) in zip(a.model.named_parameters(), b.model.named_parameters()):
            assert na == nb and torch.equal(pa, pb), na
    finally:
        a.close()
        b.close()


def test_autocast_context(small_inputs):
    seen = {}
    with DeepSeekOCRSession.open(TINY, RuntimeConfig(device="cpu", dtype="bfloat16", autocast=True)) as s:
        assert s.required_patches == ("autocast",)
        hook = s.model.lm_head.register_forward_hook(
            lambda m, i, o: seen.update(autocast=torch.is_autocast_enabled("cpu"), dtype=o.dtype)
        )
        try:
            out = s.forward(small_inputs)
        finally:
            hook.remove()
        assert seen == {"autocast": True, "dtype": torch.bfloat16}
        assert out.logits.dtype == torch.float32  # the model casts the logits
        assert torch.isfinite(out.logits).all()
    assert not torch.is_autocast_enabled("cpu")


def test_cuda_without_gpu_is_a_config_error(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ConfigError, match="runtime.device"):
        DeepSeekOCRSession.open(TINY, RuntimeConfig(device="cuda"))


def test_flash_attention_falls_back_to_sdpa(monkeypatch):
    monkeypatch.setattr(attention, "flash_attn_importable", lambda: False)
    attn, notes = resolve_attn_implementation("flash_attention_2", torch.device("cuda"))
    assert attn == "sdpa" and "flash_attn" in notes[0] and "sdpa" in notes[0]
    assert resolve_attn_implementation("eager", torch.device("cpu")) == ("eager", [])
    with pytest.raises(ConfigError, match="runtime.attn_implementation='flash_attention_2'.*needs runtime=cuda"):
        resolve_attn_implementation("flash_attention_2", torch.device("cpu"))
    with pytest.raises(ConfigError, match="needs the flash_attn package"):  # a direct build_twin does not fall back
        resolve_attn_implementation("flash_attention_2", torch.device("cuda"), fallback=False)
    with pytest.raises(ConfigError, match="runtime.attn_implementation='xformers'"):
        resolve_attn_implementation("xformers")


def test_process_state_guard_restores_added_attribute():
    own_before = vars(torch.Tensor).get("cuda")  # TorchLens, once used, leaves an inherited copy here
    guard = ProcessStateGuard()
    torch.Tensor.cuda = lambda self, *a, **k: self  # an attribute that did not exist on Tensor itself
    try:
        assert "torch.Tensor.cuda" in guard.changed()
    finally:
        restored = guard.restore()
    assert restored == ["torch.Tensor.cuda"]
    assert vars(torch.Tensor).get("cuda") is own_before


def test_process_state_guard_accepts_the_inherited_object():
    """TorchLens' unwrap leaves Tensor.cuda set to TensorBase.cuda: the same callable, not a change."""
    guard = ProcessStateGuard()
    had = "cuda" in vars(torch.Tensor)
    torch.Tensor.cuda = vars(torch._C.TensorBase)["cuda"]
    try:
        assert guard.changed() == []
        assert guard.restore() == []
    finally:
        if not had:
            del torch.Tensor.cuda

"""The one greedy loop (`model_runtime.decode`): per-step facts, KV-cache bytes the model really holds, limits."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.model_runtime.decode import (
    DecodeProgram,
    cache_len,
    check_decode_steps,
    check_kv_cache_path,
    greedy_decode,
    kv_cache_bytes,
    max_decode_steps,
)


def run(model, kwargs, steps):
    kw = dict(kwargs, use_cache=True)
    with torch.no_grad():
        prefill = model(**kw)
        return greedy_decode(lambda _k, step_kw: model(**step_kw), prefill, steps, kw)


def test_steps_record_past_length_new_tokens_and_the_cache_the_model_holds(tiny):
    spec, model, kwargs = tiny
    seq_len = kwargs["input_ids"].shape[1]
    result = run(model, kwargs, 3)
    assert [s.step for s in result.steps] == [1, 2, 3]
    assert [s.past_len for s in result.steps] == [seq_len, seq_len + 1, seq_len + 2]
    assert [s.new_tokens for s in result.steps] == [1, 1, 1]
    assert [s.context_len for s in result.steps] == [seq_len + 1, seq_len + 2, seq_len + 3]
    assert [s.token for s in result.steps] == result.tokens[:3]
    assert [s.next_token for s in result.steps] == result.tokens[1:]
    # the legacy cache tuple the last step returned: (key, value) per layer, (1, kv_heads, tokens, head_dim)
    past = result.last.past_key_values
    d = spec.decoder
    assert len(past) == d.num_layers and cache_len(past) == seq_len + 3
    assert all(t.shape == (1, d.num_kv_heads, seq_len + 3, d.head_dim) for layer in past for t in layer)
    held = sum(t.numel() * t.element_size() for layer in past for t in layer)
    assert result.steps[-1].kv_cache_bytes == held == 2 * d.num_layers * d.num_kv_heads * (seq_len + 3) * d.head_dim * 4
    assert result.prefill_kv_bytes == held * seq_len // (seq_len + 3)


def test_cache_bytes_agree_with_the_analytic_model(tiny):
    spec, model, kwargs = tiny
    result = run(model, kwargs, 2)
    seq_len = kwargs["input_ids"].shape[1]
    layout = compute_view_layout(VisionWorkload(512, 512, False), 1700, 2200)
    analytic = DeepseekOCRAnalyticModel(spec, layout, seq_len, dtype="float32")
    assert analytic.kv_cache_bytes() == result.prefill_kv_bytes  # the prompt's seq_len tokens
    for s in result.steps:
        assert analytic.kv_cache_bytes(s.context_len) == s.kv_cache_bytes
    per_layer = analytic.kv_cache_bytes(seq_len + 2, per_layer=True)
    assert list(per_layer) == [f"model.layers.{i}" for i in range(spec.decoder.num_layers)]
    assert sum(per_layer.values()) == result.steps[-1].kv_cache_bytes


def test_a_storage_shared_by_views_counts_once():
    base = torch.zeros(2, 4, 8)
    k, v = base[0], base[1]  # two views of one storage
    assert kv_cache_bytes(((k, v),)) == base.numel() * 4
    assert kv_cache_bytes(((torch.zeros(3), torch.zeros(5, dtype=torch.bfloat16)),)) == 3 * 4 + 5 * 2
    assert kv_cache_bytes(None) == 0


def test_zero_steps_is_the_prefill_alone(tiny):
    _, model, kwargs = tiny
    result = run(model, kwargs, 0)
    assert result.steps == [] and len(result.tokens) == 1 and result.last is result.prefill


def test_program_runs_the_prefill_and_the_steps_through_one_forward(tiny):
    _, model, kwargs = tiny
    calls = []

    def forward(**kw):
        calls.append(kw["input_ids"].shape[1])
        return model(**kw)

    program = DecodeProgram(2)
    with torch.no_grad():
        out = program(forward, **dict(kwargs, use_cache=True))
    seq_len = kwargs["input_ids"].shape[1]
    assert calls == [seq_len, 1, 1]
    assert out is program.result.last and [s.past_len for s in program.result.steps] == [seq_len, seq_len + 1]


@pytest.mark.parametrize(
    "steps, message",
    [
        (-1, "trace.decode_steps=-1 is invalid: must be a non-negative integer"),
        (True, "trace.decode_steps=True is invalid: must be a non-negative integer"),
        (8192 - 77, "trace.decode_steps=8115 is invalid: must be at most 8114: the model has 8192 positions"),
    ],
)
def test_bad_step_counts_name_the_field(steps, message):
    with pytest.raises(ConfigError) as err:
        check_decode_steps(steps, 78, 8192)
    assert str(err.value).startswith(message)


def test_the_limit_is_the_model_positions_minus_the_prompt():
    assert max_decode_steps(8192, 78) == 8114 == check_decode_steps(8114, 78, 8192)
    assert max_decode_steps(100, 200) == 0


class NoCache(nn.Module):
    """A causal-LM-like module without a KV-cache path."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(10, 4)

    def forward(self, input_ids):
        return type("Out", (), {"logits": self.emb(input_ids)})()


class CacheArgumentButNoCache(NoCache):
    def forward(self, input_ids, past_key_values=None, use_cache=False):
        return super().forward(input_ids)


def test_a_model_without_a_kv_cache_path_is_refused_naming_the_field():
    model = NoCache()
    check_kv_cache_path(model, 0)  # nothing to decode: fine
    with pytest.raises(
        ConfigError,
        match=r"trace.decode_steps=2 is invalid: needs a KV-cache path, but "
        r"NoCache.forward takes no past_key_values / use_cache argument",
    ):
        check_kv_cache_path(model, 2)
    other = CacheArgumentButNoCache()
    check_kv_cache_path(other, 2)  # its signature looks fine; its output says otherwise
    with torch.no_grad():
        prefill = other(torch.tensor([[1, 2, 3]]))
        with pytest.raises(ConfigError, match="output .* has no past_key_values with use_cache=True"):
            greedy_decode(lambda _k, kw: other(kw["input_ids"]), prefill, 2, {"input_ids": torch.tensor([[1]])})

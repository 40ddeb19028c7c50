"""`twin_tiny` forwards: every workload preset, call pattern of the vision stack and the MoE, KV-cache
decode, bf16 autocast, the sdpa attention, and the patchable `quick_gelu`."""

from __future__ import annotations

import contextlib
from collections import Counter, defaultdict

import pytest
import torch
from twin_testlib import WORKLOADS

from llm_perf_opt.deepseek_ocr_shared.twin.decoder import DeepseekV2MoE
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.twin import build_twin
from llm_perf_opt.dsocr.twin import clip as twin_clip

VISION = ("model.sam_model", "model.vision_model", "model.projector")


@contextlib.contextmanager
def recorded_calls(model):
    """Forward hooks recording vision calls (with input shapes) and, per MoE layer, routing and expert calls."""
    rec = {"vision": defaultdict(list), "gate": {}, "experts": defaultdict(list), "shared": defaultdict(list)}
    handles = []

    def on_vision(name):
        return lambda mod, args, out: rec["vision"][name].append((tuple(args[0].shape), tuple(out.shape)))

    for name in VISION:
        handles.append(model.get_submodule(name).register_forward_hook(on_vision(name)))
    for layer_idx, layer in enumerate(model.model.layers):
        if not isinstance(layer.mlp, DeepseekV2MoE):
            continue
        handles.append(
            layer.mlp.gate.register_forward_hook(
                lambda mod, args, out, i=layer_idx: rec["gate"].setdefault(i, []).append(out[0].clone())
            )
        )
        for e, expert in enumerate(layer.mlp.experts):
            handles.append(
                expert.register_forward_hook(
                    lambda mod, args, out, i=layer_idx, e=e: rec["experts"][i].append((e, args[0].shape[0]))
                )
            )
        handles.append(
            layer.mlp.shared_experts.register_forward_hook(
                lambda mod, args, out, i=layer_idx: rec["shared"][i].append(args[0].shape[:-1].numel())
            )
        )
    try:
        yield rec
    finally:
        for h in handles:
            h.remove()


def assert_moe_calls_only_routed_experts(rec, n_experts: int, n_tokens: int) -> None:
    assert rec["gate"], "no MoE layer ran"
    for layer_idx, gate_outs in rec["gate"].items():
        assert len(gate_outs) == 1
        ids = gate_outs[0]
        assert ids.shape[0] == n_tokens
        load = torch.bincount(ids.flatten(), minlength=n_experts).tolist()
        expected = [(e, n) for e, n in enumerate(load) if n > 0]  # each expert with work, once, in id order
        assert rec["experts"][layer_idx] == expected
        assert rec["shared"][layer_idx] == [n_tokens]


@pytest.mark.parametrize("preset", list(WORKLOADS))
def test_tiny_forward_for_every_workload(twin_tiny, tiny_spec, preset):
    inputs = build_inputs(tiny_spec, WORKLOADS[preset], width=1700, height=2200)
    layout = inputs.layout
    seq_len = inputs.seq_len
    written = []
    original = twin_tiny.model._image_sequence
    twin_tiny.model._image_sequence = lambda *a: written.append(original(*a)) or written[-1]
    try:
        with recorded_calls(twin_tiny) as rec, torch.inference_mode():
            out = twin_tiny(**inputs.forward_kwargs(dtype=torch.float32))
    finally:
        del twin_tiny.model._image_sequence

    assert out.logits.shape == (1, seq_len, tiny_spec.decoder.vocab_size)
    assert out.logits.dtype == torch.float32
    assert torch.isfinite(out.logits).all()
    assert out.past_key_values is None  # forward_kwargs asks for use_cache=False

    passes = 2 if layout.num_crops else 1
    assert layout.vision_passes == passes
    assert {name: len(calls) for name, calls in rec["vision"].items()} == {name: passes for name in VISION}
    sam_in = [shape for shape, _ in rec["vision"]["model.sam_model"]]
    clip_out = [shape for _, shape in rec["vision"]["model.vision_model"]]
    g = layout.global_grid
    if layout.num_crops:
        c = layout.crop_grid
        assert sam_in == [
            (layout.num_crops, 3, layout.crop_side, layout.crop_side),
            (1, 3, layout.global_side, layout.global_side),
        ]
        assert clip_out == [(layout.num_crops, c * c + 1, tiny_spec.clip.width), (1, g * g + 1, tiny_spec.clip.width)]
    else:
        assert sam_in == [(1, 3, layout.global_side, layout.global_side)]
        assert clip_out == [(1, g * g + 1, tiny_spec.clip.width)]
    # exactly as many feature rows as image tokens (masked_scatter_ would silently ignore extra rows)
    assert [w.shape for w in written] == [(layout.image_tokens, tiny_spec.decoder.hidden_size)]
    assert int(inputs.images_seq_mask.sum()) == layout.image_tokens
    assert_moe_calls_only_routed_experts(rec, tiny_spec.decoder.n_routed_experts, seq_len)


def _extended(inputs, token: int, dtype=torch.float32):
    kw = inputs.forward_kwargs(dtype=dtype)
    kw["input_ids"] = torch.cat([kw["input_ids"], torch.tensor([[token]])], dim=1)
    kw["images_seq_mask"] = torch.cat([kw["images_seq_mask"], torch.tensor([[False]])], dim=1)
    return kw


def test_decode_step_with_kv_cache_matches_a_longer_prefill(twin_tiny, tiny_spec):
    inputs = build_inputs(tiny_spec, WORKLOADS["tiny"])
    d = tiny_spec.decoder
    token = 4242
    with torch.inference_mode():
        prefill = twin_tiny(**{**inputs.forward_kwargs(dtype=torch.float32), "use_cache": True})
        cache = prefill.past_key_values
        assert isinstance(cache, tuple) and len(cache) == d.num_layers  # legacy format in, legacy out
        assert cache[0][0].shape == (1, d.num_kv_heads, inputs.seq_len, d.head_dim)
        with recorded_calls(twin_tiny) as rec:
            step = twin_tiny(input_ids=torch.tensor([[token]]), past_key_values=cache, use_cache=True)
        reference = twin_tiny(**_extended(inputs, token))
    assert not rec["vision"]  # one column: the vision branch is skipped
    assert_moe_calls_only_routed_experts(rec, d.n_routed_experts, 1)
    assert step.logits.shape == (1, 1, d.vocab_size)
    assert step.past_key_values[0][0].shape[2] == inputs.seq_len + 1
    torch.testing.assert_close(step.logits[0, -1], reference.logits[0, -1], rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(prefill.logits[0], reference.logits[0, :-1], rtol=1e-4, atol=1e-5)


def test_decode_step_with_a_dynamic_cache_object(twin_tiny, tiny_spec):
    from transformers.cache_utils import DynamicCache

    inputs = build_inputs(tiny_spec, WORKLOADS["tiny"])
    cache = DynamicCache()
    with torch.inference_mode():
        prefill = twin_tiny(
            **{**inputs.forward_kwargs(dtype=torch.float32), "use_cache": True, "past_key_values": cache}
        )
        assert prefill.past_key_values is cache and cache.get_seq_length() == inputs.seq_len
        step = twin_tiny(input_ids=torch.tensor([[7]]), past_key_values=cache, use_cache=True)
        reference = twin_tiny(**_extended(inputs, 7))
    assert cache.get_seq_length() == inputs.seq_len + 1
    torch.testing.assert_close(step.logits[0, -1], reference.logits[0, -1], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("preset", ["tiny", "crops"])
def test_bf16_weights_under_cpu_autocast_are_finite(tiny_spec, preset):
    model = build_twin(tiny_spec, dtype=torch.bfloat16)
    if preset == "crops":  # crop mode, cheaply: 512 global view + 2 crops of 512 (bf16 crops path)
        inputs = build_inputs(tiny_spec, VisionWorkload(512, 512, True, tile_size=512), width=1300, height=700)
        assert inputs.layout.num_crops == 2
    else:
        inputs = build_inputs(tiny_spec, WORKLOADS[preset])
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(**{**inputs.forward_kwargs(dtype=torch.bfloat16), "use_cache": True})
        step = model(input_ids=torch.tensor([[11]]), past_key_values=out.past_key_values, use_cache=True)
    assert out.logits.dtype == torch.float32  # the vendor casts the logits to float32
    assert torch.isfinite(out.logits).all() and torch.isfinite(step.logits).all()
    assert out.logits.shape == (1, inputs.seq_len, tiny_spec.decoder.vocab_size)


def test_sdpa_attention_matches_eager(twin_tiny, tiny_spec):
    sdpa = build_twin(tiny_spec, attn_implementation="sdpa", seed=0)  # same seed -> same weights
    inputs = build_inputs(tiny_spec, WORKLOADS["tiny"])
    kw = inputs.forward_kwargs(dtype=torch.float32)
    with torch.inference_mode():
        a = twin_tiny(**kw).logits
        b = sdpa(**kw).logits
        c = sdpa(**kw, output_attentions=True)  # SDPA cannot return weights: eager fallback
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    assert len(c.attentions) == tiny_spec.decoder.num_layers
    assert c.attentions[0].shape == (1, tiny_spec.decoder.num_heads, inputs.seq_len, inputs.seq_len)


def test_quick_gelu_is_looked_up_at_call_time(twin_tiny, tiny_spec):
    assert isinstance(twin_clip.quick_gelu, torch.jit.ScriptFunction)
    calls = Counter()
    scripted = twin_clip.quick_gelu

    def plain_quick_gelu(x):
        calls["quick_gelu"] += 1
        return x * torch.sigmoid(1.702 * x)

    inputs = build_inputs(tiny_spec, WORKLOADS["tiny"])
    kw = inputs.forward_kwargs(dtype=torch.float32)
    with torch.inference_mode():
        before = twin_tiny(**kw).logits
        twin_clip.quick_gelu = plain_quick_gelu
        try:
            after = twin_tiny(**kw).logits
        finally:
            twin_clip.quick_gelu = scripted
    assert calls["quick_gelu"] == tiny_spec.clip.layers  # one per CLIP block, one vision pass
    torch.testing.assert_close(before, after)


def test_clip_block_calls_attention_and_mlp_without_hooks(twin_tiny, tiny_spec):
    """The vendor calls `self_attn.forward` / `mlp.forward` directly: hooks there never fire."""
    block = twin_tiny.model.vision_model.transformer.layers[0]
    fired = []
    handles = [m.register_forward_hook(lambda *a: fired.append(1)) for m in (block.self_attn, block.mlp)]
    handles.append(block.register_forward_hook(lambda *a: fired.append("block")))
    try:
        with torch.inference_mode():
            twin_tiny(**build_inputs(tiny_spec, WORKLOADS["tiny"]).forward_kwargs(dtype=torch.float32))
    finally:
        for h in handles:
            h.remove()
    assert fired == ["block"]


def test_labels_give_a_loss_and_tuples_without_return_dict(twin_tiny, tiny_spec):
    inputs = build_inputs(tiny_spec, WORKLOADS["tiny"])
    kw = inputs.forward_kwargs(dtype=torch.float32)
    with torch.inference_mode():
        out = twin_tiny(**kw, labels=kw["input_ids"])
        tup = twin_tiny(**kw, return_dict=False, output_hidden_states=True)
    assert torch.isfinite(out.loss)
    logits, hidden = tup
    assert logits.shape == out.logits.shape
    assert len(hidden) == tiny_spec.decoder.num_layers + 1


def test_text_only_prefill_skips_the_vision_branch(twin_tiny, tiny_spec):
    inputs = build_inputs(tiny_spec, WORKLOADS["tiny"])
    kw = inputs.forward_kwargs(dtype=torch.float32)
    kw["images"] = [(torch.zeros(1, 3, 512, 512), torch.zeros(1, 3, 512, 512))]  # infer() without an image
    with recorded_calls(twin_tiny) as rec, torch.inference_mode():
        out = twin_tiny(**kw)
    assert not rec["vision"] and torch.isfinite(out.logits).all()

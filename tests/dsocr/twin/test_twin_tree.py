"""The full-size twin, built on the meta device, against the vendor's measured module tree."""

from __future__ import annotations

import json
import time

import pytest
import torch
from twin_testlib import MODULE_TREE

from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin
from llm_perf_opt.errors import ConfigError

FULL_PARAMS = 3_336_106_240


@pytest.fixture(scope="module")
def twin_meta():
    start = time.perf_counter()
    model = build_twin(ModelSpec.deepseek_ocr(), device="meta")
    return model, time.perf_counter() - start


def test_full_twin_on_meta_has_the_vendor_module_tree(twin_meta):
    model, _ = twin_meta
    tree = json.loads(MODULE_TREE.read_text())
    expected = [tuple(row) for row in tree["modules"]]
    got = [
        (name, type(mod).__name__, sum(p.numel() for p in mod.parameters(recurse=False)))
        for name, mod in model.named_modules()
    ]
    assert len(expected) == tree["n_named_modules"] == 4083
    ref, mine = {r[0]: r[1:] for r in expected}, {g[0]: g[1:] for g in got}
    diffs = sorted((n, ref.get(n), mine.get(n)) for n in set(ref) | set(mine) if ref.get(n) != mine.get(n))
    assert diffs == []
    assert [g[0] for g in got] == [e[0] for e in expected]  # same registration order too
    assert sum(p.numel() for p in model.parameters()) == FULL_PARAMS


def test_full_twin_on_meta_is_quick_and_allocates_nothing(twin_meta):
    model, seconds = twin_meta
    assert seconds < 20  # about 1 s on an idle 2-core machine
    assert all(p.is_meta for p in model.parameters())
    assert model.model.embed_tokens.weight.dtype == torch.float32


def test_parameter_names_and_shapes_follow_the_vendor(twin_meta):
    model, _ = twin_meta
    sd = model.state_dict()
    shapes = {k: tuple(v.shape) for k, v in sd.items()}
    assert shapes["model.sam_model.pos_embed"] == (1, 64, 64, 768)
    assert shapes["model.sam_model.blocks.0.attn.rel_pos_h"] == (27, 64)  # windowed: 2·14 − 1
    assert shapes["model.sam_model.blocks.2.attn.rel_pos_w"] == (127, 64)  # global: 2·64 − 1
    assert shapes["model.sam_model.neck.1.weight"] == (256,)
    assert shapes["model.sam_model.net_3.weight"] == (1024, 512, 3, 3)
    assert shapes["model.vision_model.embeddings.class_embedding"] == (1024,)
    assert shapes["model.vision_model.embeddings.position_embedding.weight"] == (257, 1024)
    assert shapes["model.vision_model.embeddings.position_ids"] == (1, 257)  # a persistent buffer
    assert shapes["model.vision_model.pre_layrnorm.weight"] == (1024,)
    assert shapes["model.vision_model.transformer.layers.23.self_attn.qkv_proj.weight"] == (3072, 1024)
    assert shapes["model.vision_model.transformer.layers.0.layer_norm2.bias"] == (1024,)
    assert shapes["model.projector.layers.weight"] == (1280, 2048)
    assert shapes["model.image_newline"] == shapes["model.view_seperator"] == (1280,)
    assert shapes["model.layers.1.mlp.gate.weight"] == (64, 1280)
    assert shapes["model.layers.11.mlp.experts.63.down_proj.weight"] == (1280, 896)
    assert shapes["model.layers.11.mlp.shared_experts.up_proj.weight"] == (1792, 1280)
    assert shapes["model.layers.0.mlp.gate_proj.weight"] == (6848, 1280)
    assert shapes["lm_head.weight"] == (129280, 1280)
    # 2710 checkpoint tensors + CLIP's position_ids buffer; RoPE inv_freq stays out (non-persistent)
    assert len(sd) == 2711
    assert not any(k.endswith("inv_freq") for k in sd)


def test_config_attributes(twin_meta):
    model, _ = twin_meta
    cfg = model.config
    assert cfg._attn_implementation == "eager"
    assert cfg.use_cache is True
    assert (cfg.vocab_size, cfg.num_hidden_layers, cfg.hidden_size) == (129280, 12, 1280)
    assert model.spec == ModelSpec.deepseek_ocr()
    assert not model.training


def test_attention_implementations_choose_the_transformers_classes(tiny_spec):
    names = {
        impl: type(build_twin(tiny_spec, device="meta", attn_implementation=impl).model.layers[0].self_attn).__name__
        for impl in ("eager", "sdpa")
    }
    assert names == {"eager": "LlamaAttention", "sdpa": "LlamaSdpaAttention"}
    with pytest.raises(ConfigError, match="runtime.attn_implementation"):
        build_twin(tiny_spec, device="meta", attn_implementation="flash_attention_2")  # no flash_attn / CPU
    with pytest.raises(ConfigError, match="attn_implementation"):
        build_twin(tiny_spec, device="meta", attn_implementation="xformers")
    with pytest.raises(ConfigError, match="dtype"):
        build_twin(tiny_spec, device="meta", dtype=torch.int64)


def test_weights_are_seeded_finite_and_sensible(tiny_spec):
    a = build_twin(tiny_spec, seed=3)
    b = build_twin(tiny_spec, seed=3)
    c = build_twin(tiny_spec, seed=4)
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all(torch.equal(sa[k], sb[k]) for k in sa)
    assert not torch.equal(sa["lm_head.weight"], sc["lm_head.weight"])
    assert all(torch.isfinite(v).all() for v in sa.values() if v.is_floating_point())
    assert torch.all(sa["model.norm.weight"] == 1) and torch.all(sa["model.sam_model.neck.1.bias"] == 0)
    assert torch.all(sa["model.sam_model.blocks.0.attn.qkv.bias"] == 0)
    assert 0.015 < sa["model.layers.1.mlp.experts.0.up_proj.weight"].std().item() < 0.025
    assert torch.equal(sa["model.vision_model.embeddings.position_ids"], torch.arange(257)[None])
    rope = a.model.layers[0].self_attn.rotary_emb
    assert rope.inv_freq.dtype == torch.float32 and rope.inv_freq[0].item() == 1.0


def test_bf16_build_keeps_rope_frequencies_in_float32(tiny_spec):
    model = build_twin(tiny_spec, dtype=torch.bfloat16)
    assert model.lm_head.weight.dtype == torch.bfloat16
    assert model.model.layers[2].self_attn.rotary_emb.inv_freq.dtype == torch.float32

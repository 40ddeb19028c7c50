"""DeepSeek-OCR 2 spec and view layout: token counts from an independent derivation, bad input refused."""

from __future__ import annotations

import json

import pytest

from llm_perf_opt.dsocr2.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr2.spec import ModelSpec
from llm_perf_opt.errors import ConfigError

PATCH, DOWN = 16, 4
GLOBAL_SIDE, TILE = 1024, 768
GLOBAL_QUERIES = (GLOBAL_SIDE // PATCH // DOWN) ** 2  # 16 x 16 SAM tokens -> as many queries
CROP_QUERIES = (TILE // PATCH // DOWN) ** 2  # 12 x 12
SEPARATOR = 1


# pages whose grid follows from the aspect ratio by hand: the closest w/h among grids of 2..6 tiles
PAGES = {
    0: [(600, 500), (768, 768), (100, 700)],  # both sides <= 768: no crops
    2: [(1600, 800), (800, 1600)],  # aspect 2 -> 2x1, 0.5 -> 1x2
    3: [(3000, 1000), (1000, 3000)],  # 3 -> 3x1
    4: [(1000, 1000), (4000, 1000)],  # 1 -> 2x2 (2x2 beats 1x1? 1x1 is not a candidate: min 2 tiles); 4 -> 4x1
    5: [(5000, 1000)],  # 5 -> 5x1
    6: [(1700, 2200), (2200, 1700), (6000, 1000)],  # 0.77 -> 2x3 (0.667), 1.29 -> 3x2 (1.5), 6 -> 6x1
}


@pytest.mark.parametrize("crops", sorted(PAGES))
def test_image_tokens_are_257_plus_144_per_crop(crops):
    checked = 0
    for width, height in PAGES[crops]:
        layout = compute_view_layout(VisionWorkload(), width, height)
        assert layout.num_crops == crops
        assert layout.image_tokens == GLOBAL_QUERIES + SEPARATOR + CROP_QUERIES * crops
        assert layout.vision_passes == (2 if crops else 1)
        checked += 1
    assert checked == len(PAGES[crops])


def test_token_table_spans_257_to_1121():
    table = {n: GLOBAL_QUERIES + SEPARATOR + CROP_QUERIES * n for n in (0, 2, 3, 4, 5, 6)}
    assert table[0] == 257 and table[6] == 1121
    got = {n: compute_view_layout(VisionWorkload(), *PAGES[n][0]).image_tokens for n in table}
    assert got == table


@pytest.mark.parametrize("side", [768, 1024])
def test_no_crop_modes(side):
    layout = compute_view_layout(VisionWorkload(base_size=side, image_size=side, crop_mode=False), 1700, 2200)
    assert layout.image_tokens == (side // PATCH // DOWN) ** 2 + SEPARATOR
    assert layout.num_crops == 0 and layout.global_side == side
    assert layout.global_squashed == (side <= 768)


@pytest.mark.parametrize(
    "knobs,field",
    [
        (dict(image_size=640), "workload.image_size"),  # v1's Gundam tile
        (dict(image_size=640, base_size=640, crop_mode=False), "workload.base_size"),  # v1 Small
        (dict(image_size=1280, base_size=1280, crop_mode=False), "workload.base_size"),  # v1 Large
        (dict(tile_size=640), "workload.tile_size"),
        (dict(max_num=9), "workload.max_num"),  # v1's crop bound
        (dict(min_num=1), "workload.min_num"),
        (dict(image_size=1024), "workload.image_size"),  # crop mode tiles at 768
    ],
)
def test_v1_knobs_and_crop_counts_are_refused(knobs, field):
    with pytest.raises(ConfigError) as err:
        VisionWorkload(**knobs)
    assert str(err.value).startswith(field + "=") and "DeepSeek-OCR 2" in str(err.value)


def test_spec_numbers_and_config_json(tmp_path):
    spec = ModelSpec.deepseek_ocr2()
    assert spec.sam.out_dim == spec.encoder.hidden_size == spec.projector.input_dim == 896
    assert spec.encoder.head_dim == 896 // 14 and spec.encoder.num_kv_heads == 2
    assert spec.encoder.bank_sizes == (CROP_QUERIES, GLOBAL_QUERIES)
    cfg = {
        "_name_or_path": "deepseek-ai/DeepSeek-OCR-2",
        "language_config": {
            "hidden_size": 1280,
            "num_hidden_layers": 12,
            "num_attention_heads": 10,
            "num_key_value_heads": 10,
            "intermediate_size": 6848,
            "moe_intermediate_size": 896,
            "n_routed_experts": 64,
            "n_shared_experts": 2,
            "num_experts_per_tok": 6,
            "first_k_dense_replace": 1,
            "vocab_size": 129280,
            "use_mla": False,
            "bos_token_id": 0,
            "eos_token_id": 1,
        },
        "projector_config": {"input_dim": 896, "n_embed": 1280, "projector_type": "linear"},
        "vision_config": {
            "model_name": "deepencoderv2",
            "width": {
                "qwen2-0-5b": {"dim": 896},
                "sam_vit_b": {
                    "downsample_channels": [512, 1024],
                    "global_attn_indexes": [2, 5, 8, 11],
                    "heads": 12,
                    "layers": 12,
                    "width": 768,
                },
            },
        },
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    read = ModelSpec.from_config_json(tmp_path)
    assert read.sam == spec.sam and read.encoder == spec.encoder and read.decoder == spec.decoder
    assert read.projector == spec.projector and read.name == "DeepSeek-OCR-2"
    # a v1 config.json (CLIP encoder) is the other family
    cfg["vision_config"] = {"width": {"clip-l-14-224": {"width": 1024}, "sam_vit_b": {"width": 768}}}
    path.write_text(json.dumps(cfg))
    with pytest.raises(ConfigError, match="not a DeepSeek-OCR 2 config"):
        ModelSpec.from_config_json(path)


def test_tiny_has_the_structure():
    t = ModelSpec.tiny()
    s = t.sam
    assert 0 < len(s.global_attn_indexes) < s.depth  # windowed and global blocks
    assert t.encoder.num_kv_heads < t.encoder.num_heads  # grouped-query attention
    assert t.encoder.bank_sizes == (CROP_QUERIES, GLOBAL_QUERIES)
    d = t.decoder
    assert not d.is_moe_layer(0) and all(d.is_moe_layer(i) for i in range(1, d.num_layers))

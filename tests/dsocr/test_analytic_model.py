"""The DeepSeek-OCR analytic model without running torch: full-size figures derived by hand from named
dimensions, structural invariants, the costs.json data (speed: benchmarks/analytic_speed.py)."""

from __future__ import annotations

import json
import math

import pytest

from llm_perf_opt.analytic import StageCost, dtype_bytes, load_costs, write_costs
from llm_perf_opt.deepseek_ocr_shared.analytic import costs_dict, default_seq_len
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError

FULL = ModelSpec.deepseek_ocr()
BASE = VisionWorkload(base_size=1024, image_size=1024, crop_mode=False)
TINY = VisionWorkload(base_size=512, image_size=512, crop_mode=False)
GUNDAM = VisionWorkload(base_size=1024, image_size=640, crop_mode=True)


def _model(workload=BASE, width=1700, height=2200, spec=FULL, **kw) -> DeepseekOCRAnalyticModel:
    return DeepseekOCRAnalyticModel(spec, compute_view_layout(workload, width, height), **kw)


def _sam_by_hand(batch: int, side: int) -> int:
    """SAM ViT-B FLOPs for `batch` images of `side` pixels, from the released dimensions."""
    width, heads, head_dim, mlp, depth, window, patch = 768, 12, 64, 3072, 12, 14, 16
    n_global = 4
    grid = side // patch
    padded = math.ceil(grid / window) * window
    windows = batch * (padded // window) ** 2
    win_tokens = window * window
    flops = 2 * batch * width * grid * grid * 3 * patch * patch  # patch conv
    windowed_attn = (
        2 * windows * win_tokens * width * 3 * width  # qkv on the padded windows
        + 2 * windows * heads * window * window * (window + window) * head_dim  # rel-pos einsums
        + 4 * windows * heads * win_tokens * win_tokens * head_dim  # SDPA
        + 2 * windows * win_tokens * width * width
    )  # proj
    n = grid * grid
    global_attn = (
        2 * batch * n * width * 3 * width
        + 2 * batch * heads * grid * grid * (grid + grid) * head_dim
        + 4 * batch * heads * n * n * head_dim
        + 2 * batch * n * width * width
    )
    mlp_flops = 2 * 2 * batch * n * width * mlp  # on the unpadded grid
    flops += (depth - n_global) * windowed_attn + n_global * global_attn + depth * mlp_flops
    g2 = (grid - 1) // 2 + 1
    g3 = (g2 - 1) // 2 + 1
    flops += 2 * batch * n * 256 * 768 + 2 * batch * n * 256 * 256 * 9  # neck
    flops += 2 * batch * g2 * g2 * 512 * 256 * 9 + 2 * batch * g3 * g3 * 1024 * 512 * 9  # net_2, net_3
    return flops


def _clip_by_hand(batch: int, grid: int) -> int:
    width, heads, ffn, layers = 1024, 16, 4096, 24
    n = grid * grid + 1
    per_layer = (
        2 * batch * n * width * 3 * width
        + 4 * batch * heads * n * n * (width // heads)
        + 2 * batch * n * width * width
        + 2 * 2 * batch * n * width * ffn
    )
    return layers * per_layer


def _decoder_by_hand(q_len: int, past: int) -> int:
    hidden, heads, head_dim, layers, dense, moe_i, experts, top_k, shared, vocab = (
        1280,
        10,
        128,
        12,
        6848,
        896,
        64,
        6,
        2,
        129280,
    )
    kv = past + q_len
    attn = 4 * 2 * q_len * hidden * hidden + 2 * (head_dim // 2) * q_len + 4 * heads * q_len * kv * head_dim
    dense_mlp = 3 * 2 * q_len * hidden * dense
    moe = (
        2 * q_len * hidden * experts + top_k * 3 * 2 * q_len * hidden * moe_i + 3 * 2 * q_len * hidden * shared * moe_i
    )
    return layers * attn + dense_mlp + (layers - 1) * moe + 2 * q_len * hidden * vocab


def test_base_mode_full_size_by_hand():
    m = _model(BASE)
    assert m.layout.image_tokens == 273 and m.seq_len == 1 + 273 + 4
    vision = m.vision()
    sam, clip = _sam_by_hand(1, 1024), _clip_by_hand(1, 16)
    projector = 2 * 256 * 2048 * 1280
    assert vision.part("sam").flops_matmul == sam
    assert vision.part("clip").flops_matmul == clip
    assert vision.part("projector").flops_matmul == projector
    assert vision.flops_matmul == sam + clip + projector
    assert m.prefill().flops_matmul == sam + clip + projector + _decoder_by_hand(278, 0)


def test_gundam_crops_batched_and_global_view():
    m = _model(GUNDAM, 1700, 2200)
    assert (m.layout.w_crop, m.layout.h_crop, m.layout.image_tokens) == (2, 3, 903)
    assert [(p.name, p.batch, p.side) for p in m.passes] == [("crops", 6, 640), ("global", 1, 1024)]
    vision = m.vision()
    assert vision.part("sam").flops_matmul == _sam_by_hand(6, 640) + _sam_by_hand(1, 1024)
    assert vision.part("clip").flops_matmul == _clip_by_hand(6, 10) + _clip_by_hand(1, 16)
    assert vision.part("projector").flops_matmul == 2 * (6 * 100 + 256) * 2048 * 1280
    prefill = m.prefill()
    assert prefill.part("lm_head").flops_matmul == 2 * 908 * 1280 * 129280  # all positions
    assert prefill.flops_matmul == vision.flops_matmul + _decoder_by_hand(908, 0)


def test_windowed_blocks_pay_for_the_padded_grid():
    # 512 -> grid 32 and 640 -> grid 40 both pad to 42 for the 14x14 windows: identical window attention
    small = _model(TINY).vision().parts["model.sam_model.blocks.0.attn"]
    larger = _model(VisionWorkload(640, 640, False)).vision().parts["model.sam_model.blocks.0.attn"]
    assert small.flops_matmul == larger.flops_matmul
    # ... but not identical MLPs (unpadded grid)
    assert (
        _model(TINY).vision().parts["model.sam_model.blocks.0.mlp"].flops_matmul
        < _model(VisionWorkload(640, 640, False)).vision().parts["model.sam_model.blocks.0.mlp"].flops_matmul
    )


def test_decode_grows_by_one_key_per_layer():
    m = _model(GUNDAM)
    d0, d1 = m.decode(1000), m.decode(1001)
    assert d1.flops_matmul - d0.flops_matmul == 12 * 4 * 10 * 128  # Q·Kᵀ and P·V gain one key in 12 layers
    assert d0.flops_matmul == _decoder_by_hand(1, 1000)
    assert "model.sam_model" not in d0.parts  # vision is skipped for a single new token
    assert m.decode().shapes["past_len"] == m.seq_len  # default: first token after the prefill
    # KV cache read: k and v of 10 heads x 128 for every cached position in 12 layers, bf16
    assert d1.total.input_bytes - d0.total.input_bytes >= 12 * 2 * 10 * 128 * 2


def test_moe_weights_in_decode_are_top_k_experts():
    d = _model(GUNDAM).decode(500)
    experts = d.parts["model.layers.1.mlp.experts"]
    assert experts.weight_bytes == 6 * 3 * 1280 * 896 * 2
    assert d.parts["model.layers.1.mlp.shared_experts"].weight_bytes == 3 * 1280 * 1792 * 2


def test_prefill_is_the_sum_of_its_parts():
    p = _model(GUNDAM, 3000, 1000).prefill()
    top = [
        "model.embed_tokens",
        "model.sam_model",
        "model.vision_model",
        "model.projector",
        "model.layers",
        "model.norm",
        "lm_head",
    ]
    assert sum(p.parts[name].flops_matmul for name in top) == p.flops_matmul
    assert sum(p.parts[f"model.layers.{i}"].flops_matmul for i in range(12)) == p.parts["model.layers"].flops_matmul
    assert p.total.io_bytes == p.total.weight_bytes + p.total.input_bytes + p.total.output_bytes
    for part in p.parts.values():
        assert all(isinstance(v, int) and v >= 0 for v in part.to_dict().values())


def test_units_and_dtype():
    bf16, fp32 = _model(BASE).prefill(), _model(BASE, dtype="float32").prefill()
    assert bf16.flops == fp32.flops
    assert fp32.parts["lm_head"].weight_bytes == 2 * bf16.parts["lm_head"].weight_bytes == 1280 * 129280 * 4
    assert bf16.weights_gb == bf16.weight_bytes / 1e9 and bf16.io_tb == bf16.io_bytes / 1e12
    assert bf16.activations_gb == bf16.activation_bytes / 1e9
    assert dtype_bytes("torch.bfloat16") == 2 and dtype_bytes("float32") == 4 and dtype_bytes(2) == 2
    with pytest.raises(ConfigError):
        dtype_bytes("int3")


def test_decoder_attention_choice_changes_bytes_not_flops():
    eager, sdpa = _model(BASE).prefill(), _model(BASE, decoder_attention="sdpa").prefill()
    assert eager.flops == sdpa.flops
    assert eager.activation_bytes > sdpa.activation_bytes


def test_invalid_inputs():
    layout = compute_view_layout(GUNDAM, 1700, 2200)
    with pytest.raises(ConfigError, match="seq_len"):
        DeepseekOCRAnalyticModel(FULL, layout, seq_len=layout.image_tokens)
    with pytest.raises(ConfigError, match="stage"):
        DeepseekOCRAnalyticModel(FULL, layout).stage("training")
    with pytest.raises(ConfigError, match="context_len"):
        DeepseekOCRAnalyticModel(FULL, layout).decode(-1)
    assert default_seq_len(layout) == 1 + 903 + 4


def test_costs_json_round_trip(tmp_path):
    m = _model(GUNDAM, 2200, 1700)
    data = costs_dict(m)
    json.dumps(data)
    assert set(data["stages"]) == {"vision", "prefill", "decode"}
    assert data["stages"]["prefill"]["total"]["flops_matmul"] == m.prefill().flops_matmul
    assert "model.layers.3.mlp.experts" in data["stages"]["decode"]["parts"]
    back = load_costs(write_costs(tmp_path / "costs.json", m))
    assert back.stages["vision"].summary["sam"].flops_matmul == m.vision().part("sam").flops_matmul


def test_stage_summary_aliases():
    p = _model(GUNDAM).prefill()
    summary = p.summary()
    assert list(summary)[:4] == ["embedding", "sam", "clip", "projector"]
    assert summary["decoder.layer.11"] == p.part("decoder.layer.11") == p.parts["model.layers.11"]
    assert isinstance(p, StageCost) and p.part("total") == p.total


def test_equal_specs_share_cached_stages():
    layout = compute_view_layout(GUNDAM, 1700, 2200)
    a = DeepseekOCRAnalyticModel(ModelSpec.deepseek_ocr(), layout).prefill()
    b = DeepseekOCRAnalyticModel(ModelSpec.deepseek_ocr(), layout).prefill()
    assert a is b
    tiny = DeepseekOCRAnalyticModel(ModelSpec.tiny(), layout).prefill()
    assert tiny is not a and tiny.flops < a.flops


@pytest.mark.parametrize(
    "workload, images",
    [
        (TINY, [3 * 512 * 512, 3 * 512 * 512]),  # the global view and the all-zero crop placeholder of its shape
        (GUNDAM, [6 * 3 * 640 * 640, 3 * 1024 * 1024]),  # the six crops and the global view
    ],
)
def test_the_image_checks_read_their_images(workload, images):
    """The forward's two `torch.sum(...).item()` checks each read their whole image tensor (one add per element, the
    image's bytes, a 0-d result): their kernels say so, while the stage's FLOPs and I/O leave the check out."""
    m = _model(workload)
    glue = dict(m.prefill().root.children)["model"].own  # DeepseekOCRModel.forward's own ops, around its modules
    sums = [(key, n) for key, n in glue.kernels.counts.items() if key[0] == "reduction"]
    assert sum(n for _, n in sums) == 2 and glue.syncs == 2
    got = sorted(flops for (_, _, flops, _, _), n in sums for _ in range(n))
    assert got == sorted(images)
    b = m.dtype_bytes
    for (_, _, flops, nbytes, out), _ in sums:
        assert (nbytes, out) == (flops * b + b, b)
    assert glue.flops_other == 0 and glue.input_bytes == 0

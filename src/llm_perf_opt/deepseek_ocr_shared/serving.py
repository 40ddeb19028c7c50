"""The DeepSeek-OCR side of the serving math (both generations): the `ServingModel` for one page shape, from the
analytic model (`deepseek_ocr_shared.analytic`).

* Batch rules: the vendor's forward runs the vision parts (v1: SAM, CLIP and the projector) in a Python loop over
  the images (`for image in images: ...`), so at batch B each vision unit runs B times, weights included; the
  token embedding gathers one row per token; the routed experts are the `mlp.experts` lists of the MoE layers.
* Parameters: SAM's and the decoder's, counted from their specs module by module (`sam_parameters`,
  `language_parameters`; each family adds its own parts: the twin and the vendor's 3,336,106,240 are v1's check).
* KV cache per token: every decoder layer keeps keys and values of kv_heads × head_dim (`costs.kv_cache_bytes`).
* The decode step is costed at two contexts (the prompt and the prompt + 1024) and interpolated exactly.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Optional

from llm_perf_opt.analytic.costs import kv_cache_bytes
from llm_perf_opt.analytic.moe_batch import MoEShape
from llm_perf_opt.analytic.serving_model import ServingModel
from llm_perf_opt.analytic.time.batch import BatchRules, DecodeTable, UnitTable


def _routed(path: str, module: str) -> bool:
    return path.endswith(".mlp.experts")


@lru_cache(maxsize=8)
def batch_rules(looped: tuple[str, ...], labels: str) -> BatchRules:
    """The batch rules of a family whose vision parts (`looped`, module paths) run once per image."""
    return BatchRules(
        lambda path, module: path in looped or module == "Embedding",
        _routed,
        {
            "per_sequence": f"{labels} (the vendor's forward loops over the images) and the token "
            "embedding (one row per token)",
            "routed": "model.layers.<i>.mlp.experts: the experts the batch's tokens touch (analytic.moe_batch)",
            "batched": "everything else: weights read once per step, the rest x batch",
        },
    )


def sam_parameters(s: Any) -> int:
    """SAM ViT-B's parameters (a `SamSpec`): patch conv, positions, blocks, neck, the stride-2 convs."""
    w, hd = s.width, s.head_dim
    sam = 3 * s.patch_size**2 * w + w + s.pos_grid**2 * w  # patch conv (bias), absolute position table
    for i in range(s.depth):
        size = s.pos_grid if i in s.global_attn_indexes else s.window_size
        sam += 2 * w + (w * 3 * w + 3 * w) + (w * w + w) + 2 * (2 * size - 1) * hd  # norm1, qkv, proj, rel_pos h/w
        sam += 2 * w + (w * s.mlp_dim + s.mlp_dim) + (s.mlp_dim * w + w)  # norm2, lin1, lin2
    oc = s.out_chans
    sam += w * oc + 2 * oc + oc * oc * 9 + 2 * oc  # neck: 1x1 conv, LayerNorm2d, 3x3 conv, LayerNorm2d (no conv bias)
    prev = oc
    for ch in s.downsample_channels:  # net_2, net_3: 3x3 stride-2 convs without bias
        sam += prev * ch * 9
        prev = ch
    return sam


def language_parameters(d: Any) -> int:
    """The DeepSeek-V2 decoder's parameters (a `DecoderSpec`): layers, token embedding, final norm, lm_head."""
    H = d.hidden_size
    attn = H * d.num_heads * d.head_dim + 2 * H * d.num_kv_heads * d.head_dim + d.num_heads * d.head_dim * H
    dec = 0
    for i in range(d.num_layers):
        dec += attn + 2 * H  # q, k, v, o (no bias), two RMSNorms
        if d.is_moe_layer(i):
            dec += d.n_routed_experts * H + d.n_routed_experts * 3 * H * d.moe_intermediate_size
            dec += 3 * H * d.shared_intermediate_size if d.n_shared_experts else 0
        else:
            dec += 3 * H * d.intermediate_size
    embed = d.vocab_size * H
    head = 0 if d.tie_word_embeddings else d.vocab_size * H
    return dec + embed + H + head  # + the final RMSNorm


def moe_shape(spec: Any, dtype_bytes: int) -> Optional[MoEShape]:
    d = spec.decoder
    layers = sum(1 for i in range(d.num_layers) if d.is_moe_layer(i))
    if not layers:
        return None
    return MoEShape(
        layers, d.n_routed_experts, d.num_experts_per_tok, 3 * d.hidden_size * d.moe_intermediate_size * dtype_bytes
    )


DECODE_SPAN = 1024


def _stages_at(model: Any):
    """`ServingModel.stage_at` of one analytic model: its page at batch B, identical pages priced once; `kernels`
    "vllm" takes SDPA attention (the fused kernel a serving engine runs) instead of the model's own."""

    @lru_cache(maxsize=64)
    def at_batch(batch: int, attention: str) -> Any:
        return type(model)(
            model.spec,
            model.layout,
            model.seq_len,
            dtype=model.dtype_bytes,
            decoder_attention=attention,
            batch=batch,
            execution=model.requested_execution,
        )

    def stage_at(stage: str, batch: int, context: Optional[int] = None, kernels: str = "hf") -> Any:
        m = at_batch(int(batch), "sdpa" if kernels == "vllm" else model.decoder_attention)
        if stage == "prefill":
            return m.prefill()
        return m.decode(int(context if context is not None else model.seq_len))

    return stage_at


def serving_model(model: Any, moe: Optional[MoEShape] = None, dtype: str = "bfloat16") -> ServingModel:
    """The `ServingModel` of one analytic model (one page shape, one dtype). `moe`: a shape with measured
    routing (`MoEShape.with_routing`); default: uniform routing."""
    return _cached(
        model.spec,
        model.layout,
        model.seq_len,
        model.dtype_bytes,
        model.decoder_attention,
        dtype,
        moe if moe is not None else moe_shape(model.spec, model.dtype_bytes),
        model,
    )


@lru_cache(maxsize=1024)
def _cached(
    spec: Any,
    layout: Any,
    seq_len: int,
    b: int,
    attention: str,
    dtype: str,
    moe: Optional[MoEShape],
    model: Any,
) -> ServingModel:
    d = spec.decoder
    rules = model.batch_rules()
    prefill = UnitTable.build(model.prefill(), rules, seq_len)
    decode = DecodeTable.build(
        model.decode(seq_len), model.decode(seq_len + DECODE_SPAN), rules, seq_len, seq_len + DECODE_SPAN
    )
    kv = kv_cache_bytes(1, d.num_kv_heads, 1, d.head_dim, b) * d.num_layers
    # what infer() hands the forward for one sequence: every view's pixels in the model's dtype, input_ids
    # (int64) and images_seq_mask (bool) over the prompt (images_spatial_crop stays on the host)
    inputs = layout.pixel_values * b + seq_len * (8 + 1)
    shapes = {
        "model": spec.name,
        "layout": layout.as_dict(),
        "seq_len": seq_len,
        "image_tokens": layout.image_tokens,
        "dtype_bytes": b,
        "decoder_attention": attention,
    }
    return ServingModel(
        f"{spec.name} {layout.page_width}x{layout.page_height}" if hasattr(layout, "page_width") else spec.name,
        prefill,
        decode,
        seq_len,
        d.max_position_embeddings,
        model.parameter_count() * b,
        kv,
        inputs,
        dtype,
        moe,
        shapes,
        tuple(f"{k}: {v}" for k, v in rules.description.items()),
        rules,
        _stages_at(model),
    )


def moe_from_routing(spec: Any, dtype_bytes: int, routing_path: str) -> Optional[MoEShape]:
    """The MoE shape with the popularity the prefill of a trace's `routing.json` measured (gate call 0 of
    every MoE layer); the record must be of this model's experts (ConfigError naming serve.routing)."""
    from llm_perf_opt.errors import ArtifactError, ConfigError
    from llm_perf_opt.model_runtime.routing import load_routing

    base = moe_shape(spec, dtype_bytes)
    if base is None:
        raise ConfigError.field("serve.routing", routing_path, f"{spec.name} has no MoE layers")
    try:
        record = load_routing(routing_path)
    except ArtifactError as exc:
        raise ConfigError.field("serve.routing", routing_path, str(exc)) from None
    if record.n_experts != base.n_experts or record.top_k != base.top_k:
        raise ConfigError.field(
            "serve.routing",
            routing_path,
            f"records {record.n_experts} experts top-{record.top_k}; the model has {base.n_experts} top-{base.top_k}",
        )
    calls = [record.call(layer, 0) for layer in record.layers]
    counts = [dict(zip(c.experts, c.tokens_per_expert)) for c in calls]
    return base.with_routing(counts, [c.tokens for c in calls], note=record.note)

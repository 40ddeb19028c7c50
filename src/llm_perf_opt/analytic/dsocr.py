"""The DeepSeek-OCR analytic model: per-stage, per-module costs from `ModelSpec` + `ViewLayout` alone.

Shapes follow the vendor's forward exactly (read in the vendor's deepencoder.py,
modeling_deepseekocr.py, modeling_deepseekv2.py and transformers 4.46's LlamaAttention):

vision (per image; `vision_passes` = crop batch then global view in crop mode with a grid > 1×1,
else the global view alone; each pass runs SAM → CLIP → projector on a batch):
* SAM: patch conv (k = s = 16) → grid G = side // 16; `pos_embed` (pretraining grid 64) resized
  bicubically when G ≠ 64 (not a matmul) and added; blocks: windowed ones partition the grid padded
  to a multiple of the window (G → ceil(G/14)·14) into B·(Gp/14)² windows and attend inside each
  (rel-pos tables of 2·14-1 need no resizing), global ones attend over all G² positions (their tables of
  2·64-1 are linearly resized when G ≠ 64); attention = qkv linear, the two decomposed rel-pos einsums
  (bmm in torch's counter), SDPA with the rel-pos bias as mask, proj; the MLP runs on the unpadded
  grid. Neck conv1×1 → LayerNorm2d → conv3×3 → LayerNorm2d, then net_2 and net_3 (3×3 stride 2).
* CLIP: the SAM output (B, 1024, g, g) is the patch embedding: N = g² + 1 tokens (class token),
  the 257-entry position table is resized bicubically when g ≠ 16; pre-LayerNorm, then 24 blocks of
  LayerNorm → attention (SDPA, no mask) → LayerNorm → FFN (quick_gelu). Each block calls its
  `self_attn` and `mlp` through `.forward`, so those two are containers, not entered modules.
* projector: Linear(clip.width + sam.out_dim → n_embed) over the B·g² tokens.
prefill (vision + language over the whole prompt of `seq_len` tokens, images scattered in):
* embed_tokens, then per layer RMSNorm → LlamaAttention (q/k/v/o, one rotary_emb call building the
  cos/sin table with a bmm, RoPE, eager Q·Kᵀ + causal mask + float32 softmax + P·V over the full
  T × T scores) → RMSNorm → dense gated MLP (layers < first_k_dense_replace) or MoE (float32 gate
  linear, each token through exactly top_k routed experts, shared experts on all tokens);
  final RMSNorm; lm_head over all T positions; `logits.float()`.
decode (one new token after `context_len` cached ones; vision is skipped because the vendor runs it
only when input_ids has more than one position): the same language stack with q_len 1 over
context_len + 1 keys, KV-cache reads in the bytes, lm_head over 1 position.

No multipliers and no calibration: every number is a product of these shapes.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from llm_perf_opt.analytic import costs as C
from llm_perf_opt.analytic.costs import ZERO, LayerCost
from llm_perf_opt.analytic.stage import CostNode, StageCost, leaf, node_from_parts
from llm_perf_opt.dsocr import parts as P
from llm_perf_opt.dsocr.layout import ViewLayout, VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError

STAGES = ("vision", "prefill", "decode")
DEFAULT_PROMPT_TOKENS = 4  # "\nFree OCR." after the image tokens (shared/facts/deepseek_ocr.md)

_DTYPE_BYTES = {
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "float32": 4, "fp32": 4, "float": 4, "float64": 8, "double": 8,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "fp8": 1,
}


def dtype_bytes(dtype: Any) -> int:
    """Element size of a dtype given as a name ('bfloat16', 'torch.float32'), a torch dtype or an int."""
    if isinstance(dtype, int) and not isinstance(dtype, bool):
        if dtype in (1, 2, 4, 8):
            return dtype
        raise ConfigError.field("analytic.dtype", dtype, "an element size must be 1, 2, 4 or 8 bytes")
    itemsize = getattr(dtype, "itemsize", None)
    if isinstance(itemsize, int):
        return itemsize
    name = str(dtype).removeprefix("torch.").lower()
    if name not in _DTYPE_BYTES:
        raise ConfigError.field("analytic.dtype", dtype, f"one of {sorted(_DTYPE_BYTES)}")
    return _DTYPE_BYTES[name]


@dataclass(frozen=True)
class VisionPass:
    """One call of SAM → CLIP → projector: `batch` square images of side `side`."""

    name: str  # "crops" or "global"
    batch: int
    side: int


def vision_passes(layout: ViewLayout) -> tuple[VisionPass, ...]:
    """The vision calls of `DeepseekOCRModel.forward` for this layout, in call order."""
    passes = []
    if layout.num_crops:
        passes.append(VisionPass("crops", layout.num_crops, layout.crop_side))
    passes.append(VisionPass("global", 1, layout.global_side))
    return tuple(passes)


def default_seq_len(layout: ViewLayout, prompt_tokens: int = DEFAULT_PROMPT_TOKENS) -> int:
    """BOS + image tokens + text tokens, as `infer()` builds the prompt."""
    return 1 + layout.image_tokens + prompt_tokens


# ------------------------------------------------------------------------------------------- vision
@lru_cache(maxsize=1024)
def _sam_block_node(spec: ModelSpec, batch: int, grid: int, window: int, b: int) -> CostNode:
    s = spec.sam
    width, tokens = s.width, batch * grid * grid
    own = ZERO
    if window:
        padded = math.ceil(grid / window) * window  # window_partition pads H and W up to a multiple
        windows = (padded // window) ** 2
        attn = C.sam_attention_parts(batch * windows, window, window, width, s.heads,
                                     2 * window - 1, 2 * window - 1, b)
        pad_elems = batch * padded * padded * width
        # partition permute().contiguous() and unpartition copy; with padding also F.pad and the crop copy
        copies = 2 * pad_elems + (pad_elems + tokens * width if padded != grid else 0)
        own = own + LayerCost(activation_bytes=copies * b)
    else:
        attn = C.sam_attention_parts(batch, grid, grid, width, s.heads, 2 * s.pos_grid - 1, 2 * s.pos_grid - 1, b)
    own = own + C.elementwise(tokens * width, "add", 2, b).times(2)  # two residual adds
    return CostNode(own, (
        ("norm1", leaf(C.layer_norm(tokens, width, b))),
        ("attn", node_from_parts(attn)),
        ("norm2", leaf(C.layer_norm(tokens, width, b))),
        ("mlp", node_from_parts(C.mlp_parts(tokens, width, s.mlp_dim, "gelu", True, ("lin1", "act", "lin2"), b))),
    ))


@lru_cache(maxsize=1024)
def _sam_node(spec: ModelSpec, batch: int, side: int, b: int) -> tuple[CostNode, int]:
    """SAM on `batch` images of side `side` -> (node, output grid side)."""
    s = spec.sam
    grid = C.conv_out(side, s.patch_size, s.patch_size, 0)
    own = C.elementwise(batch * grid * grid * s.width, "add", 2, b)  # x + pos_embed
    if grid != s.pos_grid:
        own = own + C.interpolate(s.width, (s.pos_grid, s.pos_grid), (grid, grid), "bicubic")
    blocks = tuple(
        (str(i), _sam_block_node(spec, batch, grid, 0 if i in s.global_attn_indexes else s.window_size, b))
        for i in range(s.depth)
    )
    c0 = s.out_chans
    c1, c2 = s.downsample_channels
    g2 = C.conv_out(grid, 3, 2, 1)
    g3 = C.conv_out(g2, 3, 2, 1)
    neck = CostNode(ZERO, (
        ("0", leaf(C.conv2d(batch, s.width, c0, grid, grid, 1, 1, 0, False, b))),
        ("1", leaf(C.layer_norm2d(batch, c0, grid, grid, b))),
        ("2", leaf(C.conv2d(batch, c0, c0, grid, grid, 3, 1, 1, False, b))),
        ("3", leaf(C.layer_norm2d(batch, c0, grid, grid, b))),
    ))
    own = own + LayerCost(activation_bytes=batch * c1 * g2 * g2 * b)  # x2.clone()
    node = CostNode(own, (
        ("patch_embed", CostNode(ZERO, (
            ("proj", leaf(C.conv2d(batch, 3, s.width, side, side, s.patch_size, s.patch_size, 0, True, b))),
        ))),
        ("blocks", CostNode(ZERO, blocks, container=True)),
        ("neck", neck),
        ("net_2", leaf(C.conv2d(batch, c0, c1, grid, grid, 3, 2, 1, False, b))),
        ("net_3", leaf(C.conv2d(batch, c1, c2, g2, g2, 3, 2, 1, False, b))),
    ))
    return node, g3


@lru_cache(maxsize=1024)
def _clip_layer_node(spec: ModelSpec, batch: int, tokens: int, b: int) -> CostNode:
    c = spec.clip
    rows = batch * tokens
    attn = C.clip_attention_parts(batch, tokens, c.width, c.heads, b)
    ffn = C.mlp_parts(rows, c.width, c.ffn_dim, "quick_gelu", True, ("fc1", "", "fc2"), b)
    # self_attn.forward / mlp.forward are called directly: their own work (SDPA, quick_gelu) runs in
    # the block, and they are containers of their linears
    own = attn[""] + ffn[""] + C.elementwise(rows * c.width, "add", 2, b).times(2)  # two residual adds
    return CostNode(own, (
        ("layer_norm1", leaf(C.layer_norm(rows, c.width, b))),
        ("self_attn", CostNode(ZERO, (("qkv_proj", leaf(attn["qkv_proj"])), ("out_proj", leaf(attn["out_proj"]))),
                               container=True)),
        ("layer_norm2", leaf(C.layer_norm(rows, c.width, b))),
        ("mlp", CostNode(ZERO, (("fc1", leaf(ffn["fc1"])), ("fc2", leaf(ffn["fc2"]))), container=True)),
    ))


@lru_cache(maxsize=1024)
def _clip_node(spec: ModelSpec, batch: int, grid: int, b: int) -> CostNode:
    c = spec.clip
    tokens = grid * grid + 1  # class token + SAM features as patches
    src = math.isqrt(c.num_positions - 1)
    tgt = math.isqrt(tokens)  # get_abs_pos: int(sqrt(N))
    emb_own = LayerCost(activation_bytes=batch * tokens * c.width * b)  # cat(class token, patches)
    if src != tgt:
        emb_own = emb_own + C.interpolate(c.width, (src, src), (tgt, tgt), "bicubic")
        emb_own = emb_own + LayerCost(activation_bytes=tokens * c.width * b)  # cat(cls, resized table)
    emb_own = emb_own + C.elementwise(batch * tokens * c.width, "add", 2, b)
    embeddings = CostNode(emb_own, (
        ("position_embedding", leaf(C.embedding(c.num_positions, c.num_positions, c.width, b))),
    ))
    layer = _clip_layer_node(spec, batch, tokens, b)
    return CostNode(ZERO, (
        ("embeddings", embeddings),
        ("pre_layrnorm", leaf(C.layer_norm(batch * tokens, c.width, b))),
        ("transformer", CostNode(ZERO, (
            ("layers", CostNode(ZERO, tuple((str(i), layer) for i in range(c.layers)), container=True)),
        ))),
    ))


@lru_cache(maxsize=1024)
def _vision_pass_nodes(spec: ModelSpec, batch: int, side: int, b: int) -> tuple[tuple[str, CostNode], ...]:
    sam, grid = _sam_node(spec, batch, side, b)
    clip = _clip_node(spec, batch, grid, b)
    p = spec.projector
    rows = batch * grid * grid
    projector = CostNode(ZERO, (("layers", leaf(C.linear(rows, p.input_dim, p.n_embed, True, b))),))
    # in DeepseekOCRModel.forward: cat(CLIP without class token, flattened SAM) -> (B, g², input_dim)
    glue = LayerCost(activation_bytes=rows * p.input_dim * b)
    return (("sam_model", sam), ("vision_model", clip), ("projector", projector), ("", leaf(glue)))


# ----------------------------------------------------------------------------------------- language
@lru_cache(maxsize=4096)
def _decoder_layer_node(spec: ModelSpec, is_moe: bool, q_len: int, past_len: int, b: int, eager: bool) -> CostNode:
    d = spec.decoder
    attn = C.decoder_attention_parts(1, q_len, past_len, d.hidden_size, d.num_heads, d.num_kv_heads,
                                     d.head_dim, eager, b)
    if is_moe:
        mlp = node_from_parts(
            C.moe_parts(q_len, d.hidden_size, d.moe_intermediate_size, d.n_routed_experts, d.num_experts_per_tok,
                        d.shared_intermediate_size if d.n_shared_experts else 0, b),
            containers=frozenset({"experts"}),
        )
    else:
        mlp = node_from_parts(C.gated_mlp_parts(q_len, d.hidden_size, d.intermediate_size, "silu", b))
    own = C.elementwise(q_len * d.hidden_size, "add", 2, b).times(2)  # two residual adds
    return CostNode(own, (
        ("input_layernorm", leaf(C.rms_norm(q_len, d.hidden_size, b))),
        ("self_attn", node_from_parts(attn)),
        ("post_attention_layernorm", leaf(C.rms_norm(q_len, d.hidden_size, b))),
        ("mlp", mlp),
    ))


@lru_cache(maxsize=4096)
def _language_nodes(spec: ModelSpec, q_len: int, past_len: int, b: int, eager: bool
                    ) -> tuple[tuple[str, CostNode], tuple[tuple[str, CostNode], ...], LayerCost]:
    """(model children for the language part, root children (lm_head), root own cost)."""
    d = spec.decoder
    layer_nodes = tuple(
        (str(i), _decoder_layer_node(spec, d.is_moe_layer(i), q_len, past_len, b, eager)) for i in range(d.num_layers)
    )
    kv = past_len + q_len
    # position ids and the 4-D additive causal mask (B, 1, T, past + T) built by the model
    mask = LayerCost(activation_bytes=q_len * kv * b + q_len * 8)
    model_children = (
        ("embed_tokens", leaf(C.embedding(q_len, d.vocab_size, d.hidden_size, b))),
        ("layers", CostNode(ZERO, layer_nodes, container=True)),
        ("norm", leaf(C.rms_norm(q_len, d.hidden_size, b))),
        ("", leaf(mask)),
    )
    head = C.lm_head(q_len, d.hidden_size, d.vocab_size, b)
    root_own = LayerCost(activation_bytes=q_len * d.vocab_size * 4) if b != 4 else ZERO  # logits.float()
    return model_children, (("lm_head", leaf(head)),), root_own


# Stage caches are keyed by a small token per distinct spec: equal specs share one token, and a spec
# object seen before is recognised by identity (hashing a nested frozen dataclass on every call would
# cost more than the cache lookup saves). `_BY_ID` holds the objects it maps, so their ids stay valid.
_TOKENS: dict[ModelSpec, int] = {}
_SPECS: dict[int, ModelSpec] = {}
_BY_ID: dict[int, tuple[ModelSpec, int]] = {}


def _spec_token(spec: ModelSpec) -> int:
    hit = _BY_ID.get(id(spec))
    if hit is not None and hit[0] is spec:
        return hit[1]
    token = _TOKENS.get(spec)
    if token is None:
        token = len(_TOKENS)
        _TOKENS[spec] = token
        _SPECS[token] = spec
    if len(_BY_ID) >= 256:
        _BY_ID.clear()
    _BY_ID[id(spec)] = (spec, token)
    return token


def _pass_shapes(passes: tuple[tuple[str, int, int], ...], image_tokens: int) -> dict[str, Any]:
    return {"passes": [{"name": n, "batch": b, "side": s} for n, b, s in passes], "image_tokens": image_tokens}


def _vision_children_for(spec: ModelSpec, passes: tuple[tuple[str, int, int], ...], image_tokens: int,
                         b: int) -> list[tuple[str, CostNode]]:
    children: list[tuple[str, CostNode]] = []
    own = ZERO
    for _, batch, side in passes:
        for name, node in _vision_pass_nodes(spec, batch, side, b):
            if name:
                children.append((name, node))
            else:
                own = own + node.own
    # newline column cat, crop re-tiling, final cat with the separator: the image-token embeddings
    own = own + LayerCost(activation_bytes=2 * image_tokens * spec.decoder.hidden_size * b)
    children.append(("", leaf(own)))
    return children


@lru_cache(maxsize=8192)
def _vision_stage(token: int, passes: tuple[tuple[str, int, int], ...], image_tokens: int, b: int) -> StageCost:
    spec = _SPECS[token]
    children = _vision_children_for(spec, passes, image_tokens, b)
    root = CostNode(ZERO, (("model", _model_node(children)),))
    return StageCost("vision", root, P.VISION_PATHS, _pass_shapes(passes, image_tokens))


@lru_cache(maxsize=8192)
def _prefill_stage(token: int, passes: tuple[tuple[str, int, int], ...], image_tokens: int, seq_len: int, b: int,
                   eager: bool) -> StageCost:
    spec = _SPECS[token]
    lang, head, root_own = _language_nodes(spec, seq_len, 0, b, eager)
    children = [lang[0]] + _vision_children_for(spec, passes, image_tokens, b) + list(lang[1:])
    root = CostNode(root_own, (("model", _model_node(children)),) + head)
    shapes = _pass_shapes(passes, image_tokens) | {"seq_len": seq_len, "q_len": seq_len, "past_len": 0}
    return StageCost("prefill", root, ("",), shapes)


@lru_cache(maxsize=8192)
def _decode_stage(token: int, context_len: int, b: int, eager: bool) -> StageCost:
    spec = _SPECS[token]
    lang, head, root_own = _language_nodes(spec, 1, context_len, b, eager)
    root = CostNode(root_own, (("model", _model_node(list(lang))),) + head)
    return StageCost("decode", root, ("",), {"q_len": 1, "past_len": context_len, "kv_len": context_len + 1})


def clear_caches() -> None:
    """Drop every cached node and stage (for benchmarks of the cold path)."""
    for fn in (_sam_block_node, _sam_node, _clip_layer_node, _clip_node, _vision_pass_nodes, _decoder_layer_node,
               _language_nodes, _vision_stage, _prefill_stage, _decode_stage):
        fn.cache_clear()


def _model_node(children: list[tuple[str, CostNode]]) -> CostNode:
    own = ZERO
    named = []
    for name, node in children:
        if name:
            named.append((name, node))
        else:
            own = own + node.total
    return CostNode(own, tuple(named))


# --------------------------------------------------------------------------------------------- model
class DeepseekOCRAnalyticModel:
    """Analytic costs of DeepSeek-OCR for one page layout.

    Args:
        spec: the model dimensions.
        layout: the view layout of the page (`compute_view_layout(workload, width, height)`).
        seq_len: prompt length including BOS and the image tokens (default: BOS + image tokens +
            `prompt_tokens`, as `infer()` builds it).
        prompt_tokens: text tokens when `seq_len` is not given (4 for "\\nFree OCR.").
        context_len: tokens already in the KV cache for the decode stage (default `seq_len`: the first
            generated token after the prefill); the new token attends over context_len + 1 keys.
        dtype: element type for bytes ("bfloat16" as the vendor runs it, a torch dtype, or a size).
        decoder_attention: "eager" (the vendor's LlamaAttention) or "sdpa"; changes activation bytes
            only (fused attention does not materialise the scores), never FLOPs.
    """

    def __init__(self, spec: ModelSpec, layout: ViewLayout, seq_len: int | None = None, *,
                 prompt_tokens: int = DEFAULT_PROMPT_TOKENS, context_len: int | None = None,
                 dtype: Any = "bfloat16", decoder_attention: str = "eager") -> None:
        if seq_len is None:
            seq_len = default_seq_len(layout, prompt_tokens)
        if isinstance(seq_len, bool) or not isinstance(seq_len, int) or seq_len < 1 + layout.image_tokens:
            raise ConfigError.field("analytic.seq_len", seq_len,
                                    f"must be an integer >= 1 + image tokens = {1 + layout.image_tokens}")
        if context_len is None:
            context_len = seq_len
        if isinstance(context_len, bool) or not isinstance(context_len, int) or context_len < 0:
            raise ConfigError.field("analytic.context_len", context_len, "must be a non-negative integer")
        if decoder_attention not in ("eager", "sdpa"):
            raise ConfigError.field("analytic.decoder_attention", decoder_attention, "one of ['eager', 'sdpa']")
        self.spec = spec
        self.layout = layout
        self.seq_len = seq_len
        self.context_len = context_len
        self.dtype_bytes = dtype_bytes(dtype)
        self.decoder_attention = decoder_attention
        self._passes_key = tuple((p.name, p.batch, p.side) for p in vision_passes(layout))

    @classmethod
    def for_page(cls, spec: ModelSpec, workload: VisionWorkload, width: int, height: int,
                 **kwargs: Any) -> "DeepseekOCRAnalyticModel":
        return cls(spec, compute_view_layout(workload, width, height), **kwargs)

    @property
    def passes(self) -> tuple[VisionPass, ...]:
        return vision_passes(self.layout)

    def vision(self) -> StageCost:
        return _vision_stage(_spec_token(self.spec), self._passes_key, self.layout.image_tokens, self.dtype_bytes)

    def prefill(self) -> StageCost:
        return _prefill_stage(_spec_token(self.spec), self._passes_key, self.layout.image_tokens, self.seq_len,
                              self.dtype_bytes, self.decoder_attention == "eager")

    def decode(self, context_len: int | None = None) -> StageCost:
        ctx = self.context_len if context_len is None else context_len
        if isinstance(ctx, bool) or not isinstance(ctx, int) or ctx < 0:
            raise ConfigError.field("analytic.context_len", ctx, "must be a non-negative integer")
        return _decode_stage(_spec_token(self.spec), ctx, self.dtype_bytes, self.decoder_attention == "eager")

    def stage(self, name: str) -> StageCost:
        if name == "vision":
            return self.vision()
        if name == "prefill":
            return self.prefill()
        if name == "decode":
            return self.decode()
        raise ConfigError.field("analytic.stage", name, f"one of {list(STAGES)}")

    def stages(self) -> dict[str, StageCost]:
        return {name: self.stage(name) for name in STAGES}


    def to_dict(self, with_parts: bool = True) -> dict[str, Any]:
        return costs_dict(self, with_parts=with_parts)


def costs_dict(model: DeepseekOCRAnalyticModel, with_parts: bool = True) -> dict[str, Any]:
    """JSON-able data for `costs.json` (write it with `artifacts.write_artifact(path, "costs", 1, ...)`)."""
    return {
        "model": model.spec.name,
        "layout": model.layout.as_dict(),
        "seq_len": model.seq_len,
        "context_len": model.context_len,
        "dtype_bytes": model.dtype_bytes,
        "decoder_attention": model.decoder_attention,
        "conventions": {
            "flops": "2 x multiply-adds; flops_matmul is what torch.utils.flop_counter counts "
                     "(mm/addmm/bmm/conv/sdpa/einsum), flops_other is an analytic estimate of "
                     "elementwise, norm and softmax work (not measured)",
            "io_bytes": "weights read + inputs read + outputs written, once per layer call",
            "weight_bytes": "parameter bytes read, summed over calls (a module called twice reads twice); "
                            "embeddings read only the gathered rows; MoE routed experts: "
                            "min(n_routed, tokens x top_k) experts read",
            "activation_bytes": "bytes of every tensor the eager op sequence produces (outputs and "
                                "materialised intermediates)",
            "units": "tflops = flops / 1e12, io_tb = io_bytes / 1e12, weights_gb and activations_gb = bytes / 1e9",
        },
        "stages": {name: stage.to_dict(with_parts=with_parts) for name, stage in model.stages().items()},
    }


def analytic_costs(spec: ModelSpec, workload: VisionWorkload, width: int, height: int,
                   **kwargs: Any) -> dict[str, StageCost]:
    """The three stage costs of one page (convenience wrapper)."""
    return DeepseekOCRAnalyticModel.for_page(spec, workload, width, height, **kwargs).stages()

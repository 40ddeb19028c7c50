"""Cost formulas of the module classes both DeepSeek-OCR generations run (SAM ViT-B, the linear projector, the
DeepSeek-V2 decoder and the model around it), registered in `analytic.registry` by the vendor's class names
under the `dsocr.` namespace (the twin uses the same ones; DeepSeek-OCR 2's namespace extends it). Each formula is
one call of the class with its shapes: the ops it runs itself, from `analytic.costs`, plus its children, costed
through the registry. A family's vision (v1: SAM -> CLIP -> projector, `dsocr.costs`) plugs in by its spec class
(`register_vision`).

Shapes follow the vendor's forward (deepencoder.py, modeling_deepseekocr.py, modeling_deepseekv2.py
and transformers 4.46's LlamaAttention); `deepseek_ocr_shared.analytic` explains the stage composition. The
derivation of each formula is its registered one-liner; the byte conventions are `analytic.costs`'.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable

from llm_perf_opt.analytic import costs
from llm_perf_opt.analytic.costs import NO_KERNELS, ZERO, K, LayerCost, layer_norm2d_out_bytes, layer_norm_out_bytes
from llm_perf_opt.analytic.execution import CPU, Execution, sdpa_output_layout
from llm_perf_opt.analytic.registry import (
    Children,
    children_node,
    layer_cost,
    module_cost,
    register_children,
    register_cost,
)
from llm_perf_opt.deepseek_ocr_shared.spec import DecoderSpec, SamSpec

# The vision passes of one forward: ((name, batch, side), ...) as `deepseek_ocr_shared.analytic.vision_passes` gives
# them.
Passes = tuple[tuple[str, int, int], ...]


@dataclass(frozen=True)
class AttentionShape:
    """One call of the decoder's self-attention: `q_len` new tokens after `past_len` cached ones."""

    batch: int
    q_len: int
    past_len: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    dtype_bytes: int = 2
    masked: bool = False  # a 2-D attention mask was given (batched generate): a decode step adds its 4-D mask too
    execution: Execution = CPU  # where it runs (CUDA: contiguous inputs with a mask, the SDPA backend)


@dataclass(frozen=True)
class LayerShape:
    """One call of a decoder layer: `attention` is the registry key of its self_attn's class."""

    decoder: DecoderSpec
    moe_layer: bool
    q_len: int
    past_len: int
    attention: str
    dtype_bytes: int = 2
    batch: int = 1  # sequences in the batch (all of `q_len` positions: the prompts are padded to one length)
    masked: bool = False  # a 2-D attention mask was given (`ForwardShape.masked`)
    execution: Execution = CPU  # where it runs (`analytic.execution`)


@dataclass(frozen=True)
class ForwardShape:
    """One forward of the model: the vision passes (none in decode), `q_len` new tokens after `past_len` cached
    ones; `language=False` is the vision part alone (the `vision` stage)."""

    spec: Any  # a DeepSeek-OCR ModelSpec (either generation): `decoder`, and what its vision reads
    passes: Passes
    image_tokens: int
    q_len: int
    past_len: int
    attention: str
    dtype_bytes: int = 2
    language: bool = True
    # Batch (`generate()`'s batched inputs): `batch` sequences padded on the left to `q_len`; the images of
    # sequences 2.. as ((passes, image_tokens, count), ...), identical images once with their count (sequence
    # 1's are `passes`, `image_tokens`);
    # `masked`: the 2-D attention mask and the position ids generate() passes are given (batch > 1).
    batch: int = 1
    more_images: tuple[tuple[Passes, int, int], ...] = ()
    masked: bool = False
    execution: Execution = CPU  # where it runs: CUDA autocast's casts and float32 results, the SDPA backend


def residual_adds(numel: int, b: int) -> LayerCost:
    return costs.elementwise(numel, "add", 2, b).times(2)  # two residual adds


# ---------------------------------------------------------------------------------------- SAM ViT-B
register_cost("dsocr.LayerNorm2d", "SAM's channel LayerNorm written out in elementwise ops: no matmul")(
    costs.layer_norm2d
)
register_children("dsocr.PatchEmbed", "its proj Conv2d, then a permute (a view)")


@register_cost(
    "dsocr.Attention", "SAM attention: qkv, two rel-pos einsums (bmm), SDPA with the rel-pos bias as mask, proj"
)
def sam_attention(
    batch: int,
    h: int,
    w: int,
    dim: int,
    heads: int,
    rel_pos_h_len: int,
    rel_pos_w_len: int,
    dtype_bytes: int = 2,
    in_bytes: int = 0,
    execution: Execution = CPU,
) -> tuple[LayerCost, Children]:
    """SAM `Attention` on (batch, h, w, dim).

    For windowed blocks the caller passes batch = B·windows and h = w = window (windows are cut from
    the grid padded to a multiple of the window); for global blocks the full grid. The rel-pos tables
    are resized (linear interpolation, not a matmul) when their length is not 2·max(h, w) - 1.
    `in_bytes`: the input's element size (0: the model's; float32 under CUDA autocast, after the block's LayerNorm):
    qkv casts it.
    """
    hd = dim // heads
    n = h * w
    bh = batch * heads
    b = dtype_bytes
    own = ZERO
    for length, size in ((rel_pos_h_len, h), (rel_pos_w_len, w)):
        if length != 2 * size - 1:
            own = own + costs.interpolate(hd, (length,), (2 * size - 1,), "linear")
            if b != 4:  # the table's .to(float32) and the resized table's .to(dtype)
                own = own + LayerCost(
                    activation_bytes=length * hd * 4 + (2 * size - 1) * hd * b,
                    kernels=K("copy", 0, length * hd * (b + 4)) + K("copy", 0, (2 * size - 1) * hd * (4 + b)),
                )
        # get_rel_pos' index: two int64 aranges, their float32 scaled copies, the float32 difference and
        # offset (size x size each) and its int64 .long() (q = k = size)
        own = own + LayerCost(
            activation_bytes=2 * size * (8 + 4) + size * size * (4 + 4 + 8),
            # two aranges, two scalings, the difference, the offset, .long(), the table gather
            kernels=K("copy", 0, size * 8, 2)
            + K("elementwise", size, size * 12, 2)
            + K("elementwise", size * size, size * size * 8, 2)
            + K("copy", 0, size * size * 12)
            + K("copy", 0, size * size * (8 + 2 * hd * b)),
        )
    own = own + LayerCost(
        # einsum bhwc,hkc->bhwk (rel_h: B·heads·h·w·h outputs) and bhwc,wkc->bhwk (rel_w: ...·w outputs),
        # both lowered to bmm with hd MACs per output
        flops_matmul=2 * bh * h * w * h * hd + 2 * bh * h * w * w * hd,
        flops_other=bh * n * n,  # attn_bias = rel_h + rel_w broadcast to (B·heads, n, n)
        weight_bytes=(rel_pos_h_len + rel_pos_w_len) * hd * b,  # the two learned tables
        input_bytes=bh * n * hd * b,  # q
        output_bytes=bh * n * n * b,  # the attention bias
        activation_bytes=(h * h + w * w) * hd * b + bh * n * (h + w) * b + bh * n * n * b,  # Rh, Rw, rel_h, rel_w, bias
        kernels=K("gemm", 2 * bh * h * w * h * hd, (bh * n * hd + h * h * hd + bh * n * h) * b, m=w)
        + K("gemm", 2 * bh * h * w * w * hd, (bh * n * hd + w * w * hd + bh * n * w) * b, m=h)
        + K(
            "elementwise", bh * n * n, (bh * n * (h + w) + bh * n * n) * b, out=bh * n * n * b
        ),  # two einsums, the bias sum
    )
    own = own + costs.sdpa(
        batch, heads, n, n, hd, mask=True, fused=True, dtype_bytes=b, backend=execution.sdpa_backend(b, True, hd)
    )
    return own, (
        ("qkv", module_cost("Linear", batch * n, dim, 3 * dim, True, b, in_bytes, execution.cuda_autocast)),
        ("proj", module_cost("Linear", batch * n, dim, dim, True, b)),
    )


@register_cost("dsocr.MLPBlock", "SAM MLP lin2(GELU(lin1(x))): two linears and a GELU module")
def sam_mlp(
    tokens: int, dim: int, hidden: int, dtype_bytes: int = 2, in_bytes: int = 0, autocast: bool = False
) -> tuple[LayerCost, Children]:
    b = dtype_bytes
    return ZERO, (
        ("lin1", module_cost("Linear", tokens, dim, hidden, True, b, in_bytes, autocast)),
        ("act", module_cost("GELU", tokens * hidden, b)),
        ("lin2", module_cost("Linear", tokens, hidden, dim, True, b)),
    )


@register_cost(
    "dsocr.Block",
    "SAM block: norm1, attn (windowed: on the grid padded to a multiple of the window), "
    "residual, norm2, MLP on the unpadded grid, residual",
)
def sam_block(
    sam: SamSpec, batch: int, grid: int, window: int, dtype_bytes: int = 2, execution: Execution = CPU
) -> tuple[LayerCost, Children]:
    """One SAM `Block` on (batch, grid, grid, width); `window` 0 for a global block. Under CUDA autocast the norms'
    outputs are float32 (`costs.layer_norm`): the windows are cut, padded and copied in float32, and qkv and lin1
    cast them back."""
    b, ac = dtype_bytes, execution.cuda_autocast
    a = layer_norm_out_bytes(b, ac)  # the norms' output: what the attention and the MLP get
    width, tokens = sam.width, batch * grid * grid
    own = ZERO
    if window:
        padded = math.ceil(grid / window) * window  # window_partition pads H and W up to a multiple
        windows = (padded // window) ** 2
        attn = module_cost(
            "dsocr.Attention",
            batch * windows,
            window,
            window,
            width,
            sam.heads,
            2 * window - 1,
            2 * window - 1,
            b,
            a if a != b else 0,
            execution=execution,
        )
        pad_elems = batch * padded * padded * width
        # partition permute().contiguous() (of the norm's output) and unpartition copy (of the attention's); with
        # padding also F.pad (of the norm's output) and the crop copy
        copies = pad_elems * (a + b) + (pad_elems * a + tokens * width * b if padded != grid else 0)
        # partition and unpartition .contiguous(); with padding F.pad and the crop's .contiguous()
        own = own + LayerCost(
            activation_bytes=copies,
            kernels=K("copy", 0, 2 * pad_elems * a)
            + K("copy", 0, 2 * pad_elems * b)
            + (
                K("copy", 0, (tokens * width + pad_elems) * a) + K("copy", 0, (tokens * width + pad_elems) * b)
                if padded != grid
                else NO_KERNELS
            ),
        )
    else:
        attn = module_cost(
            "dsocr.Attention",
            batch,
            grid,
            grid,
            width,
            sam.heads,
            2 * sam.pos_grid - 1,
            2 * sam.pos_grid - 1,
            b,
            a if a != b else 0,
            execution=execution,
        )
    own = own + residual_adds(tokens * width, b)
    # the residual stream keeps the patch embedding's permuted layout ((B, C, H, W) memory seen as (B, H, W, C): the
    # adds follow their first input's strides), so each norm's native_layer_norm copies its input contiguous: on
    # CUDA (the H200 traces: 5 kernels per SAM norm, the 5th a strided copy of the float32 input, 12 of 12 blocks)
    # and on the CPU (torch.profiler: a clone's copy_ of the (B, H, W, C) input inside every norm of every block)
    norm = module_cost("LayerNorm", tokens, width, b, 0, ac, strided=True)
    return own, (
        ("norm1", norm),
        ("attn", attn),
        ("norm2", norm),
        ("mlp", module_cost("dsocr.MLPBlock", tokens, width, sam.mlp_dim, b, a if a != b else 0, ac)),
    )


def sam_grids(sam: SamSpec, side: int) -> tuple[int, int, int]:
    """(patch grid, net_2 grid, net_3 grid = the output grid) for images of `side` pixels."""
    grid = costs.conv_out(side, sam.patch_size, sam.patch_size, 0)
    g2 = costs.conv_out(grid, 3, 2, 1)
    return grid, g2, costs.conv_out(g2, 3, 2, 1)


@register_cost(
    "dsocr.ImageEncoderViT",
    "SAM: patch conv, position table (bicubic resize when the grid is not the "
    "pretraining one) added, blocks, neck, net_2, net_3",
)
def sam_encoder(
    sam: SamSpec, batch: int, side: int, dtype_bytes: int = 2, execution: Execution = CPU
) -> tuple[LayerCost, Children]:
    """SAM on `batch` images of side `side` (output grid: `sam_grids(...)[2]`). Under CUDA autocast the neck's
    LayerNorm2d outputs are float32 (`costs.layer_norm2d`): the convolution after each casts it back."""
    b, ac = dtype_bytes, execution.cuda_autocast
    n2d = layer_norm2d_out_bytes(b, ac)
    after_norm = n2d if n2d != b else 0  # the input size of a convolution after a LayerNorm2d (0: the model's)
    grid, g2, g3 = sam_grids(sam, side)
    own = costs.elementwise(batch * grid * grid * sam.width, "add", 2, b)  # x + pos_embed
    if grid != sam.pos_grid:
        own = own + costs.interpolate(sam.width, (sam.pos_grid, sam.pos_grid), (grid, grid), "bicubic", antialias=True)
        # get_abs_pos_sam: the table's .to(float32) copy (4 B) and the resized table's .to(dtype), when b != 4
        own = own + LayerCost(
            activation_bytes=(sam.pos_grid**2 * 4 + grid * grid * b) * sam.width if b != 4 else 0,
            kernels=K("copy", 0, (sam.pos_grid**2 + grid * grid) * (4 + b) * sam.width, 1).times(2 if b != 4 else 0),
        )
    blocks = tuple(
        (
            str(i),
            module_cost(
                "dsocr.Block",
                sam,
                batch,
                grid,
                0 if i in sam.global_attn_indexes else sam.window_size,
                b,
                execution=execution,
            ),
        )
        for i in range(sam.depth)
    )
    c0 = sam.out_chans
    c1, c2 = sam.downsample_channels
    neck = children_node(
        "Sequential",
        (
            ("0", module_cost("Conv2d", batch, sam.width, c0, grid, grid, 1, 1, 0, False, b, 0, ac)),
            ("1", module_cost("dsocr.LayerNorm2d", batch, c0, grid, grid, b, ac)),
            ("2", module_cost("Conv2d", batch, c0, c0, grid, grid, 3, 1, 1, False, b, after_norm, ac)),
            ("3", module_cost("dsocr.LayerNorm2d", batch, c0, grid, grid, b, ac)),
        ),
    )
    own = own + LayerCost(
        activation_bytes=batch * c1 * g2 * g2 * b,  # x2.clone()
        kernels=K("copy", 0, 2 * batch * c1 * g2 * g2 * b),
    )
    patch = module_cost("Conv2d", batch, 3, sam.width, side, side, sam.patch_size, sam.patch_size, 0, True, b, 0, ac)
    return own, (
        ("patch_embed", children_node("dsocr.PatchEmbed", (("proj", patch),))),
        ("blocks", children_node("ModuleList", blocks, container=True)),
        ("neck", neck),
        ("net_2", module_cost("Conv2d", batch, c0, c1, grid, grid, 3, 2, 1, False, b, after_norm, ac)),
        ("net_3", module_cost("Conv2d", batch, c1, c2, g2, g2, 3, 2, 1, False, b, 0, ac)),
    )


@register_cost("dsocr.MlpProjector", "linear projector: one Linear(input_dim, n_embed) with bias over the image rows")
def projector(
    tokens: int, input_dim: int, n_embed: int, dtype_bytes: int = 2, in_bytes: int = 0, autocast: bool = False
) -> tuple[LayerCost, Children]:
    """`in_bytes`: the input's element size (0: the model's; float32 under CUDA autocast, as CLIP's output is)."""
    return ZERO, (("layers", module_cost("Linear", tokens, input_dim, n_embed, True, dtype_bytes, in_bytes, autocast)),)


# ------------------------------------------------------------------------------------------ decoder
register_cost(
    "dsocr.DeepseekV2RMSNorm", "float32 x·rsqrt(mean(x²)+eps)·weight: no matmul, 4 elementwise FLOPs per element"
)(costs.rms_norm)
register_cost(
    "dsocr.LlamaRotaryEmbedding", "cos/sin table rebuilt per call: one bmm (B, d/2, 1)·(B, 1, T), then cos and sin"
)(costs.rotary_table)


def _llama_attention(s: AttentionShape, fused: bool) -> tuple[LayerCost, Children]:
    """q/k/v projections, RoPE, attention of the `q_len` new queries over `past_len` cached + `q_len` new
    keys (full Q·Kᵀ, the causal mask is added, not skipped), o_proj. With a cache, DynamicCache.update
    concatenates, writing the grown cache.

    One new token (a decode step) has no mask: with no 2-D attention mask, transformers'
    `_prepare_4d_causal_attention_mask` returns None for a query length of 1, so nothing is added
    (the project's greedy loop passes none; `generate()` passes an all-ones 2-D mask, which would add
    a 1 x kv mask per layer and step: heads x kv more elementwise adds).

    The SDPA core (`fused`) on CUDA with a mask makes q, k and v contiguous first (transformers 4.46: the
    memory-efficient kernel wanted it): q (RoPE's result keeps the (B, T, H, d) order of the projection it came from)
    copies when it has more than one position and head, k and v when they are the new keys themselves (no cache
    before them: a cache's cat is contiguous) with more than one position and head and no grouped-query repeat (its
    reshape already copied). `out.transpose(1, 2).contiguous()` copies when the backend's result is (B, H, T, d)
    ordered (`analytic.execution.sdpa_output_layout`): eager attention's matmul, cuDNN after a contiguous query, CUDA's
    math backend; not the CPU kernel on RoPE's (B, T, H, d)-ordered query, nor CUDA's flash or memory-efficient ones."""
    batch, q_len, past_len, hidden, heads = s.batch, s.q_len, s.past_len, s.hidden, s.heads
    kv_heads, head_dim, b = s.kv_heads, s.head_dim, s.dtype_bytes
    ex = s.execution
    kv = past_len + q_len
    mask = q_len > 1 or s.masked
    backend = ex.sdpa_backend(b, mask, head_dim) if fused else ""
    own = costs.rope_apply(batch, q_len, heads, kv_heads, head_dim, b) + costs.sdpa(
        batch, heads, q_len, kv, head_dim, kv_heads=kv_heads, mask=mask, fused=fused, dtype_bytes=b, backend=backend
    )
    if past_len:
        cache = 2 * batch * kv_heads * kv * head_dim * b  # torch.cat(past, new) for k and v
        own = own + LayerCost(
            output_bytes=cache, activation_bytes=cache, kernels=K("copy", 0, 2 * cache // 2, 2)
        )  # the two cats (k, v)
    q_contiguous = q_len == 1 or heads == 1
    if fused and ex.cuda and mask:  # sdpa_core: q, k, v .contiguous() on CUDA with a mask
        q_elems = batch * q_len * heads * head_dim if not q_contiguous else 0
        new_kv = past_len == 0 and q_len > 1 and kv_heads > 1 and kv_heads == heads
        kv_elems = 2 * batch * q_len * kv_heads * head_dim if new_kv else 0
        own = own + LayerCost(
            activation_bytes=(q_elems + kv_elems) * b,
            kernels=K("copy", 0, 2 * q_elems * b, 1 if q_elems else 0)
            + K("copy", 0, kv_elems * b, 2 if kv_elems else 0),
        )
        q_contiguous = True
    out_copies = q_len > 1 and (not fused or sdpa_output_layout(backend, q_contiguous) == "bhtd")
    if out_copies:  # out.transpose(1, 2).contiguous() copies (B, H, T, d) -> (B, T, H, d); one token is a view
        own = own + LayerCost(
            activation_bytes=batch * q_len * heads * head_dim * b,
            kernels=K("copy", 0, 2 * batch * q_len * heads * head_dim * b),
        )
    rows = batch * q_len
    return own, (
        ("q_proj", module_cost("Linear", rows, hidden, heads * head_dim, False, b)),
        ("k_proj", module_cost("Linear", rows, hidden, kv_heads * head_dim, False, b)),
        ("v_proj", module_cost("Linear", rows, hidden, kv_heads * head_dim, False, b)),
        ("rotary_emb", module_cost("dsocr.LlamaRotaryEmbedding", batch, q_len, head_dim, b)),
        ("o_proj", module_cost("Linear", rows, heads * head_dim, hidden, False, b)),
    )


@register_cost(
    "dsocr.LlamaAttention",
    "eager attention: q/k/v/o projections, rotary table, RoPE, Q·Kᵀ + causal mask, "
    "float32 softmax, P·V over cached + new keys (scores materialised)",
)
def llama_attention(shape: AttentionShape) -> tuple[LayerCost, Children]:
    return _llama_attention(shape, False)


@register_cost(
    "dsocr.LlamaSdpaAttention",
    "as LlamaAttention with a fused SDPA kernel: the same FLOPs, only the output of the attention core materialised",
)
def llama_sdpa_attention(shape: AttentionShape) -> tuple[LayerCost, Children]:
    return _llama_attention(shape, True)


register_cost("dsocr.LlamaFlashAttention2", "as LlamaSdpaAttention (a fused kernel: the same FLOPs and bytes)")(
    llama_sdpa_attention
)


@register_cost(
    "dsocr.DeepseekV2MLP",
    "down_proj(SiLU(gate_proj(x)) · up_proj(x)): three bias-free linears, an activation module and one multiply",
)
def gated_mlp(tokens: int, hidden: int, intermediate: int, dtype_bytes: int = 2) -> tuple[LayerCost, Children]:
    b = dtype_bytes
    return costs.elementwise(tokens * intermediate, "mul", 2, b), (  # act(gate) · up
        ("gate_proj", module_cost("Linear", tokens, hidden, intermediate, False, b)),
        ("up_proj", module_cost("Linear", tokens, hidden, intermediate, False, b)),
        ("act_fn", module_cost("SiLU", tokens * intermediate, b)),
        ("down_proj", module_cost("Linear", tokens, intermediate, hidden, False, b)),
    )


@register_cost(
    "dsocr.MoEGate",
    "F.linear(x.float(), w.float()) (T x hidden x E; in the autocast dtype under autocast) + float32 softmax + top-k",
)
def moe_gate(
    tokens: int, hidden: int, n_routed: int, dtype_bytes: int = 2, top_k: int = 0, execution: Execution = CPU
) -> LayerCost:
    """Under CUDA autocast (a 16-bit model) the linear is a lower-precision op: its two float32 inputs are cast back
    to the model's dtype inside the call, and the softmax's `dtype=float32` converts the 16-bit logits inside its own
    (`analytic.autocast`)."""
    b = dtype_bytes
    # F.linear(x.float(), w.float()): in float32 when the model is; a bf16/fp16 model runs under autocast
    # (as the vendor's infer() does), which computes the linear in that dtype: bf16 logits (found against
    # TorchLens on the vendor's bf16 run), reading the b-byte parameter
    gate = costs.linear(tokens, hidden, n_routed, False, b)
    gate = gate + LayerCost(
        weight_bytes=0,
        # float32 copies of x and of the gate weight; top-k's float32 weights and int64 ids (T x k each),
        # and the weights x routed_scaling_factor (a new float32 T x k tensor, even at scale 1.0)
        activation_bytes=(tokens * hidden * 4 if b != 4 else 0)
        + (hidden * n_routed * 4 if b != 4 else 0)
        + tokens * top_k * (4 + 8 + 4),
        # top-k (one kernel, two outputs), × routed_scaling_factor; the two float32 casts when b != 4
        kernels=K("reduction", 0, tokens * n_routed * 4 + tokens * top_k * 12)
        + K("elementwise", tokens * top_k, 8 * tokens * top_k)
        + (
            K("copy", 0, tokens * hidden * (4 + b)) + K("copy", 0, hidden * n_routed * (4 + b))
            if b != 4
            else NO_KERNELS
        ),
    )
    if execution.cuda_autocast and b != 4:
        gate = gate + LayerCost(
            kernels=costs.casts((tokens * hidden, 4, b), (hidden * n_routed, 4, b), (tokens * n_routed, b, 4))
        )
    return gate + costs.softmax(tokens, n_routed, 4)


@register_cost(
    "dsocr.DeepseekV2MoE",
    "gate; every token through exactly top_k routed experts (one DeepseekV2MLP over "
    "T·top_k rows, whatever the routing); shared experts on all tokens",
)
def moe(
    decoder: DecoderSpec, tokens: int, dtype_bytes: int = 2, execution: Execution = CPU
) -> tuple[LayerCost, Children]:
    """DeepseekV2MoE in inference (`moe_infer`).

    The Python loop only splits the T·top_k routed rows among the experts that received any, so the
    routed work does not depend on the routing; the `experts` ModuleList carries it as one aggregate
    (its entries are not costed one by one). Routed weight bytes assume min(E, T·top_k) distinct
    experts are read once each — exact for one token, an upper bound otherwise.
    """
    b = dtype_bytes
    d = decoder
    hidden, top_k = d.hidden_size, d.num_experts_per_tok
    routed_tokens = tokens * top_k
    routed = layer_cost("dsocr.DeepseekV2MLP", routed_tokens, hidden, d.moe_intermediate_size, b)
    experts_read = min(d.n_routed_experts, routed_tokens)
    # the kernels: each expert that gets rows runs its MLP once (5 kernels), on about routed_tokens / experts rows
    per_expert = layer_cost(
        "dsocr.DeepseekV2MLP", max(1, routed_tokens // max(1, experts_read)), hidden, d.moe_intermediate_size, b
    )
    routed = LayerCost(
        routed.flops_matmul,
        routed.flops_other,
        experts_read * 3 * hidden * d.moe_intermediate_size * b,
        routed.input_bytes,
        routed.output_bytes,
        routed.activation_bytes,
        per_expert.kernels.times(experts_read),
    )
    experts = d.n_routed_experts
    own = LayerCost(
        flops_other=2 * routed_tokens * hidden,  # × top-k weight and sum over k
        input_bytes=tokens * hidden * b,
        output_bytes=tokens * hidden * b,
        # sorted token copy (gather), concatenated expert outputs, scatter-back buffer (empty_like), the
        # float32 weighted copy (.type(float32): none when already float32, the multiply is in place), the
        # float32 sum over k and its cast back (when b != 4); int64 bookkeeping: the T x E hit matrix
        # (new_zeros), tokens per expert (sum), argsort of the T·k slots and their token index (// k)
        activation_bytes=(
            3 * routed_tokens * hidden * b
            + (routed_tokens * hidden * 4 if b != 4 else 0)
            + tokens * hidden * 4
            + (tokens * hidden * b if b != 4 else 0)
            + 8 * (tokens * experts + experts + 2 * routed_tokens)
        ),
        # new_zeros, scatter_, sum (load), argsort, // k, the token gather, cat of the expert outputs, the
        # scatter back (index_put), mul_ by the weights, the sum over k; the two casts (.type) when b != 4.
        # `tokens_per_expert.cpu()`: one host sync per MoE layer
        kernels=K("copy", 0, tokens * experts * 8)
        + K("copy", 0, routed_tokens * 16 + tokens * experts * 8)
        + K("reduction", tokens * experts, tokens * experts * 8)
        + K("reduction", 0, routed_tokens * 16)
        + K("elementwise", routed_tokens, routed_tokens * 16)
        + K("copy", 0, 2 * routed_tokens * hidden * b + routed_tokens * 8, 3)
        + K("elementwise", routed_tokens * hidden, routed_tokens * hidden * 8)
        + K("reduction", routed_tokens * hidden, (routed_tokens + tokens) * hidden * 4)
        + (
            K("copy", 0, routed_tokens * hidden * (4 + b)) + K("copy", 0, tokens * hidden * (4 + b))
            if b != 4
            else NO_KERNELS
        ),
        syncs=1,
    )
    if execution.cuda:  # `tokens_per_expert.cpu()` of a CUDA tensor: a device-to-host copy of E int64 (a no-op on CPU)
        own = own + LayerCost(activation_bytes=experts * 8, kernels=K("copy", 0, 2 * experts * 8))
    children: Children = (
        ("gate", module_cost("dsocr.MoEGate", tokens, hidden, d.n_routed_experts, b, top_k, execution=execution)),
        ("experts", children_node("ModuleList", (), container=True, own=routed)),
    )
    if d.n_shared_experts:
        shared = module_cost("dsocr.DeepseekV2MLP", tokens, hidden, d.shared_intermediate_size, b)
        children += (("shared_experts", shared),)
        own = own + costs.elementwise(tokens * hidden, "add", 2, b)  # y + shared_experts(identity)
    return own, children


@register_cost(
    "dsocr.DeepseekV2DecoderLayer",
    "input RMSNorm, self-attention, residual, post-attention RMSNorm, dense MLP or MoE, residual",
)
def decoder_layer(shape: LayerShape) -> tuple[LayerCost, Children]:
    """One decoder layer on `q_len` new tokens after `past_len` cached ones; `attention` is the class of
    its self_attn (LlamaAttention for eager, LlamaSdpaAttention, LlamaFlashAttention2)."""
    d, q_len, b = shape.decoder, shape.q_len, shape.dtype_bytes
    rows = shape.batch * q_len  # the MLP / MoE flatten the batch: every position of every sequence is a row
    attn = module_cost(
        shape.attention,
        AttentionShape(
            shape.batch,
            q_len,
            shape.past_len,
            d.hidden_size,
            d.num_heads,
            d.num_kv_heads,
            d.head_dim,
            b,
            shape.masked,
            shape.execution,
        ),
    )
    if shape.moe_layer:
        mlp = module_cost("dsocr.DeepseekV2MoE", d, rows, b, execution=shape.execution)
    else:
        mlp = module_cost("dsocr.DeepseekV2MLP", rows, d.hidden_size, d.intermediate_size, b)
    return residual_adds(rows * d.hidden_size, b), (
        ("input_layernorm", module_cost("dsocr.DeepseekV2RMSNorm", rows, d.hidden_size, b)),
        ("self_attn", attn),
        ("post_attention_layernorm", module_cost("dsocr.DeepseekV2RMSNorm", rows, d.hidden_size, b)),
        ("mlp", mlp),
    )


# ---------------------------------------------------------------------------------------- the model
# A family's vision (its passes and the glue its model's forward adds), by the class of its ModelSpec: v1 registers
# SAM -> CLIP -> projector (`dsocr.costs`); the decoder side below is the same for both generations.
VisionCost = Callable[[ForwardShape], tuple[LayerCost, Children]]
VISION: dict[type, VisionCost] = {}


def register_vision(spec_class: type, vision: VisionCost) -> None:
    """`vision(shape)`: the vision of every sequence's image in one forward of a `spec_class` model."""
    VISION[spec_class] = vision


@register_cost(
    "dsocr.DeepseekOCRModel",
    "embed_tokens, the vision passes scattered into the embeddings, decoder layers, "
    "norm; own: the vision glue, position ids and the 4-D causal mask",
)
def ocr_model(shape: ForwardShape) -> tuple[LayerCost, Children]:
    """One forward on `q_len` new tokens after `past_len` cached ones; vision runs for the given passes
    (none in decode). `language=False`: the vision part alone (the `vision` stage)."""
    spec, q_len, past_len, b = shape.spec, shape.q_len, shape.past_len, shape.dtype_bytes
    own, vision = VISION[type(spec)](shape) if shape.passes else (ZERO, ())
    if not shape.language:
        return own, vision
    d = spec.decoder
    layers = tuple(
        (
            str(i),
            module_cost(
                "dsocr.DeepseekV2DecoderLayer",
                LayerShape(
                    d,
                    d.is_moe_layer(i),
                    q_len,
                    past_len,
                    shape.attention,
                    b,
                    shape.batch,
                    shape.masked,
                    shape.execution,
                ),
            ),
        )
        for i in range(d.num_layers)
    )
    # position ids (int64), and transformers' _make_causal_mask: torch.full (float32 T x T), arange and
    # arange + 1 (int64), their comparison (bool T x T; masked_fill_ is in place), .to(dtype) when b != 4,
    # and with a cache the zeros (T x past) and their cat (T x (past + T)). One new token: no mask at all
    # (no 2-D attention mask given; see _llama_attention).
    t, pl = q_len, past_len
    mask = t * t * 4 + 2 * t * 8 + t * t + (t * t * b if b != 4 else 0) + (t * pl * b + t * (pl + t) * b if pl else 0)
    mask = mask if t > 1 else 0
    mask_kernels = (
        (
            K("copy", 0, t * t * 4)
            + K("copy", 0, t * 8)
            + K("elementwise", t, t * 16, 2)
            + K("copy", 0, t * t * 5)
            + (K("copy", 0, t * t * (4 + b)) if b != 4 else NO_KERNELS)
            + (K("copy", 0, t * pl * b) + K("copy", 0, 2 * t * (pl + t) * b) if pl else NO_KERNELS)
        )
        if t > 1
        else NO_KERNELS
    )
    # position ids (arange); the mask: full, arange, arange + 1 and < (elementwise), masked_fill_, .to(dtype)
    # when b != 4, with a cache zeros and cat
    if shape.masked:  # generate()'s inputs: position ids given (no arange), the 2-D mask expanded
        own = own + LayerCost(
            activation_bytes=mask + _padding_mask_bytes(shape.batch, t, pl + t, b),
            kernels=mask_kernels + _padding_mask_kernels(shape.batch, t, pl + t, b),
        )
    else:
        own = own + LayerCost(activation_bytes=t * 8 + mask, kernels=K("copy", 0, t * 8) + mask_kernels)
    rows = shape.batch * q_len
    return own, (
        ("embed_tokens", module_cost("Embedding", rows, d.vocab_size, d.hidden_size, b)),
        *vision,
        ("layers", children_node("ModuleList", layers, container=True)),
        ("norm", module_cost("dsocr.DeepseekV2RMSNorm", rows, d.hidden_size, b)),
    )


def _padding_mask_bytes(batch: int, t: int, kv: int, b: int) -> int:
    """transformers' AttentionMaskConverter.to_4d on a 2-D (B, kv) mask: _expand_mask's `.to(dtype)`,
    `1.0 - x`, `.to(bool)` and `masked_fill` (B x t x kv each); with the causal mask (t > 1) also
    `.bool()` of that and the causal mask's `masked_fill` into a new (B, 1, t, kv) tensor."""
    n = batch * t * kv
    return n * (3 * b + 1) + (n * (b + 1) if t > 1 else 0)


def _padding_mask_kernels(batch: int, t: int, kv: int, b: int):
    n = batch * t * kv
    k = (
        K("copy", 0, n * (8 + b))
        + K("elementwise", n, 2 * n * b)
        + K("copy", 0, n * (b + 1))
        + K("copy", 0, n * (2 * b + 1))
    )
    return k + (K("copy", 0, n * (b + 1)) + K("copy", 0, n * (2 * b + 1)) if t > 1 else NO_KERNELS)


@register_cost("dsocr.DeepseekOCRForCausalLM", "the model, then lm_head over every new position and logits.float()")
def ocr_causal_lm(shape: ForwardShape) -> tuple[LayerCost, Children]:
    b, rows = shape.dtype_bytes, shape.batch * shape.q_len
    model = module_cost("dsocr.DeepseekOCRModel", shape)
    if not shape.language:
        return ZERO, (("model", model),)
    d = shape.spec.decoder
    logits = (
        LayerCost(
            input_bytes=rows * d.vocab_size * b,  # logits.float(): reads lm_head's logits
            activation_bytes=rows * d.vocab_size * 4,  # ... and writes a float32 copy
            kernels=K("copy", 0, rows * d.vocab_size * (4 + b), out=rows * d.vocab_size * 4),
        )
        if b != 4
        else ZERO
    )
    return logits, (("model", model), ("lm_head", module_cost("Linear", rows, d.hidden_size, d.vocab_size, False, b)))

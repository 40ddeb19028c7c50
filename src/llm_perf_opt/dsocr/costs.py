"""Cost formulas of DeepSeek-OCR v1's own module classes (CLIP-L fed with SAM features), registered in
`analytic.registry` under the `dsocr.` namespace, and v1's vision (SAM -> CLIP -> projector per pass, and the glue
`DeepseekOCRModel.forward` adds), registered for v1's `ModelSpec` (`deepseek_ocr_shared.costs.register_vision`).
The classes both generations share (SAM, the projector, the decoder, the model) are `deepseek_ocr_shared.costs`.
"""

from __future__ import annotations

import math

from llm_perf_opt.analytic import costs
from llm_perf_opt.analytic.autocast import computes_in as autocast_computes_in
from llm_perf_opt.analytic.costs import NO_KERNELS, ZERO, K, LayerCost, layer_norm_out_bytes
from llm_perf_opt.analytic.execution import CPU, Execution
from llm_perf_opt.analytic.registry import (
    Children,
    called_through_forward,
    children_node,
    module_cost,
    register_children,
    register_cost,
)
from llm_perf_opt.analytic.stage import repeated
from llm_perf_opt.deepseek_ocr_shared.costs import ForwardShape, Passes, register_vision, residual_adds, sam_grids
from llm_perf_opt.dsocr.spec import ClipSpec, ModelSpec


# ------------------------------------------------------------------------------------------- CLIP-L
@register_cost(
    "dsocr.CLIPVisionEmbeddings",
    "class token cat, the 257-entry position table (bicubic resize when "
    "the grid is not 16x16) gathered and added: no matmul",
)
def clip_embeddings(clip: ClipSpec, batch: int, tokens: int, dtype_bytes: int = 2) -> tuple[LayerCost, Children]:
    b = dtype_bytes
    src = math.isqrt(clip.num_positions - 1)
    tgt = math.isqrt(tokens)  # get_abs_pos: int(sqrt(N))
    own = LayerCost(
        activation_bytes=batch * tokens * clip.width * b,  # cat(class token, patches)
        kernels=K("copy", 0, 2 * batch * tokens * clip.width * b),
    )
    if src != tgt:
        own = own + costs.interpolate(clip.width, (src, src), (tgt, tgt), "bicubic", antialias=True)
        own = own + LayerCost(
            activation_bytes=tokens * clip.width * b,  # cat(cls, resized table)
            kernels=K("copy", 0, 2 * tokens * clip.width * b),
        )
        # get_abs_pos: permute(...).contiguous() copy of the source grid; its .to(float32) and the
        # resized grid's .to(dtype) when b != 4
        own = own + LayerCost(
            activation_bytes=src * src * clip.width * b
            + ((src * src * 4 + tgt * tgt * b) * clip.width if b != 4 else 0),
            kernels=K("copy", 0, 2 * src * src * clip.width * b)
            + K("copy", 0, (src * src + tgt * tgt) * (4 + b) * clip.width).times(2 if b != 4 else 0),
        )
    own = own + costs.elementwise(batch * tokens * clip.width, "add", 2, b)
    table = module_cost("Embedding", clip.num_positions, clip.num_positions, clip.width, b)
    return own, (("position_embedding", table),)


@register_cost("dsocr.NoTPAttention", "CLIP attention: qkv_proj, SDPA without mask, out_proj")
def clip_attention(
    batch: int, tokens: int, dim: int, heads: int, dtype_bytes: int = 2, in_bytes: int = 0, execution: Execution = CPU
) -> tuple[LayerCost, Children]:
    """`in_bytes`: the input's element size (0: the model's; float32 under CUDA autocast: qkv_proj casts it)."""
    b = dtype_bytes
    hd = dim // heads
    core = costs.sdpa(
        batch,
        heads,
        tokens,
        tokens,
        hd,
        mask=False,
        fused=True,
        dtype_bytes=b,
        backend=execution.sdpa_backend(b, False, hd),
    )
    return core, (
        ("qkv_proj", module_cost("Linear", batch * tokens, dim, 3 * dim, True, b, in_bytes, execution.cuda_autocast)),
        ("out_proj", module_cost("Linear", batch * tokens, dim, dim, True, b)),
    )


@register_cost("dsocr.NoTPFeedForward", "CLIP FFN fc2(quick_gelu(fc1(x))); quick_gelu is a scripted function: own work")
def clip_feed_forward(
    tokens: int, dim: int, hidden: int, dtype_bytes: int = 2, in_bytes: int = 0, autocast: bool = False
) -> tuple[LayerCost, Children]:
    """`in_bytes`, `autocast`: the input's element size and CUDA autocast (fc1 casts a float32 input)."""
    b = dtype_bytes
    # x·sigmoid(1.702·x) as three eager ops: 1.702·x and its sigmoid are materialised before the product
    gelu = costs.elementwise(tokens * hidden, "quick_gelu", 1, b) + LayerCost(activation_bytes=2 * tokens * hidden * b)
    return gelu, (
        ("fc1", module_cost("Linear", tokens, dim, hidden, True, b, in_bytes, autocast)),
        ("fc2", module_cost("Linear", tokens, hidden, dim, True, b)),
    )


@register_cost(
    "dsocr.NoTPTransformerBlock",
    "CLIP block: layer_norm1, self_attn, residual, layer_norm2, mlp, residual; "
    "self_attn and mlp are called through .forward (their own work is the block's)",
)
def clip_block(
    clip: ClipSpec, batch: int, tokens: int, dtype_bytes: int = 2, execution: Execution = CPU
) -> tuple[LayerCost, Children]:
    """Under CUDA autocast the residual stream is float32 (`clip_model`): the norms read and return float32, qkv_proj
    and fc1 cast it, and each residual add of the float32 stream and a 16-bit branch is float32."""
    b, ac = dtype_bytes, execution.cuda_autocast
    a = layer_norm_out_bytes(b, ac)  # the residual stream's and the norms' element size
    rows = batch * tokens
    attn_own, attn = called_through_forward(
        module_cost("dsocr.NoTPAttention", batch, tokens, clip.width, clip.heads, b, a if a != b else 0, execution)
    )
    mlp_own, mlp = called_through_forward(
        module_cost("dsocr.NoTPFeedForward", rows, clip.width, clip.ffn_dim, b, a if a != b else 0, ac)
    )
    adds = (
        residual_adds(rows * clip.width, b)
        if a == b
        else costs.elementwise(rows * clip.width, "add", 2, a, a + b).times(2)
    )
    norm = module_cost("LayerNorm", rows, clip.width, b, a if a != b else 0, ac)
    return attn_own + mlp_own + adds, (
        ("layer_norm1", norm),
        ("self_attn", attn),
        ("layer_norm2", norm),
        ("mlp", mlp),
    )


register_children("dsocr.NoTPTransformer", "its layers, in order")


@register_cost(
    "dsocr.VitModel",
    "CLIP on SAM features as patch embeddings: embeddings, pre-LayerNorm, the transformer; no work of its own",
)
def clip_model(
    clip: ClipSpec, batch: int, grid: int, dtype_bytes: int = 2, execution: Execution = CPU
) -> tuple[LayerCost, Children]:
    """CLIP's output element size is `clip_out_bytes`: under CUDA autocast the pre-LayerNorm returns float32, and the
    residual stream it starts stays float32 to the end (each block adds 16-bit branches to it)."""
    b, ac = dtype_bytes, execution.cuda_autocast
    tokens = grid * grid + 1  # class token + SAM features as patches
    layer = module_cost("dsocr.NoTPTransformerBlock", clip, batch, tokens, b, execution=execution)
    layers = children_node("ModuleList", tuple((str(i), layer) for i in range(clip.layers)), container=True)
    return ZERO, (
        ("embeddings", module_cost("dsocr.CLIPVisionEmbeddings", clip, batch, tokens, b)),
        ("pre_layrnorm", module_cost("LayerNorm", batch * tokens, clip.width, b, 0, ac)),
        ("transformer", children_node("dsocr.NoTPTransformer", (("layers", layers),))),
    )


def clip_out_bytes(dtype_bytes: int, execution: Execution = CPU) -> int:
    """Element bytes of CLIP's output: float32 under CUDA autocast (its residual stream), else the model's."""
    return layer_norm_out_bytes(dtype_bytes, execution.cuda_autocast)


def _vision_batch(shape: ForwardShape) -> tuple[LayerCost, Children]:
    """The vision of every sequence's image, in the forward's loop over the images (one image per sequence);
    `count` identical images are priced once and counted `count` times (`stage.repeated`)."""
    own, children = _vision(shape.spec, shape.passes, shape.image_tokens, shape.dtype_bytes, execution=shape.execution)
    for passes, tokens, count in shape.more_images:
        o, c = _vision(shape.spec, passes, tokens, shape.dtype_bytes, first=False, execution=shape.execution)
        own, children = own + o.times(count), children + tuple((name, repeated(n, count)) for name, n in c)
    return own, children


def _vision(
    spec: ModelSpec, passes: Passes, image_tokens: int, b: int, first: bool = True, execution: Execution = CPU
) -> tuple[LayerCost, Children]:
    """SAM → CLIP → projector for each vision pass, and the glue `DeepseekOCRModel.forward` adds. `first`:
    the batch's first image, which also carries the forward's one check of `images[0][1]`. Under CUDA autocast CLIP's
    output is float32 (`clip_out_bytes`): the cat with SAM's 16-bit features is float32 (type promotion), and the
    projector's linear casts it."""
    ac = execution.cuda_autocast
    c = clip_out_bytes(b, execution)
    children: Children = ()
    own = ZERO
    p = spec.projector
    glue_tokens = 0  # image-token rows the glue materialises (x hidden x b)
    global_grid = sam_grids(spec.sam, passes[-1][2])[2] if passes else 0
    for name, batch, side in passes:
        grid = sam_grids(spec.sam, side)[2]
        rows = batch * grid * grid
        children += (
            ("sam_model", module_cost("dsocr.ImageEncoderViT", spec.sam, batch, side, b, execution=execution)),
            ("vision_model", module_cost("dsocr.VitModel", spec.clip, batch, grid, b, execution=execution)),
            ("projector", module_cost("dsocr.MlpProjector", rows, p.input_dim, p.n_embed, b, c if c != b else 0, ac)),
        )
        # cat(CLIP without class token, flattened SAM) -> (B, g², input_dim), in CLIP's output dtype (the wider)
        if c == b:
            own = own + LayerCost(
                activation_bytes=rows * p.input_dim * b, kernels=K("copy", 0, 2 * rows * p.input_dim * b)
            )
        else:
            sam_dim = p.input_dim - spec.clip.width
            own = own + LayerCost(
                activation_bytes=rows * p.input_dim * c,
                kernels=K(
                    "copy", 0, rows * (spec.clip.width * c + sam_dim * b + p.input_dim * c), out=rows * p.input_dim * c
                ),
            )
        if name == "crops":  # the crops re-tiled into one grid: reshape of a permuted tensor, a copy
            glue_tokens += rows
    global_newline = global_grid * (global_grid + 1)  # cat(global rows, newline column)
    local_newline = image_tokens - global_newline - 1 if len(passes) > 1 else 0  # the same for the crop grid
    # + the final cat(local, global, separator) and the cat of that one-element list (a copy too)
    glue_tokens += global_newline + local_newline + 2 * image_tokens
    # kernels: the newline cats (global, and the crops'), the final cat and the cat of its one-element list;
    # the crops' re-tiling reshape copies too, but TorchLens cannot tell that reshape from a view: not listed
    own = own + LayerCost(
        activation_bytes=glue_tokens * spec.decoder.hidden_size * b,
        kernels=K("copy", 0, 2 * image_tokens * spec.decoder.hidden_size * b, 3 + (len(passes) > 1)),
    )
    # the forward's two `torch.sum(...).item()` checks (the global view, then the crops, not all zeros):
    # 0-d tensors of the image dtype; with crops, the grid's sides are 0-d int64 tensors (the crop shape),
    # so `down * side`, `across * side` (the re-tiling) and `down * side` again (the newline column) are three
    # more 0-d int64 tensors
    sums = 2 if first else 1  # the forward checks images[0][1] once per forward, each image's crops in the loop
    # a sum is float32 under CUDA autocast (a float32-with-dtype op: the reduction reads the image's dtype, writes
    # float32, in its one kernel)
    sb = autocast_computes_in("sum", b, b) if ac else b
    # each sum reads its whole image tensor (one add per element): the crops (n x 3 x side x side), or without crops
    # the all-zero placeholder of the global view's shape; the first image's check reads the global view too. Its
    # kernel carries that read (the kernel and eager levels time it: 0.26-0.40 ms each for 3 x 512 x 512 float32 on
    # one CPU thread); the stage's FLOPs and I/O leave the check out (the parts' sum, the model's work)
    crops = [batch * 3 * side * side for name, batch, side in passes if name == "crops"]
    global_view = 3 * passes[-1][2] ** 2 if passes else 0
    read = (crops[0] if crops else global_view, *((global_view,) if first else ()))
    own = own + LayerCost(
        activation_bytes=sums * sb + (3 * 8 if len(passes) > 1 else 0),
        # the two sums, each `.item()` a host sync; the three 0-d products; the image rows
        # scattered into the embeddings (masked_scatter_, in place)
        kernels=sum((K("reduction", n, n * b + sb, out=sb) for n in read), NO_KERNELS)
        + K("elementwise", 1, 24, 3 if len(passes) > 1 else 0)
        + K("copy", 0, 2 * image_tokens * spec.decoder.hidden_size * b),
        syncs=sums,
    )
    return own, children


register_vision(ModelSpec, _vision_batch)

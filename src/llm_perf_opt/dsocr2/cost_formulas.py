"""Cost formulas of DeepSeek-OCR 2's own module classes, registered in `analytic.registry` under the
family prefix `dsocr2.` (the registry's keys are bare class names shared by the program, so v2's are
`dsocr2.Qwen2DecoderLayer`, ..., and never clash with v1's). Classes v2 shares with v1 (SAM's
`ImageEncoderViT` and its blocks, `MlpProjector`, the DeepSeek-V2 decoder classes: `deepseek_ocr_shared.costs`;
torch.nn) are those entries, costed under their bare names.

Shapes follow the vendor's forward (deepencoderv2.py; transformers 4.46's Qwen2Model with its SDPA
attention; modeling_deepseekocr2.py); each formula carries its derivation as its registered one-liner.
"""

from __future__ import annotations

from llm_perf_opt.analytic import costs, registry
from llm_perf_opt.analytic.costs import ZERO, K, LayerCost
from llm_perf_opt.analytic.execution import CPU, Execution
from llm_perf_opt.analytic.registry import Children, children_node, module_cost, register_children, register_cost
from llm_perf_opt.deepseek_ocr_shared.costs import ForwardShape, Passes, gated_mlp, sam_grids
from llm_perf_opt.dsocr2.spec import EncoderSpec, ModelSpec

PREFIX = "dsocr2."


registry.extend_namespace("dsocr2", "dsocr")  # SAM, the projector, the decoder: `deepseek_ocr_shared.costs`


def key(class_name: str) -> str:
    """The registry key of a v2 class: `dsocr2.<class>` when v2 registered it, else v1's `dsocr.<class>` (the
    SAM, projector and decoder classes v2 shares), else the shared torch.nn name."""
    return registry.key(class_name, "dsocr2")


def unsupported(module_classes) -> dict[str, int]:
    """`registry.unsupported` for a v2 model: a class is costed under its v2, its v1 or its bare name."""
    return registry.unsupported(module_classes, "dsocr2")


def _residuals(numel: int, b: int) -> LayerCost:
    return costs.elementwise(numel, "add", 2, b).times(2)  # two residual adds


# ------------------------------------------------------------------------------------------- encoder
register_cost(
    PREFIX + "Qwen2RMSNorm", "float32 x·rsqrt(mean(x²)+eps)·weight: no matmul, 4 elementwise FLOPs per element"
)(costs.rms_norm)
register_cost(
    PREFIX + "Qwen2RotaryEmbedding",
    "cos/sin table for positions (1, T), built once per encoder call: one bmm (1, d/2, 1)·(1, 1, T), then cos and sin",
)(costs.rotary_table)
register_cost(
    PREFIX + "Qwen2MLP",
    "down_proj(SiLU(gate_proj(x)) · up_proj(x)): three bias-free linears, an activation module and one multiply",
)(gated_mlp)


@register_cost(
    PREFIX + "Qwen2SdpaAttention",
    "q/k/v (with bias) and o projections, RoPE from the model's table, "
    "KV heads repeated to all heads, SDPA with the float mask over T keys",
)
def qwen2_sdpa_attention(
    batch: int, tokens: int, hidden: int, heads: int, kv_heads: int, head_dim: int, dtype_bytes: int = 2
) -> tuple[LayerCost, Children]:
    """Bidirectional-plus-causal attention of the encoder: every query row scores all T keys (the mask is
    added, nothing is skipped). The per-layer `rotary_emb` is not called (the model passes cos/sin)."""
    b = dtype_bytes
    own = costs.rope_apply(batch, tokens, heads, kv_heads, head_dim, b)
    own = own + costs.sdpa(batch, heads, tokens, tokens, head_dim, kv_heads=heads, mask=True, fused=True, dtype_bytes=b)
    # repeat_kv (expand + reshape) and `transpose(1, 2).contiguous()`: no activation bytes under the project's
    # convention (measure.agreement: a reshape is a view, SDPA's output is already contiguous after the
    # transpose, so `contiguous` returns the same tensor), and neither launches a kernel in the capture
    rows = batch * tokens
    return own, (
        ("q_proj", module_cost("Linear", rows, hidden, heads * head_dim, True, b)),
        ("k_proj", module_cost("Linear", rows, hidden, kv_heads * head_dim, True, b)),
        ("v_proj", module_cost("Linear", rows, hidden, kv_heads * head_dim, True, b)),
        ("o_proj", module_cost("Linear", rows, heads * head_dim, hidden, False, b)),
    )


@register_cost(
    PREFIX + "Qwen2DecoderLayer",
    "input RMSNorm, SDPA self-attention, residual, post-attention RMSNorm, gated MLP, residual",
)
def qwen2_layer(encoder: EncoderSpec, batch: int, tokens: int, dtype_bytes: int = 2) -> tuple[LayerCost, Children]:
    b, e = dtype_bytes, encoder
    rows = batch * tokens
    return _residuals(rows * e.hidden_size, b), (
        ("input_layernorm", module_cost(PREFIX + "Qwen2RMSNorm", rows, e.hidden_size, b)),
        (
            "self_attn",
            module_cost(
                PREFIX + "Qwen2SdpaAttention", batch, tokens, e.hidden_size, e.num_heads, e.num_kv_heads, e.head_dim, b
            ),
        ),
        ("post_attention_layernorm", module_cost(PREFIX + "Qwen2RMSNorm", rows, e.hidden_size, b)),
        ("mlp", module_cost(PREFIX + "Qwen2MLP", rows, e.hidden_size, e.intermediate_size, b)),
    )


@register_cost(
    PREFIX + "CustomQwen2ModelInner",
    "positions, the token-type mask, the RoPE table once, the layers, the final RMSNorm",
)
def qwen2_stack(encoder: EncoderSpec, batch: int, tokens: int, dtype_bytes: int = 2) -> tuple[LayerCost, Children]:
    """The stack over (batch, T = 2n) tokens, n SAM tokens then n queries. Own: the int64 positions (arange)
    and the (B, 1, T, T) float mask (`dsocr2.twin.encoder.encoder_mask`, the vendor's ops), per batch element:
    the T x T fill, the two token-type tests (bool T), their positions (`nonzero`, n int64 each, a host sync
    each), one index assignment of the n x n SAM block, then two per query row i (its n SAM columns, its
    i + 1 query columns), all in place; then the stack of the B masks."""
    b, e = dtype_bytes, encoder
    t = tokens
    t2 = t * t
    n = t // 2
    per_view = LayerCost(
        flops_other=2 * t,  # the two tests
        activation_bytes=t2 * b + 2 * t + 2 * 8 * n,
        kernels=(
            K("copy", 0, t2 * b)
            + K("elementwise", t, 9 * t, 2)
            + K("reduction", 0, t + 8 * n, 2)
            + K("copy", 0, n * n * b + 2 * 8 * n)
            + K("copy", 0, n * (b + 8), n)
            + K("copy", 0, (n + 1) * (b + 8) // 2, n)
        ),  # row i writes i + 1 columns: (n + 1) / 2 on average
        syncs=2,
    )
    own = per_view.times(batch) + LayerCost(
        activation_bytes=t * 8 + batch * t2 * b, kernels=K("copy", 0, t * 8) + K("copy", 0, 2 * batch * t2 * b)
    )
    layer = module_cost(PREFIX + "Qwen2DecoderLayer", e, batch, t, b)
    layers = children_node("ModuleList", tuple((str(i), layer) for i in range(e.num_layers)), container=True)
    return own, (
        ("rotary_emb", module_cost(PREFIX + "Qwen2RotaryEmbedding", 1, t, e.head_dim, b)),
        ("layers", layers),
        ("norm", module_cost(PREFIX + "Qwen2RMSNorm", batch * t, e.hidden_size, b)),
    )


register_children(PREFIX + "CustomQwen2Decoder", "the vendor's wrapper: calls its `model` (the Qwen2 stack)")


@register_cost(
    PREFIX + "Qwen2Decoder2Encoder",
    "SAM tokens flattened, the query bank appended (cat), token types, "
    "the stack; the query positions returned (a view)",
)
def qwen2_encoder(encoder: EncoderSpec, batch: int, n_tokens: int, dtype_bytes: int = 2) -> tuple[LayerCost, Children]:
    """One encoder call on `batch` views of `n_tokens` SAM tokens each (T = 2·n_tokens with the queries)."""
    b, e = dtype_bytes, encoder
    t = 2 * n_tokens
    # cat(tokens, queries) (B, T, C); int64 zeros and ones (B, n) and their cat (B, T)
    own = LayerCost(
        activation_bytes=batch * t * e.hidden_size * b + 2 * batch * n_tokens * 8 + batch * t * 8,
        kernels=K("copy", 0, 2 * batch * t * e.hidden_size * b)
        + K("copy", 0, batch * n_tokens * 8, 2)
        + K("copy", 0, 2 * batch * t * 8),
    )
    inner = module_cost(PREFIX + "CustomQwen2ModelInner", e, batch, t, b)
    return own, (("model", children_node(PREFIX + "CustomQwen2Decoder", (("model", inner),))),)


# ---------------------------------------------------------------------------------------- the model
def _vision(
    spec: ModelSpec, passes: Passes, image_tokens: int, b: int, execution: Execution = CPU
) -> tuple[LayerCost, Children]:
    """SAM -> encoder -> projector for each vision pass, and the glue `DeepseekOCR2Model.forward` adds. `execution`
    reaches SAM (`deepseek_ocr_shared.costs.sam_encoder`); the encoder's formulas do not model CUDA's specifics yet
    (no recorded CUDA run of this family)."""
    children: Children = ()
    p = spec.projector
    for _name, batch, side in passes:
        grid = sam_grids(spec.sam, side)[2]
        n = grid * grid
        children += (
            ("sam_model", module_cost("dsocr.ImageEncoderViT", spec.sam, batch, side, b, execution=execution)),
            ("qwen2_model", module_cost(PREFIX + "Qwen2Decoder2Encoder", spec.encoder, batch, n, b)),
            ("projector", module_cost("dsocr.MlpProjector", batch * n, p.input_dim, p.n_embed, b)),
        )
    # cat(crops, global, separator) and the cat of that one-element list (a copy too); the views of the
    # projector outputs are free. The two `torch.sum(...).item()` checks: 0-d tensors of the image dtype.
    rows = image_tokens * spec.decoder.hidden_size * b
    pixels = [batch * 3 * side * side * b for _name, batch, side in passes]
    glob = pixels[-1]  # the global view (the last pass)
    crops = pixels[0] if len(pixels) > 1 else glob  # the crop batch, or the all-zero crop tensor of a page without
    # kernels: the two sums (the global view in forward, the crop tensor in the image's branch), the two cats, and
    # masked_scatter_ of the image rows into the embeddings (in place: no new tensor)
    kernels = (
        K("reduction", glob // b, glob + b, out=b)  # one add per pixel value read
        + K("reduction", crops // b, crops + b, out=b)
        + K("copy", 0, 2 * rows, 2)
        + K("copy", 0, 2 * rows)
    )
    own = LayerCost(activation_bytes=2 * rows + 2 * b, kernels=kernels)
    return own, children


@register_cost(
    PREFIX + "DeepseekOCR2Model",
    "embed_tokens, the vision passes scattered into the embeddings, decoder "
    "layers, norm; own: the vision glue, position ids and the 4-D causal mask",
)
def ocr2_model(
    spec: ModelSpec,
    passes: Passes,
    image_tokens: int,
    q_len: int,
    past_len: int,
    attention: str,
    dtype_bytes: int = 2,
    language: bool = True,
    execution: Execution = CPU,
) -> tuple[LayerCost, Children]:
    """One forward on `q_len` new tokens after `past_len` cached ones; vision for the given passes (none in
    decode). The language part is v1's `DeepseekOCRModel` formula without vision (the same vendor code)."""
    b = dtype_bytes
    own, vision = _vision(spec, passes, image_tokens, b, execution) if passes else (ZERO, ())
    if not language:
        return own, vision
    lang = module_cost(
        "dsocr.DeepseekOCRModel", ForwardShape(spec, (), 0, q_len, past_len, attention, b, execution=execution)
    )
    named = dict(lang.children)
    return own + lang.own, (
        ("embed_tokens", named["embed_tokens"]),
        *vision,
        ("layers", named["layers"]),
        ("norm", named["norm"]),
    )


@register_cost(PREFIX + "DeepseekOCR2ForCausalLM", "the model, then lm_head over every new position and logits.float()")
def ocr2_causal_lm(
    spec: ModelSpec,
    passes: Passes,
    image_tokens: int,
    q_len: int,
    past_len: int,
    attention: str,
    dtype_bytes: int = 2,
    language: bool = True,
    execution: Execution = CPU,
) -> tuple[LayerCost, Children]:
    b = dtype_bytes
    model = module_cost(
        PREFIX + "DeepseekOCR2Model",
        spec,
        passes,
        image_tokens,
        q_len,
        past_len,
        attention,
        b,
        language,
        execution=execution,
    )
    if not language:
        return ZERO, (("model", model),)
    d = spec.decoder
    logits = (
        LayerCost(
            activation_bytes=q_len * d.vocab_size * 4,  # logits.float(): one cast kernel (as v1's)
            kernels=K("copy", 0, q_len * d.vocab_size * (4 + b), out=q_len * d.vocab_size * 4),
        )
        if b != 4
        else ZERO
    )
    return logits, (("model", model), ("lm_head", module_cost("Linear", q_len, d.hidden_size, d.vocab_size, False, b)))

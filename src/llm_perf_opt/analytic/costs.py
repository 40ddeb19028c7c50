"""Pure per-layer cost functions: shapes in, `LayerCost` out (exact integers, no torch).

Conventions (the whole analytic package uses them; see also `LayerCost`):

* **FLOPs are 2 × multiply-adds**, the unit of `torch.utils.flop_counter`. `flops_matmul` is exactly
  what `FlopCounterMode` counts for the op sequence the layer runs: mm / addmm / bmm / baddbmm (bias
  adds are *not* counted, as in torch), convolutions (2·B·Cout·Hout·Wout·Cin·k², bias not counted),
  scaled-dot-product attention (2·B·H·Lq·Lk·E for Q·Kᵀ + 2·B·H·Lq·Lk·Ev for P·V, no causal discount),
  and einsum (torch lowers it to bmm). Interpolation, softmax, norms and elementwise ops count zero
  there.
* `flops_other` is the elementwise / reduction work that torch does not count, by a fixed table
  (`ELEMENTWISE_FLOPS`): 1 per element per arithmetic op, 1 per transcendental; softmax 5/element
  (max, subtract, exp, sum, divide); LayerNorm 7/element (mean, centre, square, variance, normalise,
  scale, shift); RMSNorm 4/element (square, mean, normalise, scale); bias add 1/output element.
  It is an analytic estimate, never compared to a measurement.
* Bytes use one element size, `dtype_bytes`, for every tensor (the vendor's float32 islands —
  RMSNorm's internal upcast, the MoE gate, the attention softmax, `logits.float()` — are counted
  where the op sequence really materialises a float32 tensor, noted per function).
  - `weight_bytes`: parameter bytes the layer reads (each parameter once per call; an embedding
    reads only the rows it gathers).
  - `input_bytes`: activation bytes read once per call (for decode attention this includes the KV
    cache), `output_bytes`: bytes of the layer's result written once.
  - `activation_bytes`: bytes of every tensor the layer's eager op sequence produces (its output and
    the intermediates a non-fused implementation materialises: padded windows, attention bias,
    attention scores and probabilities in eager attention, ...). Views and in-place ops produce
    nothing.
  - I/O bytes (`LayerCost.io_bytes`) = weight + input + output bytes: the minimum traffic if each
    tensor crossed the memory boundary exactly once.

Every function carries a one-line derivation for each formula. Unknown layer kinds raise
`UnsupportedLayerError` (see `layer_cost`): nothing is ever silently counted as zero.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Callable, Iterable, Mapping

from llm_perf_opt.errors import PipelineError

GB = 10**9
TB = 10**12

# flops_other per output element of elementwise ops (transcendentals count 1).
ELEMENTWISE_FLOPS: dict[str, int] = {
    "add": 1,
    "mul": 1,
    "div": 1,
    "gelu": 5,  # exact GELU: x/√2, erf, +1, ×x, ×0.5
    "quick_gelu": 3,  # x·sigmoid(1.702x): scale, sigmoid, multiply
    "silu": 2,  # x·sigmoid(x): sigmoid, multiply
    "softmax": 5,  # max, subtract, exp, sum, divide
    "layer_norm": 7,  # mean, centre, square, variance, normalise, scale, shift
    "layer_norm2d": 8,  # SAM's LayerNorm2d as written: mean, x-u, pow, mean, (x-u) again, divide, scale, shift
    "rms_norm": 4,  # square, mean, normalise, scale
    "rope": 4,  # x·cos + rotate_half(x)·sin: negate, two multiplies, add
}


class UnsupportedLayerError(PipelineError, KeyError):
    """A layer kind has no cost function: it is reported, never counted as zero."""

    def __init__(self, kind: str):
        super().__init__(kind)
        self.kind = kind

    def __str__(self) -> str:  # KeyError would repr() the message
        return f"no analytic cost function for layer kind {self.kind!r} (supported: {', '.join(supported_kinds())})"


@dataclass(frozen=True, slots=True)
class LayerCost:
    """Cost of one layer call (or a sum of them). Exact integers; unit views as properties."""

    flops_matmul: int = 0
    flops_other: int = 0
    weight_bytes: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    activation_bytes: int = 0

    def __add__(self, other: "LayerCost") -> "LayerCost":
        if not isinstance(other, LayerCost):
            return NotImplemented
        return LayerCost(
            self.flops_matmul + other.flops_matmul,
            self.flops_other + other.flops_other,
            self.weight_bytes + other.weight_bytes,
            self.input_bytes + other.input_bytes,
            self.output_bytes + other.output_bytes,
            self.activation_bytes + other.activation_bytes,
        )

    def __radd__(self, other):  # sum() starts from 0
        if other == 0:
            return self
        return NotImplemented

    def times(self, n: int) -> "LayerCost":
        """The cost of `n` identical calls."""
        return LayerCost(
            self.flops_matmul * n, self.flops_other * n, self.weight_bytes * n,
            self.input_bytes * n, self.output_bytes * n, self.activation_bytes * n,
        )

    @property
    def flops(self) -> int:
        return self.flops_matmul + self.flops_other

    @property
    def io_bytes(self) -> int:
        return self.weight_bytes + self.input_bytes + self.output_bytes

    @property
    def io_tb(self) -> float:
        return self.io_bytes / TB

    @property
    def weights_gb(self) -> float:
        return self.weight_bytes / GB

    @property
    def activations_gb(self) -> float:
        return self.activation_bytes / GB

    @property
    def tflops(self) -> float:
        return self.flops / TB

    def to_dict(self) -> dict[str, int]:
        return {
            "flops": self.flops, "flops_matmul": self.flops_matmul, "flops_other": self.flops_other,
            "io_bytes": self.io_bytes, "weight_bytes": self.weight_bytes, "input_bytes": self.input_bytes,
            "output_bytes": self.output_bytes, "activation_bytes": self.activation_bytes,
        }


ZERO = LayerCost()
COST_FIELDS = tuple(f.name for f in fields(LayerCost))

CostFunction = Callable[..., LayerCost]
_REGISTRY: dict[str, CostFunction] = {}


def register_cost(kind: str) -> Callable[[CostFunction], CostFunction]:
    """Register a pure cost function under a layer kind (duplicates are an error)."""

    def deco(fn: CostFunction) -> CostFunction:
        if kind in _REGISTRY:
            raise RuntimeError(f"duplicate cost function for layer kind {kind!r}")
        _REGISTRY[kind] = fn
        return fn

    return deco


def supported_kinds() -> tuple[str, ...]:
    return tuple(sorted(_REGISTRY))


def cost_function(kind: str) -> CostFunction:
    try:
        return _REGISTRY[kind]
    except KeyError:
        raise UnsupportedLayerError(kind) from None


def layer_cost(kind: str, /, **shape) -> LayerCost:
    """Cost of one call of a layer of `kind` with the given shape keywords; unknown kinds raise."""
    return cost_function(kind)(**shape)


def collect_costs(items: Iterable[tuple[str, Mapping]]) -> tuple[LayerCost, list[str]]:
    """Sum the costs of (kind, shape) items; kinds without a cost function are recorded, not zeroed.

    Returns (total of the supported items, list of unsupported kinds in order of appearance). A caller
    that gets a non-empty list must report the total as incomplete.
    """
    total = ZERO
    unsupported: list[str] = []
    for kind, shape in items:
        fn = _REGISTRY.get(kind)
        if fn is None:
            unsupported.append(kind)
            continue
        total = total + fn(**shape)
    return total, unsupported


def _pos(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name}={value!r}: expected a non-negative integer")
    return value


# ----------------------------------------------------------------------------------------- primitives
@register_cost("linear")
def linear(tokens: int, in_features: int, out_features: int, bias: bool = True, dtype_bytes: int = 2) -> LayerCost:
    """nn.Linear over `tokens` rows (all leading dims folded)."""
    t, i, o, b = _pos("tokens", tokens), in_features, out_features, dtype_bytes
    return LayerCost(
        flops_matmul=2 * t * i * o,  # (t × i) @ (i × o): t·o outputs, i MACs each; addmm's bias is not counted
        flops_other=t * o if bias else 0,  # one add per output element
        weight_bytes=(i * o + (o if bias else 0)) * b,
        input_bytes=t * i * b,
        output_bytes=t * o * b,
        activation_bytes=t * o * b,
    )


def conv_out(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output side of a convolution (dilation 1): floor((size + 2p - k) / s) + 1."""
    return (size + 2 * padding - kernel) // stride + 1


@register_cost("conv2d")
def conv2d(batch: int, in_channels: int, out_channels: int, in_h: int, in_w: int, kernel: int,
           stride: int = 1, padding: int = 0, bias: bool = False, dtype_bytes: int = 2) -> LayerCost:
    """nn.Conv2d with a square kernel, dilation 1, groups 1."""
    ho, wo = conv_out(in_h, kernel, stride, padding), conv_out(in_w, kernel, stride, padding)
    out = batch * out_channels * ho * wo
    b = dtype_bytes
    return LayerCost(
        flops_matmul=2 * out * in_channels * kernel * kernel,  # each output: Cin·k·k MACs (torch's conv_flop_count)
        flops_other=out if bias else 0,  # bias add per output element
        weight_bytes=(out_channels * in_channels * kernel * kernel + (out_channels if bias else 0)) * b,
        input_bytes=batch * in_channels * in_h * in_w * b,
        output_bytes=out * b,
        activation_bytes=out * b,
    )


@register_cost("layer_norm")
def layer_norm(tokens: int, dim: int, dtype_bytes: int = 2) -> LayerCost:
    """nn.LayerNorm (affine) over `tokens` rows of `dim` (one fused aten.native_layer_norm)."""
    n, b = tokens * dim, dtype_bytes
    return LayerCost(
        flops_other=ELEMENTWISE_FLOPS["layer_norm"] * n,  # 7 per element (see module docstring)
        weight_bytes=2 * dim * b,  # weight + bias
        input_bytes=n * b,
        output_bytes=n * b,
        activation_bytes=n * b + 2 * tokens * 4,  # output + float32 mean and rstd per row
    )


@register_cost("layer_norm2d")
def layer_norm2d(batch: int, channels: int, h: int, w: int, dtype_bytes: int = 2) -> LayerCost:
    """SAM's LayerNorm2d, written out in elementwise ops over the channel dim of (B, C, H, W)."""
    pixels = batch * h * w
    n, b = pixels * channels, dtype_bytes
    return LayerCost(
        flops_other=ELEMENTWISE_FLOPS["layer_norm2d"] * n,  # 8 per element (x-u is computed twice)
        weight_bytes=2 * channels * b,
        input_bytes=n * b,
        output_bytes=n * b,
        # x-u, (x-u)², x-u again, divide, scale, shift: 6 full tensors; u, s, s+eps, sqrt: 4 per pixel
        activation_bytes=6 * n * b + 4 * pixels * b,
    )


@register_cost("rms_norm")
def rms_norm(tokens: int, dim: int, dtype_bytes: int = 2) -> LayerCost:
    """DeepseekV2RMSNorm: upcast to float32, x·rsqrt(mean(x²)+eps), cast back, × weight."""
    n, b = tokens * dim, dtype_bytes
    upcast = n * 4 if b != 4 else 0  # .to(float32) materialises only when the input is not float32
    downcast = n * b if b != 4 else 0
    return LayerCost(
        flops_other=ELEMENTWISE_FLOPS["rms_norm"] * n,  # square, mean, normalise, scale
        weight_bytes=dim * b,
        input_bytes=n * b,
        output_bytes=n * b,
        # pow(2) and x·rsqrt in float32, mean/+eps/rsqrt per row (3 float32 scalars), weight product
        activation_bytes=upcast + 2 * n * 4 + 3 * tokens * 4 + downcast + n * b,
    )


@register_cost("embedding")
def embedding(tokens: int, num_embeddings: int, dim: int, dtype_bytes: int = 2) -> LayerCost:
    """nn.Embedding lookup: a gather, no arithmetic; reads only the `tokens` rows it gathers."""
    b = dtype_bytes
    return LayerCost(
        weight_bytes=tokens * dim * b,  # one table row gathered per id (the table is not streamed)
        input_bytes=tokens * 8,  # int64 ids
        output_bytes=tokens * dim * b,
        activation_bytes=tokens * dim * b,
    )


@register_cost("elementwise")
def elementwise(numel: int, op: str = "add", inputs: int = 1, dtype_bytes: int = 2) -> LayerCost:
    """One elementwise op (`op` a key of ELEMENTWISE_FLOPS) over `numel` outputs read from `inputs` tensors."""
    if op not in ELEMENTWISE_FLOPS:
        raise UnsupportedLayerError(f"elementwise:{op}")
    b = dtype_bytes
    return LayerCost(
        flops_other=ELEMENTWISE_FLOPS[op] * numel,  # table value per element
        input_bytes=inputs * numel * b,
        output_bytes=numel * b,
        activation_bytes=numel * b,
    )


@register_cost("softmax")
def softmax(rows: int, cols: int, dtype_bytes: int = 2) -> LayerCost:
    n = rows * cols
    return LayerCost(
        flops_other=ELEMENTWISE_FLOPS["softmax"] * n,  # max, subtract, exp, sum, divide
        input_bytes=n * dtype_bytes, output_bytes=n * dtype_bytes, activation_bytes=n * dtype_bytes,
    )


@register_cost("interpolate")
def interpolate(channels: int, in_size: tuple[int, ...], out_size: tuple[int, ...], mode: str = "bicubic",
                dtype_bytes: int = 4) -> LayerCost:
    """F.interpolate (position-table resizing). Not a matmul in torch's counter: flops_other only.

    The vendor upcasts the table to float32 before resizing, hence the float32 default.
    """
    taps = {"linear": 2, "bilinear": 4, "bicubic": 16}
    if mode not in taps:
        raise UnsupportedLayerError(f"interpolate:{mode}")
    n_in, n_out = channels * math.prod(in_size), channels * math.prod(out_size)
    return LayerCost(
        flops_other=2 * taps[mode] * n_out,  # one multiply-add per tap per output element
        input_bytes=n_in * dtype_bytes,
        output_bytes=n_out * dtype_bytes,
        activation_bytes=n_out * dtype_bytes,
    )


@register_cost("sdpa")
def sdpa(batch: int, heads: int, q_len: int, kv_len: int, head_dim: int, v_head_dim: int | None = None,
         kv_heads: int | None = None, mask: bool = False, fused: bool = True, dtype_bytes: int = 2) -> LayerCost:
    """Attention core softmax(Q·Kᵀ·scale + mask)·V, fused (F.scaled_dot_product_attention) or eager.

    Eager (transformers' LlamaAttention) materialises the scores, their scaled and masked copies, the
    float32 softmax and its cast back; fused kernels materialise only the output.
    """
    ev = head_dim if v_head_dim is None else v_head_dim
    kvh = heads if kv_heads is None else kv_heads
    b = dtype_bytes
    scores = batch * heads * q_len * kv_len
    out = batch * heads * q_len * ev
    if fused:
        act = out * b
    else:
        # matmul, /sqrt(d), +mask, softmax(float32), .to(dtype) (only if not float32), P·V
        act = scores * b * (2 + (1 if mask else 0)) + scores * 4 + (scores * b if b != 4 else 0) + out * b
    return LayerCost(
        flops_matmul=2 * scores * head_dim + 2 * scores * ev,  # Q·Kᵀ: scores × d MACs; P·V: (B·H·Lq·Ev) × Lk MACs
        flops_other=scores * (1 + (1 if mask else 0) + ELEMENTWISE_FLOPS["softmax"]),  # scale, mask add, softmax
        input_bytes=batch * q_len * heads * head_dim * b + batch * kv_len * kvh * (head_dim + ev) * b
        + (scores * b if mask else 0),
        output_bytes=out * b,
        activation_bytes=act,
    )


def rope_parts(batch: int, tokens: int, heads: int, kv_heads: int, head_dim: int,
               dtype_bytes: int = 2) -> dict[str, LayerCost]:
    """RoPE as transformers' LlamaAttention runs it: {"rotary_emb": table module, "": rotation of q and k}.

    The cos/sin table is rebuilt on every call as inv_freq[None, :, None] @ position_ids[:, None, :] —
    a real bmm (B, d/2, 1) @ (B, 1, T) that torch's counter sees — then cat, cos, sin, cast;
    apply_rotary_pos_emb then rotates q and k elementwise.
    """
    half = head_dim // 2
    table = batch * tokens * head_dim  # cat((freqs, freqs)) -> (B, T, d)
    rotated = batch * tokens * (heads + kv_heads) * head_dim
    b = dtype_bytes
    rotary_emb = LayerCost(
        flops_matmul=2 * batch * half * 1 * tokens,  # bmm (B, d/2, 1)·(B, 1, T): B·(d/2)·T outputs of 1 MAC
        flops_other=2 * table,  # cos and sin over the (B, T, d) table
        input_bytes=batch * tokens * 8,  # int64 positions
        output_bytes=2 * table * b,
        # float32 freqs, cat, cos, sin (and ×attention_scaling, which makes two more), cast to dtype
        activation_bytes=batch * half * tokens * 4 + 5 * table * 4 + (2 * table * b if b != 4 else 0),
    )
    apply = LayerCost(
        flops_other=ELEMENTWISE_FLOPS["rope"] * rotated,  # per element of q and k: negate, 2 multiplies, add
        input_bytes=rotated * b + 2 * table * b,
        output_bytes=rotated * b,
        activation_bytes=5 * rotated * b,  # x·cos, -x2, cat (rotate_half), ·sin, sum
    )
    return {"rotary_emb": rotary_emb, "": apply}


@register_cost("rope")
def rope(batch: int, tokens: int, heads: int, kv_heads: int, head_dim: int, dtype_bytes: int = 2) -> LayerCost:
    """transformers' LlamaRotaryEmbedding + apply_rotary_pos_emb on q and k (see `rope_parts`)."""
    return _total(rope_parts(batch, tokens, heads, kv_heads, head_dim, dtype_bytes))


# ------------------------------------------------------------------------------------ composite layers
# Each composite has a `*_parts` function returning {child module name (dotted, relative): cost}, with
# "" for the work the module does itself (outside any child module). The registered cost is their sum;
# the DeepSeek-OCR composition uses the parts to name costs by the vendor's module paths.

def _total(parts: Mapping[str, LayerCost]) -> LayerCost:
    return sum(parts.values(), ZERO)


def _merge(into: dict[str, LayerCost], name: str, cost: LayerCost) -> None:
    into[name] = into[name] + cost if name in into else cost


def mlp_parts(tokens: int, dim: int, hidden: int, act: str = "gelu", bias: bool = True,
              names: tuple[str, str, str] = ("lin1", "act", "lin2"), dtype_bytes: int = 2) -> dict[str, LayerCost]:
    """Two-layer MLP fc2(act(fc1(x))). SAM's MLPBlock: names (lin1, act, lin2), exact GELU module;
    CLIP's NoTPFeedForward: names (fc1, "", fc2), quick_gelu as a scripted function ("": the module itself)."""
    out: dict[str, LayerCost] = {}
    _merge(out, names[0], linear(tokens, dim, hidden, bias, dtype_bytes))
    _merge(out, names[1], elementwise(tokens * hidden, act, 1, dtype_bytes))
    _merge(out, names[2], linear(tokens, hidden, dim, bias, dtype_bytes))
    return out


@register_cost("mlp")
def mlp(tokens: int, dim: int, hidden: int, act: str = "gelu", bias: bool = True, dtype_bytes: int = 2) -> LayerCost:
    """Two-layer MLP fc2(act(fc1(x))) (see `mlp_parts`)."""
    return _total(mlp_parts(tokens, dim, hidden, act, bias, dtype_bytes=dtype_bytes))


def gated_mlp_parts(tokens: int, hidden: int, intermediate: int, act: str = "silu",
                    dtype_bytes: int = 2) -> dict[str, LayerCost]:
    """DeepseekV2MLP: down_proj(act_fn(gate_proj(x)) · up_proj(x)), three bias-free linears."""
    b = dtype_bytes
    return {
        "gate_proj": linear(tokens, hidden, intermediate, False, b),
        "up_proj": linear(tokens, hidden, intermediate, False, b),
        "act_fn": elementwise(tokens * intermediate, act, 1, b),
        "": elementwise(tokens * intermediate, "mul", 2, b),  # act(gate) · up
        "down_proj": linear(tokens, intermediate, hidden, False, b),
    }


@register_cost("gated_mlp")
def gated_mlp(tokens: int, hidden: int, intermediate: int, act: str = "silu", dtype_bytes: int = 2) -> LayerCost:
    """DeepseekV2MLP (see `gated_mlp_parts`)."""
    return _total(gated_mlp_parts(tokens, hidden, intermediate, act, dtype_bytes))


def sam_attention_parts(batch: int, h: int, w: int, dim: int, heads: int, rel_pos_h_len: int, rel_pos_w_len: int,
                        dtype_bytes: int = 2) -> dict[str, LayerCost]:
    """SAM `Attention` on (batch, h, w, dim): qkv, decomposed relative positions, SDPA with the
    rel-pos bias as its mask, proj.

    For windowed blocks the caller passes batch = B·windows and h = w = window (windows are cut from
    the grid padded to a multiple of the window); for global blocks the full grid. The rel-pos tables
    are resized (linear interpolation, not a matmul) when their length is not 2·max(h, w) - 1.
    """
    hd = dim // heads
    n = h * w
    bh = batch * heads
    b = dtype_bytes
    own = ZERO
    for length, size in ((rel_pos_h_len, h), (rel_pos_w_len, w)):
        if length != 2 * size - 1:
            own = own + interpolate(hd, (length,), (2 * size - 1,), "linear")
    own = own + LayerCost(
        # einsum bhwc,hkc->bhwk (rel_h: B·heads·h·w·h outputs) and bhwc,wkc->bhwk (rel_w: ...·w outputs),
        # both lowered to bmm with hd MACs per output
        flops_matmul=2 * bh * h * w * h * hd + 2 * bh * h * w * w * hd,
        flops_other=bh * n * n,  # attn_bias = rel_h + rel_w broadcast to (B·heads, n, n)
        weight_bytes=(rel_pos_h_len + rel_pos_w_len) * hd * b,  # the two learned tables
        input_bytes=bh * n * hd * b,  # q
        output_bytes=bh * n * n * b,  # the attention bias
        activation_bytes=(h * h + w * w) * hd * b + bh * n * (h + w) * b + bh * n * n * b,  # Rh, Rw, rel_h, rel_w, bias
    )
    own = own + sdpa(batch, heads, n, n, hd, mask=True, fused=True, dtype_bytes=b)
    return {
        "qkv": linear(batch * n, dim, 3 * dim, True, b),
        "": own,
        "proj": linear(batch * n, dim, dim, True, b),
    }


@register_cost("sam_attention")
def sam_attention(batch: int, h: int, w: int, dim: int, heads: int, rel_pos_h_len: int, rel_pos_w_len: int,
                  dtype_bytes: int = 2) -> LayerCost:
    """SAM windowed / global attention with decomposed relative positions (see `sam_attention_parts`)."""
    return _total(sam_attention_parts(batch, h, w, dim, heads, rel_pos_h_len, rel_pos_w_len, dtype_bytes))


def clip_attention_parts(batch: int, tokens: int, dim: int, heads: int, dtype_bytes: int = 2) -> dict[str, LayerCost]:
    """CLIP `NoTPAttention`: qkv_proj, SDPA without mask, out_proj."""
    b = dtype_bytes
    return {
        "qkv_proj": linear(batch * tokens, dim, 3 * dim, True, b),
        "": sdpa(batch, heads, tokens, tokens, dim // heads, mask=False, fused=True, dtype_bytes=b),
        "out_proj": linear(batch * tokens, dim, dim, True, b),
    }


@register_cost("clip_attention")
def clip_attention(batch: int, tokens: int, dim: int, heads: int, dtype_bytes: int = 2) -> LayerCost:
    """CLIP global attention (see `clip_attention_parts`)."""
    return _total(clip_attention_parts(batch, tokens, dim, heads, dtype_bytes))


def decoder_attention_parts(batch: int, q_len: int, past_len: int, hidden: int, heads: int, kv_heads: int,
                            head_dim: int, eager: bool = True, dtype_bytes: int = 2) -> dict[str, LayerCost]:
    """transformers' LlamaAttention (use_mla false): q/k/v projections, RoPE, attention of the `q_len`
    new queries over `past_len` cached + `q_len` new keys (full Q·Kᵀ, the causal mask is added, not
    skipped), o_proj. With a cache, DynamicCache.update concatenates, writing the grown cache."""
    b = dtype_bytes
    kv = past_len + q_len
    rp = rope_parts(batch, q_len, heads, kv_heads, head_dim, b)
    own = rp[""] + sdpa(batch, heads, q_len, kv, head_dim, kv_heads=kv_heads, mask=True, fused=not eager,
                        dtype_bytes=b)
    if past_len:
        cache = 2 * batch * kv_heads * kv * head_dim * b  # torch.cat(past, new) for k and v
        own = own + LayerCost(output_bytes=cache, activation_bytes=cache)
    return {
        "q_proj": linear(batch * q_len, hidden, heads * head_dim, False, b),
        "k_proj": linear(batch * q_len, hidden, kv_heads * head_dim, False, b),
        "v_proj": linear(batch * q_len, hidden, kv_heads * head_dim, False, b),
        "rotary_emb": rp["rotary_emb"],
        "": own,
        "o_proj": linear(batch * q_len, heads * head_dim, hidden, False, b),
    }


@register_cost("decoder_attention")
def decoder_attention(batch: int, q_len: int, past_len: int, hidden: int, heads: int, kv_heads: int,
                      head_dim: int, eager: bool = True, dtype_bytes: int = 2) -> LayerCost:
    """Decoder self-attention with RoPE and a KV cache (see `decoder_attention_parts`)."""
    return _total(decoder_attention_parts(batch, q_len, past_len, hidden, heads, kv_heads, head_dim, eager,
                                          dtype_bytes))


def moe_parts(tokens: int, hidden: int, intermediate: int, n_routed: int, top_k: int, shared_intermediate: int = 0,
              dtype_bytes: int = 2) -> dict[str, LayerCost]:
    """DeepseekV2MoE in inference (`moe_infer`).

    gate: float32 F.linear (T × hidden × E) + softmax + top-k. experts: every token visits exactly
    `top_k` routed experts, so the routed work is one gated MLP over T·top_k rows whatever the routing
    (the Python loop only splits those rows among the experts that received any). Routed weight bytes
    assume min(E, T·top_k) distinct experts are read once each — exact for one token, an upper bound
    otherwise. shared_experts: one gated MLP of `shared_intermediate` over all T tokens.
    """
    b = dtype_bytes
    routed_tokens = tokens * top_k
    gate = linear(tokens, hidden, n_routed, False, 4)  # F.linear(x.float(), w.float())
    gate = gate + LayerCost(
        weight_bytes=0,
        activation_bytes=(tokens * hidden * 4 if b != 4 else 0) + (hidden * n_routed * 4 if b != 4 else 0),
    )  # float32 copies of x and of the gate weight
    gate = gate + softmax(tokens, n_routed, 4)
    routed = gated_mlp(routed_tokens, hidden, intermediate, "silu", b)
    experts_read = min(n_routed, routed_tokens)
    routed = LayerCost(
        routed.flops_matmul, routed.flops_other, experts_read * 3 * hidden * intermediate * b,
        routed.input_bytes, routed.output_bytes, routed.activation_bytes,
    )
    own = LayerCost(
        flops_other=2 * routed_tokens * hidden,  # × top-k weight and sum over k
        input_bytes=tokens * hidden * b,
        output_bytes=tokens * hidden * b,
        # sorted token copy, concatenated expert outputs, scatter-back, float32 weighted copy, sum
        activation_bytes=3 * routed_tokens * hidden * b + routed_tokens * hidden * 4 + tokens * hidden * b,
    )
    out = {"gate": gate, "experts": routed, "": own}
    if shared_intermediate:
        for name, cost in gated_mlp_parts(tokens, hidden, shared_intermediate, "silu", b).items():
            out["shared_experts." + name if name else "shared_experts"] = cost
        out[""] = out[""] + elementwise(tokens * hidden, "add", 2, b)  # y + shared_experts(identity)
    return out


@register_cost("moe")
def moe(tokens: int, hidden: int, intermediate: int, n_routed: int, top_k: int, shared_intermediate: int = 0,
        dtype_bytes: int = 2) -> LayerCost:
    """DeepseekV2MoE with routed + shared experts and gate (see `moe_parts`)."""
    return _total(moe_parts(tokens, hidden, intermediate, n_routed, top_k, shared_intermediate, dtype_bytes))


@register_cost("lm_head")
def lm_head(tokens: int, hidden: int, vocab: int, dtype_bytes: int = 2) -> LayerCost:
    """Bias-free vocabulary projection over `tokens` positions (prefill: all of them)."""
    return linear(tokens, hidden, vocab, False, dtype_bytes)

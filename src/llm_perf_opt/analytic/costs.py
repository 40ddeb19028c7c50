"""Pure per-op cost functions: shapes in, `LayerCost` out (exact integers, no torch).

These are the building blocks of the module formulas in the cost registry (`analytic.registry`,
keyed by module class): a module's formula sums the ops it runs itself and asks the registry for its
children.

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

Every function carries a one-line derivation for each formula. An unknown op variant (an activation
or an interpolation mode without a formula) and an unknown module class (`analytic.registry`) raise
`UnsupportedLayerError`: nothing is ever silently counted as zero.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Iterable

from llm_perf_opt.analytic.autocast import computes_in as autocast_computes_in
from llm_perf_opt.analytic.autocast import input_casts as autocast_casts
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
# eager kernels per elementwise op (1 unless listed): quick_gelu = 1.702·x, sigmoid, multiply
ELEMENTWISE_KERNELS: dict[str, int] = {"quick_gelu": 3}


class UnsupportedLayerError(PipelineError, KeyError):
    """A module class or op variant has no cost formula: it is reported, never counted as zero."""

    def __init__(self, kind: str, known: Iterable[str] = ()):
        super().__init__(kind)
        self.kind = kind
        self.known = tuple(known)

    def __str__(self) -> str:  # KeyError would repr() the message
        known = f" (known: {', '.join(self.known)})" if self.known else ""
        return f"no analytic cost formula for {self.kind!r}{known}"


# ------------------------------------------------------------------------------------------- kernels
# Kinds of the ops a module launches (one eager torch op = one kernel at this level of detail):
#   gemm: mm / addmm / bmm / matmul / einsum / linear (`m` = the rows M of the product: the decode GEMVs have
#         M = batch; the kernel level picks the efficiency of the shape from M), conv: convolutions (m = output
#         pixels x batch), attention: a fused scaled_dot_product_attention, elementwise: pointwise arithmetic and
#         activations, reduction: sums, means, softmax, norms, top-k, sorts, copy: cat / pad / contiguous / casts /
#         clone / gathers / scatters / fills / aranges (data movement, no arithmetic to speak of).
# Views, aliases, metadata ops, in-place no-ops (a cast to the same dtype, eval dropout) and bare allocations
# (empty, empty_like) launch nothing and are not listed. Sync points (`.item()`, `.cpu()` of a device tensor,
# `.tolist()`, `nonzero`) are not kernels: `LayerCost.syncs` counts them (the eager level splits a step there); the
# copy a `.cpu()` of a CUDA tensor makes is one (a device-to-host memcpy).
# Three kinds run inside another op's call, not as ops of their own (`INNER_KINDS`): the device launches them (the
# profiler lists them, the kernel and eager levels count them), a Python-level op trace (TorchLens) does not:
#   cast: a dtype conversion an op makes of an input (CUDA autocast's input casts, `analytic.autocast`; an op's
#         `dtype=` argument), memset: a fill a library call makes before its kernel (cuDNN attention's 4-byte one),
#   relayout: the contiguous copy an op makes of a strided input it needs contiguous (native_layer_norm's
#         `X.contiguous()`; costed as a layout copy).
OP_KINDS = ("gemm", "conv", "attention", "elementwise", "reduction", "copy")
INNER_KINDS = ("cast", "memset", "relayout")
KERNEL_KINDS = OP_KINDS + INNER_KINDS
KernelKey = tuple  # (kind, m, flops, bytes, out): identical kernels share one key
# `out`: the bytes of the kernel's result, where the formula states it (0: not stated; the time levels then take a
# share of `bytes` by kind, `analytic.time.kernel.OUT_SHARE`). Only the CPU's fresh-page cost of large results
# reads it.


class Kernels:
    """The kernels of one layer call (or a sum of calls): {(kind, m, flops, bytes): count}. Immutable;
    identical kernels are aggregated, so a stage of thousands of launches is a handful of keys."""

    __slots__ = ("counts", "_hash")

    def __init__(self, counts: dict | None = None) -> None:
        self.counts = counts or {}
        self._hash = None

    @staticmethod
    def of(kind: str, flops: int = 0, nbytes: int = 0, n: int = 1, m: int = 0, out: int = 0) -> "Kernels":
        """`n` identical kernels of `kind` (one of KERNEL_KINDS), each `flops` and `nbytes` (read + written), of
        which `out` bytes are its result (0: not stated)."""
        if kind not in KERNEL_KINDS:
            raise ValueError(f"kernel kind {kind!r}: expected one of {KERNEL_KINDS}")
        return Kernels({(kind, int(m), int(flops), int(nbytes), int(out)): int(n)}) if n > 0 else NO_KERNELS

    def __add__(self, other: "Kernels") -> "Kernels":
        if not other.counts:
            return self
        if not self.counts:
            return other
        out = dict(self.counts)
        for k, n in other.counts.items():
            out[k] = out.get(k, 0) + n
        return Kernels(out)

    def times(self, n: int) -> "Kernels":
        if n == 1 or not self.counts:
            return self
        return Kernels({k: c * n for k, c in self.counts.items()}) if n > 0 else NO_KERNELS

    @property
    def count(self) -> int:
        """Every kernel the device launches."""
        return sum(self.counts.values())

    @property
    def op_count(self) -> int:
        """The kernels of ops a Python-level op trace records (every kind but `INNER_KINDS`): what the kernel-count
        check sets against TorchLens."""
        return sum(n for (kind, *_), n in self.counts.items() if kind not in INNER_KINDS)

    def by_kind(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for (kind, *_), n in self.counts.items():
            out[kind] = out.get(kind, 0) + n
        return out

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Kernels) and self.counts == other.counts

    def __hash__(self) -> int:
        if self._hash is None:
            self._hash = hash(frozenset(self.counts.items()))
        return self._hash

    def __bool__(self) -> bool:
        return bool(self.counts)

    def __repr__(self) -> str:
        return f"Kernels({self.count} launches: {self.by_kind()})"

    def to_list(self) -> list[dict[str, int | str]]:
        return [
            {"kind": k, "m": m, "flops": f, "bytes": b, "out": o, "count": n}
            for (k, m, f, b, o), n in sorted(self.counts.items())
        ]


NO_KERNELS = Kernels()
K = Kernels.of


def _in_unit(name: str, unit: int) -> property:
    return property(lambda self: getattr(self, name) / unit, doc=f"`{name}` / {unit:.0e}")


class UnitViews:
    """The unit views of a cost (tflops, io_tb, weights_gb, activations_gb), for any class that has
    `flops`, `io_bytes`, `weight_bytes` and `activation_bytes` (a `LayerCost`, a `StageCost`)."""

    __slots__ = ()
    tflops = _in_unit("flops", TB)
    io_tb = _in_unit("io_bytes", TB)
    weights_gb = _in_unit("weight_bytes", GB)
    activations_gb = _in_unit("activation_bytes", GB)


@dataclass(frozen=True, slots=True)
class LayerCost(UnitViews):
    """Cost of one layer call (or a sum of them). Exact integers; unit views as properties."""

    flops_matmul: int = 0
    flops_other: int = 0
    weight_bytes: int = 0
    input_bytes: int = 0
    output_bytes: int = 0
    activation_bytes: int = 0
    # the ops the call launches (see KERNEL_KINDS) and its host sync points: not COST_FIELDS, not compared
    # (two costs are equal when their FLOPs and bytes are; costs.json keeps only those)
    kernels: Kernels = field(default=NO_KERNELS, compare=False)
    syncs: int = field(default=0, compare=False)

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
            self.kernels + other.kernels,
            self.syncs + other.syncs,
        )

    def __radd__(self, other):  # sum() starts from 0
        if other == 0:
            return self
        return NotImplemented

    def times(self, n: int) -> "LayerCost":
        """The cost of `n` identical calls."""
        return LayerCost(
            self.flops_matmul * n,
            self.flops_other * n,
            self.weight_bytes * n,
            self.input_bytes * n,
            self.output_bytes * n,
            self.activation_bytes * n,
            self.kernels.times(n),
            self.syncs * n,
        )

    def with_kernels(self, kernels: Kernels, syncs: int = 0) -> "LayerCost":
        """The same cost launching `kernels` (replacing the ones it had) with `syncs` sync points."""
        return replace(self, kernels=kernels, syncs=syncs)

    @property
    def kernel_count(self) -> int:
        return self.kernels.count

    @property
    def op_kernel_count(self) -> int:
        """`Kernels.op_count`: the kernels of the ops a Python-level op trace records."""
        return self.kernels.op_count

    @property
    def flops(self) -> int:
        return self.flops_matmul + self.flops_other

    @property
    def io_bytes(self) -> int:
        return self.weight_bytes + self.input_bytes + self.output_bytes

    def to_dict(self) -> dict[str, int]:
        return {
            "flops": self.flops,
            "flops_matmul": self.flops_matmul,
            "flops_other": self.flops_other,
            "io_bytes": self.io_bytes,
            "weight_bytes": self.weight_bytes,
            "input_bytes": self.input_bytes,
            "output_bytes": self.output_bytes,
            "activation_bytes": self.activation_bytes,
        }


ZERO = LayerCost()
COST_FIELDS = tuple(f.name for f in fields(LayerCost) if f.name not in ("kernels", "syncs"))


def casts(*items: tuple[int, int, int]) -> Kernels:
    """The cast kernels of (numel, from bytes, to bytes) conversions (`analytic.autocast.input_casts`): one `cast`
    kernel each, reading the one and writing the other; none where the sizes agree."""
    out = NO_KERNELS
    for numel, a, b in items:
        if a != b and numel > 0:
            out = out + K("cast", 0, numel * (a + b), out=numel * b)
    return out


def _pos(name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name}={value!r}: expected a non-negative integer")
    return value


# ----------------------------------------------------------------------------------------- primitives
def linear(
    tokens: int,
    in_features: int,
    out_features: int,
    bias: bool = True,
    dtype_bytes: int = 2,
    in_bytes: int = 0,
    autocast: bool = False,
) -> LayerCost:
    """nn.Linear over `tokens` rows (all leading dims folded). `in_bytes`: the input's element size when it differs
    from the weights' (0: the same); under CUDA autocast (`autocast`) such an input is cast to the weights' dtype
    first (`analytic.autocast`: linear is a lower-precision op), inside the call."""
    t, i, o, b = _pos("tokens", tokens), in_features, out_features, dtype_bytes
    a = in_bytes or b
    cast = casts(*autocast_casts("linear", ((t * i, a),), b)) if autocast else NO_KERNELS
    return LayerCost(
        flops_matmul=2 * t * i * o,  # (t × i) @ (i × o): t·o outputs, i MACs each; addmm's bias is not counted
        flops_other=t * o if bias else 0,  # one add per output element
        weight_bytes=(i * o + (o if bias else 0)) * b,
        input_bytes=t * i * a,
        output_bytes=t * o * b,
        activation_bytes=t * o * b,
        # one addmm (mm without bias): M = tokens rows; under autocast the input's cast before it
        kernels=K(
            "gemm",
            2 * t * i * o + (t * o if bias else 0),
            (i * o + (o if bias else 0) + t * i + t * o) * b,
            m=t,
            out=t * o * b,
        )
        + cast,
    )


def conv_out(size: int, kernel: int, stride: int, padding: int) -> int:
    """Output side of a convolution (dilation 1): floor((size + 2p - k) / s) + 1."""
    return (size + 2 * padding - kernel) // stride + 1


def conv2d(
    batch: int,
    in_channels: int,
    out_channels: int,
    in_h: int,
    in_w: int,
    kernel: int,
    stride: int = 1,
    padding: int = 0,
    bias: bool = False,
    dtype_bytes: int = 2,
    in_bytes: int = 0,
    autocast: bool = False,
) -> LayerCost:
    """nn.Conv2d with a square kernel, dilation 1, groups 1. `in_bytes`, `autocast`: as `linear`'s (a convolution is
    a lower-precision op under CUDA autocast: a float32 input is cast first)."""
    ho, wo = conv_out(in_h, kernel, stride, padding), conv_out(in_w, kernel, stride, padding)
    out = batch * out_channels * ho * wo
    b = dtype_bytes
    a = in_bytes or b
    n_in = batch * in_channels * in_h * in_w
    cast = casts(*autocast_casts("conv2d", ((n_in, a),), b)) if autocast else NO_KERNELS
    return LayerCost(
        flops_matmul=2 * out * in_channels * kernel * kernel,  # each output: Cin·k·k MACs (torch's conv_flop_count)
        flops_other=out if bias else 0,  # bias add per output element
        weight_bytes=(out_channels * in_channels * kernel * kernel + (out_channels if bias else 0)) * b,
        input_bytes=n_in * a,
        output_bytes=out * b,
        activation_bytes=out * b,
        kernels=K(
            "conv",
            2 * out * in_channels * kernel * kernel + (out if bias else 0),
            (out_channels * in_channels * kernel * kernel + n_in + out) * b,
            m=batch * ho * wo,
            out=out * b,
        )
        + cast,  # one convolution kernel (and the input's cast under autocast)
    )


def layer_norm(
    tokens: int, dim: int, dtype_bytes: int = 2, in_bytes: int = 0, autocast: bool = False, strided: bool = False
) -> LayerCost:
    """nn.LayerNorm (affine) over `tokens` rows of `dim` (one fused aten.native_layer_norm). `in_bytes`: the input's
    element size (0: the weights'). Under CUDA autocast layer_norm is a float32 op: the input (when not float32), the
    weight and the bias are cast to float32 inside the call, and the output is float32 (`layer_norm_out_bytes`).
    `strided`: the input is not contiguous (a permuted layout; a cast keeps its strides): native_layer_norm copies it
    contiguous first, one `relayout` kernel of the element size it computes in."""
    n, b = tokens * dim, dtype_bytes
    a = in_bytes or b
    c = layer_norm_out_bytes(b, autocast)  # the element size it computes and returns
    cast = casts(*autocast_casts("layer_norm", ((n, a), (dim, b), (dim, b)), b)) if autocast else NO_KERNELS
    if strided:
        e = c if autocast else a
        cast = cast + K("relayout", 0, 2 * n * e, out=n * e)
    return LayerCost(
        flops_other=ELEMENTWISE_FLOPS["layer_norm"] * n,  # 7 per element (see module docstring)
        weight_bytes=2 * dim * b,  # weight + bias
        input_bytes=n * a,
        output_bytes=n * c,
        activation_bytes=n * c + 2 * tokens * 4,  # output + float32 mean and rstd per row
        kernels=K("reduction", 7 * n, (2 * n + 2 * dim) * c, out=n * c) + cast,  # one native_layer_norm
    )


def layer_norm_out_bytes(dtype_bytes: int, autocast: bool = False) -> int:
    """Element bytes of a LayerNorm's output: float32 under CUDA autocast (a float32 op), else the model's."""
    return autocast_computes_in("layer_norm", dtype_bytes, dtype_bytes) if autocast else dtype_bytes


def layer_norm2d(batch: int, channels: int, h: int, w: int, dtype_bytes: int = 2, autocast: bool = False) -> LayerCost:
    """SAM's LayerNorm2d, written out in elementwise ops over the channel dim of (B, C, H, W). Under CUDA autocast
    `pow` is a float32 op: (x - u) is cast to float32 for it, and its float32 result makes the variance, the
    division, the scale and the shift float32 (type promotion: the output is float32, `layer_norm2d_out_bytes`)."""
    pixels = batch * h * w
    n, b = pixels * channels, dtype_bytes
    if not autocast:
        return LayerCost(
            flops_other=ELEMENTWISE_FLOPS["layer_norm2d"] * n,  # 8 per element (x-u is computed twice)
            weight_bytes=2 * channels * b,
            input_bytes=n * b,
            output_bytes=n * b,
            # x-u, (x-u)², x-u again, divide, scale, shift: 6 full tensors; u, s, s+eps, sqrt: 4 per pixel
            activation_bytes=6 * n * b + 4 * pixels * b,
            # mean, x-u, pow, mean, +eps, sqrt, x-u again, divide, x weight, + bias: 10 eager ops
            kernels=K("reduction", n, (n + pixels) * b, 2)
            + K("elementwise", n, 3 * n * b, 5)
            + K("elementwise", pixels, 2 * pixels * b, 2)
            + K("elementwise", n, 2 * n * b, 1),
        )
    f = autocast_computes_in("pow", b, b)  # float32
    return LayerCost(
        flops_other=ELEMENTWISE_FLOPS["layer_norm2d"] * n,
        weight_bytes=2 * channels * b,
        input_bytes=n * b,
        output_bytes=n * f,
        # x-u twice (b); pow, divide, scale, shift (float32); u (b), the variance, s+eps, sqrt (float32) per pixel
        activation_bytes=2 * n * b + 4 * n * f + pixels * (b + 3 * f),
        # mean (b), the variance's mean (float32); x-u twice (b); pow (float32 from its cast input); the divide, the
        # scale (a b-byte weight times float32) and the shift in float32; +eps and sqrt per pixel in float32; the
        # cast of x-u to float32 inside pow
        kernels=K("reduction", n, (n + pixels) * b)
        + K("reduction", n, (n + pixels) * f)
        + K("elementwise", n, 3 * n * b, 2)
        + K("elementwise", n, 2 * n * f)
        + K("elementwise", n, n * (b + f) + pixels * f)
        + K("elementwise", n, 2 * n * f + channels * b, 2)
        + K("elementwise", pixels, 2 * pixels * f, 2)
        + casts(*autocast_casts("pow", ((n, b),), b)),
    )


def layer_norm2d_out_bytes(dtype_bytes: int, autocast: bool = False) -> int:
    """Element bytes of LayerNorm2d's output: float32 under CUDA autocast (see `layer_norm2d`), else the model's."""
    return autocast_computes_in("pow", dtype_bytes, dtype_bytes) if autocast else dtype_bytes


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
        # pow, mean, +eps, rsqrt, x·rsqrt, weight·x; the .to(float32) and .to(dtype) casts when b != 4
        kernels=K("elementwise", n, 8 * n, 1)
        + K("reduction", n, 4 * n + 4 * tokens, 1)
        + K("elementwise", tokens, 8 * tokens, 2)
        + K("elementwise", n, 12 * n, 1)
        + K("elementwise", n, 2 * n * b + dim * b, 1)
        + (K("copy", 0, n * (b + 4), 2) if b != 4 else NO_KERNELS),
    )


def embedding(tokens: int, num_embeddings: int, dim: int, dtype_bytes: int = 2) -> LayerCost:
    """nn.Embedding lookup: a gather, no arithmetic; reads only the `tokens` rows it gathers."""
    b = dtype_bytes
    return LayerCost(
        weight_bytes=tokens * dim * b,  # one table row gathered per id (the table is not streamed)
        input_bytes=tokens * 8,  # int64 ids
        output_bytes=tokens * dim * b,
        activation_bytes=tokens * dim * b,
        kernels=K("copy", 0, 2 * tokens * dim * b + tokens * 8, out=tokens * dim * b),  # one index_select
    )


def elementwise(numel: int, op: str = "add", inputs: int = 1, dtype_bytes: int = 2, read_bytes: int = 0) -> LayerCost:
    """One elementwise op (`op` a key of ELEMENTWISE_FLOPS) over `numel` outputs read from `inputs` tensors, its
    result `dtype_bytes` per element. `read_bytes`: bytes read per output element when the inputs' element sizes
    differ from the result's (0: `inputs` x `dtype_bytes`; a bfloat16 and a float32 operand give a float32 result,
    converted inside the one kernel)."""
    if op not in ELEMENTWISE_FLOPS:
        raise UnsupportedLayerError(f"elementwise:{op}", ELEMENTWISE_FLOPS)
    b = dtype_bytes
    r = read_bytes or inputs * b
    return LayerCost(
        flops_other=ELEMENTWISE_FLOPS[op] * numel,  # table value per element
        input_bytes=numel * r,
        output_bytes=numel * b,
        activation_bytes=numel * b,
        # one pointwise kernel; quick_gelu (x·sigmoid(1.702x), a scripted function) runs as three
        kernels=K(
            "elementwise",
            ELEMENTWISE_FLOPS[op] * numel // ELEMENTWISE_KERNELS.get(op, 1),
            numel * (r + b),
            ELEMENTWISE_KERNELS.get(op, 1),
            out=numel * b,
        ),
    )


def softmax(rows: int, cols: int, dtype_bytes: int = 2) -> LayerCost:
    n = rows * cols
    return LayerCost(
        flops_other=ELEMENTWISE_FLOPS["softmax"] * n,  # max, subtract, exp, sum, divide
        input_bytes=n * dtype_bytes,
        output_bytes=n * dtype_bytes,
        activation_bytes=n * dtype_bytes,
        kernels=K(
            "reduction", ELEMENTWISE_FLOPS["softmax"] * n, 2 * n * dtype_bytes, out=n * dtype_bytes
        ),  # one softmax
    )


INTERPOLATE_TAPS = {"linear": 2, "bilinear": 2, "bicubic": 4}  # input samples per output sample, per dimension


def interpolate(
    channels: int,
    in_size: tuple[int, ...],
    out_size: tuple[int, ...],
    mode: str = "bicubic",
    dtype_bytes: int = 4,
    antialias: bool = False,
) -> LayerCost:
    """F.interpolate (position-table resizing). Not a matmul in torch's counter: flops_other only.

    Taps per output element: the mode's per dimension (`INTERPOLATE_TAPS`: 2 linear, 4 bicubic), multiplied over the
    dimensions. With `antialias` (the vendor resizes its SAM and CLIP position tables so) a dimension shrunk by a
    factor s > 1 widens its filter by s: PyTorch's antialiased kernels take support = taps / 2 x s on each side of
    the centre (`_compute_indices_min_size_weights_aa`), so 4·s bicubic taps in it (SAM's 64 -> 32 table in Tiny: 8
    per dimension, 64 per output instead of 16). The vendor upcasts the table to float32 before resizing, hence the
    float32 default.
    """
    if mode not in INTERPOLATE_TAPS:
        raise UnsupportedLayerError(f"interpolate:{mode}", INTERPOLATE_TAPS)
    taps = 1.0
    for i, o in zip(in_size, out_size):
        taps *= INTERPOLATE_TAPS[mode] * (max(i / o, 1.0) if antialias else 1.0)
    n_in, n_out = channels * math.prod(in_size), channels * math.prod(out_size)
    flops = round(2 * taps * n_out)  # one multiply-add per tap per output element
    return LayerCost(
        flops_other=flops,
        input_bytes=n_in * dtype_bytes,
        output_bytes=n_out * dtype_bytes,
        activation_bytes=n_out * dtype_bytes,
        kernels=K("elementwise", flops, (n_in + n_out) * dtype_bytes, out=n_out * dtype_bytes),  # one upsample
    )


# The fused CUDA attention kernels tile the query rows of every (batch, head) sequence: one tile per CTA, of
# `SDPA_QUERY_TILE` rows (cuDNN's sm90 flash forward on the H200 recordings: `..._knob_7_64x128x64_...`, 64 query rows
# by 128 keys). Their kernel's `m` is the padded query rows, batch x heads x whole tiles: how many CTAs it has, what
# the kernel level's occupancy reads (`analytic.time.kernel`); elsewhere `m` is the sequence's query length.
CUDA_FUSED_SDPA = ("cudnn", "flash", "efficient")
SDPA_QUERY_TILE = 64


def sdpa(
    batch: int,
    heads: int,
    q_len: int,
    kv_len: int,
    head_dim: int,
    v_head_dim: int | None = None,
    kv_heads: int | None = None,
    mask: bool = False,
    fused: bool = True,
    dtype_bytes: int = 2,
    backend: str = "",
) -> LayerCost:
    """Attention core softmax(Q·Kᵀ·scale + mask)·V, fused (F.scaled_dot_product_attention) or eager.

    Eager (transformers' LlamaAttention) materialises the scores, their scaled and masked copies, the
    float32 softmax and its cast back; fused kernels materialise only the output. `backend`: the SDPA backend of a
    fused call where it is known (`analytic.execution.Execution.sdpa_backend`): cuDNN's call also zero-fills a
    4-byte counter (a `memset` inside the op).
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
    q_bytes = batch * q_len * heads * head_dim * b
    kv_bytes = batch * kv_len * kvh * (head_dim + ev) * b
    if fused:  # one scaled_dot_product_attention
        kernels = K(
            "attention",
            2 * scores * (head_dim + ev) + scores * (1 + mask + ELEMENTWISE_FLOPS["softmax"]),
            q_bytes + kv_bytes + out * b + (scores * b if mask else 0),
            m=batch * heads * -(-q_len // SDPA_QUERY_TILE) * SDPA_QUERY_TILE if backend in CUDA_FUSED_SDPA else q_len,
            out=out * b,
        ) + (K("memset", 0, 4, out=4) if backend == "cudnn" else NO_KERNELS)
    else:  # matmul, / sqrt(d), + mask, float32 softmax, .to(dtype) when b != 4 (dropout in eval: none), matmul
        s4 = scores * 4
        kernels = (
            K(
                "gemm",
                2 * scores * head_dim,
                q_bytes + batch * kv_len * kvh * head_dim * b + scores * b,
                m=q_len,
                out=scores * b,
            )
            + K("elementwise", scores, 2 * scores * b, 1 + (1 if mask else 0), out=scores * b)
            + K("reduction", 5 * scores, scores * b + s4, out=s4)
            + (K("copy", 0, s4 + scores * b, out=scores * b) if b != 4 else NO_KERNELS)
            + K("gemm", 2 * scores * ev, scores * b + batch * kv_len * kvh * ev * b + out * b, m=q_len, out=out * b)
        )
    return LayerCost(
        kernels=kernels,
        flops_matmul=2 * scores * head_dim + 2 * scores * ev,  # Q·Kᵀ: scores × d MACs; P·V: (B·H·Lq·Ev) × Lk MACs
        flops_other=scores * (1 + (1 if mask else 0) + ELEMENTWISE_FLOPS["softmax"]),  # scale, mask add, softmax
        input_bytes=batch * q_len * heads * head_dim * b
        + batch * kv_len * kvh * (head_dim + ev) * b
        + (scores * b if mask else 0),
        output_bytes=out * b,
        activation_bytes=act,
    )


def rotary_table(batch: int, tokens: int, head_dim: int, dtype_bytes: int = 2) -> LayerCost:
    """transformers' LlamaRotaryEmbedding: the cos/sin table, rebuilt on every call.

    inv_freq[None, :, None] @ position_ids[:, None, :] is a real bmm (B, d/2, 1) @ (B, 1, T) that
    torch's counter sees; then cat, cos, sin, cast.
    """
    half = head_dim // 2
    table = batch * tokens * head_dim  # cat((freqs, freqs)) -> (B, T, d)
    b = dtype_bytes
    return LayerCost(
        flops_matmul=2 * batch * half * 1 * tokens,  # bmm (B, d/2, 1)·(B, 1, T): B·(d/2)·T outputs of 1 MAC
        flops_other=2 * table,  # cos and sin over the (B, T, d) table
        input_bytes=batch * tokens * 8,  # int64 positions
        output_bytes=2 * table * b,
        # position_ids.float(), float32 freqs, cat, cos, sin (and ×attention_scaling, which makes two more),
        # cast to dtype
        activation_bytes=batch * tokens * 4
        + batch * half * tokens * 4
        + 5 * table * 4
        + (2 * table * b if b != 4 else 0),
        # position_ids.float(), the bmm, cat, cos, sin, x attention_scaling twice; the casts to dtype when b != 4
        kernels=K("copy", 0, batch * tokens * 12)
        + K("gemm", 2 * batch * half * tokens, batch * (half + 2 * half * tokens) * 4, m=half)
        + K("copy", 0, 2 * table * 4)
        + K("elementwise", table, 2 * table * 4, 4)
        + (K("copy", 0, table * (4 + b), 2) if b != 4 else NO_KERNELS),
    )


def rope_apply(batch: int, tokens: int, heads: int, kv_heads: int, head_dim: int, dtype_bytes: int = 2) -> LayerCost:
    """apply_rotary_pos_emb: q·cos + rotate_half(q)·sin, the same for k (elementwise, in the attention)."""
    table = batch * tokens * head_dim
    rotated = batch * tokens * (heads + kv_heads) * head_dim
    b = dtype_bytes
    return LayerCost(
        flops_other=ELEMENTWISE_FLOPS["rope"] * rotated,  # per element of q and k: negate, 2 multiplies, add
        input_bytes=rotated * b + 2 * table * b,
        output_bytes=rotated * b,
        # x·cos, cat (rotate_half), ·sin and the sum are q- and k-sized; -x2 negates only the second half
        activation_bytes=(9 * rotated * b) // 2,
        # per q and k: x·cos, -x2, cat (rotate_half), ·sin, the sum: 5 eager ops each
        kernels=K("elementwise", rotated // 2, 3 * rotated * b // 2, 6)
        + K("elementwise", rotated // 2, rotated * b // 2, 2)
        + K("copy", 0, rotated * b, 2),
    )


def kv_cache_bytes(batch: int, kv_heads: int, tokens: int, head_dim: int, dtype_bytes: int = 2) -> int:
    """Bytes one attention layer's KV cache holds for `tokens` cached positions (not a cost of a call:
    the state a decode step reads and leaves behind). Keys and values, each (B, kv_heads, tokens, d)
    in the cache's element type: 2·B·kv_heads·tokens·d·dtype_bytes."""
    return (
        2
        * _pos("batch", batch)
        * _pos("kv_heads", kv_heads)
        * max(int(tokens), 0)
        * _pos("head_dim", head_dim)
        * dtype_bytes
    )

"""What `torch.autocast("cuda", dtype)` does to an op's inputs, as the cost formulas need it: the op lists of PyTorch's
CUDA autocast policy (names only, as `aten/src/ATen/autocast_mode.h` lists them: `AT_FORALL_LOWER_PRECISION_FP`,
`AT_FORALL_FP32`, `AT_FORALL_FP32_SET_OPT_DTYPE`, `AT_FORALL_PROMOTE`, registered for the AutocastCUDA key) and the
kernels its casts launch. Pure data and arithmetic: no torch.

Before an op on one of the lists runs, its floating-point CUDA tensor inputs are cast (`cached_cast`):

* lower precision (`LOWER_PRECISION`: convolutions, linear, matmul, bmm, baddbmm, einsum, SDPA, ...): every input not
  already in the autocast dtype is cast to it; the op computes and returns that dtype;
* float32 (`FP32`: layer_norm, group_norm, pow, rsqrt, exp, log, the upsampling ops, the losses, ...): every input
  that is not float32 is cast to float32 (weights too: only lower-precision casts of float32 leaf weights are
  cached); the op computes and returns float32;
* float32 with an optional dtype (`FP32_SET_OPT_DTYPE`: softmax, log_softmax, sum, prod, cumsum, cumprod, norms):
  no input is cast by autocast; when the call gives no `dtype`, float32 is passed as its dtype, and the op converts
  its input itself (one conversion kernel inside the op) and returns float32;
* promote (`PROMOTE`: addcmul, addcdiv, index_put, scatter_add, ...): every input is cast to the widest dtype among
  them.

Every other op runs on its inputs as they are: mixed operands (a bfloat16 and a float32 tensor) follow type
promotion and give float32, converted inside the one kernel on CUDA (no cast kernel). An op that returns float32
therefore spreads float32 downstream until an op on the lower-precision list casts it back: under CUDA autocast a
bfloat16 model's LayerNorm output is float32, and so is everything elementwise after it (SAM's windows, CLIP's
residual stream), up to the next linear or convolution.

A cast is one kernel (`analytic.costs.casts`: kind `cast`, one of `analytic.costs.INNER_KINDS`) inside the op's
call: the profiler lists it, a Python-level op trace (TorchLens) does not, and its result is freed when the op returns
(so it is in the kernels' bytes, not in `activation_bytes`). CPU autocast has other lists (layer_norm, softmax and
pow are not on them); the cost formulas model CUDA's only (`analytic.execution.Execution.cuda_autocast`).
"""

from __future__ import annotations

Cast = tuple[int, int, int]  # (numel, from bytes, to bytes) of one cast

FLOAT32 = 4  # bytes of a float32 element

LOWER_PRECISION = frozenset(
    {
        "_convolution",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_tbc",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "convolution",
        "prelu",
        "addmm",
        "addmv",
        "addr",
        "matmul",
        "einsum",
        "mm",
        "mv",
        "linalg_vecdot",
        "linear",
        "addbmm",
        "baddbmm",
        "bmm",
        "chain_matmul",
        "linalg_multi_dot",
        "_scaled_dot_product_flash_attention",
        "scaled_dot_product_attention",
    }
)
FP32 = frozenset(
    {
        "acos",
        "asin",
        "cosh",
        "erfinv",
        "exp",
        "expm1",
        "log",
        "log10",
        "log2",
        "log1p",
        "reciprocal",
        "rsqrt",
        "sinh",
        "tan",
        "pow",
        "softplus",
        "layer_norm",
        "native_layer_norm",
        "group_norm",
        "frobenius_norm",
        "nuclear_norm",
        "cosine_similarity",
        "poisson_nll_loss",
        "cosine_embedding_loss",
        "nll_loss",
        "nll_loss2d",
        "hinge_embedding_loss",
        "kl_div",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "mse_loss",
        "margin_ranking_loss",
        "multilabel_margin_loss",
        "soft_margin_loss",
        "triplet_margin_loss",
        "multi_margin_loss",
        "binary_cross_entropy_with_logits",
        "dist",
        "pdist",
        "cdist",
        "renorm",
        "logsumexp",
        "upsample_nearest1d",
        "upsample_nearest2d",
        "upsample_nearest3d",
        "upsample_linear1d",
        "upsample_bilinear2d",
        "upsample_trilinear3d",
        "upsample_bicubic2d",
    }
)
FP32_SET_OPT_DTYPE = frozenset(
    {"prod", "softmax", "log_softmax", "cumprod", "cumsum", "linalg_vector_norm", "linalg_matrix_norm", "sum"}
)
PROMOTE = frozenset(
    {
        "addcdiv",
        "addcmul",
        "atan2",
        "bilinear",
        "cross",
        "dot",
        "vdot",
        "grid_sampler",
        "index_put",
        "tensordot",
        "scatter_add",
    }
)


def policy(op: str) -> str:
    """The CUDA autocast policy of an aten op name: "lower_precision", "fp32", "fp32_set_opt_dtype", "promote",
    or "" (not listed: runs on its inputs' dtypes)."""
    if op in LOWER_PRECISION:
        return "lower_precision"
    if op in FP32:
        return "fp32"
    if op in FP32_SET_OPT_DTYPE:
        return "fp32_set_opt_dtype"
    if op in PROMOTE:
        return "promote"
    return ""


def computes_in(op: str, input_bytes: int, lower_bytes: int) -> int:
    """Element bytes an op computes and returns under CUDA autocast, for an input of `input_bytes` (a single
    floating dtype), `lower_bytes` the autocast dtype's: lower-precision ops the autocast dtype, float32 ops float32,
    the rest their input's."""
    p = policy(op)
    if p == "lower_precision":
        return lower_bytes
    if p in ("fp32", "fp32_set_opt_dtype"):
        return FLOAT32
    return input_bytes


def input_casts(op: str, inputs: tuple[tuple[int, int], ...], lower_bytes: int) -> tuple[Cast, ...]:
    """The casts CUDA autocast makes before `op` of its floating inputs ((numel, element bytes), ...), each
    (numel, from bytes, to bytes): to the autocast dtype (lower precision), to float32 (fp32), to the widest
    (promote); none for the others (`fp32_set_opt_dtype` converts inside the op, as any op given a `dtype` does) and
    none for an input already in the target dtype."""
    p = policy(op)
    if p == "lower_precision":
        target = lower_bytes
    elif p == "fp32":
        target = FLOAT32
    elif p == "promote":
        target = max(b for _, b in inputs)
    else:
        return ()
    return tuple((n, b, target) for n, b in inputs if b != target and n > 0)

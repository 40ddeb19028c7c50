"""CUDA autocast in the cost formulas (`analytic.autocast`, `analytic.costs`): which ops cast which inputs, the cast
kernels (inside the op: counted by the device, not by an op trace) and the float32 results, as products of named
dimensions; without autocast every formula is the one it always was."""

from __future__ import annotations

from llm_perf_opt.analytic import autocast, costs
from llm_perf_opt.analytic.costs import INNER_KINDS, K


def test_policy_of_the_ops_the_models_run():
    assert {autocast.policy(op) for op in ("linear", "conv2d", "bmm", "baddbmm", "scaled_dot_product_attention")} == {
        "lower_precision"
    }
    assert {autocast.policy(op) for op in ("layer_norm", "pow", "rsqrt", "upsample_bicubic2d")} == {"fp32"}
    assert {autocast.policy(op) for op in ("softmax", "sum")} == {"fp32_set_opt_dtype"}
    assert autocast.policy("index_put") == "promote" and autocast.policy("add") == autocast.policy("cat") == ""
    assert autocast.computes_in("layer_norm", 2, 2) == 4 and autocast.computes_in("linear", 4, 2) == 2
    assert autocast.computes_in("add", 2, 2) == 2 and autocast.computes_in("sum", 2, 2) == 4
    # the casts before an op: only inputs not already in the target dtype
    assert autocast.input_casts("linear", ((100, 4), (50, 2)), 2) == ((100, 4, 2),)
    assert autocast.input_casts("layer_norm", ((100, 2), (8, 2), (8, 2)), 2) == ((100, 2, 4), (8, 2, 4), (8, 2, 4))
    assert autocast.input_casts("index_put", ((10, 2), (10, 4)), 2) == ((10, 2, 4),)
    assert autocast.input_casts("softmax", ((10, 2),), 2) == () == autocast.input_casts("add", ((10, 4),), 2)


def test_linear_casts_a_float32_input_under_autocast():
    t, i, o = 7, 16, 24
    plain = costs.linear(t, i, o, True, 2)
    cast = costs.linear(t, i, o, True, 2, in_bytes=4, autocast=True)
    assert (cast.flops, cast.activation_bytes, cast.output_bytes) == (plain.flops, plain.activation_bytes, t * o * 2)
    assert cast.input_bytes == t * i * 4
    assert cast.kernels == plain.kernels + K("cast", 0, t * i * (4 + 2), out=t * i * 2)
    assert cast.kernel_count == 2 and cast.op_kernel_count == 1 == plain.op_kernel_count  # the cast is inside linear
    assert costs.linear(t, i, o, True, 2, in_bytes=4) == costs.linear(t, i, o, True, 2, in_bytes=4, autocast=True)
    assert costs.linear(t, i, o, True, 2, autocast=True).kernels == plain.kernels  # a 16-bit input: nothing to cast
    conv = costs.conv2d(2, 3, 8, 10, 10, 3, 1, 1, False, 2, in_bytes=4, autocast=True)
    assert conv.kernels.by_kind() == {"conv": 1, "cast": 1} and conv.input_bytes == 2 * 3 * 10 * 10 * 4


def test_layer_norm_is_float32_under_autocast():
    rows, dim = 5, 12
    n = rows * dim
    ln = costs.layer_norm(rows, dim, 2, autocast=True)
    assert ln.output_bytes == n * 4 and ln.activation_bytes == n * 4 + 2 * rows * 4
    assert costs.layer_norm_out_bytes(2, True) == 4 and costs.layer_norm_out_bytes(2) == 2
    # the input and the 16-bit weight and bias cast to float32 inside the call; one native_layer_norm
    assert ln.kernels.by_kind() == {"reduction": 1, "cast": 3} and ln.op_kernel_count == 1
    # a float32 input (CLIP's residual stream): only the weight and bias are cast
    assert costs.layer_norm(rows, dim, 2, in_bytes=4, autocast=True).kernels.by_kind() == {"reduction": 1, "cast": 2}
    assert costs.layer_norm(rows, dim, 2) == costs.layer_norm(rows, dim, 2, autocast=False)


def test_layer_norm2d_under_autocast():
    b, c, h, w = 2, 8, 4, 4
    px, n = b * h * w, b * c * h * w
    plain = costs.layer_norm2d(b, c, h, w, 2)
    ac = costs.layer_norm2d(b, c, h, w, 2, autocast=True)
    assert ac.op_kernel_count == plain.kernel_count == 10  # the same ten eager ops
    assert ac.kernels.by_kind()["cast"] == 1  # (x - u) to float32 for pow
    # x-u twice in 16 bits; pow, divide, scale, shift in float32; u in 16 bits, the variance, +eps, sqrt in float32
    assert ac.activation_bytes == 2 * n * 2 + 4 * n * 4 + px * (2 + 3 * 4)
    assert plain.activation_bytes == 6 * n * 2 + 4 * px * 2
    assert ac.output_bytes == n * 4 and costs.layer_norm2d_out_bytes(2, True) == 4


def test_inner_kinds_are_not_op_kernels():
    assert set(INNER_KINDS) == {"cast", "memset", "relayout"} and set(INNER_KINDS) <= set(costs.KERNEL_KINDS)
    k = K("gemm", 10, 10, m=1) + K("cast", 0, 6) + K("memset", 0, 4) + K("copy", 0, 8, 2) + K("relayout", 0, 8)
    assert (k.count, k.op_count) == (6, 3)
    cudnn = costs.sdpa(1, 4, 9, 9, 16, mask=True, fused=True, backend="cudnn")
    assert cudnn.kernels.by_kind() == {"attention": 1, "memset": 1} and cudnn.op_kernel_count == 1
    assert costs.sdpa(1, 4, 9, 9, 16, mask=True, fused=True) == cudnn  # the same costs; only the kernels differ
    # a fused CUDA kernel's m: its query rows padded to whole tiles, over every (batch, head); else the query length
    ((_, m, *_),) = [key for key in cudnn.kernels.counts if key[0] == "attention"]
    ((_, m_cpu, *_),) = costs.sdpa(1, 4, 9, 9, 16, mask=True, fused=True, backend="cpu_flash").kernels.counts
    assert (m, m_cpu) == (1 * 4 * costs.SDPA_QUERY_TILE, 9)
    big = costs.sdpa(2, 3, 130, 130, 64, fused=True, backend="flash").kernels.counts
    assert [key[1] for key in big] == [2 * 3 * 3 * costs.SDPA_QUERY_TILE]  # 130 rows: three tiles of 64


def test_a_strided_layer_norm_input_is_copied_contiguous_inside_the_op():
    plain = costs.layer_norm(10, 8, 2, 0, autocast=True)
    strided = costs.layer_norm(10, 8, 2, 0, autocast=True, strided=True)
    # one more kernel, inside native_layer_norm (not an op TorchLens sees): the float32 input copied contiguous
    assert strided.kernels == plain.kernels + K("relayout", 0, 2 * 80 * 4, out=80 * 4)
    assert strided.op_kernel_count == plain.op_kernel_count == 1
    assert strided == plain  # FLOPs and bytes as before: the copy is in the kernels only
    no_ac = costs.layer_norm(10, 8, 2, 0, strided=True)
    assert no_ac.kernels == costs.layer_norm(10, 8, 2, 0).kernels + K("relayout", 0, 2 * 80 * 2, out=80 * 2)
    assert costs.casts((10, 2, 4), (5, 4, 4)) == K("cast", 0, 60, out=40)

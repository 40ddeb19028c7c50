"""Attention FLOPs on the kernels CUDA runs, counted exactly once.

On any torch: the formulas the project adds (`extra_formulas`) cover only ops torch's own registry lacks,
and the SDPA kernels torch runs on CUDA (flash, memory-efficient, cuDNN) are counted by torch's own
formulas. flash-attn's custom ops (`flash_attention_2` on CUDA) cannot run here, so an op with the same
schema and the same (batch, seq, heads, dim) layout is registered on CPU under a test namespace and
counted through the real FlopCounterMode path. On a CUDA machine, the real kernels are counted against
the math backend.
"""

from __future__ import annotations

import math
from typing import Optional

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils import flop_counter as fc

from llm_perf_opt.measure import flop_counter_adapter as adapter
from llm_perf_opt.measure.flops import count_flops, is_matmul_like

CUDA_SDPA_OPS = (
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
)
TEST_NS = "llm_perf_opt_flash_test"


def test_extra_formulas_cover_only_ops_torch_does_not_count():
    extra = adapter.extra_formulas()
    assert extra, "the CPU SDPA kernel needs a formula on this torch"
    for packet in extra:
        assert packet not in fc.flop_registry, f"{packet} is counted by torch already: it would count twice"


def test_cuda_sdpa_kernels_are_counted_by_torch_itself():
    """The kernels F.scaled_dot_product_attention dispatches to on CUDA have torch's formulas (so the
    project adds none for them); the CPU kernel is the one torch lacks and the project covers."""
    extra = adapter.extra_formulas()
    checked = 0
    for name in CUDA_SDPA_OPS:
        packet = getattr(torch.ops.aten, name, None)
        if packet is None:  # not in this torch build: nothing can run it
            continue
        assert packet in fc.flop_registry, f"aten.{name}: torch {torch.__version__} has no FLOP formula"
        assert packet not in extra
        checked += 1
    assert checked >= 1, f"none of {CUDA_SDPA_OPS} is in torch {torch.__version__}"
    cpu = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu
    assert (cpu in fc.flop_registry) != (cpu in extra), "the CPU SDPA kernel must be counted exactly once"


def test_flash_attn_op_names_are_matmul_like():
    """A flash-attn op running without a formula is FLOPs lost: verification must flag it, not skip it."""
    for name in (
        "flash_attn._flash_attn_forward",
        "flashattn._flash_attn_varlen_forward",
        "flash_attn_3._flash_attn_forward",
    ):
        assert is_matmul_like(name), name


# ------------------------------------------------------------------- a CPU stand-in for flash-attn's ops
def _attention_bshd(q, k, v, causal: bool) -> torch.Tensor:
    """Attention in flash-attn's (batch, seq, heads, dim) layout, K/V heads repeated for GQA."""
    rep = q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(rep, dim=2), v.repeat_interleave(rep, dim=2)
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=causal)
    return out.transpose(1, 2).contiguous()


@pytest.fixture(scope="module")
def stand_in_ops():
    """`<TEST_NS>::_flash_attn_forward` and `::_flash_attn_varlen_forward` with flash-attn's schemas, on CPU."""

    @torch.library.custom_op(f"{TEST_NS}::_flash_attn_forward", mutates_args=(), device_types="cpu")
    def dense(
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        dropout_p: float,
        softmax_scale: float,
        causal: bool,
        window_size_left: int,
        window_size_right: int,
        softcap: float,
        alibi_slopes: Optional[torch.Tensor],
        return_softmax: bool,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        out = _attention_bshd(q, k, v, causal)
        return out, q.new_zeros(q.shape[0], q.shape[2], q.shape[1]), q.new_empty(0), q.new_zeros(2)

    @torch.library.custom_op(f"{TEST_NS}::_flash_attn_varlen_forward", mutates_args=(), device_types="cpu")
    def varlen(
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        cu_seqlens_q: torch.Tensor,
        cu_seqlens_k: torch.Tensor,
        max_seqlen_q: int,
        max_seqlen_k: int,
        dropout_p: float,
        softmax_scale: float,
        causal: bool,
        window_size_left: int = -1,
        window_size_right: int = -1,
        softcap: float = 0.0,
        alibi_slopes: Optional[torch.Tensor] = None,
        return_softmax: bool = False,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        pieces = []
        bq, bk = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
        for i in range(len(bq) - 1):
            qi, ki, vi = q[bq[i] : bq[i + 1]], k[bk[i] : bk[i + 1]], v[bk[i] : bk[i + 1]]
            pieces.append(_attention_bshd(qi[None], ki[None], vi[None], causal)[0])
        return torch.cat(pieces), q.new_zeros(q.shape[1], q.shape[0]), q.new_empty(0), q.new_zeros(2)

    return getattr(torch.ops, TEST_NS)


@pytest.mark.parametrize("b,lq,lk,h,hk,e", [(2, 5, 5, 4, 4, 8), (1, 1, 9, 4, 2, 16), (1, 278, 278, 10, 10, 128)])
def test_flash_attn_dense_formula_counts_once_through_flop_counter_mode(stand_in_ops, b, lq, lk, h, hk, e):
    formulas = adapter.flash_attn_formulas((TEST_NS,))
    assert set(formulas) == {stand_in_ops._flash_attn_forward, stand_in_ops._flash_attn_varlen_forward}
    q, k, v = torch.randn(b, lq, h, e), torch.randn(b, lk, hk, e), torch.randn(b, lk, hk, e)
    counter = adapter.RecordingFlopCounter(formulas)
    with torch.no_grad(), counter:
        stand_in_ops._flash_attn_forward(q, k, v, 0.0, e**-0.5, True, -1, -1, 0.0, None, False)
    # Q·Kᵀ + P·V over every (query, key) pair and every query head; no causal discount (torch's convention)
    assert counter.get_total_flops() == 2 * b * h * lq * lk * e * 2
    # counted as the one op it is: the SDPA inside the stand-in's body is not seen a second time
    assert dict(counter.op_calls) == {f"{TEST_NS}._flash_attn_forward": 1}
    assert not counter.no_formula


def test_flash_attn_varlen_formula_sums_the_packed_sequences(stand_in_ops):
    h, e = 4, 8
    lq, lk = [3, 5], [4, 6]
    q, k, v = torch.randn(sum(lq), h, e), torch.randn(sum(lk), h, e), torch.randn(sum(lk), h, e)
    cu_q, cu_k = torch.tensor([0, 3, 8], dtype=torch.int32), torch.tensor([0, 4, 10], dtype=torch.int32)
    counter = adapter.RecordingFlopCounter(adapter.flash_attn_formulas((TEST_NS,)))
    with torch.no_grad(), counter:
        stand_in_ops._flash_attn_varlen_forward(q, k, v, cu_q, cu_k, 5, 6, 0.0, e**-0.5, False)
    assert counter.get_total_flops() == sum(2 * h * a * c * e * 2 for a, c in zip(lq, lk))


def test_count_flops_uses_the_flash_formulas_of_registered_ops(stand_in_ops, monkeypatch):
    """`count_flops` (what the trace job calls) picks up flash-attn's ops when they are registered."""
    monkeypatch.setattr(adapter, "FLASH_ATTN_NAMESPACES", (*adapter.FLASH_ATTN_NAMESPACES, TEST_NS))
    q = torch.randn(1, 7, 2, 8)
    measured, _ = count_flops(
        lambda: stand_in_ops._flash_attn_forward(q, q, q, 0.0, 1.0, False, -1, -1, 0.0, None, False)
    )
    assert measured.total == 2 * 2 * 7 * 7 * 8 * 2
    assert not measured.matmul_like_without_formula


def test_without_a_formula_a_flash_op_is_reported_lost(stand_in_ops):
    q = torch.randn(1, 3, 2, 8)
    measured, _ = count_flops(
        lambda: stand_in_ops._flash_attn_forward(q, q, q, 0.0, 1.0, False, -1, -1, 0.0, None, False)
    )
    assert measured.total == 0
    assert measured.matmul_like_without_formula == {f"{TEST_NS}._flash_attn_forward": 1}


# ------------------------------------------------------------------------------------- on a CUDA GPU
cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (torch.cuda.is_available() is false)")


@cuda
@pytest.mark.cuda
@pytest.mark.parametrize(
    "backend,dtype,mask",
    [
        (SDPBackend.FLASH_ATTENTION, torch.bfloat16, False),
        (SDPBackend.EFFICIENT_ATTENTION, torch.float32, True),
        (SDPBackend.EFFICIENT_ATTENTION, torch.bfloat16, False),
        (SDPBackend.CUDNN_ATTENTION, torch.bfloat16, False),
    ],
)
def test_cuda_sdpa_kernel_counts_equal_the_math_backend(backend, dtype, mask):
    b, h, lq, lk, e = 2, 4, 64, 96, 64
    dev = torch.device("cuda")
    q, k, v = (torch.randn(b, h, n, e, device=dev, dtype=dtype) for n in (lq, lk, lk))
    m = torch.randn(b, h, lq, lk, device=dev, dtype=dtype) if mask else None
    try:
        with sdpa_kernel(backend):
            measured, _ = count_flops(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m))
    except RuntimeError as exc:  # this GPU / build has no such kernel for these inputs
        pytest.skip(f"{backend.name} unavailable here: {str(exc).splitlines()[0]}")
    with sdpa_kernel(SDPBackend.MATH):
        reference, _ = count_flops(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m))
    assert measured.total == reference.total == 2 * b * h * lq * lk * e * 2
    assert not measured.matmul_like_without_formula


@cuda
@pytest.mark.cuda
def test_flash_attn_package_ops_are_counted_once():
    """flash-attn itself (the `gpu` extra): its custom op gets the formula, its result the same count."""
    flash_attn = pytest.importorskip("flash_attn", reason="flash-attn is not installed (the gpu extra)")
    formulas = adapter.flash_attn_formulas()
    if not formulas:
        pytest.fail(
            f"flash-attn {flash_attn.__version__} registers no torch custom op: its kernels are invisible "
            "to FlopCounterMode (use runtime.attn_implementation=sdpa, or flash-attn >= 2.7)"
        )
    b, s, h, e = 1, 128, 8, 64
    q, k, v = (torch.randn(b, s, h, e, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    measured, _ = count_flops(lambda: flash_attn.flash_attn_func(q, k, v, causal=True))
    assert measured.total == 2 * b * h * s * s * e * 2
    assert not measured.matmul_like_without_formula
    assert math.isclose(measured.total, adapter.flash_attn_flops(q.shape, k.shape, v.shape))

"""The FlopCounterMode adapter: torch's own SDPA formula gives the project's numbers, the private hook is
gated, and a torch that moved it gets one clear error."""

from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.utils.flop_counter import FlopCounterMode, sdpa_flop_count

from llm_perf_opt.measure import flop_counter_adapter as adapter
from llm_perf_opt.measure.flops import count_flops


@pytest.fixture
def fresh_gate():
    adapter.check_flop_counter.cache_clear()
    yield
    adapter.check_flop_counter.cache_clear()


@pytest.mark.parametrize(
    "b,h,kv_heads,lq,lk,e,ev",
    [
        (2, 4, 4, 3, 5, 8, 8),
        (1, 10, 10, 278, 278, 128, 128),  # the decoder's prefill attention
        (2, 4, 2, 3, 5, 8, 6),  # GQA, a different value width
        (3, 2, 1, 1, 9, 4, 4),  # one decode query, one K/V head
    ],
)
def test_torch_sdpa_formula_is_the_named_dims_formula(b, h, kv_heads, lq, lk, e, ev):
    expected = 2 * b * h * lq * lk * e + 2 * b * h * lq * lk * ev  # Q·Kᵀ + P·V, no causal discount
    assert adapter.sdpa_flops((b, h, lq, e), (b, kv_heads, lk, e), (b, kv_heads, lk, ev)) == expected
    if kv_heads == h:  # torch's function itself, called directly, agrees
        assert sdpa_flop_count((b, h, lq, e), (b, h, lk, e), (b, h, lk, ev)) == expected


def test_leading_dims_fold_into_the_batch():
    assert adapter.sdpa_flops((2, 3, 4, 5, 8), (2, 3, 4, 7, 8), (2, 3, 4, 7, 8)) == 2 * 6 * 4 * 5 * 7 * 8 * 2


@pytest.mark.parametrize("mask", [False, True])
def test_cpu_kernel_count_equals_the_math_backend_count(mask):
    """The formula given to the CPU flash kernel counts what torch counts for the same attention run as
    plain bmm ops (the MATH backend, torch's own mm/bmm formulas)."""
    b, h, lq, lk, e = 2, 3, 5, 7, 4
    q, k, v = torch.randn(b, h, lq, e), torch.randn(b, h, lk, e), torch.randn(b, h, lk, e)
    m = torch.randn(b, h, lq, lk) if mask else None
    measured, _ = count_flops(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m))
    assert any("for_cpu" in name for name in measured.op_calls)  # the fused CPU kernel really ran
    math_counter = FlopCounterMode(display=False)
    with torch.no_grad(), sdpa_kernel(SDPBackend.MATH), math_counter:
        F.scaled_dot_product_attention(q, k, v, attn_mask=m)
    assert measured.total == math_counter.get_total_flops() == 2 * b * h * lq * lk * e * 2


def test_this_torch_passes_the_gate(fresh_gate):
    lo, hi = adapter.CHECKED_TORCH
    assert lo <= adapter.torch_version() <= hi
    adapter.check_flop_counter()  # signature and probe


def test_a_moved_hook_is_one_clear_error(fresh_gate, monkeypatch):
    def renamed(self, func_packet, out, args, kwargs, extra):  # a signature torch might move to
        return out

    monkeypatch.setattr(FlopCounterMode, "_count_flops", renamed)
    with pytest.raises(adapter.FlopCounterAPIError, match=r"changed its signature.*flop_counter_adapter\.py"):
        adapter.check_flop_counter()
    adapter.check_flop_counter.cache_clear()
    monkeypatch.delattr(FlopCounterMode, "_count_flops")
    with pytest.raises(
        adapter.FlopCounterAPIError, match=re.escape(f"torch {torch.__version__}: FlopCounterMode has no")
    ):
        adapter.check_flop_counter()


def test_a_hook_no_longer_called_is_caught_by_the_probe(fresh_gate, monkeypatch):
    class Silent(adapter.RecordingFlopCounter):  # the hook exists but torch stopped calling it per op
        def _count_flops(self, func_packet, out, args, kwargs):
            return out

    monkeypatch.setattr(adapter, "RecordingFlopCounter", Silent)
    with pytest.raises(adapter.FlopCounterAPIError, match="probe matmul"):
        adapter.check_flop_counter()


def test_an_unchecked_torch_warns_once_when_the_probe_passes(fresh_gate, monkeypatch):
    monkeypatch.setattr(torch, "__version__", "2.99.0")
    with pytest.warns(UserWarning, match="outside the range"):
        adapter.check_flop_counter()

"""Measured FLOPs: the CPU attention formula, recording of ops without a formula, module paths, fvcore."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from llm_perf_opt.measure.flop_counter_adapter import extra_formulas
from llm_perf_opt.measure.flops import count_flops, fvcore_flops, is_matmul_like, measure_forward


class Attn(nn.Module):
    def __init__(self, dim=8, heads=2):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        b, n, d = x.shape
        q, k, v = self.qkv(self.norm(x)).view(b, n, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        return F.gelu(F.scaled_dot_product_attention(q, k, v)).transpose(1, 2).reshape(b, n, d)


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Attn()
        self.head = nn.Linear(8, 3, bias=False)

    def forward(self, x):
        return self.head(self.block(x))


def test_cpu_sdpa_is_counted():
    batch, heads, seq, hd = 2, 3, 5, 4
    q, k, v = (torch.randn(batch, heads, seq, hd) for _ in range(3))
    plain = FlopCounterMode(display=False)
    with plain:
        F.scaled_dot_product_attention(q, k, v)
    expected = 2 * batch * heads * seq * seq * hd * 2
    measured, _ = count_flops(lambda: F.scaled_dot_product_attention(q, k, v))
    assert measured.total == expected
    if plain.get_total_flops() == 0:  # torch's own registry misses the CPU kernel: we must add it
        assert any("for_cpu" in str(op) for op in extra_formulas())
        assert any("for_cpu" in name for name in measured.extra_formulas)


def test_module_paths_and_op_records():
    model = Outer()
    x = torch.randn(2, 5, 8)
    measured, out = measure_forward(model, {"x": x})
    assert out.shape == (2, 5, 3)
    tokens, dim, heads, hd = 10, 8, 2, 4
    qkv = 2 * tokens * dim * 3 * dim
    sdpa = 2 * 2 * heads * 5 * 5 * hd * 2
    head = 2 * tokens * dim * 3
    assert measured.by_module["block.qkv"] == qkv
    assert measured.by_module["block"] == qkv + sdpa  # SDPA runs in `block` itself
    assert measured.by_module["head"] == head
    assert measured.total == measured.module("") == qkv + sdpa + head
    assert measured.module("block.norm") == 0  # ran, but no counted op
    assert measured.root == "Outer"
    # elementwise/norm ops are listed with call counts; none of them is matmul-like
    assert measured.ops_without_formula["aten.native_layer_norm"] == 1
    assert measured.ops_without_formula["aten.gelu"] == 1
    assert measured.matmul_like_without_formula == {}
    assert measured.counted_ops["aten.addmm"] == 1


def test_matmul_like_ops_without_formula_are_flagged():
    a, x = torch.randn(5, 4), torch.randn(4)
    measured, _ = count_flops(lambda: torch.mv(a, x) + torch.dot(x, x))
    assert measured.total == 0  # torch has no formula for mv / dot: these FLOPs would vanish silently
    assert set(measured.matmul_like_without_formula) == {"aten.mv", "aten.dot"}
    assert is_matmul_like("aten.bmm") and is_matmul_like("aten._scaled_dot_product_flash_attention_for_cpu")
    assert not is_matmul_like("aten.add") and not is_matmul_like("aten._softmax")
    assert not is_matmul_like("aten.upsample_bicubic2d") and not is_matmul_like("aten.native_layer_norm")


def test_fvcore_second_opinion_counts_macs_and_skips_attention():
    model = Outer()
    x = torch.randn(2, 5, 8)
    fv = fvcore_flops(model, {"x": x})
    assert fv.ok, fv.error
    measured, _ = measure_forward(model, {"x": x})
    linear_flops = measured.by_module["block.qkv"] + measured.by_module["head"]
    assert fv.by_operator["linear"] == linear_flops  # ×2 of fvcore's multiply-adds
    assert "aten::scaled_dot_product_attention" in fv.unsupported_ops
    assert fv.by_module["block.qkv"] == measured.by_module["block.qkv"]
    # layer_norm is counted by fvcore but not by torch: report, do not hide
    assert fv.total == linear_flops + fv.by_operator.get("layer_norm", 0)
    assert fv.total < measured.total  # the attention FLOPs fvcore skips


def test_fvcore_failure_is_recorded():
    class Bad(nn.Module):
        def forward(self, x):
            raise RuntimeError("boom in forward")

    fv = fvcore_flops(Bad(), {"x": torch.randn(2)})
    assert not fv.ok and "boom in forward" in fv.error
    assert fv.module("") is None


def test_count_flops_requires_nothing_global():
    from torch.utils.flop_counter import flop_registry

    before = set(flop_registry)
    count_flops(lambda: F.scaled_dot_product_attention(*(torch.randn(1, 1, 2, 2) for _ in range(3))))
    assert set(flop_registry) == before  # per-instance formulas, torch's registry untouched


@pytest.mark.parametrize("gqa", [1, 2])
def test_cpu_sdpa_formula_with_gqa_shapes(gqa):
    from llm_perf_opt.measure.flop_counter_adapter import sdpa_flops

    assert (
        sdpa_flops((2, 4, 3, 8), (2, 4 // gqa, 5, 8), (2, 4 // gqa, 5, 6))
        == 2 * 2 * 4 * 3 * 5 * 8 + 2 * 2 * 4 * 3 * 5 * 6
    )


def test_fvcore_reconciliation_by_op_family():
    from llm_perf_opt.measure.flops import reconcile_fvcore

    model = Outer()
    x = torch.randn(2, 5, 8)
    measured, _ = measure_forward(model, {"x": x})
    rec = reconcile_fvcore(measured, fvcore_flops(model, {"x": x}))
    fam = {r["family"]: r for r in rec["families"]}
    assert fam["linear (mm, addmm)"]["fvcore_minus_torch"] == 0
    sdpa = 2 * 2 * 2 * 5 * 5 * 4 * 2
    assert fam["attention (SDPA; fvcore skips it)"]["torch"] == sdpa
    assert rec["fvcore_minus_torch"] == sum(r["fvcore_minus_torch"] for r in rec["families"])
    assert any(k.startswith("fvcore only: layer_norm") for k in fam)

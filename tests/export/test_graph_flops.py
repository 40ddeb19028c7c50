"""FLOPs from torch's formulas applied to an exported graph, against FlopCounterMode and the closed forms,
and the op table built from the same records."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from llm_perf_opt.export.flops import flops_by_module, graph_ops, total_flops
from llm_perf_opt.export.modules import ExportCall
from llm_perf_opt.export.optable import COLUMNS, op_rows, op_totals, read_csv, write_csv
from llm_perf_opt.export.program import export_graphs
from llm_perf_opt.measure import count_flops

B, C_IN, C_OUT, SIDE, K = 2, 3, 8, 16, 3  # conv: stride 2, padding 1 -> 8x8 output
HEADS, TOKENS, HEAD_DIM = 2, 64, 4  # attention over the 8x8 grid, 8 channels = 2 heads x 4
HIDDEN = 16


class Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(C_IN, C_OUT, K, stride=2, padding=1)
        self.proj = nn.Linear(C_OUT, HIDDEN)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        y = self.conv(x).flatten(2).transpose(1, 2)  # (B, 64, 8)
        q = y.view(B, TOKENS, HEADS, HEAD_DIM).transpose(1, 2)
        out = F.scaled_dot_product_attention(q, q, q, attn_mask=bias)  # CPU: no formula in torch itself
        return self.proj(out.transpose(1, 2).reshape(B, TOKENS, C_OUT))


def expected_flops() -> dict[str, int]:
    g = SIDE // 2
    return {
        "conv": 2 * B * C_OUT * g * g * C_IN * K * K,
        "attention": 2 * (2 * B * HEADS * TOKENS * TOKENS * HEAD_DIM),  # Q.K^T and P.V
        "proj": 2 * B * TOKENS * C_OUT * HIDDEN,
    }


def exported():
    torch.manual_seed(0)
    module = Tiny().eval()
    call = ExportCall(module, (torch.randn(B, C_IN, SIDE, SIDE), torch.randn(B, HEADS, TOKENS, TOKENS)), {})
    return call, export_graphs(call)


def test_graph_flops_equal_flop_counter_and_closed_form():
    call, graphs = exported()
    ops = graph_ops(graphs.core)
    want = expected_flops()
    assert total_flops(ops) == sum(want.values())
    eager, _ = count_flops(call.run, call.module)
    assert eager.total == sum(want.values())
    by_module = flops_by_module(ops)
    assert by_module["conv"] == want["conv"] and by_module["proj"] == want["proj"]
    assert by_module[""] - by_module["conv"] - by_module["proj"] == want["attention"]
    # the export IR keeps the composites; core ATen has the ops the formulas are written for
    ir = {str(n.target) for n in graphs.program.graph.nodes if n.op == "call_function"}
    assert {"aten.conv2d.default", "aten.linear.default", "aten.scaled_dot_product_attention.default"} <= ir
    core = {o.op for o in ops}
    assert "aten.convolution.default" in core and "aten.bmm.default" in core
    assert not any("scaled_dot_product" in op for op in core)
    sdpa_bmm = [o for o in ops if o.op == "aten.bmm.default" and "scaled_dot_product" in o.source]
    assert sum(o.flops for o in sdpa_bmm) == want["attention"]


def test_op_table_rows_and_csv(tmp_path):
    _, graphs = exported()
    ops = graph_ops(graphs.core)
    rows = op_rows(ops)
    assert sum(r.count for r in rows) == len(ops)
    conv = [r for r in rows if r.op == "aten.convolution.default"]
    assert len(conv) == 1 and conv[0].flops == expected_flops()["conv"]
    assert conv[0].input_shapes[:2] == ((B, C_IN, SIDE, SIDE), (C_OUT, C_IN, K, K))
    assert conv[0].sources == ("aten.conv2d.default",) and conv[0].modules == ("conv",)
    path = write_csv(tmp_path / "tiny.ops.csv", rows)
    table = read_csv(path)
    assert tuple(table[0]) == COLUMNS and len(table) == len(rows)
    assert sum(int(r["flops"]) for r in table if r["flops"]) == sum(expected_flops().values())
    assert next(r for r in table if r["op"] == "aten.convolution.default")["input_shapes"].startswith(
        f"[{B}, {C_IN}, {SIDE}, {SIDE}] x [{C_OUT}, {C_IN}, {K}, {K}]"
    )
    totals = op_totals(rows)
    assert totals["aten.convolution.default"] == {"count": 1, "flops": expected_flops()["conv"], "signatures": 1}
    assert totals["aten.view.default"]["flops"] is None  # no formula: no FLOPs, never a silent zero

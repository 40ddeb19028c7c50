"""Each analytic cost formula (an op of `costs`, or a module class through the registry) against torch's
FlopCounterMode on a tiny real module of that kind.

Expected values are written as products of named dimensions (never by calling the code under test);
every module here is a minimal implementation of the op sequence the vendor runs, written for the test.
"""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

import llm_perf_opt.dsocr.costs  # noqa: F401 - registers the v1 family's formulas (CLIP's) with the registry
from llm_perf_opt.analytic import costs as cost_formulas
from llm_perf_opt.analytic.costs import LayerCost, UnsupportedLayerError
from llm_perf_opt.analytic.registry import collect_costs, layer_cost, supported_modules
from llm_perf_opt.deepseek_ocr_shared.costs import AttentionShape
from llm_perf_opt.deepseek_ocr_shared.spec import DecoderSpec
from llm_perf_opt.measure.flop_counter_adapter import extra_formulas

torch.manual_seed(0)


def measured(fn) -> int:
    """FLOPs torch counts for fn(), with the CPU SDPA formula this project adds."""
    counter = FlopCounterMode(display=False, custom_mapping=extra_formulas())
    with torch.no_grad(), counter:
        fn()
    return counter.get_total_flops()


# --------------------------------------------------------------------------------------------- registry
def test_registry_has_every_layer_kind_of_the_issue():
    classes = set(supported_modules())
    required = {"Linear", "Conv2d", "LayerNorm", "Embedding"} | {
        f"dsocr.{c}"
        for c in (
            "DeepseekV2RMSNorm",
            "Attention",
            "NoTPAttention",
            "DeepseekV2MLP",
            "DeepseekV2MoE",
            "LlamaRotaryEmbedding",
            "LlamaAttention",
            "LlamaSdpaAttention",
        )
    }
    assert required <= classes


def test_unknown_class_is_reported_never_zero():
    with pytest.raises(UnsupportedLayerError, match="FlashMLA"):
        layer_cost("FlashMLA", tokens=3)
    total, unsupported = collect_costs(
        [
            ("Linear", dict(tokens=2, in_features=3, out_features=5)),
            ("MambaScan", dict(tokens=2)),
            ("ModuleList", {}),  # counted by its children: no cost of its own to sum here
        ]
    )
    assert unsupported == ["MambaScan", "ModuleList"]
    assert total.flops_matmul == 2 * 2 * 3 * 5
    with pytest.raises(UnsupportedLayerError):
        cost_formulas.elementwise(10, "swiglu_fused")


def test_layer_cost_arithmetic_and_units():
    a = LayerCost(1, 2, 3, 4, 5, 6)
    b = LayerCost(10, 20, 30, 40, 50, 60)
    s = a + b
    assert s == LayerCost(11, 22, 33, 44, 55, 66)
    assert sum([a, b]) == s
    assert a.times(3) == LayerCost(3, 6, 9, 12, 15, 18)
    assert s.flops == 33 and s.io_bytes == 33 + 44 + 55
    big = LayerCost(weight_bytes=2 * 10**9, input_bytes=10**12, activation_bytes=3 * 10**9)
    assert big.weights_gb == 2.0 and big.activations_gb == 3.0
    assert big.io_tb == pytest.approx(1.002)


# --------------------------------------------------------------------------------------------- primitives
def test_linear():
    batch, seq, d_in, d_out = 2, 7, 12, 5
    lin = nn.Linear(d_in, d_out)
    x = torch.randn(batch, seq, d_in)
    tokens = batch * seq
    cost = cost_formulas.linear(tokens, d_in, d_out, bias=True, dtype_bytes=4)
    assert cost.flops_matmul == 2 * tokens * d_in * d_out == measured(lambda: lin(x))
    assert cost.flops_other == tokens * d_out  # bias adds
    assert cost.weight_bytes == (d_in * d_out + d_out) * 4
    assert cost.input_bytes == tokens * d_in * 4 and cost.output_bytes == tokens * d_out * 4


@pytest.mark.parametrize(
    "side,kernel,stride,padding,out_side",
    [
        (32, 16, 16, 0, 2),  # SAM patch embedding
        (10, 1, 1, 0, 10),  # neck 1x1
        (10, 3, 1, 1, 10),  # neck 3x3
        (10, 3, 2, 1, 5),  # net_2 / net_3
        (5, 3, 2, 1, 3),  # odd side: ceil
    ],
)
def test_conv2d(side, kernel, stride, padding, out_side):
    batch, c_in, c_out = 2, 3, 4
    conv = nn.Conv2d(c_in, c_out, kernel, stride, padding, bias=False)
    x = torch.randn(batch, c_in, side, side)
    cost = cost_formulas.conv2d(batch, c_in, c_out, side, side, kernel, stride, padding, bias=False)
    expected = 2 * batch * c_out * out_side * out_side * c_in * kernel * kernel
    assert cost.flops_matmul == expected == measured(lambda: conv(x))


def test_norms_embedding_softmax_interpolate_count_no_matmul():
    tokens, dim, vocab = 6, 8, 50
    x = torch.randn(tokens, dim)
    ln = nn.LayerNorm(dim)
    emb = nn.Embedding(vocab, dim)
    ids = torch.randint(0, vocab, (tokens,))
    assert measured(lambda: ln(x)) == 0 == cost_formulas.layer_norm(tokens, dim).flops_matmul
    assert cost_formulas.layer_norm(tokens, dim).flops_other == 7 * tokens * dim
    assert measured(lambda: emb(ids)) == 0 == cost_formulas.embedding(tokens, vocab, dim).flops_matmul
    assert cost_formulas.embedding(tokens, vocab, dim, 2).weight_bytes == tokens * dim * 2  # gathered rows only
    assert measured(lambda: x.softmax(-1)) == 0 == cost_formulas.softmax(tokens, dim).flops_matmul
    assert cost_formulas.softmax(tokens, dim).flops_other == 5 * tokens * dim
    table = torch.randn(1, dim, 16, 16)
    assert measured(lambda: F.interpolate(table, size=(10, 10), mode="bicubic", antialias=True)) == 0
    assert cost_formulas.interpolate(dim, (16, 16), (10, 10), "bicubic").flops_matmul == 0


def taps_per_output(size_in: int, size_out: int, antialias: bool) -> list[int]:
    """PyTorch's own bicubic weights along one dimension (the last, of an image one row high): each input sample
    resized alone (a unit impulse per batch row), the input samples each output sample reads (non-zero weight), per
    interior output sample."""
    impulses = torch.eye(size_in).view(size_in, 1, 1, size_in)
    out = F.interpolate(impulses, size=(1, size_out), mode="bicubic", antialias=antialias, align_corners=False)
    weights = out[:, 0, 0, :]  # (input sample, output sample)
    edge = 2 + size_out // 8  # outputs whose filter reaches past the border read fewer samples
    return [int((weights[:, i].abs() > 1e-9).sum()) for i in range(edge, size_out - edge)]


@pytest.mark.parametrize(
    "size_in, size_out, antialias, per_dim",
    [
        (64, 32, True, 8),  # SAM's 64 x 64 table at Tiny's 32 x 32 grid: the filter widened by the factor 2
        (40, 20, True, 8),
        (64, 32, False, 4),  # no antialias: 4 taps whatever the factor
        (16, 32, True, 4),  # enlarging: antialias changes nothing
    ],
)
def test_interpolate_taps_are_pytorchs(size_in, size_out, antialias, per_dim):
    """The interpolate formula's taps per output sample (one multiply-add each) are the samples PyTorch's kernel
    weights: 4 per dimension for bicubic, 4·s along a dimension an antialiased resize shrinks by s."""
    taps = taps_per_output(size_in, size_out, antialias)
    assert len(taps) >= 10 and set(taps) == {per_dim}, taps
    channels = 3
    cost = cost_formulas.interpolate(channels, (size_in, size_in), (size_out, size_out), "bicubic", antialias=antialias)
    assert cost.flops_other == 2 * per_dim * per_dim * channels * size_out * size_out
    ((kind, _, flops, nbytes, out),) = cost.kernels.counts
    assert (kind, flops, out) == ("elementwise", cost.flops_other, channels * size_out * size_out * 4)


def test_rms_norm_float32_island():
    tokens, dim = 5, 16

    class RMSNorm(nn.Module):  # upcast, x * rsqrt(mean(x^2) + eps), cast back, * weight
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, h):
            x = h.float()
            x = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)
            return self.weight * x.to(h.dtype)

    x = torch.randn(tokens, dim, dtype=torch.bfloat16)
    mod = RMSNorm().to(torch.bfloat16)
    assert measured(lambda: mod(x)) == 0 == cost_formulas.rms_norm(tokens, dim).flops_matmul
    assert cost_formulas.rms_norm(tokens, dim, 2).flops_other == 4 * tokens * dim
    # bf16: float32 upcast + two float32 intermediates + per-row scalars + downcast + weight product
    assert cost_formulas.rms_norm(tokens, dim, 2).activation_bytes == (
        tokens * dim * 4 * 3 + 3 * tokens * 4 + tokens * dim * 2 * 2
    )


def test_layer_norm2d_is_elementwise_only():
    batch, ch, h, w = 2, 4, 5, 5

    def ln2d(x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        return (x - u) / torch.sqrt(s + 1e-6)

    x = torch.randn(batch, ch, h, w)
    assert measured(lambda: ln2d(x)) == 0 == cost_formulas.layer_norm2d(batch, ch, h, w).flops_matmul
    assert cost_formulas.layer_norm2d(batch, ch, h, w).flops_other == 8 * batch * ch * h * w


# ------------------------------------------------------------------------------------------- attention
@pytest.mark.parametrize("mask", [False, True])
def test_sdpa_fused_cpu(mask):
    batch, heads, q_len, kv_len, hd = 2, 3, 5, 7, 4
    q = torch.randn(batch, heads, q_len, hd)
    k = torch.randn(batch, heads, kv_len, hd)
    v = torch.randn(batch, heads, kv_len, hd)
    m = torch.randn(batch, heads, q_len, kv_len) if mask else None
    cost = cost_formulas.sdpa(batch, heads, q_len, kv_len, hd, mask=mask, fused=True)
    expected = 2 * batch * heads * q_len * kv_len * hd * 2  # Q·Kᵀ and P·V
    assert cost.flops_matmul == expected == measured(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=m))


def test_sdpa_eager_matches_fused_flops():
    batch, heads, q_len, kv_len, hd = 1, 2, 3, 6, 8
    q, k, v = (torch.randn(batch, heads, n, hd) for n in (q_len, kv_len, kv_len))

    def eager():
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(hd)
        return torch.matmul(w.softmax(-1), v)

    eager_cost = cost_formulas.sdpa(batch, heads, q_len, kv_len, hd, mask=True, fused=False, dtype_bytes=2)
    fused_cost = cost_formulas.sdpa(batch, heads, q_len, kv_len, hd, mask=True, fused=True, dtype_bytes=2)
    assert eager_cost.flops_matmul == fused_cost.flops_matmul == measured(eager)
    assert eager_cost.activation_bytes > fused_cost.activation_bytes  # scores are materialised


def test_rope_table_is_a_bmm():
    batch, tokens, heads, hd = 1, 9, 2, 8
    inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
    pos = torch.arange(tokens)[None]
    q = torch.randn(batch, heads, tokens, hd)

    def rope():
        freqs = (inv_freq[None, :, None].expand(batch, -1, 1) @ pos[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), -1)
        cos, sin = emb.cos()[:, None], emb.sin()[:, None]
        rot = torch.cat((-q[..., hd // 2 :], q[..., : hd // 2]), -1)
        return q * cos + rot * sin

    table = layer_cost("dsocr.LlamaRotaryEmbedding", batch, tokens, hd)
    assert table.flops_matmul == 2 * batch * (hd // 2) * tokens == measured(rope)
    assert cost_formulas.rope_apply(batch, tokens, heads, heads, hd).flops_matmul == 0  # the rotation is elementwise


class _SamAttention(nn.Module):
    """qkv → decomposed rel-pos (two einsums against gathered tables) → SDPA with the bias → proj."""

    def __init__(self, dim, heads, table_len):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.rel_h = nn.Parameter(torch.randn(table_len, dim // heads))
        self.rel_w = nn.Parameter(torch.randn(table_len, dim // heads))

    @staticmethod
    def _table(size, table):
        rows = 2 * size - 1
        if table.shape[0] != rows:
            table = F.interpolate(table.T[None], size=rows, mode="linear")[0].T
        idx = torch.arange(size)[:, None] - torch.arange(size)[None, :] + size - 1
        return table[idx]

    def forward(self, x):
        b, h, w, dim = x.shape
        hd = dim // self.heads
        qkv = self.qkv(x).reshape(b, h * w, 3, self.heads, hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.reshape(3, b * self.heads, h * w, hd).unbind(0)
        rq = q.reshape(b * self.heads, h, w, hd)
        rel_h = torch.einsum("bhwc,hkc->bhwk", rq, self._table(h, self.rel_h))
        rel_w = torch.einsum("bhwc,wkc->bhwk", rq, self._table(w, self.rel_w))
        bias = (rel_h[..., :, None] + rel_w[..., None, :]).reshape(b, self.heads, h * w, h * w)
        q, k, v = (t.view(b, self.heads, h * w, hd) for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        return self.proj(out.view(b, self.heads, h, w, hd).permute(0, 2, 3, 1, 4).reshape(b, h, w, dim))


@pytest.mark.parametrize(
    "batch,side,table_len",
    [
        (6, 4, 7),  # windowed: batch = images × windows, side = window, table 2·window-1 (no resize)
        (1, 5, 15),  # global: table for a pretraining grid of 8, resized to 2·5-1 rows
    ],
)
def test_sam_attention(batch, side, table_len):
    dim, heads = 16, 2
    hd = dim // heads
    mod = _SamAttention(dim, heads, table_len)
    x = torch.randn(batch, side, side, dim)
    n = side * side
    expected = (
        2 * batch * n * dim * 3 * dim  # qkv
        + 2 * batch * heads * side * side * side * hd * 2  # rel_h and rel_w einsums
        + 2 * batch * heads * n * n * hd * 2  # SDPA: Q·Kᵀ and P·V
        + 2 * batch * n * dim * dim  # proj
    )
    cost = layer_cost("dsocr.Attention", batch, side, side, dim, heads, table_len, table_len)
    assert cost.flops_matmul == expected == measured(lambda: mod(x))
    unresized = layer_cost("dsocr.Attention", batch, side, side, dim, heads, 2 * side - 1, 2 * side - 1)
    assert (cost.flops_other > unresized.flops_other) == (table_len != 2 * side - 1)  # resizing is elementwise


def test_clip_attention():
    batch, tokens, dim, heads = 2, 5, 16, 4
    qkv, out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
    x = torch.randn(batch, tokens, dim)

    def attn():
        t = qkv(x).view(batch, tokens, 3, heads, dim // heads)
        q, k, v = (s.squeeze(2).permute(0, 2, 1, 3) for s in torch.split(t, 1, dim=2))
        o = F.scaled_dot_product_attention(q, k, v)
        return out(o.permute(0, 2, 1, 3).reshape(batch, tokens, dim))

    expected = (
        2 * batch * tokens * dim * 3 * dim
        + 2 * batch * heads * tokens * tokens * (dim // heads) * 2
        + 2 * batch * tokens * dim * dim
    )
    assert layer_cost("dsocr.NoTPAttention", batch, tokens, dim, heads).flops_matmul == expected == measured(attn)


@pytest.mark.parametrize("q_len,past_len", [(6, 0), (1, 9)])
def test_decoder_attention_with_kv_cache(q_len, past_len):
    hidden, heads, kv_heads, hd = 16, 4, 2, 4
    q_proj, o_proj = nn.Linear(hidden, heads * hd, bias=False), nn.Linear(heads * hd, hidden, bias=False)
    k_proj, v_proj = (nn.Linear(hidden, kv_heads * hd, bias=False) for _ in range(2))
    inv_freq = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
    x = torch.randn(1, q_len, hidden)
    past_k, past_v = torch.randn(1, kv_heads, past_len, hd), torch.randn(1, kv_heads, past_len, hd)

    def attn():
        q = q_proj(x).view(1, q_len, heads, hd).transpose(1, 2)
        k = k_proj(x).view(1, q_len, kv_heads, hd).transpose(1, 2)
        v = v_proj(x).view(1, q_len, kv_heads, hd).transpose(1, 2)
        pos = torch.arange(past_len, past_len + q_len)[None].float()
        freqs = (inv_freq[None, :, None] @ pos[:, None, :]).transpose(1, 2)
        cos, sin = torch.cat((freqs, freqs), -1).cos()[:, None], torch.cat((freqs, freqs), -1).sin()[:, None]
        q, k = q * cos + q.flip(-1) * sin, k * cos + k.flip(-1) * sin
        k, v = torch.cat((past_k, k), 2), torch.cat((past_v, v), 2)
        k = k.repeat_interleave(heads // kv_heads, 1)
        v = v.repeat_interleave(heads // kv_heads, 1)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(hd)
        o = torch.matmul(w.softmax(-1), v)
        return o_proj(o.transpose(1, 2).reshape(1, q_len, heads * hd))

    kv_len = past_len + q_len
    expected = (
        2 * q_len * hidden * heads * hd * 2  # q_proj, o_proj
        + 2 * q_len * hidden * kv_heads * hd * 2  # k_proj, v_proj
        + 2 * (hd // 2) * q_len  # RoPE table bmm
        + 2 * heads * q_len * kv_len * hd * 2  # Q·Kᵀ and P·V over cached + new keys
    )
    cost = layer_cost("dsocr.LlamaAttention", AttentionShape(1, q_len, past_len, hidden, heads, kv_heads, hd, 2))
    assert cost.flops_matmul == expected == measured(attn)
    fused = layer_cost("dsocr.LlamaSdpaAttention", AttentionShape(1, q_len, past_len, hidden, heads, kv_heads, hd, 2))
    assert fused.flops == cost.flops and fused.activation_bytes < cost.activation_bytes
    if past_len:  # the KV cache is read
        assert cost.input_bytes >= 2 * kv_heads * past_len * hd * 2


def test_gated_mlp_and_mlp():
    tokens, hidden, inter = 5, 8, 12
    gate, up, down = nn.Linear(hidden, inter, False), nn.Linear(hidden, inter, False), nn.Linear(inter, hidden, False)
    x = torch.randn(tokens, hidden)
    expected = 3 * 2 * tokens * hidden * inter
    assert (
        layer_cost("dsocr.DeepseekV2MLP", tokens, hidden, inter).flops_matmul
        == expected
        == measured(lambda: down(F.silu(gate(x)) * up(x)))
    )
    fc1, fc2 = nn.Linear(hidden, inter), nn.Linear(inter, hidden)
    assert (
        layer_cost("dsocr.MLPBlock", tokens, hidden, inter).flops_matmul
        == 2 * 2 * tokens * hidden * inter
        == measured(lambda: fc2(F.gelu(fc1(x))))
    )


class _MoE(nn.Module):
    """float32 gate → softmax → top-k; tokens sorted by expert; each expert with tokens called once; shared MLP."""

    def __init__(self, hidden, inter, n_experts, top_k, shared_inter, skew=False):
        super().__init__()
        self.top_k, self.skew = top_k, skew
        self.gate = nn.Parameter(torch.randn(n_experts, hidden))
        self.experts = nn.ModuleList(
            nn.ModuleList(
                [nn.Linear(hidden, inter, False), nn.Linear(hidden, inter, False), nn.Linear(inter, hidden, False)]
            )
            for _ in range(n_experts)
        )
        self.shared = nn.ModuleList(
            [
                nn.Linear(hidden, shared_inter, False),
                nn.Linear(hidden, shared_inter, False),
                nn.Linear(shared_inter, hidden, False),
            ]
        )

    @staticmethod
    def _mlp(m, x):
        return m[2](F.silu(m[0](x)) * m[1](x))

    def forward(self, x):
        scores = F.linear(x.float(), self.gate.float()).softmax(-1)
        if self.skew:  # route everything to the first top_k experts: FLOPs must not change
            scores = torch.zeros_like(scores)
            scores[:, : self.top_k] = 1.0
        weight, idx = torch.topk(scores, self.top_k, dim=-1)
        order = idx.view(-1).argsort()
        sorted_x = x[order // self.top_k]
        counts = torch.bincount(idx.view(-1), minlength=len(self.experts)).tolist()
        outs, start = [], 0
        for e, n in enumerate(counts):
            if n:
                outs.append(self._mlp(self.experts[e], sorted_x[start : start + n]))
                start += n
        y = torch.empty_like(sorted_x)
        y[order] = torch.cat(outs)
        y = (y.view(x.shape[0], self.top_k, -1) * weight[..., None]).sum(1)
        return y + self._mlp(self.shared, x)


@pytest.mark.parametrize("skew", [False, True])
def test_moe_every_token_visits_top_k_experts(skew):
    tokens, hidden, inter, n_experts, top_k, n_shared = 11, 8, 4, 6, 2, 2
    shared_inter = n_shared * inter
    mod = _MoE(hidden, inter, n_experts, top_k, shared_inter, skew)
    x = torch.randn(tokens, hidden)
    expected = (
        2 * tokens * hidden * n_experts  # gate
        + top_k * tokens * 3 * 2 * hidden * inter  # routed: each token through top_k gated MLPs
        + 3 * 2 * tokens * hidden * shared_inter  # shared experts
    )
    spec = DecoderSpec(
        hidden_size=hidden,
        moe_intermediate_size=inter,
        n_routed_experts=n_experts,
        num_experts_per_tok=top_k,
        n_shared_experts=n_shared,
    )
    cost = layer_cost("dsocr.DeepseekV2MoE", spec, tokens)
    assert cost.flops_matmul == expected == measured(lambda: mod(x))
    # routed weights: at most every expert once; a single token reads exactly top_k experts, and the gate's
    # own weight, in the model's dtype (bf16: the linear runs under autocast)
    no_shared = DecoderSpec(
        hidden_size=hidden,
        moe_intermediate_size=inter,
        n_routed_experts=n_experts,
        num_experts_per_tok=top_k,
        n_shared_experts=0,
    )
    assert layer_cost("dsocr.DeepseekV2MoE", no_shared, 1).weight_bytes == (
        top_k * 3 * hidden * inter * 2 + hidden * n_experts * 2
    )


def test_lm_head():
    tokens, hidden, vocab = 4, 8, 30
    head = nn.Linear(hidden, vocab, bias=False)
    x = torch.randn(tokens, hidden)
    lm_head = layer_cost("Linear", tokens, hidden, vocab, False)
    assert lm_head.flops_matmul == 2 * tokens * hidden * vocab == measured(lambda: head(x))

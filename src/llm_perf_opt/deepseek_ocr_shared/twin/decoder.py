"""The DeepSeek-V2 language decoder of DeepSeek-OCR (`model.layers`, `model.norm`), use_mla = false.

Behaviour a profiler depends on, reproduced from the vendor + transformers 4.46 it runs on:

* attention is transformers' Llama attention (q/k/v/o projections without bias) and every layer calls
  its own `rotary_emb` (the vendor passes no precomputed `position_embeddings`), so there is one
  `LlamaRotaryEmbedding` call per layer and forward;
* "eager" is matmul → scale → + additive causal mask → float32 softmax → matmul (`LlamaAttention`);
  "sdpa" is `scaled_dot_product_attention` with that same 4-D mask (`LlamaSdpaAttention`);
  "flash_attention_2" goes through transformers' flash-attention helper (`LlamaFlashAttention2`). The
  vendor itself only ever builds `LlamaAttention` (eager, its default) or `LlamaFlashAttention2`;
* layers before `first_k_dense_replace` have a dense SiLU-gated MLP, the others a `DeepseekV2MoE`:
  softmax gate in float32, greedy top-k without renormalisation, then (in eval mode) tokens sorted by
  expert, the per-expert counts copied to the host and a Python loop that calls each expert that got
  at least one token exactly once; the shared experts (one MLP of n_shared × moe width) run on all
  tokens. In training mode every expert is called on its (possibly empty) share, as in the vendor,
  but no auxiliary loss is computed.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from llm_perf_opt.deepseek_ocr_shared.twin.config import TwinConfig
from llm_perf_opt.errors import ConfigError


class DeepseekV2RMSNorm(nn.Module):
    """RMSNorm computed in float32, scaled by a learned weight after casting back to the input dtype."""

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.variance_epsilon = eps

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        in_dtype = hidden_states.dtype
        x = hidden_states.to(torch.float32)
        mean_sq = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(mean_sq + self.variance_epsilon)
        return self.weight * x.to(in_dtype)


class LlamaRotaryEmbedding(nn.Module):
    """Default RoPE (no scaling): cos/sin tables for the given positions, computed in float32."""

    def __init__(self, dim: int, base: float = 10000.0, max_position_embeddings: int = 2048, device=None) -> None:
        super().__init__()
        self.dim = dim
        self.base = base
        self.rope_type = "default"
        self.max_seq_len_cached = max_position_embeddings
        self.original_max_seq_len = max_position_embeddings
        self.attention_scaling = 1.0
        self.register_buffer("inv_freq", self._inverse_frequencies(device), persistent=False)
        self.original_inv_freq = self.inv_freq

    def _inverse_frequencies(self, device) -> torch.Tensor:
        # Computed on the CPU, as the vendor's models compute it at construction, then moved: the same values on
        # every device, and no arithmetic on meta while the twin is built there (meta's Python references import
        # torch._dynamo on first use, about a second of every job's start).
        cpu = torch.arange(0, self.dim, 2, dtype=torch.int64, device="cpu").float() / self.dim
        return (1.0 / (self.base**cpu)).to(torch.get_default_device() if device is None else device)

    def reset_buffers(self, device=None) -> None:
        """Recompute `inv_freq` in float32 (after `to_empty`, or after a dtype cast of the module)."""
        device = self.inv_freq.device if device is None else device
        self.register_buffer("inv_freq", self._inverse_frequencies(device), persistent=False)
        self.original_inv_freq = self.inv_freq

    @torch.no_grad()
    def forward(self, x: torch.Tensor, position_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        freq = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        pos = position_ids[:, None, :].float()
        # Autocast off for this device type, so the angles stay float32 under a bf16 autocast.
        dev_type = "cuda" if x.device.type == "cuda" else "cpu"
        with torch.autocast(device_type=dev_type, enabled=False):
            angles = (freq.float() @ pos.float()).transpose(1, 2)
            emb = torch.cat((angles, angles), dim=-1)
            cos, sin = emb.cos(), emb.sin()
        cos = cos * self.attention_scaling
        sin = sin * self.attention_scaling
        return cos.to(dtype=x.dtype), sin.to(dtype=x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    """(x1, x2) -> (-x2, x1) over the last axis, the rotation RoPE pairs with `sin`."""
    half = x.shape[-1] // 2
    front, back = x[..., :half], x[..., half:]
    return torch.cat((-back, front), dim=-1)


def apply_rotary(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor):
    """q, k: (B, heads, S, d); cos, sin: (B, S, d)."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    return (q * cos) + (rotate_half(q) * sin), (k * cos) + (rotate_half(k) * sin)


def repeat_kv(x: torch.Tensor, n_rep: int) -> torch.Tensor:
    """(B, kv_heads, S, d) -> (B, kv_heads·n_rep, S, d) for grouped-query attention (no-op when n_rep == 1)."""
    if n_rep == 1:
        return x
    b, kv, s, d = x.shape
    return x[:, :, None, :, :].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d)


def init_gqa_attention(
    attn: nn.Module,
    layer_idx: int,
    *,
    hidden_size: int,
    num_heads: int,
    head_dim: int,
    num_kv_heads: int,
    max_position_embeddings: int,
    rope_theta: float,
    attention_dropout: float,
    qkv_bias: bool,
    o_bias: bool,
    rotary_class: type[nn.Module],
) -> None:
    """The attributes and modules of a transformers-style grouped-query attention, in its order: q/k/v/o
    projections and a per-layer `rotary_emb` (of `rotary_class`, so the module tree names the vendor's
    class). The DeepSeek-V2 decoder's `LlamaAttention` and DeepSeek-OCR 2's encoder attention share it."""
    attn.layer_idx = layer_idx
    attn.attention_dropout = attention_dropout
    attn.hidden_size = hidden_size
    attn.num_heads = num_heads
    attn.head_dim = head_dim
    attn.num_key_value_heads = num_kv_heads
    attn.num_key_value_groups = num_heads // num_kv_heads
    attn.max_position_embeddings = max_position_embeddings
    attn.rope_theta = rope_theta
    attn.is_causal = True
    attn.q_proj = nn.Linear(hidden_size, num_heads * head_dim, bias=qkv_bias)
    attn.k_proj = nn.Linear(hidden_size, num_kv_heads * head_dim, bias=qkv_bias)
    attn.v_proj = nn.Linear(hidden_size, num_kv_heads * head_dim, bias=qkv_bias)
    attn.o_proj = nn.Linear(num_heads * head_dim, hidden_size, bias=o_bias)
    attn.rotary_emb = rotary_class(head_dim, base=rope_theta, max_position_embeddings=max_position_embeddings)


def sdpa_core(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, attention_mask: torch.Tensor | None, n_rep: int, dropout_p: float
) -> torch.Tensor:
    """transformers' SDPA attention core: the KV heads repeated `n_rep` times, the additive 4-D mask cut to
    the keys, contiguous inputs on CUDA with a mask (the memory-efficient kernel wants them), causal only
    without a mask and with more than one query; (B, heads, S, d) -> (B, S, heads·d)."""
    q_len = q.shape[-2]
    k = repeat_kv(k, n_rep)
    v = repeat_kv(v, n_rep)
    mask = attention_mask
    if mask is not None:
        mask = mask[:, :, :, : k.shape[-2]]
    if q.device.type == "cuda" and mask is not None:
        q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    out = F.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, dropout_p=dropout_p, is_causal=mask is None and q_len > 1
    )
    return out.transpose(1, 2).contiguous().view(q.shape[0], q_len, -1)


class LlamaAttention(nn.Module):
    """Eager multi-head attention with RoPE and an optional KV cache (transformers' `Cache` API)."""

    def __init__(self, config: TwinConfig, layer_idx: int) -> None:
        super().__init__()
        self.config = config
        init_gqa_attention(
            self,
            layer_idx,
            hidden_size=config.hidden_size,
            num_heads=config.num_attention_heads,
            head_dim=config.head_dim,
            num_kv_heads=config.num_key_value_heads,
            max_position_embeddings=config.max_position_embeddings,
            rope_theta=config.rope_theta,
            attention_dropout=config.attention_dropout,
            qkv_bias=config.attention_bias,
            o_bias=config.attention_bias,
            rotary_class=LlamaRotaryEmbedding,
        )

    def _project(self, hidden_states, position_ids, past_key_value, cache_position, position_embeddings):
        """q/k/v projections, RoPE, cache update: q (B, heads, S, d), k and v (B, kv_heads, S_total, d)."""
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states)
        k = self.k_proj(hidden_states)
        v = self.v_proj(hidden_states)
        q = q.view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = k.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = v.view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        if position_embeddings is None:
            cos, sin = self.rotary_emb(v, position_ids)
        else:
            cos, sin = position_embeddings
        q, k = apply_rotary(q, k, cos, sin)
        if past_key_value is not None:
            k, v = past_key_value.update(
                k, v, self.layer_idx, {"sin": sin, "cos": cos, "cache_position": cache_position}
            )
        return q, k, v

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_value=None,
        output_attentions: bool = False,
        use_cache: bool = False,
        cache_position: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs,
    ):
        bsz, q_len, _ = hidden_states.size()
        q, k, v = self._project(hidden_states, position_ids, past_key_value, cache_position, position_embeddings)
        k = repeat_kv(k, self.num_key_value_groups)
        v = repeat_kv(v, self.num_key_value_groups)

        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim)
        if attention_mask is not None:
            scores = scores + attention_mask[:, :, :, : k.shape[-2]]
        probs = F.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        probs = F.dropout(probs, p=self.attention_dropout, training=self.training)
        out = torch.matmul(probs, v)
        if out.size() != (bsz, self.num_heads, q_len, self.head_dim):
            raise ValueError(
                f"attention output has shape {tuple(out.size())}, expected "
                f"{(bsz, self.num_heads, q_len, self.head_dim)}"
            )
        out = out.transpose(1, 2).contiguous().reshape(bsz, q_len, -1)
        out = self.o_proj(out)
        return out, (probs if output_attentions else None), past_key_value


class LlamaSdpaAttention(LlamaAttention):
    """Same weights; the core is one `scaled_dot_product_attention` call with the additive 4-D mask."""

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_value=None,
        output_attentions: bool = False,
        use_cache: bool = False,
        cache_position: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs,
    ):
        if output_attentions:  # SDPA cannot return the weights: fall back to eager, as transformers does
            return super().forward(
                hidden_states,
                attention_mask,
                position_ids,
                past_key_value,
                output_attentions,
                use_cache,
                cache_position,
                position_embeddings,
            )
        q, k, v = self._project(hidden_states, position_ids, past_key_value, cache_position, position_embeddings)
        out = sdpa_core(
            q, k, v, attention_mask, self.num_key_value_groups, self.attention_dropout if self.training else 0.0
        )
        return self.o_proj(out), None, past_key_value


class LlamaFlashAttention2(LlamaAttention):
    """Same weights; the core is flash-attention 2 via transformers' helper (CUDA, fp16/bf16 only)."""

    def __init__(self, config: TwinConfig, layer_idx: int) -> None:
        super().__init__(config, layer_idx)
        from transformers.utils import is_flash_attn_greater_or_equal_2_10

        self._flash_attn_uses_top_left_mask = not is_flash_attn_greater_or_equal_2_10()

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_value=None,
        output_attentions: bool = False,
        use_cache: bool = False,
        cache_position: torch.Tensor | None = None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor] | None = None,
        **kwargs,
    ):
        from transformers.modeling_flash_attention_utils import _flash_attention_forward

        bsz, q_len, _ = hidden_states.size()
        q, k, v = self._project(hidden_states, position_ids, past_key_value, cache_position, position_embeddings)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # flash wants (B, S, heads, d)
        if q.dtype == torch.float32:  # flash kernels take half precision only
            if torch.is_autocast_enabled("cuda"):
                target = torch.get_autocast_dtype("cuda")
            else:
                target = self.q_proj.weight.dtype
            q, k, v = q.to(target), k.to(target), v.to(target)
        out = _flash_attention_forward(
            q,
            k,
            v,
            attention_mask,
            q_len,
            position_ids=position_ids,
            dropout=self.attention_dropout if self.training else 0.0,
            use_top_left_mask=self._flash_attn_uses_top_left_mask,
            is_causal=self.is_causal,
        )
        out = out.reshape(bsz, q_len, -1).contiguous()
        return self.o_proj(out), None, past_key_value


ATTENTION_CLASSES = {
    "eager": LlamaAttention,
    "sdpa": LlamaSdpaAttention,
    "flash_attention_2": LlamaFlashAttention2,
}


class DeepseekV2MLP(nn.Module):
    """SiLU-gated MLP: down(silu(gate(x)) · up(x)), no biases. Used dense, as experts and as shared experts."""

    def __init__(self, hidden_size: int, intermediate_size: int) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.intermediate_size = intermediate_size
        self.gate_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.up_proj = nn.Linear(hidden_size, intermediate_size, bias=False)
        self.down_proj = nn.Linear(intermediate_size, hidden_size, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class MoEGate(nn.Module):
    """Router: float32 logits and softmax over experts, greedy top-k, weights scaled (not renormalised)."""

    def __init__(self, config: TwinConfig) -> None:
        super().__init__()
        if config.topk_method != "greedy" or config.scoring_func != "softmax":
            raise ConfigError(
                f"MoEGate models only greedy top-k over softmax scores, not "
                f"{config.topk_method!r} over {config.scoring_func!r}"
            )
        self.top_k = config.num_experts_per_tok
        self.n_routed_experts = config.n_routed_experts
        self.routed_scaling_factor = config.routed_scaling_factor
        self.scoring_func = config.scoring_func
        self.topk_method = config.topk_method
        self.norm_topk_prob = config.norm_topk_prob
        self.gating_dim = config.hidden_size
        self.weight = nn.Parameter(torch.empty(self.n_routed_experts, self.gating_dim))

    def forward(self, hidden_states: torch.Tensor):
        """(B, S, h) -> expert ids (B·S, k), their weights (B·S, k) in float32, and no auxiliary loss."""
        _, _, h = hidden_states.shape
        flat = hidden_states.view(-1, h)
        logits = F.linear(flat.type(torch.float32), self.weight.type(torch.float32), None)
        scores = logits.softmax(dim=-1, dtype=torch.float32)
        weights, ids = torch.topk(scores, k=self.top_k, dim=-1, sorted=False)
        if self.top_k > 1 and self.norm_topk_prob:
            weights = weights / (weights.sum(dim=-1, keepdim=True) + 1e-20) * self.routed_scaling_factor
        else:
            weights = weights * self.routed_scaling_factor
        return ids, weights, None


class DeepseekV2MoE(nn.Module):
    """Routed experts + gate + shared experts; see the module docstring for the call pattern."""

    def __init__(self, config: TwinConfig) -> None:
        super().__init__()
        self.config = config
        self.num_experts_per_tok = config.num_experts_per_tok
        self.ep_size, self.ep_rank = 1, 0
        self.experts_per_rank = config.n_routed_experts
        self.experts = nn.ModuleList(
            DeepseekV2MLP(config.hidden_size, config.moe_intermediate_size) for _ in range(config.n_routed_experts)
        )
        self.gate = MoEGate(config)
        if config.n_shared_experts:
            self.shared_experts = DeepseekV2MLP(
                config.hidden_size, config.moe_intermediate_size * config.n_shared_experts
            )

    def forward(self, hidden_states: torch.Tensor) -> torch.Tensor:
        residual_in = hidden_states
        shape = hidden_states.shape
        expert_ids, expert_w, _ = self.gate(hidden_states)
        tokens = hidden_states.view(-1, hidden_states.shape[-1])
        flat_ids = expert_ids.view(-1)
        if self.training:
            tokens = tokens.repeat_interleave(self.num_experts_per_tok, dim=0)
            per_slot = torch.empty_like(tokens)
            for i, expert in enumerate(self.experts):
                per_slot[flat_ids == i] = expert(tokens[flat_ids == i])
            y = (per_slot.view(*expert_w.shape, -1) * expert_w.unsqueeze(-1)).sum(dim=1)
            y = y.to(tokens.dtype).view(*shape)
        else:
            y = self.moe_infer(tokens, expert_ids, expert_w).view(*shape)
        if self.config.n_shared_experts:
            y = y + self.shared_experts(residual_in)
        return y

    @torch.no_grad()
    def moe_infer(self, x: torch.Tensor, topk_ids: torch.Tensor, topk_weight: torch.Tensor) -> torch.Tensor:
        """Group the (token, slot) pairs by expert and run each expert that has work, once, on its group."""
        n_tok, k = topk_ids.shape
        hits = topk_ids.new_zeros((n_tok, len(self.experts)))
        hits.scatter_(1, topk_ids, 1)
        load = hits.sum(dim=0)  # tokens per expert
        slot_order = topk_ids.view(-1).argsort()  # (token, slot) pairs grouped by expert id
        grouped = x[slot_order // k]
        load = load.cpu().numpy()  # host copy: the loop below is plain Python, as in the vendor
        return run_experts_by_load(self.experts, grouped, load, slot_order, topk_weight)


def run_experts_by_load(
    experts: nn.ModuleList, grouped: torch.Tensor, load, slot_order: torch.Tensor, topk_weight: torch.Tensor
) -> torch.Tensor:
    """The vendor's `moe_infer` after the host copy of the counts: each expert with work runs once on its
    slice of `grouped` (the (token, slot) rows sorted by expert, `load[i]` rows for expert i), the results go
    back to slot order and are weighted and summed per token. Shared with the export's fixed-routing remedy
    (`export.moe`), which passes the counts recorded from the real forward."""
    n_tok, k = topk_weight.shape
    results = []
    begin = 0
    for expert_id, count in enumerate(load):
        if count == 0:
            continue
        results.append(experts[expert_id](grouped[begin : begin + count]))
        begin += count

    stacked = torch.cat(results, dim=0) if results else grouped.new_empty(0)
    unsorted = torch.empty_like(stacked)
    unsorted[slot_order] = stacked
    mixed = unsorted.view(n_tok, k, -1).type(topk_weight.dtype).mul_(topk_weight.unsqueeze(dim=-1))
    return mixed.sum(dim=1).type(unsorted.dtype)


class DeepseekV2DecoderLayer(nn.Module):
    """Pre-norm layer: x + attn(norm(x)), then + mlp(norm(·)); returns (hidden, [weights], [cache])."""

    def __init__(self, config: TwinConfig, layer_idx: int, moe: bool) -> None:
        super().__init__()
        self.hidden_size = config.hidden_size
        self.self_attn = ATTENTION_CLASSES[config._attn_implementation](config=config, layer_idx=layer_idx)
        self.mlp = DeepseekV2MoE(config) if moe else DeepseekV2MLP(config.hidden_size, config.intermediate_size)
        self.input_layernorm = DeepseekV2RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = DeepseekV2RMSNorm(config.hidden_size, eps=config.rms_norm_eps)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.Tensor | None = None,
        past_key_value=None,
        output_attentions: bool = False,
        use_cache: bool = False,
        **kwargs,
    ):
        residual = hidden_states
        hidden_states, attn_weights, present = self.self_attn(
            hidden_states=self.input_layernorm(hidden_states),
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_value=past_key_value,
            output_attentions=output_attentions,
            use_cache=use_cache,
            **kwargs,
        )
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = residual + self.mlp(self.post_attention_layernorm(hidden_states))
        outputs = (hidden_states,)
        if output_attentions:
            outputs += (attn_weights,)
        if use_cache:
            outputs += (present,)
        return outputs

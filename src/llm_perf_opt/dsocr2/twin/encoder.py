"""DeepEncoder V2 of DeepSeek-OCR 2 (`model.qwen2_model`), written from its documented behaviour.

The vendor builds a transformers `Qwen2Model` (4.46) inside two wrappers and deletes its token embedding:
`Qwen2Decoder2Encoder` (`qwen2_model`: the query banks) -> `CustomQwen2Decoder` (`.model`) ->
`CustomQwen2ModelInner` (`.model.model`: `layers`, `norm`, `rotary_emb`). What a profiler sees:

* per view batch (B, C, g, g) of SAM features: flatten to (B, n, C) tokens (n = g²), the query bank of
  n vectors (`query_768` for 144, `query_1024` for 256) expanded over the batch and appended:
  (B, 2n, C); token types 0 (SAM) then 1 (queries);
* the mask (`encoder_mask`): float, min-dtype everywhere, 0 where SAM tokens see SAM tokens, where
  queries see every SAM token, and where queries see themselves and earlier queries; built per batch
  element and stacked to (B, 1, 2n, 2n) in the activations' dtype;
* positions 0 .. 2n-1 (batch 1); the model-level `rotary_emb` computes cos/sin once and every layer
  takes them (the per-layer `self_attn.rotary_emb` modules exist, as in transformers, but are not called);
* 24 pre-norm layers: RMSNorm, `Qwen2SdpaAttention` (q/k/v with bias, o without; RoPE; the 2 KV heads
  repeated to 14; `scaled_dot_product_attention` with the float mask, `is_causal` False), residual,
  RMSNorm, SiLU-gated MLP, residual; the final RMSNorm;
* only the query positions are returned: `y[:, n:, :]`.

The vendor's attention is always SDPA (`build_qwen2_decoder_as_encoder(attn_implementation="sdpa")`),
whatever the decoder's runtime setting. Differences kept out on purpose: transformers' `Qwen2Model` also
fills a `DynamicCache` (appends only: no op, no FLOP) that nothing reads. The mask is built with the
vendor's ops, its row loop included (two index assignments per query row: 2·n in-place ops per view), so
kernel counts and host syncs are the vendor's.
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.modeling_outputs import BaseModelOutputWithPast

from llm_perf_opt.deepseek_ocr_shared.twin.decoder import (
    DeepseekV2MLP,
    DeepseekV2RMSNorm,
    LlamaRotaryEmbedding,
    apply_rotary,
    init_gqa_attention,
    sdpa_core,
)
from llm_perf_opt.dsocr2.spec import EncoderSpec


class Qwen2RMSNorm(DeepseekV2RMSNorm):
    """RMSNorm in float32, scaled after casting back (the same computation as the decoder's)."""


class Qwen2RotaryEmbedding(LlamaRotaryEmbedding):
    """Default RoPE (theta 1e6 here): cos/sin for the positions, in float32, cast to the input dtype."""


class Qwen2MLP(DeepseekV2MLP):
    """down_proj(SiLU(gate_proj(x)) · up_proj(x)), bias-free."""


class Qwen2SdpaAttention(nn.Module):
    """GQA attention with biased q/k/v projections, RoPE from the model's table, SDPA with a float mask."""

    def __init__(self, spec: EncoderSpec, layer_idx: int) -> None:
        super().__init__()
        # the per-layer rotary_emb is present in transformers 4.46's Qwen2Attention; the model-level table is used
        init_gqa_attention(
            self,
            layer_idx,
            hidden_size=spec.hidden_size,
            num_heads=spec.num_heads,
            head_dim=spec.head_dim,
            num_kv_heads=spec.num_kv_heads,
            max_position_embeddings=spec.max_position_embeddings,
            rope_theta=spec.rope_theta,
            attention_dropout=0.0,
            qkv_bias=True,
            o_bias=False,
            rotary_class=Qwen2RotaryEmbedding,
        )

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
    ) -> torch.Tensor:
        bsz, q_len, _ = hidden_states.size()
        q = self.q_proj(hidden_states).view(bsz, q_len, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(hidden_states).view(bsz, q_len, self.num_key_value_heads, self.head_dim).transpose(1, 2)
        cos, sin = position_embeddings
        q, k = apply_rotary(q, k, cos, sin)
        out = sdpa_core(q, k, v, attention_mask, self.num_key_value_groups, 0.0)
        return self.o_proj(out)


class Qwen2DecoderLayer(nn.Module):
    """x + attn(norm(x)), then + mlp(norm(·))."""

    def __init__(self, spec: EncoderSpec, layer_idx: int) -> None:
        super().__init__()
        self.hidden_size = spec.hidden_size
        self.self_attn = Qwen2SdpaAttention(spec, layer_idx)
        self.mlp = Qwen2MLP(spec.hidden_size, spec.intermediate_size)
        self.input_layernorm = Qwen2RMSNorm(spec.hidden_size, eps=spec.rms_norm_eps)
        self.post_attention_layernorm = Qwen2RMSNorm(spec.hidden_size, eps=spec.rms_norm_eps)

    def forward(
        self,
        hidden_states: torch.Tensor,
        attention_mask: torch.Tensor | None,
        position_embeddings: tuple[torch.Tensor, torch.Tensor],
    ) -> tuple[torch.Tensor]:
        residual = hidden_states
        hidden_states = self.self_attn(self.input_layernorm(hidden_states), attention_mask, position_embeddings)
        hidden_states = residual + hidden_states
        residual = hidden_states
        hidden_states = residual + self.mlp(self.post_attention_layernorm(hidden_states))
        return (hidden_states,)


def encoder_mask(token_type_ids: torch.Tensor, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """(B, 1, T, T) additive mask: type-0 tokens see each other; type-1 tokens see every type-0 token and
    the type-1 tokens up to themselves (in sequence order); everything else min(dtype).

    Written with the vendor's ops (so its kernels and host syncs are the twin's too): per batch element the
    T x T fill, the two token-type tests and their positions (`nonzero`: a host sync each), one index
    assignment for the type-0 block, then two per type-1 row (its type-0 columns, the type-1 columns up to
    itself); then the stack of the B masks."""
    low = torch.finfo(dtype).min
    batch, seq = token_type_ids.shape
    masks = []
    for b in range(batch):
        mask = torch.full((seq, seq), fill_value=low, dtype=dtype, device=device)
        types = token_type_ids[b]
        sam_at = (types == 0).nonzero(as_tuple=True)[0]
        query_at = (types == 1).nonzero(as_tuple=True)[0]
        if len(sam_at) > 0:
            mask[sam_at[:, None], sam_at] = 0.0  # SAM tokens see each other
        for rank, row in enumerate(query_at):  # each query row: every SAM token, the queries up to itself
            if len(sam_at) > 0:
                mask[row, sam_at] = 0.0
            mask[row, query_at[: rank + 1]] = 0.0
        masks.append(mask)
    return torch.stack(masks, dim=0).unsqueeze(1)


class CustomQwen2ModelInner(nn.Module):
    """The Qwen2 stack without token embedding: mask from token types, positions, RoPE table, layers, norm."""

    def __init__(self, spec: EncoderSpec) -> None:
        super().__init__()
        self.padding_idx = None
        self.vocab_size = spec.vocab_size
        self.layers = nn.ModuleList(Qwen2DecoderLayer(spec, i) for i in range(spec.num_layers))
        self._attn_implementation = "sdpa"
        self.norm = Qwen2RMSNorm(spec.hidden_size, eps=spec.rms_norm_eps)
        self.rotary_emb = Qwen2RotaryEmbedding(
            spec.head_dim, base=spec.rope_theta, max_position_embeddings=spec.max_position_embeddings
        )
        self.gradient_checkpointing = False

    def forward(
        self, inputs_embeds: torch.Tensor, token_type_ids: torch.Tensor, return_dict: bool = True
    ) -> BaseModelOutputWithPast | tuple:
        seq = inputs_embeds.shape[1]
        cache_position = torch.arange(0, seq, device=inputs_embeds.device)
        position_ids = cache_position.unsqueeze(0)
        mask = encoder_mask(token_type_ids, inputs_embeds.dtype, inputs_embeds.device)
        hidden = inputs_embeds
        position_embeddings = self.rotary_emb(hidden, position_ids)
        for layer in self.layers:
            hidden = layer(hidden, mask, position_embeddings)[0]
        hidden = self.norm(hidden)
        if not return_dict:
            return (hidden,)
        return BaseModelOutputWithPast(last_hidden_state=hidden)


class CustomQwen2Decoder(nn.Module):
    """The vendor's wrapper: holds the stack as `.model` and passes token types on."""

    def __init__(self, spec: EncoderSpec) -> None:
        super().__init__()
        self.model = CustomQwen2ModelInner(spec)

    def forward(self, inputs_embeds: torch.Tensor, token_type_ids: torch.Tensor, **kwargs):
        return self.model(
            inputs_embeds=inputs_embeds, token_type_ids=token_type_ids, return_dict=kwargs.get("return_dict", True)
        )


class Qwen2Decoder2Encoder(nn.Module):
    """SAM features (B, C, g, g) -> [tokens ‖ the bank's queries] through the stack -> the query positions."""

    def __init__(self, spec: EncoderSpec) -> None:
        super().__init__()
        self.spec = spec
        self.model = CustomQwen2Decoder(spec)
        for name, size in spec.query_banks:
            setattr(self, name, nn.Embedding(size, spec.hidden_size))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.flatten(2).transpose(1, 2)
        bs, n_query, _ = x.shape
        bank = getattr(self, self.spec.bank_for(n_query)).weight
        queries = bank.unsqueeze(0).expand(bs, -1, -1)
        combined = torch.cat([x, queries], dim=1)
        token_type_ids = torch.cat(
            [torch.zeros(bs, n_query, dtype=torch.long), torch.ones(bs, n_query, dtype=torch.long)], dim=1
        )
        outputs = self.model(combined, token_type_ids, return_dict=True)
        return outputs[0][:, n_query:, :]

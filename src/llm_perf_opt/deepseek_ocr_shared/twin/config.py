"""`TwinConfig`: the few config attributes the decoder code and tools read from `model.config`.

The vendor's model is a transformers `PreTrainedModel` with a `DeepseekV2Config`; the twin is a plain
`nn.Module`, so it carries this small object with the same attribute names (`_attn_implementation`,
`use_cache`, `vocab_size`, `num_hidden_layers`, `output_attentions`, `use_return_dict`, ...).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.model_runtime.attention import resolve_attn_implementation


@dataclass
class TwinConfig:
    """Decoder-level settings, named as in transformers' configs."""

    vocab_size: int
    hidden_size: int
    intermediate_size: int
    moe_intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    n_routed_experts: int
    n_shared_experts: int
    num_experts_per_tok: int
    first_k_dense_replace: int
    moe_layer_freq: int
    topk_method: str
    norm_topk_prob: bool
    routed_scaling_factor: float
    scoring_func: str
    rope_theta: float
    rms_norm_eps: float
    max_position_embeddings: int
    tie_word_embeddings: bool
    bos_token_id: int
    eos_token_id: int
    image_token_id: int
    pad_token_id: int | None = None
    hidden_act: str = "silu"
    attention_bias: bool = False
    attention_dropout: float = 0.0
    rope_scaling: Any = None
    use_mla: bool = False
    _attn_implementation: str = "eager"
    use_cache: bool = True
    output_attentions: bool = False
    output_hidden_states: bool = False
    use_return_dict: bool = True
    model_type: str = "deepseek_ocr_twin"

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    @property
    def attn_implementation(self) -> str:
        return self._attn_implementation

    @classmethod
    def from_spec(cls, spec: Any, attn_implementation: str = "eager") -> "TwinConfig":
        """From a DeepSeek-OCR `ModelSpec` of either generation: its `decoder` (`DecoderSpec`) and token ids."""
        d = spec.decoder
        if d.topk_method != "greedy":
            raise ConfigError.field(
                "model spec decoder.topk_method", d.topk_method, "must be 'greedy' (the released DeepSeek-OCR gate)"
            )
        return cls(
            vocab_size=d.vocab_size,
            hidden_size=d.hidden_size,
            intermediate_size=d.intermediate_size,
            moe_intermediate_size=d.moe_intermediate_size,
            num_hidden_layers=d.num_layers,
            num_attention_heads=d.num_heads,
            num_key_value_heads=d.num_kv_heads,
            n_routed_experts=d.n_routed_experts,
            n_shared_experts=d.n_shared_experts,
            num_experts_per_tok=d.num_experts_per_tok,
            first_k_dense_replace=d.first_k_dense_replace,
            moe_layer_freq=d.moe_layer_freq,
            topk_method=d.topk_method,
            norm_topk_prob=d.norm_topk_prob,
            routed_scaling_factor=d.routed_scaling_factor,
            scoring_func="softmax",
            rope_theta=d.rope_theta,
            rms_norm_eps=d.rms_norm_eps,
            max_position_embeddings=d.max_position_embeddings,
            tie_word_embeddings=d.tie_word_embeddings,
            bos_token_id=spec.bos_token_id,
            eos_token_id=spec.eos_token_id,
            image_token_id=spec.image_token_id,
            _attn_implementation=resolve_attn_implementation(attn_implementation, fallback=False)[0],
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

"""What both generations' whole twins share: the DeepSeek-V2 language side and the forward around the vision stack
(`DeepseekOCRModelBase`), the causal-LM root (`DeepseekOCRForCausalLMBase`), and how a twin is built
(`init_language_side`, `init_root`, `build_root`, `DeepseekOCRForCausalLMBase.build`). Each family's `twin.model`
adds its vision stack.

The forward follows the vendor's call pattern step for step, because the call graph and the FLOPs are
what the twin is for:

1. token embeddings for all of `input_ids`;
2. the vision branch runs only when `input_ids` has more than one column (or in training mode) and the
   first global view is not all zeros (`torch.sum(...).item()`, a host sync, as in the vendor). Per
   image, under `torch.no_grad()`, the family's `_image_sequence` (v1: SAM → CLIP → projector on the crop
   batch and then on the global view when the crop tensor is non-zero, else only on the global view);
3. that sequence is written into the embeddings with `masked_scatter_` (the mask is moved to the
   embeddings' device; the vendor hard-codes `.cuda()` there);
4. the DeepSeek-V2 decoder (causal 4-D additive mask from transformers, positions from the cache
   length), the final RMSNorm, then `lm_head` over every position and a float32 cast of the logits.

KV cache: transformers' `DynamicCache`, exactly as the vendor's decoder uses it. The format returned
follows the format given: with `past_key_values=None` or a legacy tuple, the result is the legacy tuple
of (key, value) per layer, each (B, kv_heads, S, head_dim); with a `Cache` object, the same object,
updated. A decode step is `model(input_ids=next_token (1, 1), past_key_values=prev.past_key_values,
use_cache=True)`: the vision branch is skipped (one column) and positions continue after the cache.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import CrossEntropyLoss
from transformers.cache_utils import Cache, DynamicCache
from transformers.modeling_attn_mask_utils import _prepare_4d_causal_attention_mask
from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

from llm_perf_opt.deepseek_ocr_shared.twin.config import TwinConfig
from llm_perf_opt.deepseek_ocr_shared.twin.decoder import (
    DeepseekV2DecoderLayer,
    DeepseekV2RMSNorm,
    LlamaRotaryEmbedding,
)
from llm_perf_opt.deepseek_ocr_shared.twin.sam import ImageEncoderViT


def init_language_side(model: nn.Module, config: TwinConfig, spec) -> None:
    """The DeepSeek-V2 language side every DeepSeek-OCR model starts with, in the vendor's attribute order (the
    module tree's order): token embedding, decoder layers (dense or MoE per the spec), final RMSNorm. Both
    families' models call it before adding their vision stack."""
    model.config = config
    model.spec = spec
    model.padding_idx = config.pad_token_id
    model.vocab_size = config.vocab_size
    model.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size, model.padding_idx)
    model.layers = nn.ModuleList(
        DeepseekV2DecoderLayer(config, i, moe=spec.decoder.is_moe_layer(i)) for i in range(config.num_hidden_layers)
    )
    model._use_flash_attention_2 = config._attn_implementation == "flash_attention_2"
    model.norm = DeepseekV2RMSNorm(config.hidden_size, eps=config.rms_norm_eps)
    model.gradient_checkpointing = False


def init_root(root: nn.Module, config: TwinConfig, spec, model_class: type[nn.Module]) -> None:
    """A causal-LM root's attributes in the vendor's order: `model` (a `model_class(config, spec)`), then
    `lm_head` over the vocabulary (tied to the token embedding when the config says so). Both families'
    roots call it."""
    root.config = config
    root.spec = spec
    root.model = model_class(config, spec)
    root.vocab_size = config.vocab_size
    root.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
    if config.tie_word_embeddings:
        root.lm_head.weight = root.model.embed_tokens.weight


class DeepseekOCRModelBase(nn.Module):
    """What both generations' `DeepseekOCR*Model` run around their vision stack: the language side and SAM (built
    here, `init_language_side` then `sam_model`), the images scattered into them (per image under no_grad,
    `masked_scatter_`), the forward's gate on the vision branch, and the DeepSeek-V2 decoder stack (`_decode`).
    A subclass adds the rest of its vision stack (after SAM, in the vendor's order) and defines `_encode_view`
    (pixels -> projected rows), `_global_rows` (one global view's rows in sequence order) and `_crop_rows` (the
    crops' and the global view's rows, when the image has crops); `_image_sequence` puts them in order."""

    def __init__(self, config: TwinConfig, spec) -> None:
        super().__init__()
        init_language_side(self, config, spec)
        self.sam_model = ImageEncoderViT(spec.sam)

    def get_input_embeddings(self) -> nn.Embedding:
        return self.embed_tokens

    def set_input_embeddings(self, value: nn.Embedding) -> None:
        self.embed_tokens = value

    # ------------------------------------------------------------------ vision
    def _image_sequence(self, image, crop_shape) -> torch.Tensor:
        """The feature rows of one image, in sequence order: when the crop tensor is non-zero, the crops (encoded
        first) then the global view, else the global view alone; then `view_seperator`."""
        crops, global_view = image[0], image[1]
        if torch.sum(crops).item() != 0:
            local = self._encode_view(crops)
            glob = self._encode_view(global_view)
            local, glob = self._crop_rows(local, glob, crop_shape)
            return torch.cat([local, glob, self.view_seperator[None, :]], dim=0)
        glob = self._global_rows(self._encode_view(global_view))
        return torch.cat([glob, self.view_seperator[None, :]], dim=0)

    def _scatter_images(self, inputs_embeds, images, images_seq_mask, images_spatial_crop) -> None:
        for row, (image, crop_shape) in enumerate(zip(images, images_spatial_crop)):
            pieces = []
            with torch.no_grad():
                pieces.append(self._image_sequence(image, crop_shape))
            if pieces:
                feats = torch.cat(pieces, dim=0)
                mask = images_seq_mask[row].unsqueeze(-1).to(inputs_embeds.device)
                inputs_embeds[row].masked_scatter_(mask, feats)

    # ------------------------------------------------------------------ forward
    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        past_key_values=None,
        inputs_embeds: torch.FloatTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        images=None,
        images_seq_mask: torch.Tensor | None = None,
        images_spatial_crop: torch.Tensor | None = None,
        return_dict: bool | None = None,
    ):
        if inputs_embeds is None:
            inputs_embeds = self.get_input_embeddings()(input_ids)
        sam_model = getattr(self, "sam_model", None)
        if (
            sam_model is not None
            and input_ids is not None
            and images is not None
            and (input_ids.shape[1] != 1 or self.training)
            and torch.sum(images[0][1]).item() != 0
        ):
            self._scatter_images(inputs_embeds, images, images_seq_mask, images_spatial_crop)
        return self._decode(
            inputs_embeds,
            attention_mask,
            position_ids,
            past_key_values,
            use_cache,
            output_attentions,
            output_hidden_states,
            return_dict,
        )

    def _decode(
        self,
        inputs_embeds,
        attention_mask,
        position_ids,
        past_key_values,
        use_cache,
        output_attentions,
        output_hidden_states,
        return_dict,
    ):
        """The DeepSeek-V2 decoder stack over ready embeddings (the vendor's `DeepseekV2Model.forward`)."""
        cfg = self.config
        output_attentions = cfg.output_attentions if output_attentions is None else output_attentions
        output_hidden_states = cfg.output_hidden_states if output_hidden_states is None else output_hidden_states
        use_cache = cfg.use_cache if use_cache is None else use_cache
        return_dict = cfg.use_return_dict if return_dict is None else return_dict
        batch, seq = inputs_embeds.shape[:2]

        past_len = 0
        legacy_cache = False
        if use_cache:
            legacy_cache = not isinstance(past_key_values, Cache)
            if legacy_cache:
                past_key_values = DynamicCache.from_legacy_cache(past_key_values)
            past_len = past_key_values.get_usable_length(seq)
        if position_ids is None:
            position_ids = torch.arange(
                past_len, seq + past_len, dtype=torch.long, device=inputs_embeds.device
            ).unsqueeze(0)
        if self._use_flash_attention_2:
            # flash takes the 2-D padding mask, and only when there is padding
            attention_mask = attention_mask if (attention_mask is not None and 0 in attention_mask) else None
        else:
            attention_mask = _prepare_4d_causal_attention_mask(attention_mask, (batch, seq), inputs_embeds, past_len)

        hidden = inputs_embeds
        all_hidden = () if output_hidden_states else None
        all_attn = () if output_attentions else None
        next_cache = None
        for layer in self.layers:
            if output_hidden_states:
                all_hidden += (hidden,)
            out = layer(
                hidden,
                attention_mask=attention_mask,
                position_ids=position_ids,
                past_key_value=past_key_values,
                output_attentions=output_attentions,
                use_cache=use_cache,
            )
            hidden = out[0]
            if use_cache:
                next_cache = out[2 if output_attentions else 1]
            if output_attentions:
                all_attn += (out[1],)
        hidden = self.norm(hidden)
        if output_hidden_states:
            all_hidden += (hidden,)

        cache_out = None
        if use_cache:
            cache_out = next_cache.to_legacy_cache() if legacy_cache else next_cache
        if not return_dict:
            return tuple(v for v in (hidden, cache_out, all_hidden, all_attn) if v is not None)
        return BaseModelOutputWithPast(
            last_hidden_state=hidden, past_key_values=cache_out, hidden_states=all_hidden, attentions=all_attn
        )


class DeepseekOCRForCausalLMBase(nn.Module):
    """What both generations' causal-LM roots run: `model`, then `lm_head` over every position and a float32
    cast of the logits (and the next-token loss with `labels`), and the transformers-style accessors. A subclass
    names its `model_class` (built by `init_root`), its `spec_class` and `spec_needed` (what `build` refuses a
    spec with) and its `model_type` (the config's, None: TwinConfig's); `reset_buffers` refills every RoPE table,
    a subclass adds its other computed buffers."""

    model_class: type[nn.Module]
    spec_class: type
    spec_needed = "must be a ModelSpec"
    model_type: str | None = None

    def __init__(self, config: TwinConfig, spec) -> None:
        super().__init__()
        init_root(self, config, spec, self.model_class)

    def reset_buffers(self) -> None:
        """Refill the computed buffers (every RoPE `inv_freq`, in float32)."""
        for module in self.modules():
            if isinstance(module, LlamaRotaryEmbedding):
                module.reset_buffers()

    @classmethod
    def build(
        cls,
        spec,
        *,
        device: str | torch.device = "cpu",
        dtype: torch.dtype = torch.float32,
        attn_implementation: str = "eager",
        seed: int = 0,
    ) -> nn.Module:
        """The twin for `spec` (a `spec_class`), in eval mode, with seeded random weights (none on the meta device).

        Modules are constructed on the meta device (no memory, no default initialisation), cast to `dtype`
        there, then materialised once on `device` and filled by the shared `initialise_weights` (one seeding
        rule for every family); so the full model on meta is near instant and on CPU costs one pass of random
        fill. `attn_implementation` selects the decoder attention class ("eager" as the vendor's default,
        "sdpa", or "flash_attention_2", which needs `flash_attn` and a CUDA device).
        """
        from llm_perf_opt.errors import ConfigError

        if not isinstance(spec, cls.spec_class):
            raise ConfigError.field("model spec", type(spec).__name__, cls.spec_needed)
        return build_root(
            cls,
            spec,
            device=device,
            dtype=dtype,
            attn_implementation=attn_implementation,
            seed=seed,
            model_type=cls.model_type,
        )

    # transformers-style accessors, so tools written for the vendor model work on the twin
    def get_model(self) -> DeepseekOCRModelBase:
        return self.model

    def get_input_embeddings(self) -> nn.Embedding:
        return self.model.embed_tokens

    def get_output_embeddings(self) -> nn.Linear:
        return self.lm_head

    @property
    def device(self) -> torch.device:
        return next(self.parameters()).device

    @property
    def dtype(self) -> torch.dtype:
        return next(self.parameters()).dtype

    def forward(
        self,
        input_ids: torch.LongTensor | None = None,
        attention_mask: torch.Tensor | None = None,
        position_ids: torch.LongTensor | None = None,
        past_key_values=None,
        inputs_embeds: torch.FloatTensor | None = None,
        labels: torch.LongTensor | None = None,
        use_cache: bool | None = None,
        output_attentions: bool | None = None,
        output_hidden_states: bool | None = None,
        images=None,
        images_seq_mask: torch.Tensor | None = None,
        images_spatial_crop: torch.Tensor | None = None,
        return_dict: bool | None = None,
    ):
        output_attentions = self.config.output_attentions if output_attentions is None else output_attentions
        output_hidden_states = (
            self.config.output_hidden_states if output_hidden_states is None else output_hidden_states
        )
        return_dict = self.config.use_return_dict if return_dict is None else return_dict
        outputs = self.model(
            input_ids=input_ids,
            past_key_values=past_key_values,
            attention_mask=attention_mask,
            position_ids=position_ids,
            inputs_embeds=inputs_embeds,
            use_cache=use_cache,
            output_attentions=output_attentions,
            output_hidden_states=output_hidden_states,
            images=images,
            images_seq_mask=images_seq_mask,
            images_spatial_crop=images_spatial_crop,
            return_dict=return_dict,
        )
        logits = self.lm_head(outputs[0]).float()  # every position, as the vendor's prefill

        loss = None
        if labels is not None:  # next-token loss: position t predicts token t+1
            pred = logits[..., :-1, :].contiguous().view(-1, self.config.vocab_size)
            target = labels[..., 1:].contiguous().view(-1).to(pred.device)
            loss = CrossEntropyLoss()(pred, target)

        if not return_dict:
            rest = (logits,) + tuple(outputs[1:])
            return (loss,) + rest if loss is not None else rest
        return CausalLMOutputWithPast(
            loss=loss,
            logits=logits,
            past_key_values=outputs.past_key_values,
            hidden_states=outputs.hidden_states,
            attentions=outputs.attentions,
        )


def build_root(
    root_class: type[nn.Module],
    spec,
    *,
    device: str | torch.device,
    dtype: torch.dtype,
    attn_implementation: str,
    seed: int,
    model_type: str | None = None,
) -> nn.Module:
    """`root_class(config, spec)` (a family's causal-LM root, its `TwinConfig` made from `spec`, with
    `model_type` when given) built on meta, cast to `dtype`, materialised once on `device`, its buffers
    refilled and its weights seeded by `initialise_weights` (one rule for every family); in eval mode.
    Checks `dtype`, `device` and the attention implementation first."""
    from llm_perf_opt.deepseek_ocr_shared.twin.weights import initialise_weights
    from llm_perf_opt.errors import ConfigError
    from llm_perf_opt.model_runtime.attention import resolve_attn_implementation

    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise ConfigError.field("model.dtype", dtype, "must be a floating torch dtype")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ConfigError.field("model.device", device, f"must name a torch device ({exc})") from None
    resolve_attn_implementation(attn_implementation, device, fallback=False)
    config = TwinConfig.from_spec(spec, attn_implementation)  # reads spec.decoder and the token ids only
    if model_type is not None:
        config.model_type = model_type
    # torch.nn.init's fills are skipped while constructing (transformers' no_init_weights): on meta they fill
    # nothing, yet they run torch._refs' Python ops, whose first call imports torch._dynamo (~1 s per process).
    from transformers.modeling_utils import no_init_weights

    with torch.device("meta"), no_init_weights():
        model = root_class(config, spec)
    model = model.to(dtype=dtype)
    if device.type != "meta":
        model = model.to_empty(device=device)
    model.reset_buffers()
    if device.type != "meta":
        initialise_weights(model, seed)
    return model.eval()

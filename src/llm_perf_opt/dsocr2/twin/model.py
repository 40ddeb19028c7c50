"""The whole DeepSeek-OCR 2 twin: `DeepseekOCR2Model` (vision + decoder) and `DeepseekOCR2ForCausalLM`.

The forward follows the vendor's `DeepseekOCR2Model.forward` step for step:

1. token embeddings for all of `input_ids`;
2. the vision branch runs only when `input_ids` has more than one column (or in training mode) and the
   first global view is not all zeros (`torch.sum(...).item()`, a host sync). Per image, under
   `torch.no_grad()`: when the crop tensor is non-zero, SAM -> encoder -> projector on the crop batch and
   then on the global view (each module called twice), else on the global view only;
3. the sequence is **crops, global, `view_seperator`** (no newline column), written into the embeddings
   with `masked_scatter_` (the vendor moves the mask with `.cuda()`; the twin to the embeddings' device);
4. the DeepSeek-V2 decoder, its norm, `lm_head` over every position and `logits.float()`: the shared code
   (`deepseek_ocr_shared.twin.model`: per image under no_grad, `masked_scatter_` into the embeddings, the
   forward's gate on the vision branch, the stack over ready embeddings), the same vendor file as v1's
   (`modeling_deepseekv2.py`, blob ff008470).
"""

from __future__ import annotations

import torch
from torch import nn

from llm_perf_opt.deepseek_ocr_shared.twin.config import TwinConfig
from llm_perf_opt.deepseek_ocr_shared.twin.decoder import LlamaRotaryEmbedding
from llm_perf_opt.deepseek_ocr_shared.twin.model import (
    DeepseekOCRForCausalLMBase,
    DeepseekOCRModelBase,
    build_root,
    init_language_side,
    init_root,
)
from llm_perf_opt.deepseek_ocr_shared.twin.projector import MlpProjector
from llm_perf_opt.deepseek_ocr_shared.twin.sam import ImageEncoderViT
from llm_perf_opt.dsocr2.spec import FAMILY, ModelSpec
from llm_perf_opt.dsocr2.twin.encoder import Qwen2Decoder2Encoder


class DeepseekOCR2Model(DeepseekOCRModelBase):
    """Embeddings, decoder layers and final norm, plus SAM, the encoder, the projector and the separator."""

    def __init__(self, config: TwinConfig, spec: ModelSpec) -> None:
        super().__init__()
        init_language_side(self, config, spec)
        self.sam_model = ImageEncoderViT(spec.sam)
        self.qwen2_model = Qwen2Decoder2Encoder(spec.encoder)
        self.projector = MlpProjector(spec.projector)
        self.view_seperator = nn.Parameter(torch.zeros(spec.projector.n_embed))  # [sic]: the vendor's name

    # ------------------------------------------------------------------ vision
    def _encode_view(self, pixels: torch.Tensor) -> torch.Tensor:
        """SAM, then the encoder on SAM's features (the query positions), then the projector."""
        return self.projector(self.qwen2_model(self.sam_model(pixels)))

    def _image_sequence(self, image, _crop_shape) -> torch.Tensor:
        """The feature rows of one image in sequence order: crops, global view, separator (no newline
        column, so the crop grid's shape is not needed)."""
        patches, image_ori = image[0], image[1]
        if torch.sum(patches).item() != 0:
            local = self._encode_view(patches)
            glob = self._encode_view(image_ori)
            glob = glob.view(-1, glob.shape[-1])
            local = local.view(-1, local.shape[-1])
            return torch.cat([local, glob, self.view_seperator[None, :]], dim=0)
        glob = self._encode_view(image_ori)
        glob = glob.view(-1, glob.shape[-1])
        return torch.cat([glob, self.view_seperator[None, :]], dim=0)


class DeepseekOCR2ForCausalLM(DeepseekOCRForCausalLMBase):
    """Root of the twin: `model` (DeepseekOCR2Model) + `lm_head`."""

    def __init__(self, config: TwinConfig, spec: ModelSpec) -> None:
        super().__init__()
        init_root(self, config, spec, DeepseekOCR2Model)

    def reset_buffers(self) -> None:
        """Refill the computed buffers (every RoPE `inv_freq`, in float32)."""
        for module in self.modules():
            if isinstance(module, LlamaRotaryEmbedding):
                module.reset_buffers()


def build_twin(
    spec: ModelSpec,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    attn_implementation: str = "eager",
    seed: int = 0,
) -> DeepseekOCR2ForCausalLM:
    """The DeepSeek-OCR 2 twin for `spec`, in eval mode, with seeded random weights (none on meta).

    Built on the meta device, cast, materialised once on `device` and filled by the shared
    `initialise_weights` (one seeding rule for every family). `attn_implementation` selects the decoder's
    attention ("eager", the vendor's default, "sdpa", or "flash_attention_2"); the encoder is always SDPA.
    """
    from llm_perf_opt.errors import ConfigError

    if not isinstance(spec, ModelSpec):
        raise ConfigError.field("model spec", type(spec).__name__, f"must be a {FAMILY} ModelSpec (dsocr2.spec)")
    return build_root(
        DeepseekOCR2ForCausalLM,
        spec,
        device=device,
        dtype=dtype,
        attn_implementation=attn_implementation,
        seed=seed,
        model_type="deepseek_ocr2_twin",
    )

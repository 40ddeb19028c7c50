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
from llm_perf_opt.deepseek_ocr_shared.twin.model import DeepseekOCRForCausalLMBase, DeepseekOCRModelBase
from llm_perf_opt.deepseek_ocr_shared.twin.projector import MlpProjector
from llm_perf_opt.dsocr2.spec import FAMILY, ModelSpec
from llm_perf_opt.dsocr2.twin.encoder import Qwen2Decoder2Encoder


class DeepseekOCR2Model(DeepseekOCRModelBase):
    """Embeddings, decoder layers and final norm, plus SAM, the encoder, the projector and the separator."""

    def __init__(self, config: TwinConfig, spec: ModelSpec) -> None:
        super().__init__(config, spec)  # the language side, then sam_model
        self.qwen2_model = Qwen2Decoder2Encoder(spec.encoder)
        self.projector = MlpProjector(spec.projector)
        self.view_seperator = nn.Parameter(torch.zeros(spec.projector.n_embed))  # [sic]: the vendor's name

    # ------------------------------------------------------------------ vision
    def _encode_view(self, pixels: torch.Tensor) -> torch.Tensor:
        """SAM, then the encoder on SAM's features (the query positions), then the projector."""
        return self.projector(self.qwen2_model(self.sam_model(pixels)))

    def _global_rows(self, glob: torch.Tensor) -> torch.Tensor:
        """The global view's query rows (no newline column)."""
        return glob.view(-1, glob.shape[-1])

    def _crop_rows(self, local: torch.Tensor, glob: torch.Tensor, _crop_shape) -> tuple[torch.Tensor, torch.Tensor]:
        """The crops' query rows, crop after crop, and the global view's (no newline column, so the crop grid's
        shape is not needed)."""
        glob = self._global_rows(glob)
        return local.view(-1, local.shape[-1]), glob


class DeepseekOCR2ForCausalLM(DeepseekOCRForCausalLMBase):
    """Root of the twin: `model` (DeepseekOCR2Model) + `lm_head`; its buffers are the RoPE tables alone."""

    model_class = DeepseekOCR2Model
    spec_class = ModelSpec
    spec_needed = f"must be a {FAMILY} ModelSpec (dsocr2.spec)"
    model_type = "deepseek_ocr2_twin"


# build_twin(spec, *, device="cpu", dtype=torch.float32, attn_implementation="eager", seed=0): the DeepSeek-OCR 2
# twin for `spec`, in eval mode, with seeded random weights (`DeepseekOCRForCausalLMBase.build`); the encoder's
# attention is always SDPA
build_twin = DeepseekOCR2ForCausalLM.build

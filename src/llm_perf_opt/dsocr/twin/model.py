"""The whole v1 twin: `DeepseekOCRModel` (SAM → CLIP-L → projector, two learned separators, on the shared language
side and forward, `deepseek_ocr_shared.twin.model`) and `DeepseekOCRForCausalLM` (+ `lm_head`).

Vision per image (the vendor's `DeepseekOCRModel.forward`): when the crop tensor is non-zero, SAM → CLIP →
projector on the crop batch and then on the global view (each module called twice), else only on the global
view; the global grid gets a newline column (`image_newline`), crops are stitched into one big grid with its
own newline column, and the sequence is **local, global, `view_seperator`**.
"""

from __future__ import annotations

import torch
from torch import nn

from llm_perf_opt.deepseek_ocr_shared.twin.config import TwinConfig
from llm_perf_opt.deepseek_ocr_shared.twin.model import DeepseekOCRForCausalLMBase, DeepseekOCRModelBase
from llm_perf_opt.deepseek_ocr_shared.twin.projector import MlpProjector
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin.clip import VitModel


class DeepseekOCRModel(DeepseekOCRModelBase):
    """Embeddings, decoder layers and final norm, plus the vision stack and the two learned separators."""

    def __init__(self, config: TwinConfig, spec: ModelSpec) -> None:
        super().__init__(config, spec)  # the language side, then sam_model
        self.vision_model = VitModel(spec.clip)
        self.projector = MlpProjector(spec.projector)
        n_embed = spec.projector.n_embed
        self.image_newline = nn.Parameter(torch.zeros(n_embed))
        self.view_seperator = nn.Parameter(torch.zeros(n_embed))  # [sic]: the vendor's parameter name

    # ------------------------------------------------------------------ vision
    def _encode_view(self, pixels: torch.Tensor) -> torch.Tensor:
        """SAM, then CLIP on SAM's features, then the projector on [CLIP (no class token) ‖ SAM]."""
        sam_feats = self.sam_model(pixels)
        clip_feats = self.vision_model(pixels, sam_feats)
        joined = torch.cat((clip_feats[:, 1:], sam_feats.flatten(2).permute(0, 2, 1)), dim=-1)
        return self.projector(joined)

    def _global_rows(self, glob: torch.Tensor) -> torch.Tensor:
        """The global view's grid with a newline column (`image_newline`), row by row."""
        _, n_glob, dim = glob.shape
        side = int(n_glob**0.5)
        glob = glob.view(side, side, dim)
        glob = torch.cat([glob, self.image_newline[None, None, :].expand(side, 1, dim)], dim=1)
        return glob.view(-1, dim)

    def _crop_rows(self, local: torch.Tensor, glob: torch.Tensor, crop_shape) -> tuple[torch.Tensor, torch.Tensor]:
        """The crops stitched into one big grid with its own newline column, and the global view's rows."""
        _, n_loc, dim_loc = local.shape
        side_loc = int(n_loc**0.5)
        across, down = crop_shape[0], crop_shape[1]  # tensors, as the vendor keeps them
        glob = self._global_rows(glob)
        # (down, across, s, s, C) -> rows of the stitched crop grid, then a newline column
        local = local.view(down, across, side_loc, side_loc, dim_loc).permute(0, 2, 1, 3, 4)
        local = local.reshape(down * side_loc, across * side_loc, dim_loc)
        local = torch.cat([local, self.image_newline[None, None, :].expand(down * side_loc, 1, dim_loc)], dim=1)
        return local.view(-1, dim_loc), glob


class DeepseekOCRForCausalLM(DeepseekOCRForCausalLMBase):
    """Root of the twin: `model` (DeepseekOCRModel) + `lm_head` (untied unless the spec ties it)."""

    model_class = DeepseekOCRModel
    spec_class = ModelSpec

    def reset_buffers(self) -> None:
        """Refill the computed buffers (CLIP `position_ids`, RoPE `inv_freq` in float32)."""
        super().reset_buffers()
        self.model.vision_model.embeddings.reset_buffers()


# build_twin(spec, *, device="cpu", dtype=torch.float32, attn_implementation="eager", seed=0): the v1 twin for
# `spec`, in eval mode, with seeded random weights (`DeepseekOCRForCausalLMBase.build`)
build_twin = DeepseekOCRForCausalLM.build

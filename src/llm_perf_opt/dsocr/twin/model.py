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
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin.clip import VitModel


class DeepseekOCRModel(DeepseekOCRModelBase):
    """Embeddings, decoder layers and final norm, plus the vision stack and the two learned separators."""

    def __init__(self, config: TwinConfig, spec: ModelSpec) -> None:
        super().__init__()
        init_language_side(self, config, spec)
        self.sam_model = ImageEncoderViT(spec.sam)
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

    def _image_sequence(self, image, crop_shape) -> torch.Tensor:
        """The feature rows of one image, in sequence order (local rows, global rows, separator)."""
        crops, global_view = image[0], image[1]
        if torch.sum(crops).item() != 0:
            local = self._encode_view(crops)
            glob = self._encode_view(global_view)
            _, n_glob, dim = glob.shape
            side = int(n_glob**0.5)
            _, n_loc, dim_loc = local.shape
            side_loc = int(n_loc**0.5)
            across, down = crop_shape[0], crop_shape[1]  # tensors, as the vendor keeps them
            glob = glob.view(side, side, dim)
            glob = torch.cat([glob, self.image_newline[None, None, :].expand(side, 1, dim)], dim=1)
            glob = glob.view(-1, dim)
            # (down, across, s, s, C) -> rows of the stitched crop grid, then a newline column
            local = local.view(down, across, side_loc, side_loc, dim_loc).permute(0, 2, 1, 3, 4)
            local = local.reshape(down * side_loc, across * side_loc, dim_loc)
            local = torch.cat([local, self.image_newline[None, None, :].expand(down * side_loc, 1, dim_loc)], dim=1)
            local = local.view(-1, dim_loc)
            return torch.cat([local, glob, self.view_seperator[None, :]], dim=0)
        glob = self._encode_view(global_view)
        _, n_glob, dim = glob.shape
        side = int(n_glob**0.5)
        glob = glob.view(side, side, dim)
        glob = torch.cat([glob, self.image_newline[None, None, :].expand(side, 1, dim)], dim=1)
        glob = glob.view(-1, dim)
        return torch.cat([glob, self.view_seperator[None, :]], dim=0)


class DeepseekOCRForCausalLM(DeepseekOCRForCausalLMBase):
    """Root of the twin: `model` (DeepseekOCRModel) + `lm_head` (untied unless the spec ties it)."""

    def __init__(self, config: TwinConfig, spec: ModelSpec) -> None:
        super().__init__()
        init_root(self, config, spec, DeepseekOCRModel)

    def reset_buffers(self) -> None:
        """Refill the computed buffers (CLIP `position_ids`, RoPE `inv_freq` in float32)."""
        for module in self.modules():
            if isinstance(module, LlamaRotaryEmbedding):
                module.reset_buffers()
        self.model.vision_model.embeddings.reset_buffers()


def build_twin(
    spec: ModelSpec,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype = torch.float32,
    attn_implementation: str = "eager",
    seed: int = 0,
) -> DeepseekOCRForCausalLM:
    """The twin for `spec`, in eval mode, with seeded random weights (none on the meta device).

    Modules are constructed on the meta device (no memory, no default initialisation), cast to `dtype`
    there, then materialised once on `device` and filled by `initialise_weights`; so the full model on
    meta is near instant and on CPU costs one pass of random fill. `attn_implementation` selects the
    decoder attention class ("eager" as the vendor's default, "sdpa", or "flash_attention_2", which
    needs `flash_attn` and a CUDA device).
    """
    from llm_perf_opt.errors import ConfigError

    if not isinstance(spec, ModelSpec):
        raise ConfigError.field("model spec", type(spec).__name__, "must be a ModelSpec")
    return build_root(
        DeepseekOCRForCausalLM, spec, device=device, dtype=dtype, attn_implementation=attn_implementation, seed=seed
    )

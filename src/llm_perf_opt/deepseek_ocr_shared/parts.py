"""The parts both DeepSeek-OCR generations have, by the vendor's module paths: the token embedding, SAM ViT-B,
the projector and the DeepSeek-V2 decoder side (`model.layers`, the final norm, `lm_head`). Each family's
vocabulary (`dsocr.parts`, `dsocr2.parts`) is these in forward order with its own vision encoder
(`parts_with`). Nothing here imports torch.
"""

from __future__ import annotations

from typing import Optional

from llm_perf_opt.family import Part

EMBEDDING = Part("embedding", "model.embed_tokens", "token embedding", "#9d755d", "language")
SAM = Part("sam", "model.sam_model", "SAM ViT-B", "#4c78a8", "vision")
PROJECTOR = Part("projector", "model.projector", "projector", "#54a24b", "vision")
DECODER = Part("decoder", "model.layers", "decoder layers", "#b279a2", "language")
NORM = Part("norm", "model.norm", "final RMSNorm", "#bab0ac", "language")
LM_HEAD = Part("lm_head", "lm_head", "lm_head", "#e45756", "language")

DECODER_STACK = DECODER.path  # the decoder part's path (the DeepSeek-V2 decoder's layers)
LAYER_ALIAS_PREFIX = "decoder.layer."
SAM_BLOCKS = "model.sam_model.blocks"  # SAM's `for blk in self.blocks` loop


def parts_with(encoder: Part) -> tuple[Part, ...]:
    """A generation's parts in forward order: the embedding, SAM, its own `encoder`, the projector, the decoder side."""
    return (EMBEDDING, SAM, encoder, PROJECTOR, DECODER, NORM, LM_HEAD)


def decoder_layer_index(module_path: str) -> Optional[int]:
    """i for `model.layers.<i>` exactly, else None."""
    head, _, tail = module_path.rpartition(".")
    return int(tail) if head == DECODER_STACK and tail.isdigit() else None

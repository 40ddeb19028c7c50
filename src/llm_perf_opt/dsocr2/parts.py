"""The vocabulary of DeepSeek-OCR 2: its parts (alias, module path, label, colour, stage), as v1's `dsocr.parts`
(the parts both have: `deepseek_ocr_shared.parts`).

Module paths are the vendor's (`model.sam_model`, `model.qwen2_model`, `model.layers.3`, `lm_head`); the twin
uses the same tree: v1's parts with CLIP-L replaced by the encoder, the same `model.layers` decoder stack; the
lookups (`path`, `alias`, ...) are its `PartVocabulary`'s. Nothing here imports torch.
"""

from __future__ import annotations

# the same vendor decoder code and path as v1, SAM and the projector too
from llm_perf_opt.deepseek_ocr_shared.parts import DECODER_STACK, LAYER_ALIAS_PREFIX, SAM_BLOCKS, parts_with
from llm_perf_opt.family import Part, PartVocabulary

__all__ = [
    "PARTS",
    "REPORTED",
    "VOCABULARY",
    "VISION_PATHS",
    "ENCODER_STACK",
    "SAM_BLOCKS",
    "VISION_LOOPS",
    "DECODER_STACK",
    "Part",
    "alias",
    "encoder_layer_path",
    "ENCODER_LAYER",
    "EXPORT_SUBMODULES",
    "EXPORT_REFUSED",
]

ENCODER = Part("encoder", "model.qwen2_model", "DeepEncoder V2 (Qwen2)", "#f58518", "vision")
PARTS: tuple[Part, ...] = parts_with(ENCODER)  # v1's with CLIP-L -> the encoder
REPORTED: tuple[str, ...] = ("sam", "encoder", "projector", "decoder", "lm_head")
# The vocabulary the generic layers receive (`llm_perf_opt.family.PartVocabulary`); its methods are the
# lookups (path, alias, decoder_layer_path, color, ...).
CONSOLE: tuple[str, ...] = ("sam", "encoder", "projector", "embedding", "decoder", "norm", "lm_head")  # v1's order
VOCABULARY = PartVocabulary("dsocr2", PARTS, REPORTED, DECODER_STACK, LAYER_ALIAS_PREFIX, CONSOLE)
VISION_PATHS: tuple[str, ...] = VOCABULARY.vision_paths
alias = VOCABULARY.alias  # module path -> alias (`model.layers.3` -> `decoder.layer.3`), else the path
ENCODER_STACK = "model.qwen2_model.model.model.layers"
VISION_LOOPS = (SAM_BLOCKS, ENCODER_STACK)  # the `for N` stacks of the vision stage (12 and 24 at full size)


def encoder_layer_path(index: int) -> str:
    return f"{ENCODER_STACK}.{index}"


# One encoder layer as an export block (`ModelFamily.export_blocks`): `encoder_layer.crops` / `.global` are its
# call inside the encoder's crop-batch and global-view call.
ENCODER_LAYER = Part("encoder_layer", encoder_layer_path(0), "encoder layer 0 (Qwen2)", ENCODER.color, "vision")
# The names `export.submodules` may hold for this family: v1's with CLIP -> one encoder layer. The whole encoder
# is not one of them: it builds its mask with the vendor's ops (`nonzero` of the token types, then a Python loop
# over the query rows), and torch.export refuses the data-dependent size (GuardOnDataDependentSymNode in
# `encoder_mask`, torch 2.13); its layers take the mask as an input and export.
EXPORT_SUBMODULES: tuple[str, ...] = (
    "sam.crops",
    "sam.global",
    "encoder_layer.crops",
    "encoder_layer.global",
    "projector.crops",
    "projector.global",
    "dense_layer",
    "moe_layer",
    "decode_layer",
)
_WHOLE_ENCODER = (
    "torch.export refuses the whole encoder (its mask is built from data-dependent nonzero() "
    "positions, row by row, as the vendor builds it): export encoder_layer.{view} (one layer, the "
    "mask as an input)"
)
EXPORT_REFUSED = {f"encoder.{view}": _WHOLE_ENCODER.format(view=view) for view in ("crops", "global")}

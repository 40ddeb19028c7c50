"""The vocabulary of DeepSeek-OCR 2: its parts (alias, module path, label, colour, stage), as v1's `dsocr.parts`.

Module paths are the vendor's (`model.sam_model`, `model.qwen2_model`, `model.layers.3`, `lm_head`); the twin
uses the same tree. The decoder helpers are v1's (the same `model.layers` stack). Nothing here imports torch.
"""
from __future__ import annotations

from typing import Optional

from llm_perf_opt.family import PartVocabulary

from llm_perf_opt.dsocr.parts import (  # the decoder stack is the same vendor code and path
    DECODER_STACK,
    LAYER_ALIAS_PREFIX,
    Part,
    decoder_layer_index,
    decoder_layer_path,
)

__all__ = ["PARTS", "BY_ALIAS", "BY_PATH", "REPORTED", "VISION", "VISION_PATHS", "ENCODER_STACK", "DECODER_STACK",
           "Part", "path", "alias", "decoder_layer_path", "decoder_layer_index", "encoder_layer_path", "color"]

PARTS: tuple[Part, ...] = (  # forward order
    Part("embedding", "model.embed_tokens", "token embedding", "#9d755d", "language"),
    Part("sam", "model.sam_model", "SAM ViT-B", "#4c78a8", "vision"),
    Part("encoder", "model.qwen2_model", "DeepEncoder V2 (Qwen2)", "#f58518", "vision"),
    Part("projector", "model.projector", "projector", "#54a24b", "vision"),
    Part("decoder", "model.layers", "decoder layers", "#b279a2", "language"),
    Part("norm", "model.norm", "final RMSNorm", "#bab0ac", "language"),
    Part("lm_head", "lm_head", "lm_head", "#e45756", "language"),
)
BY_ALIAS: dict[str, Part] = {p.alias: p for p in PARTS}
BY_PATH: dict[str, Part] = {p.path: p for p in PARTS}
REPORTED: tuple[str, ...] = ("sam", "encoder", "projector", "decoder", "lm_head")
VISION: tuple[str, ...] = tuple(p.alias for p in PARTS if p.stage == "vision")
VISION_PATHS: tuple[str, ...] = tuple(BY_ALIAS[a].path for a in VISION)
# The vocabulary the generic layers receive (`llm_perf_opt.family.PartVocabulary`).
VOCABULARY = PartVocabulary("dsocr2", PARTS, REPORTED, DECODER_STACK, LAYER_ALIAS_PREFIX)
ENCODER_STACK = "model.qwen2_model.model.model.layers"
SAM_BLOCKS = "model.sam_model.blocks"
VISION_LOOPS = (SAM_BLOCKS, ENCODER_STACK)  # the `for N` stacks of the vision stage (12 and 24 at full size)


def encoder_layer_path(index: int) -> str:
    return f"{ENCODER_STACK}.{index}"


def path(name: str) -> str:
    """The module path of a part alias, of `decoder.layer.<i>`, or a path given as it is; "" for total/all."""
    if name in BY_ALIAS:
        return BY_ALIAS[name].path
    if name.startswith(LAYER_ALIAS_PREFIX):
        return decoder_layer_path(int(name[len(LAYER_ALIAS_PREFIX):]))
    if name in ("total", "all"):
        return ""
    return name


def alias(module_path: str) -> str:
    """The alias of a part path (`model.layers.3` -> `decoder.layer.3`), else the path itself."""
    if module_path in BY_PATH:
        return BY_PATH[module_path].alias
    index = decoder_layer_index(module_path)
    return f"{LAYER_ALIAS_PREFIX}{index}" if index is not None else module_path


def color(alias_or_path: str) -> Optional[str]:
    part = BY_ALIAS.get(alias_or_path) or BY_PATH.get(alias_or_path)
    return part.color if part else None

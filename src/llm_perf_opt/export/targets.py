"""Which submodules are exported, and at which call of the forward (so at which shapes).

Each name of `export.submodules` is one call of one module in the real forward of the chosen
workload and page: SAM, CLIP and the projector run once on the crop batch and once on the global view
(crop mode with a grid > 1x1; otherwise only on the global view), so `sam.crops` is their first call
and `sam.global` their last; `dense_layer` and `moe_layer` are decoder layers in the prefill (over the
whole prompt); `decode_layer` is a decoder layer in the decode step whose KV cache holds
`decode_context` tokens (default: the prompt, i.e. the first step after the prefill).

A family may offer blocks inside its vision parts as well (`ModelFamily.export_blocks`: `Part`s whose alias
names a repeated block, e.g. DeepSeek-OCR 2's `encoder_layer`, the first layer of its encoder): `<block>.crops`
and `<block>.global` are that block's call inside the part's crop-batch and global-view call. Which names a
family offers is its `export_submodules`; the family hands them in (`plan_targets(..., family=...)`), so
nothing here knows a family's module tree.

Everything here is plain Python on the family's spec + view layout and its parts vocabulary, so a request the
workload cannot serve (the crop batch of a page that is not tiled, a dense layer index that is MoE, a cache
shorter than the prompt) is refused before any model is built, with one line naming the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Optional, Sequence

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.export.export_config import ExportConfig
from llm_perf_opt.family import Part, PartVocabulary

ViewLayout = Any
ModelSpec = Any

VISION_VIEWS = ("crops", "global")
# The extra call recorded for ONNX: one CLIP transformer block (the first) on the global view.
CLIP_BLOCK = "clip.block"


def clip_block_path(parts: PartVocabulary) -> str:
    return f"{parts.by_alias['clip'].path}.transformer.layers.0"


@dataclass(frozen=True)
class ExportTarget:
    """One call of one module: `path` (the vendor's module path), its `call`-th call (0-based) in the
    `stage` forward ("prefill", or "decode" = the decode step over a cache of `context` tokens)."""

    name: str
    path: str
    stage: str
    call: int
    description: str
    view: Optional[str] = None  # "crops" / "global" for the vision parts
    expected_batch: Optional[int] = None  # first dimension of the first input, when the layout fixes it
    context: Optional[int] = None  # decode: tokens already in the KV cache
    layer: Optional[int] = None  # decoder layer index
    moe: bool = False  # a decoder layer with routed experts
    vocabulary: Optional[PartVocabulary] = field(default=None, compare=False, repr=False)

    @property
    def part(self) -> str:
        """The part alias (`sam`, `decoder.layer.0`, ...) from the family's vocabulary of parts."""
        return self.vocabulary.alias(self.path) if self.vocabulary is not None else self.path

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "part": self.part,
            "stage": self.stage,
            "call": self.call,
            "view": self.view,
            "context": self.context,
            "layer": self.layer,
            "moe": self.moe,
            "description": self.description,
        }


@dataclass
class ExportPlan:
    targets: list[ExportTarget]
    seq_len: int
    decode_context: int
    notes: list[str] = field(default_factory=list)  # submodules left out by default, and why

    def names(self) -> list[str]:
        return [t.name for t in self.targets]


def _vision_target(
    alias: str, view: str, layout: ViewLayout, parts: PartVocabulary, blocks: Mapping[str, Part] = {}
) -> ExportTarget:  # noqa: B006 - read only
    part = blocks.get(alias) or parts.by_alias[alias]
    if view == "crops":
        return ExportTarget(
            name=f"{alias}.crops",
            path=part.path,
            stage="prefill",
            call=0,
            view="crops",
            expected_batch=layout.num_crops,
            vocabulary=parts,
            description=f"{part.label} on the crop batch ({layout.num_crops} x {layout.crop_side}x{layout.crop_side})",
        )
    return ExportTarget(
        name=f"{alias}.global",
        path=part.path,
        stage="prefill",
        call=1 if layout.num_crops else 0,
        view="global",
        expected_batch=1,
        vocabulary=parts,
        description=f"{part.label} on the global view ({layout.global_side}x{layout.global_side})",
    )


def first_moe_layer(spec: ModelSpec) -> Optional[int]:
    return next((i for i in range(spec.decoder.num_layers) if spec.decoder.is_moe_layer(i)), None)


def plan_targets(
    cfg: ExportConfig,
    spec: ModelSpec,
    layout: ViewLayout,
    seq_len: int,
    mode: str = "",
    *,
    family: Any,
) -> ExportPlan:
    """The targets `cfg` asks for, checked against what this model, workload and page produce. `family`: the
    model family (its parts, `export_submodules`, `export_blocks` and `export_refused`)."""
    offered: Sequence[str] = tuple(family.export_submodules)
    blocks: dict[str, Part] = {b.alias: b for b in family.export_blocks}
    parts: PartVocabulary = family.parts
    explicit = cfg.submodules is not None
    names = list(dict.fromkeys(cfg.submodules)) if explicit else list(offered)
    owner = f" (model.family={family.name})"
    refused: Mapping[str, str] = family.export_refused
    for name in names:
        if name in refused:  # a module the family knows cannot be exported: its reason, one line
            raise ConfigError.field("export.submodules", name, f"{refused[name]}{owner}")
        if name not in offered:
            raise ConfigError.field("export.submodules", name, f"must be one of {', '.join(offered)}{owner}")
    d = spec.decoder
    where = f"workload {mode + ' ' if mode else ''}on a {layout.page_width}x{layout.page_height} page"
    notes: list[str] = []
    targets: list[ExportTarget] = []

    moe_index = cfg.moe_layer if cfg.moe_layer is not None else first_moe_layer(spec)
    if cfg.moe_layer is not None and not (0 <= cfg.moe_layer < d.num_layers and d.is_moe_layer(cfg.moe_layer)):
        moe_layers = [i for i in range(d.num_layers) if d.is_moe_layer(i)]
        raise ConfigError.field(
            "export.moe_layer",
            cfg.moe_layer,
            f"must be a MoE decoder layer of {spec.name} (one of {moe_layers or 'none'})",
        )
    if not 0 <= cfg.decode_layer < d.num_layers:
        raise ConfigError.field(
            "export.decode_layer",
            cfg.decode_layer,
            f"must be a decoder layer index of {spec.name} (0..{d.num_layers - 1})",
        )
    context = seq_len if cfg.decode_context is None else cfg.decode_context
    if context < seq_len:
        raise ConfigError.field(
            "export.decode_context",
            cfg.decode_context,
            f"must be >= the prompt length {seq_len} of this {where}: the KV cache "
            "holds the whole prompt after the prefill, so no decode step sees a shorter one",
        )

    for name in names:
        alias, _, view = name.partition(".")
        if view in VISION_VIEWS:
            if view == "crops" and not layout.num_crops:
                why = (
                    "crop_mode is false"
                    if not layout.crop_mode
                    else f"the page is not tiled (grid {layout.w_crop}x{layout.h_crop})"
                )
                if explicit:
                    raise ConfigError.field(
                        "export.submodules", name, f"needs the crop batch, but the {where} has none ({why})"
                    )
                notes.append(f"{name}: not exported: no crop batch in this {where} ({why})")
                continue
            targets.append(_vision_target(alias, view, layout, parts, blocks))
        elif name == "dense_layer":
            if d.is_moe_layer(0):
                raise ConfigError.field(
                    "export.submodules", name, f"layer 0 of {spec.name} is a MoE layer, not dense (use moe_layer)"
                )
            targets.append(
                ExportTarget(
                    vocabulary=parts,
                    name=name,
                    path=parts.decoder_layer_path(0),
                    stage="prefill",
                    call=0,
                    layer=0,
                    description=f"dense decoder layer 0 over the prompt ({seq_len} tokens)",
                )
            )
        elif name == "moe_layer":
            if moe_index is None:
                if explicit:
                    raise ConfigError.field("export.submodules", name, f"{spec.name} has no MoE decoder layer")
                notes.append(f"{name}: not exported: {spec.name} has no MoE decoder layer")
                continue
            targets.append(
                ExportTarget(
                    vocabulary=parts,
                    name=name,
                    path=parts.decoder_layer_path(moe_index),
                    stage="prefill",
                    call=0,
                    layer=moe_index,
                    moe=True,
                    description=f"MoE decoder layer {moe_index} over the prompt ({seq_len} tokens)",
                )
            )
        elif name == "decode_layer":
            i = cfg.decode_layer
            targets.append(
                ExportTarget(
                    vocabulary=parts,
                    name=name,
                    path=parts.decoder_layer_path(i),
                    stage="decode",
                    call=0,
                    layer=i,
                    context=context,
                    moe=d.is_moe_layer(i),
                    description=f"decoder layer {i}, one token over a KV cache of {context} tokens",
                )
            )
    return ExportPlan(targets=targets, seq_len=seq_len, decode_context=context, notes=notes)


def onnx_targets(
    layout: ViewLayout, seq_len: int, parts: PartVocabulary, block: Optional[Part] = None
) -> list[ExportTarget]:
    """The calls written as ONNX: one vision block on the global view (the family's `onnx_block`, named as its
    export target `<alias>.global`; default the first CLIP block, `clip.block`) and the dense layer 0."""
    if block is None:
        name, block = CLIP_BLOCK, Part(CLIP_BLOCK, clip_block_path(parts), "CLIP block 0", "", "vision")
        tokens = f"{layout.global_grid**2 + 1} tokens"
    else:
        name, tokens = f"{block.alias}.global", f"{layout.global_side}x{layout.global_side}"
    return [
        ExportTarget(
            name=name,
            path=block.path,
            vocabulary=parts,
            stage="prefill",
            call=1 if layout.num_crops else 0,
            view="global",
            expected_batch=1,
            description=f"{block.label} on the global view ({tokens})",
        ),
        ExportTarget(
            name="dense_layer",
            path=parts.decoder_layer_path(0),
            stage="prefill",
            call=0,
            layer=0,
            vocabulary=parts,
            description=f"dense decoder layer 0 over the prompt ({seq_len} tokens)",
        ),
    ]

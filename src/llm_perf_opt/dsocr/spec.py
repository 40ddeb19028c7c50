"""`ModelSpec`: every dimension of DeepSeek-OCR the pipeline needs, in one frozen dataclass.

Built from a vendor `config.json` (`ModelSpec.from_config_json`) or from the built-in values measured
on the vendor code (`ModelSpec.deepseek_ocr()`). The vendor's
`config.json` holds the decoder and projector; SAM and CLIP dimensions are hard-coded in the vendor's
`deepencoder.py`, so they come from the built-in values unless the JSON's `vision_config` names them.
`ModelSpec.tiny()` is the narrow, few-layer copy with the same structure, used by `twin_tiny` and tests.
SAM, the projector and the decoder are the parts both generations share (`deepseek_ocr_shared.spec`); CLIP-L
is v1's own (`ClipSpec`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Mapping

from llm_perf_opt.deepseek_ocr_shared.spec import (
    DecoderSpec,
    ProjectorSpec,
    SamSpec,
    SpecReading,
    language_checks,
    language_from_config,
    name_from_config,
    projector_from_config,
    raise_failed,
    sam_from_widths,
    vision_widths,
)


@dataclass(frozen=True)
class ClipSpec:
    """CLIP-L/14 (`VitModel`), fed with SAM features as its patch embeddings."""

    width: int = 1024
    layers: int = 24
    heads: int = 16
    ffn_dim: int = 4096
    image_size: int = 224  # pretraining size: 1 + (224/14)² = 257 positions
    patch_size: int = 14
    layer_norm_eps: float = 1e-5

    @property
    def head_dim(self) -> int:
        return self.width // self.heads

    @property
    def num_positions(self) -> int:
        return (self.image_size // self.patch_size) ** 2 + 1


@dataclass(frozen=True)
class ModelSpec(SpecReading):
    name: str = "deepseek-ocr"
    sam: SamSpec = field(default_factory=SamSpec)
    clip: ClipSpec = field(default_factory=ClipSpec)
    projector: ProjectorSpec = field(default_factory=ProjectorSpec)
    decoder: DecoderSpec = field(default_factory=DecoderSpec)
    image_token_id: int = 128815
    bos_token_id: int = 0
    eos_token_id: int = 1

    # model.spec -> the classmethod that builds it
    builders: ClassVar[Mapping[str, str]] = {"deepseek_ocr": "deepseek_ocr", "tiny": "tiny"}

    def __post_init__(self) -> None:
        s, c, p = self.sam, self.clip, self.projector
        raise_failed(
            [
                (s.width % s.heads == 0, "sam.width", s.width, f"a multiple of sam.heads={s.heads}"),
                (c.width % c.heads == 0, "clip.width", c.width, f"a multiple of clip.heads={c.heads}"),
                (
                    s.out_dim == c.width,
                    "sam.downsample_channels",
                    s.downsample_channels,
                    f"last entry equal to clip.width={c.width} (SAM features are CLIP's patch embeddings)",
                ),
                (
                    p.input_dim == c.width + s.out_dim,
                    "projector.input_dim",
                    p.input_dim,
                    f"clip.width + sam output = {c.width + s.out_dim}",
                ),
                *language_checks(self),
            ],
            "model spec ",
        )

    # ---------------------------------------------------------------- constructors
    @classmethod
    def deepseek_ocr(cls) -> "ModelSpec":
        """The released model: the built-in values measured on the vendor code."""
        return cls()

    @classmethod
    def tiny(cls) -> "ModelSpec":
        """Narrow, few-layer copy with every structural feature of the full model.

        Windowed and global SAM blocks, the SAM -> CLIP hand-off, a dense decoder layer followed by MoE
        layers with routed + shared experts, and the real vocabulary (so real token ids stay valid).
        """
        return cls(
            name="deepseek-ocr-tiny",
            sam=SamSpec.tiny(out_dim=64),
            clip=ClipSpec(width=64, layers=2, heads=4, ffn_dim=128),
            projector=ProjectorSpec(input_dim=128, n_embed=64),
            decoder=DecoderSpec.tiny(),
        )

    @classmethod
    def from_config_dict(cls, raw: Mapping[str, Any], source: str = "config") -> "ModelSpec":
        decoder, bos_token_id, eos_token_id = language_from_config(raw, source)
        projector = projector_from_config(
            raw, source, input_dim=ProjectorSpec.input_dim, n_embed=decoder.hidden_size, released=""
        )
        widths = vision_widths(raw, source)
        sam = sam_from_widths(SamSpec(), widths, downsample_channels=True)
        clip, clip_raw = ClipSpec(), widths.get("clip-l-14-224")
        if isinstance(clip_raw, Mapping):
            clip = replace(
                clip,
                width=clip_raw.get("width", clip.width),
                layers=clip_raw.get("layers", clip.layers),
                heads=clip_raw.get("heads", clip.heads),
                image_size=clip_raw.get("image_size", clip.image_size),
                patch_size=clip_raw.get("patch_size", clip.patch_size),
            )
        return cls(
            name=name_from_config(raw, "deepseek-ocr"),
            sam=sam,
            clip=clip,
            projector=projector,
            decoder=decoder,
            bos_token_id=bos_token_id,
            eos_token_id=eos_token_id,
        )

"""The toy family's spec, workload, layout and parts: one square view of `side` pixels cut into `patch`-pixel
patches, each patch one image token placed after BOS, then the prompt's characters as text tokens."""

from __future__ import annotations

from dataclasses import dataclass

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.family import Part, PartVocabulary

FAMILY = "toy"


@dataclass(frozen=True)
class ToySpec:
    name: str = "toy"
    patch: int = 8  # the vision conv's kernel and stride
    channels: int = 3
    vision_dim: int = 16  # the patch conv's output channels
    hidden: int = 32  # the decoder's width
    heads: int = 2
    layers: int = 2
    intermediate: int = 64
    vocab: int = 96
    max_positions: int = 256
    bos_token_id: int = 1
    image_token_id: int = 2

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads


SPECS = {"toy": ToySpec(), "toy_wide": ToySpec(name="toy_wide", hidden=48, heads=3, intermediate=96)}


def spec_named(name: str) -> ToySpec:
    if name not in SPECS:
        raise ConfigError.field("model.spec", name, f"must be one of {', '.join(SPECS)} (model.family={FAMILY})")
    return SPECS[name]


@dataclass(frozen=True)
class ToyWorkload:
    """The toy's only knob: the side of its one square view (the page is resized to it)."""

    name: str = "toy"
    side: int = 32


@dataclass(frozen=True)
class ToyLayout:
    page_width: int
    page_height: int
    side: int
    patch: int = 8

    @property
    def num_views(self) -> int:
        return 1

    @property
    def grid(self) -> int:
        return self.side // self.patch

    @property
    def image_tokens(self) -> int:
        return self.grid * self.grid

    def as_dict(self) -> dict:
        return {
            "page_width": self.page_width,
            "page_height": self.page_height,
            "num_views": self.num_views,
            "image_tokens": self.image_tokens,
            "side": self.side,
            "patch": self.patch,
        }


def compute_layout(workload: ToyWorkload, width: int, height: int) -> ToyLayout:
    return ToyLayout(width, height, workload.side)


VOCABULARY = PartVocabulary(
    family=FAMILY,
    parts=(
        Part("embed", "embed", "token embedding", "#9d755d", "language"),
        Part("vision", "vision", "toy vision encoder", "#4c78a8", "vision"),
        Part("decoder", "layers", "decoder layers", "#54a24b", "language"),
        Part("norm", "norm", "final norm", "#b279a2", "language"),
        Part("lm_head", "lm_head", "LM head", "#e45756", "language"),
    ),
    reported=("vision", "decoder", "lm_head"),
    decoder_stack="layers",
)

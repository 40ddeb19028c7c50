"""The view layout of a page: crop grid, tensor sizes and image-token counts, as the vendor's `infer()` makes them.

Pure Python and no torch, because the analytic model evaluates it for thousands of page sizes.
Reproduces `infer()` + `dynamic_preprocess` including their quirks:

* crop mode tiles the page only when a side exceeds 640 pixels (the vendor tests `<= 640` literally);
* the grid search always uses min 2, max 9 tiles and, in the Hugging Face `infer()`, a 640-pixel tile
  (it calls `dynamic_preprocess` with its defaults); candidates are sorted by tile count, a strictly
  closer aspect ratio wins, and on an exact tie the later grid wins only if the page area exceeds
  half the grid's area;
* no-crop modes of side <= 640 squash the page to a square; larger ones pad it (keeping the aspect);
* crop mode pads the page into the `base_size` global view.

Gundam-M (base 1280, image 1024) exists only in the vendor's vLLM pipeline, which tiles at
`image_size`; with the HF `infer()` it would reserve 16×16 tokens per 640-pixel tile and fail in
`masked_scatter_`. `VisionWorkload.tile_size` makes that choice explicit (default 640, as in HF).

The rules both generations share (`ViewLayout`, the grid search, `layout_of`) are `deepseek_ocr_shared.layout`;
here are v1's knobs (`VisionWorkload`) and constants (640-pixel threshold and squash, the newline column).
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_perf_opt.deepseek_ocr_shared.layout import ViewLayout, layout_of, queries_per_side
from llm_perf_opt.errors import ConfigError

CROP_THRESHOLD = 640  # infer(): `if image.size[0] <= 640 and image.size[1] <= 640: crop_ratio = [1, 1]`
SQUASH_MAX = 640  # infer() without crop mode: `if image_size <= 640: image = image.resize((S, S))`


@dataclass(frozen=True)
class VisionWorkload:
    """The vendor's knobs for one image: `infer(base_size=, image_size=, crop_mode=)` and its constants."""

    base_size: int = 1024
    image_size: int = 640
    crop_mode: bool = True
    patch_size: int = 16
    downsample_ratio: int = 4
    min_num: int = 2
    max_num: int = 9
    tile_size: int = 640

    def __post_init__(self) -> None:
        for name in ("base_size", "image_size", "tile_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0 or value % 64:
                raise ConfigError.field(
                    f"workload.{name}",
                    value,
                    "must be a positive multiple of 64 (SAM patches of 16 reduced 4x by net_2/net_3)",
                )
        for name in ("patch_size", "downsample_ratio", "min_num", "max_num"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError.field(f"workload.{name}", value, "must be a positive integer")
        if self.max_num < self.min_num:
            raise ConfigError.field("workload.max_num", self.max_num, f"must be >= workload.min_num={self.min_num}")
        if not isinstance(self.crop_mode, bool):
            raise ConfigError.field("workload.crop_mode", self.crop_mode, "must be true or false")
        if self.crop_mode and self.tile_size != self.image_size:
            raise ConfigError.field(
                "workload.image_size",
                self.image_size,
                f"in crop mode it must equal workload.tile_size={self.tile_size} (the crop side): infer() "
                f"reserves ceil(image_size/64)² tokens per crop, so any other value fails in masked_scatter_",
            )

    @property
    def mode_tokens_side(self) -> int:
        """q for the crops (crop mode) or the single view (no crop mode): ceil(size / patch / downsample)."""
        return queries_per_side(self.image_size, self.patch_size, self.downsample_ratio)


def compute_view_layout(workload: VisionWorkload, width: int, height: int) -> ViewLayout:
    """The crop grid, view sizes and token counts `infer()` produces for a `width`×`height` page."""
    return layout_of(workload, width, height, crop_threshold=CROP_THRESHOLD, squash_max=SQUASH_MAX, newline_column=True)

"""The view layout of a page under DeepSeek-OCR 2's `infer()`: crop grid, tensor sizes and image-token counts.

Pure Python, no torch. Read in the vendor's `modeling_deepseekocr2.py` (`infer`, `dynamic_preprocess`):

* crop mode: no crops when both sides are <= 768 (a literal in `infer()`), else `dynamic_preprocess(image)`
  with its defaults: 2 to 6 tiles of 768 pixels, no thumbnail. The grid search is v1's (the same
  candidate set, sorted by tile count, a strictly closer aspect ratio wins, an exact tie goes to the
  later grid only when the page area exceeds half the grid's area), so the shared `closest_grid` is reused;
* the global view is the page padded (grey, aspect kept) to `base_size`: (base/64)² tokens (256 at
  1024), then 1 view separator, then (12·w)·(12·h) = 144 per crop when the grid is not 1×1; in the
  embeddings the order is crops, global, separator. No newline column (v2 has no `image_newline`);
* no-crop mode: the page resized to a square when image_size <= 768, else padded, to image_size:
  (image_size/64)² + 1 tokens. The encoder has query banks only for 144 and 256 SAM tokens, so the
  only views are 768 and 1024 pixels.

`ViewLayout` is the shared dataclass (`deepseek_ocr_shared.layout`, v1's fields), filled with v2's rules:
`global_tokens` = grid² + 1 (no newline column), `local_tokens` = 144 per crop.
"""

from __future__ import annotations

from dataclasses import dataclass

from llm_perf_opt.deepseek_ocr_shared.layout import ViewLayout, layout_of, queries_per_side
from llm_perf_opt.dsocr2.spec import FAMILY
from llm_perf_opt.errors import ConfigError

CROP_THRESHOLD = 768  # infer(): `if image.size[0] <= 768 and image.size[1] <= 768: crop_ratio = [1, 1]`
SQUASH_MAX = 768  # infer() without crop mode: `if image_size <= 768: image = image.resize((S, S))`
TILE = 768  # dynamic_preprocess(image): its default image_size
MIN_CROPS, MAX_CROPS = 2, 6  # dynamic_preprocess(image): its defaults min_num, max_num
VIEW_SIDES = (768, 1024)  # the views that have a query bank (144 and 256 SAM tokens)
V1_ONLY = "a DeepSeek-OCR v1 knob"


@dataclass(frozen=True)
class VisionWorkload:
    """DeepSeek-OCR 2's knobs for one image: `infer(base_size=, image_size=, crop_mode=)` and its constants.

    Defaults are the official usage (base 1024, image 768, crop mode). `min_num` / `max_num` are the
    crop-count bounds of `dynamic_preprocess` (the vendor uses its defaults 2 and 6); narrower bounds
    inside 2..6 are accepted as a what-if, anything outside is refused.
    """

    base_size: int = 1024
    image_size: int = 768
    crop_mode: bool = True
    patch_size: int = 16
    downsample_ratio: int = 4
    min_num: int = MIN_CROPS
    max_num: int = MAX_CROPS
    tile_size: int = TILE

    def __post_init__(self) -> None:
        if not isinstance(self.crop_mode, bool):
            raise ConfigError.field("workload.crop_mode", self.crop_mode, "must be true or false")
        for name in ("patch_size", "downsample_ratio", "min_num", "max_num"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigError.field(f"workload.{name}", value, f"must be a positive integer ({FAMILY})")
        if (self.patch_size, self.downsample_ratio) != (16, 4):
            raise ConfigError.field(
                "workload.patch_size",
                (self.patch_size, self.downsample_ratio),
                f"{FAMILY} uses SAM patches of 16 reduced 4x (16, 4)",
            )
        for name in ("min_num", "max_num"):
            value = getattr(self, name)
            if not MIN_CROPS <= value <= MAX_CROPS:
                raise ConfigError.field(
                    f"workload.{name}",
                    value,
                    f"{FAMILY} crops a page into {MIN_CROPS} to {MAX_CROPS} tiles "
                    "(dynamic_preprocess); a crop count outside that range has no meaning",
                )
        if self.max_num < self.min_num:
            raise ConfigError.field("workload.max_num", self.max_num, f"must be >= workload.min_num={self.min_num}")
        if self.tile_size != TILE:
            raise ConfigError.field(
                "workload.tile_size",
                self.tile_size,
                f"{FAMILY} tiles are {TILE} pixels (dynamic_preprocess's default); "
                f"tile_size {self.tile_size} is {V1_ONLY}",
            )
        for name in ("base_size", "image_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value not in VIEW_SIDES:
                raise ConfigError.field(
                    f"workload.{name}",
                    value,
                    f"{FAMILY} views are {VIEW_SIDES[0]} or {VIEW_SIDES[1]} pixels (its "
                    f"encoder has query banks for 144 and 256 tokens only); other sizes "
                    f"such as 640, 512 or 1280 are {V1_ONLY} (its modes tiny/small/large/gundam)",
                )
        if self.crop_mode and self.image_size != TILE:
            raise ConfigError.field(
                "workload.image_size",
                self.image_size,
                f"in crop mode it must be {TILE} for {FAMILY}: infer() reserves "
                f"(image_size/64)² tokens per {TILE}-pixel crop, any other value fails "
                "in masked_scatter_",
            )

    @property
    def mode_tokens_side(self) -> int:
        """q for the crops (crop mode) or the single view (no crop mode): ceil(size / patch / downsample)."""
        return queries_per_side(self.image_size, self.patch_size, self.downsample_ratio)


def compute_view_layout(workload: VisionWorkload, width: int, height: int) -> ViewLayout:
    """The crop grid, view sizes and token counts DeepSeek-OCR 2's `infer()` produces for a page."""
    if not isinstance(workload, VisionWorkload):
        raise ConfigError.field(
            "workload",
            type(workload).__name__,
            f"must be a {FAMILY} VisionWorkload (llm_perf_opt.dsocr2.layout), not v1's",
        )
    return layout_of(
        workload, width, height, crop_threshold=CROP_THRESHOLD, squash_max=SQUASH_MAX, newline_column=False
    )


def workload_from_config(cfg) -> VisionWorkload:
    """A `VisionWorkload` from a workload config (any object with base_size, image_size, crop_mode and an
    optional tile_size); a v1-only value fails with one ConfigError naming the field and the family."""
    bounds = {k: getattr(cfg, k) for k in ("min_num", "max_num") if getattr(cfg, k, None) is not None}
    return VisionWorkload(
        base_size=cfg.base_size,
        image_size=cfg.image_size,
        crop_mode=cfg.crop_mode,
        tile_size=getattr(cfg, "tile_size", TILE),
        **bounds,
    )

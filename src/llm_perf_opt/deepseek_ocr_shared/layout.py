"""The view layout rules both DeepSeek-OCR generations' `infer()` follow: `ViewLayout` (crop grid, tensor sizes
and image-token counts of one page), the vendor's grid search (`candidate_grids`, `closest_grid`, with its
tie-breaking quirks), `contain_size` (PIL's `ImageOps.contain`) and `layout_of`, which each family calls with its
own constants (crop threshold, squash limit, newline column) and knobs. Pure Python and no torch, because the
analytic model evaluates it for thousands of page sizes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from llm_perf_opt.errors import ConfigError


@dataclass(frozen=True, slots=True)
class ViewLayout:
    """What `infer()` builds for one page under one workload (sizes in pixels, counts in tokens)."""

    page_width: int
    page_height: int
    base_size: int
    image_size: int
    crop_mode: bool
    w_crop: int  # images_spatial_crop[0]: tiles across
    h_crop: int  # images_spatial_crop[1]: tiles down
    num_crops: int  # crop tensors fed to the vision stack (0 when the grid is 1x1 or no crop mode)
    num_views: int  # images the vision stack sees: 1 global view + num_crops
    vision_passes: int  # calls of SAM, CLIP and the projector: 2 with crops (crop batch, global), else 1
    global_side: int  # the square global view's side (base_size in crop mode, image_size otherwise)
    global_content: tuple[int, int]  # (w, h) of the page inside the global view (== side² when squashed)
    global_squashed: bool  # resized to a square without keeping the aspect (no-crop modes <= 640)
    crop_side: int  # each crop's side (the tile); the zero crop tensor has side base_size when no crops
    crops_resized: tuple[int, int]  # the page resized to (tile * w_crop, tile * h_crop) before cutting
    global_grid: int  # SAM output grid side for the global view: ceil(global_side / 64)
    crop_grid: int  # SAM output grid side for one crop (0 when no crops)
    global_tokens: int  # grid·(grid + 1) newline column, + 1 view separator
    local_tokens: int  # (crop_grid·w_crop + 1)·(crop_grid·h_crop), 0 without crops
    image_tokens: int  # global_tokens + local_tokens: image-token ids in the sequence

    @property
    def crop_tensor_shape(self) -> tuple[int, int, int, int]:
        """Shape of `images[0][0]` (float zeros of side base_size when there are no crops)."""
        if self.num_crops:
            return (self.num_crops, 3, self.crop_side, self.crop_side)
        return (1, 3, self.base_size, self.base_size)

    @property
    def global_tensor_shape(self) -> tuple[int, int, int, int]:
        return (1, 3, self.global_side, self.global_side)

    @property
    def pixel_values(self) -> int:
        """Elements of the forward's image tensors (`images[0]`: crops, or the zeros placeholder, + global view)."""
        return math.prod(self.crop_tensor_shape) + math.prod(self.global_tensor_shape)

    def as_dict(self) -> dict:
        return {
            "page_width": self.page_width,
            "page_height": self.page_height,
            "base_size": self.base_size,
            "image_size": self.image_size,
            "crop_mode": self.crop_mode,
            "w_crop": self.w_crop,
            "h_crop": self.h_crop,
            "num_crops": self.num_crops,
            "num_views": self.num_views,
            "vision_passes": self.vision_passes,
            "global_side": self.global_side,
            "global_content": list(self.global_content),
            "global_squashed": self.global_squashed,
            "crop_side": self.crop_side,
            "crops_resized": list(self.crops_resized),
            "global_grid": self.global_grid,
            "crop_grid": self.crop_grid,
            "global_tokens": self.global_tokens,
            "local_tokens": self.local_tokens,
            "image_tokens": self.image_tokens,
            "crop_tensor_shape": list(self.crop_tensor_shape),
            "global_tensor_shape": list(self.global_tensor_shape),
        }


def queries_per_side(size: int, patch_size: int, downsample_ratio: int) -> int:
    # infer(): num_queries = math.ceil((image_size // patch_size) / downsample_ratio)
    return math.ceil((size // patch_size) / downsample_ratio)


@lru_cache(maxsize=64)
def candidate_grids(min_num: int, max_num: int) -> tuple[tuple[int, int], ...]:
    """Grids (w, h) with min_num <= w·h <= max_num, in the order the vendor's search visits them.

    The vendor builds a Python set and sorts it by tile count (a stable sort), so grids with the same
    count keep the set's iteration order; that order decides exact ties between e.g. 1x2 and 2x1, so
    it is reproduced by building the same set the same way.
    """
    grids = set(
        (i, j)
        for n in range(min_num, max_num + 1)
        for i in range(1, n + 1)
        for j in range(1, n + 1)
        if min_num <= i * j <= max_num
    )
    return tuple(sorted(grids, key=lambda g: g[0] * g[1]))


@lru_cache(maxsize=64)
def _grid_table(min_num: int, max_num: int) -> tuple[tuple[int, int, float], ...]:
    # (w, h, w / h): the same float division the vendor does per candidate, done once.
    return tuple((w, h, w / h) for w, h in candidate_grids(min_num, max_num))


def closest_grid(width: int, height: int, tile: int, min_num: int = 2, max_num: int = 9) -> tuple[int, int]:
    """The vendor's `find_closest_aspect_ratio` over `candidate_grids`: returns (w_crop, h_crop)."""
    aspect = width / height
    area = width * height
    best_diff = math.inf
    best_w, best_h = 1, 1
    half_tile_area = 0.5 * tile * tile
    for w, h, ratio in _grid_table(min_num, max_num):
        diff = abs(aspect - ratio)
        if diff < best_diff:
            best_diff, best_w, best_h = diff, w, h
        elif diff == best_diff and area > half_tile_area * w * h:
            best_w, best_h = w, h
    return best_w, best_h


def contain_size(width: int, height: int, side: int) -> tuple[int, int]:
    """Size of the page fitted inside a side×side square keeping its aspect (PIL `ImageOps.contain`)."""
    im_ratio = width / height
    if im_ratio == 1.0:
        return side, side
    if im_ratio > 1.0:
        return side, round(height / width * side)
    return round(width / height * side), side


def layout_of(w, width: int, height: int, *, crop_threshold: int, squash_max: int, newline_column: bool) -> ViewLayout:
    """The layout `infer()` builds, under one family's constants (v1 and DeepSeek-OCR 2 share the rules).

    `w` is a family's VisionWorkload (base_size, image_size, crop_mode, patch_size, downsample_ratio,
    min_num, max_num, tile_size). Crop mode tiles the page only when a side exceeds `crop_threshold`;
    no-crop views of side <= `squash_max` squash the page to a square. `newline_column`: v1 appends one
    newline token per row of the global and the local grid; DeepSeek-OCR 2 has none.
    """
    if isinstance(width, bool) or not isinstance(width, int) or width <= 0:
        raise ConfigError.field("workload.page.width", width, "must be a positive integer (pixels)")
    if isinstance(height, bool) or not isinstance(height, int) or height <= 0:
        raise ConfigError.field("workload.page.height", height, "must be a positive integer (pixels)")
    nl = 1 if newline_column else 0
    if w.crop_mode:
        if width <= crop_threshold and height <= crop_threshold:
            w_crop = h_crop = 1
        else:
            w_crop, h_crop = closest_grid(width, height, w.tile_size, w.min_num, w.max_num)
        has_crops = w_crop > 1 or h_crop > 1
        global_side = w.base_size
        squashed = False
        content = contain_size(width, height, global_side)
        global_grid = queries_per_side(w.base_size, w.patch_size, w.downsample_ratio)
        crop_grid = queries_per_side(w.image_size, w.patch_size, w.downsample_ratio) if has_crops else 0
        num_crops = w_crop * h_crop if has_crops else 0
        local_tokens = (crop_grid * w_crop + nl) * (crop_grid * h_crop) if has_crops else 0
        crops_resized = (w.tile_size * w_crop, w.tile_size * h_crop) if has_crops else (0, 0)
        crop_side = w.tile_size if has_crops else 0
    else:
        w_crop = h_crop = 1
        has_crops = False
        global_side = w.image_size
        squashed = w.image_size <= squash_max
        content = (global_side, global_side) if squashed else contain_size(width, height, global_side)
        global_grid = queries_per_side(w.image_size, w.patch_size, w.downsample_ratio)
        crop_grid = num_crops = local_tokens = crop_side = 0
        crops_resized = (0, 0)
    global_tokens = global_grid * (global_grid + nl) + 1  # + nl: the newline column; + 1 view separator
    return ViewLayout(
        page_width=width,
        page_height=height,
        base_size=w.base_size,
        image_size=w.image_size,
        crop_mode=w.crop_mode,
        w_crop=w_crop,
        h_crop=h_crop,
        num_crops=num_crops,
        num_views=1 + num_crops,
        vision_passes=2 if has_crops else 1,
        global_side=global_side,
        global_content=content,
        global_squashed=squashed,
        crop_side=crop_side,
        crops_resized=crops_resized,
        global_grid=global_grid,
        crop_grid=crop_grid,
        global_tokens=global_tokens,
        local_tokens=local_tokens,
        image_tokens=global_tokens + local_tokens,
    )


def console_summary(summary: Any) -> str:
    """The console's lines about a run of a DeepSeek-OCR family (v1 and OCR-2 tile pages alike): the mode's
    knobs, the crop grid, the global and local image tokens (`ModelFamily.console_summary`)."""
    lay, tok, wl = summary.layout.raw, summary.tokens, summary.workload
    return (
        f"{summary.model.name} | mode {wl.mode} (base {wl.knob('base_size')}, image {wl.knob('image_size')}, "
        f"crop {wl.knob('crop_mode')}) | page {lay['page_width']}x{lay['page_height']}\n"
        f"  grid {lay['w_crop']}x{lay['h_crop']} ({lay['num_crops']} crops, {lay['num_views']} views) | "
        f"image tokens {tok.image} (global {lay['global_tokens']}, local {lay['local_tokens']}) | "
        f"sequence {tok.sequence}"
    )

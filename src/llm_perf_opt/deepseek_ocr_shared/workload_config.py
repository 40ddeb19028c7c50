"""The DeepSeek-OCR workload schema: the generic `WorkloadConfig` plus the knobs of the vendor's
`infer(base_size, image_size, crop_mode)` and of its `dynamic_preprocess` (the crop tile and crop-count bounds),
which v1 and OCR-2 share by name.

Both families declare it (`ModelFamily.workload_schema`); the family registry stores it in Hydra's ConfigStore as
`workload_schema/<family>` (`llm_perf_opt.families.register_configs`), and each of their workload files names it
first in its defaults list (`- /workload_schema/dsocr@_here_`), so Hydra types the `workload` node as this class:
`workload.base_size=abc` and an unknown key are refused while composing. The plain rules live here (positive
sizes, a boolean crop mode); the model's rules on top (multiples of 64, the crop tiling, each family's crop-count
bounds) stay with each family's `workload_for`. Torch-free, like every config schema.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llm_perf_opt.config.fields import _positive_int
from llm_perf_opt.config.schemas import WorkloadConfig
from llm_perf_opt.errors import ConfigError


@dataclass
class DeepSeekWorkloadConfig(WorkloadConfig):
    """One vendor mode (`infer(base_size, image_size, crop_mode)`) applied to one page and prompt."""

    base_size: int = 1024
    image_size: int = 640
    crop_mode: bool = True
    tile_size: int = 640  # dynamic_preprocess tile: 640 in HF infer(); image_size in the vLLM pipeline
    min_num: Optional[int] = None  # dynamic_preprocess's crop-count bounds; None: the family's (v1 2-9, v2 2-6)
    max_num: Optional[int] = None

    def __post_init__(self) -> None:
        for name in ("base_size", "image_size", "tile_size"):
            _positive_int(f"workload.{name}", getattr(self, name), "(pixels)")
        if not isinstance(self.crop_mode, bool):
            raise ConfigError.field("workload.crop_mode", self.crop_mode, "must be true or false")
        super().__post_init__()  # the batch, its pages and the prompt

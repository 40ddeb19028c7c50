"""The `render` section: how the grouped graph is drawn (depth, formats, heat map)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from llm_perf_opt.config.fields import _one_of
from llm_perf_opt.errors import ConfigError

RENDER_COLOR_BY = ("flops", "time", "bytes", "params", "delta_time", "none")  # delta_time: ./dev compare


@dataclass
class RenderConfig:
    max_depth: Optional[int] = None  # collapse the grouped graph below this module depth
    formats: list[str] = field(default_factory=lambda: ["dot", "svg", "mmd"])
    color_by: str = "flops"  # heat map of the grouped graph: flops, time, bytes, params or none (node kinds)

    def __post_init__(self) -> None:
        _one_of("render.color_by", self.color_by, RENDER_COLOR_BY)
        if self.max_depth is not None and self.max_depth < 1:
            raise ConfigError.field("render.max_depth", self.max_depth, "must be >= 1 or null")
        for fmt in self.formats:
            _one_of("render.formats[]", fmt, ("dot", "svg", "mmd", "png"))

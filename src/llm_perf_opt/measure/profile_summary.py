"""summary.json's `profile` section: the profile stage's headline figures (`measure.module_times`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional


@dataclass(frozen=True)
class ProfileFigures:
    """`measure.module_times.ModuleTimes.summary()`: the profile's headline figures (medians, seconds);
    profile.json has every module call."""

    repeats: int
    plain_s: float  # the plain forward's wall time
    profiled_s: float  # the profiled forward's wall time
    overhead_ratio: Optional[float]  # profiled / plain
    coverage: Optional[float]  # the parts' inclusive times / the profiled forward's wall time
    module_calls: int
    raw: dict = field(default_factory=dict)

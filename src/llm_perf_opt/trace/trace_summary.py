"""summary.json's sections the trace stages write themselves: `forward`, `decode`, `roofline`, `graph`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Optional


@dataclass(frozen=True)
class ForwardFigures:
    """One plain forward: wall time (perf_counter around it, CUDA synchronised), peak memory, logits."""

    seconds: float
    logits_shape: list
    logits_finite: bool
    peak_rss_bytes: int
    peak_cuda_bytes: Optional[int]
    extra: dict = field(default_factory=dict)
    rss_before_bytes: Optional[int] = None  # resident memory when the forward started (its inputs built)


@dataclass(frozen=True)
class DecodeSummary:
    """The decode steps of a trace job (`trace.decode`): `steps` (N), per step in `rows`: step,
    past and context length, new tokens, FLOPs analytic / measured / ok, KV-cache bytes analytic /
    measured / ok, and with the profile stage the measured and predicted time; `raw` is all of it."""

    steps: int
    rows: list
    raw: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RooflineFigures:
    """The trace job's roofline stage (`trace.roofline`): the roofs it predicted on (each with
    its stage figures and whether it is the device the times were measured on) and one row per stage and
    part with the measured time and, per roof, the predicted time and efficiency = predicted / measured."""

    primary: str  # the roof hardware= chose (its figures are roofline.json's)
    roofs: dict  # roof name -> {roof, same_device, figures, note, ...}
    rows: list  # measure.efficiency.ComparisonRow.to_dict()
    raw: dict = field(default_factory=dict)

    def figures(self, roof: Optional[str] = None) -> dict:
        """The stage figures (vision_s, ttft_s, decode_s_per_token, ...) on `roof` (default: the primary)."""
        entry = self.roofs.get(roof or self.primary)
        return dict(entry.get("figures") or {}) if isinstance(entry, Mapping) else {}

    def row(self, name: str) -> Optional[dict]:
        return next((r for r in self.rows if isinstance(r, Mapping) and r.get("name") == name), None)


@dataclass(frozen=True)
class GraphFigures:
    """`trace.graph.costs_on_graph()`: the metrics on the grouped graph's nodes, the ones absent
    (with the reason), how many nodes carry each, the files written."""

    metrics: list
    absent: dict
    nodes: int
    raw: dict = field(default_factory=dict)

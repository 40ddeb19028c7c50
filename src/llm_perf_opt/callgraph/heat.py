"""The heat map of a grouped graph (`render.color_by=flops|time|bytes|params`): which metric colours the
nodes, each node's figure and share as a label line (`2.93 TFLOP · 64%`), its colour and the legend.

Colours bin a node's share of the run's total on a log-like scale (≥ 50 %, 20-50 %, ... < 0.1 %), the
same bins in DOT, SVG, Mermaid and the run page, so a node's colour reads the same everywhere. A node
without a figure for the metric is grey and says so ("no measured FLOPs"); a node whose figure covers
only some of its instances is marked with how many ("3/8 instances"). `color_by=none` keeps the node
kinds' colours (stack, parfor) and adds no line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from llm_perf_opt import units
from llm_perf_opt.callgraph.grouped import GroupedGraph, GroupNode
from llm_perf_opt.callgraph.node_costs import COLOR_BY, color_metric, node_figure

COLOR_CHOICES = tuple(COLOR_BY) + ("none",)
# (lowest share, fill, text colour, legend text), darkest first (ColorBrewer YlOrRd, 8 classes)
BINS: tuple[tuple[float, str, str, str], ...] = (
    (0.5, "#b10026", "#ffffff", "≥ 50%"),
    (0.2, "#e31a1c", "#ffffff", "20–50%"),
    (0.1, "#fc4e2a", "#ffffff", "10–20%"),
    (0.05, "#fd8d3c", "#111827", "5–10%"),
    (0.02, "#feb24c", "#111827", "2–5%"),
    (0.01, "#fed976", "#111827", "1–2%"),
    (0.001, "#ffeda0", "#111827", "0.1–1%"),
    (0.0, "#ffffcc", "#111827", "< 0.1%"),
)
NO_FIGURE = ("#e5e7eb", "#374151", "no figure")
# color_by=delta_time (a comparison's graph): the share is signed (the change over run A's total); slower
# nodes take the bins above, faster ones these (ColorBrewer Blues), by the size of the change
FASTER_FILLS = ("#08306b", "#08519c", "#2171b5", "#4292c6", "#6baed6", "#9ecae1", "#c6dbef", "#eff3ff")
FASTER_BINS: tuple[tuple[float, str, str, str], ...] = tuple(
    (lowest, fill, text, f"faster by {legend}") for (lowest, _, text, legend), fill in zip(BINS, FASTER_FILLS)
)
SIGNED = ("delta_time",)


def signed_text(value: float, kind: str) -> str:
    """A change with its sign: `+12.3 ms`, `−4 ms`."""
    return ("+" if value > 0 else "−" if value < 0 else "±") + format_value(abs(value), kind)


def format_value(value: float | None, kind: str) -> str:
    """A figure in its unit, through `llm_perf_opt.units`."""
    if kind == "flops":
        return units.flops(value)
    if kind == "bytes":
        return units.nbytes(value)
    if kind == "time":
        return units.seconds(value)
    if kind == "count":
        return f"{units.si(value)} params" if value is not None else "—"
    return units.si(value)


def bin_of(share: float | None) -> int | None:
    """Index into BINS of a share (None: no figure)."""
    if share is None:
        return None
    for i, (low, *_rest) in enumerate(BINS):
        if share >= low:
            return i
    return len(BINS) - 1


@dataclass
class Heat:
    """The heat map of one graph for one `color_by`."""

    color_by: str
    metric: Mapping[str, Any] | None  # the metric it resolved to (None: none of its metrics is on the graph)
    grouped: GroupedGraph

    @classmethod
    def of(cls, grouped: GroupedGraph, color_by: str) -> "Heat":
        if color_by not in COLOR_CHOICES:
            from llm_perf_opt.errors import ArtifactError

            raise ArtifactError(f"color_by={color_by!r}: choose one of {', '.join(COLOR_CHOICES)}")
        metric = None if color_by == "none" else color_metric(grouped, color_by)
        return cls(color_by, metric, grouped)

    @property
    def active(self) -> bool:
        """Whether the nodes are coloured: a `color_by` other than none whose metric the graph carries."""
        return self.color_by != "none" and self.metric is not None

    def note(self) -> str | None:
        """Why a `color_by` colours nothing (the graph carries none of its metrics), else None."""
        if self.color_by == "none" or self.metric is not None:
            return None
        if not self.grouped.metrics and not self.grouped.absent_metrics:
            return None  # no costs attached at all (a bare regrouping): nothing to colour, nothing to explain
        reasons = [
            f"{m}: {self.grouped.absent_metrics[m]}"
            for m in COLOR_BY[self.color_by]
            if m in self.grouped.absent_metrics
        ]
        return (
            f"color_by={self.color_by}: no {' or '.join(COLOR_BY[self.color_by])} on this graph, nodes keep "
            f"their kind colours" + (f" ({'; '.join(reasons)})" if reasons else "")
        )

    def figure(self, node: GroupNode) -> dict[str, Any] | None:
        return node_figure(self.grouped, node, self.metric)

    def share(self, node: GroupNode) -> float | None:
        fig = self.figure(node)
        if not fig or fig.get("total") is None:
            return None
        return fig.get("share")

    def colours(self, node: GroupNode) -> tuple[str, str]:
        """(fill, text colour) of a node."""
        share = self.share(node)
        if self.color_by in SIGNED and share is not None:
            bins = FASTER_BINS if share < 0 else BINS
            b = bin_of(abs(share))
            return bins[b][1], bins[b][2]
        b = bin_of(share)
        if b is None:
            return NO_FIGURE[0], NO_FIGURE[1]
        return BINS[b][1], BINS[b][2]

    def bin_index(self, node: GroupNode) -> int | None:
        return bin_of(self.share(node))

    def line(self, node: GroupNode) -> str | None:
        """The label line: `2.93 TFLOP · 64%`, with the instances covered when not all are."""
        if not self.active:
            return None
        fig = self.figure(node)
        if not fig or fig.get("total") is None:
            return f"no {self.metric['label']}"
        if self.color_by in SIGNED:
            text = signed_text(fig["total"], self.metric["kind"])
            if fig.get("share") is not None:
                text += f" · {'+' if fig['share'] >= 0 else '−'}{units.percent(abs(fig['share']))}"
            return text
        text = format_value(fig["total"], self.metric["kind"])
        if fig.get("share") is not None:
            text += f" · {units.percent(fig['share'])}"
        if not fig.get("complete", True):
            text += f" ({fig['with_figure']}/{fig['instances']} instances)"
        return text

    def variant_line(self, node: GroupNode, index: int) -> str:
        v = node.variants[index]
        head = f"◦ {v.label} ×{len(v.members)}"
        if not self.active:
            return head
        if self.metric["name"] == "params":
            return f"{head}: {format_value(v.params, 'count')}"
        fig = v.costs.get(self.metric["name"])
        if not fig or fig.get("total") is None:
            return head
        text = f"{head}: {format_value(fig['total'], self.metric['kind'])}"
        if fig.get("share") is not None:
            text += f" · {units.percent(fig['share'])}"
        return text

    def title(self) -> str:
        if self.metric is None:
            return "colour: node kind"
        if self.color_by in SIGNED:
            return f"colour: {self.metric['label']}, change over {self.metric.get('base_label', 'run A')}'s total"
        total = self.metric.get("total")
        of = f" of {format_value(total, self.metric['kind'])}" if total is not None else ""
        return f"colour: {self.metric['label']}, share{of}"

    def legend(self) -> list[tuple[str, str, str]]:
        """(fill, text colour, text) rows, the title's meaning first."""
        if self.color_by in SIGNED:
            return (
                [(fill, text, "slower by " + label) for _, fill, text, label in BINS]
                + [(fill, text, label) for _, fill, text, label in reversed(FASTER_BINS)]
                + [NO_FIGURE]
            )
        return [(fill, text, label) for _, fill, text, label in BINS] + [NO_FIGURE]

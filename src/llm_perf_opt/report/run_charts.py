"""The run page's two charts, from what the run's artifacts say (nothing recomputed):

- `time_chart_svg`: per stage, part and decode step, the measured time and the predicted time at each time
  level present, as bars on one logarithmic time axis, with the bound and the headroom to the roofline
  (measured / ideal) beside each row. Inline SVG; a bar whose row is one module of the grouped graph
  carries `data-node` (the node id) so a click opens that node's panel.
- `icicle_cells`: an icicle of measured time (`time_measured`, inclusive) over the grouped call tree: each
  node a cell under its parent, its width its share of the root's time, children in forward order from the
  parent's left edge (what is left of a parent's width is its own time). HTML cells positioned in percent,
  so the chart is as wide as the page, never wider.
"""

from __future__ import annotations

import math
from html import escape
from typing import Any, Optional

from llm_perf_opt import units
from llm_perf_opt.callgraph.grouped import GroupedGraph
from llm_perf_opt.callgraph.heat import BINS, bin_of
from llm_perf_opt.report.time_levels import KNOWN_LEVELS, RunTimes, TimeRow

MEASURED_COLOUR = "#111827"
LEVEL_COLOURS = {"ideal": "#2563eb", "kernel": "#7c3aed", "eager": "#db2777"}
OTHER_LEVEL_COLOURS = ("#059669", "#d97706", "#0891b2")
ICICLE_ROW_PX = 22
ICICLE_MIN_LABEL = 0.06  # cells narrower than this share of the width carry no text (the tooltip has it)


def level_colour(level: str, levels: list[str]) -> str:
    if level in LEVEL_COLOURS:
        return LEVEL_COLOURS[level]
    others = [lv for lv in levels if lv not in LEVEL_COLOURS]
    return OTHER_LEVEL_COLOURS[others.index(level) % len(OTHER_LEVEL_COLOURS)] if level in others else "#6b7280"


def node_of_path(grouped: Optional[GroupedGraph]) -> dict[str, str]:
    """{module path: grouped node id} for every member of every node ('' is the root)."""
    out: dict[str, str] = {}
    if grouped is None:
        return out
    for n in grouped.nodes:
        for m in n.members:
            out.setdefault(m, n.id)
    return out


def chart_rows(times: RunTimes) -> list[TimeRow]:
    """The rows the chart draws: those with a measured or predicted time."""
    return [r for r in times.rows if r.measured_s is not None or r.levels]


def time_chart_svg(times: RunTimes, grouped: Optional[GroupedGraph] = None, width: int = 1000) -> Optional[str]:
    rows = chart_rows(times)
    if not rows:
        return None
    nodes = node_of_path(grouped)
    values = [v for r in rows for v in [r.measured_s, *(r.predicted(lv) for lv in times.levels)] if v and v > 0]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    label_w, note_w = 170, 200
    x0, x1 = label_w, width - note_w
    bar_h, gap, top = 7, 8, 30

    def x(v: float) -> float:
        return x0 + (x1 - x0) * (math.log10(max(v, lo)) - math.log10(lo)) / (math.log10(hi) - math.log10(lo))

    series = [("measured", MEASURED_COLOUR)] + [(lv, level_colour(lv, times.levels)) for lv in times.levels]
    row_h = len(series) * bar_h + gap
    height = top + len(rows) * row_h + 24
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="timechart" viewBox="0 0 {width} {height}" '
        f'width="100%" role="img" aria-label="measured and predicted time per stage and part" '
        f'font-family="system-ui,sans-serif" font-size="11">'
    ]
    # decades of the log axis
    d = lo
    while d <= hi * 1.0001:
        xv = x(d)
        out.append(f'<line x1="{xv:.1f}" y1="{top - 6}" x2="{xv:.1f}" y2="{height - 20}" stroke="#e5e7eb"/>')
        out.append(
            f'<text x="{xv:.1f}" y="{top - 10}" text-anchor="middle" fill="#6b7280">{escape(units.seconds(d))}</text>'
        )
        d *= 10
    out.append(f'<text x="{x1 + 8}" y="{top - 10}" fill="#6b7280">bound · measured / ideal</text>')
    y = top
    for r in rows:
        node = nodes.get(r.path) if r.path is not None else None
        indent = 0 if r.kind == "stage" else 12
        weight = "600" if r.kind == "stage" else "400"
        if r.kind == "stage" and y > top:
            out.append(f'<line x1="0" y1="{y - gap / 2:.1f}" x2="{width}" y2="{y - gap / 2:.1f}" stroke="#d1d5db"/>')
        out.append(
            f'<text x="{4 + indent}" y="{y + row_h / 2:.1f}" dominant-baseline="middle" font-weight="{weight}">'
            f"{escape(r.label[:28])}</text>"
        )
        for i, (name, colour) in enumerate(series):
            v = r.measured_s if name == "measured" else r.predicted(name)
            by = y + i * bar_h
            if v is None:
                continue
            what = (
                f"{r.label}: {name} {units.seconds(v)}"
                + (f" ({r.measured_by})" if name == "measured" and r.measured_by else "")
                + (f", bound {r.levels[name]['bound']}" if name in r.levels and r.levels[name].get("bound") else "")
            )
            attrs = f' data-node="{escape(node)}" class="bar clickable"' if node else ' class="bar"'
            out.append(
                f'<rect x="{x0}" y="{by}" width="{max(x(v) - x0, 1.5):.1f}" height="{bar_h - 1}" fill="{colour}"'
                f' data-series="{escape(name)}" data-row="{escape(r.key)}" data-seconds="{v:.9g}"{attrs}>'
                f"<title>{escape(what)}</title></rect>"
            )
        note = " · ".join(t for t in (r.bound() or "", _headroom_text(r)) if t)
        out.append(
            f'<text x="{x1 + 8}" y="{y + row_h / 2:.1f}" dominant-baseline="middle" fill="#374151">'
            f"{escape(note)}</text>"
        )
        y += row_h
    # legend
    lx = x0
    for name, colour in series:
        out.append(f'<rect x="{lx}" y="{height - 14}" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{lx + 14}" y="{height - 5}">{escape(name)}</text>')
        lx += 24 + 7 * len(name)
    absent = [lv for lv in KNOWN_LEVELS if lv not in times.levels]
    if absent:
        out.append(f'<text x="{lx + 10}" y="{height - 5}" fill="#9ca3af">absent: {escape(", ".join(absent))}</text>')
    out.append("</svg>")
    return "".join(out)


def _headroom_text(r: TimeRow) -> str:
    h = r.headroom()
    if h is None:
        return "not measured" if r.measured_s is None and r.kind != "step" else ""
    return f"{h:.2g}× ideal" if h < 100 else f"{h:.0f}× ideal"


def icicle_cells(grouped: Optional[GroupedGraph], metric: str = "time_measured") -> tuple[list[dict[str, Any]], int]:
    """Cells {id, label, left, width (percent), depth, fill, text, title} and the number of rows; ([], 0)
    when the graph has no figure for `metric` at its root."""
    if grouped is None:
        return [], 0
    root = grouped.node(grouped.root)
    total = (root.costs.get(metric) or {}).get("total")
    if not total:
        return [], 0
    cells: list[dict[str, Any]] = []
    depth_max = 0

    def visit(node_id: str, left: float, depth: int, right: float) -> None:
        nonlocal depth_max
        node = grouped.node(node_id)
        value = (node.costs.get(metric) or {}).get("total")
        if not value or value <= 0 or left >= right:
            return
        share = min(value / total, right - left)  # children never spill out of their parent's cell
        b = bin_of(share)
        _, fill, text, _ = BINS[b]
        depth_max = max(depth_max, depth)
        name = node.pattern if node.pattern else "(root)"
        parent = grouped.node(node.parent) if node.parent else None
        short = (
            (
                name[len(parent.pattern) + 1 :]
                if parent is not None and parent.pattern and name.startswith(parent.pattern + ".")
                else name
            )
            if depth > 0
            else "whole forward"
        )
        cells.append(
            {
                "id": node.id,
                "depth": depth,
                "left": 100 * left,
                "width": 100 * share,
                "fill": fill,
                "text": text,
                "label": f"{short} {units.seconds(value)}" if share >= ICICLE_MIN_LABEL else "",
                "title": f"{name} ({node.class_name}): {units.seconds(value)} measured, "
                f"{units.percent(share)} of the forward",
            }
        )
        x = left
        for child in node.children:
            cv = (grouped.node(child).costs.get(metric) or {}).get("total")
            visit(child, x, depth + 1, left + share)
            if cv and cv > 0:
                x += cv / total

    visit(grouped.root, 0.0, 0, 1.0)
    return cells, depth_max + 1

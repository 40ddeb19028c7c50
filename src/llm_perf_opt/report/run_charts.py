"""The run page's charts, from what the run's artifacts say (nothing recomputed):

- `stage_chart_svg`: the first screen's chart: per stage, measured and each level's prediction on a linear axis
  (each stage its own scale), the number at the end of every bar; a click selects the stage (`data-stage`).
- `share_rows`: each stage's parts as shares of its measured time (the linear share view).
- `time_chart_svg`: per stage, part and decode step, the measured time and the predicted time at each time
  level present, as bars on one logarithmic time axis, with the bound and the headroom to the roofline
  (measured / ideal) beside each row. Inline SVG; a stage's bar carries `data-stage` (a click selects the stage),
  a part's bar whose row is one module of the grouped graph `data-node` (a click opens that node's panel).
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
from llm_perf_opt.quantities import QUANTITIES, label
from llm_perf_opt.report.time_levels import RunTimes, TimeRow

MEASURED_COLOUR = "#111827"
LEVEL_COLOURS = {"ideal": "#2563eb", "kernel": "#7c3aed", "eager": "#db2777"}
OTHER_LEVEL_COLOURS = ("#059669", "#d97706", "#0891b2")
SHARE_COLOURS = ("#0f766e", "#b45309", "#4338ca", "#be123c", "#15803d", "#7e22ce", "#0369a1", "#a16207")
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
    blv = times.bound_level
    out.append(f'<text x="{x1 + 22}" y="{top - 10}" fill="#6b7280">measured · bound ({blv}) · ×ideal</text>')
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
            what = f"{r.label}: {units.seconds(v)}, " + (
                r.measured_label if name == "measured" else label(name) if name in QUANTITIES else f"predicted: {name}"
            )
            attrs = _select_attrs(r, node)
            out.append(
                f'<rect x="{x0}" y="{by}" width="{max(x(v) - x0, 1.5):.1f}" height="{bar_h - 1}" fill="{colour}"'
                f' data-series="{escape(name)}" data-row="{escape(r.key)}" data-seconds="{v:.9g}"{attrs}>'
                f"<title>{escape(what)}</title></rect>"
            )
        note = " · ".join(
            t
            for t in (
                units.seconds(r.measured_s) if r.measured_s is not None else "",
                r.bound(blv) or "",
                _headroom_text(r),
            )
            if t
        )
        out.append(
            f'<text x="{x1 + 8}" y="{y + row_h / 2:.1f}" dominant-baseline="middle" fill="#374151">'
            f"{escape(note)}</text>"
        )
        y += row_h
    out.append("</svg>")
    return "".join(out)


def _select_attrs(r: TimeRow, node: Optional[str]) -> str:
    """A stage's bar selects its stage (`data-stage`), a part's bar its grouped node (`data-node`)."""
    if r.kind == "stage":
        return f' data-stage="{escape(r.stage)}" class="bar clickable"'
    return f' data-node="{escape(node)}" class="bar clickable"' if node else ' class="bar"'


def series_of(times: RunTimes) -> list[tuple[str, str, str]]:
    """(name, colour, label) of the chart's series: measured, then each level present (the legend's entries)."""
    measured_q = next((r.measured_label for r in times.rows if r.measured_s is not None), label("fastest"))
    return [("measured", MEASURED_COLOUR, measured_q)] + [
        (lv, level_colour(lv, times.levels), label(lv) if lv in QUANTITIES else f"predicted: {lv}")
        for lv in times.levels
    ]


def stage_chart_svg(times: RunTimes, width: int = 640) -> Optional[str]:
    """The first screen's chart: per stage, measured and each level's prediction as bars on a linear axis (each
    stage its own scale, its largest bar full width), the number at the end of every bar; a click selects the
    stage. None without a stage row."""
    stages = [r for r in times.rows if r.kind == "stage" and (r.measured_s is not None or r.levels)]
    if not stages:
        return None
    series = series_of(times)
    label_w, num_w, bar_h, gap = 92, 64, 13, 12
    x0, x1 = label_w, width - num_w
    row_h = len(series) * bar_h + gap
    height = len(stages) * row_h + 4
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="stagechart" viewBox="0 0 {width} {height}" width="100%" '
        f'role="img" aria-label="measured and predicted time per stage, linear" font-family="system-ui,sans-serif" '
        f'font-size="11">'
    ]
    y = 2
    for r in stages:
        values = [r.measured_s if n == "measured" else r.predicted(n) for n, _, _ in series]
        top = max((v for v in values if v), default=0.0)
        name, _, sub = r.label.partition(" @ ")
        mid = y + len(series) * bar_h / 2
        out.append(
            f'<text x="2" y="{mid - (6 if sub else 0):.1f}" dominant-baseline="middle" font-weight="600" '
            f'data-stage="{escape(r.stage)}" class="clickable">{escape(name[:14])}</text>'
            + (
                f'<text x="2" y="{mid + 8:.1f}" dominant-baseline="middle" fill="#6b7280">@ {escape(sub[:14])}</text>'
                if sub
                else ""
            )
        )
        for i, ((name, colour, what), v) in enumerate(zip(series, values)):
            by = y + i * bar_h
            if v is None:
                out.append(
                    f'<text x="{x0 + 2}" y="{by + bar_h / 2:.1f}" dominant-baseline="middle" fill="#9ca3af">'
                    f"{escape(name)}: not measured</text>"
                    if name == "measured"
                    else ""
                )
                continue
            w = max((x1 - x0) * v / top, 1.5) if top else 1.5
            out.append(
                f'<rect x="{x0}" y="{by}" width="{w:.1f}" height="{bar_h - 2}" fill="{colour}" data-series="{name}" '
                f'data-row="{escape(r.key)}" data-seconds="{v:.9g}"{_select_attrs(r, None)}>'
                f"<title>{escape(r.label)}: {escape(units.seconds(v))}, {escape(what)}</title></rect>"
            )
            out.append(
                f'<text class="num" x="{x0 + w + 4:.1f}" y="{by + bar_h / 2:.1f}" dominant-baseline="middle" '
                f'data-row="{escape(r.key)}" data-series="{name}">{escape(units.seconds(v))}</text>'
            )
        y += row_h
    out.append("</svg>")
    return "".join(out)


def share_rows(times: RunTimes) -> list[dict[str, Any]]:
    """The linear share view: per stage with a measured time, each part's share of it ({stage, measured, label,
    parts: [{label, seconds, share, colour, node path}], rest}); the vision stage's parts are the prefill's own
    SAM, CLIP and projector rows (the family's vision parts), the decoder's layers are left out (inside the
    decoder)."""
    out = []
    by_stage: dict[str, list[TimeRow]] = {}
    for r in times.rows:
        if r.kind == "part" and r.measured_s is not None and "layer." not in r.label:
            by_stage.setdefault(r.stage, []).append(r)
    for r in times.rows:
        if r.kind != "stage" or not r.measured_s:
            continue
        parts = by_stage.get(r.stage, [])
        if r.stage == "vision":
            vision = set(times.vision_parts)
            parts = [p for p in by_stage.get("prefill", []) if p.label in vision]
        cells = []
        for i, p in enumerate(parts):
            share = p.measured_s / r.measured_s
            cells.append(
                {
                    "label": p.label,
                    "seconds": p.measured_s,
                    "share": share,
                    "colour": SHARE_COLOURS[i % len(SHARE_COLOURS)],
                    "path": p.path,
                }
            )
        total = sum(c["share"] for c in cells)
        out.append(
            {
                "stage": r.stage,
                "label": r.label,
                "measured": r.measured_s,
                "quantity": r.measured_label,
                "parts": cells,
                "rest": max(0.0, 1.0 - total),
                "over": total > 1.0 + 1e-9,
            }
        )
    return out


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
                "title": f"{name} ({node.class_name}): {units.seconds(value)} ({label('ranges')}), "
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

"""The compare page's chart and node panel (`compare.html`): the matched nodes whose self time changed most, as
diverging bars (slower to the right in red, faster to the left in blue, each with its change written on it), and
each matched node's figures (A, B, B − A, B / A, with how each was measured) as JSON for the page's panel.

Self time (`time_measured_self`: the profiler's time in a node less its child calls) is ranked, not the inclusive
time: a change in one leaf moves the inclusive time of every ancestor by as much, so the inclusive ranking lists
one change once per level of the module tree (root, model, sam_model, blocks, attn).
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any, Optional, Sequence

if TYPE_CHECKING:  # compare.py draws its page with this module
    from llm_perf_opt.report.compare import Comparison, Row

CHART_ROWS = 15  # bars on the chart
SLOWER, FASTER = "#dc2626", "#2563eb"
_W, _LABEL_W, _PAD, _ROW_H, _TOP = 960, 330, 90, 24, 40


def _short(text: str, n: int = 44) -> str:
    return text if len(text) <= n else "…" + text[-(n - 1) :]


def change_chart(rows: Sequence[Row], metric: str, title: str) -> Optional[str]:
    """An inline <svg> of the changes of `metric` of `rows` (largest first), or None with nothing to draw."""
    figs = [(r, r.figure(metric)) for r in rows[:CHART_ROWS]]
    figs = [(r, f) for r, f in figs if f is not None and f.delta is not None]
    if not figs:
        return None
    lo = min(0.0, *(f.delta for _, f in figs))
    hi = max(0.0, *(f.delta for _, f in figs))
    area = _W - _LABEL_W - 2 * _PAD
    scale = area / ((hi - lo) or 1.0)
    x0 = _LABEL_W + _PAD + (-lo) * scale
    height = _TOP + len(figs) * _ROW_H + 8
    out = [
        f'<svg id="changechart" viewBox="0 0 {_W} {height}" width="100%" style="max-width:{_W}px" role="img" '
        f'aria-label="{escape(title)}" xmlns="http://www.w3.org/2000/svg" font-family="system-ui,sans-serif" '
        'font-size="12">',
        f'<text x="4" y="14" fill="#555">{escape(title)}</text>',
        f'<text x="{x0 - 4:.1f}" y="32" fill="{FASTER}" text-anchor="end">← faster in B</text>' if lo < 0 else "",
        f'<text x="{x0 + 4:.1f}" y="32" fill="{SLOWER}">slower in B →</text>' if hi > 0 else "",
    ]
    for i, (r, f) in enumerate(figs):
        y = _TOP + i * _ROW_H
        d = f.delta
        w = max(abs(d) * scale, 1.0)
        x = x0 if d >= 0 else x0 - w
        colour = SLOWER if d > 0 else FASTER
        tx, anchor = (x0 + w + 4, "start") if d >= 0 else (x0 - w - 4, "end")
        out.append(
            f'<g class="bar" data-key="{escape(r.key)}" style="cursor:pointer"><title>{escape(r.label)}: '
            f"{escape(f.text('a'))} → {escape(f.text('b'))} ({escape(f.text('delta'))}, {escape(f.text('ratio'))})"
            f'</title><text x="{_LABEL_W - 6}" y="{y + 15}" text-anchor="end" fill="#1d1d1f">'
            f"{escape(_short(r.key))}</text>"
            f'<rect x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{_ROW_H - 7}" fill="{colour}" rx="2"/>'
            f'<text x="{tx:.1f}" y="{y + 15}" text-anchor="{anchor}" fill="{colour}">{escape(f.text("delta"))}'
            f"</text></g>"
        )
    out.append(f'<line x1="{x0:.1f}" x2="{x0:.1f}" y1="{_TOP - 4}" y2="{height - 4}" stroke="#555"/>')
    out.append("</svg>")
    return "".join(out)


def metric_labels(cmp: Comparison) -> dict[str, tuple[str, str]]:
    """metric name -> (label, how it was measured or predicted), from run B's grouped graph (else A's)."""
    out: dict[str, tuple[str, str]] = {}
    for run in (cmp.a, cmp.b):  # B's last: its wording wins
        for m in run.grouped.metrics if run.grouped else []:
            out[m["name"]] = (str(m.get("label") or m["name"]), str(m.get("source") or ""))
    return out


def panel_data(cmp: Comparison) -> dict[str, Any]:
    """The page's node panel: per matched node (by key) its label, its ids in A and B, and each figure as
    (metric, label, A, B, B − A, B / A); `by_b_id`: B's graph node id -> key (a click on the graph)."""
    labels = metric_labels(cmp)
    nodes = {}
    for r in cmp.nodes:
        nodes[r.key] = {
            "label": r.label,
            "a_id": r.a_id,
            "b_id": r.b_id,
            "figures": [
                [
                    f.metric,
                    labels.get(f.metric, (f.metric, ""))[0],
                    f.text("a"),
                    f.text("b"),
                    f.text("delta"),
                    f.text("ratio"),
                ]
                for f in r.figures
                if f.a is not None or f.b is not None
            ],
        }
    return {
        "nodes": nodes,
        "by_b_id": {r.b_id: r.key for r in cmp.nodes if r.b_id},
        "sources": {name: source for name, (_, source) in labels.items()},
    }

"""DOT sources of grouped and raw call graphs, assembled with `graphviz.Digraph` (which quotes and escapes;
every user text goes through `graphviz.escape`, so a backslash or a `<...>` stays literal), and `render_dot`,
which runs Graphviz's `dot` for SVG/PNG (without `dot` the file is skipped with a note, never a crash). SVG
nodes carry their node id (`<g id="n3">`), which the run page uses."""

from __future__ import annotations

import os
from pathlib import Path

import graphviz

from llm_perf_opt.callgraph.grouped import GroupedGraph
from llm_perf_opt.callgraph.heat import Heat
from llm_perf_opt.callgraph.labels import (
    DEFAULT_COLOR_BY,
    FILL,
    MAX_RANGES,
    STROKE,
    display_patterns,
    node_kind,
    node_label_lines,
    node_tooltip,
    repeat_text,
    visible_nodes,
)
from llm_perf_opt.callgraph.mermaid import mermaid_id
from llm_perf_opt.callgraph.schema import ROOT, CallGraph


def dot_text(*lines: str) -> str:
    """Lines of literal text as one DOT string: each escaped (`graphviz.escape`), joined by DOT's `\\n`,
    never read as an HTML-like label."""
    return graphviz.nohtml("\\n".join(graphviz.escape(line) for line in lines))


# ------------------------------------------------------------------------------------------------ DOT
_GROUPED_GRAPH = {
    "rankdir": "TB",
    "fontname": "Helvetica",
    "fontsize": "12",
    "nodesep": "0.12",
    "ranksep": "0.35",
    "labelloc": "t",
}


_GROUPED_NODE = {
    "shape": "box",
    "style": "rounded,filled",
    "fontname": "Helvetica",
    "fontsize": "10",
    "margin": "0.08,0.03",
}


_GROUPED_EDGE = {"fontname": "Helvetica", "fontsize": "9", "color": "#6b7280", "arrowsize": "0.6"}


_RAW_GRAPH = {"rankdir": "LR", "fontname": "Helvetica", "fontsize": "12", "labelloc": "t"}


_RAW_NODE = {"shape": "box", "style": "rounded", "fontname": "Helvetica", "fontsize": "9"}


_RAW_EDGE = {"fontname": "Helvetica", "fontsize": "8", "color": "#6b7280", "arrowsize": "0.5"}


def _digraph(
    name: str, title: str, graph: dict[str, str], node: dict[str, str], edge: dict[str, str], rankdir: str
) -> graphviz.Digraph:
    return graphviz.Digraph(
        name, graph_attr={**graph, "rankdir": rankdir, "label": dot_text(title)}, node_attr=node, edge_attr=edge
    )


def build_grouped_dot(
    grouped: GroupedGraph,
    max_depth: int | None = None,
    max_ranges: int = MAX_RANGES,
    rankdir: str = "TB",
    color_by: str = DEFAULT_COLOR_BY,
) -> str:
    shown, folded = visible_nodes(grouped, max_depth)
    ids = {n.id for n in shown}
    patterns = display_patterns(grouped, max_ranges)
    heat = Heat.of(grouped, color_by)
    title = f"{grouped.model_name or 'model'}: grouped call graph ({len(shown)} of {len(grouped.nodes)} nodes)"
    dot = _digraph("grouped_callgraph", title, _GROUPED_GRAPH, _GROUPED_NODE, _GROUPED_EDGE, rankdir)
    for n in shown:
        kind = node_kind(n)
        fill, font = heat.colours(n) if heat.active else (FILL[kind], "#111827")
        style = "rounded,filled,dashed" if n.sparse else "rounded,filled"
        dot.node(
            n.id,
            label=dot_text(*node_label_lines(n, folded.get(n.id, 0), max_ranges, patterns[n.id], heat)),
            tooltip=dot_text(*node_tooltip(n, grouped).split("\n")),
            fillcolor=fill,
            fontcolor=font,
            color=STROKE[kind],
            style=style,
            id=n.id,
            **({"penwidth": "2"} if heat.active and kind in ("stack", "both", "parfor") else {}),
        )
    for e in grouped.edges:
        if e.parent in ids and e.child in ids:
            rep = repeat_text(grouped.node(e.child))
            dot.edge(e.parent, e.child, **({"label": dot_text(rep)} if rep else {}))
    if heat.active:
        dot.node("legend", label=_legend_html(heat), shape="plain", id="legend", tooltip=dot_text(heat.title()))
    return dot.source


def _legend_html(heat: Heat) -> str:
    """The heat map's legend as a Graphviz HTML-like label (every text escaped)."""
    from html import escape

    rows = [f'<tr><td colspan="2" align="left"><b>{escape(heat.title())}</b></td></tr>']
    rows += [
        f'<tr><td bgcolor="{fill}" width="28"> </td><td align="left">{escape(text)}</td></tr>'
        for fill, _, text in heat.legend()
    ]
    kinds = "border: blue = for N stack, amber = parfor, purple = both; dashed = value-dependent"
    rows.append(f'<tr><td colspan="2" align="left"><font point-size="8">{escape(kinds)}</font></td></tr>')
    return '<<table border="0" cellborder="1" cellspacing="0" cellpadding="3">' + "".join(rows) + "</table>>"


def build_raw_dot(cg: CallGraph, max_depth: int | None = None, rankdir: str = "LR") -> str:
    """The ungrouped dynamic call graph: one node per called module, edges labelled with their calls.
    `max_depth` keeps modules whose address has at most that many components."""
    called = [a for a, n in cg.call_counts.items() if n and n > 0]
    for parent, kids in cg.edges.items():
        for child in kids:
            if child not in cg.call_counts:
                called.append(child)
        if parent not in cg.call_counts and kids:
            called.append(parent)
    called = list(dict.fromkeys(called))

    def depth(a: str) -> int:
        return 0 if a == ROOT else a.count(".") + 1

    shown = [a for a in called if max_depth is None or depth(a) <= max_depth]
    taken: set[str] = set()
    ids = {a: mermaid_id("m_" + (a or "root"), taken) for a in shown}
    title = f"{cg.model_name or 'model'}: raw call graph ({len(shown)} modules)"
    dot = _digraph("raw_callgraph", title, _RAW_GRAPH, _RAW_NODE, _RAW_EDGE, rankdir)
    for a in shown:
        dot.node(
            ids[a],
            label=dot_text(f"{cg.module_types.get(a, '?')} @ {a or '(root)'}", f"calls {cg.call_counts.get(a, 0)}"),
        )
    for parent, kids in cg.edges.items():
        if parent not in ids:
            continue
        for child, n in kids.items():
            if child in ids and n:
                dot.edge(ids[parent], ids[child], label=str(n))
    return dot.source


# ------------------------------------------------------------------------------------------------ files
def render_dot(dot_source: str, out_path: str | Path, fmt: str = "svg") -> tuple[Path | None, str | None]:
    """Render a DOT source with Graphviz (`graphviz.Source.pipe`) and write it atomically; return
    (path, None), or (None, reason) when Graphviz's `dot` is missing or refuses the source."""
    try:
        data = graphviz.Source(dot_source).pipe(format=fmt, quiet=True)
    except graphviz.ExecutableNotFound:
        return None, f"{fmt} skipped: the Graphviz 'dot' executable is not on PATH (apt-get install graphviz)"
    except graphviz.CalledProcessError as exc:
        err = exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else str(exc.stderr or "")
        err_lines = err.strip().splitlines()
        return None, f"{fmt} skipped: dot exited {exc.returncode}" + (f" ({err_lines[-1]})" if err_lines else "")
    except OSError as exc:
        return None, f"{fmt} skipped: dot failed ({exc})"
    return _atomic_write_bytes(Path(out_path), data), None


def _atomic_write_bytes(path: Path, data: bytes) -> Path:
    """Write `data` next to `path` under a temporary name, then rename: a reader sees all or nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path

"""Rendering of grouped (Option C) and raw call graphs: DOT and SVG (through the `graphviz` package), Mermaid.

Labels stay compact — `Class @ pattern for N`; with `color_by` (flops, time, bytes, params) a second
line with the metric and its share of the run (`2.93 TFLOP · 64%`, `callgraph.heat`), the node filled
by its heat-map bin and a legend beside the graph; then `parfor N` (or the calls when they are not a
whole number per parent call) and the parameter count, and one line per variant (`◦ window_size=0
×4: 1.7 TFLOP · 38%`). Long index lists print as `[k of K]`. Tooltips (SVG `<title>`s) carry the exact
pattern, the constructor parameters, the I/O shapes and dtypes of the first call, and every cost the
node carries (total, per instance, min/max and the slowest instance, share), per variant too. SVG
nodes carry their node id (`<g id="n3">`), which the run page uses. `max_depth` folds everything below that depth of the grouped tree into its ancestor (the
ancestor's sums already cover its subtree). Mermaid ids are sanitised and every label is quoted with
its special characters written as Mermaid entity codes (`#quot;`, `#lt;`, `#64;` ...);
`validate_mermaid` is the structural check the tests run on every diagram.

DOT sources are assembled with `graphviz.Digraph` (which quotes and escapes), every user text passed
through `graphviz.escape` so a backslash or a `<...>` stays literal; `graphviz` runs `dot` for SVG/PNG.

`group_and_render` is the entry the trace pipeline and `./dev group` use: group, run the model's
runtime checks against the runtime log, write `callgraph.grouped.json` / `.dot` / `.svg` / `.mmd`.
Without the `dot` executable the SVG is skipped with a note (in the JSON's `notes`), never a crash.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import graphviz

from llm_perf_opt import units
from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.callgraph.checks import Event, RuntimeCheck
from llm_perf_opt.callgraph.grouping import (
    GROUPED_FILENAME,
    GroupedGraph,
    GroupNode,
    count_ranges,
    group_callgraph,
)
from llm_perf_opt.callgraph.heat import Heat, format_value
from llm_perf_opt.callgraph.node_costs import ModuleCosts, attach_costs
from llm_perf_opt.callgraph.schema import ROOT, CallGraph
from llm_perf_opt.errors import ArtifactError

GROUPED_STEM = "callgraph.grouped"
RAW_STEM = "callgraph.raw"
DEFAULT_FORMATS = ("dot", "svg", "mmd")
DEFAULT_COLOR_BY = "flops"
KNOWN_FORMATS = ("dot", "svg", "png", "mmd", "raw_dot", "raw_svg", "raw_mmd")
MAX_RANGES = 4  # an index list with more ranges than this prints as "[k of K]"

_FILL = {"root": "#e5e7eb", "stack": "#dbeafe", "parfor": "#fde68a", "both": "#ddd6fe", "plain": "#ffffff"}
_STROKE = {"root": "#374151", "stack": "#1e40af", "parfor": "#92400e", "both": "#5b21b6", "plain": "#6b7280"}


# ------------------------------------------------------------------------------------------------ text
def human_count(n: float | int | None) -> str:
    if n is None:
        return "?"
    n = float(n)
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= div:
            return f"{n / div:.3g}{suffix}"
    return f"{n:.0f}" if n == int(n) else f"{n:.3g}"


_BRACKET = re.compile(r"\[([0-9,\-]+)\]")


def _bracket_texts(node: GroupNode, max_ranges: int, inherited: Sequence[str] = ()) -> list[str] | None:
    """Display text of each `[...]` of the pattern; the first `len(inherited)` come from the parent."""
    brackets = list(_BRACKET.finditer(node.pattern))
    if len(brackets) != len(node.indices):
        return None
    texts = []
    for j, (m, ints) in enumerate(zip(brackets, node.indices)):
        if j < len(inherited):
            texts.append(inherited[j])
            continue
        text = m.group(0)
        own = j == len(brackets) - 1 and node.template.endswith("*") and bool(node.static_n)
        if own and node.annotation.get("bracket"):
            text = node.annotation["bracket"]  # a runtime check's record (experts hit, from the routing)
        elif own and node.sparse and len(node.members) > len(ints):
            # several parents called different subsets: their union says little, the counts say more
            k = str(node.for_n) if node.for_n == node.for_min else f"{node.for_min}-{node.for_n}"
            text = f"[{k} of {node.static_n}]"
        elif count_ranges(ints) > max_ranges:
            text = f"[{len(ints)} of {node.static_n}]" if own else f"[{len(ints)} in {min(ints)}-{max(ints)}]"
        texts.append(text)
    return texts


def _apply_brackets(pattern: str, texts: Sequence[str]) -> str:
    it = iter(texts)
    return _BRACKET.sub(lambda m: next(it), pattern)


def display_pattern(node: GroupNode, max_ranges: int = MAX_RANGES) -> str:
    """The node's pattern with long index lists shortened to `[k of K]` (`[k in a-b]` when K is unknown);
    a sparse stack over several parents prints its per-parent counts (`experts.[35-47 of 64]`)."""
    texts = _bracket_texts(node, max_ranges)
    return node.pattern if texts is None else _apply_brackets(node.pattern, texts)


def display_patterns(grouped: GroupedGraph, max_ranges: int = MAX_RANGES) -> dict[str, str]:
    """`display_pattern` of every node, where a child writes the brackets it shares with its parent the
    way the parent does (so the children of `experts.[35-47 of 64]` say so too)."""
    texts: dict[str, list[str] | None] = {}
    out: dict[str, str] = {}
    nodes = {n.id: n for n in grouped.nodes}
    for n in grouped.nodes:  # parents come before their children
        parent = nodes.get(n.parent) if n.parent else None
        inherited: Sequence[str] = ()
        if parent is not None and texts.get(parent.id) and n.pattern.startswith(parent.pattern + "."):
            inherited = texts[parent.id] or ()
        texts[n.id] = _bracket_texts(n, max_ranges, inherited)
        out[n.id] = n.pattern if texts[n.id] is None else _apply_brackets(n.pattern, texts[n.id])
    return out


def node_kind(node: GroupNode) -> str:
    if node.parent is None:
        return "root"
    rep = (node.parfor or 1) > 1 or (node.parfor is None and node.calls_per_parent_call[-1:] != [1.0])
    if node.is_stack and rep:
        return "both"
    if node.is_stack:
        return "stack"
    return "parfor" if rep else "plain"


def repeat_text(node: GroupNode) -> str:
    if node.parent is None:
        return f"calls {node.calls}" if node.calls != 1 else ""
    if node.parfor is not None:
        return f"parfor {node.parfor}" if node.parfor > 1 else ""
    return f"calls {node.calls} in {node.parent_calls} parent calls"


def for_text(node: GroupNode) -> str:
    if node.for_n <= 1 and node.for_min <= 1:
        return ""
    return f"for {node.for_n}" if node.for_n == node.for_min else f"for {node.for_min}-{node.for_n}"


def node_label_lines(node: GroupNode, folded: int = 0, max_ranges: int = MAX_RANGES,
                     pattern: str | None = None, heat: Heat | None = None) -> list[str]:
    pattern = display_pattern(node, max_ranges) if pattern is None else pattern
    head = node.class_name if node.parent is None else f"{node.class_name} @ {pattern}"
    ft = for_text(node)
    lines = [f"{head} {ft}" if ft else head]
    heat_line = heat.line(node) if heat is not None and heat.active else None
    if heat_line:
        lines.append(heat_line)
    show_params = node.params and not (heat is not None and heat.active and heat.color_by == "params")
    info = [t for t in (repeat_text(node), f"{human_count(node.params)} params" if show_params else "") if t]
    if info:
        lines.append(", ".join(info))
    if node.annotation.get("line"):
        lines.append(node.annotation["line"])
    for i, v in enumerate(node.variants):
        lines.append(heat.variant_line(node, i) if heat is not None and heat.active else f"◦ {v.label} ×{len(v.members)}")
    if folded:
        lines.append(f"+{folded} folded")
    return lines


def _fmt_tensor(meta: Any) -> str:
    if isinstance(meta, Mapping):
        shape = meta.get("shape")
        dtype = str(meta.get("dtype", "")).replace("torch.", "")
        if shape is not None:
            return f"{dtype}[{', '.join(str(s) for s in shape)}]" if dtype else str(list(shape))
        return ", ".join(f"{k}={v}" for k, v in meta.items())
    if isinstance(meta, (list, tuple)):
        return "(" + ", ".join(_fmt_tensor(m) for m in meta) + ")"
    return str(meta)


def node_tooltip(node: GroupNode, grouped: GroupedGraph | None = None) -> str:
    lines = [f"{node.class_name} @ {node.pattern}"]
    members = len(node.members)
    lines.append(f"members {members}" + (f" (for {for_text(node)[4:]} of {node.static_n} static)"
                                          if node.static_n else ""))
    if node.sparse or node.value_dependent:
        lines.append("value-dependent (only some static candidates were called)")
    lines.append(f"calls {node.calls} from {node.parent_calls} parent calls")
    if node.constructor_params:
        lines.append("params: " + ", ".join(f"{k}={v}" for k, v in node.constructor_params.items()))
    if node.varying_params:
        lines.append("differ between members: " + ", ".join(node.varying_params))
    if node.input_shapes:
        lines.append("in: " + ", ".join(_fmt_tensor(t) for t in node.input_shapes))
    if node.output_shapes:
        lines.append("out: " + ", ".join(_fmt_tensor(t) for t in node.output_shapes))
    lines.append(f"parameters {node.params:,}; ops {node.ops_self:,} self / {node.ops_total:,} subtree; "
                 f"outputs {node.activation_bytes:,} B")
    if grouped is not None:
        lines.extend(cost_lines(node.costs, grouped))
    for v in node.variants:
        lines.append(f"variant {v.label} ×{len(v.members)}: {_members_text(v.members)}")
        if grouped is not None:
            lines.extend("  " + line for line in cost_lines(v.costs, grouped, brief=True))
    return "\n".join(lines)


def _members_text(members: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(m.rpartition(".")[2] if "." in m else m for m in members[:limit])
    return shown + (f" … (+{len(members) - limit})" if len(members) > limit else "")


def cost_lines(costs: Mapping[str, Any], grouped: GroupedGraph, brief: bool = False) -> list[str]:
    """One line per metric of the graph: total and share, per instance (mean, min-max, slowest)."""
    out = []
    for metric in grouped.metrics:
        fig = costs.get(metric["name"])
        kind = metric["kind"]
        if not fig or fig.get("total") is None:
            out.append(f"{metric['label']}: — ({(fig or {}).get('reason', 'no figure')})")
            continue
        text = f"{metric['label']}: {format_value(fig['total'], kind)}"
        if fig.get("share") is not None:
            text += f" ({units.percent(fig['share'])} of the run)"
        if not brief and fig.get("instances", 1) > 1 and fig.get("mean") is not None:
            text += (f"; per instance {format_value(fig['mean'], kind)} (min {format_value(fig['min'], kind)}, "
                     f"max {format_value(fig['max'], kind)}, slowest {fig['slowest']})")
        if not fig.get("complete", True):
            text += f"; {fig['with_figure']} of {fig['instances']} instances have a figure"
        if fig.get("notes"):
            text += f" [{'; '.join(fig['notes'])}]"
        out.append(text)
    if not brief:
        for name, reason in grouped.absent_metrics.items():
            out.append(f"{name}: — ({reason})")
    return out


def dot_text(*lines: str) -> str:
    """Lines of literal text as one DOT string: each escaped (`graphviz.escape`), joined by DOT's `\\n`,
    never read as an HTML-like label."""
    return graphviz.nohtml("\\n".join(graphviz.escape(line) for line in lines))


_MERMAID_ENTITIES = {
    "#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "&": "#38;", "@": "#64;", "[": "#91;", "]": "#93;",
    "{": "#123;", "}": "#125;", "(": "#40;", ")": "#41;", "|": "#124;", "`": "#96;", ";": "#59;",
}
MERMAID_RESERVED = {"end", "graph", "subgraph", "flowchart", "class", "classdef", "click", "style", "linkstyle",
                    "direction", "default", "call", "href", "interpolate", "accdescr", "acctitle"}
_MERMAID_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


def mermaid_escape(text: str) -> str:
    """Label text for a quoted Mermaid label; newlines become `<br/>`."""
    out = "".join(_MERMAID_ENTITIES.get(ch, ch) for ch in text)
    return out.replace("\r", "").replace("\n", "<br/>")


def mermaid_id(name: str, taken: set[str] | None = None) -> str:
    """A Mermaid-safe node id from any string: letters, digits, underscores, a letter first, not a keyword,
    unique within `taken` (which it updates)."""
    base = re.sub(r"[^A-Za-z0-9_]", "_", name) or "root"
    if not base[0].isalpha():
        base = "m_" + base
    if base.lower() in MERMAID_RESERVED:
        base = "m_" + base
    out = base
    if taken is not None:
        k = 1
        while out in taken:
            out = f"{base}_{k}"
            k += 1
        taken.add(out)
    return out


# ------------------------------------------------------------------------------------------------ folding
def visible_nodes(grouped: GroupedGraph, max_depth: int | None) -> tuple[list[GroupNode], dict[str, int]]:
    """Nodes at depth <= max_depth, and for each shown node the number of folded descendants."""
    if max_depth is not None and max_depth < 0:
        raise ArtifactError(f"max_depth={max_depth} is invalid: must be a non-negative integer or None")
    shown = [n for n in grouped.nodes if max_depth is None or n.depth <= max_depth]
    folded: dict[str, int] = {}
    if max_depth is not None:
        for n in shown:
            if n.depth == max_depth and n.children:
                folded[n.id] = len(grouped.descendants(n.id))
    return shown, folded


# ------------------------------------------------------------------------------------------------ DOT
_GROUPED_GRAPH = {"rankdir": "TB", "fontname": "Helvetica", "fontsize": "12", "nodesep": "0.12", "ranksep": "0.35",
                  "labelloc": "t"}
_GROUPED_NODE = {"shape": "box", "style": "rounded,filled", "fontname": "Helvetica", "fontsize": "10",
                 "margin": "0.08,0.03"}
_GROUPED_EDGE = {"fontname": "Helvetica", "fontsize": "9", "color": "#6b7280", "arrowsize": "0.6"}
_RAW_GRAPH = {"rankdir": "LR", "fontname": "Helvetica", "fontsize": "12", "labelloc": "t"}
_RAW_NODE = {"shape": "box", "style": "rounded", "fontname": "Helvetica", "fontsize": "9"}
_RAW_EDGE = {"fontname": "Helvetica", "fontsize": "8", "color": "#6b7280", "arrowsize": "0.5"}


def _digraph(name: str, title: str, graph: dict[str, str], node: dict[str, str], edge: dict[str, str],
             rankdir: str) -> graphviz.Digraph:
    return graphviz.Digraph(name, graph_attr={**graph, "rankdir": rankdir, "label": dot_text(title)},
                            node_attr=node, edge_attr=edge)


def build_grouped_dot(grouped: GroupedGraph, max_depth: int | None = None, max_ranges: int = MAX_RANGES,
                      rankdir: str = "TB", color_by: str = DEFAULT_COLOR_BY) -> str:
    shown, folded = visible_nodes(grouped, max_depth)
    ids = {n.id for n in shown}
    patterns = display_patterns(grouped, max_ranges)
    heat = Heat.of(grouped, color_by)
    title = f"{grouped.model_name or 'model'}: grouped call graph ({len(shown)} of {len(grouped.nodes)} nodes)"
    dot = _digraph("grouped_callgraph", title, _GROUPED_GRAPH, _GROUPED_NODE, _GROUPED_EDGE, rankdir)
    for n in shown:
        kind = node_kind(n)
        fill, font = heat.colours(n) if heat.active else (_FILL[kind], "#111827")
        style = "rounded,filled,dashed" if n.sparse else "rounded,filled"
        dot.node(n.id, label=dot_text(*node_label_lines(n, folded.get(n.id, 0), max_ranges, patterns[n.id], heat)),
                 tooltip=dot_text(*node_tooltip(n, grouped).split("\n")), fillcolor=fill, fontcolor=font,
                 color=_STROKE[kind], style=style, id=n.id,
                 **({"penwidth": "2"} if heat.active and kind in ("stack", "both", "parfor") else {}))
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
    rows += [f'<tr><td bgcolor="{fill}" width="28"> </td><td align="left">{escape(text)}</td></tr>'
             for fill, _, text in heat.legend()]
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
        dot.node(ids[a], label=dot_text(f"{cg.module_types.get(a, '?')} @ {a or '(root)'}",
                                        f"calls {cg.call_counts.get(a, 0)}"))
    for parent, kids in cg.edges.items():
        if parent not in ids:
            continue
        for child, n in kids.items():
            if child in ids and n:
                dot.edge(ids[parent], ids[child], label=str(n))
    return dot.source


# ------------------------------------------------------------------------------------------------ Mermaid
def build_grouped_mermaid(grouped: GroupedGraph, max_depth: int | None = None, max_ranges: int = MAX_RANGES,
                          direction: str = "LR", color_by: str = DEFAULT_COLOR_BY) -> str:
    shown, folded = visible_nodes(grouped, max_depth)
    taken: set[str] = {"legend"}
    ids = {n.id: mermaid_id(n.id, taken) for n in shown}
    patterns = display_patterns(grouped, max_ranges)
    heat = Heat.of(grouped, color_by)
    lines = [f"flowchart {direction}"]
    by_kind: dict[str, list[str]] = {}
    by_bin: dict[str, list[str]] = {}
    for n in shown:
        label = "<br/>".join(mermaid_escape(s) for s in node_label_lines(n, folded.get(n.id, 0), max_ranges,
                                                                         patterns[n.id], heat))
        lines.append(f'  {ids[n.id]}["{label}"]')
        by_kind.setdefault(node_kind(n), []).append(ids[n.id])
        if heat.active:
            b = heat.bin_index(n)
            by_bin.setdefault("nofig" if b is None else f"heat{b}", []).append(ids[n.id])
    for e in grouped.edges:
        if e.parent in ids and e.child in ids:
            rep = repeat_text(grouped.node(e.child))
            mid = f'|"{mermaid_escape(rep)}"|' if rep else ""
            lines.append(f"  {ids[e.parent]} -->{mid} {ids[e.child]}")
    if heat.active:
        lines.extend(_mermaid_legend(heat, by_bin))
    for kind in ("root", "stack", "parfor", "both"):
        if by_kind.get(kind):
            fill = "" if heat.active else f"fill:{_FILL[kind]},"
            lines.append(f"  classDef {kind} {fill}stroke:{_STROKE[kind]}")
            lines.append(f"  class {','.join(by_kind[kind])} {kind}")
    sparse = [ids[n.id] for n in shown if n.sparse]
    if sparse:
        lines.append("  classDef sparse stroke-dasharray:4")
        lines.append(f"  class {','.join(sparse)} sparse")
    return "\n".join(lines) + "\n"


def _mermaid_legend(heat: Heat, by_bin: dict[str, list[str]]) -> list[str]:
    """The legend as a subgraph of unconnected nodes, one per bin, and the bins' classes."""
    out = [f'  subgraph legend["{mermaid_escape(heat.title())}"]', "    direction TB"]
    names = [f"heat{i}" for i in range(len(heat.legend()) - 1)] + ["nofig"]
    for name, (_, _, text) in zip(names, heat.legend()):
        out.append(f'    legend_{name}["{mermaid_escape(text)}"]')
    out.append("  end")
    for name, (fill, font, _) in zip(names, heat.legend()):
        out.append(f"  classDef {name} fill:{fill},color:{font}")
        out.append(f"  class {','.join([f'legend_{name}'] + by_bin.get(name, []))} {name}")
    return out


def build_raw_mermaid(cg: CallGraph, max_depth: int | None = None, direction: str = "LR") -> str:
    called = [a for a, n in cg.call_counts.items() if n and n > 0]
    shown = [a for a in called if max_depth is None or (0 if a == ROOT else a.count(".") + 1) <= max_depth]
    taken: set[str] = set()
    ids = {a: mermaid_id("m_" + (a or "root"), taken) for a in shown}
    lines = [f"flowchart {direction}"]
    for a in shown:
        label = f"{cg.module_types.get(a, '?')} @ {a or '(root)'}\ncalls {cg.call_counts.get(a, 0)}"
        lines.append(f'  {ids[a]}["{mermaid_escape(label)}"]')
    for parent, kids in cg.edges.items():
        if parent in ids:
            for child, n in kids.items():
                if child in ids and n:
                    lines.append(f'  {ids[parent]} -->|"{n}"| {ids[child]}')
    return "\n".join(lines) + "\n"


_NODE_LINE = re.compile(r'^  ([^\s\[\]"]+)\["(.*)"\]$')
_EDGE_LINE = re.compile(r'^  ([^\s\[\]"|]+) -->(?:\|"(.*)"\|)? ([^\s\[\]"|]+)$')
_CLASSDEF_LINE = re.compile(r"^  classDef [A-Za-z][A-Za-z0-9_]* [^\s;]+$")
_CLASS_LINE = re.compile(r"^  class ([A-Za-z0-9_,]+) [A-Za-z][A-Za-z0-9_]*$")
_SUBGRAPH_LINE = re.compile(r'^  subgraph ([A-Za-z][A-Za-z0-9_]*)\["(.*)"\]$')
_SUBGRAPH_NODE = re.compile(r'^    ([^\s\[\]"]+)\["(.*)"\]$')
_LABEL_FORBIDDEN = set('"<>[]{}()|`@;')


def validate_mermaid(text: str) -> list[str]:
    """Structural check of a flowchart this module writes: the problems found (empty when valid).

    A `flowchart` header; every node id declared once and safe (letters, digits, underscores, a letter
    first, not a Mermaid keyword); every edge between declared ids; labels quoted with no raw quote,
    bracket, brace, parenthesis, pipe, `@`, `;` or `<`/`>` (other than the `<br/>` line breaks); every
    `#` the start of an entity code; class statements naming declared ids; a subgraph (the legend) opened
    with a safe id and a quoted label, holding nodes and a `direction`, and closed by `end`."""
    problems: list[str] = []
    lines = text.splitlines()
    if not lines or not re.match(r"^flowchart (TD|TB|BT|LR|RL)$", lines[0]):
        problems.append(f"line 1: expected a 'flowchart <direction>' header, found {lines[0] if lines else ''!r}")
    declared: dict[str, int] = {}

    def check_label(label: str, where: str) -> None:
        bare = re.sub(r"#([0-9]+|[a-z]+);", "", label.replace("<br/>", ""))
        bad = sorted({ch for ch in bare if ch in _LABEL_FORBIDDEN})
        if bad:
            problems.append(f"{where}: unescaped character(s) {''.join(bad)!r} in label {label!r}")
        if "#" in bare:
            problems.append(f"{where}: '#' not starting an entity code in label {label!r}")

    def check_id(node_id: str, where: str) -> None:
        if not _MERMAID_ID.match(node_id) or node_id.lower() in MERMAID_RESERVED:
            problems.append(f"{where}: unsafe node id {node_id!r}")

    def declare(node_id: str, label: str, no: int, where: str) -> None:
        """A node statement (top level or inside a subgraph): a safe id, declared once, a safe label."""
        check_id(node_id, where)
        if node_id in declared:
            problems.append(f"{where}: node {node_id!r} already declared on line {declared[node_id]}")
        declared[node_id] = no
        check_label(label, where)

    edges: list[tuple[int, str, str]] = []
    open_subgraph: int | None = None
    for no, line in enumerate(lines[1:], start=2):
        where = f"line {no}"
        if not line.strip():
            continue
        if open_subgraph is not None:
            if line == "  end":
                open_subgraph = None
            elif line == "    direction TB" or line == "    direction LR":
                continue
            elif m := _SUBGRAPH_NODE.match(line):
                declare(*m.groups(), no, where)
            else:
                problems.append(f"{where}: not a node, direction or 'end' inside the subgraph: {line!r}")
            continue
        if m := _SUBGRAPH_LINE.match(line):
            check_id(m.group(1), where)
            check_label(m.group(2), where)
            open_subgraph = no
        elif m := _NODE_LINE.match(line):
            declare(*m.groups(), no, where)
        elif m := _EDGE_LINE.match(line):
            a, label, b = m.groups()
            check_id(a, where)
            check_id(b, where)
            if label is not None:
                check_label(label, where)
            edges.append((no, a, b))
        elif _CLASSDEF_LINE.match(line):
            continue
        elif m := _CLASS_LINE.match(line):
            for node_id in m.group(1).split(","):
                if node_id not in declared:
                    problems.append(f"{where}: class statement names undeclared node {node_id!r}")
        else:
            problems.append(f"{where}: not a node, edge or class statement: {line!r}")
    for no, a, b in edges:
        for node_id in (a, b):
            if node_id not in declared:
                problems.append(f"line {no}: edge references undeclared node {node_id!r}")
    if open_subgraph is not None:
        problems.append(f"line {open_subgraph}: subgraph never closed with 'end'")
    return problems


# ------------------------------------------------------------------------------------------------ files
def render_dot(dot_source: str, out_path: str | Path, fmt: str = "svg") -> tuple[Path | None, str | None]:
    """Render a DOT source with Graphviz (`graphviz.Source.pipe`) and write it atomically; return
    (path, None), or (None, reason) when Graphviz's `dot` is missing or refuses the source."""
    try:
        data = graphviz.Source(dot_source).pipe(format=fmt, quiet=True)
    except graphviz.ExecutableNotFound:
        return None, f"{fmt} skipped: the Graphviz 'dot' executable is not on PATH (apt-get install graphviz)"
    except graphviz.CalledProcessError as exc:
        err = (exc.stderr.decode(errors="replace") if isinstance(exc.stderr, bytes) else str(exc.stderr or ""))
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


def write_grouped_outputs(grouped: GroupedGraph, out_dir: str | Path, max_depth: int | None = None,
                          formats: Sequence[str] = DEFAULT_FORMATS, callgraph: CallGraph | None = None,
                          config: Any = None, stem: str = GROUPED_STEM, color_by: str = DEFAULT_COLOR_BY
                          ) -> dict[str, Path]:
    """Write the renderings asked for and the grouped JSON (last, with any skip notes); return the paths."""
    unknown = [f for f in formats if f not in KNOWN_FORMATS]
    if unknown:
        raise ArtifactError(f"unknown render format(s) {unknown}: choose from {list(KNOWN_FORMATS)}")
    grouped.source["color_by"] = color_by  # what the renderings were coloured by (the run page's legend)
    heat_note = Heat.of(grouped, color_by).note()
    if heat_note and heat_note not in grouped.notes:
        grouped.notes.append(heat_note)
    out_dir = Path(out_dir)
    written: dict[str, Path] = {}
    dot_source = None
    if any(f in formats for f in ("dot", "svg", "png")):
        dot_source = build_grouped_dot(grouped, max_depth=max_depth, color_by=color_by)
    if "dot" in formats:
        written["dot"] = atomic_write_text(out_dir / f"{stem}.dot", dot_source)
    for fmt in ("svg", "png"):
        if fmt in formats:
            path, note = render_dot(dot_source, out_dir / f"{stem}.{fmt}", fmt)
            if path:
                written[fmt] = path
            else:
                grouped.notes.append(note)
    if "mmd" in formats:
        mmd = build_grouped_mermaid(grouped, max_depth=max_depth, color_by=color_by)
        problems = validate_mermaid(mmd)
        if problems:  # a bug here, not bad input: say so in the notes rather than hide it
            grouped.notes.append(f"mermaid structural check failed: {problems[:3]}")
        written["mmd"] = atomic_write_text(out_dir / f"{stem}.mmd", mmd)
    if any(f.startswith("raw_") for f in formats):
        if callgraph is None:
            grouped.notes.append("raw renderings skipped: no call graph given")
        else:
            raw_dot = build_raw_dot(callgraph, max_depth=max_depth)
            if "raw_dot" in formats:
                written["raw_dot"] = atomic_write_text(out_dir / f"{RAW_STEM}.dot", raw_dot)
            if "raw_svg" in formats:
                path, note = render_dot(raw_dot, out_dir / f"{RAW_STEM}.svg", "svg")
                if path:
                    written["raw_svg"] = path
                else:
                    grouped.notes.append(f"raw {note}")
            if "raw_mmd" in formats:
                written["raw_mmd"] = atomic_write_text(out_dir / f"{RAW_STEM}.mmd",
                                                       build_raw_mermaid(callgraph, max_depth=max_depth))
    written["json"] = grouped.save(out_dir / (GROUPED_FILENAME if stem == GROUPED_STEM else f"{stem}.json"),
                                   config=config)
    return written


def group_and_render(
    callgraph: CallGraph,
    out_dir: str | Path,
    max_depth: int | None = None,
    formats: Iterable[str] = DEFAULT_FORMATS,
    runtime_log: Sequence[Event] | None = None,
    checks: Sequence[RuntimeCheck] = (),
    config: Any = None,
    costs: ModuleCosts | None = None,
    color_by: str = DEFAULT_COLOR_BY,
) -> tuple[GroupedGraph, dict[str, Path]]:
    """Group `callgraph`, run the model's runtime `checks` against `runtime_log` (default the graph's
    own), attach `costs` (the run's per-module metric tables) to every node, write the JSON and the
    renderings (coloured by `color_by`) into `out_dir`; return the grouped graph and {format: path} of
    what was written ("json", "dot", "svg", "mmd", ...). Skipped renderings are listed in
    `grouped.notes`."""
    grouped = group_callgraph(callgraph, runtime_log=runtime_log, checks=checks)
    if costs is not None:
        attach_costs(grouped, costs)
    written = write_grouped_outputs(grouped, out_dir, max_depth=max_depth, formats=tuple(formats),
                                    callgraph=callgraph, config=config, color_by=color_by)
    return grouped, written

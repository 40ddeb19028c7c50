"""Mermaid flowcharts of grouped and raw call graphs: ids sanitised (`mermaid_id`), every label quoted with its
special characters written as Mermaid entity codes (`#quot;`, `#lt;`, `#64;` ...), heat-map classes and a
legend. `callgraph.mermaid_check.validate_mermaid` is the structural check the tests run on every diagram."""

from __future__ import annotations

import re

from llm_perf_opt.callgraph import labels
from llm_perf_opt.callgraph.grouped import GroupedGraph
from llm_perf_opt.callgraph.heat import Heat
from llm_perf_opt.callgraph.schema import ROOT, CallGraph

_MERMAID_ENTITIES = {
    "#": "#35;",
    '"': "#quot;",
    "<": "#lt;",
    ">": "#gt;",
    "&": "#38;",
    "@": "#64;",
    "[": "#91;",
    "]": "#93;",
    "{": "#123;",
    "}": "#125;",
    "(": "#40;",
    ")": "#41;",
    "|": "#124;",
    "`": "#96;",
    ";": "#59;",
}


MERMAID_RESERVED = {
    "end",
    "graph",
    "subgraph",
    "flowchart",
    "class",
    "classdef",
    "click",
    "style",
    "linkstyle",
    "direction",
    "default",
    "call",
    "href",
    "interpolate",
    "accdescr",
    "acctitle",
}


MERMAID_ID = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")


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


# ------------------------------------------------------------------------------------------------ Mermaid
def build_grouped_mermaid(
    grouped: GroupedGraph,
    max_depth: int | None = None,
    max_ranges: int = labels.MAX_RANGES,
    direction: str = "LR",
    color_by: str = labels.DEFAULT_COLOR_BY,
) -> str:
    shown, folded = labels.visible_nodes(grouped, max_depth)
    taken: set[str] = {"legend"}
    ids = {n.id: mermaid_id(n.id, taken) for n in shown}
    patterns = labels.display_patterns(grouped, max_ranges)
    heat = Heat.of(grouped, color_by)
    lines = [f"flowchart {direction}"]
    by_kind: dict[str, list[str]] = {}
    by_bin: dict[str, list[str]] = {}
    for n in shown:
        label = "<br/>".join(
            mermaid_escape(s) for s in labels.node_label_lines(n, folded.get(n.id, 0), max_ranges, patterns[n.id], heat)
        )
        lines.append(f'  {ids[n.id]}["{label}"]')
        by_kind.setdefault(labels.node_kind(n), []).append(ids[n.id])
        if heat.active:
            b = heat.bin_index(n)
            by_bin.setdefault("nofig" if b is None else f"heat{b}", []).append(ids[n.id])
    for e in grouped.edges:
        if e.parent in ids and e.child in ids:
            rep = labels.repeat_text(grouped.node(e.child))
            mid = f'|"{mermaid_escape(rep)}"|' if rep else ""
            lines.append(f"  {ids[e.parent]} -->{mid} {ids[e.child]}")
    if heat.active:
        lines.extend(_mermaid_legend(heat, by_bin))
    for kind in ("root", "stack", "parfor", "both"):
        if by_kind.get(kind):
            fill = "" if heat.active else f"fill:{labels.FILL[kind]},"
            lines.append(f"  classDef {kind} {fill}stroke:{labels.STROKE[kind]}")
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

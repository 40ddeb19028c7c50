"""A structural check of the Mermaid the project writes: every line is a node, an edge, a subgraph, a class or
classDef line of the shapes `callgraph.mermaid` emits, ids are declared once, labels carry no character Mermaid
would parse. The tests run it on every diagram (mermaid-cli renders them too, where installed)."""

from __future__ import annotations

import re

from llm_perf_opt.callgraph.mermaid import MERMAID_ID, MERMAID_RESERVED

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
        if not MERMAID_ID.match(node_id) or node_id.lower() in MERMAID_RESERVED:
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

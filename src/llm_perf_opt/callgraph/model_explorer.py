"""Model Explorer files of a run (`model_explorer/`): the grouped graph and every module call, as
GraphCollection JSON, and one node-data file per metric beside them (`./dev explore RUN_DIR` serves them).

Model Explorer (PyPI `ai-edge-model-explorer`) nests nodes by their `namespace` ("model/sam_model/..."):
each namespace is a collapsible group node, and a group shows the sum of its children's node data. So a
module with children is a namespace, named by its module path, with its attributes
(`groupNodeAttributes`), and the work it does outside its children is one op node inside it,
`Class (self)`, whose figure is its total minus its children's; a module without children is one op
node. Summing any group then gives the module's total, the same figure the grouped graph's node has.

* `graph.json` (`grouped`): one node per grouped node, namespaces from the grouped tree
  (`model/sam_model/blocks.[0-11] ×12/attn`), attributes = class, pattern, for N, parfor, calls,
  parameters, constructor parameters, I/O shapes, each cost and each variant.
* `raw.json` (`raw`): one node per called module (the ungrouped call tree, every module call summed
  per module), namespaces from the module addresses (`model/sam_model/blocks/2/attn`).
* `<metric>.json`: `{graph id: {"name", "results": {node id: {"value"}}, "gradient"}}` for each metric
  table of the run (`callgraph.node_costs`) and `intensity_analytic` (analytic FLOPs / analytic I/O bytes).
  A node without a figure has no entry: Model Explorer shows it uncoloured, never as zero.

Op nodes are chained in call order (the forward's order of first calls), which is the only data flow
the call graph knows.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from pathlib import Path
from typing import Any, Iterable, Mapping

from llm_perf_opt import units
from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.callgraph.grouped import GroupedGraph, GroupNode
from llm_perf_opt.callgraph.heat import BINS, format_value
from llm_perf_opt.callgraph.node_costs import ModuleCosts
from llm_perf_opt.callgraph.schema import ROOT, CallGraph

GROUPED_FILE = "graph.json"
RAW_FILE = "raw.json"
GROUPED_ID = "grouped"
RAW_ID = "raw"
INTENSITY = "intensity_analytic"
# Model Explorer's gradient: stop 0 = the smallest value, 1 = the largest (the heat map's palette)
GRADIENT = [
    {"stop": 0, "bgColor": BINS[-1][1]},
    {"stop": 0.5, "bgColor": BINS[3][1]},
    {"stop": 1, "bgColor": BINS[0][1]},
]


def _attr(key: str, value: Any) -> dict[str, str]:
    return {"key": key, "value": value if isinstance(value, str) else json.dumps(value, default=str)}


def _segment(text: str) -> str:
    return text.replace("/", "|") or "(root)"


# ---------------------------------------------------------------------------------------------- grouped
def _node_attrs(node: GroupNode, grouped: GroupedGraph) -> list[dict[str, str]]:
    attrs = [_attr("class", node.class_name), _attr("pattern", node.pattern or "(root)")]
    if node.for_n > 1:
        attrs.append(_attr("for", node.for_n if node.for_n == node.for_min else f"{node.for_min}-{node.for_n}"))
    if node.parfor and node.parfor > 1:
        attrs.append(_attr("parfor", node.parfor))
    attrs += [_attr("calls", node.calls), _attr("instances", len(node.members)), _attr("parameters", node.params)]
    if node.constructor_params:
        attrs.append(_attr("constructor", node.constructor_params))
    if node.input_shapes:
        attrs.append(_attr("inputs", node.input_shapes))
    if node.output_shapes:
        attrs.append(_attr("outputs", node.output_shapes))
    for metric in grouped.metrics:
        fig = node.costs.get(metric["name"]) or {}
        attrs.append(_attr(metric["label"], _figure_text(fig, metric["kind"])))
    for v in node.variants:
        text = f"x{len(v.members)}: " + ", ".join(
            f"{m['label']} {_figure_text(v.costs.get(m['name']) or {}, m['kind'])}" for m in grouped.metrics[:3]
        )
        attrs.append(_attr(f"variant {v.label}", text))
    for name, reason in grouped.absent_metrics.items():
        attrs.append(_attr(name, f"— ({reason})"))
    return attrs


def _figure_text(fig: Mapping[str, Any], kind: str) -> str:
    if fig.get("total") is None:
        return f"— ({fig.get('reason', 'no figure')})"
    text = format_value(fig["total"], kind)
    if fig.get("share") is not None:
        text += f" ({units.percent(fig['share'])})"
    if fig.get("instances", 1) > 1 and fig.get("mean") is not None:
        text += (
            f"; per instance {format_value(fig['mean'], kind)}, max {format_value(fig['max'], kind)} ({fig['slowest']})"
        )
    if not fig.get("complete", True):
        text += f"; {fig['with_figure']}/{fig['instances']} instances"
    return text


def _namespaces(grouped: GroupedGraph) -> dict[str, str]:
    """node id -> its namespace (the path of group segments down to and including the node)."""
    nodes = {n.id: n for n in grouped.nodes}
    out: dict[str, str] = {}
    for n in grouped.nodes:  # parents first
        if n.parent is None:
            out[n.id] = ""
            continue
        parent = nodes[n.parent]
        rel = (
            n.pattern[len(parent.pattern) + 1 :]
            if parent.parent is not None and n.pattern.startswith(parent.pattern + ".")
            else n.pattern
        )
        seg = _segment(rel + (f" ×{n.for_n}" if n.for_n > 1 else ""))
        out[n.id] = f"{out[parent.id]}/{seg}" if out[parent.id] else seg
    return out


def _self_value(total: float | None, children: Iterable[float | None]) -> float | None:
    kids = list(children)
    if total is None or any(k is None for k in kids):
        return None
    return total - sum(kids)


def grouped_collection(grouped: GroupedGraph, label: str) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """The grouped graph as a GraphCollection, and {metric: {op node id: value}} for the node data."""
    ns = _namespaces(grouped)
    nodes = {n.id: n for n in grouped.nodes}
    op_nodes: list[dict[str, Any]] = []
    group_attrs: dict[str, dict[str, str]] = {}
    values: dict[str, dict[str, float]] = {m["name"]: {} for m in grouped.metrics}
    values[INTENSITY] = {}

    def total(n: GroupNode, metric: str) -> float | None:
        return (n.costs.get(metric) or {}).get("total")

    def add(op_id: str, n: GroupNode, label_text: str, namespace: str, own: bool) -> None:
        op_nodes.append(
            {
                "id": op_id,
                "label": label_text,
                "namespace": namespace,
                "attrs": _node_attrs(n, grouped) if not own else [_attr("self of", n.pattern or "(root)")],
            }
        )
        kids = [nodes[c] for c in n.children]
        for metric in values:
            if metric == INTENSITY:
                continue
            v = total(n, metric)
            if own:
                v = _self_value(v, (total(k, metric) for k in kids))
            if v is not None:
                values[metric][op_id] = v
        fl = values.get("flops_analytic", {}).get(op_id)
        io = values.get("io_bytes_analytic", {}).get(op_id)
        if fl is not None and io:
            values[INTENSITY][op_id] = fl / io

    def walk(n: GroupNode) -> None:
        if n.children:
            group_attrs[ns[n.id] or n.class_name] = {a["key"]: a["value"] for a in _node_attrs(n, grouped)}
            add(f"{n.id}.self", n, f"{n.class_name} (self)", ns[n.id], own=True)
            for c in n.children:
                walk(nodes[c])
        else:
            parent_ns = ns[n.parent] if n.parent else ""
            rel = ns[n.id].rpartition("/")[2]
            add(n.id, n, f"{n.class_name} @ {rel}", parent_ns, own=False)

    walk(nodes[grouped.root])
    _chain(op_nodes)
    graph = {"id": GROUPED_ID, "nodes": op_nodes, "groupNodeAttributes": group_attrs}
    return {"label": label, "graphs": [graph]}, values


def _chain(op_nodes: list[dict[str, Any]]) -> None:
    for prev, node in zip(op_nodes, op_nodes[1:]):
        node["incomingEdges"] = [{"sourceNodeId": prev["id"], "sourceNodeOutputId": "0", "targetNodeInputId": "0"}]


# ---------------------------------------------------------------------------------------------- raw
def raw_collection(
    cg: CallGraph, costs: ModuleCosts | None, label: str
) -> tuple[dict[str, Any], dict[str, dict[str, float]]]:
    """Every called module as a node (namespaces from the addresses), and its per-metric node data."""
    called = [a for a, n in cg.call_counts.items() if n and n > 0]
    order = _call_order(cg, called)
    kids_of = {a: [c for c, n in (cg.edges.get(a) or {}).items() if n and c != a] for a in order}
    op_nodes: list[dict[str, Any]] = []
    tables = costs.metrics if costs is not None else []
    values: dict[str, dict[str, float]] = {t.name: {} for t in tables}
    values[INTENSITY] = {}

    def ns_of(address: str) -> str:
        return address.replace(".", "/")

    for a in order:
        own = bool(kids_of[a])
        op_id = f"{a or 'root'}.self" if own else (a or "root")
        namespace = ns_of(a) if own else ns_of(a.rpartition(".")[0])
        cls = cg.module_types.get(a, "?")
        attrs = [
            _attr("class", cls),
            _attr("address", a or "(root)"),
            _attr("calls", cg.call_counts.get(a, 0)),
            _attr("parameters (own)", cg.param_counts.get(a, 0)),
        ]
        if cg.constructor_params.get(a):
            attrs.append(_attr("constructor", cg.constructor_params[a]))
        for key in ("input_metadata", "output_metadata"):
            meta = getattr(cg, key).get(a)
            if isinstance(meta, Mapping) and meta.get("first") is not None:
                attrs.append(_attr(key.split("_")[0] + "s", meta["first"]))
        for t in tables:
            v = t.values.get(a)
            if own:
                v = _self_value(v, (t.values.get(c) for c in kids_of[a]))
            if v is not None:
                values[t.name][op_id] = v
                attrs.append(_attr(t.label + (" (self)" if own else ""), format_value(v, t.kind)))
        fl, io = values.get("flops_analytic", {}).get(op_id), values.get("io_bytes_analytic", {}).get(op_id)
        if fl is not None and io:
            values[INTENSITY][op_id] = fl / io
        op_nodes.append({"id": op_id, "label": f"{cls} (self)" if own else cls, "namespace": namespace, "attrs": attrs})
    _chain(op_nodes)
    return {"label": label, "graphs": [{"id": RAW_ID, "nodes": op_nodes}]}, values


def _call_order(cg: CallGraph, called: list[str]) -> list[str]:
    """Called modules depth first from the root in the order of the caller edges (call order)."""
    seen: dict[str, None] = OrderedDict()
    stack = [ROOT] if ROOT in called or cg.edges.get(ROOT) else []
    while stack:
        a = stack.pop()
        if a in seen:
            continue
        seen[a] = None
        stack.extend(reversed([c for c, n in (cg.edges.get(a) or {}).items() if n and c != a]))
    for a in called:  # modules the root does not reach
        seen.setdefault(a)
    return list(seen)


# ---------------------------------------------------------------------------------------------- files
def _node_data(name: str, per_graph: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    return {
        gid: {"name": name, "results": {k: {"value": v} for k, v in vals.items()}, "gradient": GRADIENT}
        for gid, vals in per_graph.items()
    }


def write_model_explorer(
    grouped: GroupedGraph, cg: CallGraph | None, costs: ModuleCosts | None, out_dir: str | Path
) -> dict[str, Path]:
    """graph.json (grouped), raw.json (every module call, when `cg` is given) and one node-data file per
    metric; returns {role: path}."""
    out_dir = Path(out_dir)
    label = f"{grouped.model_name or 'model'} ({grouped.costs_stage or 'forward'})"
    written: dict[str, Path] = {}
    g_doc, g_vals = grouped_collection(grouped, f"{label}: grouped")
    written["model_explorer"] = atomic_write_text(out_dir / GROUPED_FILE, json.dumps(g_doc))
    r_vals: dict[str, dict[str, float]] = {}
    if cg is not None:
        r_doc, r_vals = raw_collection(cg, costs, f"{label}: every module call")
        written["model_explorer_raw"] = atomic_write_text(out_dir / RAW_FILE, json.dumps(r_doc))
    labels = {m["name"]: m["label"] for m in grouped.metrics}
    labels[INTENSITY] = "analytic arithmetic intensity (FLOP/B)"
    for metric in list(g_vals):
        per_graph = {GROUPED_ID: g_vals[metric]}
        if metric in r_vals:
            per_graph[RAW_ID] = r_vals[metric]
        if not any(per_graph.values()):
            continue
        written[f"node_data:{metric}"] = atomic_write_text(
            out_dir / f"{metric}.json", json.dumps(_node_data(labels.get(metric, metric), per_graph))
        )
    return written


def node_data_files(out_dir: str | Path) -> list[Path]:
    """The node-data files of a model_explorer/ directory (everything but the graphs)."""
    out_dir = Path(out_dir)
    return sorted(p for p in out_dir.glob("*.json") if p.name not in (GROUPED_FILE, RAW_FILE))

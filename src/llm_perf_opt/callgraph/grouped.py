"""The grouped graph's data model and file: `GroupNode` (a `for N` / `parfor N` node with its variants and
costs), `GroupEdge`, `GroupedGraph` (nodes, edges, runtime checks, notes) and `callgraph.grouped.json` (schema,
versions, loader). The grouping algorithm that builds one from a `CallGraph` is `callgraph.grouping`."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Iterable, Mapping

from llm_perf_opt.artifacts import read_artifact, require, write_artifact
from llm_perf_opt.callgraph.checks import STATUS_MISMATCH, STATUSES
from llm_perf_opt.errors import ArtifactError

GROUPED_SCHEMA = "llm_perf_opt.callgraph.grouped"
GROUPED_VERSION = 2  # 2: variants and costs per node (1 had a `flops` slot, read and dropped)
GROUPED_KNOWN_VERSIONS = (1, 2)
GROUPED_FILENAME = "callgraph.grouped.json"


# ---------------------------------------------------------------------------------------------- nodes
@dataclass
class GroupVariant:
    """The members of a node that are alike in everything, constructor parameters included (SAM's
    global-attention blocks inside `Block @ sam_model.blocks.[0-11] for 12`)."""

    label: str  # the parameters that tell this variant from the node's others: "window_size=0"
    members: list[str]  # module addresses, in the node's order
    differs: dict[str, Any] = field(default_factory=dict)  # those parameters: {"window_size": 0}
    params: int = 0  # parameters over the static subtree of every member
    signature: str = ""
    costs: dict[str, Any] = field(default_factory=dict)  # filled by callgraph.node_costs


@dataclass
class GroupNode:
    """One node of the grouped graph: one or more modules with the same class and structure."""

    id: str
    class_name: str
    pattern: str  # exact address pattern: "model.sam_model.blocks.[0-1,3-4]"
    members: list[str]  # every module address, in call order
    member_calls: list[int] = field(default_factory=list)  # calls of each member from the parent's members
    parent: str | None = None
    children: list[str] = field(default_factory=list)
    depth: int = 0
    template: str = ""  # relative to the parent's members: "blocks.*", "mlp", "" for the root
    indices: list[list[int]] = field(default_factory=list)  # per varying component: sorted distinct indices
    for_n: int = 1  # distinct members per parent member (the largest; for_min the smallest)
    for_min: int = 1
    static_n: int | None = None  # static candidates of the stack family per parent member (64 experts)
    sparse: bool = False  # only some static candidates were called (value-dependent routing)
    value_dependent: bool = False  # sparse, or under a sparse node
    parfor: int | None = None  # uniform integer calls per member per parent call; None when not uniform
    calls: int = 0  # calls of the members from the parent's members (the root: its own calls)
    parent_calls: int = 0  # calls of the parent's members
    calls_per_parent_call: list[float] = field(default_factory=list)  # [min, max] over members
    params: int = 0  # parameters over the static subtree of every member
    ops_self: int = 0  # tensor ops executed directly in the members
    ops_total: int = 0  # ... and in their static subtrees
    activation_bytes: int = 0  # bytes of the members' outputs, over all their calls
    constructor_params: dict[str, Any] = field(default_factory=dict)  # those equal across all members
    varying_params: list[str] = field(default_factory=list)  # constructor params that differ (layer_idx)
    input_shapes: list[Any] = field(default_factory=list)  # first call of the first member
    output_shapes: list[Any] = field(default_factory=list)
    signature: str = ""  # short hash of the shape (what the members share)
    variants: list[GroupVariant] = field(default_factory=list)  # when the members differ in parameters
    costs: dict[str, Any] = field(default_factory=dict)  # metric -> figures, filled by callgraph.node_costs
    # what a model's runtime check knows better than the graph (e.g. experts hit, from a routing record):
    # "bracket" replaces the text of the node's own index bracket in labels, "line" is an extra label line
    annotation: dict[str, str] = field(default_factory=dict)

    @property
    def is_stack(self) -> bool:
        return self.for_n > 1

    @property
    def name(self) -> str:
        return self.class_name if self.pattern in ("", "(root)") else f"{self.class_name} @ {self.pattern}"


@dataclass
class GroupEdge:
    parent: str
    child: str
    calls: int
    parfor: int | None


@dataclass
class GroupedGraph:
    nodes: list[GroupNode]
    edges: list[GroupEdge]
    root: str
    checks: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    model_name: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    metrics: list[dict[str, Any]] = field(default_factory=list)  # the cost metrics on the nodes (node_costs)
    absent_metrics: dict[str, str] = field(default_factory=dict)  # metric -> why the run has no figures
    costs_stage: str = ""  # the forward the costs describe ("prefill")

    # ------------------------------------------------------------------ queries
    def node(self, node_id: str) -> GroupNode:
        return self._index()[node_id]

    def _index(self) -> dict[str, GroupNode]:
        return {n.id: n for n in self.nodes}

    def find(self, pattern: str | None = None, class_name: str | None = None) -> list[GroupNode]:
        """Nodes whose pattern equals `pattern` (or ends with '.' + it) and/or whose class is `class_name`."""
        out = []
        for n in self.nodes:
            if pattern is not None and not (n.pattern == pattern or n.pattern.endswith("." + pattern)):
                continue
            if class_name is not None and n.class_name != class_name:
                continue
            out.append(n)
        return out

    def descendants(self, node_id: str) -> list[GroupNode]:
        idx = self._index()
        out, stack = [], list(idx[node_id].children)
        while stack:
            n = idx[stack.pop(0)]
            out.append(n)
            stack[:0] = n.children
        return out

    def stacks(self) -> list[GroupNode]:
        return [n for n in self.nodes if n.is_stack]

    def summary(self) -> dict[str, Any]:
        """The few figures a run summary wants: node counts, stacks, parfor nodes, check statuses."""
        statuses = [c["status"] for c in self.checks]
        return {
            "nodes": len(self.nodes),
            "modules_called": self.source.get("modules_called"),
            "stacks": len(self.stacks()),
            "parfor_nodes": sum(1 for n in self.nodes if (n.parfor or 1) > 1),
            "max_depth": max((n.depth for n in self.nodes), default=0),
            "checks": {s: statuses.count(s) for s in STATUSES},
            "mismatches": [c for c in self.checks if c["status"] == STATUS_MISMATCH],
        }

    # ------------------------------------------------------------------ files
    def to_dict(self) -> dict[str, Any]:
        return {
            "model_name": self.model_name,
            "root": self.root,
            "source": self.source,
            "nodes": [asdict(n) for n in self.nodes],
            "edges": [asdict(e) for e in self.edges],
            "checks": self.checks,
            "notes": self.notes,
            "metrics": self.metrics,
            "absent_metrics": self.absent_metrics,
            "costs_stage": self.costs_stage,
        }

    def save(self, path: str | Path, config: Any = None) -> Path:
        return write_artifact(path, GROUPED_SCHEMA, GROUPED_VERSION, self.to_dict(), config=config)


def grouped_from_dict(data: Mapping[str, Any], source: str = "grouped") -> GroupedGraph:
    for key in ("nodes", "edges", "root"):
        if key not in data:
            raise ArtifactError(f"{source}: grouped graph lacks required field '{key}'")
    node_fields = {f.name for f in fields(GroupNode)}
    required = ("id", "class_name", "pattern", "members")
    nodes = []
    for i, raw in enumerate(data["nodes"]):
        require(raw, required, f"nodes[{i}]", source)
        kwargs = {k: v for k, v in raw.items() if k in node_fields}
        try:
            kwargs["variants"] = [
                v if isinstance(v, GroupVariant) else GroupVariant(**v) for v in kwargs.get("variants") or []
            ]
        except TypeError:
            raise ArtifactError(f"{source}: nodes[{i}].variants must be objects with 'label' and 'members'") from None
        nodes.append(GroupNode(**kwargs))
    edges = []
    for i, raw in enumerate(data["edges"]):
        try:
            edges.append(
                GroupEdge(parent=raw["parent"], child=raw["child"], calls=raw.get("calls", 0), parfor=raw.get("parfor"))
            )
        except (KeyError, TypeError):
            raise ArtifactError(f"{source}: edges[{i}] needs 'parent' and 'child'") from None
    ids = {n.id for n in nodes}
    if data["root"] not in ids:
        raise ArtifactError(f"{source}: root {data['root']!r} is not a node id")
    return GroupedGraph(
        nodes=nodes,
        edges=edges,
        root=data["root"],
        checks=list(data.get("checks") or []),
        notes=list(data.get("notes") or []),
        model_name=data.get("model_name", ""),
        source=dict(data.get("source") or {}),
        metrics=list(data.get("metrics") or []),
        absent_metrics=dict(data.get("absent_metrics") or {}),
        costs_stage=str(data.get("costs_stage") or ""),
    )


def load_grouped_json(path: str | Path) -> GroupedGraph:
    _, data = read_artifact(path, GROUPED_SCHEMA, GROUPED_KNOWN_VERSIONS, required=("nodes", "edges", "root"))
    return grouped_from_dict(data, str(path))


def compact_ranges(indices: Iterable[int]) -> str:
    """[0, 1, 2, 5, 7, 8] -> "0-2,5,7-8"."""
    xs = sorted(set(int(i) for i in indices))
    parts: list[str] = []
    i = 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        parts.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(parts)


def count_ranges(indices: Iterable[int]) -> int:
    return len(compact_ranges(indices).split(",")) if indices else 0

"""Costs on the grouped graph: per-module metric tables, attached to every grouped node and variant.

A `MetricTable` is one figure per module address (`named_modules()` paths, the root is ""), summed over
the module's calls and covering its subtree (inclusive): analytic FLOPs or bytes, measured FLOPs,
activation bytes observed by TorchLens, measured or predicted time. It says what it is (`label`,
`unit`, `kind`) and where it comes from (`source`: the convention, or how it was measured). The model's
package builds the tables (for DeepSeek-OCR: `trace.graph`); this module only knows tables of
numbers by address, so it stays model-agnostic.

`attach_costs(grouped, costs)` fills `GroupNode.costs[metric]` (and each variant's) with the figures of
the node's members (`member_figures`): the sum over the instances, the mean per instance and per call,
the smallest and largest instance and which one is slowest, and the share of the run's total. An
instance without a figure is listed in `missing`, never counted as zero; a node none of whose members
has a figure has `total: None` and says why. A metric that was not produced at all (the profile stage
did not run) is listed in `ModuleCosts.absent` with the reason, and no node carries it.

`ModuleCosts` is the artifact `module_costs.json` (schema `llm_perf_opt.module_costs`, version 1).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from llm_perf_opt.artifacts import read_artifact, require, write_artifact
from llm_perf_opt.callgraph.grouped import GroupedGraph, GroupNode
from llm_perf_opt.callgraph.schema import ROOT
from llm_perf_opt.errors import ArtifactError

MODULE_COSTS_SCHEMA = "llm_perf_opt.module_costs"
MODULE_COSTS_VERSION = 1
MODULE_COSTS_KNOWN_VERSIONS = (1,)
MODULE_COSTS_FILE = "module_costs.json"
KINDS = ("flops", "bytes", "time", "count")

# What `render.color_by` means: the metrics it may colour by, the first present wins.
COLOR_BY: dict[str, tuple[str, ...]] = {
    "flops": ("flops_measured", "flops_analytic"),
    "time": ("time_measured", "time_predicted"),
    "bytes": ("activation_bytes_observed", "io_bytes_analytic"),
    "params": ("params",),
    "delta_time": ("delta_time",),  # measured time of run B minus run A, set by report.compare on B's graph
}


@dataclass
class MetricTable:
    """One figure per module address, inclusive of the module's subtree and summed over its calls."""

    name: str  # "flops_measured"
    label: str  # "measured FLOPs"
    unit: str  # "FLOP", "B", "s"
    kind: str  # one of KINDS: how to format it and what `color_by` it serves
    source: str  # the convention or the measurement method
    values: dict[str, float]  # address -> figure
    total: float | None = None  # the run's total, for shares (default: the root's figure)
    notes: dict[str, str] = field(default_factory=dict)  # address -> caveat about its figure

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ArtifactError(f"metric {self.name!r}: kind {self.kind!r} is not one of {KINDS}")
        if self.total is None and ROOT in self.values:
            self.total = self.values[ROOT]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "label": self.label,
            "unit": self.unit,
            "kind": self.kind,
            "source": self.source,
            "total": self.total,
            "values": dict(self.values),
            "notes": dict(self.notes),
        }

    def meta(self) -> dict[str, Any]:
        """What a grouped graph keeps of the table: everything but the values."""
        return {
            "name": self.name,
            "label": self.label,
            "unit": self.unit,
            "kind": self.kind,
            "source": self.source,
            "total": self.total,
        }


@dataclass
class ModuleCosts:
    """Every metric table of one run, and the metrics that could not be produced (with the reason)."""

    stage: str  # the forward the tables describe ("prefill")
    metrics: list[MetricTable]
    absent: dict[str, str] = field(default_factory=dict)  # metric name -> why there is no table

    def get(self, name: str) -> MetricTable | None:
        return next((m for m in self.metrics if m.name == name), None)

    def names(self) -> list[str]:
        return [m.name for m in self.metrics]

    def to_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "metrics": [m.to_dict() for m in self.metrics], "absent": dict(self.absent)}

    def save(self, path: str | Path, config: Any = None) -> Path:
        return write_artifact(path, MODULE_COSTS_SCHEMA, MODULE_COSTS_VERSION, self.to_dict(), config=config)


_METRIC_FIELDS = ("name", "label", "unit", "kind", "source", "values")


def module_costs_from_dict(data: Mapping[str, Any], source: str = MODULE_COSTS_FILE) -> ModuleCosts:
    if not isinstance(data.get("metrics"), list):
        raise ArtifactError(f"{source}: field 'metrics' must be a list")
    metrics = []
    for i, raw in enumerate(data["metrics"]):
        require(raw, _METRIC_FIELDS, f"metrics[{i}]", source)
        if not isinstance(raw["values"], Mapping):
            raise ArtifactError(f"{source}: metrics[{i}].values must be an object")
        metrics.append(
            MetricTable(
                name=raw["name"],
                label=raw["label"],
                unit=raw["unit"],
                kind=raw["kind"],
                source=raw["source"],
                values={str(k): v for k, v in raw["values"].items()},
                total=raw.get("total"),
                notes=dict(raw.get("notes") or {}),
            )
        )
    return ModuleCosts(stage=str(data.get("stage", "")), metrics=metrics, absent=dict(data.get("absent") or {}))


def load_module_costs(path: str | Path) -> ModuleCosts:
    """Read `module_costs.json`; unknown versions and missing fields are refused by name."""
    _, data = read_artifact(path, MODULE_COSTS_SCHEMA, MODULE_COSTS_KNOWN_VERSIONS, required=("stage", "metrics"))
    return module_costs_from_dict(data, str(path))


# ---------------------------------------------------------------------------------------------- helpers
def subtree_sums(self_values: Mapping[str, float]) -> dict[str, float]:
    """Inclusive figures from per-module (self) ones: each address gets its own value plus every
    descendant's (by address prefix; the root "" gets everything)."""
    out: dict[str, float] = {}
    for addr, v in self_values.items():
        if v is None:
            continue
        comps = addr.split(".") if addr else []
        for k in range(len(comps) + 1):
            anc = ".".join(comps[:k])
            out[anc] = out.get(anc, 0) + v
    return out


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def member_figures(
    values: Mapping[str, float],
    members: Sequence[str],
    calls: int | None = None,
    total: float | None = None,
    notes: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The figures of a group of instances (`members`, module addresses) in one table: `total` (sum over
    the instances that have a figure), `mean` per instance, `per_call` (the total over `calls`), `min`,
    `max`, `slowest` / `fastest` instance (the largest / smallest; the first in order on a tie),
    `spread` (max / min), `share` of the run's `total`, the `missing` instances and `complete`."""
    distinct = list(OrderedDict.fromkeys(members))
    per = {m: float(values[m]) for m in distinct if m in values and _finite(values[m])}
    missing = [m for m in distinct if m not in per]
    out: dict[str, Any] = {
        "instances": len(distinct),
        "with_figure": len(per),
        "complete": not missing,
        "missing": missing,
    }
    caveats = sorted({notes[m] for m in distinct if notes and m in notes})
    if caveats:
        out["notes"] = caveats
    if not per:
        out.update(total=None, reason="no figure for any instance")
        return out
    order = {m: i for i, m in enumerate(distinct)}
    s = sum(per.values())
    lo, hi = min(per.values()), max(per.values())
    out.update(
        total=s,
        mean=s / len(per),
        min=lo,
        max=hi,
        slowest=max(per, key=lambda m: (per[m], -order[m])),
        fastest=min(per, key=lambda m: (per[m], order[m])),
        spread=(hi / lo) if lo > 0 else None,
        per_call=(s / calls) if calls else None,
        share=(s / total) if total else None,
        per_member=per,
    )
    return out


def family_figures(values: Mapping[str, float], node: GroupNode, total: float | None) -> dict[str, Any] | None:
    """A stack whose instances have no figure of their own but whose containers do (a cost model that
    costs MoE experts together at `...mlp.experts`): the node's total is the containers' sum when the
    node holds every called member of those containers (a sparse family, or all static candidates);
    there are no per-instance figures. None when that does not apply."""
    if not node.template.endswith("*") or not (node.sparse or (node.static_n and node.for_n == node.static_n)):
        return None
    containers = list(OrderedDict.fromkeys(m.rpartition(".")[0] for m in node.members))
    if not containers or not all(c in values and _finite(values[c]) for c in containers):
        return None
    s = sum(float(values[c]) for c in containers)
    return {
        "instances": len(OrderedDict.fromkeys(node.members)),
        "with_figure": 0,
        "complete": True,
        "missing": [],
        "total": s,
        "share": (s / total) if total else None,
        "per_call": None,
        "containers": containers,
        "notes": [
            f"costed as a whole at {', '.join(containers[:3])}{' …' if len(containers) > 3 else ''} "
            "(no figure per instance)"
        ],
    }


# ---------------------------------------------------------------------------------------------- attach
def attach_costs(grouped: GroupedGraph, costs: ModuleCosts) -> GroupedGraph:
    """Every metric of `costs` on every node and variant (in place); the graph keeps the metrics'
    descriptions (`grouped.metrics`) and the absent ones with their reasons (`grouped.absent_metrics`)."""
    for node in grouped.nodes:
        node.costs = {}
        for v in node.variants:
            v.costs = {}
    for table in costs.metrics:
        for node in grouped.nodes:
            fig = member_figures(table.values, node.members, node.calls, table.total, table.notes)
            if fig["total"] is None:
                fig = family_figures(table.values, node, table.total) or fig
            node.costs[table.name] = fig
            for v in node.variants:
                calls = _variant_calls(node, v.members)
                v.costs[table.name] = member_figures(table.values, v.members, calls, table.total, table.notes)
    grouped.metrics = [t.meta() for t in costs.metrics]
    grouped.absent_metrics = dict(costs.absent)
    grouped.costs_stage = costs.stage
    return grouped


def _variant_calls(node: GroupNode, members: Iterable[str]) -> int | None:
    if len(node.member_calls) != len(node.members):
        return None
    calls = dict(zip(node.members, node.member_calls))
    wanted = set(members)
    return sum(n for m, n in calls.items() if m in wanted) or None


def color_metric(grouped: GroupedGraph, color_by: str) -> dict[str, Any] | None:
    """The metric description `color_by` resolves to on this graph (the first of `COLOR_BY[color_by]`
    it carries), or None when it carries none of them."""
    if color_by == "params":
        return {
            "name": "params",
            "label": "parameters",
            "unit": "",
            "kind": "count",
            "source": "parameters over the static subtree of every member",
            "total": grouped.node(grouped.root).params,
        }
    if color_by not in COLOR_BY:
        raise ArtifactError(f"color_by={color_by!r}: choose one of {', '.join(COLOR_BY)}")
    have = {m["name"]: m for m in grouped.metrics}
    for name in COLOR_BY[color_by]:
        if name in have:
            return have[name]
    return None


def node_figure(grouped: GroupedGraph, node: GroupNode, metric: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """One node's figures for a metric description (as `color_metric` gives it)."""
    if metric is None:
        return None
    if metric["name"] == "params":
        total = grouped.node(grouped.root).params or None
        return {"total": node.params, "share": (node.params / total) if total else None, "complete": True}
    return node.costs.get(metric["name"])

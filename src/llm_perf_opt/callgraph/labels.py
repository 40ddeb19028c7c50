"""What a grouped node says on a drawing, whatever the format: its display pattern (`[0-11]`, `[k of K]` for long
index lists), kind (root, stack, parfor), label lines (`Class @ pattern for N`, the metric line, variants), its
tooltip (pattern, constructor parameters, I/O shapes, every cost) and the nodes shown at a `max_depth`. DOT
(`callgraph.dot`) and Mermaid (`callgraph.mermaid`) both draw from here."""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from llm_perf_opt import units
from llm_perf_opt.callgraph.grouped import GroupedGraph, GroupNode, count_ranges
from llm_perf_opt.callgraph.heat import Heat, format_value
from llm_perf_opt.errors import ArtifactError

DEFAULT_COLOR_BY = "flops"
MAX_RANGES = 4  # an index list with more ranges than this prints as "[k of K]"


FILL = {"root": "#e5e7eb", "stack": "#dbeafe", "parfor": "#fde68a", "both": "#ddd6fe", "plain": "#ffffff"}


STROKE = {"root": "#374151", "stack": "#1e40af", "parfor": "#92400e", "both": "#5b21b6", "plain": "#6b7280"}


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


def node_label_lines(
    node: GroupNode, folded: int = 0, max_ranges: int = MAX_RANGES, pattern: str | None = None, heat: Heat | None = None
) -> list[str]:
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
        lines.append(
            heat.variant_line(node, i) if heat is not None and heat.active else f"◦ {v.label} ×{len(v.members)}"
        )
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
    lines.append(
        f"members {members}" + (f" (for {for_text(node)[4:]} of {node.static_n} static)" if node.static_n else "")
    )
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
    lines.append(
        f"parameters {node.params:,}; ops {node.ops_self:,} self / {node.ops_total:,} subtree; "
        f"outputs {node.activation_bytes:,} B"
    )
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
            text += (
                f"; per instance {format_value(fig['mean'], kind)} (min {format_value(fig['min'], kind)}, "
                f"max {format_value(fig['max'], kind)}, slowest {fig['slowest']})"
            )
        if not fig.get("complete", True):
            text += f"; {fig['with_figure']} of {fig['instances']} instances have a figure"
        if fig.get("notes"):
            text += f" [{'; '.join(fig['notes'])}]"
        out.append(text)
    if not brief:
        for name, reason in grouped.absent_metrics.items():
            out.append(f"{name}: — ({reason})")
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

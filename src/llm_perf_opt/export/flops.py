"""FLOPs on an exported graph, from torch's own formulas: one record per op node.

`torch.utils.flop_counter.flop_registry` maps an aten op to its formula (the one `FlopCounterMode`
applies at run time); here it is applied to each `call_function` node of the core-ATen graph with the
shapes `torch.export` recorded in `node.meta["val"]` (fake tensors), so nothing runs. The registry is
extended exactly as `llm_perf_opt.measure` extends it for counting (the SDPA backend ops torch has no
formula for), so the graph and the eager count use the same formulas. A node without a formula gets
`flops=None`; a matmul-like one among them (`measure.is_matmul_like`) is FLOPs that would be lost and
is reported as such, never counted as zero silently.

Each record also carries what the node came from: the innermost module (`nn_module_stack`), the
export-IR op it was decomposed from (`from_node`), and the torch-level call that produced it
(`torch_fn`), which is the level TorchLens records.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional

import torch
from torch.fx import GraphModule, Node
from torch.fx.node import map_aggregate

from llm_perf_opt.measure import extra_formulas, is_matmul_like

NOT_OPS = (operator.getitem,)  # tuple indexing nodes: no computation


@dataclass(frozen=True)
class GraphOp:
    """One op node of an exported graph."""

    node: str
    op: str  # "aten.addmm.default"
    input_shapes: tuple  # per input: a shape (tuple of ints), a tuple of shapes (tensor lists), or None
    dtypes: tuple[str, ...]  # dtypes of the tensor inputs
    flops: Optional[int]  # torch's formula on these shapes; None: the op has no formula
    modules: tuple[str, ...]  # module paths on the stack, outermost first ("" = the exported root)
    source: str  # the export-IR op this node was decomposed from (itself when not decomposed)
    source_node: str  # the name of that export-IR node
    torch_fn: str  # the torch-level function that produced it ("linear", "softmax"), "" when unknown
    torch_call: str  # id of that torch-level call in the trace ("linear_3"), "" when unknown

    @property
    def module(self) -> str:
        """The innermost module."""
        return self.modules[-1] if self.modules else ""

    @property
    def packet(self) -> str:
        """The op without its overload: "aten.addmm"."""
        head, _, tail = self.op.rpartition(".")
        return head if self.op.startswith("aten.") and head.count(".") >= 1 else self.op

    @property
    def matmul_like(self) -> bool:
        return is_matmul_like(self.op)


def formulas() -> dict[Any, Any]:
    """torch's FLOP registry plus the formulas `llm_perf_opt.measure` adds for SDPA backend ops."""
    from torch.utils.flop_counter import flop_registry

    return {**flop_registry, **extra_formulas()}


def _val(arg: Any) -> Any:
    return map_aggregate(arg, lambda a: a.meta.get("val") if isinstance(a, Node) else a)


def _shape(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return tuple(int(d) for d in value.shape)
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
        return tuple(_shape(v) for v in value)
    return None


def _dtypes(values: Any) -> tuple[str, ...]:
    out: list[str] = []
    for v in values:
        items = v if isinstance(v, (list, tuple)) else (v,)
        for item in items:
            if isinstance(item, torch.Tensor):
                name = str(item.dtype).removeprefix("torch.")
                if name not in out:
                    out.append(name)
    return tuple(out)


def _torch_fn(node: Node) -> tuple[str, str]:
    meta = node.meta.get("torch_fn")
    if not meta or len(meta) < 2:
        return "", ""
    call, qualified = str(meta[0]), str(meta[1])
    return qualified.rpartition(".")[2], call


def _source(node: Node, op: str) -> tuple[str, str]:
    """(export-IR op, export-IR node name) this core node was made from (`from_node` provenance)."""
    origin = node.meta.get("from_node")
    if origin:
        target = getattr(origin[0], "target", None)
        if target:
            return str(target), str(getattr(origin[0], "name", ""))
    return op, node.name


def _modules(node: Node, relative: Callable[[str], Optional[str]]) -> tuple[str, ...]:
    stack = node.meta.get("nn_module_stack") or {}
    paths = (relative(str(path)) for path, _cls in stack.values())
    return tuple(p for p in paths if p is not None)


def op_nodes(graph_module: GraphModule) -> Iterator[Node]:
    """Every call_function node that computes something, nested graphs (higher-order op bodies) included."""
    for gm in graph_module.modules():
        if not isinstance(gm, GraphModule):
            continue
        for node in gm.graph.nodes:
            if node.op == "call_function" and node.target not in NOT_OPS:
                yield node


def node_flops(node: Node, registry: dict[Any, Any]) -> Optional[int]:
    """FLOPs of one node by torch's formula; None when its op has none."""
    packet = getattr(node.target, "overloadpacket", node.target)
    formula = registry.get(packet)
    if formula is None:
        return None
    out = node.meta.get("val")
    return int(formula(*_val(node.args), **_val(node.kwargs), out_val=out))


def graph_ops(program: Any, relative: Callable[[str], Optional[str]] = lambda p: p) -> list[GraphOp]:
    """The op records of an ExportedProgram (core ATen expected), in graph order; `relative` maps module
    paths of the exported module to paths relative to the submodule (None: a wrapper's own path)."""
    registry = formulas()
    ops: list[GraphOp] = []
    for node in op_nodes(program.graph_module):
        op = str(node.target)
        args = _val(node.args)
        inputs = list(args) + list(_val(node.kwargs).values())
        fn, call = _torch_fn(node)
        source, source_node = _source(node, op)
        ops.append(
            GraphOp(
                node=node.name,
                op=op,
                input_shapes=tuple(_shape(a) for a in args),
                dtypes=_dtypes(inputs),
                flops=node_flops(node, registry),
                modules=_modules(node, relative),
                source=source,
                source_node=source_node,
                torch_fn=fn,
                torch_call=call,
            )
        )
    return ops


def total_flops(ops: list[GraphOp]) -> int:
    return sum(o.flops or 0 for o in ops)


def flops_by_module(ops: list[GraphOp]) -> dict[str, int]:
    """FLOPs per module path, each op counted in every module on its stack ("" = the whole graph)."""
    out: dict[str, int] = {"": 0}
    for o in ops:
        if not o.flops:
            continue
        out[""] += o.flops
        for path in dict.fromkeys(o.modules):
            if path:
                out[path] = out.get(path, 0) + o.flops
    return out


def flops_by_op(ops: list[GraphOp]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in ops:
        if o.flops:
            out[o.packet] = out.get(o.packet, 0) + o.flops
    return out


def matmul_like_without_formula(ops: list[GraphOp]) -> dict[str, int]:
    out: dict[str, int] = {}
    for o in ops:
        if o.flops is None and o.matmul_like:
            out[o.op] = out.get(o.op, 0) + 1
    return out

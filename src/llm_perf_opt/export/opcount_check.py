"""Op counts of one exported call against TorchLens, and the ops export decomposes.

TorchLens records tensor operations at the torch-function level (`linear`, `__add__`,
`scaled_dot_product_attention`), one per call (one per output for a multi-output function), in the
innermost module; the export-IR graph has one or more aten nodes per such call, each tagged with the call
that made it (`node.meta["torch_fn"]`). Per module, TorchLens' count is set against the graph's torch
calls counted the same way, function by function when the TorchLens trace is at hand, and every
difference left is explained (or reported as not reconciled). Lowering to core ATen then decomposes
some ops (`decompositions`) and drops no-ops (`removed_by_decomposition`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

from llm_perf_opt.export.flops import GraphOp, op_nodes
from llm_perf_opt.export.moe import REMEDY_GUARD_OPS

BOOKKEEPING_OPS = ("aten._assert_tensor_metadata.default",)  # export's check of a `.to()` call's result


def normalise_function(name: str) -> str:
    """`__mul__` / `__rmul__` -> mul, `__iadd__` -> add_, `__getitem__` -> getitem; others unchanged."""
    if name.startswith("__") and name.endswith("__"):
        core = name[2:-2]
        if core.startswith("i") and core[1:] in ("add", "sub", "mul", "truediv", "and", "or"):
            return core[1:].replace("truediv", "div") + "_"
        if core.startswith("r") and core[1:] in ("add", "sub", "mul", "truediv", "matmul", "pow"):
            core = core[1:]
        return {"truediv": "div", "floordiv": "floor_divide"}.get(core, core)
    return name


def _is_higher_order(target: Any) -> bool:
    from torch._ops import HigherOrderOperator

    return isinstance(target, HigherOrderOperator)


def _outputs(node: Any) -> int:
    val = node.meta.get("val")
    if isinstance(val, (list, tuple)):
        return max(1, sum(1 for v in val if hasattr(v, "shape")))
    return 1


@dataclass
class TorchCalls:
    """The torch-level calls of an export-IR graph, per innermost module, as TorchLens would count them."""

    by_module: dict[str, dict[str, int]]  # module -> {function: ops}
    higher_order: dict[str, int]  # higher-order op wrappers (not ops; their bodies are counted)
    bookkeeping: int  # _assert_tensor_metadata nodes (not ops)
    multi_output: dict[str, int]  # function -> extra ops from its outputs beyond the first
    parameter_noops: dict[str, int]  # no-op conversions of a parameter (return the parameter itself)

    def module_total(self, path: str) -> int:
        return sum(self.by_module.get(path, {}).values())


NOOP_CANDIDATES = (
    "aten.to.dtype",
    "aten.to.dtype_layout",
    "aten.to.device",
    "aten.contiguous.default",
    "aten.type_as.default",
)


def _parameter_noop(node: Any, weights: set[str]) -> bool:
    """A conversion whose input is a parameter or buffer and whose output has its dtype and shape: torch
    returns the parameter itself, which TorchLens does not record as a new tensor."""
    if str(node.target) not in NOOP_CANDIDATES or not node.args:
        return False
    src = node.args[0]
    if getattr(src, "op", None) != "placeholder" or src.name not in weights:
        return False
    a, b = src.meta.get("val"), node.meta.get("val")
    return a is not None and b is not None and a.dtype == b.dtype and tuple(a.shape) == tuple(b.shape)


def torch_calls(programs: Iterable[Any], relative: Any = lambda p: p) -> TorchCalls:
    """Count torch-level calls in export-IR graphs (nested higher-order op bodies included): one per distinct
    `torch_fn` call id, or one per output for a multi-output function (TorchLens records each output)."""
    seen: dict[tuple[int, int, str, str], tuple[str, str, int]] = {}
    higher: Counter = Counter()
    noops: Counter = Counter()
    bookkeeping = 0
    for index, program in enumerate(programs):
        sig = program.graph_signature
        weights = set(sig.inputs_to_parameters) | set(sig.inputs_to_buffers)
        for node in op_nodes(program.graph_module):
            if _is_higher_order(node.target):
                higher[node.target.name()] += 1
                continue
            if str(node.target) in BOOKKEEPING_OPS:
                bookkeeping += 1
                continue
            if _parameter_noop(node, weights):
                noops[str(node.target)] += 1
                continue
            meta = node.meta.get("torch_fn") or (f"<node {node.name}>", str(node.target))
            stack = node.meta.get("nn_module_stack") or {}
            module = relative(str(list(stack.values())[-1][0])) if stack else ""
            module = module or ""  # a wrapper's own ops count in the submodule's root
            # call ids restart in higher-order op bodies, and one id can name two functions
            key = (index, id(node.graph), str(meta[0]), str(meta[1]))
            fn = normalise_function(str(meta[1]).rpartition(".")[2])
            prev = seen.get(key)
            seen[key] = (module, fn, max(_outputs(node), prev[2] if prev else 1))
    by_module: dict[str, dict[str, int]] = {}
    multi: Counter = Counter()
    for module, fn, n in seen.values():
        fns = by_module.setdefault(module, {})
        fns[fn] = fns.get(fn, 0) + n
        if n > 1:
            multi[fn] += n - 1
    return TorchCalls(
        by_module={m: dict(sorted(f.items())) for m, f in by_module.items()},
        higher_order=dict(higher),
        bookkeeping=bookkeeping,
        multi_output=dict(multi),
        parameter_noops=dict(noops),
    )


def decompositions(ops: Iterable[GraphOp]) -> dict[str, dict[str, int]]:
    """{export-IR op: {core-ATen op: nodes}} for every export-IR op that does not survive as itself."""
    out: dict[str, Counter] = {}
    for o in ops:
        out.setdefault(o.source, Counter())[o.op] += 1
    return {src: dict(c) for src, c in sorted(out.items()) if set(c) != {src}}


def removed_by_decomposition(program: Any, ops: Iterable[GraphOp]) -> dict[str, int]:
    """Export-IR ops none of whose nodes left a node in core ATen (no-ops: `.to()` to the same dtype,
    `contiguous` of a contiguous tensor, `dropout` in eval, `alias`), by op."""
    sources = {o.source_node for o in ops}
    gone: Counter = Counter()
    for node in op_nodes(program.graph_module):
        if node.name not in sources and not _is_higher_order(node.target):
            gone[str(node.target)] += 1
    return dict(sorted(gone.items()))


def export_ir_counts(program: Any) -> dict[str, int]:
    return dict(Counter(str(n.target) for n in op_nodes(program.graph_module)))


# Functions that return their input unchanged when there is nothing to do (same dtype, already contiguous):
# TorchLens still records the call, export records no node.
NOOP_FUNCTIONS = ("contiguous", "to", "float", "double", "half", "bfloat16", "long", "int", "type", "type_as")
# What the real MoE forward does that the fixed-routing graph does not, and the other way round.
MOE_HOST_FUNCTIONS = ("cpu", "numpy", "tolist", "item")


def torchlens_functions(trace: Any) -> dict[str, dict[str, int]]:
    """{module address: {function: ops}} of a TorchLens trace, by the call graph's rules for
    `op_call_counts` (boundary placeholders left out; an op belongs to its innermost module call; a tensor
    TorchLens did not see being made counts as one `<opaque>` op of the caller of the call it entered)."""

    def address(call_label: Optional[str]) -> str:  # "model.layers.0:2" -> "model.layers.0"; root "self:1" -> ""
        head = (call_label or "").rpartition(":")[0]
        return "" if head in ("", "self") else head

    parent_of_call = {call.call_label: call.call_parent_label for call in trace.module_calls}
    out: dict[str, Counter] = {}
    for op in trace.layer_list:
        if op.is_input or op.is_output or op.is_buffer:
            continue
        label = op.module
        fn = normalise_function(str(op.func_name))
        if op.func_name == "none":
            if not op.is_internal_source:
                continue
            label = parent_of_call.get(label) if label is not None else None
            fn = "<opaque>"
        out.setdefault(address(label), Counter())[fn] += 1
    return {a: dict(sorted(c.items())) for a, c in out.items()}


def _explain(diffs: Mapping[str, int], moe_remedy: bool, remedy_module: bool) -> tuple[dict[str, str], dict[str, int]]:
    """(explained {function: why}, unexplained {function: TorchLens minus graph}). `remedy_module`: the
    row is the MoE module whose own ops the fixed-routing forward replaces."""
    explained: dict[str, str] = {}
    unexplained: dict[str, int] = {}
    for fn, d in diffs.items():
        if d > 0 and fn in NOOP_FUNCTIONS:
            explained[fn] = f"{d} call(s) returned the input unchanged (nothing to convert): export records no node"
        elif moe_remedy and d < 0 and fn in REMEDY_GUARD_OPS:
            explained[fn] = "the fixed-routing remedy's guard (routing equals the recorded one)"
        elif moe_remedy and d > 0 and fn in MOE_HOST_FUNCTIONS:
            explained[fn] = (
                "the real MoE forward copies the tokens per expert to the host; the fixed-routing "
                "graph has them as constants"
            )
        elif remedy_module:
            explained[fn] = (
                "the MoE module's own ops are the fixed-routing forward's (export.moe), written after "
                "the vendor's moe_infer but not identical to it"
            )
        else:
            unexplained[fn] = d
    return explained, unexplained


@dataclass
class OpCountCheck:
    source: str  # where the TorchLens counts come from
    torchlens_ops: int
    graph_ops: int  # torch-level calls of the export-IR graph, counted as TorchLens counts them
    by_module: list[dict[str, Any]]
    notes: list[str]

    @property
    def reconciled(self) -> bool:
        return all(r["reconciled"] for r in self.by_module)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "torchlens_ops": self.torchlens_ops,
            "graph_ops": self.graph_ops,
            "difference": self.torchlens_ops - self.graph_ops,
            "reconciled": self.reconciled,
            "unreconciled_modules": [r["module"] for r in self.by_module if not r["reconciled"]],
            "notes": list(self.notes),
            "by_module": self.by_module,
        }


def _fold(path: str, known: set[str]) -> str:
    while path and path not in known:
        path = path.rpartition(".")[0]
    return path


def check_op_counts(
    programs: Iterable[Any],
    torchlens_by_module: Mapping[str, int],
    source: str,
    relative: Any = lambda p: p,
    torchlens_by_function: Optional[Mapping[str, Mapping[str, int]]] = None,
    moe_remedy: bool = False,
    remedy_modules: Iterable[str] = (),
) -> OpCountCheck:
    """TorchLens ops per module (innermost module, as the call graph counts them) against the torch-level
    calls of the export-IR graph(s) of the same call(s), module by module, and function by function when
    `torchlens_by_function` is given (a capture of the submodule alone).

    Rules that make the two comparable (each reported in `notes` when it applied): a multi-output
    function counts once per output; export's `_assert_tensor_metadata` nodes, higher-order op wrappers
    and conversions of a parameter to its own dtype are not ops; a module TorchLens names but the graph
    never enters (a child called through `.forward`, which no module hook sees) is folded into its
    nearest ancestor the graph has. What remains is explained per function where a known reason
    applies (`NOOP_FUNCTIONS`; with `moe_remedy`, the remedy's guard and the real forward's host copy).
    """
    calls = torch_calls(programs, relative)
    known = set(calls.by_module) | {""}
    tl: dict[str, int] = {}
    tl_fns: dict[str, Counter] = {}
    folded: dict[str, str] = {}
    for path, n in torchlens_by_module.items():
        rel = relative(path)
        if rel is None or not n:
            continue
        target = _fold(rel, known)
        if target != rel:
            folded[rel] = target
        tl[target] = tl.get(target, 0) + int(n)
        if torchlens_by_function is not None:
            tl_fns.setdefault(target, Counter()).update(torchlens_by_function.get(path, {}))
    rows = []
    for path in sorted(set(tl) | set(calls.by_module), key=lambda p: (p.count("."), p)):
        fns = calls.by_module.get(path, {})
        graph = sum(fns.values())
        row: dict[str, Any] = {
            "module": path,
            "torchlens": tl.get(path, 0),
            "graph": graph,
            "difference": tl.get(path, 0) - graph,
            "graph_functions": fns,
        }
        if torchlens_by_function is not None:
            mine = tl_fns.get(path, Counter())
            diffs = {fn: mine.get(fn, 0) - fns.get(fn, 0) for fn in sorted(set(mine) | set(fns))}
            diffs = {fn: d for fn, d in diffs.items() if d}
            explained, unexplained = _explain(diffs, moe_remedy, path in set(remedy_modules))
            row.update(
                torchlens_functions=dict(sorted(mine.items())),
                function_differences=diffs,
                explained=explained,
                unexplained=unexplained,
                reconciled=not unexplained,
            )
        elif row["difference"] and path in set(remedy_modules):
            row.update(
                reconciled=True,
                explained={
                    "total": (
                        "the MoE module's own ops are the fixed-routing forward's (it adds the guard "
                        f"{', '.join(REMEDY_GUARD_OPS)}; the real forward copies the counts to the host); per-function "
                        "detail needs a capture of the submodule alone"
                    )
                },
            )
        else:
            row["reconciled"] = row["difference"] == 0
        rows.append(row)
    notes = []
    if calls.multi_output:
        notes.append(
            "multi-output functions count once per output, as TorchLens records them: "
            + ", ".join(f"{k} +{v}" for k, v in sorted(calls.multi_output.items()))
        )
    if calls.bookkeeping:
        notes.append(
            f"{calls.bookkeeping} _assert_tensor_metadata node(s) (export's check after a .to() call) are not ops"
        )
    if calls.parameter_noops:
        notes.append(
            "conversions of a parameter to its own dtype return the parameter itself, which TorchLens "
            "does not record: " + ", ".join(f"{k} x{v}" for k, v in sorted(calls.parameter_noops.items()))
        )
    if calls.higher_order:
        notes.append(
            "higher-order op wrappers are not ops, their bodies are counted: "
            + ", ".join(f"{k} x{v}" for k, v in sorted(calls.higher_order.items()))
            + " (a forward under torch.no_grad / autocast)"
        )
    if folded:
        notes.append(
            "modules TorchLens names but the graph never enters (called through .forward, no module "
            "call) folded into their caller: " + ", ".join(f"{a} -> {b or '<root>'}" for a, b in folded.items())
        )
    for r in rows:
        for fn, why in r.get("explained", {}).items():
            d = r["function_differences"][fn] if "function_differences" in r else r["difference"]
            notes.append(f"{r['module'] or '<root>'}: {fn} {d:+d}: {why}")
        if not r["reconciled"]:
            detail = r.get("unexplained") or {"total": r["difference"]}
            notes.append(
                f"NOT reconciled: {r['module'] or '<root>'}: TorchLens minus graph "
                + ", ".join(f"{k} {v:+d}" for k, v in detail.items())
            )
    return OpCountCheck(
        source=source,
        torchlens_ops=sum(tl.values()),
        graph_ops=sum(r["graph"] for r in rows),
        by_module=rows,
        notes=notes,
    )

"""Cross-checks of one exported call: FLOPs three ways, and op counts against the TorchLens call graph.

FLOPs (all three count matmul-class work as `torch.utils.flop_counter` does, 2 x multiply-adds):
* exported: torch's formulas on the core-ATen graph (`export.flops`);
* eager: `FlopCounterMode` on the module itself, run on the same recorded inputs (`measure.count_flops`);
* analytic: `DeepseekOCRAnalyticModel`, the part of its stage cost that is this one call
  (`analytic_reference`).
They are compared in total, per module (paths relative to the submodule) and per op family (matmul,
convolution, attention), where export's SDPA decomposition (two `bmm`) is put back under attention by
the op it came from. Any difference is listed per module with the ops that make it.

Op counts: TorchLens records tensor operations at the torch-function level (`linear`, `__add__`,
`scaled_dot_product_attention`), one per call, in the innermost module; the exported graph has one
or more aten nodes per such call, each tagged with the call that made it (`torch_fn`). Per module,
TorchLens' count is set against the number of distinct torch calls in the graph and the number of
core-ATen nodes, and the functions export decomposes are listed with the aten ops they became.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Mapping, Optional

from llm_perf_opt.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.analytic.costs import LayerCost
from llm_perf_opt.dsocr.layout import ViewLayout, VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.export.flops import GraphOp, flops_by_module, total_flops
from llm_perf_opt.export.moe import REMEDY_GUARD_OPS
from llm_perf_opt.export.targets import ExportTarget

MATMUL_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten._scaled_mm")
CONV_OPS = ("aten.convolution", "aten._convolution", "aten.cudnn_convolution", "aten.convolution_overrideable",
            "aten._slow_conv2d_forward")


# ------------------------------------------------------------------------------------------- analytic
@dataclass
class AnalyticReference:
    """The analytic cost of one target call: {path relative to the submodule: cost}, "" = the call."""

    parts: dict[str, LayerCost]
    containers: frozenset[str]  # paths that are not entered modules (their cost is their children's)
    how: str

    @property
    def flops(self) -> int:
        """Matmul-class FLOPs of the call (what torch's counter counts)."""
        return self.parts[""].flops_matmul if "" in self.parts else 0


def _relative(parts: Mapping[str, LayerCost], root: str) -> dict[str, LayerCost]:
    out = {}
    for path, cost in parts.items():
        if path == root:
            out[""] = cost
        elif path.startswith(root + "."):
            out[path[len(root) + 1:]] = cost
    return out


def _single_view_parts(spec: ModelSpec, side: int, layout: ViewLayout) -> dict[str, LayerCost]:
    # a no-crop workload whose one view has this side: its vision stage is exactly one call per part
    workload = VisionWorkload(base_size=side, image_size=side, crop_mode=False)
    single = compute_view_layout(workload, layout.page_width, layout.page_height)
    return DeepseekOCRAnalyticModel(spec, single).vision().parts


def analytic_reference(target: ExportTarget, spec: ModelSpec, layout: ViewLayout, seq_len: int,
                       dtype: Any = "float32", decoder_attention: str = "eager") -> AnalyticReference:
    """The analytic model's cost of the one call `target` is (same spec, layout, sequence, attention)."""
    model = DeepseekOCRAnalyticModel(spec, layout, seq_len, dtype=dtype, decoder_attention=decoder_attention)
    if target.view is not None:
        stage = model.vision()
        containers = frozenset(stage.containers)
        glob = _relative(_single_view_parts(spec, layout.global_side, layout), target.path)
        if target.view == "global":
            how = (f"vision stage of a one-view layout of side {layout.global_side} (the global view's call "
                   f"of {target.path})")
            parts = glob
        else:
            both = _relative(stage.parts, target.path)
            parts = {k: _minus(v, glob[k]) if k in glob else v for k, v in both.items()}
            how = (f"vision stage of this layout ({target.path} on crops + global) minus the global view's call")
    elif target.stage == "decode":
        stage = model.decode(target.context)
        containers = frozenset(stage.containers)
        parts = _relative(stage.parts, target.path)
        how = f"decode stage at a context of {target.context} tokens, {target.path}"
    else:
        stage = model.prefill()
        containers = frozenset(stage.containers)
        parts = _relative(stage.parts, target.path)
        how = f"prefill stage over {seq_len} tokens, {target.path}"
    rel_containers = frozenset(_relative({c: LayerCost() for c in containers}, target.path))
    return AnalyticReference(parts=parts, containers=rel_containers, how=how)


def _minus(a: LayerCost, b: LayerCost) -> LayerCost:
    return LayerCost(**{f.name: getattr(a, f.name) - getattr(b, f.name) for f in fields(LayerCost)})


# ------------------------------------------------------------------------------------------- FLOPs
def op_family(op: str, source: str = "") -> str:
    """matmul / convolution / attention, else the op itself; export's SDPA math (bmm) counts as attention."""
    if "scaled_dot_product" in source or "scaled_dot_product" in op or "attention" in op:
        return "attention"
    if op in CONV_OPS:
        return "convolution"
    if op in MATMUL_OPS:
        return "matmul"
    return op


@dataclass
class FlopsCheck:
    exported: int
    eager: Optional[int]
    analytic: Optional[int]
    by_module: list[dict[str, Any]]
    by_family: list[dict[str, Any]]
    explanation: list[str]
    analytic_how: str = ""
    eager_matmul_without_formula: dict[str, int] = field(default_factory=dict)
    exported_matmul_without_formula: dict[str, int] = field(default_factory=dict)

    @property
    def agree(self) -> bool:
        values = [v for v in (self.exported, self.eager, self.analytic) if v is not None]
        return len(set(values)) == 1 and not self.eager_matmul_without_formula \
            and not self.exported_matmul_without_formula

    def to_dict(self) -> dict[str, Any]:
        return {
            "exported": self.exported, "eager": self.eager, "analytic": self.analytic, "agree": self.agree,
            "exported_minus_analytic": None if self.analytic is None else self.exported - self.analytic,
            "exported_minus_eager": None if self.eager is None else self.exported - self.eager,
            "analytic_how": self.analytic_how, "explanation": list(self.explanation),
            "by_family": self.by_family, "by_module": self.by_module,
            "eager_matmul_without_formula": dict(self.eager_matmul_without_formula),
            "exported_matmul_without_formula": dict(self.exported_matmul_without_formula),
        }


def _family_totals_exported(ops: Iterable[GraphOp]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for o in ops:
        if o.flops:
            fam = out.setdefault(op_family(o.packet, o.source), {})
            label = o.packet if o.source in (o.op, "") else f"{o.packet} <- {o.source.removesuffix('.default')}"
            fam[label] = fam.get(label, 0) + o.flops
    return out


def _family_totals_eager(by_op: Mapping[str, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for op, flops in by_op.items():
        if flops:
            fam = out.setdefault(op_family(op), {})
            fam[op] = fam.get(op, 0) + flops
    return out


def _fmt_ops(ops: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1])) or "none"


def check_flops(ops: list[GraphOp], eager: Any | None, analytic: AnalyticReference | None,
                relative: Any = lambda p: p) -> FlopsCheck:
    """Compare the graph's FLOPs with FlopCounterMode's (`MeasuredFlops` of the eager call, or None)
    and the analytic reference; `relative` maps eager module paths to paths relative to the submodule."""
    exported = total_flops(ops)
    exp_mod = flops_by_module(ops)
    eager_mod: dict[str, int] = {}
    eager_ops: dict[str, dict[str, int]] = {}
    if eager is not None:
        for path, flops in eager.by_module.items():
            rel = relative(path)
            if rel is not None:
                eager_mod[rel] = flops
                eager_ops[rel] = dict(eager.by_module_op.get(path, {}))
    ana_mod: dict[str, int] = {}
    if analytic is not None:
        ana_mod = {p: c.flops_matmul for p, c in analytic.parts.items() if p not in analytic.containers}
    rows = []
    for path in sorted(set(exp_mod) | set(eager_mod) | set(ana_mod), key=lambda p: (p.count("."), p)):
        values = {"exported": exp_mod.get(path, 0), "eager": eager_mod.get(path) if eager is not None else None,
                  "analytic": ana_mod.get(path) if analytic is not None else None}
        if not any(values.values()):
            continue
        present = [v or 0 for v in values.values() if v is not None]
        rows.append({"module": path, **values, "ok": len(set(present)) == 1})
    exp_fam = _family_totals_exported(ops)
    eag_fam = _family_totals_eager(eager.by_op) if eager is not None else {}
    families = []
    for fam in sorted(set(exp_fam) | set(eag_fam)):
        e, g = sum(exp_fam.get(fam, {}).values()), sum(eag_fam.get(fam, {}).values())
        families.append({"family": fam, "exported": e, "eager": g if eager is not None else None,
                         "exported_ops": exp_fam.get(fam, {}), "eager_ops": eag_fam.get(fam, {}),
                         "ok": eager is None or e == g})
    explanation: list[str] = []
    for fam in families:
        renamed = [k for k in fam["exported_ops"] if "<-" in k]
        if renamed and fam["ok"] and eager is not None:
            explanation.append(f"{fam['family']}: same FLOPs, other ops: export counts {_fmt_ops(fam['exported_ops'])}"
                               f"; FlopCounterMode counts {_fmt_ops(fam['eager_ops'])} (export decomposes the op)")
        elif not fam["ok"]:
            explanation.append(f"{fam['family']}: exported {fam['exported']:,} ({_fmt_ops(fam['exported_ops'])}) vs "
                               f"eager {fam['eager']:,} ({_fmt_ops(fam['eager_ops'])})")
    leaf_rows = [r for r in rows if not r["ok"]]
    for r in leaf_rows:
        path = r["module"]
        here = {o.packet: 0 for o in ops if o.flops and o.module == path}
        for o in ops:
            if o.flops and o.module == path:
                here[o.packet] += o.flops
        line = f"module {path or '<root>'}: exported {r['exported']:,} (own ops: {_fmt_ops(here)})"
        if r["eager"] is not None:
            line += f"; eager {r['eager']:,} (ops: {_fmt_ops(eager_ops.get(path, {}))})"
        if r["analytic"] is not None:
            line += f"; analytic {r['analytic']:,}"
        explanation.append(line)
    return FlopsCheck(
        exported=exported, eager=eager.total if eager is not None else None,
        analytic=analytic.flops if analytic is not None else None, by_module=rows, by_family=families,
        explanation=explanation, analytic_how=analytic.how if analytic is not None else "",
        eager_matmul_without_formula=dict(eager.matmul_like_without_formula) if eager is not None else {},
        exported_matmul_without_formula={o.op: 1 for o in ops if o.flops is None and o.matmul_like},
    )


# ------------------------------------------------------------------------------------------- op counts
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


NOOP_CANDIDATES = ("aten.to.dtype", "aten.to.dtype_layout", "aten.to.device", "aten.contiguous.default",
                   "aten.type_as.default")


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
    from llm_perf_opt.export.flops import op_nodes

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
    return TorchCalls(by_module={m: dict(sorted(f.items())) for m, f in by_module.items()},
                      higher_order=dict(higher), bookkeeping=bookkeeping, multi_output=dict(multi),
                      parameter_noops=dict(noops))


def decompositions(ops: Iterable[GraphOp]) -> dict[str, dict[str, int]]:
    """{export-IR op: {core-ATen op: nodes}} for every export-IR op that does not survive as itself."""
    out: dict[str, Counter] = {}
    for o in ops:
        out.setdefault(o.source, Counter())[o.op] += 1
    return {src: dict(c) for src, c in sorted(out.items()) if set(c) != {src}}


def removed_by_decomposition(program: Any, ops: Iterable[GraphOp]) -> dict[str, int]:
    """Export-IR ops none of whose nodes left a node in core ATen (no-ops: `.to()` to the same dtype,
    `contiguous` of a contiguous tensor, `dropout` in eval, `alias`), by op."""
    from llm_perf_opt.export.flops import op_nodes

    sources = {o.source_node for o in ops}
    gone: Counter = Counter()
    for node in op_nodes(program.graph_module):
        if node.name not in sources and not _is_higher_order(node.target):
            gone[str(node.target)] += 1
    return dict(sorted(gone.items()))


def export_ir_counts(program: Any) -> dict[str, int]:
    from llm_perf_opt.export.flops import op_nodes

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
            explained[fn] = "the real MoE forward copies the tokens per expert to the host; the fixed-routing " \
                            "graph has them as constants"
        elif remedy_module:
            explained[fn] = "the MoE module's own ops are the fixed-routing forward's (export.moe), written after " \
                            "the vendor's moe_infer but not identical to it"
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
            "source": self.source, "torchlens_ops": self.torchlens_ops, "graph_ops": self.graph_ops,
            "difference": self.torchlens_ops - self.graph_ops, "reconciled": self.reconciled,
            "unreconciled_modules": [r["module"] for r in self.by_module if not r["reconciled"]],
            "notes": list(self.notes), "by_module": self.by_module,
        }


def _fold(path: str, known: set[str]) -> str:
    while path and path not in known:
        path = path.rpartition(".")[0]
    return path


def check_op_counts(programs: Iterable[Any], torchlens_by_module: Mapping[str, int], source: str,
                    relative: Any = lambda p: p,
                    torchlens_by_function: Optional[Mapping[str, Mapping[str, int]]] = None,
                    moe_remedy: bool = False, remedy_modules: Iterable[str] = ()) -> OpCountCheck:
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
        row: dict[str, Any] = {"module": path, "torchlens": tl.get(path, 0), "graph": graph,
                               "difference": tl.get(path, 0) - graph, "graph_functions": fns}
        if torchlens_by_function is not None:
            mine = tl_fns.get(path, Counter())
            diffs = {fn: mine.get(fn, 0) - fns.get(fn, 0) for fn in sorted(set(mine) | set(fns))}
            diffs = {fn: d for fn, d in diffs.items() if d}
            explained, unexplained = _explain(diffs, moe_remedy, path in set(remedy_modules))
            row.update(torchlens_functions=dict(sorted(mine.items())), function_differences=diffs,
                       explained=explained, unexplained=unexplained, reconciled=not unexplained)
        elif row["difference"] and path in set(remedy_modules):
            row.update(reconciled=True, explained={"total": (
                "the MoE module's own ops are the fixed-routing forward's (it adds the guard "
                f"{', '.join(REMEDY_GUARD_OPS)}; the real forward copies the counts to the host); per-function "
                "detail needs a capture of the submodule alone")})
        else:
            row["reconciled"] = row["difference"] == 0
        rows.append(row)
    notes = []
    if calls.multi_output:
        notes.append("multi-output functions count once per output, as TorchLens records them: "
                     + ", ".join(f"{k} +{v}" for k, v in sorted(calls.multi_output.items())))
    if calls.bookkeeping:
        notes.append(f"{calls.bookkeeping} _assert_tensor_metadata node(s) (export's check after a .to() call) "
                     "are not ops")
    if calls.parameter_noops:
        notes.append("conversions of a parameter to its own dtype return the parameter itself, which TorchLens "
                     "does not record: " + ", ".join(f"{k} x{v}" for k, v in sorted(calls.parameter_noops.items())))
    if calls.higher_order:
        notes.append("higher-order op wrappers are not ops, their bodies are counted: "
                     + ", ".join(f"{k} x{v}" for k, v in sorted(calls.higher_order.items()))
                     + " (a forward under torch.no_grad / autocast)")
    if folded:
        notes.append("modules TorchLens names but the graph never enters (called through .forward, no module "
                     "call) folded into their caller: " + ", ".join(f"{a} -> {b or '<root>'}" for a, b in folded.items()))
    for r in rows:
        for fn, why in r.get("explained", {}).items():
            d = r["function_differences"][fn] if "function_differences" in r else r["difference"]
            notes.append(f"{r['module'] or '<root>'}: {fn} {d:+d}: {why}")
        if not r["reconciled"]:
            detail = r.get("unexplained") or {"total": r["difference"]}
            notes.append(f"NOT reconciled: {r['module'] or '<root>'}: TorchLens minus graph "
                         + ", ".join(f"{k} {v:+d}" for k, v in detail.items()))
    return OpCountCheck(source=source, torchlens_ops=sum(tl.values()), graph_ops=sum(r["graph"] for r in rows),
                        by_module=rows, notes=notes)

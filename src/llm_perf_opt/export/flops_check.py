"""FLOPs of one exported call three ways, which must agree exactly or differ for reasons listed per op.

All three count matmul-class work as `torch.utils.flop_counter` does (2 x multiply-adds):
* exported: torch's formulas on the core-ATen graph (`export.flops`);
* eager: `FlopCounterMode` on the module itself, run on the same recorded inputs (`measure.count_flops`);
* analytic: the model family's analytic model, the part of its stage cost that is this one call
  (`analytic_reference`; crop-batch calls are the vision stage minus the global view's call).
They are compared in total, per module (paths relative to the submodule) and per op family (matmul,
convolution, attention), where export's SDPA decomposition (two `bmm`) is put back under attention by
the op it came from. Any difference is listed per module with the ops that make it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Optional

from llm_perf_opt.analytic.costs import COST_FIELDS, LayerCost
from llm_perf_opt.export.flops import GraphOp, flops_by_module, total_flops
from llm_perf_opt.export.targets import ExportTarget

MATMUL_OPS = ("aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm", "aten._scaled_mm")
CONV_OPS = (
    "aten.convolution",
    "aten._convolution",
    "aten.cudnn_convolution",
    "aten.convolution_overrideable",
    "aten._slow_conv2d_forward",
)


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
            out[path[len(root) + 1 :]] = cost
    return out


def _single_view_parts(family: Any, spec: Any, side: int, layout: Any) -> dict[str, LayerCost]:
    # a no-crop workload whose one view has this side: its vision stage is exactly one call per part
    single = family.layout(family.single_view_workload(side), layout.page_width, layout.page_height)
    return family.analytic_model(spec, single).vision().parts


def analytic_reference(
    family: Any,
    target: ExportTarget,
    spec: Any,
    layout: Any,
    seq_len: int,
    dtype: Any = "float32",
    decoder_attention: str = "eager",
) -> AnalyticReference:
    """The analytic model's cost of the one call `target` is (same spec, layout, sequence, attention), from the
    model family's analytic model."""
    model = family.analytic_model(spec, layout, seq_len, dtype=dtype, decoder_attention=decoder_attention)
    if target.view is not None:
        stage = model.vision()
        containers = frozenset(stage.containers)
        glob = _relative(_single_view_parts(family, spec, layout.global_side, layout), target.path)
        if target.view == "global":
            how = (
                f"vision stage of a one-view layout of side {layout.global_side} (the global view's call "
                f"of {target.path})"
            )
            parts = glob
        else:
            both = _relative(stage.parts, target.path)
            parts = {k: _minus(v, glob[k]) if k in glob else v for k, v in both.items()}
            how = f"vision stage of this layout ({target.path} on crops + global) minus the global view's call"
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
    return LayerCost(**{name: getattr(a, name) - getattr(b, name) for name in COST_FIELDS})


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
        return (
            len(set(values)) == 1 and not self.eager_matmul_without_formula and not self.exported_matmul_without_formula
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "exported": self.exported,
            "eager": self.eager,
            "analytic": self.analytic,
            "agree": self.agree,
            "exported_minus_analytic": None if self.analytic is None else self.exported - self.analytic,
            "exported_minus_eager": None if self.eager is None else self.exported - self.eager,
            "analytic_how": self.analytic_how,
            "explanation": list(self.explanation),
            "by_family": self.by_family,
            "by_module": self.by_module,
            "eager_matmul_without_formula": dict(self.eager_matmul_without_formula),
            "exported_matmul_without_formula": dict(self.exported_matmul_without_formula),
        }


def _family_totals_exported(ops: Iterable[GraphOp]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for o in ops:
        if o.flops:
            by_label = out.setdefault(op_family(o.packet, o.source), {})
            label = o.packet if o.source in (o.op, "") else f"{o.packet} <- {o.source.removesuffix('.default')}"
            by_label[label] = by_label.get(label, 0) + o.flops
    return out


def _family_totals_eager(by_op: Mapping[str, int]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for op, flops in by_op.items():
        if flops:
            by_op_name = out.setdefault(op_family(op), {})
            by_op_name[op] = by_op_name.get(op, 0) + flops
    return out


def _fmt_ops(ops: Mapping[str, int]) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(ops.items(), key=lambda kv: -kv[1])) or "none"


def check_flops(
    ops: list[GraphOp], eager: Any | None, analytic: AnalyticReference | None, relative: Any = lambda p: p
) -> FlopsCheck:
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
        values = {
            "exported": exp_mod.get(path, 0),
            "eager": eager_mod.get(path) if eager is not None else None,
            "analytic": ana_mod.get(path) if analytic is not None else None,
        }
        if not any(values.values()):
            continue
        present = [v or 0 for v in values.values() if v is not None]
        rows.append({"module": path, **values, "ok": len(set(present)) == 1})
    exp_fam = _family_totals_exported(ops)
    eag_fam = _family_totals_eager(eager.by_op) if eager is not None else {}
    families = []
    for fam in sorted(set(exp_fam) | set(eag_fam)):
        e, g = sum(exp_fam.get(fam, {}).values()), sum(eag_fam.get(fam, {}).values())
        families.append(
            {
                "family": fam,
                "exported": e,
                "eager": g if eager is not None else None,
                "exported_ops": exp_fam.get(fam, {}),
                "eager_ops": eag_fam.get(fam, {}),
                "ok": eager is None or e == g,
            }
        )
    explanation: list[str] = []
    for fam in families:
        renamed = [k for k in fam["exported_ops"] if "<-" in k]
        if renamed and fam["ok"] and eager is not None:
            explanation.append(
                f"{fam['family']}: same FLOPs, other ops: export counts {_fmt_ops(fam['exported_ops'])}"
                f"; FlopCounterMode counts {_fmt_ops(fam['eager_ops'])} (export decomposes the op)"
            )
        elif not fam["ok"]:
            explanation.append(
                f"{fam['family']}: exported {fam['exported']:,} ({_fmt_ops(fam['exported_ops'])}) vs "
                f"eager {fam['eager']:,} ({_fmt_ops(fam['eager_ops'])})"
            )
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
        exported=exported,
        eager=eager.total if eager is not None else None,
        analytic=analytic.flops if analytic is not None else None,
        by_module=rows,
        by_family=families,
        explanation=explanation,
        analytic_how=analytic.how if analytic is not None else "",
        eager_matmul_without_formula=dict(eager.matmul_like_without_formula) if eager is not None else {},
        exported_matmul_without_formula={o.op: 1 for o in ops if o.flops is None and o.matmul_like},
    )

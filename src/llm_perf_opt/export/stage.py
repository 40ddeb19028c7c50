"""The export stage: plan, record, export, tabulate, cross-check; writes `<out>/export/`.

    with DeepSeekOCRSession.open(cfg.model, cfg.runtime) as session:
        run_export_stage(cfg, session, inputs, run_dir)      # ./dev export, or trace.export=true

For every requested submodule (`export.targets`): its real inputs from one forward (`export.hooks`),
`torch.export` to the export IR and core ATen (`export.program`; a MoE layer that is refused gets the
fixed-routing remedy, `export.moe`), the op table `export/<name>.ops.csv` (`export.optable`) with
torch's FLOP formulas applied to the graph (`export.flops`), the FLOPs cross-check against
FlopCounterMode on the eager module and the analytic model (`export.flops_check`), the op counts against
TorchLens (`export.opcount_check`), and the exported program's output against the real forward's. With
`export.onnx`, a CLIP block and the dense layer are also written as ONNX and checked
(`export.onnx_files`). Everything ends in `export/summary.json` (`export.summary`).
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

import torch

from llm_perf_opt import units
from llm_perf_opt.errors import PipelineError
from llm_perf_opt.export import flops_check, opcount_check
from llm_perf_opt.export.flops import graph_ops, matmul_like_without_formula
from llm_perf_opt.export.hooks import RecordedCall, record_calls
from llm_perf_opt.export.modules import ExportCall, call_for, flat_tensors
from llm_perf_opt.export.moe import REMEDY_GUARD_OPS, RemedyError, fixed_routing
from llm_perf_opt.export.onnx_files import onnx_unavailable, write_onnx
from llm_perf_opt.export.optable import op_rows, op_totals, write_csv
from llm_perf_opt.export.program import ExportedGraphs, ExportRefused, export_graphs, one_line, run_program
from llm_perf_opt.export.summary import ExportSummary, SubmoduleExport
from llm_perf_opt.export.targets import ExportPlan, ExportTarget, onnx_targets, plan_targets

EXPORT_DIR = "export"
Progress = Callable[[str], None]
# exported program vs the real forward: relative L2 error ||exported - real|| / ||real|| per output tensor.
# The core-ATen graph computes SDPA in its math form where the forward ran the fused CPU kernel, so they
# differ by rounding. Measured on the full-size twin's SAM (its weights, 2 crops of 640, float32): eager
# with the math backend vs eager with the fused kernel 8.8e-5, the exported program vs eager-math 1.1e-6.
# At bfloat16 (autocast) the math SDPA also rounds its intermediates to bf16 (24 CLIP blocks: ~1e-2).
OUTPUT_TOLERANCE = {"float32": 1e-3, "bfloat16": 3e-2, "float16": 3e-2}


def _describe(name: str, value: Any) -> dict[str, Any]:
    return {"name": name, "shape": list(value.shape), "dtype": str(value.dtype).removeprefix("torch.")}


def _compare(got: Any, want: Any, dtype: str) -> dict[str, Any]:
    g, w = flat_tensors(got), flat_tensors(want)
    tol = OUTPUT_TOLERANCE.get(dtype, OUTPUT_TOLERANCE["float32"])
    if len(g) != len(w) or any(a.shape != b.shape for a, b in zip(g, w)):
        return {
            "ok": False,
            "error": f"outputs {[list(t.shape) for t in g]} vs the forward's {[list(t.shape) for t in w]}",
        }
    rel, diffs = [], []
    for a, b in zip(g, w):
        a, b = a.double(), b.double()
        diffs.append(float((a - b).abs().max()) if a.numel() else 0.0)
        if a.dtype.is_floating_point and b.numel():
            rel.append(float((a - b).norm() / b.norm().clamp_min(1e-30)))
        elif not torch.equal(a, b):
            rel.append(float("inf"))
    worst = max(rel, default=0.0)
    return {
        "ok": worst <= tol,
        "rel_l2_error": worst,
        "max_abs_diff": max(diffs, default=0.0),
        "max_abs_reference": max((float(b.double().abs().max()) for b in w if b.numel()), default=0.0),
        "tolerance": {"rel_l2": tol},
    }


class _Exporter:
    """Exports the recorded calls of one session; holds what every target shares."""

    def __init__(
        self,
        cfg: Any,
        session: Any,
        inputs: Any,
        out_dir: Path,
        plan: ExportPlan,
        callgraph: Any = None,
        progress: Optional[Progress] = None,
    ) -> None:
        self.cfg = cfg
        self.export_cfg = cfg.export
        self.session = session
        self.inputs = inputs
        self.out_dir = out_dir
        self.plan = plan
        self.callgraph = callgraph
        self.say = progress or (lambda _msg: None)
        self.dtype = str(session.dtype).removeprefix("torch.")
        self.attention = "sdpa" if session.attn_implementation == "sdpa" else "eager"

    def context(self) -> contextlib.AbstractContextManager:
        return self.session.autocast_context()

    # ------------------------------------------------------------------ one target
    def export(
        self, target: ExportTarget, rec: RecordedCall
    ) -> tuple[SubmoduleExport, Optional[ExportedGraphs], ExportCall, list]:
        """Export one recorded call; (summary entry, graphs or None when refused, the call, its op records)."""
        call = call_for(self.session.model, rec)
        entry = SubmoduleExport(
            name=target.name,
            path=target.path,
            part=target.part,
            stage=target.stage,
            description=target.description,
            status="refused",
            inputs=[_describe(n, t) for n, t in rec.tensor_inputs()],
            outputs=[_describe(f"out[{i}]", t) for i, t in enumerate(flat_tensors(rec.output))],
        )
        if self.session.attn_implementation == "flash_attention_2" and target.layer is not None:
            entry.reason = (
                "the session's decoder attention is flash_attention_2 (custom CUDA ops, not "
                "exportable): run the export job, which opens the model with sdpa/eager"
            )
            return entry, None, call, []
        graphs: Optional[ExportedGraphs] = None
        try:
            graphs = export_graphs(call, self.context())
            entry.status = "exported"
        except ExportRefused as exc:
            entry.reason = str(exc)
            self.say(f"export: {target.name}: refused: {exc}")
            graphs = self._remedy(target, rec, call, entry)
        if graphs is None:
            return entry, None, call, []
        entry.seconds = {"export": round(graphs.export_seconds, 3), "decompose": round(graphs.decompose_seconds, 3)}
        ops = self._tables_and_checks(target, rec, call, graphs, entry)
        return entry, graphs, call, ops

    def _remedy(
        self, target: ExportTarget, rec: RecordedCall, call: ExportCall, entry: SubmoduleExport
    ) -> Optional[ExportedGraphs]:
        layer = self.session.model.get_submodule(target.path)  # call.module may be a wrapper (decode)
        moe = getattr(layer, "mlp", None) if target.layer is not None else None
        if moe is None or not target.moe:
            entry.remedy = {"kind": None, "note": "no remedy applies to this module"}
            return None
        if self.export_cfg.moe_remedy == "none":
            entry.remedy = {"kind": None, "note": "export.moe_remedy=none"}
            return None
        entry.remedy = {
            "kind": "fixed_routing",
            "routing": rec.routing,
            "experts_called": sum(1 for n in rec.routing or [] if n),
            "guard_ops": list(REMEDY_GUARD_OPS),
            "note": "MoE forward with the per-expert token counts of the real forward as constants "
            "(export.moe); the program is valid for inputs that route the same way (guarded)",
        }
        if rec.routing is None:
            entry.remedy["error"] = "no routing was recorded for this call"
            return None
        try:
            with fixed_routing(moe, rec.routing, self.session.family.run_experts_by_load):
                graphs = export_graphs(call, self.context())
                with torch.no_grad(), self.context():
                    wrapped = call.run()
        except (ExportRefused, RemedyError) as exc:
            entry.remedy["error"] = str(exc)
            self.say(f"export: {target.name}: remedy fixed_routing failed too: {exc}")
            return None
        entry.remedy["eager_matches_forward"] = _compare(wrapped, rec.output, self.dtype)
        entry.status = "exported_with_remedy"
        self.say(
            f"export: {target.name}: exported with fixed routing ({entry.remedy['experts_called']} experts called)"
        )
        return graphs

    def _tables_and_checks(
        self, target: ExportTarget, rec: RecordedCall, call: ExportCall, graphs: ExportedGraphs, entry: SubmoduleExport
    ) -> list:
        cfg = self.export_cfg
        ops = graph_ops(graphs.core, call.relative_path)
        rows = op_rows(ops)
        csv_path = write_csv(self.out_dir / EXPORT_DIR / f"{target.name}.ops.csv", rows)
        entry.ops_csv = csv_path.name
        ir = opcount_check.export_ir_counts(graphs.program)
        entry.ops = {
            "core_aten_nodes": len(ops),
            "export_ir_nodes": sum(ir.values()),
            "core_aten": op_totals(rows),
            "export_ir": dict(sorted(ir.items())),
            "decomposed": opcount_check.decompositions(ops),
            "removed_by_decomposition": opcount_check.removed_by_decomposition(graphs.program, ops),
            "matmul_like_without_formula": matmul_like_without_formula(ops),
        }
        from llm_perf_opt.measure import count_flops

        t0 = time.perf_counter()
        with self.context():
            eager, _ = count_flops(call.run, call.module, label=target.name)
        entry.seconds["eager_count"] = round(time.perf_counter() - t0, 3)
        analytic = flops_check.analytic_reference(
            self.session.family,
            target,
            self.session.spec,
            self.inputs.layout,
            self.plan.seq_len,
            dtype=self.dtype,
            decoder_attention=self.attention,
        )
        entry.flops = flops_check.check_flops(ops, eager, analytic, relative=call.relative_path).to_dict()
        if cfg.check_outputs:
            t0 = time.perf_counter()
            try:  # the program has the session's autocast baked in: it runs without one
                entry.output_check = _compare(run_program(graphs, call), rec.output, self.dtype)
            except Exception as exc:  # noqa: BLE001 - recorded as a failed check, the other checks go on
                entry.output_check = {"ok": False, "error": f"the exported program failed to run: {one_line(exc)}"}
            entry.seconds["output_check"] = round(time.perf_counter() - t0, 3)
        if cfg.callgraph and self.callgraph is None:
            entry.op_counts = self._torchlens_alone(target, call, graphs, entry.status == "exported_with_remedy")
        return ops

    def _torchlens_alone(self, target: ExportTarget, call: ExportCall, graphs: ExportedGraphs, remedy: bool) -> dict:
        from llm_perf_opt.callgraph.capture import capture

        t0 = time.perf_counter()
        # the patch that makes a scripted activation visible, where the family has one (v1's CLIP quick_gelu)
        patches = tuple(p for p in ("quick_gelu",) if p in self.session.family.trace_patches)
        source = "TorchLens capture of the submodule alone" + "".join(f" ({p} patch on)" for p in patches)
        try:
            with torch.no_grad(), self.context(), self.session.family.runtime_patches(self.session, patches):
                result = capture(
                    call.module, call.kwargs, forward_args=call.args, model_name=target.name, keep_trace=True
                )
        except PipelineError as exc:
            return {"source": source, "error": one_line(exc)}
        check = opcount_check.check_op_counts(
            [graphs.program],
            result.callgraph.op_call_counts,
            source,
            relative=call.relative_path,
            torchlens_by_function=opcount_check.torchlens_functions(result.trace),
            moe_remedy=remedy,
            remedy_modules=("mlp",) if remedy else (),
        )
        out = check.to_dict()
        out["capture_seconds"] = round(time.perf_counter() - t0, 3)
        if remedy:
            out["notes"].append("TorchLens captures the real MoE forward; the graph is the fixed-routing one")
        return out

    # ------------------------------------------------------------------ the trace job's call graph
    def reconcile_with_callgraph(self, entries: list[SubmoduleExport], graphs: Mapping[str, tuple]) -> None:
        """Stage mode: the trace job's call graph counts every call of a module in the prefill; compare it
        with the sum over the exported targets of that module when they are all of its calls."""
        cg = self.callgraph
        by_path: dict[str, list[SubmoduleExport]] = {}
        for e in entries:
            if e.stage == "prefill" and e.exported:
                by_path.setdefault(e.path, []).append(e)
            elif e.exported:
                e.op_counts = {
                    "source": "trace callgraph.json",
                    "note": "the trace job's call graph holds the prefill only: no counterpart for a decode-step call",
                }
        for path, group in by_path.items():
            calls = int(cg.call_counts.get(path, 0))
            if calls != len(group):
                for e in group:
                    e.op_counts = {
                        "source": "trace callgraph.json",
                        "note": f"the call graph sums {calls} call(s) "
                        f"of {path}; {len(group)} of them exported: not comparable one to one",
                    }
                continue
            tl = {
                a[len(path) + 1 :] if a != path else "": n
                for a, n in cg.op_call_counts.items()
                if a == path or a.startswith(path + ".")
            }
            remedy = any(e.status == "exported_with_remedy" for e in group)
            checks = opcount_check.check_op_counts(
                [graphs[e.name][0].program for e in group],
                tl,
                f"trace callgraph.json ({calls} call(s) of {path} summed)",
                moe_remedy=remedy,
                remedy_modules=("mlp",) if remedy else (),
            )
            for e in group:
                e.op_counts = dict(checks.to_dict(), exported_together=[g.name for g in group])

    # ------------------------------------------------------------------ ONNX
    def onnx(self, recorded: Mapping[str, RecordedCall], exported: Mapping[str, tuple]) -> list[dict[str, Any]]:
        reason = onnx_unavailable()
        out = []
        for target in family_onnx_targets(self.session.family, self.inputs.layout, self.plan.seq_len):
            record: dict[str, Any] = {"name": target.name, "path": target.path, "description": target.description}
            if reason:
                record.update(ok=False, error=reason)
            elif self.dtype != "float32":
                record.update(
                    ok=False,
                    error=f"runtime dtype {self.dtype}: ONNX files are written from float32 "
                    "sessions only (runtime=cpu)",
                )
            elif target.name not in recorded:
                record.update(ok=False, error="the call was not recorded")
            else:
                rec = recorded[target.name]
                graphs = None
                if target.name in exported:
                    graphs, _ops, call = exported[target.name]
                else:
                    call = call_for(self.session.model, rec)
                    try:
                        graphs = export_graphs(call, self.context())
                    except ExportRefused as exc:
                        record.update(ok=False, error=str(exc))
                        out.append(record)
                        continue
                self.say(f"export: ONNX for {target.name}")
                record.update(
                    write_onnx(
                        graphs.program,
                        call,
                        self.out_dir / EXPORT_DIR / f"{target.name}.onnx",
                        rtol=self.export_cfg.onnx_rtol,
                        atol=self.export_cfg.onnx_atol,
                    )
                )
            out.append(record)
        return out


def family_onnx_targets(family: Any, layout: Any, seq_len: int) -> list[ExportTarget]:
    """The calls written as ONNX for this family: its `onnx_block` (None: the first CLIP block) and the dense
    layer."""
    return onnx_targets(layout, seq_len, family.parts, family.onnx_block)


def print_table(summary: ExportSummary) -> None:
    head = (
        f"{'submodule':<20} {'status':<20} {'first input':<22} {'nodes':>6} {'exported':>11} {'eager':>11} "
        f"{'analytic':>11}  agree  {'export s':>8}"
    )
    print(head)
    print("-" * len(head))
    for s in summary.submodules:
        first = s.inputs[0]["shape"] if s.inputs else []
        f = s.flops or {}
        agree = "" if s.flops is None else ("yes" if f.get("agree") else "NO")
        print(
            f"{s.name:<20} {s.status:<20} {str(first):<22} {s.ops.get('core_aten_nodes', ''):>6} "
            f"{units.flops(f.get('exported')):>11} {units.flops(f.get('eager')):>11} "
            f"{units.flops(f.get('analytic')):>11}  {agree:<5}  {s.seconds.get('export', ''):>8}"
        )
        if s.reason:
            print(f"    {'refused' if not s.exported else 'plain export refused'}: {s.reason}")
        if s.remedy and s.remedy.get("error"):
            print(f"    remedy failed: {s.remedy['error']}")
    for note in summary.notes:
        print(f"note: {note}")
    for rec in summary.onnx:
        state = "ok" if rec.get("ok") else f"FAILED: {rec.get('error') or rec.get('checker')}"
        extra = (
            f" (checker {rec.get('checker')}, max |ort - eager| {rec.get('max_abs_diff'):.2e})"
            if rec.get("max_abs_diff") is not None
            else ""
        )
        print(f"onnx {rec['name']}: {state}{extra}")


def run_export_stage(
    cfg: Any,
    session: Any,
    inputs: Any,
    out_dir: str | Path,
    raw_cfg: Any = None,
    callgraph: Any = None,
    progress: Optional[Progress] = None,
    plan: Optional[ExportPlan] = None,
) -> dict[str, Any]:
    """Export the submodules `cfg.export` asks for from the open `session` on `inputs`; write
    `out_dir/export/` (op tables, ONNX, summary.json). `callgraph`: the trace job's CallGraph (or the path
    of its callgraph.json), used for the op-count reconciliation instead of a TorchLens capture of each
    submodule alone. Returns a short dict for the caller's summary."""
    say = progress or (lambda _msg: None)
    out_dir = Path(out_dir)
    if isinstance(callgraph, (str, Path)):
        from llm_perf_opt.callgraph.schema import load_callgraph_json

        callgraph = load_callgraph_json(callgraph)
    if plan is None:
        plan = plan_targets(
            cfg.export, session.spec, inputs.layout, inputs.seq_len, mode=cfg.workload.name, family=session.family
        )
    exporter = _Exporter(cfg, session, inputs, out_dir, plan, callgraph=callgraph, progress=say)
    wanted = {t.name: t for t in plan.targets}
    if cfg.export.onnx:
        for t in family_onnx_targets(session.family, inputs.layout, plan.seq_len):
            wanted.setdefault(t.name, t)
    recorded = record_calls(session, inputs, wanted.values(), progress=say)
    entries: list[SubmoduleExport] = []
    exported: dict[str, tuple] = {}
    for target in plan.targets:
        say(f"export: {target.name} ({target.path}): {target.description}")
        entry, graphs, call, ops = exporter.export(target, recorded[target.name])
        entries.append(entry)
        if graphs is not None:
            exported[target.name] = (graphs, ops, call)
    if callgraph is not None and cfg.export.callgraph:
        exporter.reconcile_with_callgraph(entries, {k: (v[0], v[1]) for k, v in exported.items()})
    onnx_names = {t.name for t in family_onnx_targets(session.family, inputs.layout, plan.seq_len)}
    onnx = exporter.onnx(recorded, {k: v for k, v in exported.items() if k in onnx_names}) if cfg.export.onnx else []
    layout = inputs.layout
    summary = ExportSummary(
        model={"name": cfg.model.name, "source": session.source, "spec": session.spec.name},
        # the preset and the family's knobs, read by key, as summary.json's `workload` records them
        workload={"mode": cfg.workload.name, **{k: getattr(cfg.workload, k) for k in session.family.workload_knobs}},
        layout=layout.as_dict(),
        seq_len=plan.seq_len,
        decode_context=plan.decode_context,
        runtime={
            "device": str(session.device),
            "dtype": exporter.dtype,
            "attn_implementation": session.attn_implementation,
            "autocast": session.autocast,
            "torch": torch.__version__,
        },
        submodules=entries,
        onnx=onnx,
        notes=list(plan.notes),
    )
    path = summary.save(out_dir / EXPORT_DIR / "summary.json", config=raw_cfg)
    print_table(summary)
    say(f"export: wrote {path}")
    return {
        "dir": EXPORT_DIR,
        "submodules": {e.name: e.status for e in entries},
        "flops_agree": {e.name: e.flops_agree for e in entries if e.flops is not None},
        "onnx": {r["name"]: bool(r.get("ok")) for r in onnx},
    }

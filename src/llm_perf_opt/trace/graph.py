"""The trace job's "costs on the graph" stage: every per-module figure the run has, as metric tables
(`callgraph.node_costs.ModuleCosts`, written to `module_costs.json`), summed onto every grouped node and
variant, then the renderings (coloured by `render.color_by`) and the Model Explorer files.

Where each table comes from (all describe the traced prefill forward, inclusive of each module's
subtree, summed over its calls):

* `flops_analytic`, `flops_matmul_analytic`, `io_bytes_analytic`, `weight_bytes_analytic`,
  `activation_bytes_analytic`: the analytic prefill stage (`StageCost.parts`, `analytic.costs`
  conventions). It costs a module path, not each routed expert: the MoE experts' figures sit on their
  `experts` container, so expert nodes have no analytic figure (said so in their notes).
* `flops_measured`: `torch.utils.flop_counter.FlopCounterMode` on the real forward (`MeasuredFlops`,
  the verification stage's count). A module the counter's tracker entered but where no counted op ran
  (LayerNorm, GELU, ...) measured 0; a module it never entered (called through `.forward()`, or not
  called in the counted forward) has no figure.
* `activation_bytes_observed`: the bytes of the new tensors among the op outputs TorchLens recorded
  (`CallGraph.op_output_bytes`, `callgraph.op_families.materialised`: views, indexing and ops that
  return their input left out), as the analytic activation bytes count them.
* `time_measured` and `time_measured_self`: `profile.json` (`measure.module_times.module_time_table`:
  median over the repeats of the module's calls' summed inclusive / self time), when the profile
  stage ran; its method (repeats, warm-up, synchronisation) is quoted in the table's source.
* `time_predicted`: `roofline.json`'s prefill parts (`analytic.time.ideal` convention, the roof named in
  the source), when the run has one: the ideal time level; `time_predicted_kernel` and `time_predicted_eager`
  the kernel and eager levels of the same parts (`analytic.time.levels`, roofline.json version 2).
A metric whose source is absent is listed with the reason in `ModuleCosts.absent`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping

from llm_perf_opt.analytic.stage import StageCost
from llm_perf_opt.callgraph.model_explorer import write_model_explorer
from llm_perf_opt.callgraph.node_costs import MODULE_COSTS_FILE, MetricTable, ModuleCosts, subtree_sums
from llm_perf_opt.callgraph.op_families import materialised
from llm_perf_opt.callgraph.render import group_and_render
from llm_perf_opt.callgraph.schema import ROOT, CallGraph
from llm_perf_opt.measure.matmul_ops import is_matmul_like

if TYPE_CHECKING:  # torch: `./dev group` reads a finished run without it
    from llm_perf_opt.measure.flops import MeasuredFlops

PROFILE_FILE = "profile.json"
ROOFLINE_FILE = "roofline.json"
ANALYTIC_SOURCE = (
    "analytic prefill stage (DeepseekOCRAnalyticModel.prefill().parts): {what}; "
    "FLOPs are 2 x multiply-adds, bytes at {dtype_bytes} B per element"
)
CONTAINER_NOTE = (
    "called through .forward() (not a module call of its own): its figure is the sum of its "
    "children, the ops it runs itself count in its caller"
)


# ---------------------------------------------------------------------------------------------- tables
def analytic_tables(stage: StageCost, dtype_bytes: int) -> list[MetricTable]:
    """The analytic stage's FLOPs and bytes per module path (and the stage total at the root)."""
    parts = stage.parts
    notes = {p: CONTAINER_NOTE for p in stage.containers}
    specs = (
        (
            "flops_analytic",
            "analytic FLOPs",
            "FLOP",
            "flops",
            "flops",
            "every op (matmul-class + elementwise estimate)",
        ),
        (
            "flops_matmul_analytic",
            "analytic matmul FLOPs",
            "FLOP",
            "flops",
            "flops_matmul",
            "matmul-class ops only (what torch's FlopCounterMode counts)",
        ),
        (
            "io_bytes_analytic",
            "analytic I/O bytes",
            "B",
            "bytes",
            "io_bytes",
            "weights read + inputs read + outputs written, once per call",
        ),
        ("weight_bytes_analytic", "analytic weight bytes", "B", "bytes", "weight_bytes", "parameter bytes read"),
        (
            "activation_bytes_analytic",
            "analytic activation bytes",
            "B",
            "bytes",
            "activation_bytes",
            "bytes of every tensor the eager op sequence materialises (views and in-place ops: none)",
        ),
    )
    out = []
    for name, label, unit, kind, attr, what in specs:
        values = {p: getattr(c, attr) for p, c in parts.items()}
        values[ROOT] = getattr(stage.total, attr)
        out.append(
            MetricTable(
                name,
                label,
                unit,
                kind,
                ANALYTIC_SOURCE.format(what=what, dtype_bytes=dtype_bytes),
                values,
                notes=dict(notes),
            )
        )
    return out


def _runs_matmul(op_bytes: Mapping[str, Mapping[str, int]], address: str) -> bool:
    """Whether a matmul-like op ran in the module or below it (TorchLens' op names)."""
    head = address + "." if address else ""
    for addr, ops in op_bytes.items():
        if addr == address or addr.startswith(head):
            if any(is_matmul_like(name) or "matmul" in name or "attention" in name for name in ops):
                return True
    return False


def measured_flops_table(measured: MeasuredFlops, cg: CallGraph, containers: Iterable[str] = ()) -> MetricTable:
    """FlopCounterMode's figure per module; 0 where the counter had nothing to count, no figure where
    a matmul ran that the counter never attributed to the module (see the module docstring). A path
    the tracker never enters (a ModuleList, a module called through `.forward()`, `containers`) gets the
    sum of its children, as the analytic model and the verification count it."""
    values: dict[str, float] = {p: v for p, v in measured.by_module.items()}
    values[ROOT] = measured.total
    notes: dict[str, str] = {}
    bypassing = set((cg.stats.get("calls_bypassing_hooks") or {}))
    for path in sorted(set(containers) | bypassing, key=lambda p: -p.count(".")):  # deepest first
        if path in values:
            continue
        head = path + "."
        kids = [k for k in values if k.startswith(head) and "." not in k[len(head) :]]
        if kids:
            values[path] = sum(values[k] for k in kids)
            notes[path] = CONTAINER_NOTE
    for address, n in cg.call_counts.items():
        if not n or address in values:
            continue
        if address in bypassing:
            notes[address] = (
                "called through .forward(): FlopCounterMode's module tracker never entered it, its "
                "FLOPs count in its caller"
            )
        elif not _runs_matmul(cg.op_output_bytes, address):
            values[address] = 0  # entered, nothing countable ran (norms, activations, embeddings)
        else:
            notes[address] = "not entered by the counted forward (routing may differ between forwards)"
    return MetricTable(
        "flops_measured",
        "measured FLOPs",
        "FLOP",
        "flops",
        "torch.utils.flop_counter.FlopCounterMode on the prefill forward (2 x multiply-adds of mm/addmm/bmm/conv/"
        f"SDPA; {', '.join(measured.extra_formulas) or 'no'} extra formulas), per module by its ModuleTracker",
        values,
        notes=notes,
    )


def observed_bytes_table(cg: CallGraph) -> MetricTable | None:
    """The bytes of the new tensors TorchLens saw the ops make (`op_families.materialised`), summed over each
    module's subtree."""
    if not cg.op_output_bytes:
        return None
    own = {a: float(materialised(ops)) for a, ops in cg.op_output_bytes.items()}
    inclusive = subtree_sums(own)
    values = {a: inclusive.get(a, 0.0) for a, n in cg.call_counts.items() if n}
    values[ROOT] = inclusive.get(ROOT, 0.0)
    return MetricTable(
        "activation_bytes_observed",
        "activation bytes observed",
        "B",
        "bytes",
        "TorchLens capture of the prefill forward: shape x element size of every op output that is a new tensor "
        "(compute and copy/cast ops; views, indexing and ops returning their input left out: callgraph.op_families), "
        "summed over the module's subtree and calls",
        values,
    )


def time_tables(profile: Any) -> list[MetricTable]:
    """`time_measured` (inclusive) and `time_measured_self` from a `ModuleTimes` (profile.json)."""
    from llm_perf_opt.measure.module_times import module_time_table

    table = module_time_table(profile)
    m = profile.method
    how = (
        f"torch.profiler ranges per module call ({m.get('time_base', '?')}); {m.get('warmup')} warm-up, "
        f"{m.get('repeats')} repeats, median of the summed calls; synchronisation: {m.get('synchronisation')}"
    )
    notes = {
        p: f"no range of its own ({u.get('kind', 'unhooked')}): its time is in its caller's self time"
        for p, u in profile.unhooked.items()
        if p not in table
    }
    inclusive = {p: row["inclusive_s"] for p, row in table.items()}
    self_s = {p: row["self_s"] for p, row in table.items() if row.get("source") == "ranges"}
    total = inclusive.get(ROOT) or profile.wall.get("profiled_s", {}).get("median")
    return [
        MetricTable("time_measured", "measured time", "s", "time", how, inclusive, total=total, notes=notes),
        MetricTable(
            "time_measured_self",
            "measured self time",
            "s",
            "time",
            how + " (self: minus child calls)",
            self_s,
            total=total,
            notes=notes,
        ),
    ]


def predicted_time_table(roofline: Any) -> MetricTable:
    """`time_predicted` from a loaded `roofline.json` (its prefill stage's parts): the ideal level."""
    stage = roofline.stages["prefill"]
    values = {row["path"]: row["time_s"] for row in stage.get("parts", []) if "path" in row and "time_s" in row}
    values[ROOT] = stage["total"]["time_s"]
    roof = roofline.roof
    label = roofline.hardware.get("label") or roofline.hardware.get("name") or "?"
    source = (
        f"roofline on {label} ({roofline.dtype}): max(compute, memory) per analytic unit, summed; "
        f"{roof.to_dict()}; convention in roofline.json"
    )
    return MetricTable("time_predicted", "predicted time", "s", "time", source, values)


LEVEL_TABLES = {"kernel": "time_predicted_kernel", "eager": "time_predicted_eager"}


def level_time_tables(roofline: Any) -> tuple[list[MetricTable], dict[str, str]]:
    """(`time_predicted_kernel` and `time_predicted_eager` from roofline.json version 2's prefill parts, {metric:
    why absent}): the time levels per node beside `time_predicted` (the ideal level)."""
    tables, absent = [], {}
    stage = roofline.stages["prefill"]
    model = getattr(roofline, "time_model", None) or {}
    total_levels = roofline.unit_levels("prefill")
    for level, name in LEVEL_TABLES.items():
        values = {
            row["path"]: row[f"{level}_s"]
            for row in stage.get("parts", [])
            if "path" in row and row.get(f"{level}_s") is not None
        }
        if level in total_levels and total_levels[level].get("time_s") is not None:
            values[ROOT] = total_levels[level]["time_s"]
        if not values:
            absent[name] = str((getattr(roofline, "absent_levels", {}) or {}).get(level) or "not in roofline.json")
            continue
        source = f"time level {level} on {model.get('label', '?')}: {(model.get('convention') or {}).get(level, '')}"
        tables.append(MetricTable(name, f"predicted time ({level})", "s", "time", source, values))
    return tables, absent


def module_costs(
    cg: CallGraph,
    analytic: StageCost | None = None,
    dtype_bytes: int | None = None,
    measured: MeasuredFlops | None = None,
    profile: Any = None,
    roofline: Any = None,
    reasons: Mapping[str, str] | None = None,
) -> ModuleCosts:
    """Every table the run can give; `reasons` says why a source is missing (by metric family)."""
    reasons = dict(reasons or {})
    metrics: list[MetricTable] = []
    absent: dict[str, str] = {}
    if analytic is not None:
        metrics += analytic_tables(analytic, dtype_bytes or 0)
    else:
        absent["flops_analytic"] = reasons.get("analytic", "the analytic stage did not run (trace.analytic=false)")
    if measured is not None:
        metrics.append(measured_flops_table(measured, cg, analytic.containers if analytic is not None else ()))
    else:
        absent["flops_measured"] = reasons.get("measured", "the verification stage did not run (trace.verify=false)")
    observed = observed_bytes_table(cg)
    if observed is not None:
        metrics.append(observed)
    else:
        absent["activation_bytes_observed"] = "the call graph has no op output bytes (written before schema 3)"
    if profile is not None:
        metrics += time_tables(profile)
    else:
        absent["time_measured"] = reasons.get("profile", "the profile stage did not run (no profile.json)")
    if roofline is not None:
        metrics.append(predicted_time_table(roofline))
        level_tables, level_absent = level_time_tables(roofline)
        metrics += level_tables
        absent.update(level_absent)
    else:
        absent["time_predicted"] = reasons.get("roofline", "no roofline.json: run with hardware=NAME")
    return ModuleCosts(stage="prefill", metrics=metrics, absent=absent)


def roofline_mismatch(roofline: Any, run: Mapping[str, Any] | None) -> str | None:
    """Why a roofline.json does not describe this run (another model spec, page layout or prompt length),
    or None when it does (or when the run's identity is unknown)."""
    if roofline is None or not run:
        return None
    data_layout = roofline.layout or {}
    for key, theirs, ours in (
        ("model", roofline.model, run.get("model")),
        ("layout", {k: data_layout.get(k) for k in (run.get("layout") or {})}, run.get("layout")),
    ):
        if ours is not None and theirs != ours:
            return f"roofline.json describes another run ({key} {theirs!r}, this run {ours!r}): not used"
    return None


def add_run_tables(costs: ModuleCosts, out_dir: Path, run: Mapping[str, Any] | None = None) -> list[str]:
    """Add the time tables of `profile.json` and `roofline.json` in `out_dir` that `costs` lacks (a profile
    or a roofline made after the trace); returns the names added. `run`: {model: spec name, layout}, to
    refuse a roofline of another run."""
    profile, roofline = load_optional(out_dir)
    if (reason := roofline_mismatch(roofline, run)) is not None:
        costs.absent["time_predicted"] = reason
        roofline = None
    added: list[str] = []
    have = set(costs.names())
    new = time_tables(profile) if profile is not None and "time_measured" not in have else []
    new += [predicted_time_table(roofline)] if roofline is not None and "time_predicted" not in have else []
    if roofline is not None:
        level_tables, level_absent = level_time_tables(roofline)
        new += [t for t in level_tables if t.name not in have]
        costs.absent.update({k: v for k, v in level_absent.items() if k not in have})
    for table in new:
        costs.metrics.append(table)
        costs.absent.pop(table.name, None)
        added.append(table.name)
    return added


# ---------------------------------------------------------------------------------------------- stage
def load_optional(out_dir: Path) -> tuple[Any, Any]:
    """(ModuleTimes from profile.json, RooflineArtifact from roofline.json), None where absent."""
    profile = roofline = None
    if (out_dir / PROFILE_FILE).is_file():
        from llm_perf_opt.measure.module_times import load_module_times

        profile = load_module_times(out_dir / PROFILE_FILE)
    if (out_dir / ROOFLINE_FILE).is_file():
        from llm_perf_opt.analytic.roofline_artifact import load_roofline

        roofline = load_roofline(out_dir / ROOFLINE_FILE)
    return profile, roofline


def run_identity(out_dir: Path) -> dict[str, Any] | None:
    """{model: spec name, layout} of the run in `out_dir` (its summary.json), None without one."""
    path = out_dir / "summary.json"
    if not path.is_file():
        return None
    from llm_perf_opt.run_artifacts import load_summary

    summary = load_summary(path)
    return {"model": summary.model.spec, "layout": dict(summary.layout.raw)}


def costs_on_graph(
    out_dir: Path,
    cg: CallGraph,
    *,
    analytic: StageCost | None,
    dtype_bytes: int | None,
    measured: MeasuredFlops | None,
    max_depth: int | None,
    formats: Any,
    color_by: str,
    config: Any = None,
    progress: Callable[[str], None] = lambda _m: None,
    checks: Any = None,
) -> dict[str, Any]:
    """module_costs.json, the grouped graph with costs on every node (JSON, DOT, SVG, Mermaid) and
    model_explorer/; returns the summary section (metrics, nodes covered, files)."""
    profile, roofline = load_optional(out_dir)
    mismatch = roofline_mismatch(roofline, run_identity(out_dir))
    costs = module_costs(
        cg,
        analytic,
        dtype_bytes,
        measured,
        profile,
        None if mismatch else roofline,
        reasons={"roofline": mismatch} if mismatch else None,
    )
    costs.save(out_dir / MODULE_COSTS_FILE, config=config)
    grouped, files = group_and_render(
        cg,
        out_dir,
        max_depth=max_depth,
        formats=formats,
        runtime_log=cg.runtime_log,
        checks=checks,
        config=config,
        costs=costs,
        color_by=color_by,
    )
    explorer = write_model_explorer(grouped, cg, costs, out_dir / "model_explorer")
    covered = {
        m.name: sum(1 for n in grouped.nodes if (n.costs.get(m.name) or {}).get("total") is not None)
        for m in costs.metrics
    }
    progress(
        f"costs on the graph: {', '.join(f'{k} on {v}/{len(grouped.nodes)} nodes' for k, v in covered.items())}"
        + (f"; absent: {', '.join(costs.absent)}" if costs.absent else "")
    )
    return {
        "metrics": costs.names(),
        "absent": dict(costs.absent),
        "nodes": len(grouped.nodes),
        "nodes_with_figure": covered,
        "color_by": color_by,
        "stacks": [n.name + f" for {n.for_n}" for n in grouped.stacks()],
        "variants": {n.name: [f"{v.label} x{len(v.members)}" for v in n.variants] for n in grouped.nodes if n.variants},
        "files": {
            **{fmt: p.name for fmt, p in files.items()},
            MODULE_COSTS_FILE: MODULE_COSTS_FILE,
            **{k: str(p.relative_to(out_dir)) for k, p in explorer.items()},
        },
        "notes": list(grouped.notes),
    }

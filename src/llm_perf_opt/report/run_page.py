"""`run.html`: one run on one self-contained page (inline CSS, SVG and script; nothing fetched).

What it shows, from the run directory's artifacts (whatever is there; a missing one is said so):
the page, grid and tokens (`summary.json`); the stage and part cost table, analytic against measured
(`summary.json`, `module_costs.json`: FLOPs, bytes, measured and predicted time per part); the grouped
call graph (`callgraph.grouped.svg`), where clicking a node opens a side panel with everything the
grouped graph knows about it (`callgraph.grouped.json`: pattern, for / parfor, calls, parameters,
constructor parameters, I/O shapes and dtypes, every cost with its per-instance figures, the variants);
the runtime checks; at the top, time per stage, part and decode step, measured and predicted at each time
level the run has (`report.time_levels`, drawn by `report.run_charts`), and an icicle of measured time over
the grouped call tree (a click on a bar or a cell opens the node's panel); the roofline plot when the run has
one (`roofline.svg`); links to every artifact of
the run (`run_artifacts.RUN_FILES` and the Model Explorer files).

`write_run_page(run_dir)` is called by the trace job after its last stage and by `./dev group`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt import units
from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.callgraph.grouped import GroupedGraph, GroupNode, load_grouped_json
from llm_perf_opt.callgraph.heat import Heat, format_value
from llm_perf_opt.callgraph.labels import for_text, repeat_text
from llm_perf_opt.callgraph.node_costs import (
    MODULE_COSTS_FILE,
    ModuleCosts,
    load_module_costs,
)
from llm_perf_opt.report.render import render_page
from llm_perf_opt.report.run_charts import icicle_cells, level_colour, time_chart_svg
from llm_perf_opt.report.time_levels import run_times
from llm_perf_opt.run_artifacts import RUN_FILES, Summary, load_summary

RUN_PAGE = "run.html"
ROOFLINE_SVG = "roofline.svg"
GROUPED_SVG = "callgraph.grouped.svg"
GROUPED_JSON = "callgraph.grouped.json"
MAX_MEMBERS = 24


def _svg_markup(path: Path) -> Optional[str]:
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    start = text.find("<svg")
    return text[start:] if start >= 0 else None


def _value(costs: Optional[ModuleCosts], metric: str, path: str) -> Optional[float]:
    table = costs.get(metric) if costs is not None else None
    return None if table is None else table.values.get(path)


def _rel(a: Optional[float], m: Optional[float]) -> Optional[float]:
    if a is None or m is None:
        return None
    if a == m:
        return 0.0
    return abs(a - m) / abs(m) if m else None


def part_rows(costs: Optional[ModuleCosts], vocabulary: Any = None) -> list[dict[str, Any]]:
    """One row per part of the family's vocabulary (and each decoder layer) the run's tables know, forward order."""
    paths: list[tuple[str, str]] = [("", "whole forward")]
    known = set()
    if costs is not None:
        for t in costs.metrics:
            known.update(t.values)
    for part in vocabulary.parts if vocabulary is not None else ():
        paths.append((part.path, part.label))
        if part.path == vocabulary.decoder_stack:
            i = 0
            while vocabulary.decoder_layer_path(i) in known:
                paths.append((vocabulary.decoder_layer_path(i), f"  layer {i}"))
                i += 1
    rows = []
    for path, label in paths:
        if path and path not in known:
            continue
        a, m = _value(costs, "flops_matmul_analytic", path), _value(costs, "flops_measured", path)
        rows.append(
            {
                "path": path or "(root)",
                "label": label,
                "flops_analytic": units.flops(_value(costs, "flops_analytic", path)),
                "flops_matmul_analytic": units.flops(a),
                "flops_measured": units.flops(m),
                "rel_error": units.percent(_rel(a, m)),
                "io_bytes": units.nbytes(_value(costs, "io_bytes_analytic", path)),
                "act_analytic": units.nbytes(_value(costs, "activation_bytes_analytic", path)),
                "act_observed": units.nbytes(_value(costs, "activation_bytes_observed", path)),
                "time_measured": units.seconds(_value(costs, "time_measured", path)),
                "time_predicted": units.seconds(_value(costs, "time_predicted", path)),
            }
        )
    return rows


def stage_rows(summary: Summary) -> list[dict[str, Any]]:
    rows = []
    stages = summary.analytic.stages if summary.analytic is not None else {}
    flops = summary.flops or {}
    for name in list(dict.fromkeys(list(stages) + list(flops))):
        s, f = stages.get(name), flops.get(name)
        rows.append(
            {
                "stage": name,
                "flops": units.flops(s.flops if s else None),
                "flops_matmul": units.flops(s.flops_matmul if s else None),
                "measured": units.flops(f.measured if f else None),
                "rel_error": units.percent(f.rel_error if f else None),
                "ok": "—" if f is None or f.ok is None else ("ok" if f.ok else "NO"),
                "io": units.nbytes(s.io_bytes if s else None),
                "weights": units.nbytes(s.weight_bytes if s else None),
                "activations": units.nbytes(s.activation_bytes if s else None),
            }
        )
    return rows


def _fmt_meta(meta: Any) -> str:
    if isinstance(meta, Mapping):
        shape = meta.get("shape")
        dtype = str(meta.get("dtype", "")).replace("torch.", "")
        name = meta.get("path", "")
        if shape is not None:
            return f"{name + ': ' if name else ''}{dtype}[{', '.join(str(s) for s in shape)}]"
        return ", ".join(f"{k}={v}" for k, v in meta.items())
    return str(meta)


def _figure_row(metric: Mapping[str, Any], fig: Mapping[str, Any] | None) -> dict[str, Any]:
    kind = metric["kind"]
    fig = fig or {}
    if fig.get("total") is None:
        return {
            "label": metric["label"],
            "total": "—",
            "share": "—",
            "mean": "—",
            "min": "—",
            "max": "—",
            "slowest": "",
            "note": fig.get("reason", "no figure") + _notes(fig),
        }
    incomplete = "" if fig.get("complete", True) else f"{fig['with_figure']} of {fig['instances']} instances"
    return {
        "label": metric["label"],
        "total": format_value(fig["total"], kind),
        "share": units.percent(fig.get("share")),
        "mean": format_value(fig.get("mean"), kind),
        "min": format_value(fig.get("min"), kind),
        "max": format_value(fig.get("max"), kind),
        "slowest": fig.get("slowest") if fig.get("instances", 1) > 1 else "",
        "note": "; ".join(x for x in (incomplete, _notes(fig).strip("; ")) if x),
    }


def _notes(fig: Mapping[str, Any]) -> str:
    return ("; " + "; ".join(fig["notes"])) if fig.get("notes") else ""


def node_detail(node: GroupNode, grouped: GroupedGraph) -> dict[str, Any]:
    """Everything the grouped graph knows about one node, as text for the side panel."""
    members = node.members
    return {
        "id": node.id,
        "title": f"{node.name} {for_text(node)}".strip(),
        "class_name": node.class_name,
        "pattern": node.pattern or "(root)",
        "repeat": repeat_text(node) or "called once per parent call",
        "calls": node.calls,
        "parent_calls": node.parent_calls,
        "params": f"{node.params:,}",
        "instances": len(members),
        "members": members[:MAX_MEMBERS],
        "more_members": max(0, len(members) - MAX_MEMBERS),
        "static_n": node.static_n,
        "sparse": node.sparse,
        "value_dependent": node.value_dependent,
        "constructor": {k: json.dumps(v, default=str) for k, v in node.constructor_params.items()},
        "varying": node.varying_params,
        "inputs": [_fmt_meta(m) for m in node.input_shapes],
        "outputs": [_fmt_meta(m) for m in node.output_shapes],
        "ops": f"{node.ops_self:,} self / {node.ops_total:,} subtree",
        "outputs_bytes": units.nbytes(node.activation_bytes),
        "costs": [_figure_row(m, node.costs.get(m["name"])) for m in grouped.metrics],
        "absent": dict(grouped.absent_metrics),
        "variants": [
            {
                "label": v.label,
                "count": len(v.members),
                "params": f"{v.params:,}",
                "members": ", ".join(v.members[:MAX_MEMBERS]) + (" …" if len(v.members) > MAX_MEMBERS else ""),
                "costs": [_figure_row(m, v.costs.get(m["name"])) for m in grouped.metrics],
            }
            for v in node.variants
        ],
    }


def artifact_links(run_dir: Path) -> list[dict[str, str]]:
    links = []
    for entry in RUN_FILES:
        if (run_dir / entry.file).is_file() and entry.file != RUN_PAGE:
            links.append({"href": entry.file, "name": entry.file, "doc": entry.doc})
    extra = sorted(
        p
        for p in run_dir.glob("*")
        if p.is_file()
        and p.name not in {link["name"] for link in links}
        and p.name != RUN_PAGE
        and not p.name.startswith(".")
    )
    links += [{"href": p.name, "name": p.name, "doc": ""} for p in extra]
    explorer = run_dir / "model_explorer"
    if explorer.is_dir():
        for p in sorted(explorer.glob("*.json")):
            if p.name not in ("graph.json", "raw.json"):
                links.append(
                    {
                        "href": f"model_explorer/{p.name}",
                        "name": f"model_explorer/{p.name}",
                        "doc": "Model Explorer node data (./dev explore RUN_DIR)",
                    }
                )
    return links


def serving_view(run_dir: Path) -> Optional[dict[str, Any]]:
    """The run page's Serving section: serving.json's figures at the job's batch, the knee, and curve.svg."""
    from llm_perf_opt.analytic.serving_file import SERVING_FILE, load_serving

    if not (run_dir / SERVING_FILE).is_file():
        return None
    s = load_serving(run_dir)
    facts = [("batch", f"{s.batch}, {s.output_tokens} output tokens per page")]
    p = s.point
    if p:
        st, cb, mem = p["static"], p["continuous"], p["memory"]
        facts += [
            (
                "static batching",
                f"TTFT {units.seconds(st['ttft_s'])} · TPOT {units.seconds(st['tpot_s'])} · "
                f"{st['tokens_per_s']:,.0f} tokens/s · {st['pages_per_day']:,.0f} pages/day",
            ),
            (
                "continuous batching",
                f"TTFT {units.seconds(cb['ttft_s'])} · TPOT {units.seconds(cb['tpot_s'])} · "
                f"{cb['tokens_per_s']:,.0f} tokens/s · {cb['pages_per_day']:,.0f} pages/day",
            ),
            (
                "decode step",
                f"{units.seconds(p['decode_step_s'])} ({p['decode_bound']}-bound); prefill "
                f"{units.seconds(p['prefill_s'])} ({p['prefill_bound']}-bound)",
            ),
            (
                "memory",
                f"weights {units.nbytes(mem['weights_bytes'])} + KV {units.nbytes(mem['kv_cache_bytes'])} + "
                + (f"inputs {units.nbytes(mem['input_bytes'])} + " if "input_bytes" in mem else "")
                + f"activations {units.nbytes(mem['activation_bytes'])} + allowance "
                f"{units.nbytes(mem['allowance_bytes'])} = {units.nbytes(mem['total_bytes'])}"
                + (
                    f" of {units.nbytes(mem['capacity_bytes'])} ({'fits' if mem['fits'] else 'does not fit'})"
                    if mem.get("capacity_bytes")
                    else ""
                )
                + f"; dominant: {mem['dominant']}",
            ),
        ]
    fits = s.max_fit_batch or {}
    if any(v is not None for v in fits.values()):
        facts.append(("largest batch that fits", f"{fits.get('static')} static, {fits.get('continuous')} continuous"))
    if s.knee:
        facts.append(
            (
                "knee",
                f"{s.knee['batch'] if s.knee['batch'] is not None else 'none in range'} "
                f"({s.knee['reason']}): {s.knee['note']}",
            )
        )
    eng = s.engine or {}
    facts.insert(0, ("engine", f"{eng.get('name')}: {eng.get('summary', '')}"))
    facts.extend(("assumes", a) for a in eng.get("assumes", ()))
    for r in (s.measured or {}).get("rows", ()):
        facts.append(
            (
                f"measured at batch {r['batch']}",
                f"prefill {r['prefill_measured_s'] * 1e3:,.2f} ms vs hf_eager {r['prefill_predicted_s'] * 1e3:,.2f} ms "
                f"({r['prefill_ratio']:.2f}x); decode step {r['step_measured_s'] * 1e3:,.2f} ms vs "
                f"{r['step_predicted_s'] * 1e3:,.2f} ms ({r['step_ratio']:.2f}x)",
            )
        )
    return {
        "level": s.level,
        "convention": s.level_convention,
        "device": s.hardware.get("name"),
        "facts": facts,
        "curve_svg": _svg_markup(run_dir / "curve.svg"),
    }


def run_page_data(run_dir: Path, vocabulary: Any = None) -> dict[str, Any]:
    run_dir = Path(run_dir)
    summary = load_summary(run_dir / "summary.json")
    grouped = load_grouped_json(run_dir / GROUPED_JSON) if (run_dir / GROUPED_JSON).is_file() else None
    costs = load_module_costs(run_dir / MODULE_COSTS_FILE) if (run_dir / MODULE_COSTS_FILE).is_file() else None
    lay, tok, wl = summary.layout, summary.tokens, summary.workload
    heat = Heat.of(grouped, grouped.source.get("color_by") or "none") if grouped is not None else None
    times = run_times(run_dir)
    icicle, icicle_rows = icicle_cells(grouped)
    return {
        "times": times,
        "time_chart_svg": time_chart_svg(times, grouped),
        "level_colours": {lv: level_colour(lv, times.levels) for lv in times.levels},
        "icicle": icicle,
        "icicle_rows": icicle_rows,
        "title": f"Run: {summary.model.name} · {wl.mode} · {summary.page.width}×{summary.page.height}",
        "summary": summary,
        "run_dir": str(run_dir),
        "facts": [
            ("model", f"{summary.model.name} ({summary.model.source}, spec {summary.model.spec})"),
            ("mode", f"{wl.mode}: " + ", ".join(f"{k} {v}" for k, v in wl.extra.items()) if wl.extra else wl.mode),
            (
                "page",
                f"{summary.page.width} × {summary.page.height}"
                + (f" ({summary.page.image})" if summary.page.image else " (synthetic)"),
            ),
            ("grid", f"{lay.grid} ({lay.num_crops} crops, {lay.num_views} views)"),
            ("tokens", f"{tok.image} image, {tok.prompt} prompt, {tok.sequence} in the sequence"),
            (
                "runtime",
                f"{summary.runtime.device}, {summary.runtime.dtype}, attention {summary.runtime.attn_implementation}",
            ),
            ("forward", units.seconds(summary.forward.seconds) if summary.forward else "—"),
            ("status", summary.status),
        ],
        "stages": stage_rows(summary),
        "parts": part_rows(costs, vocabulary),
        "metrics": list(grouped.metrics) if grouped is not None else [],
        "absent": dict(grouped.absent_metrics) if grouped is not None else ({} if costs is None else costs.absent),
        "graph_svg": _svg_markup(run_dir / GROUPED_SVG),
        "graph_note": None
        if (run_dir / GROUPED_SVG).is_file()
        else "no callgraph.grouped.svg in this run (trace.capture=false, or Graphviz' dot was missing)",
        "legend": heat.legend() if heat is not None and heat.active else [],
        "legend_title": heat.title() if heat is not None and heat.active else "",
        "nodes": [node_detail(n, grouped) for n in grouped.nodes] if grouped is not None else [],
        "checks": list(grouped.checks) if grouped is not None else [],
        "notes": list(grouped.notes) if grouped is not None else [],
        "roofline_svg": _svg_markup(run_dir / ROOFLINE_SVG),
        "serving": serving_view(run_dir),
        "links": artifact_links(run_dir),
    }


def write_run_page(run_dir: str | Path, vocabulary: Any = None) -> Path:
    """Write `run.html` into the run directory from its artifacts; return its path. `vocabulary`: the model
    family's parts (the per-part table's rows), handed down by the job."""
    run_dir = Path(run_dir)
    return atomic_write_text(run_dir / RUN_PAGE, render_page("run.html.j2", **run_page_data(run_dir, vocabulary)))

"""`run.html`: one run on one self-contained page (inline CSS, SVG and script; nothing fetched).

What it shows, from the run directory's artifacts (whatever is there; a missing one is said so):
the page, grid and tokens (`summary.json`); the stage and part cost table, analytic against measured
(`summary.json`, `module_costs.json`: FLOPs, bytes, measured and predicted time per part); the grouped
call graph (`callgraph.grouped.svg`), where clicking a node opens a side panel with everything the
grouped graph knows about it (`callgraph.grouped.json`: pattern, for / parfor, calls, parameters,
constructor parameters, I/O shapes and dtypes, every cost with its per-instance figures, the variants);
the runtime checks. The first screen: the headline card (`time_levels.headline`: per stage measured against
the prediction at the bound level, the ratio, the bound, the accuracy line, the verdict), the stage chart
(linear, numbers on the bars, the legend beside it; `run_charts.stage_chart_svg`) and the parts' shares
(`run_charts.share_rows`); the side panel opens on the longest stage (`time_levels.stage_details`). Below: time
per stage, part and decode step at each level (log axis), an icicle of measured time over the grouped call tree,
the grouped call tree as an outline opened to the parts (`tree_rows`), the Graphviz drawing one click away (its
node tooltips the module path, kind and times: `graph_markup`); the roofline plot (`roofline.svg`); serving at
each level; links to every artifact of the run (`run_artifacts.RUN_FILES` and the Model Explorer files). Every
time names its quantity (`llm_perf_opt.quantities`).

`write_run_page(run_dir)` is called by the trace job after its last stage and by `./dev group`.
"""

from __future__ import annotations

import json
import re
from html import escape
from pathlib import Path
from typing import Any, Mapping, Optional

from markupsafe import Markup

from llm_perf_opt import quantities, units
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
from llm_perf_opt.report.run_charts import (
    icicle_cells,
    level_colour,
    node_of_path,
    series_of,
    share_rows,
    stage_chart_svg,
    time_chart_svg,
)
from llm_perf_opt.report.time_levels import headline, run_times, stage_details
from llm_perf_opt.run_artifacts import RUN_FILES, Summary, load_summary

RUN_PAGE = "run.html"
ROOFLINE_SVG = "roofline.svg"
GROUPED_SVG = "callgraph.grouped.svg"
GROUPED_JSON = "callgraph.grouped.json"
MAX_MEMBERS = 24
LEVEL_METRICS = {"ideal": "time_predicted", "kernel": "time_predicted_kernel", "eager": "time_predicted_eager"}


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


METRIC_QUANTITY = {"time_measured": "ranges", **{metric: lv for lv, metric in LEVEL_METRICS.items()}}


def _figure_row(metric: Mapping[str, Any], fig: Mapping[str, Any] | None) -> dict[str, Any]:
    kind = metric["kind"]
    fig = fig or {}
    q = METRIC_QUANTITY.get(metric["name"])
    if q is not None:  # a time says which quantity it is
        metric = {**metric, "label": f"{metric['label']} ({quantities.label(q)})"}
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
        "title": wbr(f"{node.name} {for_text(node)}".strip()),
        "class_name": node.class_name,
        "pattern": wbr(node.pattern or "(root)"),
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
                f"{r['step_predicted_s'] * 1e3:,.2f} ms ({r['step_ratio']:.2f}x)"
                + (
                    f"; at the experts the calls touched {r['prefill_ratio_touched']:.2f}x and "
                    f"{r['step_ratio_touched']:.2f}x"
                    if "step_ratio_touched" in r
                    else ""
                ),
            )
        )
    return {
        "engine": eng.get("name"),
        "level": s.level,
        "convention": s.level_convention,
        "device": s.hardware.get("name"),
        "facts": facts,
        "curve_svg": _svg_markup(run_dir / "curve.svg"),
    }


WBR_AFTER = ".,_/"


def wbr(text: Any) -> Markup:
    """Escaped text with a line-break opportunity after every dot, comma, underscore and slash: a long module path
    wraps at its dots in a narrow panel, never inside a word."""
    out = str(escape(str(text)))
    for ch in WBR_AFTER:
        out = out.replace(ch, ch + "<wbr>")
    return Markup(out)


def _total(node: GroupNode, metric: str) -> Optional[float]:
    return (node.costs.get(metric) or {}).get("total")


def node_costs_line(node: GroupNode) -> str:
    """The node's time at each quantity, each named: its tooltip's second line and the tree's text."""
    bits = []
    m = _total(node, "time_measured")
    if m is not None:
        bits.append(f"{units.seconds(m)} {quantities.label('ranges')}")
    pred = [(lv, _total(node, metric)) for lv, metric in LEVEL_METRICS.items()]
    if any(v is not None for _, v in pred):
        bits.append("predicted " + " / ".join(f"{lv} {units.seconds(v)}" for lv, v in pred if v is not None))
    return "; ".join(bits) or "no time figure"


def node_tooltip(node: GroupNode) -> str:
    return f"{node.pattern or '(root)'} ({node.class_name})\n{node_costs_line(node)}"


def graph_markup(svg: Optional[str], grouped: Optional[GroupedGraph]) -> Optional[str]:
    """The grouped SVG with each node's tooltip its module path, kind and costs per level (Graphviz writes its own
    ids, "n0", as the node's <title>, and a long xlink:title; both replaced)."""
    if svg is None or grouped is None:
        return svg
    ids = {n.id: n for n in grouped.nodes}

    def title(match: "re.Match[str]") -> str:
        node = ids.get(match.group(1))
        return match.group(0) if node is None else f"<title>{escape(node_tooltip(node))}</title>"

    svg = re.sub(r"<title>([^<]*)</title>", title, svg)
    return re.sub(r'\sxlink:title="[^"]*"', "", svg)


def tree_rows(grouped: Optional[GroupedGraph], part_paths: set[str]) -> list[dict[str, Any]]:
    """The grouped graph as an outline, depth first: {id, parent, depth, has_children, name, pattern, kind, share
    (of the root's measured time), text, title, open}. Open at first: the root and every ancestor of a part node
    (a node holding one of `part_paths`), so the first view shows the stages' parts and nothing deeper."""
    if grouped is None:
        return []
    root = grouped.node(grouped.root)
    total = _total(root, "time_measured")
    parts = {n.id for n in grouped.nodes if part_paths & set(n.members)}
    open_ids: set[str] = {root.id}
    for pid in parts:
        n = grouped.node(pid)
        while n.parent:
            open_ids.add(n.parent)
            n = grouped.node(n.parent)
    rows: list[dict[str, Any]] = []

    def visit(node_id: str, depth: int) -> None:
        node = grouped.node(node_id)
        parent = grouped.node(node.parent) if node.parent else None
        name = node.pattern or "(root)"
        if parent is not None and parent.pattern and name.startswith(parent.pattern + "."):
            name = name[len(parent.pattern) + 1 :]
        m = _total(node, "time_measured")
        up, visible = node.parent, True
        while up:
            visible = visible and up in open_ids
            up = grouped.node(up).parent
        rows.append(
            {
                "visible": visible,
                "measured": m,
                **{lv: _total(node, metric) for lv, metric in LEVEL_METRICS.items()},
                "id": node.id,
                "parent": node.parent or "",
                "depth": depth,
                "has_children": bool(node.children),
                "name": name if depth else "whole forward",
                "for": for_text(node),
                "pattern": node.pattern or "(root)",
                "kind": node.class_name,
                "share": 100 * m / total if m and total else 0.0,
                "text": node_costs_line(node),
                "title": node_tooltip(node),
                "open": node.id in open_ids,
                "part": node.id in parts,
            }
        )
        for child in node.children:
            visit(child, depth + 1)

    visit(root.id, 0)
    return rows


def run_page_data(run_dir: Path, vocabulary: Any = None) -> dict[str, Any]:
    run_dir = Path(run_dir)
    summary = load_summary(run_dir / "summary.json")
    grouped = load_grouped_json(run_dir / GROUPED_JSON) if (run_dir / GROUPED_JSON).is_file() else None
    costs = load_module_costs(run_dir / MODULE_COSTS_FILE) if (run_dir / MODULE_COSTS_FILE).is_file() else None
    lay, tok, wl = summary.layout, summary.tokens, summary.workload
    heat = Heat.of(grouped, grouped.source.get("color_by") or "none") if grouped is not None else None
    times = run_times(run_dir)
    icicle, icicle_rows = icicle_cells(grouped)
    part_paths = {r.path for r in times.rows if r.kind == "part" and r.path and "layer." not in r.label}
    node_of = node_of_path(grouped)
    shares = share_rows(times)
    for st in shares:
        for cell in st["parts"]:
            cell["node"] = node_of.get(cell["path"] or "\0")
    return {
        "times": times,
        "time_chart_svg": time_chart_svg(times, grouped),
        "stage_chart_svg": stage_chart_svg(times),
        "series": series_of(times),
        "shares": shares,
        "headline": headline(times),
        "stage_details": stage_details(times, node_of),
        "tree": tree_rows(grouped, part_paths),
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
            (
                "first forward",
                f"{units.seconds(summary.forward.seconds)} ({quantities.label('first_forward')})"
                if summary.forward
                else "—",
            ),
            ("status", summary.status),
        ],
        "stages": stage_rows(summary),
        "parts": part_rows(costs, vocabulary),
        "metrics": list(grouped.metrics) if grouped is not None else [],
        "absent": dict(grouped.absent_metrics) if grouped is not None else ({} if costs is None else costs.absent),
        "graph_svg": graph_markup(_svg_markup(run_dir / GROUPED_SVG), grouped),
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

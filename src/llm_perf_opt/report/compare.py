"""Two runs side by side (`./dev compare RUN_A RUN_B`): per grouped node and per stage, part and decode step,
FLOPs, bytes, measured and predicted time, their deltas (B − A) and ratios (B / A). Reads the runs'
artifacts only (never recomputes the analytic model).

Matching:
- grouped nodes by module path: a node's pattern with every index bracket made a wildcard
  (`model.layers.[1-2].mlp` -> `model.layers.[*].mlp`), so the same structure matches across depths (3
  layers against 12) and across models with the same module tree (twin against vendor). Nodes one side
  lacks are listed per side (other families, other module names); two nodes of one run under the same key
  are told apart by class, then by order.
- stages, parts and decode steps by name (`report.time_levels`); time levels present in either run.

Bad input, one line each (exit 2 in the job): a directory that is not a run (no `summary.json`), an
unreadable artifact, the two runs holding one artifact at different schema versions; and a run that cannot be
compared honestly: one still running (a live process holds its lock), one that did not end `ok` (failed,
interrupted, or killed: `running` with no live holder), one without a call graph (`callgraph.grouped.json`:
traced with `trace.capture=false`, or its files removed), whose nodes nothing could be matched against.

What differs between the runs (model family, model, batch, mode, page, dtype, attention, device, the hardware
their times were predicted on) is said first (`Comparison.differences`): on the page's top and in the job's
output, with what it means for the figures (a batch of 2 runs twice the sequences, so its FLOPs double; two
families match only the modules whose paths they share).

Outputs in the output directory: `compare.html` (the run page's look), `compare.csv` (one row per compared
figure: section, key, metric, a, b, delta, ratio) and `compare.graph.svg` / `.dot`: run B's grouped graph
coloured by `render.color_by=delta_time` (B's measured time minus A's, per matched node; faster in blues,
slower in reds, unmatched grey).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from llm_perf_opt import quantities, units
from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.callgraph.grouped import GroupedGraph, GroupNode, load_grouped_json
from llm_perf_opt.callgraph.heat import signed_text
from llm_perf_opt.errors import ArtifactError, ConfigError
from llm_perf_opt.report.time_levels import KNOWN_LEVELS, RunTimes, run_times
from llm_perf_opt.run_artifacts import RUN_FILES, Summary, load_summary

COMPARE_HTML, COMPARE_CSV, COMPARE_STEM = "compare.html", "compare.csv", "compare.graph"
# the per-node figures compared, when both graphs carry them (metric name, kind)
NODE_METRICS = (
    ("flops_analytic", "flops"),
    ("flops_measured", "flops"),
    ("io_bytes_analytic", "bytes"),
    ("activation_bytes_observed", "bytes"),
    ("time_measured", "time"),
    ("time_measured_self", "time"),
    ("time_predicted", "time"),
)
SELF_TIME = "time_measured_self"  # the profiler's time in the node less its child calls: what "changed most" ranks
_BRACKET = re.compile(r"\[[^\]]*\]")


# ------------------------------------------------------------------------------------------------ runs
@dataclass
class Run:
    dir: Path
    name: str  # "A" or "B"
    summary: Summary
    grouped: Optional[GroupedGraph]
    times: RunTimes
    versions: dict[str, int]  # file -> schema_version, of the JSON artifacts present
    family: str = ""  # the model family (`model.family` of the run's saved config), "" when unknown

    @property
    def batch(self) -> int:
        return self.summary.tokens.batch

    def label(self) -> str:
        s, wl = self.summary, self.summary.workload
        return (
            f"{s.model.name} · {wl.mode} · {s.page.width}×{s.page.height} · batch {self.batch} · {s.runtime.dtype} · "
            f"attention {s.runtime.attn_implementation}"
        )

    def facts(self) -> dict[str, str]:
        s = self.summary
        return {
            "directory": str(self.dir),
            "family": self.family or "—",
            "model": f"{s.model.name} ({s.model.source}, spec {s.model.spec})",
            "batch": f"{self.batch} sequence{'s' if self.batch != 1 else ''}",
            "mode": s.workload.mode,
            "page": f"{s.page.width} × {s.page.height}",
            "tokens": f"{s.tokens.image} image, {s.tokens.sequence} in the sequence",
            "runtime": f"{s.runtime.device}, {s.runtime.dtype}, attention {s.runtime.attn_implementation}",
            "forward": units.seconds(s.forward.seconds) if s.forward else "—",
            "status": s.status,
            "predicted on": self.times.roof,
        }


def _schema_version(path: Path) -> Optional[int]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ArtifactError(f"{path}: not readable JSON ({exc})") from None
    v = doc.get("schema_version") if isinstance(doc, dict) else None
    return v if isinstance(v, int) else None


def saved_family(run_dir: Path) -> str:
    """`model.family` of the run's saved Hydra config (`.hydra/config.yaml`), "" when it has none."""
    saved = run_dir / ".hydra" / "config.yaml"
    if not saved.is_file():
        return ""
    from omegaconf import OmegaConf

    try:
        return str(OmegaConf.select(OmegaConf.load(saved), "model.family", default="") or "")
    except Exception:  # noqa: BLE001 - an unreadable saved config: the family stays unknown
        return ""


def open_run(path: str | Path, name: str, default_family: str = "") -> Run:
    """A run directory, read for comparison; one-line errors for anything that is not a readable run, or not one
    that can be compared honestly (live, not ended ok, no call graph)."""
    from llm_perf_opt.run_lock import holder

    p = Path(path)
    if not p.is_dir():
        raise ConfigError(f"run {name} {p}: not a run directory ({'a file' if p.exists() else 'no such directory'})")
    if not (p / "summary.json").is_file():
        raise ConfigError(
            f"run {name} {p}: not a run directory (no summary.json; a sweep directory holds one run per job)"
        )
    live = holder(p)
    if live is not None:
        pid = f"pid {live['pid']}" if live.get("pid") else "another process"
        since = f", since {live['started']}" if live.get("started") else ""
        raise ConfigError(
            f"run {name} {p}: still running ({pid} holds it{since}): its files are not final; compare it once "
            "the job ends"
        )
    versions = {}
    for f in RUN_FILES:
        if f.is_artifact and "/" not in f.file and (p / f.file).is_file():
            v = _schema_version(p / f.file)
            if v is not None:
                versions[f.file] = v
    summary = load_summary(p / "summary.json")
    if summary.status != "ok":
        how = (
            "was killed (status running, and no process holds it)"
            if summary.status == "running"
            else (f"ended {summary.status}")
        )
        at = f" at stage {summary.stage}" if summary.stage else ""
        why = f": {summary.error.type}: {summary.error.message}" if summary.error else ""
        raise ConfigError(
            f"run {name} {p}: {how}{at}{why}; its figures are partial, so compare needs two runs that ended ok"
        )
    if not (p / "callgraph.grouped.json").is_file():
        has_capture = (p / "callgraph.json").is_file()
        raise ConfigError(
            f"run {name} {p}: no call graph (callgraph.grouped.json"
            + (
                "; regroup it with ./dev group RUN_DIR)"
                if has_capture
                else ", nor callgraph.json: traced with trace.capture=false?)"
            )
            + ": compare matches the two runs node by node, so both need one"
        )
    grouped = load_grouped_json(p / "callgraph.grouped.json")
    family = saved_family(p) or default_family
    return Run(p, name, summary, grouped, run_times(p), versions, family)


def check_compatible(a: Run, b: Run) -> None:
    for file in sorted(set(a.versions) & set(b.versions)):
        if a.versions[file] != b.versions[file]:
            raise ArtifactError(
                f"incompatible schema versions: {file} is version {a.versions[file]} in run A "
                f"({a.dir}) and {b.versions[file]} in run B ({b.dir})"
            )


# ------------------------------------------------------------------------------------------------ figures
def delta(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return None if a is None or b is None else b - a


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    if a is None or b is None:
        return None
    if a == 0:
        return 1.0 if b == 0 else None
    return b / a


@dataclass
class Figure:
    metric: str
    kind: str  # flops | bytes | time
    a: Optional[float]
    b: Optional[float]

    @property
    def delta(self) -> Optional[float]:
        return delta(self.a, self.b)

    @property
    def ratio(self) -> Optional[float]:
        return ratio(self.a, self.b)

    def text(self, which: str) -> str:
        v = getattr(self, which)
        if v is None:
            return "—"
        if which == "ratio":
            return f"{v:.3g}×"
        if which == "delta":
            return signed_text(v, self.kind)
        return _fmt(v, self.kind)


def _fmt(v: Optional[float], kind: str) -> str:
    return {"flops": units.flops, "bytes": units.nbytes, "time": units.seconds}[kind](v)


@dataclass
class Row:
    section: str  # "node" | "stage" | "part" | "step"
    key: str
    label: str
    figures: list[Figure]
    a_id: Optional[str] = None  # grouped node ids
    b_id: Optional[str] = None
    note: str = ""

    def figure(self, metric: str) -> Optional[Figure]:
        return next((f for f in self.figures if f.metric == metric), None)


# ------------------------------------------------------------------------------------------------ nodes
def node_key(node: GroupNode) -> str:
    """The module path a node is matched by: its pattern with index brackets as wildcards."""
    return _BRACKET.sub("[*]", node.pattern) if node.pattern else "(root)"


def keyed_nodes(grouped: Optional[GroupedGraph]) -> dict[str, GroupNode]:
    out: dict[str, GroupNode] = {}
    if grouped is None:
        return out
    for n in grouped.nodes:
        key = node_key(n)
        if key in out:
            key = f"{key} ({n.class_name})"
        i = 2
        base = key
        while key in out:
            key, i = f"{base} #{i}", i + 1
        out[key] = n
    return out


def _total(node: Optional[GroupNode], metric: str) -> Optional[float]:
    if node is None:
        return None
    v = (node.costs.get(metric) or {}).get("total")
    return float(v) if v is not None else None


def node_rows(a: Run, b: Run) -> tuple[list[Row], list[str], list[str]]:
    """(matched rows in B's forward order, keys only in A, keys only in B)."""
    ka, kb = keyed_nodes(a.grouped), keyed_nodes(b.grouped)
    have_a = {m["name"] for m in (a.grouped.metrics if a.grouped else [])}
    have_b = {m["name"] for m in (b.grouped.metrics if b.grouped else [])}
    metrics = [(m, kind) for m, kind in NODE_METRICS if m in have_a or m in have_b]
    rows = []
    for key, nb in kb.items():
        na = ka.get(key)
        if na is None:
            continue
        figures = [Figure(m, kind, _total(na, m), _total(nb, m)) for m, kind in metrics]
        rows.append(Row("node", key, f"{nb.class_name} @ {key}", figures, a_id=na.id, b_id=nb.id))
    return rows, [k for k in ka if k not in kb], [k for k in kb if k not in ka]


# ------------------------------------------------------------------------------------------------ stages
def level_names(a: Run, b: Run) -> list[str]:
    names = list(dict.fromkeys(a.times.levels + b.times.levels))
    return [lv for lv in KNOWN_LEVELS if lv in names] + [lv for lv in names if lv not in KNOWN_LEVELS]


def stage_rows(a: Run, b: Run) -> tuple[list[Row], list[str], list[str]]:
    levels = level_names(a, b)
    ra = {r.key: r for r in a.times.rows}
    rb = {r.key: r for r in b.times.rows}
    rows = []
    for key in list(dict.fromkeys(list(ra) + list(rb))):
        x, y = ra.get(key), rb.get(key)
        if x is None or y is None:
            continue
        figs = [
            Figure("flops_analytic", "flops", x.flops, y.flops),
            Figure("flops_measured", "flops", x.flops_measured, y.flops_measured),
            Figure("io_bytes_analytic", "bytes", x.io_bytes, y.io_bytes),
            Figure("time_measured", "time", x.measured_s, y.measured_s),
        ]
        figs += [Figure(f"time_{lv}", "time", x.predicted(lv), y.predicted(lv)) for lv in levels]
        bound = " → ".join(dict.fromkeys(filter(None, (x.bound(a.times.bound_level), y.bound(b.times.bound_level)))))
        rows.append(Row(y.kind, key, y.label, figs, note=bound))
    return rows, [k for k in ra if k not in rb], [k for k in rb if k not in ra]


# ------------------------------------------------------------------------------------------------ comparison
@dataclass
class Comparison:
    a: Run
    b: Run
    nodes: list[Row]
    stages: list[Row]
    only_a: list[str]
    only_b: list[str]
    stages_only_a: list[str]
    stages_only_b: list[str]
    levels: list[str]
    notes: list[str] = field(default_factory=list)
    # what differs between the runs, and what it means: (what, explanation), e.g. ("batch", "batch 1 → 2: ...")
    differences: list[tuple[str, str]] = field(default_factory=list)

    def rank_metric(self) -> str:
        """What "changed most" ranks: measured self time where both graphs carry it (one change is one node),
        else the inclusive measured time (a change then shows on every ancestor too)."""
        has_self = any((r.figure(SELF_TIME) or Figure("", "", None, None)).delta is not None for r in self.nodes)
        return SELF_TIME if has_self else "time_measured"

    def changed_nodes(self, metric: str = "time_measured", threshold: float = 0.0) -> list[Row]:
        """Matched nodes whose `metric` differs by more than `threshold` (relative to A), largest change first."""
        out = []
        for r in self.nodes:
            f = r.figure(metric)
            if f is None or f.delta is None:
                continue
            if f.a and abs(f.delta) / abs(f.a) > threshold or (not f.a and f.delta):
                out.append(r)
        return sorted(out, key=lambda r: -abs(r.figure(metric).delta))


def differences(a: Run, b: Run, only_a: int = 0, only_b: int = 0) -> list[tuple[str, str]]:
    """What differs between the two runs, as (what, explanation): each says what it means for the figures."""
    sa, sb = a.summary, b.summary
    out = []
    if a.family != b.family:
        out.append(
            (
                "family",
                f"model family {a.family or '?'} → {b.family or '?'}: two families' module trees; nodes are matched "
                f"only where their module paths agree ({only_a} nodes only in A, {only_b} only in B), and a "
                "matched node may run different code",
            )
        )
    if (sa.model.name, sa.model.spec) != (sb.model.name, sb.model.spec):
        out.append(("model", f"model {sa.model.name} ({sa.model.spec}) → {sb.model.name} ({sb.model.spec})"))
    if a.batch != b.batch:
        out.append(
            (
                "batch",
                f"batch {a.batch} → {b.batch}: each run's FLOPs, bytes and times are of its whole batched forward "
                f"(B runs {b.batch / a.batch:.3g}x the sequences of A); divide by the batch for one sequence",
            )
        )
    if sa.workload.mode != sb.workload.mode:
        out.append(("mode", f"mode {sa.workload.mode} → {sb.workload.mode}: other views and image tokens"))
    pa, pb = (sa.page.width, sa.page.height, sa.page.image), (sb.page.width, sb.page.height, sb.page.image)
    if pa != pb:
        show = lambda p: f"{p[0]}×{p[1]}" + (f" {p[2]}" if p[2] else "")  # noqa: E731
        out.append(("page", f"page {show(pa)} → {show(pb)}"))
    for what, x, y in (
        ("dtype", sa.runtime.dtype, sb.runtime.dtype),
        ("attention", sa.runtime.attn_implementation, sb.runtime.attn_implementation),
        ("device", sa.runtime.device, sb.runtime.device),
    ):
        if x != y:
            out.append((what, f"{what} {x} → {y}"))
    if a.times.roof != b.times.roof:
        out.append(
            (
                "hardware",
                f"predicted on {a.times.roof or 'no hardware'} → {b.times.roof or 'no hardware'}: the predicted "
                "times use other hardware figures",
            )
        )
    return out


def compare_runs(dir_a: str | Path, dir_b: str | Path, default_family: str = "") -> Comparison:
    """The two runs compared (`default_family`: the family of a run whose saved config names none)."""
    a, b = open_run(dir_a, "A", default_family), open_run(dir_b, "B", default_family)
    check_compatible(a, b)
    nodes, only_a, only_b = node_rows(a, b)
    stages, s_only_a, s_only_b = stage_rows(a, b)
    return Comparison(
        a,
        b,
        nodes,
        stages,
        only_a,
        only_b,
        s_only_a,
        s_only_b,
        level_names(a, b),
        differences=differences(a, b, len(only_a), len(only_b)),
    )


# ------------------------------------------------------------------------------------------------ outputs
def csv_text(cmp: Comparison) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["section", "key", "label", "metric", "a", "b", "delta", "ratio"])
    for what, text in cmp.differences:  # what differs, first: the figures below mean what these say
        w.writerow(["differs", what, text, "", "", "", "", ""])
    for r in cmp.stages + cmp.nodes:
        for f in r.figures:
            if f.a is None and f.b is None:
                continue
            w.writerow([r.section, r.key, r.label, f.metric, _num(f.a), _num(f.b), _num(f.delta), _num(f.ratio)])
    for key in cmp.only_a:
        w.writerow(["node only in A", key, "", "", "", "", "", ""])
    for key in cmp.only_b:
        w.writerow(["node only in B", key, "", "", "", "", "", ""])
    return buf.getvalue()


def _num(v: Optional[float]) -> str:
    return "" if v is None else repr(float(v))


def delta_graph(cmp: Comparison) -> Optional[GroupedGraph]:
    """Run B's grouped graph with `delta_time` (B's measured time minus A's) on every matched node."""
    if cmp.b.grouped is None or cmp.a.grouped is None:
        return None
    g = copy.deepcopy(cmp.b.grouped)
    base = _total(cmp.a.grouped.node(cmp.a.grouped.root), "time_measured")
    by_id = {n.id: n for n in g.nodes}
    placed = 0
    for r in cmp.nodes:
        f = r.figure("time_measured")
        if f is None or f.delta is None:
            continue
        by_id[r.b_id].costs["delta_time"] = {
            "total": f.delta,
            "share": (f.delta / base) if base else None,
            "complete": True,
            "instances": 1,
            "with_figure": 1,
        }
        placed += 1
    if not placed:
        cmp.notes.append("no node has measured time in both runs: no graph coloured by delta_time")
        return None
    g.metrics = list(g.metrics) + [
        {
            "name": "delta_time",
            "label": "Δ measured time (B − A)",
            "unit": "s",
            "kind": "time",
            "source": f"time_measured of run B ({cmp.b.dir}) minus run A ({cmp.a.dir}), "
            "per node matched by module path",
            "total": delta(base, _total(cmp.b.grouped.node(cmp.b.grouped.root), "time_measured")),
            "base_label": "run A",
        }
    ]
    g.source["color_by"] = "delta_time"
    return g


COMPARE_OUTPUTS = (COMPARE_HTML, COMPARE_CSV, f"{COMPARE_STEM}.dot", f"{COMPARE_STEM}.svg")


def write_comparison(cmp: Comparison, out_dir: str | Path) -> dict[str, Path]:
    """compare.html, compare.csv and (with Graphviz) compare.graph.svg in `out_dir` (claimed by the caller:
    `report.output_dirs`); return their paths."""
    from llm_perf_opt.callgraph.dot import build_grouped_dot, render_dot
    from llm_perf_opt.report.render import render_page

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {"csv": atomic_write_text(out / COMPARE_CSV, csv_text(cmp))}
    graph = delta_graph(cmp)
    svg = None
    if graph is not None:
        dot = build_grouped_dot(graph, color_by="delta_time")
        written["dot"] = atomic_write_text(out / f"{COMPARE_STEM}.dot", dot)
        path, note = render_dot(dot, out / f"{COMPARE_STEM}.svg", "svg")
        if path is not None:
            written["svg"] = path
            text = path.read_text(encoding="utf-8")
            svg = text[text.find("<svg") :]
        else:
            cmp.notes.append(note)
    written["html"] = atomic_write_text(out / COMPARE_HTML, render_page("compare.html.j2", **page_data(cmp, svg)))
    return written


def page_data(cmp: Comparison, graph_svg: Optional[str]) -> dict[str, Any]:
    from llm_perf_opt.report.compare_chart import change_chart, metric_labels, panel_data

    fa, fb = cmp.a.facts(), cmp.b.facts()
    graph_labels = metric_labels(cmp)
    # "what changed most": by self time where the graphs carry it (one change is one node), else inclusive time
    rank = cmp.rank_metric()
    rank_label = (
        "measured self time (the profiler's time in the node less its child calls)"
        if rank == SELF_TIME
        else "measured time, inclusive (these runs' graphs carry no self time: a change shows on every ancestor)"
    )
    changed = cmp.changed_nodes(rank, 0.0)
    return {
        "title": f"Compare: {cmp.a.label()}  vs  {cmp.b.label()}",
        "cmp": cmp,
        "facts": [(k, fa.get(k, "—"), fb.get(k, "—"), fa.get(k) != fb.get(k)) for k in dict.fromkeys([*fa, *fb])],
        "stage_metrics": [("time_measured", quantities.label("fastest"))]
        + [
            (f"time_{lv}", quantities.label(lv) if lv in quantities.QUANTITIES else f"predicted: {lv}")
            for lv in cmp.levels
        ]
        + [
            ("flops_analytic", "analytic FLOPs"),
            ("flops_measured", "measured FLOPs"),
            ("io_bytes_analytic", "analytic I/O"),
        ],
        "node_metrics": [
            (m, graph_labels.get(m, (m.replace("_", " "), ""))[0])
            for m, _ in NODE_METRICS
            if any(r.figure(m) is not None for r in cmp.nodes)
        ],
        "stage_shown": ["measured time"] + [f"{lv} (predicted)" for lv in cmp.levels],  # the rest: one click
        "rank": rank,
        "rank_label": rank_label,
        "changed": changed[:15],
        "chart": change_chart(changed, rank, f"B − A, {rank_label.split(' (')[0]}, top {min(len(changed), 15)}"),
        "panel": panel_data(cmp),
        "graph_svg": graph_svg,
    }

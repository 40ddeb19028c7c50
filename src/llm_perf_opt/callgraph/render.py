"""Rendering of grouped (Option C) and raw call graphs: DOT and SVG (through the `graphviz` package), Mermaid.

Labels stay compact — `Class @ pattern for N`; with `color_by` (flops, time, bytes, params) a second
line with the metric and its share of the run (`2.93 TFLOP · 64%`, `callgraph.heat`), the node filled
by its heat-map bin and a legend beside the graph; then `parfor N` (or the calls when they are not a
whole number per parent call) and the parameter count, and one line per variant (`◦ window_size=0
×4: 1.7 TFLOP · 38%`). Long index lists print as `[k of K]`. Tooltips (SVG `<title>`s) carry the exact
pattern, the constructor parameters, the I/O shapes and dtypes of the first call, and every cost the
node carries (total, per instance, min/max and the slowest instance, share), per variant too. SVG
nodes carry their node id (`<g id="n3">`), which the run page uses. `max_depth` folds everything below that depth
of the grouped tree into its ancestor (the
ancestor's sums already cover its subtree). Mermaid ids are sanitised and every label is quoted with
its special characters written as Mermaid entity codes (`#quot;`, `#lt;`, `#64;` ...);
`validate_mermaid` is the structural check the tests run on every diagram.

DOT sources are assembled with `graphviz.Digraph` (which quotes and escapes), every user text passed
through `graphviz.escape` so a backslash or a `<...>` stays literal; `graphviz` runs `dot` for SVG/PNG.

`group_and_render` is the entry the trace pipeline and `./dev group` use: group, run the model's
runtime checks against the runtime log, write `callgraph.grouped.json` / `.dot` / `.svg` / `.mmd`.
Without the `dot` executable the SVG is skipped with a note (in the JSON's `notes`), never a crash.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Sequence

from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.callgraph.checks import Event, RuntimeCheck
from llm_perf_opt.callgraph.dot import build_grouped_dot, build_raw_dot, render_dot
from llm_perf_opt.callgraph.grouped import GROUPED_FILENAME, GroupedGraph
from llm_perf_opt.callgraph.grouping import group_callgraph
from llm_perf_opt.callgraph.heat import Heat
from llm_perf_opt.callgraph.labels import DEFAULT_COLOR_BY
from llm_perf_opt.callgraph.mermaid import build_grouped_mermaid, build_raw_mermaid
from llm_perf_opt.callgraph.mermaid_check import validate_mermaid
from llm_perf_opt.callgraph.node_costs import ModuleCosts, attach_costs
from llm_perf_opt.callgraph.schema import CallGraph
from llm_perf_opt.errors import ArtifactError

GROUPED_STEM = "callgraph.grouped"
RAW_STEM = "callgraph.raw"
DEFAULT_FORMATS = ("dot", "svg", "mmd")
KNOWN_FORMATS = ("dot", "svg", "png", "mmd", "raw_dot", "raw_svg", "raw_mmd")


def write_grouped_outputs(
    grouped: GroupedGraph,
    out_dir: str | Path,
    max_depth: int | None = None,
    formats: Sequence[str] = DEFAULT_FORMATS,
    callgraph: CallGraph | None = None,
    config: Any = None,
    stem: str = GROUPED_STEM,
    color_by: str = DEFAULT_COLOR_BY,
) -> dict[str, Path]:
    """Write the renderings asked for and the grouped JSON (last, with any skip notes); return the paths."""
    unknown = [f for f in formats if f not in KNOWN_FORMATS]
    if unknown:
        raise ArtifactError(f"unknown render format(s) {unknown}: choose from {list(KNOWN_FORMATS)}")
    grouped.source["color_by"] = color_by  # what the renderings were coloured by (the run page's legend)
    heat_note = Heat.of(grouped, color_by).note()
    if heat_note and heat_note not in grouped.notes:
        grouped.notes.append(heat_note)
    out_dir = Path(out_dir)
    written: dict[str, Path] = {}
    dot_source = None
    if any(f in formats for f in ("dot", "svg", "png")):
        dot_source = build_grouped_dot(grouped, max_depth=max_depth, color_by=color_by)
    if "dot" in formats:
        written["dot"] = atomic_write_text(out_dir / f"{stem}.dot", dot_source)
    for fmt in ("svg", "png"):
        if fmt in formats:
            path, note = render_dot(dot_source, out_dir / f"{stem}.{fmt}", fmt)
            if path:
                written[fmt] = path
            else:
                grouped.notes.append(note)
    if "mmd" in formats:
        mmd = build_grouped_mermaid(grouped, max_depth=max_depth, color_by=color_by)
        problems = validate_mermaid(mmd)
        if problems:  # a bug here, not bad input: say so in the notes rather than hide it
            grouped.notes.append(f"mermaid structural check failed: {problems[:3]}")
        written["mmd"] = atomic_write_text(out_dir / f"{stem}.mmd", mmd)
    if any(f.startswith("raw_") for f in formats):
        if callgraph is None:
            grouped.notes.append("raw renderings skipped: no call graph given")
        else:
            raw_dot = build_raw_dot(callgraph, max_depth=max_depth)
            if "raw_dot" in formats:
                written["raw_dot"] = atomic_write_text(out_dir / f"{RAW_STEM}.dot", raw_dot)
            if "raw_svg" in formats:
                path, note = render_dot(raw_dot, out_dir / f"{RAW_STEM}.svg", "svg")
                if path:
                    written["raw_svg"] = path
                else:
                    grouped.notes.append(f"raw {note}")
            if "raw_mmd" in formats:
                written["raw_mmd"] = atomic_write_text(
                    out_dir / f"{RAW_STEM}.mmd", build_raw_mermaid(callgraph, max_depth=max_depth)
                )
    written["json"] = grouped.save(
        out_dir / (GROUPED_FILENAME if stem == GROUPED_STEM else f"{stem}.json"), config=config
    )
    return written


def group_and_render(
    callgraph: CallGraph,
    out_dir: str | Path,
    max_depth: int | None = None,
    formats: Iterable[str] = DEFAULT_FORMATS,
    runtime_log: Sequence[Event] | None = None,
    checks: Sequence[RuntimeCheck] = (),
    config: Any = None,
    costs: ModuleCosts | None = None,
    color_by: str = DEFAULT_COLOR_BY,
) -> tuple[GroupedGraph, dict[str, Path]]:
    """Group `callgraph`, run the model's runtime `checks` against `runtime_log` (default the graph's
    own), attach `costs` (the run's per-module metric tables) to every node, write the JSON and the
    renderings (coloured by `color_by`) into `out_dir`; return the grouped graph and {format: path} of
    what was written ("json", "dot", "svg", "mmd", ...). Skipped renderings are listed in
    `grouped.notes`."""
    grouped = group_callgraph(callgraph, runtime_log=runtime_log, checks=checks)
    if costs is not None:
        attach_costs(grouped, costs)
    written = write_grouped_outputs(
        grouped,
        out_dir,
        max_depth=max_depth,
        formats=tuple(formats),
        callgraph=callgraph,
        config=config,
        color_by=color_by,
    )
    return grouped, written

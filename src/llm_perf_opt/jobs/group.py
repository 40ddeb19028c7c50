"""`./dev group RUN_DIR [--max-depth N] [--color-by flops|time|bytes|params|none]`: regroup and re-render an
existing `callgraph.json` without tracing.

Reads `RUN_DIR/callgraph.json` (or the file itself when RUN_DIR is a file) and, when present,
`runtime_log.json` beside it (else the call graph's own runtime log), against which DeepSeek-OCR's
runtime checks run (the run's model family's), and `module_costs.json` (the costs the trace job measured), which
it puts on every node; writes `callgraph.grouped.json`, `.dot`, `.svg` and `.mmd` next to it, the Model
Explorer files (`model_explorer/`) and, in a run directory with a `summary.json`, `run.html`. A missing
or corrupt input, or an option the trace job's `render.*` would refuse (`--max-depth 0`), is one line
`error: ...`, exit code 2. RUN_DIR is taken from the directory the command was run in.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

from llm_perf_opt import families
from llm_perf_opt.callgraph.heat import COLOR_CHOICES
from llm_perf_opt.callgraph.labels import DEFAULT_COLOR_BY
from llm_perf_opt.callgraph.model_explorer import write_model_explorer
from llm_perf_opt.callgraph.node_costs import MODULE_COSTS_FILE, load_module_costs
from llm_perf_opt.callgraph.render import DEFAULT_FORMATS, KNOWN_FORMATS, group_and_render
from llm_perf_opt.callgraph.schema import load_callgraph_json
from llm_perf_opt.config import RenderConfig
from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ArtifactError, ConfigError, one_line_errors
from llm_perf_opt.jobs.args import OneLineParser
from llm_perf_opt.run_lock import hold
from llm_perf_opt.trace.graph import add_run_tables, run_identity

CALLGRAPH_FILE = "callgraph.json"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = OneLineParser(prog="./dev group", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", help="run directory holding callgraph.json (or the callgraph.json file)")
    ap.add_argument(
        "--max-depth",
        type=int,
        default=None,
        help="fold groups deeper than this in the renderings, >= 1 (default: show all)",
    )
    ap.add_argument(
        "--formats",
        default=",".join(DEFAULT_FORMATS),
        help=f"comma-separated, from {','.join(KNOWN_FORMATS)} (default: %(default)s)",
    )
    ap.add_argument(
        "--color-by",
        default=DEFAULT_COLOR_BY,
        choices=COLOR_CHOICES,
        help="heat map of the nodes (default: %(default)s; needs module_costs.json except for params)",
    )
    return ap.parse_args(argv)


def max_depth(args: argparse.Namespace) -> int | None:
    """--max-depth by the same rule as the trace job's `render.max_depth` (ConfigError naming the option)."""
    try:
        return RenderConfig(max_depth=args.max_depth).max_depth
    except ConfigError as exc:
        raise ConfigError(str(exc).replace("render.max_depth", "--max-depth")) from None


def run(args: argparse.Namespace) -> int:
    depth = max_depth(args)
    target = user_path(args.run_dir)
    cg_path = target if target.is_file() else target / CALLGRAPH_FILE
    if not target.exists():
        raise ArtifactError(f"{target}: no such run directory")
    cg = load_callgraph_json(cg_path)
    out_dir = cg_path.parent
    with hold(out_dir, field="RUN_DIR"):  # never rewrite files of a run that is still writing them
        return _regroup(args, cg, out_dir, depth)


def _regroup(args: argparse.Namespace, cg, out_dir, depth) -> int:
    family = families.for_run_dir(out_dir)
    log_path = out_dir / family.runtime_log_file
    events = family.load_runtime_log(log_path).events() if log_path.is_file() else None
    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    costs_path = out_dir / MODULE_COSTS_FILE
    costs = load_module_costs(costs_path) if costs_path.is_file() else None
    if costs is not None and add_run_tables(costs, out_dir, run_identity(out_dir)):  # made after the trace
        costs.save(costs_path)
    grouped, written = group_and_render(
        cg,
        out_dir,
        max_depth=depth,
        formats=formats,
        runtime_log=events,
        checks=family.runtime_checks,
        costs=costs,
        color_by=args.color_by,
    )
    written.update(write_model_explorer(grouped, cg, costs, out_dir / "model_explorer"))
    if (out_dir / "summary.json").is_file():
        from llm_perf_opt.report.run_page import write_run_page

        written["run_page"] = write_run_page(out_dir, family.parts)
    s = grouped.summary()
    print(
        f"{grouped.model_name or 'model'}: {s['modules_called']} called modules -> {s['nodes']} groups "
        f"({s['stacks']} stacks, {s['parfor_nodes']} parfor), runtime log from "
        f"{'runtime_log.json' if events is not None else 'callgraph.json'}; costs from "
        f"{MODULE_COSTS_FILE + ' (' + ', '.join(costs.names()) + ')' if costs else 'nowhere (no module_costs.json)'}"
    )
    for c in grouped.checks:
        print(f"  check {c['name']}: {c['status']} (expected {c['expected']}, observed {c['observed']})")
    for note in grouped.notes:
        print(f"  note: {note}")
    for fmt, path in written.items():
        print(f"  {fmt}: {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    return one_line_errors(lambda: run(parse_args(argv)))


if __name__ == "__main__":
    sys.exit(main())

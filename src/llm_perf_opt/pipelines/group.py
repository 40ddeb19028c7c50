"""`./dev group RUN_DIR [--max-depth N]`: regroup and re-render an existing `callgraph.json` without tracing.

Reads `RUN_DIR/callgraph.json` (or the file itself when RUN_DIR is a file) and, when present,
`runtime_log.json` beside it (else the call graph's own runtime log), against which DeepSeek-OCR's
runtime checks run (`dsocr.checks`); writes `callgraph.grouped.json`,
`.dot`, `.svg` and `.mmd` next to it. A missing or corrupt input, or an option the trace job's `render.*`
would refuse (`--max-depth 0`), is one line `error: ...`, exit code 2. RUN_DIR is taken from the
directory the command was run in.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Sequence

from llm_perf_opt.callgraph.render import DEFAULT_FORMATS, KNOWN_FORMATS, group_and_render
from llm_perf_opt.callgraph.schema import load_callgraph_json
from llm_perf_opt.dsocr.checks import RUNTIME_CHECKS
from llm_perf_opt.dsocr.patches.runtime_log import RUNTIME_LOG_FILE, load_runtime_log
from llm_perf_opt.config import RenderConfig
from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ArtifactError, ConfigError, PipelineError

CALLGRAPH_FILE = "callgraph.json"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="./dev group", description=__doc__.splitlines()[0])
    ap.add_argument("run_dir", help="run directory holding callgraph.json (or the callgraph.json file)")
    ap.add_argument("--max-depth", type=int, default=None,
                    help="fold groups deeper than this in the renderings, >= 1 (default: show all)")
    ap.add_argument("--formats", default=",".join(DEFAULT_FORMATS),
                    help=f"comma-separated, from {','.join(KNOWN_FORMATS)} (default: %(default)s)")
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
    log_path = out_dir / RUNTIME_LOG_FILE
    events = load_runtime_log(log_path).events() if log_path.is_file() else None
    formats = tuple(f.strip() for f in args.formats.split(",") if f.strip())
    grouped, written = group_and_render(cg, out_dir, max_depth=depth, formats=formats, runtime_log=events,
                                        checks=RUNTIME_CHECKS)
    s = grouped.summary()
    print(f"{grouped.model_name or 'model'}: {s['modules_called']} called modules -> {s['nodes']} groups "
          f"({s['stacks']} stacks, {s['parfor_nodes']} parfor), runtime log from "
          f"{'runtime_log.json' if events is not None else 'callgraph.json'}")
    for c in grouped.checks:
        print(f"  check {c['name']}: {c['status']} (expected {c['expected']}, observed {c['observed']})")
    for note in grouped.notes:
        print(f"  note: {note}")
    for fmt, path in written.items():
        print(f"  {fmt}: {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        return run(args)
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""`./dev compare RUN_A RUN_B [--out DIR] [--overwrite]`: two runs side by side (report.compare).

Writes compare.html, compare.csv and compare.graph.svg (run B's grouped graph coloured by
render.color_by=delta_time) and prints what differs between the runs (model family, batch, mode, page, dtype,
hardware, with what it means for the figures) and the nodes whose measured self time (the node's time less its
child calls) changed most.

Where it writes: --out DIR, refused when DIR is a run or sweep directory (or inside one: a comparison never
lands among a job's files) or already holds a comparison (pass --overwrite to replace it); by default a new
directory of its own, tmp/compare/<A>_vs_<B>/ of the current directory (a sweep's job directory is named
<sweep>-<job>; -2, -3, ... when that name exists), so no comparison replaces another. Relative paths are taken
from the directory the command was run in.

Runs it cannot compare honestly are refused: one still running (a live process holds it), one that did not end
ok (failed, interrupted or killed), one without a call graph (callgraph.grouped.json).

Exit status: 0; 2 for a directory that is not a run or cannot be compared, an unreadable artifact, runs of
incompatible schema versions, or an output it cannot write (read-only, full disk), with one line
`error: ...` and nothing written.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ExitCode, one_line_errors
from llm_perf_opt.jobs.args import OneLineParser, positive_int


def parser() -> argparse.ArgumentParser:
    """The command line of `./dev compare` (docs/jobs.md's table of its options is generated from it)."""
    p = OneLineParser(
        prog="./dev compare",
        description=__doc__.split("\n\n", 1)[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("run_a", help="run directory A (the baseline)")
    p.add_argument("run_b", help="run directory B")
    p.add_argument(
        "--out", default=None, metavar="DIR", help="output directory (default: a new tmp/compare/<A>_vs_<B>)"
    )
    p.add_argument("--overwrite", action="store_true", help="replace the comparison an existing --out holds")
    p.add_argument("--top", type=positive_int, default=10, metavar="N", help="how many changed nodes to print")
    return p


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    return parser().parse_args(argv)


def run_name(run: Path) -> str:
    """A run directory's name in a default output: its own, or `<sweep>-<job>` for a sweep's numbered job."""
    return f"{run.parent.name}-{run.name}" if run.name.isdigit() and run.parent.name else run.name


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    return one_line_errors(lambda: run(args))


def run(args: argparse.Namespace) -> int:
    from llm_perf_opt import families
    from llm_perf_opt.report.compare import COMPARE_OUTPUTS, SELF_TIME, compare_runs, write_comparison
    from llm_perf_opt.report.output_dirs import claim_output, discard_outputs, unique_dir

    a, b = user_path(args.run_a), user_path(args.run_b)
    cmp = compare_runs(a, b, default_family=families.DEFAULT_FAMILY)
    if args.out:
        made = not user_path(args.out).exists()
        out = claim_output(user_path(args.out), COMPARE_OUTPUTS, field="--out", overwrite=args.overwrite)
    else:
        made, out = True, unique_dir(user_path("tmp/compare"), f"{run_name(a)}_vs_{run_name(b)}")
    try:
        written = write_comparison(cmp, out)
    except BaseException:  # a full disk, Ctrl-C: nothing half-written is left (the error is reported by the caller)
        discard_outputs(out, COMPARE_OUTPUTS, made)
        raise
    print(f"A: {cmp.a.label()}\nB: {cmp.b.label()}")
    for _, text in cmp.differences:
        print(f"differs: {text}")
    print(
        f"{len(cmp.nodes)} nodes matched by module path ({len(cmp.only_a)} only in A, {len(cmp.only_b)} only "
        f"in B); {len(cmp.stages)} stages, parts and decode steps"
    )
    rank = cmp.rank_metric()
    changed = cmp.changed_nodes(rank)
    if changed:
        print(f"changed most ({'measured self time' if rank == SELF_TIME else 'measured time, inclusive'}, B − A):")
    for r in changed[: args.top]:
        f = r.figure(rank)
        print(f"  {f.text('delta'):>12} ({f.text('ratio'):>7})  {r.key}")
    for key in ("html", "csv", "svg"):
        if key in written:
            print(written[key])
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())

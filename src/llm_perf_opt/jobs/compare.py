"""`./dev compare RUN_A RUN_B [--out DIR]`: two runs side by side (report.compare).

Writes compare.html, compare.csv and compare.graph.svg (run B's grouped graph coloured by
render.color_by=delta_time) into DIR (default: tmp/compare/<A>_vs_<B>/ of the current directory) and prints
the nodes whose measured time changed most. Relative paths are taken from the directory the command was run
in. Exit status: 0; 2 for a directory that is not a run, an unreadable artifact or runs of incompatible
schema versions, with one line `error: ...` and nothing written.
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from llm_perf_opt.config.paths import user_path
from llm_perf_opt.errors import ExitCode, PipelineError


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="./dev compare",
        description=__doc__.split("\n\n", 1)[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=__doc__.split("\n\n", 1)[1],
    )
    p.add_argument("run_a", help="run directory A (the baseline)")
    p.add_argument("run_b", help="run directory B")
    p.add_argument("--out", default=None, help="output directory (default tmp/compare/<A>_vs_<B>)")
    p.add_argument("--top", type=int, default=10, help="how many changed nodes to print")
    return p.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        from llm_perf_opt.jobs.report import output_dir
        from llm_perf_opt.report.compare import compare_runs, write_comparison

        a, b = user_path(args.run_a), user_path(args.run_b)
        cmp = compare_runs(a, b)
        out = output_dir(args.out or str(user_path("tmp/compare") / f"{a.name}_vs_{b.name}"), "--out")
        written = write_comparison(cmp, out)
        print(f"A: {cmp.a.label()}\nB: {cmp.b.label()}")
        print(
            f"{len(cmp.nodes)} nodes matched by module path ({len(cmp.only_a)} only in A, {len(cmp.only_b)} only "
            f"in B); {len(cmp.stages)} stages, parts and decode steps"
        )
        for r in cmp.changed_nodes("time_measured")[: args.top]:
            f = r.figure("time_measured")
            print(f"  {f.text('delta'):>12} ({f.text('ratio'):>7})  {r.key}")
        for key in ("html", "csv", "svg"):
            if key in written:
                print(written[key])
        return ExitCode.OK
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return ExitCode.CONFIG


if __name__ == "__main__":
    sys.exit(main())

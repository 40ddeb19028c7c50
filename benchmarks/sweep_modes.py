"""Prints the wall time of the `modes` sweep on the tiny twin (target <= 2 min on a 2-core CPU machine),
of its report, and of the analytic-only page sweep (thousands of pages, no model run).

    ./dev bench sweep_modes [--trace default|forward_only] [--n 64] [--keep]

The sweep runs as a user runs it (`./dev sweep experiment=modes model=twin_tiny`, i.e. the job script
`pipelines/sweep.py`), in a fresh process, so the time includes Python start-up, Hydra composition of the six
jobs and every stage of the trace job.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt.jobs.args import run_script

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 120.0


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: the defaults."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--trace", default="default", help="trace config group option (default: the full trace job)")
    p.add_argument("--n", type=int, default=64, help="analytic sweep: page sides per axis (n x n pages per mode)")
    p.add_argument("--keep", action="store_true", help="keep the sweep directory (under tmp/bench/)")
    return p.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)

    base = ROOT / "tmp" / "bench" if args.keep else Path(tempfile.mkdtemp(prefix="sweep_modes."))
    sweep = base / f"modes-{time.strftime('%Y%m%d-%H%M%S')}"
    cmd = [
        sys.executable,
        str(ROOT / "pipelines" / "sweep.py"),
        "experiment=modes",
        "model=twin_tiny",
        f"trace={args.trace}",
        f"hydra.sweep.dir={sweep}",
    ]
    print(f"$ ./dev sweep {' '.join(cmd[2:])}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    sweep_s = time.perf_counter() - t0
    job_lines = [
        line for line in proc.stderr.splitlines() if "] job " in line and (" ok in " in line or " failed" in line)
    ]
    for line in job_lines:
        print("  " + line.split("] ", 1)[1].split(" | ")[0])
    if proc.returncode:
        print(proc.stderr[-3000:], file=sys.stderr)
        return proc.returncode

    from llm_perf_opt.report.analytic_sweep import build_analytic_report
    from llm_perf_opt.report.sweep import build_sweep_report

    t0 = time.perf_counter()
    rep = build_sweep_report(sweep)
    report_s = time.perf_counter() - t0
    n_ok = sum(1 for r in rep.rows if r["status"] == "ok")

    t0 = time.perf_counter()
    analytic = build_analytic_report(base / "analytic", n=args.n)
    analytic_s = time.perf_counter() - t0

    verdict = "within" if sweep_s <= TARGET_S else "OVER"
    print(
        f"modes sweep (6 jobs, model=twin_tiny, trace={args.trace}): {sweep_s:.1f} s wall "
        f"({verdict} the {TARGET_S:.0f} s target), {n_ok}/6 ok"
    )
    print(f"report of the sweep (CSV, Markdown, HTML, {len(rep.plots)} plots): {report_s:.1f} s")
    print(
        f"analytic page sweep: {analytic.points:,} page layouts + cost models (6 modes, {args.n}x{args.n} "
        f"grid + line plots) in {analytic.seconds:.2f} s ({analytic.points / analytic.seconds:,.0f} pages/s); "
        f"with plots and HTML {analytic_s:.1f} s"
    )
    if args.keep:
        print(f"outputs: {sweep}/report.html  {analytic.html}")
    else:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

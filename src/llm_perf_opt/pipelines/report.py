"""`./dev report`: aggregate a multirun, or sweep page sizes analytically.

    ./dev report SWEEP_DIR [--out DIR] [--no-plots] [--hardware h100_sxm,rtx5090]
        report.csv, report.md, report.html and report_plots/ (SVG + PNG) in SWEEP_DIR (or DIR); predicted
        time to first token per job on each --hardware datasheet (default: the datasheets the jobs ran
        with, else h100_sxm)
    ./dev report --analytic OUT_DIR [--modes tiny gundam ...] [--n N] [--min-side PX] [--max-side PX]
                 [--model deepseek_ocr|tiny|VENDOR_DIR] [--dtype bfloat16] [--hardware h100_sxm,rtx5090]
        analytic.csv, analytic.md, analytic.html and analytic_plots/ in OUT_DIR; no model is built;
        predicted times on each --hardware datasheet (default h100_sxm; --hardware none: no predictions)
"""
from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from llm_perf_opt.errors import PipelineError


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="./dev report", description=__doc__.split("\n\n", 1)[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("directory", help="the sweep directory (hydra.sweep.dir), or with --analytic the output directory")
    p.add_argument("--analytic", action="store_true", help="analytic-only page sweep into DIRECTORY (no model run)")
    p.add_argument("--out", default=None, help="write the sweep report here instead of the sweep directory")
    p.add_argument("--no-plots", action="store_true", help="tables only")
    p.add_argument("--modes", nargs="+", default=None,
                   help="--analytic: workload presets (default: every conf/workload/*.yaml); spaces or commas")
    p.add_argument("--n", type=int, default=48, help="--analytic: page sides per axis (n × n pages per mode)")
    p.add_argument("--min-side", type=int, default=256, help="--analytic: smallest page side in pixels")
    p.add_argument("--max-side", type=int, default=4096, help="--analytic: largest page side in pixels")
    p.add_argument("--model", default="deepseek_ocr",
                   help="--analytic: named spec (deepseek_ocr, tiny) or a vendor model directory / config.json")
    p.add_argument("--dtype", default="bfloat16", help="--analytic: element type for byte counts")
    p.add_argument("--hardware", nargs="+", default=None,
                   help="datasheets (conf/hardware/) to predict time to first token on; spaces or commas; "
                        "'none': no predictions")
    return p.parse_args(argv)


def hardware_list(values: Optional[Sequence[str]]) -> Optional[list[str]]:
    """--hardware as a list (None when not given; [] for 'none')."""
    if values is None:
        return None
    names = [n for item in values for n in item.split(",") if n]
    return [] if names == ["none"] else names


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    try:
        if args.analytic:
            from llm_perf_opt.report.analytic_sweep import build_analytic_report

            modes = [m for item in args.modes for m in item.split(",") if m] if args.modes else None
            hardware = hardware_list(args.hardware)
            rep = build_analytic_report(args.directory, modes=modes, n=args.n, min_side=args.min_side,
                                        max_side=args.max_side, model=args.model, dtype=args.dtype,
                                        plots=not args.no_plots,
                                        **({"hardware": hardware} if hardware is not None else {}))
            print(f"{rep.points:,} page layouts and cost models in {rep.seconds:.2f} s")
            for path in (rep.html, rep.markdown, rep.csv):
                print(path)
            return 0
        from llm_perf_opt.report.sweep import build_sweep_report

        rep = build_sweep_report(args.directory, out_dir=args.out, plots=not args.no_plots,
                                 hardware=hardware_list(args.hardware))
        n_failed = len(rep.failed)
        expected = rep.sweep.expected
        print(f"{len(rep.rows)} jobs ({len(rep.rows) - n_failed} ok, {n_failed} failed)"
              + (f" of {expected} planned" if expected is not None and expected != len(rep.rows) else ""))
        for row in rep.failed:
            print(f"  job {row['job']}: {row['status']}", file=sys.stderr)
        for path in (rep.html, rep.markdown, rep.csv):
            print(path)
        return 0
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

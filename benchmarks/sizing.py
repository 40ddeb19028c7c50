"""`./dev bench sizing [--pages N] [--batches N] [--devices ...]`: sizing evaluations per second.

One evaluation = the serving figures (prefill, decode step, static and continuous pages/day) of one page
shape at one batch on one device, at the ideal level. The analytic models and their unit tables are built
first (timed separately: the cold part); the evaluations are vectorised over the batch. Target: 10,000
evaluations (page shape x batch x device) in under a second.
"""

from __future__ import annotations

import argparse
import sys
import time

from llm_perf_opt.config.fields import MAX_BATCH
from llm_perf_opt.jobs.args import OneLineParser, bounded_int, positive_int, run_script


def parse_args(argv=None) -> argparse.Namespace:
    ap = OneLineParser(prog="./dev bench sizing", description=__doc__.splitlines()[0])
    ap.add_argument(
        "--pages", type=bounded_int(1, 10_000), default=25, help="page shapes (an n x n grid of sizes, rounded)"
    )
    ap.add_argument("--batches", type=bounded_int(1, MAX_BATCH), default=80, help="batches 1..N per page and device")
    ap.add_argument("--devices", nargs="+", default=["a100_80gb", "h100_sxm", "h200", "l40s", "rtx5090"])
    ap.add_argument("--mode", default="gundam")
    ap.add_argument("--output-tokens", type=positive_int, default=1000)
    args = ap.parse_args(argv)
    from llm_perf_opt.analytic.time.hardware import datasheet_names

    unknown = [d for d in args.devices if d not in datasheet_names()]
    if unknown:
        ap.error(
            f"--devices: {', '.join(map(repr, unknown))} not among the datasheets ({', '.join(datasheet_names())})"
        )
    return args


def main(argv=None) -> None:
    args = parse_args(argv)
    import numpy as np

    from llm_perf_opt.analytic.serving import pages_per_day
    from llm_perf_opt.analytic.time.hardware import load_hardware
    from llm_perf_opt.deepseek_ocr_shared.serving import serving_model
    from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
    from llm_perf_opt.dsocr.parts import modes
    from llm_perf_opt.dsocr.spec import ModelSpec

    spec, workload = ModelSpec.deepseek_ocr(), modes()[args.mode]
    side = max(1, round(args.pages**0.5))
    sizes = [(600 + 300 * i, 800 + 300 * j) for i in range(side) for j in range(side)][: args.pages]
    roofs = [load_hardware(d).roof("bfloat16") for d in args.devices]
    t0 = time.perf_counter()
    models = [serving_model(DeepseekOCRAnalyticModel.for_page(spec, workload, w, h)) for w, h in sizes]
    t1 = time.perf_counter()
    batches = np.arange(1, args.batches + 1, dtype=float)
    n = args.output_tokens
    evaluations, best = 0, 0.0
    for sm in models:
        for roof in roofs:
            static, continuous = pages_per_day(sm, roof, batches, n)
            best = max(best, float(static.max()), float(continuous.max()))
            evaluations += len(batches)
    t2 = time.perf_counter()
    print(
        f"sizing: {len(models)} page shapes x {len(batches)} batches x {len(roofs)} devices = {evaluations:,} "
        f"evaluations (ideal level, {args.mode}, {n} output tokens)"
    )
    print(f"  build (analytic models + unit tables, cold): {t1 - t0:.3f} s")
    print(
        f"  evaluate: {t2 - t1:.3f} s = {evaluations / (t2 - t1):,.0f} evaluations/s "
        f"({'under' if t2 - t1 < 1 else 'OVER'} one second for {evaluations:,})"
    )
    print(f"  most pages/day seen (any page, batch, device): {best:,.0f}")


if __name__ == "__main__":
    sys.exit(run_script(main))

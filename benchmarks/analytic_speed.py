"""Prints DeepSeek-OCR analytic-model evaluations per second over 10,000 random page sizes (target >= 10,000/s).

One evaluation = compute_view_layout + DeepseekOCRAnalyticModel + the totals of all three stages
(vision, prefill, decode) for one page. Stage costs are cached per (spec, vision-pass shapes, sequence
length, dtype), which is how a sweep over pages runs; the cold figure clears every cache before each
page (what a page with never-seen shapes costs). `--parts` also builds the flat per-part table.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Optional, Sequence

from llm_perf_opt.deepseek_ocr_shared.analytic import clear_caches
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.parts import modes
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.jobs.args import OneLineParser, positive_int, run_script

MODES = modes()  # conf/workload/*.yaml


def evaluate(spec: ModelSpec, workload: VisionWorkload, width: int, height: int, parts: bool) -> int:
    m = DeepseekOCRAnalyticModel(spec, compute_view_layout(workload, width, height))
    v, p, d = m.vision(), m.prefill(), m.decode()
    if parts:
        return len(v.parts) + len(p.parts) + len(d.parts)
    return v.flops + p.flops + d.flops


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: the defaults."""
    ap = OneLineParser(prog="./dev bench analytic_speed", description=__doc__)
    ap.add_argument("-n", type=positive_int, default=10_000, help="random pages")
    ap.add_argument("--cold", type=positive_int, default=300, help="pages for the cold-cache figure")
    ap.add_argument("--parts", action="store_true", help="also build every per-part table")
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    spec = ModelSpec.deepseek_ocr()
    rng = random.Random(0)
    pages = [(rng.randint(100, 6000), rng.randint(100, 6000)) for _ in range(args.n)]
    print(
        f"analytic model (layout + vision/prefill/decode totals{' + parts' if args.parts else ''}) over "
        f"{args.n:,} random pages (100..6000 px a side), spec {spec.name}"
    )
    for name, workload in MODES.items():
        clear_caches()
        t0 = time.perf_counter()
        for w, h in pages:
            evaluate(spec, workload, w, h, args.parts)
        dt = time.perf_counter() - t0
        t1 = time.perf_counter()
        for w, h in pages[: args.cold]:
            clear_caches()
            evaluate(spec, workload, w, h, args.parts)
        cold = args.cold / (time.perf_counter() - t1)
        print(
            f"  {name:9s} {args.n / dt:10,.0f} evaluations/s  ({dt * 1e6 / args.n:6.1f} us)   "
            f"cold cache {cold:8,.0f}/s ({1e6 / cold:7.1f} us)"
        )


if __name__ == "__main__":
    sys.exit(run_script(main))

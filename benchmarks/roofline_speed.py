"""Prints how long roofline predictions of vision, prefill and decode times take for 10,000 page sizes
(target: under a second for the 10,000), per mode, on one datasheet roof.

One prediction = compute_view_layout + DeepseekOCRAnalyticModel + `predict_latency` (stage totals of
vision, prefill and decode on the roof) for one page. Warm: the analytic stage caches and the roofline
node cache fill as a sweep over pages fills them. Cold: every cache (analytic and roofline) is cleared
before each page. `--parts` also builds the per-part predictions of every stage.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Optional, Sequence

from llm_perf_opt.analytic.time import ideal
from llm_perf_opt.analytic.time.hardware import load_hardware
from llm_perf_opt.deepseek_ocr_shared.analytic import clear_caches
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import compute_view_layout
from llm_perf_opt.dsocr.parts import modes
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.jobs.args import OneLineParser, positive_int, run_script


def predict_page(spec, workload, width, height, roof, parts: bool) -> float:
    model = DeepseekOCRAnalyticModel(spec, compute_view_layout(workload, width, height))
    latency = ideal.predict_latency(model.stages(), roof)
    if parts:
        for stage in latency.stages().values():
            _ = stage.parts
    return latency.ttft_s + latency.decode_s


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: the defaults."""
    ap = OneLineParser(prog="./dev bench roofline_speed", description=__doc__)
    ap.add_argument("-n", type=positive_int, default=10_000, help="random pages")
    ap.add_argument("--cold", type=positive_int, default=200, help="pages for the cold-cache figure")
    ap.add_argument("--hardware", default="h100_sxm")
    ap.add_argument("--parts", action="store_true", help="also predict every part of every stage")
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    spec = ModelSpec.deepseek_ocr()
    roof = load_hardware(args.hardware).roof()
    rng = random.Random(0)
    pages = [(rng.randint(100, 6000), rng.randint(100, 6000)) for _ in range(args.n)]
    print(
        f"roofline predictions (vision/prefill/decode times{' + parts' if args.parts else ''}) for {args.n:,} "
        f"random pages (100..6000 px a side), spec {spec.name}, roof {roof.hardware} {roof.dtype}"
    )
    worst = 0.0
    for name, workload in modes().items():
        clear_caches()
        ideal.clear_caches()
        t0 = time.perf_counter()
        for w, h in pages:
            predict_page(spec, workload, w, h, roof, args.parts)
        dt = time.perf_counter() - t0
        worst = max(worst, dt)
        t1 = time.perf_counter()
        for w, h in pages[: args.cold]:
            clear_caches()
            ideal.clear_caches()
            predict_page(spec, workload, w, h, roof, args.parts)
        cold = (time.perf_counter() - t1) / max(1, args.cold)
        print(
            f"  {name:9s} {args.n:,} pages in {dt:6.3f} s ({dt * 1e6 / args.n:6.1f} us/page)   "
            f"cold cache {cold * 1e6:8.1f} us/page"
        )
    if args.parts:
        print(f"slowest mode: {args.n:,} pages in {worst:.3f} s (per-part tables; the target is for stage times)")
    else:
        print(
            f"slowest mode: {args.n:,} pages in {worst:.3f} s (target < 1 s for 10,000: "
            f"{'ok' if worst * 10_000 / args.n < 1 else 'MISSED'})"
        )


if __name__ == "__main__":
    sys.exit(run_script(main))

"""Prints compute_view_layout calls per second over random page sizes, per mode (target >= 100,000/s)."""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Optional, Sequence

from llm_perf_opt.dsocr.layout import compute_view_layout
from llm_perf_opt.dsocr.parts import modes
from llm_perf_opt.jobs.args import OneLineParser, positive_int, run_script

MODES = {name: w for name, w in modes().items() if name in ("tiny", "base", "gundam", "gundam_m")}


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: the defaults."""
    ap = OneLineParser(prog="./dev bench layout_speed", description=__doc__)
    ap.add_argument("-n", type=positive_int, default=200_000, help="random pages")
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    n = parse_args(argv).n
    rng = random.Random(0)
    pages = [(rng.randint(100, 6000), rng.randint(100, 6000)) for _ in range(n)]
    print(f"compute_view_layout over {n:,} random pages (100..6000 px a side)")
    for name, workload in MODES.items():
        t0 = time.perf_counter()
        for w, h in pages:
            compute_view_layout(workload, w, h)
        dt = time.perf_counter() - t0
        print(f"  {name:9s} {n / dt:12,.0f} calls/s   ({dt * 1e6 / n:.2f} us/call)")


if __name__ == "__main__":
    sys.exit(run_script(main))

"""Matrix products of a few rows over a weight beyond the cache on the CPU (a decode step's products at batch B: the
tiny twin's lm_head is (B, 64) x (64, 129280), 33 MB of float32 weights), measured beside the kernel level.

    ./dev bench cpu_row_products                        # one thread, the shapes below, rows 1 2 4 8 16
    ./dev bench cpu_row_products --rows 1,4 --repeats 3

Each product `x @ w.t()` with w stored as nn.Linear stores it ((N, K), used transposed), run `--warm` times untimed
(its weights left in the last-level cache, as the step before leaves them in a decode loop), then the fastest of
`--repeats` (`time.thread_time` on one thread). Beside it the kernel level on this host's cached calibration
(`hardware=measured`): the product as a decode step whose bytes the cache holds prices it (`DeviceFigures.resident`:
max(FLOPs at the matmul rate of its rows at its FLOPs per element moved, bytes at the cached GEMV's bandwidth times
the calibrated share of its row count and weight side, `gemv_rows`) + its result's write-back), and what the sum of
the two terms would give instead. It says whether the kernel level's
max(compute, memory) holds for products of 2-16 rows that stream their weights.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Optional, Sequence

from llm_perf_opt.jobs.args import run_script

# (K, N): the tiny twin's lm_head, and weights of the same ~32 MB with wider K
SHAPES = ((64, 129280), (256, 32768), (1024, 8192), (4096, 2048))


def _ints(text: str) -> list[int]:
    try:
        got = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: comma-separated integers") from None
    if not got or min(got) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: integers >= 1")
    return got


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=_ints, default=[1, 2, 4, 8, 16], help="comma-separated rows (M)")
    p.add_argument("--repeats", type=int, default=7, help="timed calls per product (fastest kept)")
    p.add_argument("--warm", type=int, default=3, help="untimed calls before the timed ones")
    args = p.parse_args(argv)
    if args.repeats < 1 or args.warm < 0:
        p.error("--repeats must be >= 1 and --warm >= 0")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    import torch

    from llm_perf_opt.analytic.time.kernel import kernel_time, weight_side
    from llm_perf_opt.config.compose import compose
    from llm_perf_opt.families import register_configs
    from llm_perf_opt.measure.calibrate import hardware_for, roof_for
    from llm_perf_opt.measure.levels_stage import job_time_model
    from llm_perf_opt.prepare.validate import validate

    torch.set_num_threads(1)
    register_configs()
    job = validate(compose(["model=twin_tiny", "runtime.threads=1", "hardware=measured"]), runs_model=False)
    roof = roof_for(job.cfg, hardware_for(job.cfg))
    tm = job_time_model(job.cfg, roof)
    if tm.device is None:
        print(f"no kernel level on this calibration: {tm.missing}")
        return 1
    dev = tm.device.resident()
    print(f"one thread; the kernel level on {dev.label}; fastest of {args.repeats} after {args.warm} warm calls")
    print("   K      N  rows | measured ms | kernel level ms | ratio | compute ms | memory ms | sum ms | ratio")
    for k, n in SHAPES:
        w = torch.randn(n, k)
        for m in args.rows:
            x = torch.randn(m, k)
            for _ in range(args.warm):
                torch.matmul(x, w.t())
            best = float("inf")
            for _ in range(args.repeats):
                t0 = time.thread_time()
                torch.matmul(x, w.t())
                best = min(best, time.thread_time() - t0)
            flops, nbytes, out = 2 * m * k * n, 4 * (m * k + k * n + m * n), 4 * m * n
            level, _ = kernel_time(dev, "gemm", m, flops, nbytes, out)
            at = flops / max(nbytes / dev.itemsize, 1.0)
            rate = dev.row_rate(m, at) if dev.gemm_rows else dev.gemm_rate(at)
            side = weight_side(m, flops, out, dev.itemsize)  # the weight's shorter side, as the kernel level reads it
            compute, memory = flops / rate, dev.memory_s("gemm", nbytes, m, out, side)
            total = compute + memory + dev.writeback_s("gemm", out)
            print(
                f"{k:5d} {n:6d} {m:5d} | {best * 1e3:11.3f} | {level * 1e3:15.3f} | {level / best:5.2f} | "
                f"{compute * 1e3:10.3f} | {memory * 1e3:9.3f} | {total * 1e3:6.3f} | {total / best:5.2f}"
            )
    print(
        "ratio = predicted / measured; kernel level = max(compute, memory) + the result's write-back; sum = compute"
        " + memory + the write-back; memory = bytes at the resident (cached GEMV) bandwidth"
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

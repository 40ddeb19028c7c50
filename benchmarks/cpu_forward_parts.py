"""Where a CPU prefill spends its time beside the eager level's parts: the plain forward with a clock on each of the
family's parts only (no profiler, no other hook), the time outside every part, and the two largest parts run alone.

    ./dev bench cpu_forward_parts                         # the tiny twin, Tiny, one thread
    ./dev bench cpu_forward_parts --mode base --threads 2 --repeats 8

Printed, per part: the fastest forward's part time (thread CPU time on one thread: `time.thread_time`, else the
wall), the eager level's prediction (`hardware=measured`: this host's cached calibration) and their ratio; the
time outside every part with the aten ops the forward ran there (a TorchDispatchMode around one more forward, each
op's own time) beside what the analytic model's own ops predict; then SAM and the lm_head run alone, the fastest
of `--repeats` with their inputs warm, and again right after a 128 MiB buffer was written (the cache evicted). It
says whether a miss of the eager level is a part's kernels or the forward around them. The glibc allocator regime
the process runs under (`measure.allocator`) is printed: it moves a CPU prefill by about 30 % (docs/time.md).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from typing import Optional, Sequence

from llm_perf_opt.jobs.args import add_quick_calibration, quick_calibration, run_script

ALONE = ("sam", "lm_head")  # the parts run alone as well
EVICT_BYTES = 128 << 20


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", default="tiny", help="the vision mode (workload)")
    p.add_argument("--threads", type=int, default=1, help="runtime.threads")
    p.add_argument("--repeats", type=int, default=6, help="timed calls of each region (fastest kept)")
    add_quick_calibration(p)
    args = p.parse_args(argv)
    if args.repeats < 1 or args.threads < 1:
        p.error("--repeats and --threads must be >= 1")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from llm_perf_opt import families
    from llm_perf_opt.analytic.time import levels
    from llm_perf_opt.analytic.time.ideal import predict_latency
    from llm_perf_opt.config.compose import compose
    from llm_perf_opt.measure.allocator import allocator_regime, regime_label
    from llm_perf_opt.measure.calibrate import hardware_for, roof_for
    from llm_perf_opt.measure.levels_stage import job_time_model
    from llm_perf_opt.measure.part_clocks import PartClocks, fastest, part_lines
    from llm_perf_opt.prepare.builders import analytic_model_for, build_job_inputs, model_for_dtype
    from llm_perf_opt.prepare.validate import validate

    families.register_configs()
    over = (
        "model=twin_tiny",
        f"workload={args.mode}",
        f"runtime.threads={args.threads}",
        "hardware=measured",
        *quick_calibration(args),
    )
    job = validate(compose(over), runs_model=True)
    roof = roof_for(job.cfg, hardware_for(job.cfg))
    model = model_for_dtype(analytic_model_for(job, job.page_width, job.page_height, batch=False), roof.dtype)
    predicted = levels.latency_levels(
        model.stages(), predict_latency(model.stages(), roof), job_time_model(job.cfg, roof)
    )
    prefill = model.stages()["prefill"]
    vocabulary = prefill.vocabulary
    session = job.family.open_session(job.cfg.model, job.cfg.runtime)
    clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
    inputs = build_job_inputs(job)
    modules = dict(session.model.named_modules())
    clocks = PartClocks({p.alias: modules[p.path] for p in vocabulary.parts if p.path in modules}, clock)
    best: tuple[float, dict[str, float]] = (float("inf"), {})
    with torch.no_grad(), clocks:
        session.forward(inputs)  # warm-up
        for _ in range(args.repeats):
            clocks.reset()
            t0 = clock()
            session.forward(inputs)
            t = clock() - t0
            if t < best[0]:
                best = (t, dict(clocks.spent))

    class Outside(TorchDispatchMode):
        """The aten ops run while no part is running, each op's own time."""

        def __init__(self) -> None:
            super().__init__()
            self.ops: dict[str, list[float]] = defaultdict(list)

        def __torch_dispatch__(self, func, types, a=(), k=None):  # noqa: ANN001 - torch's signature
            t0 = clock()
            out = func(*a, **(k or {}))
            if clocks.depth == 0:
                self.ops[func.__name__.split(".")[0]].append(clock() - t0)
            return out

    outside_ops = Outside()
    with torch.no_grad(), clocks, outside_ops:
        session.forward(inputs)
    total, by_part = best
    timer = "thread CPU time" if clock is time.thread_time else "wall"
    print(f"twin_tiny {args.mode}, {torch.get_num_threads()} thread(s), {regime_label(allocator_regime())}")
    print(f"prefill: fastest of {args.repeats} plain forwards ({timer}), a clock on each part")
    eager = predicted["prefill"]
    print("\n".join(part_lines(by_part, eager, 2)))
    outside = total - sum(by_part.values())
    own = prefill.root.total  # the stage's own ops: what no part holds
    part_ops = sum(prefill.part(alias).kernels.op_count for alias in by_part)
    ops = sum(len(v) for v in outside_ops.ops.values())
    own_s = sum(sum(v) for v in outside_ops.ops.values())
    print(
        f"  {'outside':<12} {outside * 1e3:12.2f}   ({ops} aten ops ran there, {own_s * 1e3:.2f} ms of their own time;"
    )
    print(f"  {'':<12} {'':>12}    the analytic model lists {own.kernels.op_count - part_ops} ops outside the parts)")
    for name, times in sorted(outside_ops.ops.items(), key=lambda kv: -sum(kv[1]))[:4]:
        print(f"      {name:<32} {len(times):4d} x  {sum(times) * 1e3:7.3f} ms")
    print(f"  {'forward':<12} {total * 1e3:12.2f} {eager[''].eager_s * 1e3:10.2f} {eager[''].eager_s / total:8.2f}")
    buffer = torch.empty(EVICT_BYTES, dtype=torch.uint8)
    print(f"parts alone (fastest of {args.repeats}): warm / after a {EVICT_BYTES >> 20} MiB buffer was written")
    with torch.no_grad():
        for alias in ALONE:
            if alias not in clocks.captured:
                continue
            m, a, k = clocks.captured[alias]
            run = lambda m=m, a=a, k=k: m(*a, **k)  # noqa: E731 - the call timed (no hooks now: the clocks are off)
            warm = fastest(run, args.repeats, clock)
            cold = fastest(run, args.repeats, clock, before=lambda: buffer.add_(1))
            e = eager[alias].eager_s
            print(
                f"  {alias:<12} {warm * 1e3:8.2f} / {cold * 1e3:8.2f} ms"
                f"  (eager level {e * 1e3:.2f} ms: {e / warm:.2f} of warm)"
            )
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

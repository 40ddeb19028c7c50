"""Where a CPU decode step at batch B spends its time beside the eager level's parts: the serving curve's decode step
(the tiny twin, B synthetic pages, greedy, its KV cache) with a clock on each of the family's parts only
(`measure.part_clocks`), the time outside every part, and the lm_head run alone.

    ./dev bench cpu_decode_parts                          # batch 4, step 2, one thread
    ./dev bench cpu_decode_parts --batch 8 --step 1 --repeats 8

Printed, per part: the fastest step's part time (thread CPU time on one thread: `time.thread_time`, else the wall),
the eager level's prediction as `serve.engine=hf_eager` prices the step (`hardware=measured`: this host's cached
calibration; the routed experts' kernels scaled to the experts the batch's tokens are expected to touch,
`serve_engines.timing.routed_census`, as `benchmarks/serving_curve.py` prices its rows) and their ratio; then the
lm_head alone on the step's own input, right after the step (its weights where the step left them) and after
`--repeats` more calls of itself. It says which part of a decode step the eager level misses at batch B (on this
host the step at batch 4 and 8: issue 32's CPU check).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any, Optional, Sequence

from llm_perf_opt.jobs.args import add_quick_calibration, quick_calibration, run_script


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--mode", default="tiny", help="the vision mode (workload)")
    p.add_argument("--batch", type=int, default=4, help="pages decoded together (workload.batch)")
    p.add_argument("--step", type=int, default=2, help="the decode step timed (1: the one right after the prefill)")
    p.add_argument("--threads", type=int, default=1, help="runtime.threads")
    p.add_argument("--repeats", type=int, default=6, help="timed calls of the step (fastest kept)")
    add_quick_calibration(p)
    args = p.parse_args(argv)
    if min(args.batch, args.step, args.threads, args.repeats) < 1:
        p.error("--batch, --step, --threads and --repeats must be >= 1")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    import torch

    from llm_perf_opt import families
    from llm_perf_opt.analytic.serve_engines.timing import routed_census
    from llm_perf_opt.analytic.time.ideal import predict
    from llm_perf_opt.analytic.time.levels import LevelPredictor, stage_levels
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
        f"workload.batch={args.batch}",
        f"runtime.threads={args.threads}",
        "hardware=measured",
        *quick_calibration(args),
    )
    job = validate(compose(over), runs_model=True)
    roof = roof_for(job.cfg, hardware_for(job.cfg))
    inputs = build_job_inputs(job)
    layout = inputs.layout
    analytic = model_for_dtype(
        analytic_model_for(job, layout.page_width, layout.page_height, seq_len=inputs.seq_len), roof.dtype
    )
    stage = routed_census(
        analytic.decode(analytic.seq_len + args.step - 1), analytic.serving_model(None, roof.dtype), args.batch
    )
    predicted = stage_levels(stage, LevelPredictor(job_time_model(job.cfg, roof)), predict(stage, roof))
    session = job.family.open_session(job.cfg.model, job.cfg.runtime)
    model = session.model
    clock = time.thread_time if torch.get_num_threads() == 1 else time.perf_counter
    modules = dict(model.named_modules())
    clocks = PartClocks({p.alias: modules[p.path] for p in stage.vocabulary.parts if p.path in modules}, clock)
    kwargs = session.forward_kwargs(inputs, use_cache=True)
    chosen: dict[str, Any] = {}

    def run_step(step: int, step_kwargs: dict[str, Any]) -> Any:
        past = step_kwargs["past_key_values"]
        to_legacy = getattr(past, "to_legacy_cache", None)
        step_kwargs["past_key_values"] = to_legacy() if callable(to_legacy) else past  # re-run exactly, as the curve
        if step == args.step:
            chosen.update(step_kwargs)
        return model(**step_kwargs)

    best: tuple[float, dict[str, float]] = (float("inf"), {})
    with torch.no_grad(), session.forward_context():
        job.family.greedy_decode(run_step, model(**kwargs), args.step, kwargs)
        with clocks:
            model(**chosen)  # warm-up
            for _ in range(args.repeats):
                clocks.reset()
                t0 = clock()
                model(**chosen)
                t = clock() - t0
                if t < best[0]:
                    best = (t, dict(clocks.spent))
        total, by_part = best
        timer = "thread CPU time" if clock is time.thread_time else "wall"
        print(
            f"twin_tiny {args.mode}, batch {args.batch}, {torch.get_num_threads()} thread(s), "
            f"{regime_label(allocator_regime())}"
        )
        print(f"decode step {args.step}: fastest of {args.repeats} plain calls ({timer}), a clock on each part")
        print("\n".join(part_lines(by_part, predicted, 3)))
        outside = total - sum(by_part.values())
        print(f"  {'outside':<12} {outside * 1e3:12.3f}")
        whole = predicted[""].eager_s
        print(f"  {'step':<12} {total * 1e3:12.3f} {whole * 1e3:10.3f} {whole / total:8.2f}")
        if "lm_head" in clocks.captured:
            m, a, k = clocks.captured["lm_head"]
            run = lambda: m(*a, **k)  # noqa: E731 - the call timed
            after_step = fastest(run, 1, clock, before=lambda: model(**chosen))
            alone = fastest(run, args.repeats, clock)
            e = predicted["lm_head"].eager_s
            print(
                f"lm_head alone: {after_step * 1e3:.3f} ms right after a step, {alone * 1e3:.3f} ms after calls of "
                f"itself (eager level {e * 1e3:.3f} ms)"
            )
    session.close()
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

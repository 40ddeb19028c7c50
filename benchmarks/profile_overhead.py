"""Profiling overhead: the profiled forward's wall time over the plain forward's (target <= 1.15x), on
the full-size twin in Gundam mode on CPU, bf16 weights under `torch.autocast("cpu", bfloat16)`
(runtime=cpu_bf16, as the vendor's infer() runs on CUDA). Both are measured in the same run by
`measure.profile.profile_forward`: warm-up, then plain and profiled forwards interleaved, same count.

It builds the full-size model (7-10 GB): run it under the big-model lock,

    flock /tmp/llm-perf-opt-big.lock ./dev bench profile_overhead
    flock /tmp/llm-perf-opt-big.lock ./dev bench profile_overhead --spec tiny --mode gundam   # quick check

Prints the overhead ratio, each repeat, the coverage of the forward by the parts (target >= 90 %), the
time per part and per stage (vision: SAM + CLIP + projector; language: embedding + decoder + norm +
lm_head), the spread of SAM's blocks (global vs windowed attention) and the post-processing cost;
writes profile.json (and the Chrome trace with --trace) under --out.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt.jobs.args import run_script

TARGET = 1.15
COVERAGE_TARGET = 0.90  # the parts cover the forward's wall time to within 10 %


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: the defaults."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default="deepseek_ocr", choices=["deepseek_ocr", "tiny"])
    ap.add_argument("--mode", default="gundam", help="a workload of conf/workload/ (default gundam)")
    ap.add_argument("--page", default="1700x2200", help="WIDTHxHEIGHT of the synthetic page")
    ap.add_argument("--runtime", default="cpu_bf16", help="a runtime of conf/runtime/ (default cpu_bf16)")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("tmp/bench/profile_overhead"))
    ap.add_argument("--trace", action="store_true", help="also write profile.trace.json (the last profiled forward)")
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: torch's; 1 is steadier on a "
        "shared machine, where a descheduled OpenMP thread stalls every parallel region)",
    )
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)

    import torch
    from omegaconf import OmegaConf

    from llm_perf_opt import units
    from llm_perf_opt.config.paths import conf_dir
    from llm_perf_opt.config.schemas import ModelConfig, ProfileConfig, RuntimeConfig
    from llm_perf_opt.dsocr import parts
    from llm_perf_opt.dsocr.inputs import build_inputs
    from llm_perf_opt.dsocr.session import DeepSeekOCRSession
    from llm_perf_opt.measure.module_times import PROFILE_FILE, TRACE_FILE, module_time_table
    from llm_perf_opt.measure.profile import ForwardCall, profile_forward
    from llm_perf_opt.measure.time_groups import group_times

    width, height = (int(v) for v in args.page.lower().split("x"))
    workload = parts.modes()[args.mode]
    preset = OmegaConf.to_container(OmegaConf.load(conf_dir() / "runtime" / f"{args.runtime}.yaml"))
    runtime = RuntimeConfig(**dict(preset, threads=args.threads))
    cfg = ProfileConfig(warmup=args.warmup, repeats=args.repeats, chrome_trace=args.trace)
    model_cfg = ModelConfig(name="twin" if args.spec == "deepseek_ocr" else "twin_tiny", source="twin", spec=args.spec)

    load_before = os.getloadavg()
    t0 = time.perf_counter()
    with DeepSeekOCRSession.open(model_cfg, runtime) as session:
        build_s = time.perf_counter() - t0
        inputs = build_inputs(session.spec, workload, width, height)
        n_params = sum(p.numel() for p in session.model.parameters())
        print(
            f"twin {session.spec.name}: {units.count(n_params)} parameters, {runtime.dtype} weights, autocast "
            f"{runtime.autocast}, attention {session.attn_implementation}, built in {build_s:.1f} s; "
            f"{torch.get_num_threads()} threads"
        )
        print(
            f"mode {args.mode}, page {width}x{height}: grid {inputs.layout.w_crop}x{inputs.layout.h_crop}, "
            f"{inputs.layout.num_views} views, seq_len {inputs.seq_len}; warm-up {cfg.warmup}, repeats {cfg.repeats}"
        )
        call = ForwardCall.from_session(session, inputs)
        t0 = time.perf_counter()
        times = profile_forward(
            call,
            cfg,
            trace_path=args.out / TRACE_FILE,
            progress=lambda m: print(f"  [{time.perf_counter() - t0:7.1f} s] {m}", flush=True),
        )
        profile_s = time.perf_counter() - t0
    args.out.mkdir(parents=True, exist_ok=True)
    times.write(args.out / PROFILE_FILE)

    wall, cov = times.wall, times.coverage
    ratio = wall["overhead_ratio"]
    print()
    print(
        f"overhead: profiled / plain = {ratio:.3f}x (median {units.seconds(wall['profiled_s']['median'])} / "
        f"{units.seconds(wall['plain_s']['median'])}); target <= {TARGET}x: {'met' if ratio <= TARGET else 'NOT met'}"
    )
    print(
        f"  least disturbed forward of each kind (min / min): {wall['overhead_ratio_min']:.3f}x "
        f"({units.seconds(wall['profiled_s']['min'])} / {units.seconds(wall['plain_s']['min'])})"
    )
    print(
        f"  process CPU time (all threads): profiled / plain = {wall['overhead_ratio_cpu']:.3f}x "
        f"(median {units.seconds(wall['profiled_cpu_s']['median'])} / {units.seconds(wall['plain_cpu_s']['median'])})"
    )
    per = [p / q for p, q in zip(wall["profiled_s"]["repeats"], wall["plain_s"]["repeats"])]
    print(
        "  per round (profiled / plain): "
        + ", ".join(f"{r:.3f}" for r in per)
        + f"; median of the rounds {wall['overhead_ratio_paired']:.3f}x"
    )
    print("  plain    s: " + ", ".join(f"{v:.2f}" for v in wall["plain_s"]["repeats"]))
    print("  profiled s: " + ", ".join(f"{v:.2f}" for v in wall["profiled_s"]["repeats"]))
    print(
        f"coverage: parts cover {units.percent(cov['coverage'])} of the profiled forward's wall time "
        f"(lowest repeat {units.percent(cov['coverage_min'])}); uncovered {units.seconds(cov['uncovered_s']['median'])}"
        f" = outside the parts {units.seconds(cov['outside_parts_s']['median'])} + outside the root range "
        f"{units.seconds(cov['outside_root_s']['median'])}; target >= {units.percent(COVERAGE_TARGET)}: "
        f"{'met' if cov['coverage'] >= COVERAGE_TARGET else 'NOT met'}"
    )
    print()
    print(f"{'part':12s} {'stage':9s} {'inclusive':>10s} {'min':>10s} {'max':>10s} {'share':>7s}")
    stages: dict[str, list[float]] = {}  # per repeat, so a stage's median is of its own sums
    for alias, row in cov["parts"].items():
        stat = row["inclusive_s"]
        stage = parts.BY_ALIAS[alias].stage
        stages[stage] = [a + b for a, b in zip(stages.get(stage, [0.0] * len(stat["repeats"])), stat["repeats"])]
        print(
            f"{alias:12s} {stage:9s} {units.seconds(stat['median']):>10s} {units.seconds(stat['min']):>10s} "
            f"{units.seconds(stat['max']):>10s} {units.percent(row['share_of_wall']):>7s}"
        )
    walls = cov["wall_s"]["repeats"]
    for stage, per_repeat in stages.items():
        share = statistics.median(v / w for v, w in zip(per_repeat, walls))
        print(
            f"stage {stage:9s}: {units.seconds(statistics.median(per_repeat))} (median over the repeats; "
            f"{units.percent(share)} of the forward's wall time)"
        )

    table = module_time_table(times)
    sam = session.spec.sam
    blocks = [f"model.sam_model.blocks.{i}" for i in range(sam.depth)]
    glob = group_times(table, [blocks[i] for i in sam.global_attn_indexes])
    windowed = group_times(table, [b for i, b in enumerate(blocks) if i not in sam.global_attn_indexes])
    whole = group_times(table, blocks)
    print(
        f"SAM blocks (for {len(blocks)}): total {units.seconds(whole.total_s)}, mean {units.seconds(whole.mean_s)}, "
        f"min {units.seconds(whole.min_s)}, max {units.seconds(whole.max_s)}, slowest {whole.slowest}"
    )
    print(
        f"  global-attention blocks {list(sam.global_attn_indexes)}: mean {units.seconds(glob.mean_s)}; "
        f"windowed: mean {units.seconds(windowed.mean_s)}"
    )
    slowest = sorted(((row["self_s"], path) for path, row in table.items() if row["source"] == "ranges"), reverse=True)
    print("largest self times: " + ", ".join(f"{p or '(root)'} {units.seconds(s)}" for s, p in slowest[:5]))
    n_forward = sum(1 for u in times.unhooked.values() if u["kind"] == "forward")
    print(
        f"module calls {len(times.calls)}; modules without a range: {len(times.unhooked)} "
        f"({n_forward} run through .forward(), the rest containers)"
    )
    print(
        f"warm-up {units.seconds(wall['warmup_s'])}; profiler post-processing per repeat "
        f"{units.seconds(wall['postprocess_s']['median'])}; whole profile stage {units.seconds(profile_s)}; "
        f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB"
    )
    if times.problems:
        print("problems: " + "; ".join(times.problems))
    print(
        f"load average (1, 5, 15 min) on {os.cpu_count()} cores: before {', '.join(f'{v:.1f}' for v in load_before)}; "
        f"after {', '.join(f'{v:.1f}' for v in os.getloadavg())} (other processes inflate wall times at random)"
    )
    print(f"wrote {args.out / PROFILE_FILE}" + (f" and {args.out / TRACE_FILE}" if times.trace_file else ""))


if __name__ == "__main__":
    sys.exit(run_script(main))

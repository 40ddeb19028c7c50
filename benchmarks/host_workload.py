"""The calibration's host workload (`measure.host_workload`: a small MoE decode step, host-bound) with its weights
in the calibrated dtype, as the jobs hold them, and in float32 under autocast, as the calibration held them until
2026-11-27: the host's time per op the eager level charges, measured both ways in interleaved rounds.

    ./dev bench host_workload                              # the CPU, float32 (both variants are the same there)
    python benchmarks/host_workload.py --device cuda       # the GPU kit's step: bfloat16 under autocast

Printed per variant: the step's wall (fastest consistent sample, `calibrate_levels.fastest_consistent`, of
`--rounds` samples of `--steps` steps each), its ops that launch a kernel (`calibrate_levels.count_ops`), its
non-view aten ops (`count_kernels`), and the host seconds per op: (wall - syncs x sync_s) / ops, the figure the CUDA
calibration stores as `host.op_s` (`op_unit: op`). Compare it with the model's own host time per op of a recorded
trace (`measure.recorded_profile.RecordedProfile.host_per_op_s`: 20-30 us on the H200 recordings of 2026-11-26/27).
"""

from __future__ import annotations

import argparse
import sys
from typing import Optional, Sequence

from llm_perf_opt.jobs.args import run_script


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--dtype", default="", help="the calibrated dtype (default: bfloat16 on cuda, float32 on cpu)")
    p.add_argument("--rounds", type=int, default=9, help="samples per variant, interleaved")
    p.add_argument("--steps", type=int, default=20, help="decode steps per sample")
    args = p.parse_args(argv)
    if args.rounds < 1 or args.steps < 1:
        p.error("--rounds and --steps must be >= 1")
    if args.dtype not in ("", "bfloat16", "float16", "float32"):
        p.error(f"--dtype {args.dtype!r}: must be bfloat16, float16 or float32")
    return args


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    import torch

    from llm_perf_opt.errors import ConfigError
    from llm_perf_opt.measure.calibrate_levels import count_kernels, count_ops, fastest_consistent, sync_round_trip
    from llm_perf_opt.measure.host_workload import DecodeStep, step_runner

    if args.device == "cuda" and not torch.cuda.is_available():
        raise ConfigError.field("--device", "cuda", "needs a CUDA GPU (torch.cuda.is_available() is False)")
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype or ("bfloat16" if device.type == "cuda" else "float32"))
    cuda = device.type == "cuda"
    sync_s = sync_round_trip(device, dtype, 7) if cuda else 0.0  # as the calibration measures it
    variants = {"weights in the dtype": None, "float32 weights": torch.float32}
    runs = {name: step_runner(device, dtype, w) for name, w in variants.items()}
    for run in runs.values():  # warm: the caching allocator, cuBLAS handles, autocast's cache
        for _ in range(3):
            run()
    counts = {name: (count_ops(run), count_kernels(run)) for name, run in runs.items()}
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(args.rounds):
        for name, run in runs.items():
            samples[name].append(per_call(run, args.steps, device))
    syncs = DecodeStep.SYNCS if cuda else 0
    print(
        f"host workload on {torch.cuda.get_device_name(device) if cuda else 'cpu'} ({str(dtype)[6:]}"
        f"{', autocast' if cuda else ''}); sync round trip {sync_s * 1e6:.1f} us; {syncs} syncs per step; "
        f"{args.rounds} samples of {args.steps} steps, fastest consistent"
    )
    for name, s in samples.items():
        ops, kernels = counts[name]
        step = fastest_consistent(s)
        per_op = max(step - syncs * sync_s, 0.0) / ops
        print(
            f"  {name:22s} step {step * 1e3:7.3f} ms (samples {min(s) * 1e3:.3f}-{max(s) * 1e3:.3f}); {ops} ops "
            f"that launch a kernel, {kernels} non-view aten ops; host per op {per_op * 1e6:.1f} us"
        )
    return 0


def per_call(fn, calls: int, device) -> float:  # noqa: ANN001 - torch types imported lazily
    """Wall seconds per call of `calls` back-to-back calls (`time.perf_counter`; on CUDA the device synchronised
    before the first and after the last)."""
    import time

    import torch

    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize(device)
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    if cuda:
        torch.cuda.synchronize(device)
    return (time.perf_counter() - t0) / calls


if __name__ == "__main__":
    sys.exit(run_script(main))

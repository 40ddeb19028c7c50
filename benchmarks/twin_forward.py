"""Prints the full-size twin's forward time and peak RSS per mode on this machine (bf16 weights under
CPU autocast, as the vendor's infer() runs on CUDA). A full-size forward must fit in 24 GiB.

Each mode runs in its own process, so each peak RSS is that mode's own (build + one forward).
Usage: ./dev bench twin_forward [MODE ...]   (default: all six modes; page 1700x2200)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from typing import Optional, Sequence


def run_one(mode: str) -> dict:
    import torch

    from llm_perf_opt.dsocr.inputs import build_inputs
    from llm_perf_opt.dsocr.parts import modes
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.dsocr.twin import build_twin

    workload = modes()[mode]
    spec = ModelSpec.deepseek_ocr()
    t0 = time.perf_counter()
    model = build_twin(spec, device="cpu", dtype=torch.bfloat16, attn_implementation="eager", seed=0)
    build_s = time.perf_counter() - t0
    inputs = build_inputs(spec, workload, 1700, 2200)
    kwargs = inputs.forward_kwargs(dtype=torch.bfloat16)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        t0 = time.perf_counter()
        out = model(**kwargs)
        forward_s = time.perf_counter() - t0
    return {
        "mode": mode,
        "seq_len": inputs.seq_len,
        "views": inputs.layout.num_views,
        "build_s": round(build_s, 1),
        "forward_s": round(forward_s, 2),
        "finite": bool(torch.isfinite(out.logits.float()).all()),
        "peak_rss_gib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
    }


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: every mode."""
    from llm_perf_opt.dsocr.parts import mode_names

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)

    def mode(value: str) -> str:  # not `choices`: argparse refuses an empty list against them
        if value not in mode_names():
            raise argparse.ArgumentTypeError(f"invalid mode {value!r}: one of {', '.join(mode_names())}")
        return value

    ap.add_argument(
        "modes", nargs="*", type=mode, metavar="MODE", help=f"one of {', '.join(mode_names())} (default: every mode)"
    )
    args = ap.parse_args(argv)
    args.modes = args.modes or list(mode_names())
    return args


def main(argv: Optional[Sequence[str]] = None) -> None:
    modes = parse_args(argv).modes
    print(
        "full-size twin (3.34B params), bf16 weights under torch.autocast('cpu'), page 1700x2200, "
        f"{__import__('os').cpu_count()} cores"
    )
    print(f"{'mode':9s} {'seq':>5s} {'views':>5s} {'build s':>8s} {'forward s':>10s} {'peak RSS GiB':>13s} finite")
    for mode in modes:
        proc = subprocess.run([sys.executable, __file__, "--child", mode], capture_output=True, text=True)
        if proc.returncode != 0:
            print(
                f"{mode:9s} failed: {proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}"
            )
            continue
        r = json.loads(proc.stdout.strip().splitlines()[-1])
        print(
            f"{r['mode']:9s} {r['seq_len']:5d} {r['views']:5d} {r['build_s']:8.1f} {r['forward_s']:10.2f} "
            f"{r['peak_rss_gib']:13.2f} {r['finite']}",
            flush=True,
        )


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        print(json.dumps(run_one(sys.argv[2])))
    else:
        main()

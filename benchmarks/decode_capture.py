"""Capture time per decode step on the full-size twin: bf16 weights on CPU under `torch.autocast("cpu", bf16)`.

    flock /tmp/llm-perf-opt-big.lock ./dev bench decode_capture            # tiny mode, 4 steps
    flock /tmp/llm-perf-opt-big.lock ./dev bench decode_capture --steps 8 --mode gundam

Runs, in this order, the trace stage's capture (`callgraph.capture` with the trace patches plus
`routing`, as `./dev trace` runs it) of the prefill alone and of the prefill followed by N greedy decode
steps in one call graph (`dsocr.decode.DecodeProgram`), and the same prefill + N steps without any
capture. Capture time per decode step = (capture of prefill + N steps - capture of the prefill) / N,
beside the plain time per step from the uncaptured loop, and their ratio (the capture's cost per
step). One plain prefill + N steps first, untimed (warm-up). Wall time from `time.perf_counter`
around each run, CPU time of the process beside it; each run once (`--repeat K` keeps the fastest of
K). The machine is shared: compare within one run.
"""
from __future__ import annotations

import argparse
import time

import torch

from llm_perf_opt.callgraph.capture import capture
from llm_perf_opt.dsocr.decode import DecodeProgram
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.parts import modes
from llm_perf_opt.dsocr.patches import DEFAULT_TRACE_PATCHES, runtime_patches
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin

MODES = modes()
PATCHES = DEFAULT_TRACE_PATCHES + ("routing",)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def timed(fn) -> tuple[float, float, object]:
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - w0, time.process_time() - c0, out


def best(k: int, fn) -> tuple[float, float, object]:
    runs = [timed(fn) for _ in range(k)]
    return min(runs, key=lambda r: r[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", default="tiny", choices=sorted(MODES))
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--page", default="1700x2200", help="WIDTHxHEIGHT of the synthetic page")
    ap.add_argument("--spec", default="deepseek_ocr", choices=["deepseek_ocr", "tiny"])
    ap.add_argument("--repeat", type=int, default=1, help="keep the fastest of K runs of each kind")
    args = ap.parse_args()
    width, height = (int(v) for v in args.page.lower().split("x"))
    spec = ModelSpec.named(args.spec)
    t0 = time.perf_counter()
    model = build_twin(spec, dtype=torch.bfloat16)
    log(f"built twin {spec.name} in bf16 in {time.perf_counter() - t0:.1f} s ({torch.get_num_threads()} threads)")
    inputs = build_inputs(spec, MODES[args.mode], width, height)
    kwargs = dict(inputs.forward_kwargs(None, torch.bfloat16), use_cache=True)
    log(f"mode {args.mode}, page {width}x{height}: sequence {inputs.seq_len} tokens, {args.steps} decode steps")

    def run_capture(steps: int):
        program = DecodeProgram(steps) if steps else None
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16), runtime_patches(model, PATCHES) as rl:
            return capture(model, kwargs, model_name=spec.name, runtime_log=rl, program=program)

    def run_plain(steps: int):
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            program = DecodeProgram(steps)
            return program(lambda **kw: model(**kw), **kwargs)

    w_warm, _, _ = timed(lambda: run_plain(args.steps))  # first calls allocate and warm caches: not timed
    log(f"warm-up (prefill + {args.steps} steps, not counted): {w_warm:.2f} s")
    w_plain0, c_plain0, _ = best(args.repeat, lambda: run_plain(0))
    log(f"plain prefill: {w_plain0:.2f} s (cpu {c_plain0:.1f} s)")
    w_plain, c_plain, _ = best(args.repeat, lambda: run_plain(args.steps))
    log(f"plain prefill + {args.steps} steps: {w_plain:.2f} s (cpu {c_plain:.1f} s)")
    w_cap0, c_cap0, r0 = best(args.repeat, lambda: run_capture(0))
    log(f"capture of the prefill: {w_cap0:.1f} s (cpu {c_cap0:.1f} s), {r0.callgraph.total_ops():,} ops, "
        f"{r0.callgraph.total_module_calls():,} module calls")
    w_cap, c_cap, r = best(args.repeat, lambda: run_capture(args.steps))
    cg = r.callgraph
    log(f"capture of the prefill + {args.steps} steps: {w_cap:.1f} s (cpu {c_cap:.1f} s), {cg.total_ops():,} ops, "
        f"{cg.total_module_calls():,} module calls; model.layers.0 called {cg.call_counts['model.layers.0']} times")

    n = args.steps
    per_step_capture = (w_cap - w_cap0) / n
    per_step_plain = (w_plain - w_plain0) / n
    ops_per_step = (cg.total_ops() - r0.callgraph.total_ops()) / n
    print()
    print(f"{'':<34} {'wall s':>10} {'cpu s':>10}")
    print(f"{'capture, prefill':<34} {w_cap0:>10.2f} {c_cap0:>10.2f}")
    print(f"{f'capture, prefill + {n} steps':<34} {w_cap:>10.2f} {c_cap:>10.2f}")
    print(f"{'plain, prefill':<34} {w_plain0:>10.2f} {c_plain0:>10.2f}")
    print(f"{f'plain, prefill + {n} steps':<34} {w_plain:>10.2f} {c_plain:>10.2f}")
    print()
    print(f"capture time per decode step: {per_step_capture:.2f} s wall, {(c_cap - c_cap0) / n:.2f} s cpu "
          f"({ops_per_step:,.0f} ops per step)")
    print(f"plain time per decode step:   {per_step_plain * 1e3:.0f} ms wall, {(c_plain - c_plain0) / n * 1e3:.0f} ms cpu")
    if per_step_plain > 0:
        print(f"capture / plain per step:     {per_step_capture / per_step_plain:.1f}x")


if __name__ == "__main__":
    main()

"""Capture time per decode step on the full-size twin: bf16 weights on CPU under `torch.autocast("cpu", bf16)`.

    flock /tmp/llm-perf-opt-big.lock ./dev bench decode_capture            # tiny mode, 4 steps
    flock /tmp/llm-perf-opt-big.lock ./dev bench decode_capture --steps 8 --mode gundam

What it runs, in this order (after one untimed plain prefill + N steps, the warm-up):

1. the plain loop: the prefill and N greedy decode steps (`model_runtime.decode.greedy_decode`), no capture;
2. the trace stage's capture (`callgraph.capture`, with the trace patches plus `routing`, as `./dev
   trace` runs it) of the prefill alone;
3. the same capture of the prefill and the N steps in one call graph.

Per step, wall time between the loop's step callbacks (`time.perf_counter`), in the plain loop and inside
the capture's traced forward; the median over the steps is the step's time. The capture's own work
after the forward (TorchLens' postprocessing, the graph and metadata) grows with the ops, so the
whole capture cost of a step is (capture 3 - capture 2) / N. Both are printed beside the plain step
and their ratio to it. The machine is shared: compare within one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Optional, Sequence

import torch

from llm_perf_opt.callgraph.capture import capture
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.parts import modes
from llm_perf_opt.dsocr.patches import DEFAULT_TRACE_PATCHES, runtime_patches
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin
from llm_perf_opt.jobs.args import run_script
from llm_perf_opt.model_runtime.decode import greedy_decode

MODES = modes()
PATCHES = DEFAULT_TRACE_PATCHES + ("routing",)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


class StepClock:
    """Wall time of each decode step: the time between the prefill's end (`start`) and each step callback."""

    def __init__(self) -> None:
        self.marks: list[float] = []

    def start(self) -> None:
        self.marks = [time.perf_counter()]

    def __call__(self, _step) -> None:
        self.marks.append(time.perf_counter())

    @property
    def steps(self) -> list[float]:
        return [b - a for a, b in zip(self.marks, self.marks[1:])]


def program_with_clock(steps: int, clock: StepClock):
    """The decode loop as a capture program (`DecodeProgram`'s), its step clock started after the prefill."""

    def program(forward, *args, **kwargs):
        prefill = forward(*args, **kwargs)
        clock.start()
        return greedy_decode(lambda _k, kw: forward(**kw), prefill, steps, kwargs, on_step=clock).last

    return program


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: the defaults."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", default="tiny", choices=sorted(MODES))
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--page", default="1700x2200", help="WIDTHxHEIGHT of the synthetic page")
    ap.add_argument("--spec", default="deepseek_ocr", choices=["deepseek_ocr", "tiny"])
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    width, height = (int(v) for v in args.page.lower().split("x"))
    n = args.steps
    spec = ModelSpec.named(args.spec)
    t0 = time.perf_counter()
    model = build_twin(spec, dtype=torch.bfloat16)
    log(f"built twin {spec.name} in bf16 in {time.perf_counter() - t0:.1f} s ({torch.get_num_threads()} threads)")
    inputs = build_inputs(spec, MODES[args.mode], width, height)
    kwargs = dict(inputs.forward_kwargs(None, torch.bfloat16), use_cache=True)
    log(f"mode {args.mode}, page {width}x{height}: sequence {inputs.seq_len} tokens, {n} decode steps")

    def plain(clock: StepClock) -> float:
        t = time.perf_counter()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
            program_with_clock(n, clock)(lambda **kw: model(**kw), **kwargs)
        return time.perf_counter() - t

    def captured(steps: int, clock: StepClock):
        t = time.perf_counter()
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16), runtime_patches(model, PATCHES) as rl:
            result = capture(
                model,
                kwargs,
                model_name=spec.name,
                runtime_log=rl,
                program=program_with_clock(steps, clock) if steps else None,
            )
        return time.perf_counter() - t, result

    log(f"warm-up (not counted): {plain(StepClock()):.1f} s")
    plain_clock = StepClock()
    w_plain = plain(plain_clock)
    log(
        f"plain prefill + {n} steps: {w_plain:.1f} s; steps {', '.join(f'{s * 1e3:.0f}' for s in plain_clock.steps)} ms"
    )
    w_cap0, r0 = captured(0, StepClock())
    log(f"capture of the prefill: {w_cap0:.1f} s, {r0.callgraph.total_ops():,} ops")
    cap_clock = StepClock()
    w_cap, r = captured(n, cap_clock)
    cg = r.callgraph
    log(
        f"capture of the prefill + {n} steps: {w_cap:.1f} s, {cg.total_ops():,} ops; model.layers.0 called "
        f"{cg.call_counts['model.layers.0']} times; steps in the traced forward "
        f"{', '.join(f'{s:.2f}' for s in cap_clock.steps)} s"
    )

    step_plain = statistics.median(plain_clock.steps)
    step_traced = statistics.median(cap_clock.steps)
    step_capture = (w_cap - w_cap0) / n
    ops_per_step = (cg.total_ops() - r0.callgraph.total_ops()) / n
    print()
    print(f"plain decode step (median of {n}):            {step_plain * 1e3:8.0f} ms")
    print(
        f"decode step inside the traced forward (median): {step_traced * 1e3:8.0f} ms  "
        f"({step_traced / step_plain:.0f}x)"
    )
    print(
        f"capture time per decode step, whole capture:    {step_capture * 1e3:8.0f} ms  "
        f"({step_capture / step_plain:.0f}x)"
        f"  = (capture of prefill + {n} steps {w_cap:.1f} s - capture of prefill {w_cap0:.1f} s) / {n}"
    )
    print(f"ops per decode step in the call graph:          {ops_per_step:8.0f}")


if __name__ == "__main__":
    sys.exit(run_script(main))

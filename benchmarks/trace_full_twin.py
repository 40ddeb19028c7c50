"""Time the trace stage on the full-size twin: bf16 weights on CPU under `torch.autocast("cpu", bf16)`.

    python benchmarks/trace_full_twin.py                 # tiny and gundam modes, page 1700x2200
    python benchmarks/trace_full_twin.py tiny --out tmp/trace_bench

Per mode it prints the plain forward time, TorchLens' own capture time (`torchlens_adapter.trace_forward`:
the same TorchLens options, no hooks, no derivation) and the whole trace stage (`capture`: TorchLens + the
read-only I/O hooks + graph derivation + metadata merge), and the stage's cost on top of TorchLens
(target: <= 50 %). `--torchlens-default` also times TorchLens with its default options (which re-runs
the forward when it sees the TorchScript `quick_gelu`), for reference. Runs are sequential, in this
order; `--repeat N` repeats the three and keeps each one's fastest run (the machine's load moves every
figure, so compare within a run).
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import torch

from llm_perf_opt.callgraph.capture import capture
from llm_perf_opt.callgraph.torchlens_adapter import trace_forward
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.parts import modes
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin
from llm_perf_opt.jobs.args import run_script

MODES = modes()  # the workload presets of conf/workload/
DEFAULT_MODES = ("tiny", "gundam")


inf = float("inf")


class Timer:
    """Wall and CPU (this process, all threads) seconds of a block; CPU time is less moved by other load."""

    def __enter__(self) -> "Timer":
        self.w0, self.c0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self.w0, time.process_time() - self.c0

    @property
    def pair(self) -> tuple[float, float]:
        return (self.wall, self.cpu)

    def __str__(self) -> str:
        return f"{self.wall:.1f} s (cpu {self.cpu:.1f} s)"


def mode_name(value: str) -> str:
    if value not in MODES:
        raise argparse.ArgumentTypeError(f"invalid mode {value!r}: one of {', '.join(sorted(MODES))}")
    return value


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: the defaults."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # no `choices`: argparse checks an empty or default list against them as one value and refuses it
    ap.add_argument(
        "modes",
        nargs="*",
        type=mode_name,
        metavar="MODE",
        help=f"one of {', '.join(sorted(MODES))} (default: {' '.join(DEFAULT_MODES)})",
    )
    ap.add_argument("--page", default="1700x2200", help="WIDTHxHEIGHT of the synthetic page")
    ap.add_argument("--spec", default="deepseek_ocr", choices=["deepseek_ocr", "tiny"])
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float32"])
    ap.add_argument("--torchlens-default", action="store_true", help="also time TorchLens with its default options")
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="repeat the (TorchLens alone, trace stage) pair N times and keep each one's fastest run",
    )
    ap.add_argument("--verbose", action="store_true", help="print TorchLens' own progress lines")
    ap.add_argument("--out", type=Path, help="write <mode>.callgraph.json here")
    args = ap.parse_args(argv)
    args.modes = args.modes or list(DEFAULT_MODES)
    return args


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    width, height = (int(v) for v in args.page.lower().split("x"))
    dtype = getattr(torch, args.dtype)

    spec = ModelSpec.named(args.spec)
    t0 = time.perf_counter()
    model = build_twin(spec, dtype=dtype)
    n_params = sum(p.numel() for p in model.parameters())
    log(
        f"built twin {spec.name}: {n_params:,} parameters, {args.dtype}, in {time.perf_counter() - t0:.1f} s "
        f"({torch.get_num_threads()} threads)"
    )
    progress = (lambda m: log(m)) if args.verbose else (lambda m: log(m) if not m.startswith("torchlens") else None)
    rows = []
    for mode in args.modes:
        inputs = build_inputs(spec, MODES[mode], width, height)
        lay = inputs.layout
        log(
            f"mode {mode}, page {width}x{height}: grid {lay.w_crop}x{lay.h_crop}, {lay.num_crops} crops, "
            f"{lay.image_tokens} image tokens, seq_len {inputs.seq_len}"
        )
        kwargs = inputs.forward_kwargs(dtype=dtype)
        autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16)
        with torch.no_grad(), autocast:
            best = {"forward": (inf, inf), "torchlens": (inf, inf), "stage": (inf, inf)}
            default_s = None
            result = None
            for attempt in range(max(1, args.repeat)):
                with Timer() as t:
                    plain = model(**kwargs)
                best["forward"] = min(best["forward"], t.pair)
                log(f"  plain forward {t}")
                del plain
                gc.collect()

                with Timer() as t:
                    run = trace_forward(model, (), kwargs, progress=log if args.verbose else None)
                best["torchlens"] = min(best["torchlens"], t.pair)
                log(
                    f"  TorchLens capture alone {t} ({run.trace.num_ops} ops, "
                    f"{run.trace.num_module_calls} module calls)"
                )
                del run
                gc.collect()

                if args.torchlens_default and attempt == 0:
                    import torchlens
                    from torchlens.options import CaptureOptions

                    with Timer() as t:
                        options = CaptureOptions(layers_to_save=None, unwrap_when_done=True)
                        trace = torchlens.trace(model, [], kwargs, capture=options)
                    default_s = t.wall
                    log(f"  TorchLens default options {t}")
                    del trace
                    gc.collect()

                with Timer() as t:
                    attempt_result = capture(model, kwargs, model_name=f"twin {spec.name}", progress=progress)
                log(f"  trace stage {t}")
                if t.pair < best["stage"]:
                    best["stage"], result = t.pair, attempt_result
                del attempt_result
                gc.collect()
        cg = result.callgraph
        st = cg.stats
        stage_s = best["stage"][0]
        log(
            f"  fastest trace stage {stage_s:.1f} s = capture {st['capture_seconds']:.1f} (TorchLens + hooks) + derive "
            f"{st['derive_seconds']:.2f} + metadata {st['metadata_seconds']:.2f} (+ tree/stats "
            f"{stage_s - st['capture_seconds'] - st['derive_seconds'] - st['metadata_seconds']:.2f})"
        )
        if args.out:
            path = cg.save(args.out / f"{mode}.callgraph.json")
            log(f"  wrote {path} ({path.stat().st_size / 1e6:.2f} MB)")
        rows.append((mode, inputs.seq_len, st["num_ops"], st["module_calls"], best, st, default_s))
        del result, cg
        gc.collect()

    print()
    print(
        f"trace stage on twin {spec.name} ({args.dtype}, autocast bf16 on CPU), page {width}x{height}, "
        f"fastest of {max(1, args.repeat)}; wall s (cpu s)"
    )
    print(
        f"{'mode':8s} {'seq':>5s} {'ops':>6s} {'calls':>6s} {'forward':>14s} {'TorchLens':>14s} {'stage':>14s} "
        f"{'derive':>7s} {'metadata':>8s} {'added wall':>11s} {'added cpu':>10s}"
    )
    for mode, seq, ops, calls, best, st, default_s in rows:
        cells = [f"{w:6.1f} ({c:5.1f})" for w, c in (best["forward"], best["torchlens"], best["stage"])]
        added_wall = best["stage"][0] / best["torchlens"][0] - 1
        added_cpu = best["stage"][1] / best["torchlens"][1] - 1
        print(
            f"{mode:8s} {seq:5d} {ops:6d} {calls:6d} {cells[0]:>14s} {cells[1]:>14s} {cells[2]:>14s} "
            f"{st['derive_seconds']:7.2f} {st['metadata_seconds']:8.2f} {added_wall:+11.0%} {added_cpu:+10.0%}"
            + (f"   (TorchLens default options {default_s:.1f} s)" if default_s else "")
        )
    print(
        "added = trace stage / TorchLens capture alone - 1 (target <= +50%); derive and metadata: seconds after "
        "the capture (the rest of the stage is TorchLens with the hooks installed)"
    )


if __name__ == "__main__":
    sys.exit(run_script(main))

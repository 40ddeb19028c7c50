"""Verify the analytic model against the full-size twin: bf16 weights on CPU under
`torch.autocast("cpu", torch.bfloat16)`, as the vendor's infer() runs (on CUDA). One mode per run.

    python benchmarks/verify_full_twin.py                # gundam (the default workload)
    python benchmarks/verify_full_twin.py tiny
    python benchmarks/verify_full_twin.py gundam --page 1700x2200 --decode-steps 1 --fvcore

Prints the verification table (vision, prefill and decode rows), the aten ops that ran without a FLOP
formula, and fvcore's second opinion when asked; `--json PATH` writes verification.json.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

import torch

from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.parts import modes
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin
from llm_perf_opt.jobs.args import run_script
from llm_perf_opt.measure import check_model_agreement, fvcore_flops, render_table, write_verification
from llm_perf_opt.model_runtime.measure import measure_forward

MODES = modes()  # conf/workload/*.yaml


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: the defaults."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", nargs="?", default="gundam", choices=sorted(MODES), help="default: gundam")
    ap.add_argument("--page", default="1700x2200", help="WIDTHxHEIGHT of the synthetic page")
    ap.add_argument("--decode-steps", default="1", help="comma-separated 1-based decode steps to measure ('' for none)")
    ap.add_argument("--fvcore", action="store_true", help="also run fvcore (a second, jit-traced forward)")
    ap.add_argument("--spec", default="deepseek_ocr", choices=["deepseek_ocr", "tiny"])
    ap.add_argument("--rtol", type=float, default=1e-3)
    ap.add_argument("--parts", default="summary", choices=["summary", "all"], help="rows to print")
    ap.add_argument("--json", type=Path, help="write verification.json here")
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    width, height = (int(v) for v in args.page.lower().split("x"))
    steps = [int(s) for s in args.decode_steps.split(",") if s.strip()]

    spec = ModelSpec.named(args.spec)
    t0 = time.perf_counter()
    model = build_twin(spec, dtype=torch.bfloat16)
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"built twin {spec.name}: {n_params:,} parameters, bf16, in {time.perf_counter() - t0:.1f}s "
        f"({torch.get_num_threads()} threads)"
    )
    inputs = build_inputs(spec, MODES[args.mode], width, height)
    layout = inputs.layout
    print(
        f"mode {args.mode}, page {width}x{height}: grid {layout.w_crop}x{layout.h_crop}, {layout.num_crops} crops, "
        f"{layout.image_tokens} image tokens, seq_len {inputs.seq_len}"
    )
    kwargs = inputs.forward_kwargs(dtype=torch.bfloat16)

    t0 = time.perf_counter()
    measured = measure_forward(model, kwargs, steps, autocast_dtype=torch.bfloat16)
    print(f"measured prefill + {len(steps)} decode step(s) in {time.perf_counter() - t0:.1f}s")
    fv = None
    if args.fvcore:
        t0 = time.perf_counter()
        fv_kwargs = dict(kwargs, use_cache=False)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            fv = fvcore_flops(model, fv_kwargs)
        print(f"fvcore {'ran' if fv.ok else 'FAILED'} in {time.perf_counter() - t0:.1f}s")

    analytic = DeepseekOCRAnalyticModel(spec, layout, inputs.seq_len, dtype="bfloat16")
    v = check_model_agreement(
        analytic,
        measured.prefill,
        measured.decode,
        rtol=args.rtol,
        fvcore=fv,
        context={"mode": args.mode, "page": [width, height], "weights": "bf16", "autocast": "cpu bf16"},
    )
    print()
    print(render_table(v, parts=args.parts, max_rows=400))
    print()
    print("aten ops without a FLOP formula (prefill; calls):")
    print("  " + ", ".join(f"{k} {n}" for k, n in sorted(measured.prefill.ops_without_formula.items())))
    print(f"matmul-like among them: {measured.prefill.matmul_like_without_formula or 'none'}")
    print(f"extra formulas registered: {measured.prefill.extra_formulas}")
    print(f"counted ops (prefill; calls): {measured.prefill.counted_ops}")
    stages = v.to_dict()["stages"]
    for s in stages:
        print(
            f"{s['stage']:8s} {s['label']:14s} analytic {s['analytic']:>20,}  measured {s['measured']:>20,}  "
            f"rel.err {s['rel_error']}"
        )
    if fv is not None and fv.ok:
        print(f"fvcore by operator (x2): {fv.by_operator}")
        gap = fv.total - measured.prefill.total
        print(
            f"fvcore total {fv.total:,} vs torch {measured.prefill.total:,}: "
            f"difference {gap:,} ({gap / measured.prefill.total:+.2%})"
        )
    if args.json:
        write_verification(args.json, v)
        print(f"wrote {args.json}")
    raise SystemExit(0 if v.passed else 1)


if __name__ == "__main__":
    sys.exit(run_script(main))

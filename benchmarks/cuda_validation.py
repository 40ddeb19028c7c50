"""The CUDA checks of the time model in one command: measured vs predicted (ideal / kernel / eager) per stage, part
and decode step, on the twin (and the vendor code when DSOCR_MODEL_PATH is set), modes Tiny, Base and Gundam.

    python benchmarks/cuda_validation.py [--models twin,vendor] [--modes tiny,base,gundam] [--decode-steps 8]
                                         [--out tmp/cuda_validation]

Each (model, mode) is one trace job as a user runs it (`pipelines/trace.py runtime=cuda hardware=measured
trace.decode_steps=8`, profile on, the device calibrated and cached; random weights for the twin, the vendor's
own files for the vendor), in a fresh process. From its summary.json (never recomputed) it takes:

* measured, device: the GPU kernel time inside each part's module ranges (the profile's device time base:
  `measure.levels_stage.MEASURED_BY`, fastest run); measured, wall: the fastest plain forward of the prefill and
  of each decode step (`time.perf_counter`, CUDA synchronised);
* predicted: the three levels of the roofline stage (`summary.roofline.levels`, convention in
  `analytic.time.convention.LEVELS`) on the calibrated GPU + this host;
* kernel attribution coverage: the share of the profiled forward's time that the parts' module ranges hold
  (`summary.profile.coverage`), and the profile's problems.

Writes `<out>/cuda_validation.json` and `<out>/cuda_validation.md` (one table: one row per stage, part and decode
step of each job). Without CUDA it refuses in one line and exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from llm_perf_opt.jobs.args import run_script

ROOT = Path(__file__).resolve().parents[1]
EXIT_NO_CUDA = 2


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument(
        "--models", default="", help="comma-separated (default: twin, and vendor when DSOCR_MODEL_PATH is set)"
    )
    p.add_argument("--modes", default="tiny,base,gundam")
    p.add_argument("--decode-steps", type=int, default=8)
    p.add_argument("--repeats", type=int, default=3, help="profile.repeats")
    p.add_argument("--out", default=str(ROOT / "tmp" / "cuda_validation"))
    p.add_argument("--runs", default="", help="read existing run directories (comma-separated) instead of running")
    return p.parse_args(argv)


def cuda_missing() -> Optional[str]:
    """Why this machine cannot run the checks (one line), None when it can."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - the project needs torch
        return f"cuda_validation: torch is not importable ({exc})"
    if not torch.cuda.is_available():
        return (
            f"cuda_validation: needs a CUDA GPU (torch {torch.__version__}, torch.cuda.is_available() is False); "
            "nothing was run or written"
        )
    return None


def models(args: argparse.Namespace) -> list[str]:
    if args.models:
        return [m for m in args.models.split(",") if m]
    return ["twin"] + (["vendor"] if os.environ.get("DSOCR_MODEL_PATH") else [])


def run_job(model: str, mode: str, args: argparse.Namespace, base: Path) -> Path:
    run_dir = base / f"{model}-{mode}"
    cmd = [
        sys.executable,
        str(ROOT / "pipelines" / "trace.py"),
        f"model={model}",
        f"workload={mode}",
        "runtime=cuda",
        "hardware=measured",
        f"trace.decode_steps={args.decode_steps}",
        f"profile.repeats={args.repeats}",
        f"hydra.run.dir={run_dir}",
    ]
    print(f"$ {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    (base / f"{model}-{mode}.log").write_text(proc.stdout + "\n" + proc.stderr)
    print(f"  exit {proc.returncode} in {time.perf_counter() - t0:.0f} s", flush=True)
    return run_dir


def rows_of(run_dir: Path, model: str, mode: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(one row per stage / part / decode step, job facts) from a run's summary.json."""
    path = run_dir / "summary.json"
    if not path.is_file():
        return [], {"model": model, "mode": mode, "run": str(run_dir), "status": "no summary.json"}
    data = json.loads(path.read_text())["data"]
    roof = data.get("roofline") or {}
    levels = roof.get("levels") or {}
    prof = data.get("profile") or {}
    facts = {
        "model": model,
        "mode": mode,
        "run": str(run_dir),
        "status": (data.get("status") or {}).get("state")
        if isinstance(data.get("status"), dict)
        else data.get("status"),
        "device": levels.get("device"),
        "time_base": prof.get("time_base"),
        "coverage": prof.get("coverage"),
        "profile_problems": prof.get("problems"),
        "measured_by": levels.get("measured_by"),
        "convention": levels.get("convention"),
        "missing_levels": levels.get("missing"),
    }
    rows = []
    for stage, parts in (levels.get("stages") or {}).items():
        for alias, e in parts.items():
            # wall: the plain forwards (prefill, decode step); device: module ranges (parts, vision = their sum)
            wall_unit = alias == "" and stage in ("prefill", "decode")
            wall = e.get("measured_s")  # prefill: the fastest plain forward; decode: step 1's (levels_stage)
            rows.append(
                {
                    "model": model,
                    "mode": mode,
                    "unit": f"{stage}" + (f"/{alias}" if alias else ""),
                    "measured_device_s": None if wall_unit else e.get("measured_s"),
                    "measured_wall_s": wall if wall_unit else None,
                    "ideal_s": e.get("ideal_s"),
                    "kernel_s": e.get("kernel_s"),
                    "eager_s": e.get("eager_s"),
                    "kernels": e.get("kernels"),
                    "syncs": e.get("syncs"),
                    "verdict": e.get("verdict"),
                    "overhead_s": e.get("overhead_s"),
                }
            )
    for r in (data.get("decode") or {}).get("rows") or []:
        rows.append(
            {
                "model": model,
                "mode": mode,
                "unit": f"decode step {r.get('step')} (ctx {r.get('past_len')})",
                "measured_device_s": None,
                "measured_wall_s": r.get("min_s"),
                "ideal_s": r.get("predicted_s"),
                "kernel_s": None,
                "eager_s": None,
                "kernels": None,
                "syncs": None,
                "verdict": r.get("bound"),
                "overhead_s": None,
            }
        )
    return rows, facts


def markdown(rows: list[dict[str, Any]], facts: list[dict[str, Any]]) -> str:
    def ms(x: Any) -> str:
        return "—" if x is None else f"{x * 1e3:.4g}"

    def ratio(a: Any, b: Any) -> str:
        return "—" if a is None or not b else f"{a / b:.2f}"

    out = [
        "# CUDA validation of the time model",
        "",
        "| model | mode | unit | measured device ms | measured wall ms | ideal ms | kernel ms | eager ms | "
        "eager / wall | kernel / device | kernels | syncs | verdict |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in rows:
        out.append(
            f"| {r['model']} | {r['mode']} | {r['unit']} | {ms(r['measured_device_s'])} | {ms(r['measured_wall_s'])} "
            f"| {ms(r['ideal_s'])} | {ms(r['kernel_s'])} | {ms(r['eager_s'])} | "
            f"{ratio(r['eager_s'], r['measured_wall_s'])} | {ratio(r['kernel_s'], r['measured_device_s'])} | "
            f"{r['kernels'] if r['kernels'] is not None else '—'} | {r['syncs'] if r['syncs'] is not None else '—'} "
            f"| {r['verdict'] or '—'} |"
        )
    out += [
        "",
        "| model | mode | status | device | time base | kernel attribution coverage | profile problems |",
        "|---|---|---|---|---|---:|---:|",
    ]
    for f in facts:
        cov = f.get("coverage")
        out.append(
            f"| {f['model']} | {f['mode']} | {f.get('status')} | {f.get('device')} | {f.get('time_base')} | "
            f"{'—' if cov is None else f'{cov:.1%}'} | {f.get('profile_problems')} |"
        )
    if facts:
        out += [
            "",
            f"measured: {facts[0].get('measured_by')}",
            "",
            "predicted: " + "; ".join(f"{k}: {v}" for k, v in (facts[0].get("convention") or {}).items()),
        ]
    return "\n".join(out) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if not args.runs:
        why = cuda_missing()
        if why is not None:
            print(why, file=sys.stderr)
            return EXIT_NO_CUDA
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[str, str, Path]] = []
    if args.runs:
        jobs = [("?", "?", Path(d)) for d in args.runs.split(",") if d]
    else:
        for model in models(args):
            for mode in args.modes.split(","):
                jobs.append((model, mode, run_job(model, mode, args, out)))
    rows: list[dict[str, Any]] = []
    facts: list[dict[str, Any]] = []
    for model, mode, run_dir in jobs:
        r, f = rows_of(run_dir, model, mode)
        rows += r
        facts.append(f)
    (out / "cuda_validation.json").write_text(json.dumps({"rows": rows, "jobs": facts}, indent=1))
    text = markdown(rows, facts)
    (out / "cuda_validation.md").write_text(text)
    print(text)
    print(f"wrote {out / 'cuda_validation.json'} and {out / 'cuda_validation.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

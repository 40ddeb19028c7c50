"""Prints how close the time levels (`analytic.time.levels`: ideal, kernel, eager) come to the measured time, over
vendor modes and page shapes: per unit (every stage, every part with at least 5 % of its stage's measured time,
the decode step) the ratio eager / measured, then per unit kind the median and worst absolute error |ratio - 1|
and how many are within 25 %.

    ./dev bench time_model                       # tiny twin: modes tiny, base, gundam x pages default, slide
    ./dev bench time_model --quick               # smoke: tiny twin, mode tiny, the default page
    ./dev bench time_model --model twin --runtime cpu_bf16 --modes tiny,gundam --pages default   (full twin)

Each (mode, page) is one trace job as a user runs it (`pipelines/trace.py`, a fresh process): the profile stage
measures, the roofline stage predicts on the calibrated device (`hardware=measured`; the calibration is cached
per thread count). The measured side is the fastest-run convention (`measure.levels_stage.MEASURED_BY`): the
fastest plain forward for the prefill, the fastest per-repeat inclusive time of a part's module ranges, the
fastest plain forward of decode step 1; the calibration's figures are fastest consistent samples. With
`--threads 1` (the default: on a shared 2-core machine one thread avoids the OpenMP barrier waiting for a
descheduled sibling) the forward's process CPU time is printed beside its wall time: the time without the waits
for the core that other processes cause. The full twin runs under `flock /tmp/llm-perf-opt-big.lock`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from llm_perf_opt.jobs.args import run_script

ROOT = Path(__file__).resolve().parents[1]
BOUND = 0.25
BIG_LOCK = "/tmp/llm-perf-opt-big.lock"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--model", default="twin_tiny", help="model config (twin_tiny, twin; twin runs under the big lock)")
    p.add_argument("--runtime", default="cpu", help="runtime config (cpu, cpu_bf16, cuda, ...)")
    p.add_argument("--modes", default="tiny,base,gundam", help="comma-separated workload modes")
    p.add_argument("--pages", default="default,slide", help="comma-separated page presets (default: the mode's own)")
    p.add_argument("--threads", type=int, default=1, help="runtime.threads (0: torch's default)")
    p.add_argument("--decode-steps", type=int, default=1, help="timed decode steps after the prefill")
    p.add_argument("--repeats", type=int, default=3, help="profile.repeats")
    p.add_argument("--quick", action="store_true", help="smoke: mode tiny, the default page, 2 repeats")
    p.add_argument("--out", default="", help="write the rows as JSON here")
    p.add_argument("--runs", default="", help="read existing run directories (comma-separated) instead of running")
    args = p.parse_args(argv)
    if args.quick:
        args.modes, args.pages, args.repeats = "tiny", "default", 2
    return args


def overrides(args: argparse.Namespace, mode: str, page: str, run_dir: Path) -> list[str]:
    out = [
        f"model={args.model}",
        f"runtime={args.runtime}",
        f"workload={mode}",
        "hardware=measured",
        f"trace.decode_steps={args.decode_steps}",
        "trace.capture=false",
        "trace.verify=false",
        f"profile.repeats={args.repeats}",
        "profile.chrome_trace=false",
        f"hydra.run.dir={run_dir}",
    ]
    if page != "default":
        out.append(f"page={page}")
    if args.threads:
        out.append(f"runtime.threads={args.threads}")
    return out


def run_one(args: argparse.Namespace, mode: str, page: str, base: Path) -> Path:
    run_dir = base / f"{mode}-{page}"
    cmd = [sys.executable, str(ROOT / "pipelines" / "trace.py"), *overrides(args, mode, page, run_dir)]
    if args.model != "twin_tiny":
        cmd = ["flock", BIG_LOCK, *cmd]
    print(f"$ ./dev trace {' '.join(cmd[cmd.index(str(ROOT / 'pipelines' / 'trace.py')) + 1 :])}", flush=True)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode:
        print(proc.stderr[-2000:], file=sys.stderr)
        raise SystemExit(proc.returncode)
    print(f"  done in {time.perf_counter() - t0:.0f} s: {run_dir}", flush=True)
    return run_dir


def rows_of(run_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(accuracy rows, run facts) from a run's summary.json (`roofline.levels.accuracy`, written by the trace job)."""
    doc = json.loads((run_dir / "summary.json").read_text())
    data = doc["data"]
    levels = (data.get("roofline") or {}).get("levels") or {}
    rt = data.get("runtime") or {}
    facts = {
        "run": str(run_dir),
        "mode": (data.get("workload") or {}).get("mode"),
        "page": "x".join(
            str(v) for v in ((data.get("page") or {}).get("width"), (data.get("page") or {}).get("height"))
        ),
        "device": levels.get("device"),
        "dtype": rt.get("dtype"),
        "measured_by": levels.get("measured_by"),
        "cpu_time_by": levels.get("cpu_time_by"),
    }
    return list(levels.get("accuracy") or []), facts


def render(all_rows: list[tuple[dict[str, Any], dict[str, Any]]]) -> str:
    def ms(x: Optional[float]) -> str:
        return "—" if x is None else f"{x * 1e3:10.4g}"

    head = (
        f"{'mode':<8} {'page':<10} {'stage':<8} {'unit':<16} {'measured ms':>11} {'ideal':>10} {'kernel':>10} "
        f"{'eager':>10} {'eager/m':>8} {'cpu ms':>10} {'eager/cpu':>9} {'verdict':>8}"
    )
    lines = [head, "-" * len(head)]
    for r, f in all_rows:
        cpu = r.get("measured_cpu_s")
        lines.append(
            f"{str(f['mode']):<8} {f['page']:<10} {r['stage']:<8} {r['unit'][:16]:<16} {ms(r['measured_s']):>11} "
            f"{ms(r.get('ideal_s'))} {ms(r.get('kernel_s'))} {ms(r['eager_s'])} {r['ratio']:8.2f} "
            f"{ms(cpu)} {format(r['ratio_cpu'], '9.2f') if r.get('ratio_cpu') else '        —'} "
            f"{str(r.get('verdict')):>8}"
        )
    lines.append("")
    kinds: dict[str, list[float]] = {}
    for r, _ in all_rows:
        kind = r["stage"] if r["unit"] == "(stage)" else ("decode part" if r["stage"] == "decode" else "part")
        kinds.setdefault(kind, []).append(r["ratio"])
    lines.append(f"{'unit kind':<12} {'n':>3} {'median |eager/m - 1|':>21} {'worst':>7} {'within 25%':>10}")
    for kind, ratios in kinds.items():
        errs = [abs(x - 1) for x in ratios]
        lines.append(
            f"{kind:<12} {len(ratios):>3} {statistics.median(errs):21.2f} {max(errs):7.2f} "
            f"{sum(e <= BOUND for e in errs):>5}/{len(errs)}"
        )
    errs = [abs(r["ratio"] - 1) for r, _ in all_rows]
    if errs:
        lines.append(
            f"{'all':<12} {len(errs):>3} {statistics.median(errs):21.2f} {max(errs):7.2f} "
            f"{sum(e <= BOUND for e in errs):>5}/{len(errs)}"
        )
    return "\n".join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.runs:
        dirs = [Path(d) for d in args.runs.split(",") if d]
    else:
        base = ROOT / "tmp" / "bench" / f"time_model-{time.strftime('%Y%m%d-%H%M%S')}"
        dirs = [run_one(args, m, p, base) for m in args.modes.split(",") for p in args.pages.split(",")]
    collected: list[tuple[dict[str, Any], dict[str, Any]]] = []
    facts = []
    for d in dirs:
        rows, f = rows_of(d)
        facts.append(f)
        collected += [(r, f) for r in rows]
    print()
    print(render(collected))
    if facts:
        print(f"\ndevice: {facts[0]['device']}; dtype {facts[0]['dtype']}")
        print(f"measured: {facts[0]['measured_by']}")
        if facts[0].get("cpu_time_by"):
            print(f"cpu: {facts[0]['cpu_time_by']}")
    print(
        "predicted: analytic.time.convention.LEVELS (eager = kernels + the host's per-kernel cost; CPU: serial); "
        f"units: every stage, every part >= 5 % of its stage's measured time, the decode step; bound {BOUND:.0%}"
    )
    if args.out:
        Path(args.out).write_text(json.dumps([{**r, **f} for r, f in collected], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

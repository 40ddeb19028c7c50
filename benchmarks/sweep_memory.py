"""Prints each job's own peak memory in the six-mode sweep of the full-size twin, which must complete on a
24 GiB machine (the basic launcher runs all six jobs in one process, one after another).

    flock /tmp/llm-perf-opt-big.lock ./dev bench sweep_memory            # model=twin runtime=cpu_bf16: 10+ min
    ./dev bench sweep_memory --model twin_tiny --runtime cpu             # the same on the tiny twin: 1 min
    ./dev bench sweep_memory --keep                                      # keep tmp/bench/sweep_memory-*/

It runs `./dev sweep experiment=modes model=MODEL runtime=RUNTIME` as a user does (the job script
`pipelines/sweep.py`, in a fresh process) and reads each job's `summary.json`: its peak RSS (VmHWM reset at
the job's start, see `runs.memory`), the RSS it started from (what the jobs before it left), its
wall time. Beside them: the process's RSS sampled every 0.5 s from /proc/PID/status (its maximum over the
whole sweep) and the machine's memory. Exits 1 when the sweep does not complete with every job ok.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt.jobs.args import run_script

ROOT = Path(__file__).resolve().parents[1]
GIB = 2**30


def meminfo_total() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024 / GIB
    return float("nan")


def sample_rss(pid: int, out: list[int], stop: threading.Event) -> None:
    """VmRSS of `pid` every 0.5 s into `out` (bytes) until `stop` or the process is gone."""
    status = Path(f"/proc/{pid}/status")
    while not stop.is_set():
        try:
            for line in status.read_text().splitlines():
                if line.startswith("VmRSS:"):
                    out.append(int(line.split()[1]) * 1024)
        except OSError:
            return
        stop.wait(0.5)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    """The options; no argument: the defaults."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--model", default="twin", help="model config (default twin: the full size, 3.3B)")
    p.add_argument("--runtime", default="cpu_bf16", help="runtime config (default cpu_bf16)")
    p.add_argument("--keep", action="store_true", help="keep the sweep directory under tmp/bench/")
    p.add_argument("overrides", nargs="*", help="more Hydra overrides for the sweep")
    return p.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)

    sweep = ROOT / "tmp" / "bench" / f"sweep_memory-{time.strftime('%Y%m%d-%H%M%S')}"
    overrides = ["experiment=modes", f"model={args.model}", f"runtime={args.runtime}", *args.overrides]
    cmd = [sys.executable, str(ROOT / "pipelines" / "sweep.py"), *overrides, f"hydra.sweep.dir={sweep}"]
    print(f"command: ./dev sweep {' '.join(overrides)} hydra.sweep.dir={sweep}", flush=True)
    print(f"machine: {meminfo_total():.1f} GiB memory", flush=True)

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    samples: list[int] = []
    stop = threading.Event()
    sampler = threading.Thread(target=sample_rss, args=(proc.pid, samples, stop), daemon=True)
    sampler.start()
    for line in proc.stderr:  # type: ignore[union-attr]
        if " start: " in line or " ok in " in line or "failed" in line or "sweep" in line or "memory handed" in line:
            print("  " + line.rstrip(), flush=True)
    code = proc.wait()
    stop.set()
    sampler.join()
    wall = time.perf_counter() - t0

    from llm_perf_opt.run_artifacts import load_summary

    print(
        f"\nsweep exit status {code} after {wall / 60:.1f} min; process RSS sampled every 0.5 s: max "
        f"{max(samples, default=0) / GIB:.2f} GiB"
    )
    print(f"{'job':>3} {'mode':9} {'status':8} {'peak RSS':>10} {'RSS at start':>13} {'job s':>7}  peak method")
    rows, ok = [], code == 0
    for job_dir in (
        sorted((d for d in sweep.iterdir() if d.name.isdigit()), key=lambda d: int(d.name)) if sweep.is_dir() else []
    ):
        try:
            s = load_summary(job_dir / "summary.json")
        except Exception as exc:  # noqa: BLE001 - a benchmark reports what it found
            print(f"{job_dir.name:>3} {'?':9} {'no summary':8} ({exc})")
            ok = False
            continue
        m = s.memory
        rows.append(
            {
                "job": int(job_dir.name),
                "mode": s.workload.mode,
                "status": s.status,
                "peak_rss_gib": round(m.peak_rss_bytes / GIB, 2) if m else None,
                "rss_start_gib": round(m.rss_start_bytes / GIB, 2) if m and m.rss_start_bytes else None,
                "job_s": s.job_seconds,
            }
        )
        ok = ok and s.status == "ok"
        r = rows[-1]
        print(
            f"{r['job']:>3} {r['mode']:9} {r['status']:8} {r['peak_rss_gib'] or float('nan'):>8.2f} G "
            f"{r['rss_start_gib'] or float('nan'):>11.2f} G {r['job_s'] or float('nan'):>7.0f}  "
            f"{m.method if m else '-'}"
        )
    ok = ok and len(rows) == 6
    print(
        json.dumps(
            {
                "ok": ok,
                "exit": code,
                "wall_min": round(wall / 60, 1),
                "process_rss_max_gib": round(max(samples, default=0) / GIB, 2),
                "jobs": rows,
            }
        )
    )
    if not args.keep and ok:
        shutil.rmtree(sweep, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(run_script(main))

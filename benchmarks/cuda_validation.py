"""The CUDA checks of the time model in one command, and the GPU kit that records a borrowed GPU machine's evidence.

    python benchmarks/cuda_validation.py [--models twin,vendor] [--modes tiny,base,gundam] [--decode-steps 8]
                                         [--out tmp/cuda_validation]
    python benchmarks/cuda_validation.py --budget 420 [--archive DIR] [--out DIR]     # the GPU kit
    python benchmarks/cuda_validation.py --runs RUN_DIR[,RUN_DIR...]                  # tables of recorded runs

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
step of each job; the model and mode of each row read from its run's summary.json). Without CUDA it refuses in one
line and exits 2 (`--runs` needs no GPU).

**The GPU kit** (`--budget SECONDS`): what a GPU machine lent for a few minutes should record, in priority order,
each step in its own process, a step started only when its expected time fits what is left of the budget and
stopped (its process group killed) at the budget; then one tarball (`<archive>/<recording>.tar.gz`, at most
`ARCHIVE_MAX` bytes: the largest optional files are left out, and the README says which, when it would be larger)
holding everything the replay tests read (`tests/data/gpu/<recording>/`, see its README):

0. the calibration's host workload with its weights in the calibrated dtype and in float32
   (`benchmarks/host_workload.py`, a few seconds: `host_workload.txt`);
1. the tiny twin in Tiny (it calibrates the device: `measure.calibrate`, cached in `<out>/calibration/`, which every
   later step reuses);
2. the full twin in Tiny at batch 8 (`twin-tiny-b8/`: the prefill's per-page time by module);
3. the serving curve (`benchmarks/serving_curve.py`: the full twin's prefill and decode steps at batches 1, 8, 32,
   64 with plain forwards, no capture, and the experts each call touched);
4. the CUDA tests (`pytest -m cuda`);
5. the full twin in Tiny and in Gundam, the tiny twin in Base and Gundam (`KIT_STEPS` says why in this order).

The recording's folder: `README.md` (machine, software, commit, each step's command, exit status and seconds),
`environment.json`, `kit.json` (the steps), the calibration file, one folder per trace job (`<model>-<mode>/`,
its summary.json, verification.json.gz, costs.json, profile.json.gz, profile.trace.json.gz, roofline.json,
serving.json, routing.json, module_costs.json.gz, trace.log, job.log), `serving_curve/`, `pytest_cuda.txt`, and
this script's `cuda_validation.{json,md}` of the trace jobs.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.jobs.args import run_script

ROOT = Path(__file__).resolve().parents[1]
EXIT_NO_CUDA = 2
ARCHIVE_MAX = 16_000_000  # bytes: what one file brought back from a borrowed GPU machine may weigh
RESERVE_S = 15.0  # of the budget, kept for the tables and the tarball
# the files of a trace run the replay tests read (others, such as the graph drawings, stay out of the tarball)
RUN_FILES = (
    "summary.json",
    "verification.json",
    "verification.json.gz",
    "costs.json",
    "profile.json",
    "profile.json.gz",
    "profile.trace.json",
    "profile.trace.json.gz",
    "roofline.json",
    "serving.json",
    "routing.json",
    "module_costs.json",
    "module_costs.json.gz",
    "trace.log",
    "job.log",
)
OPTIONAL_LARGE = ("profile.trace.json.gz", "profile.trace.json", "module_costs.json.gz", "roofline.json")


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
    p.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds: run the GPU kit (the steps in priority order, stopped before the budget) and write one tarball",
    )
    p.add_argument("--archive", default="", help="where the kit's tarball goes (default: --out)")
    p.add_argument("--name", default="", help="the recording's name (default: <gpu>-<date>)")
    p.add_argument("--serving-batches", default="1,8,32,64")
    p.add_argument(
        "--steps", default="", help='the kit: only these steps, comma-separated labels ("trace twin tiny"; default all)'
    )
    p.add_argument(
        "--runtime", default="cuda", choices=("cuda", "cpu"), help="cpu: a dry run of the kit on a machine without GPU"
    )
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


def trace_command(model: str, mode: str, args: argparse.Namespace, run_dir: Path) -> list[str]:
    return [
        sys.executable,
        str(ROOT / "pipelines" / "trace.py"),
        f"model={model}",
        f"workload={mode}",
        f"runtime={args.runtime}",
        "hardware=measured",
        f"trace.decode_steps={args.decode_steps}",
        f"profile.repeats={args.repeats}",
        f"hydra.run.dir={run_dir}",
    ]


def kit_trace(
    arg: Sequence[str], decode_steps: Optional[int], args: argparse.Namespace, work: Path
) -> tuple[str, list[str]]:
    """(run folder name, command) of a kit trace step `arg` = (model, mode[, batch]): `<model>-<mode>[-b<batch>]`,
    `workload.batch=<batch>` when given, and the step's own `trace.decode_steps` when it has one."""
    model, mode, *batch = arg
    run_name = f"{model}-{mode}" + (f"-b{batch[0]}" if batch else "")
    cmd = trace_command(model, mode, args, work / run_name) + [f"workload.batch={b}" for b in batch]
    if decode_steps is not None:
        cmd = [f"trace.decode_steps={decode_steps}" if c.startswith("trace.decode_steps=") else c for c in cmd]
    return run_name, cmd


def run_step(cmd: list[str], log: Path, timeout: Optional[float] = None, env: Optional[dict] = None) -> dict:
    """Run one step in its own process group (killed whole at `timeout`); {command, exit, seconds, stopped}."""
    print(f"$ {' '.join(cmd[1:])}", flush=True)
    t0 = time.perf_counter()
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env)
        stopped = False
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                code = proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
            stopped = True
    seconds = time.perf_counter() - t0
    print(f"  exit {code} in {seconds:.0f} s" + (" (stopped at the budget)" if stopped else ""), flush=True)
    return {"command": " ".join(cmd[1:]), "exit": code, "seconds": round(seconds, 1), "stopped": stopped}


def run_job(model: str, mode: str, args: argparse.Namespace, base: Path) -> Path:
    run_dir = base / f"{model}-{mode}"
    run_step(trace_command(model, mode, args, run_dir), base / f"{model}-{mode}.log")
    return run_dir


def rows_of(run_dir: Path, model: str = "?", mode: str = "?") -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """(one row per stage / part / decode step, job facts) from a run's summary.json; the model and the mode are
    the summary's own (`model`, `mode`: what to say when it has none)."""
    path = run_dir / "summary.json"
    if not path.is_file():
        return [], {"model": model, "mode": mode, "run": str(run_dir), "status": "no summary.json"}
    data = json.loads(path.read_text())["data"]
    model = (data.get("model") or {}).get("name") or model
    mode = (data.get("workload") or {}).get("mode") or mode
    batch = (data.get("tokens") or {}).get("batch")  # the run's batch (`RecordedRun.batch` reads it so too)
    if batch and int(batch) > 1:
        mode = f"{mode} (batch {batch})"
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


def environment() -> dict[str, Any]:
    """The machine and software of the recording (what the README and the replay tests' labels need)."""
    import torch

    env: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "host_cpu": _cpu_model(),
        "host_cores": os.cpu_count(),
        "commit": _commit(),
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env.update(
            gpu=props.name,
            gpu_memory_bytes=props.total_memory,
            gpu_sm_count=props.multi_processor_count,
            compute_capability=f"{props.major}.{props.minor}",
        )
    smi = shutil.which("nvidia-smi")
    if smi:
        q = "name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,power.limit"
        got = subprocess.run([smi, f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True, text=True)
        env["nvidia_smi"] = got.stdout.strip() or got.stderr.strip()
    versions = {}
    for name in ("transformers", "tokenizers", "torchlens", "hydra", "omegaconf", "fvcore", "flash_attn"):
        try:
            versions[name] = getattr(__import__(name), "__version__", "?")
        except Exception:  # noqa: BLE001 - absent or broken: say so
            versions[name] = None
    env["packages"] = versions
    return env


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _commit() -> str:
    """`$LLM_PERF_OPT_COMMIT` when set (a working tree copied to a GPU machine may carry an unrelated .git), else
    `git rev-parse HEAD`."""
    if os.environ.get("LLM_PERF_OPT_COMMIT"):
        return os.environ["LLM_PERF_OPT_COMMIT"]
    got = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return got.stdout.strip() if got.returncode == 0 else "unknown"


# (kind, argument, expected seconds on an H200 host, decode steps): the kit's steps, in priority order. The full
# twin traces 2 decode steps (the checks read step 1; each profiled step costs ~2 s of profiler post-processing per
# repeat there, 8 steps took 45 s on 2026-11-26), the tiny twin `--decode-steps`. The seconds: the longest of the
# H200 kits of 2026-11-27 05:40 and 16:35 (63 / 73, 55 / 60, 49 / 60, 65 / 65, 73 / 75, 101 / 100, 61 / 60 s). The
# host workload's two weight dtypes first (`benchmarks/host_workload.py`, a few seconds): what the calibration's host
# figure is beside the model's own; then the tiny twin in Tiny (it calibrates the device for the steps after it).
# Then what three H200 recordings have not recorded yet: the full twin traced at batch 8 (a trace's third argument
# is `workload.batch`; one decode step; its seconds an estimate, 2:50 on the 2-core CPU, never run on a GPU yet),
# which gives the prefill's per-page host and kernel time by module, where the recorded serving curves' prefills at
# batches 8-64 took 24-27 ms more per page than at batch 1 and hf_eager prices 16-17 (docs/serving.md); the serving
# curve, which now logs the experts each call touched; and the CUDA tests, not run on a GPU since their fix. The
# traces all three recordings hold come last.
KIT_STEPS = (
    ("bench", ("host_workload",), 20.0, None),
    ("trace", ("twin_tiny", "tiny"), 75.0, None),
    ("trace", ("twin", "tiny", "8"), 150.0, 1),
    ("serving_curve", ("twin", "tiny"), 100.0, None),
    ("pytest", ("cuda",), 65.0, None),
    ("trace", ("twin", "tiny"), 65.0, 2),
    ("trace", ("twin", "gundam"), 75.0, 2),
    ("trace", ("twin_tiny", "base"), 60.0, None),
    ("trace", ("twin_tiny", "gundam"), 60.0, None),
)


def step_label(kind: str, arg: Sequence[str]) -> str:
    return f"{kind} {' '.join(arg)}"


def kit_steps(only: str) -> list[tuple[str, tuple[str, ...], float, Optional[int]]]:
    """The kit's steps (`KIT_STEPS`, in their order), or those `only` names (comma-separated labels such as
    "trace twin tiny"); an unknown label refuses (a `ConfigError`: one line, exit 2)."""
    if not only:
        return list(KIT_STEPS)
    wanted = [w.strip() for w in only.split(",") if w.strip()]
    labels = [step_label(kind, arg) for kind, arg, _, _ in KIT_STEPS]
    unknown = [w for w in wanted if w not in labels]
    if unknown:
        raise ConfigError.field("--steps", unknown[0], f"must be among: {', '.join(labels)}")
    return [step for step, label in zip(KIT_STEPS, labels) if label in wanted]


def recording_name(gpu: str, date: str, taken: Path = ROOT / "tests" / "data" / "gpu") -> str:
    """`<gpu>-<date>`, or with the UTC time of day (`-HHMM`) when a recording of that name is already in `taken`
    (a second machine lent the same day)."""
    name = f"{slug(gpu)}-{date[:10]}"
    if (taken / name).exists():
        name = f"{name}-{time.strftime('%H%M', time.gmtime())}"
    return name


def slug(text: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in text.lower()).strip("-").replace("--", "-")


def kit(args: argparse.Namespace) -> int:
    """The GPU kit (see the module docstring): the steps in priority order within `args.budget`, one tarball."""
    todo = kit_steps(args.steps)  # refused before anything is written
    t_start = time.perf_counter()
    budget = float(args.budget)
    env = environment()
    gpu = str(env.get("gpu", "gpu")).removeprefix("NVIDIA ")
    name = args.name or recording_name(gpu, env["date"])
    out = Path(args.out)
    rec = out / name
    rec.mkdir(parents=True, exist_ok=True)
    work = out / "work"
    work.mkdir(parents=True, exist_ok=True)
    child_env = dict(os.environ, LLM_PERF_OPT_CALIBRATION_DIR=str(out / "calibration"), PYTHONUNBUFFERED="1")
    steps: list[dict[str, Any]] = []

    def left() -> float:
        return budget - RESERVE_S - (time.perf_counter() - t_start)

    for kind, arg, expected, decode_steps in todo:
        label = step_label(kind, arg)
        if left() < expected:
            steps.append(
                {"step": label, "skipped": f"{left():.0f} s left of the budget, about {expected:.0f} s needed"}
            )
            print(f"skip {label}: {steps[-1]['skipped']}", flush=True)
            continue
        if kind == "trace":
            run_name, cmd = kit_trace(arg, decode_steps, args, work)
            run_dir = work / run_name
            done = run_step(cmd, work / f"{run_name}.kit.log", left(), child_env)
            keep = rec / run_name
            _copy_run(run_dir, keep)
            shutil.copy(work / f"{run_name}.kit.log", keep / "kit.log")
        elif kind == "serving_curve":
            model, mode = arg
            cmd = [
                sys.executable,
                str(ROOT / "benchmarks" / "serving_curve.py"),
                "--model",
                model,
                "--mode",
                mode,
                "--runtime",
                args.runtime,
                "--hardware",
                "measured",
                "--batches",
                args.serving_batches,
                "--budget-s",
                str(max(left() - 10.0, 10.0)),
                "--out",
                str(rec / "serving_curve"),
            ]
            (rec / "serving_curve").mkdir(exist_ok=True)
            done = run_step(cmd, rec / "serving_curve" / "serving_curve.log", left(), child_env)
        elif kind == "bench":
            cmd = [sys.executable, str(ROOT / "benchmarks" / f"{arg[0]}.py"), "--device", args.runtime]
            done = run_step(cmd, rec / f"{arg[0]}.txt", left(), child_env)
        else:
            cmd = [sys.executable, "-m", "pytest", "-m", "cuda", "-q", "-p", "no:cacheprovider", "-rA"]
            try:
                import xdist  # noqa: F401

                cmd += ["-n", "4"]
            except ImportError:
                pass
            done = run_step(cmd, rec / "pytest_cuda.txt", left(), child_env)
        done["step"] = label
        steps.append(done)
    for cal in sorted((out / "calibration").glob("*.json")):
        shutil.copy(cal, rec / cal.name)
    rows: list[dict[str, Any]] = []
    facts: list[dict[str, Any]] = []
    for run in sorted(p for p in rec.iterdir() if (p / "summary.json").is_file()):
        r, f = rows_of(run)
        rows += r
        facts.append(f)
    (rec / "cuda_validation.json").write_text(json.dumps({"rows": rows, "jobs": facts}, indent=1))
    (rec / "cuda_validation.md").write_text(markdown(rows, facts))
    kit_record = {"budget_s": budget, "seconds": round(time.perf_counter() - t_start, 1), "steps": steps}
    (rec / "kit.json").write_text(json.dumps(kit_record, indent=1))
    (rec / "environment.json").write_text(json.dumps(env, indent=1))
    archive = Path(args.archive or out) / f"{name}.tar.gz"
    archive.parent.mkdir(parents=True, exist_ok=True)
    dropped = pack(rec, archive, env, kit_record)
    print(
        f"kit: {sum(1 for s in steps if s.get('exit') == 0)} of {len(steps)} steps exit 0 in "
        f"{kit_record['seconds']:.0f} s; wrote {archive} ({archive.stat().st_size / 1e6:.1f} MB)"
        + (f"; left out: {', '.join(dropped)}" if dropped else ""),
        flush=True,
    )
    return 0


def _copy_run(run_dir: Path, keep: Path) -> None:
    """The replay files of a trace run, JSON gzipped (`RUN_FILES`)."""
    import gzip

    keep.mkdir(parents=True, exist_ok=True)
    for fname in RUN_FILES:
        src = run_dir / fname
        if not src.is_file():
            continue
        if fname.endswith(".json") and fname != "summary.json" and src.stat().st_size > 200_000:
            with open(src, "rb") as f_in, gzip.open(keep / (fname + ".gz"), "wb", compresslevel=9) as f_out:
                shutil.copyfileobj(f_in, f_out)
        else:
            shutil.copy(src, keep / fname)


def readme(env: dict[str, Any], kit_record: dict[str, Any], dropped: list[str]) -> str:
    lines = [
        f"# GPU recording: {env.get('gpu', '?')}, {env['date'][:10]}",
        "",
        "Recorded by `python benchmarks/cuda_validation.py --budget "
        f"{kit_record['budget_s']:g}` (the GPU kit: see that script's docstring) at project commit {env['commit']}.",
        "",
        f"- GPU: {env.get('gpu')} ({env.get('nvidia_smi', '')}), compute capability {env.get('compute_capability')}",
        f"- host: {env.get('host_cpu')}, {env.get('host_cores')} cores; Python {env['python']}, torch {env['torch']} "
        f"(CUDA {env.get('cuda')})",
        "- packages: " + ", ".join(f"{k} {v}" for k, v in env.get("packages", {}).items()),
        "",
        "| step | exit | seconds | note |",
        "|---|---:|---:|---|",
    ]
    for st in kit_record["steps"]:
        note = st.get("skipped") or ("stopped at the budget" if st.get("stopped") else st.get("command", ""))
        lines.append(f"| {st['step']} | {st.get('exit', '—')} | {st.get('seconds', '—')} | {note} |")
    lines += [
        "",
        "Each `<model>-<mode>/` folder is one trace job's run directory (the files the replay tests read); the "
        "calibration JSON is the device calibration those jobs made and used; `serving_curve/` the plain-forward "
        "timing at batch; `pytest_cuda.txt` the CUDA tests; `cuda_validation.{json,md}` measured vs predicted.",
    ]
    if dropped:
        lines += ["", "Left out to keep the tarball under 16 MB: " + ", ".join(dropped)]
    return "\n".join(lines) + "\n"


def pack(rec: Path, archive: Path, env: dict[str, Any], kit_record: dict[str, Any]) -> list[str]:
    """Write the tarball of `rec`; drop the largest optional files until it fits `ARCHIVE_MAX`. Returns the
    dropped files. The tarball is reproducible: every member's time and the gzip header's are the recording's
    date (`env["date"]`), so the same files pack to the same bytes (the README rewritten on each try, or a second
    pack, changes no size: compressed sizes moved by a few bytes with the files' times)."""
    stamp = int(datetime.datetime.fromisoformat(env["date"]).timestamp())

    def at_stamp(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.mtime = stamp
        return info

    dropped: list[str] = []
    while True:
        (rec / "README.md").write_text(readme(env, kit_record, dropped))
        with (
            gzip.GzipFile(archive, "wb", compresslevel=9, mtime=stamp) as gz,
            tarfile.open(fileobj=gz, mode="w") as tar,
        ):
            tar.add(rec, arcname=rec.name, filter=at_stamp)
        if archive.stat().st_size <= ARCHIVE_MAX:
            return dropped
        optional = sorted(
            (p for p in rec.rglob("*") if p.is_file() and p.name in OPTIONAL_LARGE),
            key=lambda p: p.stat().st_size,
            reverse=True,
        )
        if not optional:
            return dropped
        dropped.append(str(optional[0].relative_to(rec)))
        optional[0].unlink()


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if not args.runs and args.runtime == "cuda":
        why = cuda_missing()
        if why is not None:
            print(why, file=sys.stderr)
            return EXIT_NO_CUDA
    if args.budget is not None:
        return kit(args)
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

"""Prints the memory model's prediction (`analytic.memory_model`) against the measured peak memory of real
forwards on this CPU: predicted / measured per model and batch, and whether it is within the 20% bound.

    ./dev bench memory_fit                                   # tiny twin (runtime=cpu) and full twin (cpu_bf16), B = 1
    ./dev bench memory_fit --models twin_tiny --batches 1 2 4
    ./dev bench memory_fit --runs tmp/some_run ...           # read runs already made (no new forward)

Measured: each run is the trace job with only the session and one plain forward (`trace.capture=false
trace.verify=false profile=off ~hardware`, decode steps 0), in a fresh process; its summary.json's
`memory.peak_rss_bytes` is the job's own peak resident memory (VmHWM reset at the job's start:
`runs.memory`), `memory.rss_start_bytes` the process's resident memory when the job started. Full-size
runs go under `flock /tmp/llm-perf-opt-big.lock` (the machine is shared).

Predicted: `memory_use(ServingModel, B, output_tokens=1)` of the run's own page and sequence, bytes in
the run's dtype: weights (every parameter) + the forward's inputs (B x pixel values of every view, token ids,
masks) + KV cache (B x prompt positions) + the prefill's peak live activations (the largest unit's inputs +
every tensor it produces, x B) + the allowance. The allowance's fixed part is, on the CPU, the runtime
context: what the process holds besides the model's tensors when the forward starts, measured
(`forward.rss_before_bytes` - predicted weights - predicted inputs: Python, torch and the libraries with
their code pages, the allocator's retained memory from building the model and the page images; what a
CUDA context and its library workspaces are on a GPU); its proportional part is the default 10% of KV
cache, inputs and activations. At B > 1 the job runs B copies of the page in one batched forward.

Two ratios per run: `pred/meas`, the whole process at its peak (the 20% bound), and `fwd pred/meas`, the
forward's own growth (peak - `rss_before_bytes`) against the predicted KV + activations + 10%: the part of the
model that depends on the batch, shown without the resident memory that dilutes it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt.jobs.args import run_script

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = {"twin_tiny": "cpu", "twin": "cpu_bf16"}
BIG = {"twin"}
LOCK = "/tmp/llm-perf-opt-big.lock"
BOUND = 0.20
MINIMAL = ["trace.capture=false", "trace.verify=false", "profile=off", "~hardware", "trace.decode_steps=0"]


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument(
        "--models",
        nargs="+",
        default=["twin_tiny", "twin"],
        choices=sorted(RUNTIME),
        help="model configs to run (default: both twins)",
    )
    p.add_argument("--batches", nargs="+", type=int, default=[1], help="workload.batch values (default 1)")
    p.add_argument("--runs", nargs="+", default=None, help="existing run directories to read instead of running")
    p.add_argument("--out", default=str(ROOT / "tmp" / "bench" / "memory_fit"), help="where the runs go")
    args = p.parse_args(argv)
    for b in args.batches:
        if b < 1:
            p.error(f"--batches: {b} must be a positive integer")
    return args


def run_job(model: str, batch: int, out: Path) -> tuple[Optional[Path], str]:
    cmd = [
        sys.executable,
        str(ROOT / "pipelines" / "trace.py"),
        f"model={model}",
        f"runtime={RUNTIME[model]}",
        f"workload.batch={batch}",
        *MINIMAL,
        f"hydra.run.dir={out}",
        "run.overwrite=true",
    ]
    if model in BIG:
        cmd = ["flock", LOCK, *cmd]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")] or proc.stderr.splitlines()[
            -1:
        ]
        return None, lines[0] if lines else f"exit {proc.returncode}"
    return out, ""


def predict(run: Path) -> dict:
    """Measured and predicted bytes of one run directory (see the module docstring)."""
    from omegaconf import OmegaConf

    from llm_perf_opt.analytic.memory_model import DEFAULT_FRAGMENTATION, Allowance, memory_use
    from llm_perf_opt.deepseek_ocr_shared.serving import serving_model
    from llm_perf_opt.prepare.builders import analytic_model_for
    from llm_perf_opt.prepare.validate import validate
    from llm_perf_opt.report.collect import read_job

    job = read_job(run, run.parent)
    s = job.summary
    dtype = s.runtime.dtype
    from hydra import compose, initialize_config_dir

    from llm_perf_opt import families
    from llm_perf_opt.runs.entry import CONF_DIR

    families.register_configs()  # the families' workload schemas, which conf/workload/*.yaml name
    overrides = [o for o in OmegaConf.load(run / ".hydra" / "overrides.yaml") if not o.startswith("hydra.")]
    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):  # the run's own config
        valid = validate(compose(config_name="config", overrides=overrides), runs_model=False)
    model = analytic_model_for(valid, s.page.width, s.page.height, seq_len=s.tokens.sequence)
    sm = serving_model(model.sequence(0), None, dtype)  # one sequence; memory_use scales it to the batch
    batch = int(job.cfg("workload.batch") or 1)
    before = s.forward.rss_before_bytes
    if before is None:
        raise SystemExit(f"{run}: its summary.json has no forward.rss_before_bytes (a run of an older version)")
    base = memory_use(sm, batch, 1, Allowance(0, DEFAULT_FRAGMENTATION))
    context = before - base.weights - base.inputs  # measured: the process's memory besides the model's tensors
    use = memory_use(
        sm,
        batch,
        1,
        Allowance(max(context, 0), DEFAULT_FRAGMENTATION, "runtime context measured at the forward's start"),
    )
    peak = s.forward.peak_rss_bytes
    growth_pred = use.total - before  # KV + activations + 10% of (KV + inputs + activations)
    return {
        "model": s.model.name,
        "dtype": dtype,
        "batch": batch,
        "sequence": s.tokens.sequence,
        "weights": use.weights,
        "inputs": use.inputs,
        "kv": use.kv_cache,
        "activations": use.activations,
        "allowance": use.allowance,
        "context": context,
        "predicted": use.total,
        "measured": peak,
        "before": before,
        "start": s.memory.rss_start_bytes,
        "ratio": use.total / peak,
        "forward_ratio": growth_pred / max(peak - before, 1),
    }


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    rows, notes = [], []
    if args.runs:
        rows = [predict(Path(r)) for r in args.runs]
    else:
        for model in args.models:
            for b in args.batches:
                out = Path(args.out) / f"{model}-b{b}"
                run, why = run_job(model, b, out)
                if run is None:
                    notes.append(f"{model} B={b}: not measured: {why}")
                    continue
                rows.append(predict(run))
    gb = 1e9
    print(
        f"{'model':<12}{'dtype':<10}{'B':>3}{'seq':>6}{'weights':>9}{'inputs':>8}{'KV':>8}{'activ.':>8}"
        f"{'allow.':>8}{'predicted':>11}{'measured':>10}{'pred/meas':>10}{'fwd p/m':>9}  within {BOUND:.0%}"
    )
    for r in rows:
        ok = abs(r["ratio"] - 1) <= BOUND
        print(
            f"{r['model']:<12}{r['dtype']:<10}{r['batch']:>3}{r['sequence']:>6}{r['weights'] / gb:>8.2f}G"
            f"{r['inputs'] / gb:>7.3f}G{r['kv'] / gb:>7.3f}G{r['activations'] / gb:>7.2f}G{r['allowance'] / gb:>7.2f}G"
            f"{r['predicted'] / gb:>10.2f}G{r['measured'] / gb:>9.2f}G{r['ratio']:>10.2f}{r['forward_ratio']:>9.2f}"
            f"  {'yes' if ok else 'NO'}"
        )
    for n in notes:
        print(n)
    print(
        "measured: summary.json forward.peak_rss_bytes (VmHWM reset at job start, read right after the forward); "
        "allowance = runtime context (forward.rss_before_bytes - weights - inputs, measured) + 10% of KV, inputs "
        "and activations; fwd p/m: the forward's growth over rss_before_bytes, predicted / measured"
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

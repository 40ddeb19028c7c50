"""The serving curve, measured: prefill and decode-step time at batches 1..N on the running device, with plain
forwards (no TorchLens capture, no profiler module ranges), beside the three predicted levels at each batch.

    ./dev bench serving_curve                                          # tiny twin, mode tiny, CPU, batches 1,2,4
    ./dev bench serving_curve --model twin --runtime cuda --batches 1,8,32,64 --budget-s 110
    ./dev bench serving_curve --hardware h200 ...                      # predicted on a datasheet instead

Per batch B (the model is built once, the twin with seeded random weights on the runtime's device and dtype, as
the trace job's session does: on CUDA directly on the device in bf16, run under bf16 autocast):

* the inputs: the trace job's (`prepare.builders.build_job_inputs` on `workload.batch=B`: B synthetic pages,
  batched as generate() takes them);
* prefill: the forward with `use_cache=True` (generate()'s prefill path), `--warmup` untimed, `--repeats` timed;
* decode steps 1..`--steps`: each step's forward (the greedy token of the previous output, its KV cache, the
  grown attention mask; `model_runtime.decode.greedy_decode`), warm-up and repeats the same way (re-running a step
  is exact: the legacy cache tuple is read, never grown in place);
* measured: `measure.plain_timing` (wall: perf_counter, CUDA synchronised, fastest sample; device: on CUDA the
  kernel-time sum of one extra profiled call, on the CPU the wall; cpu: on the CPU at `--threads 1` the thread's
  CPU time, `time.thread_time`, fastest sample: what `serve.measured` compares on such a curve, as it leaves out
  the time other processes held the core);
* the experts (a MoE model): one more call of each region under the `routing` patch (each gate's top-k, read
  only): the distinct routed experts per MoE layer, beside what the prediction expects for the batch's routed
  tokens (`MoEShape.touched_per_layer`, uniform routing): a batch's decode step shares its experts more or less
  than that, and its expert kernels with them; each region is priced at those logged experts too
  (`predicted_touched`, the table's "eager at those experts" column and a second check line): the time levels of
  the forward as it ran, beside the serving forecast;
* predicted: ideal, kernel and eager (`analytic.time.levels`, convention `analytic.time.convention.LEVELS`) of the
  analytic model at batch B (`./dev analyze workload.batch=B`'s model): the prefill stage, and the decode stage at
  each step's context; on `--hardware measured` (default) the device's calibration (cached,
  `measure.calibrate.load_or_calibrate`; `--recalibrate`: measured by this run, seconds before the forwards, so
  that both see the host as it is: on this shared CPU a cached calibration can be a host state away), else the
  named datasheet with this host's cached calibration. The JSON names the calibration file, when it was made and
  whether this run made it (`predicted_by.calibration`).

Output: a markdown table on stdout and `<out>/serving_curve.json` (schema `llm_perf_opt.serving_curve`) and
`serving_curve.md`, on `--hardware measured` with `calibration.json` beside them (the calibration the predictions
read, so the folder replays offline: `hardware.calibration=<out>/calibration.json serve.measured=<out>/
serving_curve.json`); default out `tmp/serving_curve/<model>-<mode>/`. `--budget-s`: the batches left when the
budget is near are skipped, and the JSON says so. A CUDA out-of-memory at a batch is recorded for that batch and
the next batch runs. Bad input (no CUDA for --runtime cuda, an unknown mode, batch or hardware): one line, exit 2,
nothing written.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import socket
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional, Sequence

from llm_perf_opt.jobs.args import OneLineParser, add_quick_calibration, quick_calibration, run_script

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = "llm_perf_opt.serving_curve"
SCHEMA_VERSION = 1
# hardware=measured: the calibration the predictions used, copied beside the curve, so that the folder is a
# recording: `./dev analyze hardware=measured hardware.calibration=<out>/calibration.json serve.measured=<out>/...`
# prices the same forwards on the same figures on any machine (tests/data/cpu/ holds such recordings)
CALIBRATION = "calibration.json"
MODELS = ("twin_tiny", "twin")
MODES = ("tiny", "small", "base", "large", "gundam", "gundam_m")


def _batches(text: str) -> list[int]:
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None
    if not out or any(b < 1 for b in out):
        raise argparse.ArgumentTypeError(f"batches must be integers >= 1, got {text!r}")
    return out


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = OneLineParser(
        prog="./dev bench serving_curve", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--model", default="twin_tiny", choices=MODELS, help="the twin (random weights): full or tiny")
    p.add_argument("--mode", default="tiny", choices=MODES, help="the vision mode (workload)")
    p.add_argument("--runtime", default="cpu", choices=("cpu", "cpu_bf16", "cuda"), help="conf/runtime/ config")
    p.add_argument("--batches", type=_batches, default=[1, 2, 4], help="comma-separated batch sizes")
    p.add_argument("--steps", type=int, default=2, help="decode steps timed after the prefill (>= 1)")
    p.add_argument("--warmup", type=int, default=1, help="untimed calls before each timed region")
    p.add_argument("--repeats", type=int, default=3, help="timed calls per region (fastest sample kept)")
    p.add_argument("--hardware", default="measured", help="measured (this device, calibrated) or a datasheet name")
    p.add_argument(
        "--recalibrate",
        action="store_true",
        help="--hardware measured: calibrate now (hardware.recalibrate=true, the cache rewritten), not the cached file",
    )
    add_quick_calibration(p)
    p.add_argument("--output-tokens", type=int, default=1000, help="tokens per page for the derived pages/s")
    p.add_argument("--threads", type=int, default=0, help="runtime.threads (0: torch's default)")
    p.add_argument("--budget-s", type=float, default=0.0, help="stop before this many seconds (0: no budget)")
    p.add_argument("--no-device-time", action="store_true", help="CUDA: skip the profiled kernel-time call")
    p.add_argument("--out", default="", help="output directory (default tmp/serving_curve/<model>-<mode>/)")
    args = p.parse_args(argv)
    if args.steps < 1 or args.repeats < 1 or args.warmup < 0 or args.output_tokens < 1:
        p.error("--steps, --repeats and --output-tokens must be >= 1 and --warmup >= 0")
    if (args.recalibrate or args.quick_calibration) and args.hardware != "measured":
        p.error(
            f"--recalibrate and --quick-calibration need --hardware measured (--hardware {args.hardware} is a "
            "datasheet: nothing to measure)"
        )
    return args


def log(message: str) -> None:
    print(f"[serving_curve {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------- configuration
def overrides(args: argparse.Namespace, batch: int) -> list[str]:
    return [
        f"model={args.model}",
        f"workload={args.mode}",
        f"runtime={args.runtime}",
        f"hardware={args.hardware}",
        *(["hardware.recalibrate=true"] if args.recalibrate and args.hardware == "measured" else []),
        *quick_calibration(args),
        f"workload.batch={batch}",
        f"trace.decode_steps={args.steps}",
        *([f"runtime.threads={args.threads}"] if args.threads else []),
    ]


def jobs_for(args: argparse.Namespace) -> dict[int, Any]:
    """{batch: ValidJob}: every batch's configuration checked before any work (ConfigError: one line)."""
    from llm_perf_opt import families
    from llm_perf_opt.config.compose import compose_each
    from llm_perf_opt.prepare.validate import validate

    families.register_configs()
    raws = compose_each([overrides(args, b) for b in args.batches])
    return {b: validate(raw, runs_model=True) for b, raw in zip(args.batches, raws)}


class Samples:
    """Each batch's inputs as the trace job builds them (`prepare.builders`: page i a synthetic page of seed i),
    the sequences built once for the largest batch and the first B of them batched for batch B (the same inputs
    `build_job_inputs` gives at workload.batch=B when the pages are the same)."""

    def __init__(self, jobs: dict[int, Any]) -> None:
        self.jobs = jobs
        self.largest = max(jobs)
        self._samples: Optional[list[Any]] = None

    def inputs(self, job: Any) -> Any:
        from llm_perf_opt.prepare.builders import batch_of, build_job_inputs, job_samples

        big = self.jobs[self.largest]
        b = job.cfg.workload.batch
        if tuple(job.page_sizes) != tuple(big.page_sizes[:b]):  # other pages (workload.pages): its own
            return build_job_inputs(job)
        if self._samples is None:
            t0 = time.perf_counter()
            self._samples = job_samples(big)
            log(f"built the inputs of {len(self._samples)} page(s) in {time.perf_counter() - t0:.1f} s")
        return batch_of(job, self._samples[:b])


# ---------------------------------------------------------------------------------------------- prediction
class Predictor:
    """The three levels of the analytic model at a batch, as `./dev analyze workload.batch=B hardware=...`."""

    def __init__(self, cfg: Any) -> None:
        from llm_perf_opt.analytic.time import convention
        from llm_perf_opt.measure.calibrate import hardware_for, measured_hardware, roof_for
        from llm_perf_opt.measure.levels_stage import job_time_model

        t0 = time.perf_counter()
        calibration: dict[str, Any] = {}
        self.calibration: Optional[Any] = None  # measure.calibrate.Calibration on hardware=measured
        if cfg.hardware.kind == "measured":  # the cached calibration, or calibrates now (--recalibrate: always)
            self.hardware, cal, path, reused = measured_hardware(cfg.hardware, cfg.runtime, log)
            calibration = {"path": str(path), "created": cal.created, "seconds": cal.seconds, "reused": reused}
            # the calibration the predictions read, written beside the curve (`CALIBRATION`): the folder replays
            self.calibration = cal
            calibration["copy"] = CALIBRATION
        else:
            self.hardware = hardware_for(cfg, log)
        self.seconds = time.perf_counter() - t0
        self.roof = roof_for(cfg, self.hardware)
        self.time_model = job_time_model(cfg, self.roof)
        self.labels = {
            "convention": convention.levels_line(),
            "levels": list(convention.LEVEL_NAMES),
            "hardware": self.hardware.name,
            "hardware_kind": cfg.hardware.kind,
            "roof": self.roof.label,
            "roof_dtype": self.roof.dtype,
            "figures": self.time_model.label,
            # hardware=measured: the calibration file, when it was made, and whether this run measured it
            **({"calibration": calibration} if calibration else {}),
        }

    def model_at(self, job: Any, inputs: Any) -> Any:
        from llm_perf_opt.prepare.builders import analytic_model_for, model_for_dtype

        layout = inputs.layout
        model = analytic_model_for(job, layout.page_width, layout.page_height, seq_len=inputs.seq_len)
        return model_for_dtype(model, self.roof.dtype)

    def stage(self, stage: Any, analytic: Any, tokens: int, touched: Optional[float] = None) -> dict[str, Any]:
        """The levels of `stage` of the batch's `analytic` model as `serve.engine=hf_eager` prices its forwards: the
        routed experts' kernels those `tokens` are expected to touch (`serve_engines.timing.routed_census`), not
        the census's min(E, T x k); or, with `touched`, the experts per MoE layer a logged call touched."""
        from llm_perf_opt.analytic.serve_engines.timing import routed_census
        from llm_perf_opt.analytic.time.ideal import predict
        from llm_perf_opt.analytic.time.levels import LevelPredictor, stage_levels

        served = analytic.serving_model(None, self.roof.dtype)
        if touched is not None and served.moe is not None:  # this call's logged count, not the expectation
            served = replace(served, moe=served.moe.with_logged({tokens: touched}, "the call's routing log"))
        stage = routed_census(stage, served, tokens)
        lt = stage_levels(stage, LevelPredictor(self.time_model), predict(stage, self.roof))[""]
        return {
            **({"experts_per_layer": served.moe.touched_per_layer(tokens)} if served.moe is not None else {}),
            "ideal_s": lt.ideal_s,
            "kernel_s": lt.kernel_s,
            "eager_s": lt.eager_s,
            "kernels": lt.kernels,
            "syncs": lt.syncs,
            "verdict": lt.verdict,
            **({"missing": dict(lt.missing)} if lt.missing else {}),
        }


# ---------------------------------------------------------------------------------------------- measurement
def experts_touched(session: Any, family: Any, call: Any) -> Optional[dict[str, Any]]:
    """The routed experts one more `call` of the forward touched (the `routing` patch: each MoE gate's top-k, read
    only): {"mean": distinct experts per MoE layer, averaged, "per_layer": [...], "tokens": routed tokens per
    layer, "top_k", "n_experts"}; None for a model without a MoE gate."""
    with family.runtime_patches(session, ["routing"]) as log:
        call()
    events = log.events("routing")
    if not events:
        return None
    per_layer = [len(e["experts"]) for e in events]
    first = events[0]
    return {
        "mean": sum(per_layer) / len(per_layer),
        "per_layer": per_layer,
        "tokens": int(first["tokens"]),
        "top_k": int(first["top_k"]),
        "n_experts": int(first["n_experts"]),
    }


def measure_batch(
    args: argparse.Namespace, session: Any, family: Any, job: Any, inputs: Any, predictor: Predictor, deadline: Any
) -> list[dict[str, Any]]:
    """The prefill row and one row per decode step at this batch."""
    from llm_perf_opt.measure.plain_timing import time_region

    batch = int(inputs.batch)
    analytic = predictor.model_at(job, inputs)
    kwargs = session.forward_kwargs(inputs, use_cache=True)
    seq_len = int(kwargs["input_ids"].shape[1])
    model, device = session.model, session.device
    opts = dict(warmup=args.warmup, repeats=args.repeats, deadline=deadline, device_time=not args.no_device_time)
    rows: list[dict[str, Any]] = []

    def row(phase: str, step: int, context: int, timed: Any, predicted: dict[str, Any], tokens: int) -> dict:
        r = {
            "batch": batch,
            "phase": phase,
            "step": step,
            "seq_len": seq_len,
            "context_len": context,
            "tokens": tokens,
            **timed.to_dict(),
            "predicted": predicted,
            "tokens_per_s": tokens / timed.wall_s,
        }
        rows.append(r)
        log(
            f"batch {batch} {phase}{f' {step}' if step else ''} (context {context}): wall {timed.wall_s * 1e3:.2f} ms"
            + (f", device {timed.device_s * 1e3:.2f} ms" if timed.device_s is not None else "")
            + (f", cpu {timed.cpu_s * 1e3:.2f} ms" if timed.cpu_s is not None else "")
            + f"; predicted eager {_ms(predicted.get('eager_s'))} ms"
        )
        return r

    with session.forward_context():
        timed, prefill = time_region(lambda: model(**kwargs), device, **opts)
        pre = row(
            "prefill",
            0,
            seq_len,
            timed,
            predictor.stage(analytic.prefill(), analytic, batch * seq_len),
            batch * seq_len,
        )
        pre["pages_per_s"] = batch / timed.wall_s
        pre["experts"] = experts_touched(session, family, lambda: model(**kwargs))
        if pre["experts"]:  # the same forward priced at the experts it touched
            pre["predicted_touched"] = predictor.stage(
                analytic.prefill(), analytic, batch * seq_len, pre["experts"]["mean"]
            )

        def run_step(step: int, step_kwargs: dict[str, Any]) -> Any:
            past = step_kwargs["past_key_values"]
            to_legacy = getattr(past, "to_legacy_cache", None)
            step_kwargs["past_key_values"] = to_legacy() if callable(to_legacy) else past
            context = seq_len + step - 1
            timed, out = time_region(lambda: model(**step_kwargs), device, **opts)
            decode = analytic.decode(analytic.seq_len + step - 1)
            predicted = predictor.stage(decode, analytic, batch)
            predicted["context_len"] = analytic.seq_len + step - 1  # the analytic model's (its seq_len)
            r = row("decode", step, context, timed, predicted, batch)
            r["experts"] = experts_touched(session, family, lambda: model(**step_kwargs))
            if r["experts"]:
                r["predicted_touched"] = predictor.stage(decode, analytic, batch, r["experts"]["mean"])
            return out

        family.greedy_decode(run_step, prefill, args.steps, kwargs)
    steps = [r for r in rows if r["phase"] == "decode"]
    step_s = sum(r["wall_s"] for r in steps) / len(steps)
    for r in rows:  # pages/s of a whole page at this batch: the prefill + output_tokens steps at the mean step
        r["page_s"] = pre["wall_s"] + args.output_tokens * step_s
        r["pages_per_s_generate"] = batch / r["page_s"]
    return rows


def _ms(x: Optional[float]) -> str:
    return "—" if x is None else f"{x * 1e3:.4g}"


def agreement(doc: dict[str, Any], predicted: str = "predicted") -> tuple[str, list[tuple[int, str, float]]]:
    """(the measured field, [(batch, phase, eager / measured)]): issue 32's check on this curve, the eager level
    (hf_eager's forwards) against the measured time (`analytic.serving_measured.measured_field`: the thread's CPU
    time on a one-thread CPU curve, else the wall); `predicted="predicted_touched"`: the eager level at the experts
    each call touched (rows without that log left out)."""
    from llm_perf_opt.analytic.serving_measured import measured_field

    key = measured_field(doc) if doc["rows"] else "wall_s"
    out = []
    for r in doc["rows"]:
        eager = r.get(predicted, {}).get("eager_s")
        if eager:
            phase = "prefill" if r["phase"] == "prefill" else f"decode {r['step']}"
            out.append((int(r["batch"]), phase, eager / r[key]))
    return key, out


def _experts(row: dict[str, Any]) -> str:
    """Measured distinct experts per MoE layer (the predicted expectation in parentheses), or —."""
    got, predicted = row.get("experts"), row["predicted"].get("experts_per_layer")
    if not got:
        return "—"
    return f"{got['mean']:.2f}" + (f" ({predicted:.2f})" if predicted is not None else "")


def _calibration_line(cal: dict[str, Any]) -> list[str]:
    how = "cached" if cal["reused"] else f"measured by this run in {cal['seconds']:.1f} s"
    return [f"Calibration: {Path(cal['path']).name}, made {cal['created']} ({how})."]


def _check(label: str, key: str, ratios: list[tuple[int, str, float]]) -> str:
    """`within 25% at k of n rows; eager / cpu a-b` of one comparison."""
    within = [x for x in ratios if 0.75 <= x[2] <= 1.25]
    spread = f"; eager / {key.removesuffix('_s')} {min(x[2] for x in ratios):.2f}-{max(x[2] for x in ratios):.2f}"
    return f"{label}: within 25% at {len(within)} of {len(ratios)} rows" + (spread if ratios else "")


def render(doc: dict[str, Any]) -> str:
    cfg = doc["config"]
    key, ratios = agreement(doc)
    _, touched = agreement(doc, "predicted_touched")
    measured = key.removesuffix("_s")
    lines = [
        f"# Serving curve: {cfg['model']} ({cfg['spec']}), mode {cfg['mode']}, {cfg['runtime']} "
        f"({cfg['dtype']}{', autocast' if cfg['autocast'] else ''}) on {cfg['device_name']}",
        "",
        "| batch | phase | context | wall ms | device ms | cpu ms | samples | ideal ms | kernel ms | eager ms | "
        f"eager / {measured} | experts / layer (predicted) | eager at those experts / {measured} | tokens/s | "
        "pages/s |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in doc["rows"]:
        p, pt = r["predicted"], r.get("predicted_touched", {})
        phase = "prefill" if r["phase"] == "prefill" else f"decode {r['step']}"
        ratio = f"{p['eager_s'] / r[key]:.2f}" if p.get("eager_s") else "—"
        ratio_touched = f"{pt['eager_s'] / r[key]:.2f}" if pt.get("eager_s") else "—"
        pages = r.get("pages_per_s") if r["phase"] == "prefill" else None
        lines.append(
            f"| {r['batch']} | {phase} | {r['context_len']} | {_ms(r['wall_s'])} | {_ms(r['device_s'])} | "
            f"{_ms(r.get('cpu_s'))} | {r['samples']} | {_ms(p['ideal_s'])} | {_ms(p.get('kernel_s'))} | "
            f"{_ms(p.get('eager_s'))} | {ratio} | {_experts(r)} | {ratio_touched} | {r['tokens_per_s']:.4g} | "
            f"{'—' if pages is None else format(pages, '.4g')} |"
        )
    for b in doc["failed"]:
        lines.append(f"| {b['batch']} | {b['error']} | | | | | | | | | | | | | |")
    lines += [
        "",
        f"Measured: wall = {doc['measured_by']['wall']}; device = {doc['measured_by']['device']}"
        + (f"; cpu = {doc['measured_by']['cpu']}" if "cpu" in doc["measured_by"] else "")
        + ".",
        f"Predicted on {doc['predicted_by']['hardware']} ({doc['predicted_by']['hardware_kind']}; "
        f"roof {doc['predicted_by']['roof']}; figures {doc['predicted_by']['figures']}).",
        *(_calibration_line(doc["predicted_by"]["calibration"]) if "calibration" in doc["predicted_by"] else []),
        f"Levels: {doc['predicted_by']['convention']}",
        "tokens/s: prefill = batch x sequence / wall; decode = batch / wall. pages/s (prefill) = batch / wall.",
        _check(f"Issue 32's check (eager level = hf_eager's forwards, / measured {key})", key, ratios) + ".",
        *(
            [
                _check(
                    "At the experts each call touched (the routing patch's count, not uniform routing)", key, touched
                )
                + "."
            ]
            if touched
            else []
        ),
    ]
    if doc["skipped"]:
        lines.append(f"Skipped (budget {cfg['budget_s']} s): batches {', '.join(map(str, doc['skipped']))}.")
    lines.append(f"Total {doc['seconds']:.1f} s.")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> tuple[dict[str, Any], Optional[Any]]:
    """(the curve's record, the calibration the predictions read: None on a datasheet)."""
    import torch

    from llm_perf_opt.measure import calibrate
    from llm_perf_opt.measure.allocator import allocator_regime, regime_label
    from llm_perf_opt.measure.plain_timing import CPU_BY

    t_start = time.perf_counter()
    deadline = t_start + args.budget_s if args.budget_s > 0 else None
    jobs = jobs_for(args)  # every check first: no CUDA, a bad mode or batch is one line before any work
    first = jobs[args.batches[0]]
    cfg, family = first.cfg, first.family
    predictor = Predictor(cfg)
    log(f"predicting on {predictor.labels['hardware']} ({predictor.labels['roof']})")
    t0 = time.perf_counter()
    session = family.open_session(cfg.model, cfg.runtime)
    build_s = time.perf_counter() - t0
    device = session.device
    cuda = device.type == "cuda"
    threads = torch.get_num_threads()  # the session's (runtime.threads), put back when it closes
    device_name = calibrate.device_name(device)
    log(f"built {cfg.model.name} ({session.spec.name}) on {device} ({session.dtype}) in {build_s:.1f} s")
    samples = Samples(jobs)
    rows: list[dict[str, Any]] = []
    failed: list[dict[str, Any]] = []
    skipped: list[int] = []
    last: Optional[tuple[int, float]] = None  # (batch, seconds) of the last batch measured
    try:
        for b in args.batches:
            if deadline is not None:
                left = deadline - time.perf_counter()
                guess = last[1] * max(b / last[0], 1.0) if last else 0.0
                if left <= 0 or guess > left:
                    skipped.append(b)
                    log(f"batch {b}: skipped, {left:.1f} s left of the budget (last batch took {guess:.1f} s scaled)")
                    continue
            t_b = time.perf_counter()
            try:
                inputs = samples.inputs(jobs[b])
                rows += measure_batch(args, session, family, jobs[b], inputs, predictor, deadline)
            except torch.cuda.OutOfMemoryError as exc:
                first_line = str(exc).splitlines()[0] if str(exc) else "CUDA out of memory"
                failed.append({"batch": b, "error": f"CUDA out of memory: {first_line}"})
                log(f"batch {b}: out of memory; emptying the cache, going on")
            finally:
                inputs = None
                gc.collect()
                if cuda:
                    torch.cuda.empty_cache()
            last = (b, time.perf_counter() - t_b)
    finally:
        session.close()
    seconds = time.perf_counter() - t_start
    doc = {
        "config": {
            "model": cfg.model.name,
            "spec": session.spec.name,
            "mode": cfg.workload.name,
            "runtime": args.runtime,
            "device": str(device),
            "device_name": device_name,
            "dtype": str(session.dtype).replace("torch.", ""),
            "autocast": bool(session.autocast),
            "attn_implementation": session.attn_implementation,
            "batches": list(args.batches),
            "decode_steps": args.steps,
            "warmup": args.warmup,
            "repeats": args.repeats,
            "budget_s": args.budget_s,
            "output_tokens": args.output_tokens,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "threads": threads,
            "allocator": regime_label(allocator_regime()),
            "host": socket.gethostname(),
            "python": platform.python_version(),
            "build_s": build_s,
            "hardware_s": predictor.seconds,
        },
        "measured_by": {
            "wall": "time.perf_counter around the call (torch.cuda.synchronize before and after on CUDA); "
            f"{args.warmup} warm-up, {args.repeats} timed, fastest sample",
            "device": "sum of kernel/memcpy/memset durations of one extra call under torch.profiler (CPU "
            "and CUDA activities, no module ranges); span_s: CUDA event pair around the fastest call"
            if cuda
            else "CPU: no separate device; device time = wall time",
            **({"cpu": f"{CPU_BY}; {args.warmup} warm-up, {args.repeats} timed"} if not cuda and threads == 1 else {}),
            "experts": "the routing patch (each MoE gate's top-k, read only) on one more call of the region: the "
            "distinct experts of each MoE layer's gate call, averaged over the layers; predicted: the expected "
            "distinct experts of the batch's routed tokens (uniform routing, `MoEShape.touched_per_layer`)",
            "regions": "prefill: the forward with use_cache=True (generate()'s prefill); decode step k: the greedy "
            "step's forward over context seq_len + k - 1 (model_runtime.decode.greedy_decode); no TorchLens, no "
            "module ranges",
        },
        "predicted_by": predictor.labels,
        "derived": {
            "tokens_per_s": "prefill: batch x seq_len / wall_s; decode: batch / wall_s",
            "pages_per_s": "prefill row: batch / wall_s",
            "pages_per_s_generate": "batch / (prefill wall + output_tokens x mean decode-step wall)",
        },
        "rows": rows,
        "failed": failed,
        "skipped": skipped,
        "skipped_reason": f"budget {args.budget_s} s nearly spent" if skipped else None,
        "seconds": seconds,
    }
    return doc, predictor.calibration


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    from llm_perf_opt.errors import PipelineError

    try:
        doc, calibration = run(args)
    except PipelineError as exc:
        print(f"serving_curve: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    from llm_perf_opt.artifacts import atomic_write_text, write_artifact

    out = Path(args.out) if args.out else ROOT / "tmp" / "serving_curve" / f"{args.model}-{args.mode}"
    out.mkdir(parents=True, exist_ok=True)
    text = render(doc)
    print(text)
    write_artifact(out / "serving_curve.json", SCHEMA, SCHEMA_VERSION, doc)
    atomic_write_text(out / "serving_curve.md", text + "\n")
    if calibration is not None:
        from llm_perf_opt.measure.calibrate import write_calibration

        write_calibration(out / CALIBRATION, calibration)
    log(
        f"wrote {out / 'serving_curve.json'}, serving_curve.md"
        + (f" and {CALIBRATION}" if calibration is not None else "")
        + f" in {doc['seconds']:.1f} s"
    )
    json.dumps(doc)  # the record is plain JSON
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

"""The recorded serving curves beside the serving engines' predictions: every GPU recording under tests/data/gpu/
with a `serving_curve/` (`benchmarks/serving_curve.py` run by the GPU kit: plain forwards at batch B), replayed on
the recording's own calibration (`hardware=measured hardware.calibration=FILE`: the calibration.json the curve wrote
beside itself, else the recording's first calibration file) for the curve's model, mode and runtime.

    ./dev bench serving_replay                      # every recording with a serving curve
    ./dev bench serving_replay --data DIR           # another folder of recordings

Printed per recording and batch, for three routings: uniform (the default: every expert equally likely); the
routing the recording's batch-1 trace of the same configuration measured (`serve.routing=<run>/routing.json`); and
logged: the distinct experts per MoE layer the forwards of each token count touched, from the curve's own routing
log, or, for curves recorded before it logged them, from a curve of the same model and mode that did (`--experts`,
default the curves under tests/data/cpu/: the same twin, seed and pages on the CPU; `MoEShape.with_logged`). The
logged routing prices the forwards as they ran, to check the time levels; a forecast for real pages takes uniform or
a recorded routing.

* the prefill: measured wall (fastest plain forward), `hf_eager`'s forward (the eager level, no generate loop:
  the curve times forwards) and their ratio;
* the decode step (the curve's steps averaged): measured wall, `hf_eager`'s step and the ratio; the step's measured
  device time (the kernels of one extra profiled call: what a captured graph replays, with no host gaps),
  `cuda_graphs`' step (the kernel level) and its ratio to that device time; `vllm`'s step (its fused kernel list);
  the distinct experts per MoE layer the steps touched (curves recorded since `serving_curve.py` logs them) beside
  what the prediction expects for the batch's tokens under that routing (`MoEShape.touched_per_layer`).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Optional, Sequence

from llm_perf_opt.jobs.args import OneLineParser, run_script

ROOT = Path(__file__).resolve().parents[1]
GPU_DATA = ROOT / "tests" / "data" / "gpu"
CPU_DATA = ROOT / "tests" / "data" / "cpu"
CURVE = Path("serving_curve") / "serving_curve.json"


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = OneLineParser(
        prog="./dev bench serving_replay", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--data", default="", help="a folder of recordings (default tests/data/gpu)")
    p.add_argument(
        "--experts",
        default="",
        help="a serving_curve.json whose logged experts price the curves of its model and mode that logged none "
        "(default: the curves under tests/data/cpu/)",
    )
    return p.parse_args(argv)


def curves(root: Path) -> list[tuple[Any, Path]]:
    """(recording, its serving_curve.json) of every recording under `root` that has one and a calibration."""
    from llm_perf_opt.measure.recorded_runs import recordings

    return [(rec, rec.path / CURVE) for rec in recordings(root) if (rec.path / CURVE).is_file() and rec.calibrations]


def routing_of(rec: Any, model: str, mode: str) -> Optional[Path]:
    """The routing.json of the recording's batch-1 trace run of `model` in `mode` (None without one)."""
    for run in rec.runs:
        if run.model == model and run.mode == mode and run.batch == 1 and (run.path / "routing.json").is_file():
            return run.path / "routing.json"
    return None


def experts_source(
    data: dict[str, Any], others: Sequence[tuple[Path, dict[str, Any]]]
) -> tuple[dict[float, float], str]:
    """({routed tokens: experts per layer}, where from) for a curve: its own log, else the first of `others`
    ((file, curve data), read once by the caller) of the same model and mode that logged them; ({}, "") when none
    did."""
    from llm_perf_opt.analytic.serving_measured import logged_experts

    own = logged_experts(data)
    if own:
        return own, "this curve's log"
    cfg = data["config"]
    for path, other in others:
        logged = logged_experts(other)
        if logged and (other["config"]["model"], other["config"]["mode"]) == (cfg["model"], cfg["mode"]):
            where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
            return logged, f"{where}: {other['config']['device_name']}, {other['config']['dtype']}"
    return {}, ""


def experts_curves(path: str) -> list[tuple[Path, dict[str, Any]]]:
    """(file, curve data) of `--experts` (or of every curve under tests/data/cpu/ when empty), each read as
    `serve.measured` reads one: a file that is not a serving curve is a ConfigError naming `--experts`."""
    from llm_perf_opt.analytic.serving_measured import load_curve

    files = [Path(path)] if path else sorted(CPU_DATA.glob(f"*/{CURVE.name}"))
    return [(f, load_curve(f, "--experts")) for f in files]


def calibration_of(rec: Any, curve: Path) -> Path:
    """The calibration a recorded curve is priced on: the one written beside it (`serving_curve.py` writes the
    calibration its predictions read, since the eighth session), else the recording's first."""
    beside = curve.parent / "calibration.json"
    return beside if beside.is_file() else rec.calibrations[0]


def recorded_curve(
    rec: Any, curve: Path, routing: Optional[Path], logged: Optional[dict[float, float]] = None
) -> tuple[Any, Any, Any, dict[int, dict]]:
    """(serving model, roof, time model, measured rows) of the curve's configuration on the recording's calibration,
    with `routing` (None: uniform); `logged`: {routed tokens: experts per layer} the forwards touched, used at those
    token counts (`MoEShape.with_logged`)."""
    from llm_perf_opt.analytic.serving_measured import measured_rows
    from llm_perf_opt.analytic.serving_run import serving_model_for
    from llm_perf_opt.config.compose import compose
    from llm_perf_opt.families import register_configs
    from llm_perf_opt.measure.calibrate import hardware_for, roof_for
    from llm_perf_opt.measure.levels_stage import job_time_model
    from llm_perf_opt.prepare.builders import analytic_model_for, model_for_dtype
    from llm_perf_opt.prepare.validate import validate

    data = json.loads(curve.read_text())["data"]
    config = data["config"]
    register_configs()
    overrides = [
        f"model={config['model']}",
        f"workload={config['mode']}",
        f"runtime={config['runtime']}",
        "hardware=measured",
        f"hardware.calibration={calibration_of(rec, curve)}",
        *([f"serve.routing={routing}"] if routing is not None else []),
    ]
    job = validate(compose(overrides), runs_model=False)
    cfg = job.cfg
    roof = roof_for(cfg, hardware_for(cfg, lambda _: None))
    model = model_for_dtype(analytic_model_for(job, job.page_width, job.page_height, batch=False), roof.dtype)
    rows = measured_rows(data)
    for b, row in rows.items():  # the decode steps' measured device time (one profiled call each), averaged
        steps = [r for r in data["rows"] if int(r["batch"]) == b and r["phase"] == "decode"]
        device = [r.get("device_s") for r in steps]
        row["step_device_s"] = sum(device) / len(device) if device and None not in device else None
        # the distinct experts per MoE layer the steps touched (curves recorded since the serving curve logs them)
        experts = [r["experts"]["mean"] for r in steps if r.get("experts")]
        row["step_experts"] = sum(experts) / len(experts) if experts and len(experts) == len(steps) else None
    sm = serving_model_for(cfg, model, roof)
    if logged and sm.moe is not None:
        sm = replace(sm, moe=sm.moe.with_logged(logged, "the experts the logged forwards touched"))
    return sm, roof, job_time_model(cfg, roof), rows


def table(
    rec: Any, curve: Path, routing: Optional[Path], logged: Optional[dict[float, float]] = None
) -> list[dict[str, Any]]:
    """One row per recorded batch: measured and predicted (see the module docstring)."""
    from llm_perf_opt.analytic.serve_engines.cuda_graphs import CUDA_GRAPHS
    from llm_perf_opt.analytic.serve_engines.hf_eager import HF_EAGER
    from llm_perf_opt.analytic.serve_engines.select import timing_for
    from llm_perf_opt.analytic.serve_engines.vllm import VLLM

    sm, roof, tm, rows = recorded_curve(rec, curve, routing, logged)
    eager, graphs, vllm = (timing_for(e, sm, roof, tm) for e in (HF_EAGER, CUDA_GRAPHS, VLLM))
    out = []
    for b, m in rows.items():
        out.append(
            {
                "batch": b,
                "prefill_s": m["prefill_s"],
                "hf_eager_prefill_s": float(eager.prefill([b]).time_s[0]),
                "step_s": m["step_s"],
                "hf_eager_step_s": float(eager.decode([b], m["context"]).time_s[0]),
                "step_device_s": m["step_device_s"],
                "cuda_graphs_step_s": float(graphs.decode([b], m["context"]).time_s[0]),
                "vllm_step_s": float(vllm.decode([b], m["context"]).time_s[0]),
                "step_experts": m["step_experts"],
                "expected_experts": sm.moe.touched_per_layer(b) if sm.moe is not None else None,
            }
        )
    return out


def _experts(row: dict[str, Any]) -> str:
    """The decode steps' measured distinct experts per MoE layer (what the prediction expects for the batch's tokens
    under the routing used), or — where the curve did not log them."""
    got, expected = row["step_experts"], row["expected_experts"]
    if got is None:
        return "—" + (f" ({expected:.2f})" if expected is not None else "")
    return f"{got:.2f}" + (f" ({expected:.2f})" if expected is not None else "")


def _ms(x: Optional[float]) -> str:
    return "—" if x is None else f"{x * 1e3:.2f}"


def _ratio(a: Optional[float], b: Optional[float]) -> str:
    return "—" if a is None or not b else f"{a / b:.2f}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    root = Path(args.data) if args.data else GPU_DATA
    found = curves(root)
    from llm_perf_opt.errors import ConfigError

    try:  # checked before anything is printed: one line, exit 2
        others = experts_curves(args.experts)
    except ConfigError as exc:
        print(f"serving_replay: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    for rec, curve in found:
        data = json.loads(curve.read_text())["data"]
        config = data["config"]
        routed = routing_of(rec, config["model"], config["mode"])
        print(
            f"{rec.name}: {config['model']} {config['mode']} on {config.get('device_name', '?')} "
            f"({config['runtime']}), calibration {calibration_of(rec, curve).relative_to(rec.path)}"
        )
        logged, source = experts_source(data, others)
        for label, routing, touched in (
            ("uniform", None, None),
            ("recorded", routed, None),
            (f"logged ({source})", None, logged),
        ):
            if label == "recorded" and routing is None:
                print("  recorded routing: no batch-1 trace of this configuration in the recording")
                continue
            if label.startswith("logged") and not touched:
                print("  logged routing: neither this curve nor a --experts curve of its model and mode logged any")
                continue
            print(
                f"  routing {label}{f' ({routing.relative_to(rec.path)})' if routing else ''}\n"
                "  batch | prefill ms | hf_eager | ratio | step ms | hf_eager | ratio | step device ms | "
                "cuda_graphs | ratio | vllm | experts / layer (expected)"
            )
            for r in table(rec, curve, routing, touched):
                print(
                    f"  {r['batch']:5d} | {_ms(r['prefill_s']):>10} | {_ms(r['hf_eager_prefill_s']):>8} | "
                    f"{_ratio(r['hf_eager_prefill_s'], r['prefill_s']):>5} | {_ms(r['step_s']):>7} | "
                    f"{_ms(r['hf_eager_step_s']):>8} | {_ratio(r['hf_eager_step_s'], r['step_s']):>5} | "
                    f"{_ms(r['step_device_s']):>14} | {_ms(r['cuda_graphs_step_s']):>11} | "
                    f"{_ratio(r['cuda_graphs_step_s'], r['step_device_s']):>5} | {_ms(r['vllm_step_s']):>5} | "
                    f"{_experts(r)}"
                )
    print(
        f"{len(found)} recorded serving curves. Measured: the curve's plain forwards (fastest of its repeats; the "
        "decode steps averaged) and one profiled call's kernel time; predicted: each engine's step on the "
        "recording's calibration (ratio = predicted / measured)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

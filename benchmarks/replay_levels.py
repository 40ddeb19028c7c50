"""Prints how close the kernel and eager levels come to every recorded batch-1 CUDA run (issue 31 item 5): per run
its units (the kernel level / the measured device time of every part holding >= 5 % of its stage's device time;
the eager level / the measured wall of the prefill and decode step 1), then per recording and over all of them how
many are within 25 % and the median |ratio - 1|. Offline: the recordings under tests/data/gpu/, no GPU.

    ./dev bench replay_levels                    # every recording of tests/data/gpu/
    ./dev bench replay_levels --data DIR         # the recordings under DIR (one folder per recording)

Predicted: the analytic model of the run's own configuration, its kernels that ran (the routed experts its
recorded routing left idle taken off), on the recording's own calibration (`hardware=measured
hardware.calibration=FILE`, older versions completed by `measure.level_fillers` from the profile traces beside
it); measured: the run's summary (`roofline.levels`, `measure.levels_stage.MEASURED_BY`). The same ratios
`tests/measure/test_replay_levels.py` bounds (`level_ratios`).

Beside each run: its plain forwards (how many samples the fastest was taken from; the "eager/wall" unit's measured
side) and its host pace (`measure.host_pace`: how long its host took per op against the recording's other runs, from
the profile traces; "no trace" where the run kept none). Every unit outside 25% is listed again after the summary
with both: a pace far from 1, or a fastest taken from a single plain sample, points at the recorded host's state
during that run rather than at the time model (the prediction is the calibrated host's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any, Optional, Sequence

from llm_perf_opt.jobs.args import run_script

ROOT = Path(__file__).resolve().parents[1]
BOUND = 0.25
MIN_SHARE = 0.05  # a part's share of its stage's measured device time for its unit to count


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    p.add_argument("--data", default="", help="folder of recordings (default: the repository's tests/data/gpu)")
    return p.parse_args(argv)


def replay_cases(data: Path) -> list[tuple[Any, Any]]:
    """(recording, run) of every recorded batch-1 CUDA run that ended ok, of recordings with a calibration."""
    from llm_perf_opt.measure.recorded_runs import recordings

    return [
        (rec, run)
        for rec in recordings(data)
        for run in rec.runs
        if rec.calibrations and run.device_type == "cuda" and run.batch == 1 and run.status == "ok"
    ]


def level_ratios(rec: Any, run: Any) -> dict[str, float]:
    """{unit: predicted / measured} of one recorded run (see the module docstring): "STAGE/PART kernel/device" and
    "STAGE eager/wall"."""
    from llm_perf_opt import families
    from llm_perf_opt.analytic.time import levels
    from llm_perf_opt.analytic.time.ideal import predict_latency
    from llm_perf_opt.config.compose import compose
    from llm_perf_opt.measure.calibrate import hardware_for, roof_for
    from llm_perf_opt.measure.levels_stage import job_time_model, stages_that_ran
    from llm_perf_opt.measure.replay import recorded_unrouted
    from llm_perf_opt.prepare.builders import analytic_model_of_run, model_for_dtype
    from llm_perf_opt.prepare.validate import validate

    families.register_configs()
    analytic = analytic_model_of_run(run)
    job = validate(
        compose((*run.overrides(), "hardware=measured", f"hardware.calibration={rec.calibrations[0]}")),
        runs_model=False,
    )
    roof = roof_for(job.cfg, hardware_for(job.cfg))
    model = model_for_dtype(analytic, roof.dtype)
    verification = run.verification()
    stages = stages_that_ran(model.stages(), recorded_unrouted(verification.kernels) if verification else {})
    by = levels.latency_levels(stages, predict_latency(model.stages(), roof), job_time_model(job.cfg, roof))
    recorded = json.loads((run.path / "summary.json").read_text())["data"]["roofline"]["levels"]["stages"]
    out = {}
    for stage in ("vision", "prefill", "decode"):
        parts = recorded[stage]
        device = (
            parts[""]["measured_s"]
            if stage == "vision"
            else sum(v.get("measured_s") or 0 for a, v in parts.items() if a and "." not in a)
        )
        for alias, lt in by[stage].items():
            m = (parts.get(alias) or {}).get("measured_s")
            if m is None:
                continue
            if alias == "" and stage in ("prefill", "decode"):
                out[f"{stage} eager/wall"] = lt.eager_s / m
            elif alias and "." not in alias and m >= MIN_SHARE * device:
                out[f"{stage}/{alias} kernel/device"] = lt.kernel_s / m
    return out


def run_notes(rec: Any) -> dict[str, str]:
    """{run name: "N plain samples, host pace P"} of a recording's runs (see the module docstring)."""
    from llm_perf_opt.measure.host_pace import host_paces
    from llm_perf_opt.measure.recorded_profile import read_json_file, run_profile

    profiles = [p for p in (run_profile(r.path) for r in rec.runs) if p is not None]
    paces = host_paces(profiles)
    out = {}
    for r in rec.runs:
        path = r.file("profile.json")
        plain = (((read_json_file(path).get("data") or {}).get("wall") or {}).get("plain_s") or {}) if path else {}
        samples = len(plain.get("repeats") or [])
        pace = paces.get(r.path)
        out[r.name] = f"{samples} plain sample{'' if samples == 1 else 's'}, " + (
            f"host pace {pace.pace:.2f} ({pace.ops:,} ops, {pace.names} op names)" if pace else "host pace: no trace"
        )
    return out


def summary_line(label: str, ratios: Sequence[float]) -> str:
    errors = [abs(r - 1) for r in ratios]
    within = sum(e <= BOUND for e in errors)
    median = statistics.median(errors) if errors else float("nan")
    return f"{label}: {within} of {len(errors)} units within {BOUND:.0%}, median |ratio - 1| {median:.3f}"


def main(argv: Optional[Sequence[str]] = None) -> int:
    from llm_perf_opt.measure.host_pace import MEASURED_BY as PACE_BY

    args = parse_args(argv)
    data = Path(args.data) if args.data else ROOT / "tests" / "data" / "gpu"
    by_recording: dict[str, list[float]] = {}
    notes: dict[str, dict[str, str]] = {}
    outside = []
    for rec, run in replay_cases(data):
        if rec.name not in notes:
            notes[rec.name] = run_notes(rec)
        ratios = level_ratios(rec, run)
        print(f"{run.label}  ({notes[rec.name].get(run.name, '')})")
        for unit, r in ratios.items():
            print(f"  {unit:<34} {r:6.2f}{'' if abs(r - 1) <= BOUND else '  (outside)'}")
            if abs(r - 1) > BOUND:
                outside.append(f"{run.label} {unit} {r:.2f}: {notes[rec.name].get(run.name, '')}")
        by_recording.setdefault(run.recording, []).extend(ratios.values())
    for name, ratios in by_recording.items():
        print(summary_line(name, ratios))
    print(summary_line("all", [r for rs in by_recording.values() for r in rs]))
    for line in outside:
        print(f"outside: {line}")
    print(f"({PACE_BY}; 1 = the recording's typical host)")
    return 0


if __name__ == "__main__":
    sys.exit(run_script(main))

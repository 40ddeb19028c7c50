"""The trace job's roofline stage: predicted times on the job's roofs, set against the measured ones.

Which roofs (`job_roofs`):

* the primary roof, `hardware=` (default `measured`): its predictions are `roofline.json`, as
  `./dev analyze hardware=NAME` writes it;
* when the run was profiled and the primary roof is a datasheet, the calibrated roof of the device the
  run measured on (`measured`, cached), so that the parts' efficiencies are against their own device;
* on CUDA with `hardware=measured`, the datasheet of the GPU the run is on, found by its name
  (`hardware.device_names` patterns in conf/hardware/), beside the calibration;
* with `hardware.calibration=PATH` (a recorded calibration of another machine) the primary roof is the recorded
  one (`recorded`: predictions and levels only, the measured side stays this machine's) and, when profiled, this
  machine's calibrated roof beside it for the efficiencies.

A roof describes the measured device (`same_device`) when it is the calibration of `runtime.device`, or a
datasheet whose patterns match the CUDA device's name; only then is efficiency = predicted / measured
computed (`measure.efficiency`). Each roof's predictions count bytes in its own dtype (as `./dev analyze`
does); the rows' intensities and achieved FLOP/s use the dtype the run executed.

Writes `roofline.json` (the primary roof), `roofline.svg` and `roofline.png` (`report.roofline_plot`),
prints the measured-vs-predicted table, and returns summary.json's `roofline` section.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from llm_perf_opt.analytic.roofline_artifact import write_roofline
from llm_perf_opt.analytic.roofline_table import describe_figures
from llm_perf_opt.analytic.time import convention
from llm_perf_opt.analytic.time.hardware import (
    Hardware,
    Roof,
    datasheet_for_device,
    load_hardware,
    load_hardware_config,
)
from llm_perf_opt.analytic.time.ideal import LatencyPrediction, predict_latency
from llm_perf_opt.config import RootConfig
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.calibrate import hardware_for, measured_hardware, roof_for
from llm_perf_opt.measure.efficiency import EFFICIENCY, RoofEntry, compare, render_comparison
from llm_perf_opt.measure.module_times import ModuleTimes
from llm_perf_opt.prepare.builders import model_for_dtype
from llm_perf_opt.run_files import run_file
from llm_perf_opt.trace.trace_summary import RooflineFigures
from llm_perf_opt.typecheck import typed

ROOFLINE_FILE = run_file("roofline").file
PLOT_STEM = Path(run_file("roofline_svg").file).stem


@dataclass(frozen=True)
class JobRoof:
    name: str
    hardware: Hardware
    roof: Roof
    same_device: bool
    note: str = ""


def cuda_device_name(device: str) -> Optional[str]:
    """torch.cuda.get_device_name of runtime.device, None on CPU."""
    import torch

    dev = torch.device(device)
    if dev.type != "cuda":
        return None
    return torch.cuda.get_device_name(dev.index if dev.index is not None else torch.cuda.current_device())


def job_roofs(cfg: RootConfig, profiled: bool, log: Callable[[str], None] = lambda _: None) -> list[JobRoof]:
    """The roofs of a trace job, the primary (`hardware=`) first (see the module docstring)."""
    assert cfg.hardware is not None
    gpu = cuda_device_name(cfg.runtime.device)
    primary_hw = hardware_for(cfg, log)
    primary = roof_for(cfg, primary_hw)
    roofs: list[JobRoof] = []
    if cfg.hardware.calibration is not None:  # a recorded calibration of another machine: predictions only
        roofs.append(
            JobRoof(
                "recorded",
                primary_hw,
                primary,
                False,
                f"recorded calibration {cfg.hardware.calibration}: not the device measured here, predictions only",
            )
        )
        return roofs + ([_this_machine(cfg, log)] if profiled else [])
    if primary_hw.kind == "measured":
        roofs.append(JobRoof("measured", primary_hw, primary, True, "calibrated on the run's device"))
        match = datasheet_for_device(gpu) if gpu else None
        if match is not None:
            sheet = load_hardware(match)
            try:
                roofs.append(
                    JobRoof(
                        match,
                        sheet,
                        sheet.roof(primary.dtype, cfg.hardware.allow_tf32),
                        True,
                        f"datasheet of {gpu} (matched by name)",
                    )
                )
            except ConfigError as exc:
                log(f"no datasheet roof beside the calibration: {exc}")
        elif gpu:
            log(f"no datasheet in conf/hardware/ matches {gpu!r}: the calibrated roof only")
        return roofs
    same = gpu is not None and datasheet_for_device(gpu) == primary_hw.name
    note = (
        f"datasheet of {gpu}"
        if same
        else f"not the device measured here ({gpu or cfg.runtime.device}): predictions only"
    )
    roofs.append(JobRoof(primary_hw.name, primary_hw, primary, same, note))
    return roofs + ([_this_machine(cfg, log)] if profiled else [])


def _this_machine(cfg: RootConfig, log: Callable[[str], None]) -> JobRoof:
    """The calibrated roof of the run's device, beside a roof of another device, for the efficiencies: from the
    calibration cache the job names (hardware.cache_dir), else the one rule (config.paths.calibration_dir)."""
    assert cfg.hardware is not None
    measured_cfg = replace(load_hardware_config("measured"), cache_dir=cfg.hardware.cache_dir)
    hw, _, _, _ = measured_hardware(measured_cfg, cfg.runtime, log)
    return JobRoof(
        "measured", hw, hw.roof(cfg.runtime.dtype), True, "calibrated on the run's device, for the efficiencies"
    )


def run_roofline_stage(
    cfg: RootConfig,
    analytic: Any,
    times: Optional[ModuleTimes],
    out_dir: Path,
    raw_cfg: Any = None,
    *,
    title: str = "",
    progress: Optional[Callable[[str], None]] = None,
    decode: Any = None,
    unrouted: Optional[Mapping[int, Mapping[str, int]]] = None,
) -> RooflineFigures:
    """Predict on the job's roofs, compare with the profile, write roofline.json and the plot; the time levels of
    the kernels that ran (`unrouted`: the run's routing, `levels_stage.stages_that_ran`)."""
    from llm_perf_opt.report.roofline_plot import plot_from_summary

    say = progress or (lambda _msg: None)
    roofs = job_roofs(cfg, profiled=times is not None, log=say)
    latencies: dict[str, LatencyPrediction] = {}
    for r in roofs:
        model = model_for_dtype(analytic, r.roof.dtype)
        latencies[r.name] = predict_latency(model.stages(), r.roof)
    entries = [RoofEntry(r.name, latencies[r.name].prefill, r.same_device, r.note) for r in roofs]
    rows = compare(analytic.prefill(), entries, times)
    section = {
        "primary": roofs[0].name,
        "roofs": {
            r.name: {
                "roof": r.roof.to_dict(),
                "same_device": r.same_device,
                "note": r.note,
                "hardware_notes": list(r.hardware.notes),
                "figures": latencies[r.name].figures(),
            }
            for r in roofs
        },
        "rows": [row.to_dict() for row in rows],
        "convention": {**convention.ROOFLINE, "efficiency": EFFICIENCY},
        "measured_by": _measured_by(times),
        "files": {"roofline": ROOFLINE_FILE, "svg": f"{PLOT_STEM}.svg", "png": f"{PLOT_STEM}.png"},
    }
    for r in roofs:
        say(f"on the {r.name} roof, {describe_figures(latencies[r.name])}")
    print(render_comparison(rows, entries))
    from llm_perf_opt.measure import levels_stage

    primary = model_for_dtype(analytic, roofs[0].roof.dtype)
    section["levels"], levels_table, payload = levels_stage.levels_section(
        cfg,
        primary,
        latencies[roofs[0].name],
        times,
        levels_stage.decode_measured(decode),
        levels_stage.cpu_time_measured(times, decode, _threads(times)),
        unrouted=unrouted,
    )
    write_roofline(
        out_dir / ROOFLINE_FILE, primary, latencies[roofs[0].name], roofs[0].hardware, config=raw_cfg, levels=payload
    )
    section["levels"]["accuracy"] = levels_stage.accuracy_rows(section["levels"])
    print(levels_table)
    print(levels_stage.describe_accuracy(section["levels"]["accuracy"]))
    plot_from_summary(
        section,
        out_dir,
        title=title or f"Roofline: {analytic.spec.name}",
        note=section["measured_by"],
        vocabulary=analytic.vocabulary,
    )
    say(f"wrote {ROOFLINE_FILE}, {PLOT_STEM}.svg and {PLOT_STEM}.png (roofs: {', '.join(r.name for r in roofs)})")
    return typed(RooflineFigures, section, "roofline")


def _threads(times: Optional[ModuleTimes]) -> Optional[int]:
    return None if times is None else times.method.get("threads")


def _measured_by(times: Optional[ModuleTimes]) -> str:
    if times is None:
        return "not measured (profile=off, or no forward ran): predictions only"
    m = times.method
    base = "GPU kernel time" if times.coverage.get("time_base") == "device" else "CPU wall-clock spans"
    return (
        f"measured: {m.get('warmup')} warm-up, {times.repeats} plain + {times.repeats} profiled forwards on "
        f"{m.get('device')} ({m.get('device_name')}, {m.get('threads')} threads), medians; forward = the plain "
        f"forward's wall time, parts = {base} of their module ranges; {m.get('synchronisation')}"
    )

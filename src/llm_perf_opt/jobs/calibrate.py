"""`./dev calibrate`: measure the roof of the device this job runs on (runtime.device) and print it.

The calibration is cached per device, torch version and thread count (hardware.cache_dir, default
`config.paths.calibration_dir()`: $LLM_PERF_OPT_CALIBRATION_DIR, else tmp/calibration/) and reused unless
hardware.recalibrate=true; a copy goes into the run directory (calibration.json). With a datasheet
(`hardware=h100_sxm`) the datasheet figures print beside the measured ones, with the ratio measured / datasheet.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from llm_perf_opt import units
from llm_perf_opt.analytic.time.hardware import Hardware
from llm_perf_opt.config import to_typed_config
from llm_perf_opt.config.options import check_group_options
from llm_perf_opt.measure.calibrate import LEVEL_DTYPES, Calibration, measured_hardware, write_calibration
from llm_perf_opt.runs.entry import CONF_DIR, progress, reports_errors, run_dir


def render_calibration(cal: Calibration, measured: Hardware, datasheet: Hardware | None = None) -> str:
    lines = [
        f"{cal.device}: {cal.device_name} | torch {cal.torch_version} | {cal.threads} threads | plan "
        f"{cal.plan.name}" + (f" | datasheet {datasheet.label}" if datasheet else "")
    ]
    rows = [(f"matmul {k}", v, "FLOP/s", f"matmul.{k}") for k, v in measured.matmul_flops.items()]
    rows += [
        ("vector", measured.vector_flops, "FLOP/s", "vector"),
        ("bandwidth", measured.bandwidth, "B/s", "bandwidth"),
    ]
    for label, value, unit, key in rows:
        line = f"  {label:18s} {units.si(value, unit):>14s}"
        if datasheet is not None:
            ref = (
                datasheet.matmul_flops.get(key.split(".", 1)[1])
                if key.startswith("matmul.")
                else datasheet.vector_flops
                if key == "vector"
                else datasheet.bandwidth
            )
            line += (
                f"   datasheet {units.si(ref, unit):>14s}   measured/datasheet {units.percent(value / ref)}"
                if ref
                else "   datasheet —"
            )
        lines.append(line)
    lines.append("how:")
    lines.extend(f"  {key}: {source}" for key, source in measured.sources.items())
    return "\n".join(lines)


@hydra.main(version_base="1.3", config_path=CONF_DIR, config_name="calibrate")
@reports_errors
def main(raw: DictConfig) -> None:
    cfg = to_typed_config(raw)
    datasheet = Hardware.from_config(cfg.hardware) if cfg.hardware.kind == "datasheet" else None
    # every dtype's kernel-level and host figures: the machine's calibration, not one job's
    measured, cal, cache, reused = measured_hardware(cfg.hardware, cfg.runtime, progress, LEVEL_DTYPES)
    progress(f"{'reused' if reused else 'wrote'} {cache}")
    print(render_calibration(cal, measured, datasheet))
    progress(f"wrote {write_calibration(run_dir() / 'calibration.json', cal)}")


if __name__ == "__main__":
    check_group_options()
    main()

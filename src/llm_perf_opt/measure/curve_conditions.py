"""A measured CPU serving curve (`serve.measured`) beside the calibration that prices it: one clear refusal when the
curve ran under other conditions than the prediction's figures were measured in.

On the CPU two of a forward's conditions move its time as much as the model does, and a CPU calibration holds for
the values of both it was measured under (this process's cache is keyed on them; a file records them):

* the thread count (`runtime.threads`; the calibration's file is per thread count), and
* the memory allocator regime (`measure.allocator`: glibc's malloc maps a large result fresh from the kernel and
  faults its pages in on every call unless its tunables keep freed memory; the tiny twin's batch-1 prefill is priced
  at 29.6 ms with the suite's `MALLOC_*` tunables and at 42.7 ms under glibc's defaults, on the same host).

So `serve.measured` on a CPU curve requires the curve's `config.threads` and `config.allocator` (written by
`benchmarks/serving_curve.py`) to be those of the calibration: this process's (`hardware=measured`), or a recorded
CPU calibration's `threads` and `allocator` (`hardware.calibration=PATH`, such as the `calibration.json` a serving
curve writes beside itself). A GPU curve, a GPU calibration file or a datasheet is not checked.
"""

from __future__ import annotations

from typing import Any, Optional

from llm_perf_opt.errors import ConfigError


def _prediction_conditions(cfg: Any) -> Optional[tuple[int, Optional[str], str]]:
    """(threads, allocator regime label or None, who) of the calibration that prices the curve; None when it is not
    a CPU calibration (a datasheet, another runtime, a recorded GPU file)."""
    from llm_perf_opt.measure.allocator import allocator_regime, regime_label

    hw = cfg.hardware
    if hw.calibration is None:
        if cfg.runtime.device.split(":")[0] != "cpu":
            return None
        import torch

        threads = cfg.runtime.threads or torch.get_num_threads()
        return int(threads), regime_label(allocator_regime()), "this job calibrates and predicts"
    from llm_perf_opt.measure.calibration_file import read_calibration_file

    data = read_calibration_file(hw.calibration).data
    if str(data.get("device", "")).split(":")[0] != "cpu" or data.get("threads") is None:
        return None
    regime = data.get("allocator")
    return int(data["threads"]), regime_label(regime) if regime else None, "the calibration file was measured"


def check_curve_conditions(cfg: Any) -> None:
    """ConfigError naming `serve.measured` when a CPU curve ran on another thread count or under another allocator
    regime than the CPU calibration that prices it (`hardware=measured`: this job's, or the file
    `hardware.calibration` names); nothing for a field the curve or the file lacks."""
    path = cfg.serve.measured
    hw = cfg.hardware
    if not path or hw is None or hw.kind != "measured":
        return
    from llm_perf_opt.analytic.serving_measured import load_curve

    conf = load_curve(path).get("config", {})
    if conf.get("device", "cpu") != "cpu":
        return
    ours = _prediction_conditions(cfg)
    if ours is None:
        return
    threads, regime, who = ours
    where = "(runtime.threads)" if hw.calibration is None else f"(hardware.calibration={hw.calibration})"
    if conf.get("threads") is not None and int(conf["threads"]) != threads:
        raise ConfigError.field(
            "serve.measured",
            path,
            f"measured on {conf['threads']} thread(s); {who} on {threads} {where}: measure and predict on one "
            "thread count",
        )
    theirs = conf.get("allocator")
    file_tag = "" if hw.calibration is None else f" {where}"
    if theirs and regime and theirs != regime:
        raise ConfigError.field(
            "serve.measured",
            path,
            f"measured under {theirs}; {who} under {regime}{file_tag} (a CPU forward's fresh-page cost is the "
            "allocator's, and so is the calibration's): measure and predict under one regime",
        )

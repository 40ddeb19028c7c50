"""A measured CPU serving curve (`serve.measured`) beside this process's calibration: one clear refusal when the
curve ran under other conditions than the prediction's figures were measured in.

On the CPU two of a forward's conditions move its time as much as the model does, and the calibration that
`hardware=measured` makes holds for this process's values of both (its cache is keyed on them):

* the thread count (`runtime.threads`; the calibration's file is per thread count), and
* the memory allocator regime (`measure.allocator`: glibc's malloc maps a large result fresh from the kernel and
  faults its pages in on every call unless its tunables keep freed memory; the tiny twin's batch-1 prefill is priced
  at 29.6 ms with the suite's `MALLOC_*` tunables and at 42.7 ms under glibc's defaults, on the same host).

So `serve.measured` on a CPU curve, with this process's calibration, requires the curve's `config.threads` and
`config.allocator` (written by `benchmarks/serving_curve.py`) to be this job's. A GPU curve, a datasheet or a
recorded calibration file (`hardware.calibration`) is not checked.
"""

from __future__ import annotations

from typing import Any

from llm_perf_opt.errors import ConfigError


def check_curve_conditions(cfg: Any) -> None:
    """ConfigError naming `serve.measured` when a CPU curve ran on another thread count or under another allocator
    regime than this job's calibration (`hardware=measured` without a file); nothing for a field the curve lacks."""
    path = cfg.serve.measured
    hw = cfg.hardware
    if not path or hw is None or hw.kind != "measured" or hw.calibration is not None:
        return
    if cfg.runtime.device.split(":")[0] != "cpu":
        return
    from llm_perf_opt.analytic.serving_measured import load_curve

    conf = load_curve(path).get("config", {})
    if conf.get("device", "cpu") != "cpu":
        return
    threads = conf.get("threads")
    if threads is not None:
        import torch

        ours = cfg.runtime.threads or torch.get_num_threads()
        if int(threads) != int(ours):
            raise ConfigError.field(
                "serve.measured",
                path,
                f"measured on {threads} thread(s); this job calibrates and predicts on {ours} (runtime.threads): "
                "measure and analyze on one thread count",
            )
    theirs = conf.get("allocator")
    if theirs:
        from llm_perf_opt.measure.allocator import allocator_regime, regime_label

        ours = regime_label(allocator_regime())
        if theirs != ours:
            raise ConfigError.field(
                "serve.measured",
                path,
                f"measured under {theirs}; this process runs {ours} (a CPU forward's fresh-page cost is the "
                "allocator's, and so is the calibration's): measure and analyze under one regime",
            )

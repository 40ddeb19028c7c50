"""What the serving engines above the ideal level need of a job's device and host (`analytic.serve_engines`): the
time model of the job's roof (`levels_stage.job_time_model`) and, for an engine that runs HF `generate()`, the
generate loop's host work per step on this host (`generate_host`). Only what the named engines need is read or
measured."""

from __future__ import annotations

from typing import Any, Optional

from llm_perf_opt.analytic.serve_engines.engine import engines_named
from llm_perf_opt.analytic.serve_engines.generate_host import GenerateHost
from llm_perf_opt.analytic.time.figures import TimeModel


def engine_figures(cfg: Any, roof: Any) -> tuple[Optional[TimeModel], Optional[GenerateHost]]:
    engines = engines_named(cfg.serve.engine)
    tm = gen = None
    if any(e.level != "ideal" for e in engines) or cfg.serve.measured:  # measured: beside hf_eager
        from llm_perf_opt.measure.levels_stage import job_time_model

        tm = job_time_model(cfg, roof)
    if any(e.generate_host for e in engines) and tm is not None and tm.device is not None and tm.host is not None:
        from llm_perf_opt.measure.generate_host import generate_host

        gen = generate_host(getattr(cfg.hardware, "cache_dir", None) if cfg.hardware is not None else None)
    return tm, gen

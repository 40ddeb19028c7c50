"""A trace stage as an object, and the loop that runs a list of them with the run control written once.

A `Stage` names itself (summary.json's `stage` while it runs, and where a stopped job says it stopped), says what
it reads and writes, when it runs, and whether it needs the model's session; `run(ctx)` does the work on the
job's `TraceRun` (the context every stage reads from and writes into). `run_stages` is the whole job's control:
for each stage in order, the session opened or closed around it, `run.step(name)` (which raises a pending
Ctrl-C or SIGTERM and saves summary.json naming the stage), then the stage. Adding a stage is adding one entry
to the list (`trace.job.STAGES`). `LLM_PERF_OPT_PAUSE_AT=<stage>` holds the job at the start of that stage (after
`run.step`, before its work) until a signal ends it, saying so on stderr: a known moment to send Ctrl-C or
SIGTERM to, or to attach a debugger or py-spy.

What a stage reads and writes is declared in three kinds of names, checked against the code by the tests:
a `TraceRun` field (`inputs`, `analytic`, `times`, ...), a summary.json section (`summary.<section>`), and the
role of a file it writes into the run directory (`run_files`: `costs`, `profile`, ...).
"""

from __future__ import annotations

import os
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from omegaconf import DictConfig

from llm_perf_opt.runs.job_run import JobRun

PAUSE_ENV = "LLM_PERF_OPT_PAUSE_AT"  # a stage's name: the job waits at its start for a signal


@dataclass
class TraceRun:
    """The trace job's state, shared by its stages: what the job was given, then what each stage produced
    (None until the stage that writes it ran)."""

    raw_cfg: DictConfig  # the composed configuration, as written into each artifact's producer
    out_dir: Path
    run: JobRun
    t_job: float  # perf_counter at the job's start
    job: Any = None  # prepare.validate.ValidJob
    cfg: Any = None  # config.RootConfig: job.cfg
    family: Any = None  # family.ModelFamily: job.family
    inputs: Any = None  # the family's inputs (layout, token ids, tensors)
    export_plan: Any = None  # export.plan_targets() with trace.export, else None
    summary: Any = None  # run_artifacts.Summary, attached to the run from the inputs stage on
    analytic: Any = None  # the analytic model (trace.analytic)
    session: Any = None  # the model's session, open from the session stage to the last stage that needs it
    times: Any = None  # the profile stage's measure.module_times.ModuleTimes
    measured: Any = None  # the verify stage's MeasuredFlops of the prefill (per-module counts, for graph costs)
    session_scope: ExitStack = field(default_factory=ExitStack)

    def open_session(self, session_context: Any) -> Any:
        """Enter the family's session context; it stays open until `close_session` (or an error unwinds it)."""
        self.session = self.session_scope.enter_context(session_context)
        return self.session

    def close_session(self) -> None:
        """Leave the session's context, then drop the model: nothing the job built outlives it."""
        if self.session is None:
            return
        session, self.session = self.session, None
        self.session_scope.close()
        session.release()


@dataclass(frozen=True)
class Stage:
    """One stage of the trace job."""

    name: str  # run.step's name: summary.json's `stage` while it runs
    run: Callable[[TraceRun], None]
    reads: tuple[str, ...] = ()  # TraceRun fields it needs
    writes: tuple[str, ...] = ()  # TraceRun fields, `summary.<section>`s and run-file roles it writes
    when: Callable[[TraceRun], bool] = lambda ctx: True  # runs only when this holds (read before it runs)
    session: bool = False  # needs the model's session (opened by the stage that opens it)
    label: Optional[Callable[[TraceRun], str]] = None  # run.step's name when it depends on the configuration

    def step_name(self, ctx: TraceRun) -> str:
        return self.label(ctx) if self.label is not None else self.name


def run_stages(stages: Sequence[Stage], ctx: TraceRun) -> None:
    """Each stage in order that `when` admits, announced with `ctx.run.step`. The session a stage opened is
    closed (and the model dropped) before the first stage after it that does not need it; an error unwinds it
    without dropping anything else."""
    with ctx.session_scope:
        for stage in stages:
            if not stage.session:
                ctx.close_session()
            if not stage.when(ctx):
                continue
            ctx.run.step(stage.step_name(ctx))
            pause_if_asked(stage.name)
            stage.run(ctx)
        ctx.close_session()


def pause_if_asked(name: str) -> None:
    """Wait for a signal (Ctrl-C, SIGTERM: they end the job as anywhere else) when `PAUSE_ENV` names this stage,
    after a line on stderr saying where the job waits."""
    if os.environ.get(PAUSE_ENV) != name:
        return
    print(f"paused at the start of stage {name} ({PAUSE_ENV}): waiting for a signal", file=sys.stderr, flush=True)
    while True:
        time.sleep(3600)

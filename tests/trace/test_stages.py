"""The trace job as a list of stage objects: the list agrees with the trace package's docstring (where a reader
looks first), every stage's declared reads and writes are names the job knows and come in an order that can hold,
and the loop opens and closes the session around the stages that need it, announcing each stage once."""

from __future__ import annotations

import re
from contextlib import contextmanager
from dataclasses import fields
from pathlib import Path

import pytest

import llm_perf_opt.trace
from llm_perf_opt.run_artifacts import RUN_FILES, Summary
from llm_perf_opt.trace.job import STAGES
from llm_perf_opt.trace.stage import Stage, TraceRun, run_stages

GIVEN = ("raw_cfg", "out_dir", "run", "t_job")  # what the job starts with


def test_the_package_docstring_lists_the_stages_in_order():
    rows = re.findall(r"^\| ([a-z ]+) \| `", llm_perf_opt.trace.__doc__, re.M)
    assert rows[: len(STAGES)] == [s.name for s in STAGES]


def test_every_declared_read_and_write_is_a_known_name_in_an_order_that_holds():
    state = {f.name for f in fields(TraceRun)} - {"session_scope"}
    sections = {f"summary.{f.name}" for f in fields(Summary)}
    roles = {f.role for f in RUN_FILES}
    written = set(GIVEN)
    for stage in STAGES:
        for name in stage.reads:
            assert name in state, f"{stage.name} reads {name!r}, not a TraceRun field"
            assert name in written, f"{stage.name} reads {name!r} before any stage writes it"
        for name in stage.writes:
            assert name in state | sections | roles, f"{stage.name} writes {name!r}: no field, section or run file"
        written |= set(stage.writes)
    assert len({s.name for s in STAGES}) == len(STAGES)


class FakeRun:
    def __init__(self):
        self.steps = []

    def step(self, name):
        self.steps.append(name)


class FakeSession:
    def __init__(self, events):
        self.events = events

    def release(self):
        self.events.append("release")


def _job(events, fail_in=None):
    @contextmanager
    def session_context():
        events.append("open")
        try:
            yield FakeSession(events)
        finally:
            events.append("close")

    def work(name):
        def run(ctx):
            events.append(f"{name} (session {'open' if ctx.session is not None else 'closed'})")
            if name == fail_in:
                raise RuntimeError(f"{name} broke")

        return run

    return (
        Stage("first", work("first")),
        Stage("session", lambda ctx: ctx.open_session(session_context()), session=True),
        Stage("inside", work("inside"), session=True, label=lambda ctx: "inside (labelled)"),
        Stage("skipped", work("skipped"), session=True, when=lambda ctx: False),
        Stage("after", work("after")),
        Stage("never", work("never"), when=lambda ctx: False),
    )


def test_the_loop_opens_and_closes_the_session_around_the_stages_that_need_it():
    events = []
    ctx = TraceRun(raw_cfg=None, out_dir=Path("."), run=FakeRun(), t_job=0.0)
    run_stages(_job(events), ctx)
    assert ctx.run.steps == ["first", "session", "inside (labelled)", "after"]
    assert events == [
        "first (session closed)",
        "open",
        "inside (session open)",
        "close",
        "release",
        "after (session closed)",
    ]
    assert ctx.session is None


def test_an_error_in_a_session_stage_unwinds_the_session_without_dropping_the_model():
    events = []
    ctx = TraceRun(raw_cfg=None, out_dir=Path("."), run=FakeRun(), t_job=0.0)
    with pytest.raises(RuntimeError, match="inside broke"):
        run_stages(_job(events, fail_in="inside"), ctx)
    assert ctx.run.steps == ["first", "session", "inside (labelled)"]  # summary.json names where it stopped
    assert events == ["first (session closed)", "open", "inside (session open)", "close"]

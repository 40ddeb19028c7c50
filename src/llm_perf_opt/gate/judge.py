"""The verdict of the verification gate on a finished sweep: what failed, one line each.

Everything is read through the typed loaders of the run directory (`report.collect` for the jobs and
their status, `run_artifacts.load` for `verification.json` and `callgraph.grouped.json`), and every row
and check those files hold is judged, whatever stage, part or decode step it names: rows a newer trace
job adds (per decode step, per stage) are gated without a change here.

A finding is one line, always the same six fields:

    FAIL job 1 [workload=gundam] | stage prefill | part decoder.layer.1 | analytic 8.99 MFLOP |
      measured 8.03 MFLOP | error 11.9% > rtol 0.1%     (one line in the output)

A job fails when it did not finish (`error.json`, no result, not started), when a FLOPs row's relative
error (or a part's activation bytes) exceeds the gate's `verify.rtol`, when KV-cache bytes differ at all, when a
matmul-like op ran without a FLOP formula or measured
FLOPs sit in a module the analytic model does not name or cost, when a grouping runtime check says
`mismatch`, or when the job left no verification or grouped graph to judge.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

from llm_perf_opt import families, units
from llm_perf_opt.callgraph.checks import STATUS_MISMATCH, STATUS_OK
from llm_perf_opt.errors import PipelineError
from llm_perf_opt.gate.junit import JUnitCase, Problem
from llm_perf_opt.report.collect import JobRecord
from llm_perf_opt.run_artifacts import load, run_file

NONE = "—"


@dataclass(frozen=True)
class Finding:
    """One failure: the six fields of its line, and its kind (the JUnit failure type)."""

    kind: str  # JobFailed | Divergence | NoFormula | Unmodelled | Unsupported | GroupingMismatch | Missing | PinMoved
    job: str  # "job 1 [workload=gundam]" or "pins gundam/slide"
    stage: str
    part: str
    analytic: str
    measured: str
    error: str
    labels: tuple[str, str] = ("analytic", "measured")  # what the two numbers are (pins: pinned, now)
    order: tuple = ()  # console order within a job: totals first, then parts, then everything else

    def line(self) -> str:
        return (
            f"FAIL {self.job} | stage {self.stage} | part {self.part} | {self.labels[0]} {self.analytic} | "
            f"{self.labels[1]} {self.measured} | error {self.error}"
        )


@dataclass
class JobVerdict:
    """One job of the matrix, judged: its findings (empty: it passed) and what it checked."""

    job: JobRecord
    label: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what passed, for the JUnit <system-out>
    ran: bool = True  # False: the job did not run to the end (a JUnit error, not a failure)

    @property
    def name(self) -> str:
        return f"job {self.job.num} [{self.label}]"

    @property
    def passed(self) -> bool:
        return not self.findings

    def junit_case(self, classname: str) -> JUnitCase:
        case = JUnitCase(
            name=f"job {self.job.num}: {self.label}",
            classname=classname,
            seconds=self.job.summary.job_seconds if self.job.summary is not None else None,
            stdout="\n".join(self.notes),
        )
        if self.findings:
            lines = [f.line() for f in self.findings]
            more = f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""
            detail = "\n".join(lines)
            if not self.ran and self.job.error is not None and self.job.error.traceback:
                detail += "\n\n" + "".join(self.job.error.traceback)
            problem = Problem(self.findings[0].kind, lines[0] + more, detail)
            (case.failures if self.ran else case.errors).append(problem)
        return case


def _flops(value: Optional[float]) -> str:
    return units.flops(value, digits=4)


def _error_text(rel: float, rtol: float) -> str:
    return f"{'inf' if math.isinf(rel) else units.percent(rel)} > rtol {units.percent(rtol)}"


def stage_name(stage: str, label: str) -> str:
    """`prefill`, `decode (context 78)`: the stage and the check's own label, whatever it says."""
    return f"{stage} ({label})" if label else stage


def part_name(path: str, vocabulary: Any = None) -> str:
    return (vocabulary.alias(path) if vocabulary is not None else path) if path else "(total)"


def verification_findings(job_dir: Path, who: str, rtol: float) -> tuple[list[Finding], list[str]]:
    """Every row of `verification.json` judged at `rtol`, and what could hide FLOPs, as findings."""
    try:
        v = load("verification", job_dir)
    except PipelineError as exc:
        return [
            Finding(
                "Missing",
                who,
                "verify",
                run_file("verification").file,
                NONE,
                NONE,
                f"{exc}: the job left no FLOPs verification to judge",
            )
        ], []
    findings: list[Finding] = []
    rows = 0
    vocabulary = families.for_run_dir(job_dir).parts
    for s, check in enumerate(v.checks):
        stage = stage_name(check.stage, check.label)
        for r in check.rows:
            rows += 1
            if r.rel_error <= rtol:
                continue
            rank = 0 if r.part == "" else 1 if vocabulary.is_part(r.part) else 2
            findings.append(
                Finding(
                    "Divergence",
                    who,
                    stage,
                    part_name(r.part, vocabulary),
                    _flops(r.analytic),
                    _flops(r.measured),
                    _error_text(r.rel_error, rtol),
                    order=(rank, s, r.part),
                )
            )
        for op, calls in sorted(check.matmul_like_without_formula.items()):
            findings.append(
                Finding(
                    "NoFormula",
                    who,
                    stage,
                    op,
                    NONE,
                    f"not counted ({calls} calls)",
                    "a matmul-like op ran without a FLOP formula: its FLOPs are lost",
                    order=(0, s, op),
                )
            )
        for path, flops in sorted(check.unmatched_measured.items()):
            findings.append(
                Finding(
                    "Unmodelled",
                    who,
                    stage,
                    path,
                    f"{NONE} (not in the analytic model)",
                    _flops(flops),
                    "measured FLOPs in a module the analytic model does not name",
                    order=(1, s, path),
                )
            )
        for cls, n in sorted(check.unsupported_modules.items()):
            findings.append(
                Finding(
                    "Unsupported",
                    who,
                    stage,
                    cls,
                    f"{NONE} (no cost formula)",
                    f"{n} modules",
                    "a module class the analytic cost registry cannot cost",
                    order=(1, s, cls),
                )
            )
    notes = [
        f"FLOPs: {rows} rows in {len(v.checks)} checks "
        f"({', '.join(stage_name(c.stage, c.label) for c in v.checks)}); max relative error "
        f"{units.percent(v.max_rel_error)}; rtol {units.percent(rtol)}"
    ]
    for r in v.kv_cache:  # bytes are products of shapes: equal or wrong, whatever the rtol
        if not r.ok:
            stage = "prefill" if r.step == 0 else f"decode (step {r.step})"
            findings.append(
                Finding(
                    "Divergence",
                    who,
                    stage,
                    f"KV cache ({r.context_len} tokens)",
                    units.nbytes(r.analytic),
                    units.nbytes(r.measured),
                    f"{r.measured - r.analytic:+,} B (KV-cache bytes must be equal)",
                    order=(1, len(v.checks), r.step),
                )
            )
    for r in v.activation:
        if r.rel_error > rtol:
            findings.append(
                Finding(
                    "Divergence",
                    who,
                    "prefill (activation bytes)",
                    part_name(r.part, vocabulary),
                    units.nbytes(r.analytic),
                    units.nbytes(r.materialised + r.unseen),
                    _error_text(r.rel_error, rtol),
                    order=(2, len(v.checks), r.part),
                )
            )
    if v.kv_cache:
        notes.append(f"KV-cache bytes: {sum(r.ok for r in v.kv_cache)}/{len(v.kv_cache)} steps equal")
    if v.activation:
        notes.append(
            f"activation bytes: {sum(r.rel_error <= rtol for r in v.activation)}/{len(v.activation)} parts within rtol"
        )
    return findings, notes


def _value(value: Any) -> str:
    text = str(value) if not isinstance(value, (dict, list)) else repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def grouping_findings(job_dir: Path, who: str) -> tuple[list[Finding], list[str]]:
    """Every runtime check of the grouped graph (for N / parfor N against the runtime log)."""
    try:
        grouped = load("grouped", job_dir)
    except PipelineError as exc:
        return [
            Finding(
                "Missing",
                who,
                "grouping",
                run_file("grouped").file,
                NONE,
                NONE,
                f"{exc}: the job left no grouped call graph to check",
            )
        ], []
    findings = []
    counts: dict[str, int] = {}
    for c in grouped.checks:
        status = str(c.get("status"))
        counts[status] = counts.get(status, 0) + 1
        if status == STATUS_MISMATCH:
            findings.append(
                Finding(
                    "GroupingMismatch",
                    who,
                    "grouping",
                    str(c.get("name")),
                    _value(c.get("expected")),
                    _value(c.get("observed")),
                    f"mismatch: {c.get('detail', '')}".rstrip(": "),
                    labels=("runtime log", "grouped graph"),
                    order=(0, 0, str(c.get("name"))),
                )
            )
    summary = ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none ran"
    notes = [f"grouping runtime checks: {summary}"]
    if counts.get(STATUS_OK, 0) == 0 and not findings:
        notes.append("note: no grouping check passed (none ran or none could be checked)")
    return findings, notes


def judge_job(job: JobRecord, label: str, rtol: float) -> JobVerdict:
    verdict = JobVerdict(job, label)
    who = verdict.name
    if not job.ok or job.dir is None:
        verdict.ran = False
        verdict.findings.append(Finding("JobFailed", who, "job", NONE, NONE, NONE, job.status))
        return verdict
    for judge in (lambda d: verification_findings(d, who, rtol), lambda d: grouping_findings(d, who)):
        findings, notes = judge(job.dir)
        verdict.findings += sorted(findings, key=lambda f: f.order)
        verdict.notes += notes
    return verdict


def judge_sweep(jobs: Sequence[JobRecord], labels: Sequence[str], rtol: float) -> list[JobVerdict]:
    """Every job of the sweep (in job order), `labels[i]` naming job i."""
    return [judge_job(job, labels[job.num] if job.num < len(labels) else f"job {job.num}", rtol) for job in jobs]

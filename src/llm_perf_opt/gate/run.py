"""`./dev verify [verify=NAME] [overrides]`: the verification gate CI runs.

    ./dev verify                          the default matrix: the full twin, six modes x two page shapes
    ./dev verify verify=quick             the tiny twin on CPU (what ./dev test runs)
    ./dev verify verify=vendor            the vendor code from DSOCR_MODEL_PATH (or model.path=DIR)
    ./dev verify runtime=cuda             any override applies to every job of the matrix
    ./dev verify verify.update_expected=true   (or --update-expected) rewrite conf/verify/expected.yaml
    ./dev verify verify.pins_only=true         judge the pinned analytic totals only (no job, no model: seconds)

Runs the trace job as one Hydra multirun over the matrix (`verify_plan`), then judges every job
(`verify_gate`) and the pinned analytic totals (`verify_expected`). Writes into `verify.out_dir`
(default tmp/verify/<date>/<time>-<pid>/): `junit.xml` (one test case per job, one per pinned mode),
`verify.html` (the gate's page: the verdict, the failing rows, the jobs, the pinned totals),
`report.{html,md,csv}` + `report_plots/` (the sweep report), `sweep/` (the jobs' run directories) and
`sweep.log` (the multirun's output). Each failure is one line on stdout:

    FAIL job 1 [workload=gundam] | stage prefill | part decoder | analytic 25.9 MFLOP | measured 24 MFLOP |
      error 7.99% > rtol 0.1%     (one line in the output)

Exit status: 0 every job ran, every row within verify.rtol, every grouping check matched, every pinned
total unchanged; 1 anything else (the FAIL lines say what); 2 bad input (one `error:` line, nothing run).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt import units
from llm_perf_opt.errors import ConfigError, PipelineError
from llm_perf_opt.gate import pins
from llm_perf_opt.gate.judge import Finding, JobVerdict, judge_sweep
from llm_perf_opt.gate.junit import JUnitCase, Problem, write_junit
from llm_perf_opt.gate.plan import GatePlan, plan
from llm_perf_opt.run_lock import claim

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
JUNIT_FILE, SWEEP_LOG = "junit.xml", "sweep.log"
GATE_LOCK = ".verify.lock"  # the gate's own lock (its sweep may share the directory and takes `.lock`)


def say(message: str) -> None:
    """Progress on stderr (stdout holds the verdict)."""
    print(f"[{time.strftime('%H:%M:%S')}] verify: {message}", file=sys.stderr, flush=True)


def run_sweep(gate: GatePlan) -> int:
    """The multirun as a child process; its stderr (the job i/n progress) streams through, everything goes
    to sweep.log. Returns its exit status."""
    gate.out_dir.mkdir(parents=True, exist_ok=True)
    log_path = gate.out_dir / SWEEP_LOG
    with open(log_path, "w", encoding="utf-8") as log:
        log.write("$ " + " ".join(gate.command()) + "\n")
        log.flush()
        proc = subprocess.Popen(gate.command(), stdout=log, stderr=subprocess.PIPE, text=True, bufsize=1)
        assert proc.stderr is not None
        for line in proc.stderr:
            sys.stderr.write(line)
            log.write(line)
        return proc.wait()


# -------------------------------------------------------------------------------------------- pins
def pin_findings(gate: GatePlan) -> tuple[list[Finding], list[JUnitCase], dict]:
    """The pinned analytic totals recomputed and compared: (findings, one JUnit case per mode, the totals now)."""
    from llm_perf_opt import families

    old, pages = pins.load(gate.expected)
    new = pins.compute(tuple(families.family().modes()), pages)  # the pins are the default family's (v1)
    changes = pins.compare(old, new)
    where = str(gate.expected)
    update = pins.UPDATE_COMMAND + ("" if gate.expected == pins.default_path() else f" verify.expected={where}")
    findings = [
        Finding(
            "PinMoved",
            f"pins {c.mode}/{c.page}",
            c.stage,
            c.count,
            f"{c.old:,}" if c.old is not None else "—",
            f"{c.new:,}" if c.new is not None else "—",
            f"{c.change}: a pinned analytic total of {where} moved; if intended, run {update} and commit the file",
            labels=("pinned", "now"),
        )
        for c in changes
    ]
    cases = []
    for mode in dict.fromkeys([*new, *old]):
        mine = [f for f in findings if f.job.split()[1].split("/")[0] == mode]
        figures = new.get(mode, {})
        stdout = "\n".join(
            f"{page}: seq_len {e['seq_len']}, prefill {units.flops(e['prefill']['flops_matmul'])} "
            f"(matmul) / {units.flops(e['prefill']['flops'])}, decode@{e['decode']['context']} "
            f"{units.flops(e['decode']['flops_matmul'])} / {units.flops(e['decode']['flops'])}"
            for page, e in figures.items()
        )
        case = JUnitCase(
            name=f"pinned analytic totals: {mode}", classname="verify.expected", seconds=0.0, stdout=stdout
        )
        if mine:
            case.failures.append(
                Problem(
                    "PinMoved",
                    mine[0].line() + (f" (and {len(mine) - 1} more)" if len(mine) > 1 else ""),
                    "\n".join(f.line() for f in mine),
                )
            )
        cases.append(case)
    return findings, cases, new


def update_expected(gate: GatePlan) -> int:
    """Rewrite the pinned totals from the analytic model, printing what moved."""
    from llm_perf_opt import families

    try:
        old, pages = pins.load(gate.expected)
    except ConfigError:
        old, pages = {}, list(pins.DEFAULT_PAGES)
    new = pins.compute(tuple(families.family().modes()), pages)
    changes = pins.compare(old, new)
    pins.write(gate.expected, new, pages)
    for c in changes:
        before = "—" if c.old is None else f"{c.old:,}"
        after = "—" if c.new is None else f"{c.new:,}"
        print(f"pin {c.mode}/{c.page} {c.stage} {c.count}: {before} -> {after} ({c.change})")
    print(
        f"{gate.expected}: {len(pins.pins_of(new))} pinned totals, {len(changes)} changed"
        + ("; review with git diff and commit it" if changes else "")
    )
    return EXIT_OK


# -------------------------------------------------------------------------------------------- the gate
def sweep_findings(gate: GatePlan, status: int) -> tuple[list[JobVerdict], list[Finding], list[JUnitCase]]:
    """The jobs judged, plus findings about the sweep process itself."""
    from llm_perf_opt.report.collect import collect_sweep

    extra: list[Finding] = []
    cases: list[JUnitCase] = []
    if status != 0:
        extra.append(
            Finding(
                "SweepFailed",
                "sweep",
                "multirun",
                "—",
                "—",
                "—",
                f"the multirun exited with status {status} (see {gate.out_dir / SWEEP_LOG})",
            )
        )
    try:
        sweep = collect_sweep(gate.sweep_dir)
    except PipelineError as exc:
        extra.append(Finding("SweepFailed", "sweep", "collect", "—", "—", "—", str(exc)))
        cases.append(JUnitCase("sweep", f"verify.{gate.matrix}", errors=[Problem("SweepFailed", str(exc))]))
        return [], extra, cases
    labels = [gate.label(job) for job in gate.jobs]
    verdicts = judge_sweep(sweep.jobs, labels, gate.rtol)
    if status != 0:
        cases.append(
            JUnitCase("multirun process", f"verify.{gate.matrix}", errors=[Problem("SweepFailed", extra[0].line())])
        )
    return verdicts, extra, cases


def write_report(gate: GatePlan) -> tuple[Optional[Path], list[Finding]]:
    from llm_perf_opt.report.sweep import build_sweep_report

    try:
        return build_sweep_report(gate.sweep_dir, out_dir=gate.out_dir).html, []
    except Exception as exc:  # noqa: BLE001 - a report that cannot be built is a gate failure, not a crash
        return None, [Finding("ReportFailed", "report", "report", "—", "—", "—", f"{type(exc).__name__}: {exc}")]


def write_page(
    gate: GatePlan,
    passed: bool,
    counts: str,
    verdicts: Sequence[JobVerdict],
    others: Sequence[Finding],
    pinned: dict,
    pins_only: bool = False,
) -> Path:
    """The gate's own page (`verify.html`, gate.page): the verdict, the failing rows, the jobs, the pinned totals."""
    from llm_perf_opt.gate.page import GatePage, links_of, write_gate_page

    files = (("sweep report", "report.html"), ("junit.xml", JUNIT_FILE), ("sweep.log", SWEEP_LOG))
    return write_gate_page(
        GatePage(
            gate.matrix,
            passed,
            counts,
            gate.out_dir,
            verdicts,
            others,
            pinned,
            str(gate.expected),
            list(gate.arguments),
            pins_only,
            links_of(gate.out_dir, files),
        )
    )


def print_findings(verdicts: Sequence[JobVerdict], others: Sequence[Finding]) -> None:
    """Every failure, one line each: per job its stage totals first, then the parts, then the rest."""
    for verdict in verdicts:
        for finding in verdict.findings:
            print(finding.line())
    for finding in others:
        print(finding.line())


def run_gate(gate: GatePlan) -> int:
    v = gate.cfg.verify
    if not v.pins_only:
        say(
            f"matrix {gate.matrix} ({v.description or 'no description'}): {len(gate.jobs)} jobs, rtol "
            f"{units.percent(gate.rtol)} -> {gate.out_dir}"
        )
    pin_list, pin_cases, pinned = pin_findings(gate)
    n_pins = len(pins.pins_of(pinned))
    pins_unchanged = f"pinned totals {n_pins - len(pin_list)}/{n_pins} unchanged"
    say(
        f"pinned analytic totals ({gate.expected}): {n_pins - len(pin_list)} of {n_pins} unchanged"
        + (" (pins only: no job runs)" if v.pins_only else "")
    )
    if v.pins_only:  # JUnit XML with one case per pinned mode, a FAIL line per moved total
        gate.out_dir.mkdir(parents=True, exist_ok=True)
        junit = write_junit(
            gate.out_dir / JUNIT_FILE,
            f"verify.{gate.matrix}",
            pin_cases,
            properties={"matrix": gate.matrix, "pins_only": "true", "expected": str(gate.expected)},
        )
        print_findings([], pin_list)
        counts = f"pins only (no job run), {pins_unchanged}"
        page = write_page(gate, not pin_list, counts, [], pin_list, pinned, pins_only=True)
        print(f"verify {gate.matrix}: {'FAILED' if pin_list else 'PASSED'}: {counts}")
        print(f"  junit  {junit}")
        print(f"  report {page}")
        return EXIT_FAILED if pin_list else EXIT_OK
    status = run_sweep(gate)
    if status == EXIT_BAD_INPUT and not gate.sweep_dir.is_dir():
        print(
            f"error: the multirun refused its configuration (exit status 2; see above and {gate.out_dir / SWEEP_LOG})",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    verdicts, sweep_list, sweep_cases = sweep_findings(gate, status)
    html, report_list = write_report(gate)
    classname = f"verify.{gate.matrix}"
    cases = [*(v.junit_case(classname) for v in verdicts), *sweep_cases, *pin_cases]
    if report_list:
        cases.append(JUnitCase("sweep report", classname, errors=[Problem("ReportFailed", report_list[0].line())]))
    junit = write_junit(
        gate.out_dir / JUNIT_FILE,
        classname,
        cases,
        properties={
            "matrix": gate.matrix,
            "description": v.description,
            "rtol": str(gate.rtol),
            "arguments": " ".join(gate.arguments),
            "sweep_dir": str(gate.sweep_dir),
            "expected": str(gate.expected),
        },
    )
    others = [*sweep_list, *report_list, *pin_list]
    print_findings(verdicts, others)
    failed_jobs = [v for v in verdicts if not v.passed]
    passed = not failed_jobs and not others and len(verdicts) == len(gate.jobs)
    counts = (
        f"{len(verdicts)} jobs ({len(verdicts) - len(failed_jobs)} passed, {len(failed_jobs)} failed), {pins_unchanged}"
    )
    page = write_page(gate, passed, counts, verdicts, others, pinned)
    print(f"verify {gate.matrix}: {'PASSED' if passed else 'FAILED'}: {counts}")
    print(f"  junit  {junit}")
    print(f"  report {page}")
    print(f"  sweep  {html if html is not None else '(the sweep report was not written: see the FAIL report line)'}")
    return EXIT_OK if passed else EXIT_FAILED


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if any(a in ("-h", "--help") for a in args):
        print(__doc__.strip())
        return EXIT_OK
    args = ["verify.update_expected=true" if a == "--update-expected" else a for a in args]
    from llm_perf_opt.config.options import unknown_group_option

    try:
        problem = unknown_group_option(args)
        if problem is not None:
            raise problem
        gate = plan(args)
        if gate.cfg.verify.update_expected:
            return update_expected(gate)
        with claim(gate.out_dir, sweep=True, field="verify.out_dir", lock_file=GATE_LOCK):  # one gate per directory
            return run_gate(gate)
    except PipelineError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())

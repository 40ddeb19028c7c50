"""`./dev verify verify=quick` for real on CPU (the tiny twin, a plain and a crop mode), and two real
divergences: an analytic model of another spec than the model that ran, and a changed expected.yaml (judged
alone, `verify.pins_only=true`).
Every JUnit file is validated against the XSD and read back with junitparser."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import xmlschema
from junitparser import Failure, JUnitXml

from llm_perf_opt.dsocr.parts import mode_names
from llm_perf_opt.gate.junit import SCHEMA_FILE

pytestmark = pytest.mark.slow

# job, stage, part, then the two numbers with their labels, then the error
LINE = re.compile(
    r"^FAIL (?P<job>.+?) \| stage (?P<stage>.+?) \| part (?P<part>.+?) \| (?P<left>analytic|pinned|runtime log) "
    r"(?P<a>.+?) \| (?P<right>measured|now|grouped graph) (?P<m>.+?) \| error (?P<error>.+)$"
)


def junit_of(out: Path) -> JUnitXml:
    path = out / "junit.xml"
    xmlschema.XMLSchema10(str(SCHEMA_FILE)).validate(str(path))
    return JUnitXml.fromfile(str(path))


def cases(xml: JUnitXml) -> dict[str, object]:
    return {case.name: case for suite in xml for case in suite}


def test_quick_matrix_passes(quick_gate):
    proc = quick_gate.proc
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert quick_gate.fail_lines == []
    assert "verify quick: PASSED: 2 jobs (2 passed, 0 failed)" in proc.stdout
    out = quick_gate.out
    for name in ("report.html", "report.md", "report.csv", "sweep.log", "sweep/multirun.yaml"):
        assert (out / name).is_file(), name
    assert sorted(p.name for p in (out / "sweep").iterdir() if p.is_dir()) == ["0", "1"]
    for job in ("0", "1"):  # the jobs verified their FLOPs and grouped their graphs
        assert (out / "sweep" / job / "verification.json").is_file()
        assert (out / "sweep" / job / "callgraph.grouped.json").is_file()


def test_quick_junit_has_one_case_per_job_and_per_pinned_mode(quick_gate):
    xml = junit_of(quick_gate.out)
    suite = next(iter(xml))
    assert (suite.name, suite.failures, suite.errors) == ("verify.quick", 0, 0)
    by_name = cases(xml)
    assert set(by_name) == {
        "job 0: workload=tiny",
        "job 1: workload=gundam",
        *(f"pinned analytic totals: {m}" for m in mode_names()),
    }
    job = by_name["job 1: workload=gundam"]
    assert job.classname == "verify.quick" and job.time > 0 and job.is_passed
    assert "max relative error 0%" in job.system_out and "grouping runtime checks: 9 ok" in job.system_out


def test_quick_report_has_the_jobs(quick_gate):
    csv = (quick_gate.out / "report.csv").read_text().splitlines()
    assert len(csv) == 1 + 2 and all(",ok," in row for row in csv[1:])


def test_an_analytic_model_of_another_spec_fails_the_gate(spec_divergence_gate):
    proc = spec_divergence_gate.proc
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = spec_divergence_gate.fail_lines
    assert lines, proc.stdout
    parsed = [LINE.match(line) for line in lines]
    assert all(parsed), [line for line, m in zip(lines, parsed) if m is None]
    # the MoE layers' experts are where the two specs differ: 3 experts per token analysed, 2 ran
    experts = [m for m in parsed if m["part"] == "model.layers.1.mlp.experts" and m["stage"] == "prefill"]
    assert experts and experts[0]["error"].startswith("50% > rtol 0.1%"), lines
    assert any(m["part"] == "(total)" and m["stage"] == "prefill" for m in parsed)
    assert any(m["stage"].startswith("decode (step ") for m in parsed)  # the decode steps diverge too
    assert {m["job"] for m in parsed} == {"job 0 [workload=tiny]"}
    assert "verify quick: FAILED: 1 jobs (0 passed, 1 failed)" in proc.stdout
    case = cases(junit_of(spec_divergence_gate.out))["job 0: workload=tiny"]
    assert [type(r) for r in case.result] == [Failure]
    assert case.result[0].type == "Divergence"
    assert case.result[0].text.splitlines() == lines  # the JUnit failure holds every line the console printed


def test_a_moved_pin_fails_the_gate_with_old_and_new_numbers(pin_divergence_gate, changed_expected):
    path, pinned, actual = changed_expected
    proc = pin_divergence_gate.proc
    assert proc.returncode == 1, proc.stderr[-3000:]
    lines = pin_divergence_gate.fail_lines
    assert len(lines) == 1, proc.stdout
    m = LINE.match(lines[0])
    assert m, lines[0]
    assert (m["job"], m["stage"], m["part"]) == ("pins tiny/letter_portrait", "prefill", "flops_matmul")
    assert (m["left"], m["a"], m["right"], m["m"]) == ("pinned", f"{pinned:,}", "now", f"{actual:,}")
    assert (
        f"{actual - pinned:+,}" in m["error"]
        and "verify.update_expected=true" in m["error"]
        and str(path) in m["error"]
    )
    assert "verify quick: FAILED: pins only (no job run), pinned totals " in proc.stdout
    by_name = cases(junit_of(pin_divergence_gate.out))
    assert set(by_name) == {f"pinned analytic totals: {m}" for m in mode_names()}  # no job ran
    assert not (pin_divergence_gate.out / "sweep").exists()
    assert [type(r) for r in by_name["pinned analytic totals: tiny"].result] == [Failure]
    passed = [m for m in mode_names() if m != "tiny" and by_name[f"pinned analytic totals: {m}"].is_passed]
    assert len(passed) == len(mode_names()) - 1


def test_the_pins_alone_pass_on_the_committed_file(tmp_path, capsys):
    """`verify.pins_only=true` with conf/verify/expected.yaml as committed: exit 0, one passing case per mode."""
    from llm_perf_opt.gate.run import main

    assert main(["verify=quick", "verify.pins_only=true", f"verify.out_dir={tmp_path}"]) == 0
    out = capsys.readouterr().out
    assert "verify quick: PASSED: pins only (no job run)" in out and "FAIL" not in out
    by_name = cases(junit_of(tmp_path))
    assert set(by_name) == {f"pinned analytic totals: {m}" for m in mode_names()}
    assert all(case.is_passed for case in by_name.values())

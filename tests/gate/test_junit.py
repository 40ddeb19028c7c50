"""The JUnit XML writer against the project's XSD (xmlschema) and an independent reader (junitparser).

The XSD (src/llm_perf_opt/report/junit.xsd) is the subset Jenkins' JUnit/xUnit plugins and GitLab's unit test
reports both read; these tests also show it refuses what those consumers would not take.
"""

from __future__ import annotations

import re

import pytest
import xmlschema
from junitparser import Error, Failure, JUnitXml, Skipped

from llm_perf_opt.gate.junit import SCHEMA_FILE, JUnitCase, Problem, junit_xml, write_junit, xml_text


@pytest.fixture(scope="module")
def schema() -> xmlschema.XMLSchema10:
    return xmlschema.XMLSchema10(str(SCHEMA_FILE))


def mixed_cases() -> list[JUnitCase]:
    return [
        JUnitCase("job 0: workload=tiny", "verify.quick", 9.5, stdout="FLOPs: 263 rows"),
        JUnitCase(
            "job 1: workload=gundam",
            "verify.quick",
            18.25,
            failures=[Problem("Divergence", "FAIL job 1 | stage prefill | ...", "line 1\nline 2")],
        ),
        JUnitCase(
            "job 2: workload=base",
            "verify.quick",
            None,
            errors=[Problem("JobFailed", "failed: ConfigError: workload.base_size=1000 ...", "Traceback ...")],
        ),
        JUnitCase("job 3: workload=large", "verify.quick", skipped="not run on purpose"),
        JUnitCase("pinned analytic totals: tiny", "verify.expected", 0.0),
    ]


def test_written_file_validates_and_reads_back_with_the_counts(tmp_path, schema):
    path = write_junit(tmp_path / "junit.xml", "verify.quick", mixed_cases(), properties={"matrix": "quick"})
    schema.validate(str(path))
    suites = list(JUnitXml.fromfile(str(path)))
    assert len(suites) == 1
    suite = suites[0]
    assert (suite.name, suite.tests, suite.failures, suite.errors, suite.skipped) == ("verify.quick", 5, 1, 1, 1)
    assert suite.time == pytest.approx(9.5 + 18.25)
    results = {case.name: [type(r) for r in case.result] for case in suite}
    assert results == {
        "job 0: workload=tiny": [],
        "job 1: workload=gundam": [Failure],
        "job 2: workload=base": [Error],
        "job 3: workload=large": [Skipped],
        "pinned analytic totals: tiny": [],
    }
    failing = next(c for c in suite if c.name == "job 1: workload=gundam")
    assert failing.result[0].message.startswith("FAIL job 1") and failing.result[0].text == "line 1\nline 2"
    assert failing.classname == "verify.quick"


def test_an_all_passing_suite(tmp_path, schema):
    path = write_junit(tmp_path / "ok.xml", "s", [JUnitCase("a", "c", 1.0), JUnitCase("b", "c", 2.0)])
    schema.validate(str(path))
    suite = next(iter(JUnitXml.fromfile(str(path))))
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (2, 0, 0, 0)


def test_control_characters_and_colours_are_cleaned(tmp_path, schema):
    dirty = "\x1b[31mred\x1b[0m traceback \x00 with \x07 bell"
    assert xml_text(dirty) == "red traceback ? with ? bell"
    path = write_junit(tmp_path / "j.xml", "s", [JUnitCase("t", "c", failures=[Problem("K", dirty, dirty)])])
    schema.validate(str(path))
    case = next(iter(next(iter(JUnitXml.fromfile(str(path))))))
    assert case.result[0].message == "red traceback ? with ? bell"


def test_duplicate_cases_are_refused():
    """GitLab keys a test by (classname, name) and drops repeats: the writer refuses to lose one."""
    with pytest.raises(ValueError, match="duplicate JUnit test case c / t"):
        junit_xml("s", [JUnitCase("t", "c"), JUnitCase("t", "c")])


GOOD = junit_xml("s", [JUnitCase("t", "c", 1.0, failures=[Problem("K", "m", "d")])], {"p": "v"}, timestamp=0)


@pytest.mark.parametrize(
    "breakage,why",
    [
        (
            lambda x: x.replace(
                '<testcase classname="c" name="t" time="1.000">',
                '<testcase classname="c" name="t" time="1.000"><properties><property name="a" value="b" />'
                "</properties>",
            ),
            "properties inside a testcase",
        ),
        (lambda x: re.sub(r'(<testsuite name="s" tests="1") failures="1"', r"\1", x), "a testsuite without failures"),
        (lambda x: x.replace('time="1.000">', 'time="1,5">'), "a time that is not a decimal"),
        (lambda x: x.replace('time="1.000">', 'time="-1">'), "a negative time"),
        (lambda x: x.replace('classname="c" name="t"', 'classname="c"'), "a testcase without a name"),
        (lambda x: x.replace('<failure type="K" message="m">', '<failure type="K">'), "a failure without a message"),
        (
            lambda x: x.replace("</testsuite>", '<testcase classname="c" name="t" time="0" /></testsuite>'),
            "a repeated (classname, name)",
        ),
        (lambda x: re.sub(r'timestamp="[^"]+"', 'timestamp="yesterday"', x), "a timestamp that is not ISO 8601"),
    ],
)
def test_the_schema_refuses_what_consumers_would_not_take(schema, breakage, why):
    schema.validate(GOOD)  # the untouched document is valid
    broken = breakage(GOOD)
    assert broken != GOOD, f"the breakage '{why}' did not apply"
    assert not schema.is_valid(broken), why

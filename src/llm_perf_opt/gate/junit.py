"""JUnit XML for CI systems: one test case per job of a verification sweep.

The file is what Jenkins (JUnit / xUnit plugins), GitLab (`artifacts:reports:junit`) and the GitHub
test-report actions read: `<testsuites>` -> one `<testsuite>` (counts, time, timestamp, properties) ->
one `<testcase>` per job, holding in this order an optional `<skipped>`, an `<error>` (the job did not
run to the end), a `<failure>` (the job ran, a check failed) and the job's notes in `<system-out>`.

What is written is exactly the subset described by `junit.xsd` beside this module (the project's own
schema, written from the consumers' public documentation; see its header): a test validates every file
the gate writes against it. GitLab keys a test by (classname, name) and drops repeats, so names must be
unique within a class: `write_junit` refuses duplicates. XML 1.0 cannot carry most control characters
(a traceback with terminal colours has them): text is cleaned before it is written.
"""

from __future__ import annotations

import re
import socket
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt.artifacts import atomic_write_text

SCHEMA_FILE = Path(__file__).with_name("junit.xsd")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """`text` without terminal escape sequences and without the characters XML 1.0 cannot hold."""
    return _NOT_XML.sub("?", _ANSI.sub("", str(text)))


@dataclass
class Problem:
    kind: str  # short type, e.g. "Divergence", "GroupingMismatch", "JobFailed"
    message: str  # one line
    detail: str = ""  # the longer text (every finding, a traceback tail)


@dataclass
class JUnitCase:
    name: str  # e.g. "job 3: workload=base page=slide"
    classname: str  # e.g. "verify.default"
    seconds: Optional[float] = None
    failures: list[Problem] = field(default_factory=list)
    errors: list[Problem] = field(default_factory=list)
    skipped: Optional[str] = None  # reason, when the job was not run on purpose
    stdout: str = ""  # (a test case has no <properties> in the schema CI systems validate against)

    @property
    def status(self) -> str:
        """error > failure > skipped > passed: the one outcome a CI system shows for the case."""
        if self.errors:
            return "error"
        if self.failures:
            return "failure"
        return "skipped" if self.skipped is not None else "passed"

    @property
    def passed(self) -> bool:
        return self.status == "passed"


def _seconds(value: Optional[float]) -> str:
    return f"{max(value or 0.0, 0.0):.3f}"


def _counts(cases: Sequence[JUnitCase]) -> dict[str, str]:
    statuses = [c.status for c in cases]
    return {
        "tests": str(len(cases)),
        "failures": str(statuses.count("failure")),
        "errors": str(statuses.count("error")),
        "skipped": str(statuses.count("skipped")),
        "time": _seconds(sum(c.seconds or 0.0 for c in cases)),
    }


def junit_xml(
    suite: str,
    cases: Sequence[JUnitCase],
    properties: Optional[dict[str, str]] = None,
    timestamp: Optional[float] = None,
) -> str:
    """The XML text of one suite holding `cases` (counts are per case: a case with an error counts as an
    error only, as JUnit runners count them)."""
    seen: set[tuple[str, str]] = set()
    for case in cases:
        key = (case.classname, case.name)
        if key in seen:
            raise ValueError(f"duplicate JUnit test case {case.classname} / {case.name}: CI systems keep only one")
        seen.add(key)
    counts = _counts(cases)
    root = ET.Element("testsuites", {"name": xml_text(suite), **counts})
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(timestamp if timestamp is not None else time.time()))
    ts = ET.SubElement(
        root,
        "testsuite",
        {"name": xml_text(suite), **counts, "timestamp": stamp, "hostname": socket.gethostname() or "localhost"},
    )
    if properties:
        props = ET.SubElement(ts, "properties")
        for key, value in properties.items():
            ET.SubElement(props, "property", {"name": xml_text(key), "value": xml_text(value)})
    for case in cases:
        tc = ET.SubElement(
            ts,
            "testcase",
            {"classname": xml_text(case.classname), "name": xml_text(case.name), "time": _seconds(case.seconds)},
        )
        if case.status == "skipped":
            ET.SubElement(tc, "skipped", {"message": xml_text(case.skipped or "")})
        for tag, problems in (("error", case.errors), ("failure", case.failures)):
            for p in problems:
                el = ET.SubElement(tc, tag, {"type": xml_text(p.kind), "message": xml_text(p.message)})
                el.text = xml_text(p.detail or p.message)
        if case.stdout:
            ET.SubElement(tc, "system-out").text = xml_text(case.stdout)
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(
    path: str | Path, suite: str, cases: Sequence[JUnitCase], properties: Optional[dict[str, str]] = None
) -> Path:
    """Write the suite atomically; returns the path."""
    return atomic_write_text(path, junit_xml(suite, cases, properties))

"""JUnit XML for CI systems: one test case per job of a verification sweep.

The file is what Jenkins (JUnit / xUnit plugins), GitLab (`artifacts:reports:junit`) and the GitHub
test-report actions read: `<testsuites>` → one `<testsuite>` (counts, time, timestamp, properties) →
one `<testcase>` per job, with a `<failure>` per divergence (the job ran, a check failed) or an
`<error>` (the job did not run to the end), and the job's one-line messages in `<system-out>`.
"""
from __future__ import annotations

import socket
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from llm_perf_opt.artifacts import atomic_write_text


@dataclass
class Problem:
    kind: str  # short type, e.g. "Divergence", "GroupingMismatch", "JobFailed"
    message: str  # one line
    detail: str = ""  # the longer text (rows, traceback tail)


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
    def passed(self) -> bool:
        return not self.failures and not self.errors and self.skipped is None


def _seconds(value: Optional[float]) -> str:
    return f"{max(value or 0.0, 0.0):.3f}"


def junit_xml(suite: str, cases: Sequence[JUnitCase], properties: Optional[dict[str, str]] = None,
              timestamp: Optional[float] = None) -> str:
    """The XML text of one suite holding `cases`."""
    failures = sum(1 for c in cases if c.failures and not c.errors)
    errors = sum(1 for c in cases if c.errors)
    skipped = sum(1 for c in cases if c.skipped is not None and not c.failures and not c.errors)
    total_time = sum(c.seconds or 0.0 for c in cases)
    counts = {"tests": str(len(cases)), "failures": str(failures), "errors": str(errors),
              "skipped": str(skipped), "time": _seconds(total_time)}
    root = ET.Element("testsuites", {"name": suite, **counts})
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(timestamp if timestamp is not None else time.time()))
    ts = ET.SubElement(root, "testsuite", {"name": suite, **counts, "timestamp": stamp,
                                           "hostname": socket.gethostname() or "localhost"})
    if properties:
        props = ET.SubElement(ts, "properties")
        for key, value in properties.items():
            ET.SubElement(props, "property", {"name": str(key), "value": str(value)})
    for case in cases:
        tc = ET.SubElement(ts, "testcase", {"classname": case.classname, "name": case.name,
                                            "time": _seconds(case.seconds)})
        for tag, problems in (("error", case.errors), ("failure", case.failures)):
            for p in problems:
                el = ET.SubElement(tc, tag, {"type": p.kind, "message": p.message})
                el.text = p.detail or p.message
        if case.skipped is not None and not case.failures and not case.errors:
            ET.SubElement(tc, "skipped", {"message": case.skipped})
        if case.stdout:
            ET.SubElement(tc, "system-out").text = case.stdout
    ET.indent(root, space="  ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: str | Path, suite: str, cases: Sequence[JUnitCase],
                properties: Optional[dict[str, str]] = None) -> Path:
    """Write the suite atomically; returns the path."""
    return atomic_write_text(path, junit_xml(suite, cases, properties))

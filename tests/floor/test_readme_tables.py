"""The README's exit-code and status tables say what the code does: the codes are `ExitCode`'s, the
statuses are the forms the report gives (`report.collect.STATUS_FORMS`); the tests that produce each
code and status are in this directory (test_bad_input, test_job_status, test_run_dirs) and tests/report."""
from __future__ import annotations

import re

from llm_perf_opt.errors import ExitCode
from llm_perf_opt.report.collect import STATUS_FORMS
from llm_perf_opt.run_artifacts import Summary

from .jobs import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")


def table_after(heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table after `heading`."""
    rest = README[README.index(heading):]
    rows, started = [], False
    for line in rest.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= {"-", ":"} for c in cells):
                rows.append(cells)
        elif started:
            break
    return rows[1:]  # without the header


def test_exit_code_table_matches_the_code():
    rows = table_after("### Exit codes")
    documented = {row[1].strip("`"): int(row[0]) for row in rows}
    assert documented == ExitCode.all()


def test_status_table_matches_the_report():
    rows = table_after("A job's status is:")
    documented = [row[0].strip("`") for row in rows]
    assert documented == list(STATUS_FORMS)


def test_summary_statuses_are_documented():
    section = README[README.index("`summary.json` is written as soon as"):README.index("## Config groups")]
    for status in Summary.STATUSES:
        assert re.search(rf"`{status}`", section), status

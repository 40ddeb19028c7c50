"""The docs site: `mkdocs build --strict` passes (a broken link or an unknown reference marker fails it), the
reference tables are generated from the code (a changed column changes the page), and the hand-written tables
that remain (report statuses, summary statuses) say what the code does."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

from llm_perf_opt.errors import ExitCode
from llm_perf_opt.report.collect import STATUS_FORMS
from llm_perf_opt.run_artifacts import Summary

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"


def reference_hook():
    spec = importlib.util.spec_from_file_location("docs_reference", DOCS / "hooks" / "reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table_after(text: str, heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first Markdown table after `heading`, without the header."""
    rest = text[text.index(heading) :]
    rows, started = [], False
    for line in rest.splitlines():
        if line.startswith("|"):
            started = True
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not all(set(c) <= {"-", ":"} for c in cells):
                rows.append(cells)
        elif started:
            break
    return rows[1:]


def test_the_site_builds_strictly(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr[-3000:]
    page = (tmp_path / "site" / "sweeps" / "index.html").read_text(encoding="utf-8")
    assert "flops_verified" in page  # the generated column table is on the built page
    assert "<!-- ref:" not in page


def test_every_marker_in_the_pages_has_a_table():
    hook = reference_hook()
    markers = [m for p in DOCS.glob("*.md") for m in hook.MARKER.findall(p.read_text(encoding="utf-8"))]
    assert len(markers) >= 7
    assert set(markers) == set(hook.TABLES)  # every table is used, every marker known
    with pytest.raises(KeyError, match="unknown reference marker"):
        hook.render("<!-- ref:no-such-table -->")


def test_a_changed_column_changes_the_page(monkeypatch):
    from llm_perf_opt.report import table

    hook = reference_hook()
    before = hook.render("<!-- ref:report-columns -->")
    rows_before = [line for line in before.splitlines() if line.startswith("| `")]
    assert len(rows_before) == len(table.COLUMNS)
    extra = table.Column("pages_per_joule", "pages/J", "float", "a column added by this test", lambda j: None)
    monkeypatch.setattr(table, "COLUMNS", [*table.COLUMNS[:-1], extra])
    after = hook.render("<!-- ref:report-columns -->")
    assert "`pages_per_joule`" in after and "a column added by this test" in after
    assert f"`{table.COLUMNS[-2].key}`" in after
    dropped = [line for line in rows_before if line not in after.splitlines()]
    assert len(dropped) == 1  # the column replaced by the test is gone from the page


def test_exit_codes_have_a_meaning_each():
    hook = reference_hook()
    rows = [
        line for line in hook.render("<!-- ref:exit-codes -->").splitlines() if line.startswith("| ") and "`" in line
    ]
    assert [int(r.split("|")[1]) for r in rows] == list(ExitCode.all().values())
    assert all(ExitCode.meaning(name) for name in ExitCode.all())


def test_status_table_matches_the_report():
    rows = table_after((DOCS / "sweeps.md").read_text(encoding="utf-8"), "A job's status is:")
    assert [row[0].strip("`") for row in rows] == list(STATUS_FORMS)


def test_summary_statuses_are_documented():
    text = (DOCS / "outputs.md").read_text(encoding="utf-8")
    section = text[text.index("`summary.json` is written as soon as") :]
    found = [s for s in Summary.STATUSES if re.search(rf"`{s}`", section)]
    assert found == list(Summary.STATUSES)


def test_family_report_columns_are_listed_per_family():
    from llm_perf_opt import families

    text = reference_hook().render("<!-- ref:family-report-columns -->")
    compared = 0
    for name in families.names():
        own = families.family(name).report_columns()
        rows = [line for line in text.splitlines() if f"(`{name}`)" in line]
        assert len(rows) == max(1, len(own)), name  # a family without columns of its own: one "(none)" row
        for col in own:
            assert any(line.startswith(f"| `{col.key}` |") and col.doc in line for line in rows), col.key
            compared += 1
    assert compared >= 1  # DeepSeek-OCR 2's encoder columns at least

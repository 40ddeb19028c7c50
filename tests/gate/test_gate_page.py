"""The gate's own page, `verify.html` (issue 33, item 5): `./dev verify` points to it; it opens with the verdict, lists
every FAIL line the console printed as a row, each job of the matrix and the pinned totals with the moved one marked.
On real runs of the gate (tests/gate/conftest.py, tests/conftest.py `quick_gate`); the page in a real browser
(Playwright on the system's chromium) sorts and filters its tables, fits the screen and fetches nothing."""

from __future__ import annotations

import pytest
from browser import WIDER_THAN_VIEWPORT, offline_page

from llm_perf_opt.dsocr.parts import mode_names
from llm_perf_opt.gate.page import GATE_PAGE
from llm_perf_opt.gate.pins import COUNTS, STAGES

pytestmark = pytest.mark.slow


def _report_line(stdout: str) -> str:
    (line,) = [x for x in stdout.splitlines() if x.startswith("  report ")]
    return line.split(None, 1)[1]


def test_a_moved_pin_is_a_failing_row_of_the_page(pin_divergence_gate, changed_expected):
    _, pinned, actual = changed_expected
    gate = pin_divergence_gate
    assert _report_line(gate.proc.stdout) == str(gate.out / GATE_PAGE)
    n_pins = len(mode_names()) * len(STAGES) * len(COUNTS) * 2  # two page shapes per mode (conf/verify/expected.yaml)
    with offline_page(1366, 768) as (page, errors, foreign):
        page.goto((gate.out / GATE_PAGE).as_uri(), wait_until="load")
        assert page.inner_text("#verdict").startswith("FAILED")
        rows = page.eval_on_selector_all("table#fails tbody tr", "els => els.map(e => e.innerText)")
        assert len(rows) == len(gate.fail_lines) == 1
        assert "tiny/letter_portrait" in rows[0] and f"{pinned:,}" in rows[0] and f"{actual:,}" in rows[0]
        assert page.locator("table#pinned tbody tr").count() == n_pins
        assert page.locator("table#pinned tbody tr.failed").count() == 1
        # sort the totals by their value, largest first: the first row holds the largest number
        now = "table#pinned th:text-is('now')"
        page.click(now)
        page.click(now)
        values = page.eval_on_selector_all("table#pinned tbody tr td:nth-child(5)", "els => els.map(e => +e.dataset.v)")
        assert len(values) == n_pins and values == sorted(values, reverse=True) and values[0] > values[-1]
        # filter: one mode's rows
        page.fill(".tabletools:has(+ .tablewrap table#pinned) input[type=search]", "gundam_m")
        shown = page.eval_on_selector_all(
            "table#pinned tbody tr", "els => els.filter(e => !e.hidden).map(e => e.cells[0].innerText)"
        )
        assert shown and set(shown) == {"gundam_m"} and len(shown) < n_pins
        scroll, inner, wide = page.evaluate(WIDER_THAN_VIEWPORT)
        assert scroll <= inner and wide == []
        assert errors == [] and foreign == []


def test_the_quick_gate_page_says_passed_with_its_jobs(quick_gate):
    assert _report_line(quick_gate.proc.stdout) == str(quick_gate.out / GATE_PAGE)
    html = (quick_gate.out / GATE_PAGE).read_text(encoding="utf-8")
    assert "<title>Verification gate quick: PASSED</title>" in html and 'id="no-failures"' in html
    for w, h in ((1366, 768), (1920, 1080)):
        with offline_page(w, h) as (page, errors, foreign):
            page.goto((quick_gate.out / GATE_PAGE).as_uri(), wait_until="load")
            assert page.inner_text("#verdict").startswith("PASSED")
            jobs = page.eval_on_selector_all("table#gate-jobs tbody tr", "els => els.map(e => e.innerText)")
            assert len(jobs) == 2 and all("passed" in j for j in jobs)
            assert page.get_attribute("a:text-is('sweep report')", "href") == "report.html"
            scroll, inner, wide = page.evaluate(WIDER_THAN_VIEWPORT)
            assert scroll <= inner and wide == [], (w, wide)
            assert errors == [] and foreign == []

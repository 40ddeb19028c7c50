"""The gate's own page, `verify.html` in `verify.out_dir`: the verdict first (PASSED or FAILED, and why in one
line), then every failing row (the six fields of its FAIL line, as the console printed them), each job of the matrix
with what it checked, and the pinned analytic totals as they are now (a moved one marked, with its pinned number).
One self-contained file (report/templates/gate.html.j2: inline CSS and script, sortable and filterable tables),
linking the sweep's report (`report.html`), `junit.xml` and `sweep.log` beside it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from llm_perf_opt.artifacts import atomic_write_text
from llm_perf_opt.gate import pins
from llm_perf_opt.gate.judge import Finding, JobVerdict

GATE_PAGE = "verify.html"


@dataclass
class GatePage:
    """What the page shows; `pinned`: the pins as computed now ({mode: {page: entry}}), `moved`: the findings
    of the pins that moved (their pinned number in `analytic`)."""

    matrix: str
    passed: bool
    counts: str  # the console's verdict line after "PASSED: " / "FAILED: "
    out_dir: Path
    verdicts: Sequence[JobVerdict] = ()
    others: Sequence[Finding] = ()  # findings outside a job: the sweep, the report, the pins
    pinned: Mapping[str, Any] = field(default_factory=dict)
    expected: str = ""
    arguments: Sequence[str] = ()
    pins_only: bool = False
    links: Sequence[tuple[str, str]] = ()  # (label, href relative to the page)


def failing_rows(page: GatePage) -> list[Finding]:
    return [f for v in page.verdicts for f in v.findings] + list(page.others)


def pin_rows(page: GatePage) -> list[dict[str, Any]]:
    """One row per pinned figure as now computed: mode, page, stage, count, value, and the pinned value where it
    moved."""
    moved = {(f.job.split()[1], f.stage, f.part): f.analytic for f in page.others if f.kind == "PinMoved"}
    rows = []
    for (mode, shape, stage, count), value in pins.pins_of(page.pinned).items():
        was = moved.get((f"{mode}/{shape}", stage, count))
        rows.append(
            {"mode": mode, "page": shape, "stage": stage, "count": count, "value": value, "pinned": was, "moved": was}
        )
    for f in page.others:  # pinned but no longer computed: a row of its own
        if f.kind == "PinMoved" and f.measured == "—":
            mode, shape = f.job.split()[1].split("/", 1)
            rows.append({"mode": mode, "page": shape, "stage": f.stage, "count": f.part, "value": None,
                         "pinned": f.analytic, "moved": f.analytic})  # fmt: skip
    return rows


def write_gate_page(page: GatePage) -> Path:
    from llm_perf_opt.report.render import render_page

    fails = failing_rows(page)
    html = render_page(
        "gate.html.j2",
        title=f"Verification gate {page.matrix}: {'PASSED' if page.passed else 'FAILED'}",
        page=page,
        fails=fails,
        pin_rows=pin_rows(page),
        generated=time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    return atomic_write_text(page.out_dir / GATE_PAGE, html)


def links_of(out_dir: Path, names: Sequence[tuple[str, str]]) -> list[tuple[str, str]]:
    """(label, file name) of the files that exist in `out_dir`."""
    return [(label, name) for label, name in names if (out_dir / name).exists()]

"""Report columns of a model family's own (`ModelFamily.report_columns`, `report.table.family_columns`): a sweep of
DeepSeek-OCR 2 runs shows its encoder columns with the values its pages give; a v1 sweep does not show them; in a
report over jobs of both families, a v1 job's cell of an OCR-2 column is empty."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from job_scripts import run_job_in_process

pytestmark = pytest.mark.slow
FAST = ("trace=forward_only", "profile=off", "~hardware")  # the session, the inputs, one forward: a layout
# OCR-2 default mode: a page with both sides <= 768 has no crops; a 2:1 page of 1536x768 is two 768-px tiles
OCR2_PAGES = {0: (700, 768), 2: (2 * 768, 768)}
GLOBAL_SIDE, CROP_SIDE, PATCH, DOWNSAMPLE = 1024, 768, 16, 4  # SAM: 16-px patches, then two stride-2 convs


def run_sweep(sweep_dir: Path, *overrides: str):
    """`./dev sweep OVERRIDES hydra.sweep.dir=SWEEP_DIR` in this process (the jobs' files are what is read)."""
    return run_job_in_process("sweep", *overrides, f"hydra.sweep.dir={sweep_dir}")


def run_report(*args):
    """`./dev report ARGS` in this process."""
    return run_job_in_process("report", *args)


def _rows(csv_path: Path) -> list[dict[str, str]]:
    with open(csv_path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def two_sweeps(tmp_path_factory):
    root = tmp_path_factory.mktemp("family_columns")
    widths = ",".join(str(w) for w, _ in OCR2_PAGES.values())  # one height: the sweep is over widths only
    ocr2 = run_sweep(
        root / "ocr2",
        "model=ocr2_twin_tiny",
        "workload=ocr2/default",
        *FAST,
        f"workload.page.width={widths}",
        "workload.page.height=768",
    )
    assert ocr2.returncode == 0, ocr2.stderr[-3000:]
    v1 = run_sweep(root / "v1", "model=twin_tiny", "workload=small", *FAST)
    assert v1.returncode == 0, v1.stderr[-3000:]
    return root / "ocr2", root / "v1"


def test_ocr2_sweep_report_has_the_encoder_query_column(two_sweeps):
    ocr2, _ = two_sweeps
    proc = run_report(ocr2, "--no-plots")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = _rows(ocr2 / "report.csv")
    per_global = (GLOBAL_SIDE // PATCH // DOWNSAMPLE) ** 2  # 256 queries of the 1024-px view
    per_crop = (CROP_SIDE // PATCH // DOWNSAMPLE) ** 2  # 144 per 768-px crop
    checked = 0
    for row in rows:
        if row["grid"] == "1x1":
            crops = 0
        else:
            across, down = map(int, row["grid"].split("x"))
            crops = across * down
        assert (int(row["page_width"]), int(row["page_height"])) == OCR2_PAGES[crops]
        assert int(row["encoder_queries"]) == per_global + per_crop * crops
        assert int(row["encoder_positions"]) == 2 * (per_global + per_crop * crops)
        checked += 1
    assert checked == len(OCR2_PAGES) and {r["grid"] for r in rows} == {"1x1", "2x1"}
    header = next(
        line for line in (ocr2 / "report.md").read_text(encoding="utf-8").splitlines() if line.startswith("| job")
    )
    assert "encoder queries" in header and "encoder positions" not in header  # the CSV has both


def test_v1_sweep_report_has_no_ocr2_column_and_mixed_jobs_leave_it_empty(two_sweeps, tmp_path):
    from llm_perf_opt.families import family
    from llm_perf_opt.report.sweep import build_sweep_report

    ocr2, v1 = two_sweeps
    proc = run_report(v1, "--no-plots")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows = _rows(v1 / "report.csv")
    assert (
        len(rows) == 1 and "encoder_queries" not in rows[0] and "encoder queries" not in (v1 / "report.md").read_text()
    )
    # one directory holding a v1 job and an OCR-2 job: the column comes from the OCR-2 job's family only
    mixed = tmp_path / "mixed"
    shutil.copytree(v1 / "0", mixed / "0")
    shutil.copy(v1 / "multirun.yaml", mixed / "multirun.yaml")
    shutil.copytree(ocr2 / "1", mixed / "1")
    rep = build_sweep_report(mixed, plots=False, family=family("dsocr"), family_named=family)
    by_model = {r["model"]: r for r in rep.rows}
    assert set(by_model) == {"twin_tiny", "ocr2_twin_tiny"}
    assert by_model["twin_tiny"]["encoder_queries"] is None
    assert by_model["ocr2_twin_tiny"]["encoder_queries"] == 256 + 144 * 2

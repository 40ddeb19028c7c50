"""The HTML reports in a real headless browser (Playwright driving the system's chromium): the page loads
with no console errors, every plot renders with a real size and its text, the PNG files it links load as
images, the job table is there, and a screenshot of it is not blank. See `browser.py` for which chromium
runs and when a missing one skips."""

from __future__ import annotations

from pathlib import Path

from browser import browser_page

from llm_perf_opt.dsocr.family import FAMILY
from llm_perf_opt.report.analytic_sweep import build_analytic_report

from .conftest import run_report

# Run in the page after it loaded: loads every linked PNG as an <img> and reports what rendered.
PROBE = """
async () => {
  const links = [...document.querySelectorAll('a[href$=".png"]')].map(a => a.getAttribute('href'));
  const loads = links.map(href => new Promise(done => {
    const img = new Image();
    img.onload = () => done(img.naturalWidth > 0 ? null : href);
    img.onerror = () => done(href);
    img.src = href;
  }));
  const broken = (await Promise.all(loads)).filter(x => x !== null);
  const svgs = [...document.querySelectorAll('figure svg')];
  const sized = svgs.filter(s => { const r = s.getBoundingClientRect(); return r.width > 100 && r.height > 100; });
  const texts = svgs.map(s => s.querySelectorAll('text').length);
  return {svgs: svgs.length, sized: sized.length, min_texts: Math.min(...texts), imgs: links.length, broken,
          rows: document.querySelectorAll('table tbody tr').length, title: document.title};
}
"""


def probe(page_file: Path, screenshot: Path | None = None) -> tuple[dict, list[str]]:
    with browser_page() as (page, errors):
        page.goto(page_file.as_uri(), wait_until="load")
        seen = page.evaluate(PROBE)
        if screenshot is not None:
            page.screenshot(path=str(screenshot), full_page=True)
    return seen, errors


def assert_not_blank(png: Path) -> None:
    import numpy as np
    from PIL import Image

    pixels = np.asarray(Image.open(png).convert("RGB"), dtype=np.int32).reshape(-1, 3)
    non_white = float((pixels.sum(axis=1) < 720).mean())
    colours = len(np.unique(pixels[:: max(1, len(pixels) // 200_000)], axis=0))
    assert non_white > 0.03, f"{png}: only {non_white:.1%} of the screenshot is not white"
    assert colours > 50, f"{png}: {colours} colours, the plots did not render"


def test_sweep_report_renders_in_chromium(ok_sweep):
    sweep, _ = ok_sweep
    assert run_report(sweep).returncode == 0
    shot = sweep / "report.screenshot.png"
    seen, errors = probe(sweep / "report.html", shot)
    n_plots = len(list((sweep / "report_plots").glob("*.svg")))
    assert n_plots >= 3
    assert seen["svgs"] == seen["sized"] == n_plots, seen
    assert seen["min_texts"] > 3, seen  # axis labels and ticks are text
    assert seen["imgs"] == n_plots and seen["broken"] == [], seen
    assert seen["rows"] == 2 and seen["title"].startswith("Sweep report")
    assert errors == []
    assert_not_blank(shot)


def test_the_probe_sees_a_broken_image(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text(
        '<html><body><figure><svg width="200" height="200"><text>x</text></svg></figure>'
        '<a href="missing.png">png</a></body></html>'
    )
    seen, _ = probe(page)
    assert seen["broken"] == ["missing.png"] and seen["sized"] == 1


def test_the_browser_reports_console_errors(tmp_path):
    page = tmp_path / "error.html"
    page.write_text("<html><body><script>console.error('boom'); undefinedFunction();</script></body></html>")
    _, errors = probe(page)
    assert "boom" in errors and any("undefinedFunction" in e for e in errors)


def test_analytic_report_renders_in_chromium(tmp_path):
    rep = build_analytic_report(tmp_path, modes=["tiny", "base", "gundam"], n=8, family=FAMILY)
    shot = tmp_path / "analytic.screenshot.png"
    seen, errors = probe(rep.html, shot)
    # 5 plots of tokens and FLOPs + 2 of the predicted time to first token (default hardware: h100_sxm)
    assert seen["svgs"] == seen["sized"] == 7 and seen["broken"] == [] and seen["imgs"] == 7, seen
    # four preset tables (tokens, FLOPs, TTFT on h100_sxm, pages per day on h100_sxm), eight page presets each
    assert seen["rows"] == 4 * 8
    assert errors == []
    assert_not_blank(shot)


def test_sweep_report_leads_with_plots_and_a_compact_job_table(ok_sweep, tmp_path):
    """The plots come first; the job table opens with its job and time column groups (the rest one tick away), sorts
    and filters its rows; the glossary is folded; nothing is wider than the screen, nothing is fetched."""
    from browser import WIDER_THAN_VIEWPORT, offline_page

    sweep, _ = ok_sweep
    out = tmp_path / "report"
    assert run_report(sweep, "--out", out).returncode == 0
    for w, h in ((1366, 768), (1920, 1080)):
        with offline_page(w, h) as (page, errors, foreign):
            page.goto((out / "report.html").as_uri(), wait_until="load")
            order = page.eval_on_selector_all("h2", "els => els.map(e => e.textContent)")
            assert order.index("Plots") < order.index("Jobs") < order.index("Columns")
            assert page.locator("details.glossary").count() == 1 and not page.is_visible("details.glossary dl")
            visible = "els => els.filter(e => e.offsetParent !== null).map(e => e.textContent.trim())"
            shown = page.eval_on_selector_all("table thead th", visible)
            groups = page.eval_on_selector_all(".tablegroups input", "els => els.map(e => [e.value, e.checked])")
            assert [g for g, on in groups if on] == ["job", "time"] and len(groups) >= 4
            assert shown[:2] == ["job", "status"] and len(shown) < 30
            page.check(".tablegroups input[value='FLOPs']")
            assert len(page.eval_on_selector_all("table thead th", visible)) > len(shown)
            jobs = "els => els.filter(e => !e.hidden).map(e => e.cells[0].innerText)"
            assert page.eval_on_selector_all("table tbody tr", jobs) == ["0", "1"]
            page.click("table thead th:text-is('job')")
            page.click("table thead th:text-is('job')")  # descending
            assert page.eval_on_selector_all("table tbody tr", jobs) == ["1", "0"]
            page.fill(".tabletools input[type=search]", "gundam")
            assert page.eval_on_selector_all("table tbody tr", jobs) == ["1"]
            scroll, inner, wide = page.evaluate(WIDER_THAN_VIEWPORT)
            assert scroll <= inner and wide == [], (w, wide)
            assert errors == [] and foreign == []

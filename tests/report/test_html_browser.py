"""The HTML reports in a real headless browser (Debian's chromium): the page loads, every plot renders
with a real size, the PNG files it links load as images, the job table is there, and a screenshot of
it is not blank. Skipped where chromium is absent."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from llm_perf_opt.report.analytic_sweep import build_analytic_report

from .conftest import run_report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install -y chromium)")

# Appended to a copy of the page (same directory, so relative links resolve): loads every linked PNG
# as an <img>, then after the load event records what rendered in a data attribute of <body>.
PROBE = """
<script>
document.addEventListener('DOMContentLoaded', () => {
  for (const a of document.querySelectorAll('a[href$=".png"]')) {
    const img = document.createElement('img'); img.src = a.getAttribute('href'); img.className = 'probe';
    img.style.width = '10px'; document.body.appendChild(img);
  }
});
window.addEventListener('load', () => {
  const svgs = [...document.querySelectorAll('figure svg')];
  const sized = svgs.filter(s => { const r = s.getBoundingClientRect(); return r.width > 100 && r.height > 100; });
  const texts = svgs.map(s => s.querySelectorAll('text').length);
  const imgs = [...document.querySelectorAll('img.probe')];
  const broken = imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src'));
  document.body.setAttribute('data-probe', JSON.stringify({
    svgs: svgs.length, sized: sized.length, min_texts: Math.min(...texts), imgs: imgs.length, broken,
    rows: document.querySelectorAll('table tbody tr').length, title: document.title}));
});
</script>
"""


def chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--disable-background-networking", f"--user-data-dir={profile}", *args],
            capture_output=True, text=True, timeout=120)


def probe(page: Path) -> dict:
    copy = page.with_name(page.stem + ".probe.html")
    copy.write_text(page.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>"), encoding="utf-8")
    try:
        proc = chromium("--allow-file-access-from-files", "--virtual-time-budget=5000", "--dump-dom", copy.as_uri())
    finally:
        copy.unlink()
    match = re.search(r'data-probe="([^"]*)"', proc.stdout)
    assert match, f"the page did not finish loading in chromium: {proc.stderr[-2000:]}"
    return json.loads(match.group(1).replace("&quot;", '"').replace("&amp;", "&"))


def screenshot(page: Path, out: Path, height: int = 2400) -> Path:
    proc = chromium(f"--window-size=1300,{height}", "--hide-scrollbars", f"--screenshot={out}", page.as_uri())
    assert out.is_file(), proc.stderr[-2000:]
    return out


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
    page = sweep / "report.html"
    seen = probe(page)
    n_plots = len(list((sweep / "report_plots").glob("*.svg")))
    assert n_plots >= 3
    assert seen["svgs"] == seen["sized"] == n_plots, seen
    assert seen["min_texts"] > 3, seen  # axis labels and ticks are text
    assert seen["imgs"] == n_plots and seen["broken"] == [], seen
    assert seen["rows"] == 2 and seen["title"].startswith("Sweep report")
    shot = screenshot(page, sweep / "report.screenshot.png")
    assert_not_blank(shot)


def test_the_probe_sees_a_broken_image(tmp_path):
    page = tmp_path / "broken.html"
    page.write_text('<html><body><figure><svg width="200" height="200"><text>x</text></svg></figure>'
                    '<a href="missing.png">png</a></body></html>')
    seen = probe(page)
    assert seen["broken"] == ["missing.png"] and seen["sized"] == 1


def test_analytic_report_renders_in_chromium(tmp_path):
    rep = build_analytic_report(tmp_path, modes=["tiny", "base", "gundam"], n=8)
    seen = probe(rep.html)
    # 5 plots of tokens and FLOPs + 2 of the predicted time to first token (default hardware: h100_sxm)
    assert seen["svgs"] == seen["sized"] == 7 and seen["broken"] == [] and seen["imgs"] == 7, seen
    assert seen["rows"] == 3 * 8  # three preset tables (tokens, FLOPs, TTFT on h100_sxm), eight page presets
    assert_not_blank(screenshot(rep.html, tmp_path / "analytic.screenshot.png", height=3200))

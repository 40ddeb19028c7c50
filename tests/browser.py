"""The real tools of the page and diagram tests: Playwright driving the system's chromium (no browser
download), and mermaid-cli rendering with that chromium.

Which chromium: $CHROMIUM (`./dev test` exports the one it found or installed; CI runners name their
google-chrome there), else `chromium` / `chromium-browser` on the PATH. Without one the browser tests
skip, saying how to get it, except under CI (`CI` set), where a missing browser is a failure: CI must
run them.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import pytest

HOW = (
    "run `./dev test` as root (it installs Debian's chromium with apt), or `sudo apt-get install chromium`, "
    "or set CHROMIUM=/path/to/chrome"
)


def chromium_executable() -> Optional[str]:
    named = os.environ.get("CHROMIUM")
    if named:
        return shutil.which(named)
    return shutil.which("chromium") or shutil.which("chromium-browser")


MMDC_HOW = (
    "run `./dev test` (it installs @mermaid-js/mermaid-cli with npm and exports MMDC and "
    "MMDC_PUPPETEER_CONFIG), or set MMDC=/path/to/mmdc"
)


def require(found: Optional[object], what: str, how: str = HOW) -> None:
    """Skip (or, under CI, fail) when `found` is None, saying what is missing and how to install it."""
    if found is not None:
        return
    message = f"{what} is not available: {how}"
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI must run the browser tests)")
    pytest.skip(message)


@contextmanager
def chromium_browser() -> Iterator[object]:
    """A headless chromium (Playwright's Browser) for the length of the block: the one the tests of the running
    module share (`shared_browser`); the pages and contexts the block opened are closed when it ends."""
    browser = shared_browser()
    try:
        yield browser
    finally:
        for context in list(browser.contexts):
            context.close()


_SHARED: dict[str, object] = {}  # "playwright", "browser": the chromium of the module running in this process


def shared_browser() -> object:
    """The headless chromium of the test module running: launched at the module's first use, closed by
    `close_shared_browser` when this process moves on to another module (tests/conftest.py's teardown hook), so a
    module's page tests start one browser between them, not one each. Playwright's sync API holds an event loop in
    the thread while it runs (no other of its loops can start, nor can `asyncio.run`): one module at a time."""
    exe = chromium_executable()
    require(exe, f"chromium{' ($CHROMIUM=' + os.environ['CHROMIUM'] + ')' if os.environ.get('CHROMIUM') else ''}")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the 'test' extra)")
    if "browser" not in _SHARED:
        playwright = sync_api.sync_playwright().start()
        try:
            browser = playwright.chromium.launch(
                executable_path=exe,
                args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--disable-background-networking"],
            )
        except BaseException:
            playwright.stop()
            raise
        _SHARED.update(playwright=playwright, browser=browser)
    return _SHARED["browser"]


def close_shared_browser() -> None:
    """Close the module's chromium and stop Playwright (nothing when none was started)."""
    browser, playwright = _SHARED.pop("browser", None), _SHARED.pop("playwright", None)
    try:
        if browser is not None:
            browser.close()
    finally:
        if playwright is not None:
            playwright.stop()


@contextmanager
def browser_page(width: int = 1300, height: int = 900) -> Iterator[tuple[object, list[str]]]:
    """(page, console errors): a fresh page (its own context) in the module's chromium (`shared_browser`); every
    console error and page error lands in the list."""
    with chromium_browser() as browser:
        page = browser.new_page(viewport={"width": width, "height": height})
        errors: list[str] = []
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        yield page, errors


LOCAL = ("file:", "data:", "about:", "blob:")
# Run in a page: (the page's width, the viewport's, what sticks out of it beyond 1 px: at most 10, tag#id.class)
WIDER_THAN_VIEWPORT = """() => { const vw = document.documentElement.clientWidth, out = [];
  document.querySelectorAll('body *').forEach(e => { const r = e.getBoundingClientRect();
    if (r.width > 0 && r.right > vw + 1 && !e.closest('.tablewrap, #graph'))
      out.push(e.tagName.toLowerCase() + '#' + e.id + '.' + (e.getAttribute('class') || '')); });
  return [document.documentElement.scrollWidth, window.innerWidth, out.slice(0, 10)]; }"""


@contextmanager
def offline_page(width: int = 1300, height: int = 900) -> Iterator[tuple[object, list[str], list[str]]]:
    """(page, console errors, requests that left the machine): `browser_page` plus every request whose URL is not
    file:, data:, about: or blob: (a self-contained page fetches nothing)."""
    with browser_page(width, height) as (page, errors):
        foreign: list[str] = []
        page.on("request", lambda r: foreign.append(r.url) if not r.url.startswith(LOCAL) else None)
        yield page, errors, foreign


def mermaid_cli() -> tuple[str, str]:
    """(mmdc, puppeteer config): $MMDC and $MMDC_PUPPETEER_CONFIG as `./dev test` exports them; without a
    config, one for the system chromium is written. Missing: skip, or fail under CI."""
    exe = os.environ.get("MMDC")
    found = exe if exe and (Path(exe).is_file() or shutil.which(exe)) else None
    require(found, f"mermaid-cli{' ($MMDC=' + exe + ')' if exe else ''}", MMDC_HOW)
    cfg = os.environ.get("MMDC_PUPPETEER_CONFIG")
    if not cfg:
        chromium = chromium_executable()
        require(chromium, "chromium (mermaid-cli renders with it)")
        cfg_path = Path(os.environ.get("TMPDIR", "/tmp")) / "llm_perf_opt_puppeteer.json"
        cfg_path.write_text(
            json.dumps(
                {
                    "executablePath": chromium,
                    "headless": "shell",
                    "args": ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
                }
            )
        )
        cfg = str(cfg_path)
    return str(found), cfg


def run_mmdc(found: tuple[str, str], src: Path, out: Path) -> None:
    """Render with mermaid-cli; fail on a parse error. A browser that cannot start (a loaded machine) is
    retried once; the diagram is only judged on what the parser says."""
    exe, cfg = found
    for attempt in (1, 2):
        proc = subprocess.run(
            [exe, "-p", cfg, "-i", str(src), "-o", str(out)], capture_output=True, text=True, timeout=180
        )
        if proc.returncode == 0:
            assert "<svg" in out.read_text()
            return
        text = proc.stdout + proc.stderr
        if "Parse error" in text or "Lexical error" in text or attempt == 2:
            pytest.fail(f"mermaid-cli rejected {src.name}:\n{text[-3000:]}")

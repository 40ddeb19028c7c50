"""A real browser for the tests: Playwright driving the system's chromium (no browser download).

Which chromium: $CHROMIUM (`./dev test` exports the one it found or installed; CI runners name their
google-chrome there), else `chromium` / `chromium-browser` on the PATH. Without one the browser tests
skip, saying how to get it, except under CI (`CI` set), where a missing browser is a failure: CI must
run them.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from typing import Iterator, Optional

import pytest

HOW = ("run `./dev test` as root (it installs Debian's chromium with apt), or `sudo apt-get install chromium`, "
       "or set CHROMIUM=/path/to/chrome")


def chromium_executable() -> Optional[str]:
    named = os.environ.get("CHROMIUM")
    if named:
        return shutil.which(named)
    return shutil.which("chromium") or shutil.which("chromium-browser")


def require(found: Optional[object], what: str) -> None:
    """Skip (or, under CI, fail) when `found` is None, saying what is missing and how to install it."""
    if found is not None:
        return
    message = f"{what} is not available: {HOW}"
    if os.environ.get("CI"):
        pytest.fail(f"{message} (CI must run the browser tests)")
    pytest.skip(message)


@contextmanager
def browser_page(width: int = 1300, height: int = 900) -> Iterator[tuple[object, list[str]]]:
    """(page, console errors): a fresh headless chromium page; every console error and page error lands in
    the list."""
    exe = chromium_executable()
    require(exe, f"chromium{' ($CHROMIUM=' + os.environ['CHROMIUM'] + ')' if os.environ.get('CHROMIUM') else ''}")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (the 'test' extra)")
    with sync_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=["--no-sandbox", "--disable-dev-shm-usage",
                                                               "--disable-gpu", "--disable-background-networking"])
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            errors: list[str] = []
            page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            yield page, errors
        finally:
            browser.close()

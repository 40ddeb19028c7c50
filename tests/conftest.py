"""Shared fixtures: where the vendor code is (opt-in), CUDA availability, a real browser."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
if str(TESTS) not in sys.path:  # --import-mode=importlib: the shared helpers (browser.py) import as top level
    sys.path.insert(0, str(TESTS))


@pytest.fixture
def browser():
    """A headless chromium through Playwright on the system's browser (`browser.py`: which one, and why a
    missing one skips here and fails under CI). Per test: Playwright's sync API allows one at a time."""
    from browser import chromium_browser

    with chromium_browser() as b:
        yield b


@pytest.fixture(scope="session")
def vendor_dir() -> Path:
    """The vendor model directory from DSOCR_MODEL_PATH; tests that need it skip without it."""
    path = os.environ.get("DSOCR_MODEL_PATH")
    if not path:
        pytest.skip("DSOCR_MODEL_PATH is not set (vendor code not available; see the README's Vendor model section)")
    p = Path(path)
    if not (p / "modeling_deepseekocr.py").is_file():
        pytest.skip(f"DSOCR_MODEL_PATH={path} has no modeling_deepseekocr.py")
    return p

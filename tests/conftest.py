"""Shared fixtures: where the vendor code is (opt-in), CUDA availability."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


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

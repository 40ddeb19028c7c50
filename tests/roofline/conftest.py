"""Roofline test support: helpers on the import path, a fixture asserting nothing was written."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # --import-mode=importlib: make roofline_helpers importable
    sys.path.insert(0, str(HERE))


@pytest.fixture
def no_files_under():
    """Asserts a directory holds no file (it may not exist at all)."""

    def check(path: Path) -> None:
        found = [p for p in Path(path).rglob("*") if p.is_file()] if Path(path).exists() else []
        assert found == [], f"files were written: {found}"

    return check

"""Call-graph test support: helpers on the import path, golden-file comparison and regeneration.

Regenerate the golden files with `UPDATE_GOLDEN=1 ./dev test tests/callgraph` (or
`./dev test tests/callgraph --update-golden`; pytest only accepts that option when tests/callgraph is
named on the command line, because options come from the conftests it loads first).
"""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GOLDEN_DIR = HERE / "golden"
if str(HERE) not in sys.path:  # --import-mode=importlib: make callgraph_helpers importable
    sys.path.insert(0, str(HERE))


def pytest_addoption(parser):
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="rewrite tests/callgraph/golden/* from the current output instead of comparing",
    )


def _update_requested(config) -> bool:
    if os.environ.get("UPDATE_GOLDEN", "") not in ("", "0"):
        return True
    try:
        return bool(config.getoption("--update-golden"))
    except ValueError:
        return False


@pytest.fixture
def golden(request):
    """golden(name, text): compare `text` with tests/callgraph/golden/<name>, or rewrite it when asked."""
    update = _update_requested(request.config)

    def check(name: str, text: str) -> None:
        path = GOLDEN_DIR / name
        if update:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
            return
        if not path.is_file():
            pytest.fail(f"golden file {path} is missing: run UPDATE_GOLDEN=1 ./dev test tests/callgraph")
        expected = path.read_text(encoding="utf-8")
        if text != expected:
            diff = "".join(
                difflib.unified_diff(expected.splitlines(True), text.splitlines(True), f"golden/{name}", "current", n=2)
            )
            pytest.fail(
                f"output differs from golden/{name} (regenerate with UPDATE_GOLDEN=1 if intended):\n" + diff[:6000]
            )

    return check

"""One style for the tree: the suite fails where `./dev lint` would (ruff, configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUFF = Path(sys.executable).with_name("ruff")


def _ruff(*args: str) -> subprocess.CompletedProcess[str]:
    assert RUFF.is_file(), f"{RUFF} missing: ruff comes with the test extra (pyproject.toml)"
    return subprocess.run([str(RUFF), *args, "."], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_the_tree_is_formatted() -> None:
    done = _ruff("format", "--check")
    assert done.returncode == 0, f"`./dev lint --fix` formats these:\n{done.stdout}{done.stderr}"


def test_the_tree_passes_the_linter() -> None:
    done = _ruff("check", "--output-format", "concise")
    assert done.returncode == 0, f"ruff check:\n{done.stdout}{done.stderr}"


def test_the_linter_finds_a_planted_defect(tmp_path: Path) -> None:
    """The check is live: an unused import and a 130-character line in a file under the same configuration fail."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\n\nX = '" + "x" * 124 + "'\n", encoding="utf-8")
    done = subprocess.run(
        [str(RUFF), "check", "--config", str(ROOT / "pyproject.toml"), "--output-format", "concise", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "F401" in done.stdout and "E501" in done.stdout, done.stdout

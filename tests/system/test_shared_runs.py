"""The suite's runs made once and shared by every pytest-xdist worker (tests/shared_runs.py: made_once)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

SUITE = """
import os
import pytest
from shared_runs import made_once

LOG = os.environ["MADE_ONCE_LOG"]

@pytest.fixture(scope="session")
def shared(tmp_path_factory):
    def make(d):
        with open(LOG, "a") as f:
            f.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")
        (d / "file").write_text("made")
        return d / "file"
    return made_once(tmp_path_factory, "shared", make)

@pytest.mark.parametrize("i", range(8))
def test_reads(shared, i):
    import time
    time.sleep(0.2)  # both workers get some of the tests
    assert shared.read_text() == "made"
    with open(LOG + ".readers", "a") as f:
        f.write(os.environ.get("PYTEST_XDIST_WORKER", "main") + "\\n")
"""


def test_two_workers_share_one_make(tmp_path):
    (tmp_path / "test_suite.py").write_text(SUITE)
    log = tmp_path / "made.log"
    env = {"MADE_ONCE_LOG": str(log), "PYTHONPATH": str(TESTS), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "--basetemp",
            str(tmp_path / "base"),
            str(tmp_path / "test_suite.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "8 passed" in proc.stdout
    readers = (tmp_path / "made.log.readers").read_text().split()
    assert len(readers) == 8 and set(readers) == {"gw0", "gw1"}, readers  # both workers ran tests
    assert len(log.read_text().split()) == 1  # ... and the value was made once

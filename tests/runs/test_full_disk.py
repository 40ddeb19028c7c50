"""A full disk under a Hydra job (issue 34, group 11): one line naming what could not be written, exit 2, no
traceback and nothing left behind, whether the job's own output fails (`runs.entry.reports_errors`) or Hydra's
files of the run (`.hydra/`, before the job runs: `jobs.cli`). A real full file system: a small tmpfs, mounted
where this machine allows it (root), else the test is skipped."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from llm_perf_opt.jobs.cli import main


@pytest.fixture
def small_disk(tmp_path):
    disk = tmp_path / "disk"
    disk.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", str(disk)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root): the full-disk cases are not checked")
    yield disk
    subprocess.run(["umount", "--lazy", str(disk)], check=False)  # detached even if a file in it is still open


def fill(disk: Path, leave: int) -> None:
    """Fill the file system, then give back `leave` bytes."""
    with open(disk / "filler", "wb", buffering=0) as fh:
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError:
            pass
    (disk / "filler").write_bytes(b"\0" * ((disk / "filler").stat().st_size - leave))


@pytest.mark.parametrize(
    "leave, says",
    [
        (48 * 1024, "costs.json: No space left on device"),  # Hydra's files fit, the job's costs.json does not
        (8 * 1024, "No space left on device (errno 28) (Hydra could not write the run's own files)"),
    ],
)
def test_a_full_disk_is_one_line_and_leaves_nothing(small_disk, capsys, leave, says):
    fill(small_disk, leave)
    try:
        code = main(["analyze", "model=twin_tiny", f"hydra.run.dir={small_disk / 'run'}"])
    except SystemExit as exc:
        code = exc.code
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip() and not line.startswith("[")]
    assert code == 2 and len(err) == 1 and err[0].startswith("error: ") and says in err[0], err
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler"]

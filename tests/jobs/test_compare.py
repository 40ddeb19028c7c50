"""`./dev compare` as a command (issue 34, groups 2 and 3): where it writes (a new directory of its own by default,
named after the runs, sweep jobs after their sweep; `--out` protected like a run directory), and an output it
cannot write (not a directory, a full disk) as one line, exit 2, nothing left. The runs are the session's sweep
of two modes (tests/conftest.py `small_sweep`) and its default trace run; nothing is written into them."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from llm_perf_opt.jobs.compare import main

pytestmark = pytest.mark.slow


def compare(capsys, *args) -> tuple[int, list[str], list[str]]:
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out.splitlines(), [line for line in err.splitlines() if line.strip()]


def test_default_outputs_never_replace_one_another(small_sweep, tmp_path, monkeypatch, capsys):
    sweep, _ = small_sweep
    monkeypatch.setenv("LLM_PERF_OPT_CWD", str(tmp_path))
    written = []
    for _ in range(2):
        code, out, err = compare(capsys, sweep / "0", sweep / "1")
        assert code == 0, err
        written.append(Path(out[-1]).parent)
    stem = f"{sweep.name}-0_vs_{sweep.name}-1"  # a sweep's jobs by their sweep: two sweeps' 0_vs_1 never meet
    assert [p.name for p in written] == [stem, f"{stem}-2"], written
    assert all(p.parent == tmp_path / "tmp" / "compare" and (p / "compare.html").is_file() for p in written)


def test_out_is_never_a_run_directory_nor_an_earlier_comparison_unless_asked(small_sweep, tmp_path, capsys):
    sweep, _ = small_sweep
    a, b = sweep / "0", sweep / "1"
    before = sorted(p.name for p in a.iterdir())
    code, _, err = compare(capsys, a, a, "--out", a)
    assert code == 2 and len(err) == 1 and "is a run or sweep directory" in err[0], err
    code, _, err = compare(capsys, a, b, "--out", sweep)
    assert code == 2 and len(err) == 1 and "multirun.yaml" in err[0], err
    assert sorted(p.name for p in a.iterdir()) == before
    out = tmp_path / "cmp"
    assert compare(capsys, a, b, "--out", out)[0] == 0
    first = (out / "compare.csv").read_text()
    code, _, err = compare(capsys, b, a, "--out", out)
    assert code == 2 and "already holds an earlier report" in err[0] and "--overwrite" in err[0], err
    assert (out / "compare.csv").read_text() == first  # kept
    code, lines, err = compare(capsys, b, a, "--out", out, "--overwrite")
    assert code == 0 and str(out / "compare.csv") in lines, err
    assert (out / "compare.csv").read_text() != first


def test_an_output_that_cannot_be_written_is_one_line_and_leaves_nothing(default_run, tmp_path, capsys):
    run, _ = default_run
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    code, _, err = compare(capsys, run, run, "--out", blocked / "out")
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: {blocked / 'out'}"), err
    full = tmp_path / "full"
    full.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(full)], capture_output=True).returncode:
        pytest.skip("cannot mount a small tmpfs here (needs root): the full-disk case is not checked")
    try:
        with open(full / "filler", "wb", buffering=0) as fh:
            try:
                while True:
                    fh.write(b"\0" * 4096)
            except OSError:
                pass
        (full / "filler").write_bytes(b"\0" * ((full / "filler").stat().st_size - 16 * 1024))  # 16 KiB left
        code, _, err = compare(capsys, run, run, "--out", full / "out")
        assert code == 2 and len(err) == 1 and "No space left on device" in err[0], err
        assert "compare.csv" in err[0] or "compare.html" in err[0], err  # the file it could not write, named
        assert sorted(p.name for p in full.iterdir()) == ["filler"]  # no directory, no half comparison
    finally:
        subprocess.run(["umount", "--lazy", str(full)], check=False)

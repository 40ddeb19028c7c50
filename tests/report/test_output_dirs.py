"""Where a report writes (`report.output_dirs`, issue 34, group 3): never among a run's or a sweep's files, never
over an earlier report unless asked, a default directory of its own every time, and nothing left of a report
that failed half-way."""

from __future__ import annotations

import pytest

from llm_perf_opt.errors import ConfigError
from llm_perf_opt.report.output_dirs import RUN_MARKERS, claim_output, discard_outputs, unique_dir

NAMES = ("compare.html", "compare.csv", "plots")


@pytest.mark.parametrize("marker", RUN_MARKERS)
def test_a_run_or_sweep_directory_and_anything_inside_it_is_refused(tmp_path, marker):
    run = tmp_path / "run"
    (run / marker).mkdir(parents=True) if marker == ".hydra" else (run.mkdir(), (run / marker).write_text("x"))
    for out, where in ((run, "is a run or sweep directory"), (run / "sub" / "out", f"is inside {run}")):
        with pytest.raises(ConfigError, match=rf"^--out='{out}' is invalid: {where}") as exc:
            claim_output(out, NAMES, field="--out", overwrite=True)
        assert marker in str(exc.value)
    assert sorted(p.name for p in run.iterdir()) == [marker]  # nothing written into it


def test_an_earlier_report_is_kept_unless_overwrite_and_then_replaced_whole(tmp_path):
    out = claim_output(tmp_path / "out", NAMES, field="--out")
    for name in ("compare.html", "compare.csv", "notes.txt"):
        (out / name).write_text("earlier")
    (out / "plots").mkdir()
    with pytest.raises(ConfigError, match=r"already holds an earlier report \(compare.html, compare.csv, plots\)"):
        claim_output(out, NAMES, field="--out")
    claim_output(out, NAMES, field="--out", overwrite=True, create=False)  # a check only: nothing removed
    assert len(list(out.iterdir())) == 4
    claim_output(out, NAMES, field="--out", overwrite=True)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]  # the earlier report's files only


def test_default_directories_never_meet(tmp_path):
    made = [unique_dir(tmp_path / "compare", "0_vs_1") for _ in range(3)]
    assert [p.name for p in made] == ["0_vs_1", "0_vs_1-2", "0_vs_1-3"] and all(p.is_dir() for p in made)


def test_a_failed_report_leaves_nothing_of_itself(tmp_path):
    made = tmp_path / "made"
    made.mkdir()
    (made / "compare.csv").write_text("half")
    discard_outputs(made, NAMES, made=True)
    assert not made.exists()
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "compare.csv").write_text("half")
    (kept / "mine.txt").write_text("the user's")
    discard_outputs(kept, NAMES, made=False)
    assert [p.name for p in kept.iterdir()] == ["mine.txt"]

"""`./dev report` as a command (issue 34, groups 3 and 10): an --analytic OUT_DIR protected like a run directory
(never a sweep's or a run's, an earlier report replaced only with --overwrite, a refused report touching none of
it), the --analytic options refused without --analytic instead of ignored, and --compare's entries judged one by
one with --compare named. In this process (`jobs.report.main`: argparse, no Hydra)."""

from __future__ import annotations

import pytest

from llm_perf_opt.jobs.report import main

SMALL = ("--n", "2", "--modes", "tiny", "--no-plots", "--hardware", "none")


def report(capsys, *args) -> tuple[int, list[str]]:
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse's one-line error
        code = exc.code
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


def test_an_analytic_report_is_never_replaced_unless_asked(tmp_path, capsys):
    out = tmp_path / "analytic"
    assert report(capsys, "--analytic", out, *SMALL)[0] == 0
    first = (out / "analytic.csv").stat().st_mtime_ns
    code, err = report(capsys, "--analytic", out, *SMALL)
    assert code == 2 and len(err) == 1 and "already holds an earlier report (analytic.csv" in err[0], err
    code, err = report(capsys, "--analytic", out, "--n", "100000", "--overwrite")  # refused before it writes
    assert code == 2 and "--n=100000" in err[0] and (out / "analytic.csv").stat().st_mtime_ns == first, err
    assert report(capsys, "--analytic", out, *SMALL, "--overwrite")[0] == 0
    assert (out / "analytic.csv").stat().st_mtime_ns != first
    # the family comparison beside it is another report: its own files, its own protection
    entries = ("--compare", "a=dsocr:tiny:tiny", "b=dsocr:tiny:gundam", "--hardware", "none")
    assert report(capsys, "--analytic", out, *entries)[0] == 0
    code, err = report(capsys, "--analytic", out, *entries)
    assert code == 2 and "already holds an earlier report (compare.csv, compare.md)" in err[0], err


def test_an_analytic_report_never_writes_into_a_sweep_or_a_run(tmp_path, capsys):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text("{}")
    for target, marker in ((sweep, "multirun.yaml"), (run / "plots", "summary.json")):
        code, err = report(capsys, "--analytic", target, *SMALL, "--overwrite")
        assert code == 2 and len(err) == 1 and "run or sweep directory" in err[0] and marker in err[0], err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["multirun.yaml", "run", "summary.json", "sweep"]


@pytest.mark.parametrize(
    "args, says",
    [
        (["--n", "5"], "--n applies to --analytic only"),
        (["--modes", "tiny", "--dtype", "float32"], "--modes, --dtype apply to --analytic only"),
        (["--compare", "a=dsocr:tiny:tiny"], "--compare applies to --analytic only"),
        (["--overwrite"], "--overwrite applies to --analytic only"),
    ],
)
def test_analytic_options_without_analytic_are_refused_not_ignored(tmp_path, capsys, args, says):
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (sweep / "multirun.yaml").write_text("hydra: {}\n")
    code, err = report(capsys, sweep, *args)
    assert code == 2 and len(err) == 1 and says in err[0], err
    assert [p.name for p in sweep.iterdir()] == ["multirun.yaml"]
    code, err = report(capsys, "--analytic", tmp_path / "a", "--out", tmp_path / "b")
    assert code == 2 and "--out applies to a sweep's report only" in err[0], err


@pytest.mark.parametrize(
    "entries, says",
    [
        (["a=dsocr:tiny:tiny", "a=dsocr:tiny:gundam"], "--compare='a=dsocr:tiny:gundam' is invalid: the label 'a' is"),
        (["a=dsocr:tiny:nosuchmode", "b=dsocr:tiny:tiny"], "--compare='a=dsocr:tiny:nosuchmode' is invalid: mode"),
        (["a=dsocr:nosuch:tiny", "b=dsocr:tiny:tiny"], "--compare='a=dsocr:nosuch:tiny' is invalid: model 'nosuch'"),
        (["a=nofam:tiny:tiny", "b=dsocr:tiny:tiny"], "--compare='a=nofam:tiny:tiny' is invalid: family 'nofam'"),
    ],
)
def test_each_compare_entry_is_judged_by_name(tmp_path, capsys, entries, says):
    code, err = report(capsys, "--analytic", tmp_path / "out", "--compare", *entries)
    assert code == 2 and len(err) == 1 and err[0].startswith(f"error: {says}"), err
    assert "--modes" not in err[0] and not (tmp_path / "out").exists()

"""README.md's command excerpts are what the commands print (issue 33, item 7): docs/hooks/readme_excerpts.py
(`./dev docs --readme`) writes them from real runs; here the cheap commands (analyze, size: seconds) run again, the
trace and verify excerpts are read from the session's shared runs of the same commands (tests/conftest.py
`default_run`, `quick_gate`), and any difference beyond times, shares of time, paths and the host's verdict fails,
saying what to run. The comparison itself is checked to catch a changed figure and to pass a changed time."""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path

import pytest
from job_scripts import run_job_in_process

REPO = Path(__file__).resolve().parents[2]
HOW = "regenerate with ./dev docs --readme (all) or ./dev docs --readme NAME"


def excerpts_script():
    spec = importlib.util.spec_from_file_location("readme_excerpts", REPO / "docs" / "hooks" / "readme_excerpts.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


HOOK = excerpts_script()
README = (REPO / "README.md").read_text(encoding="utf-8")
CHEAP = [name for name, e in HOOK.EXCERPTS.items() if e.cheap]


def job_output(command: str) -> str:
    """stdout and stderr of an excerpt's `./dev JOB ARGS`, the job command run in this process (`run_job_in_process`:
    what the job's script in pipelines/ prints, on the same two streams, without a Python start-up per command)."""
    argv = shlex.split(command)
    assert argv[0] == "./dev", command
    proc = run_job_in_process(argv[1], *argv[2:])
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def cheap_outputs(default_run) -> dict[str, str]:
    """The cheap commands' outputs, after the session's default run calibrated this host (the eager level of
    `./dev analyze` reads that calibration; without one its eager column is absent, as it would be for a user who
    never ran a job here)."""
    blocks = HOOK.blocks(README)
    return {name: job_output(blocks[name][0]) for name in CHEAP}


def test_the_readme_holds_every_excerpt_once():
    assert README.count("<!-- excerpt ") == README.count("<!-- /excerpt -->") == len(HOOK.EXCERPTS)
    assert set(HOOK.blocks(README)) == set(HOOK.EXCERPTS) and len(CHEAP) >= 2
    for name, (command, lines) in HOOK.blocks(README).items():
        assert command.startswith("./dev ") and lines, name


@pytest.mark.slow
def test_cheap_excerpts_are_what_the_commands_print(cheap_outputs):
    assert HOOK.differences(README, cheap_outputs) == [], HOW


@pytest.mark.slow
def test_the_trace_excerpt_is_what_the_default_trace_printed(default_run):
    _, proc = default_run
    assert HOOK.blocks(README)["trace"][0] == "./dev trace"  # the session's default run is this command
    assert HOOK.differences(README, {"trace": proc.stdout + proc.stderr}) == [], HOW


@pytest.mark.slow
def test_the_verify_excerpt_is_what_the_quick_gate_printed(quick_gate):
    assert HOOK.blocks(README)["verify"][0] == "./dev verify verify=quick"
    assert HOOK.differences(README, {"verify": quick_gate.proc.stdout + quick_gate.proc.stderr}) == [], HOW


@pytest.mark.slow
def test_a_changed_figure_fails_and_a_changed_time_or_path_does_not(cheap_outputs):
    size = HOOK.blocks(README)["size"][1]
    figure = next(line for line in size if "pages_per_day=" in line)
    changed = README.replace(figure, figure.replace("785.2", "786.2"))
    assert changed != README
    (diff,) = HOOK.differences(changed, {"size": cheap_outputs["size"]})
    assert "786.2" in diff and "785.2" in diff
    analyze = HOOK.blocks(README)["analyze"][1]
    row = next(line for line in analyze if line.startswith("decode "))
    slower = row.replace("µs", "ms", 1).replace(" host ", " launch ").replace("%", "1%", 1)  # times, verdict, share
    assert slower != row
    assert HOOK.differences(README.replace(row, slower), {"analyze": cheap_outputs["analyze"]}) == []
    counts = row.replace("1,187", "1,188")
    assert HOOK.differences(README.replace(row, counts), {"analyze": cheap_outputs["analyze"]}) != []
    path = ["run page: /elsewhere/2027-01-02/10-11-12.1-99/run.html"]
    assert HOOK.normalise(path, HOOK.EXCERPTS["trace"]) == HOOK.normalise(
        ["run page: tmp/runs/<date>/<time>-<pid>/run.html"], HOOK.EXCERPTS["trace"]
    )

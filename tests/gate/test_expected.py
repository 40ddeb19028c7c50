"""conf/verify/expected.yaml: the pinned analytic totals of the full model, their comparison and their update."""

from __future__ import annotations

import subprocess

import pytest
import yaml

from llm_perf_opt.dsocr.parts import mode_names
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.gate import pins


@pytest.fixture(scope="module")
def committed():
    return pins.load(pins.default_path())


def test_the_committed_pins_are_the_analytic_model_of_today(committed):
    table, pages = committed
    assert pages == list(pins.DEFAULT_PAGES)
    assert list(table) == list(mode_names())
    assert pins.compare(table, pins.compute(mode_names(), pages)) == []


def test_the_pins_are_the_full_models_figures(committed):
    """Gundam on the default letter page: 903 image tokens, a 908-token prompt (README's table)."""
    table, _ = committed
    entry = table["gundam"]["letter_portrait"]
    assert entry["seq_len"] == 908 and entry["decode"]["context"] == 908
    assert entry["prefill"]["flops"] > entry["prefill"]["flops_matmul"] > 4e12  # TFLOPs: the 3B model, not the tiny one
    assert table["tiny"]["letter_portrait"] == table["tiny"]["slide"]  # no crops: the page shape does not matter


def test_compare_names_every_moved_number_with_old_and_new(committed):
    table, _ = committed
    old = yaml.safe_load(yaml.safe_dump(table))
    old["base"]["slide"]["decode"]["flops"] += 10
    del old["large"]
    old["huge"] = old["tiny"]
    changes = {(c.mode, c.page, c.stage, c.count): c for c in pins.compare(old, table)}
    moved = changes[("base", "slide", "decode", "flops")]
    assert (moved.old, moved.new) == (
        table["base"]["slide"]["decode"]["flops"] + 10,
        table["base"]["slide"]["decode"]["flops"],
    )
    assert moved.change.startswith("-10 (-")
    assert changes[("large", "slide", "prefill", "flops_matmul")].change == "not pinned in the file"
    assert changes[("huge", "slide", "prefill", "flops")].change == "pinned, but this mode or page no longer exists"
    assert len(changes) == 1 + 2 * 2 * 2 + 2 * 2 * 2  # one moved, large's 8 numbers missing, huge's 8 extra


def verify_in_process(capsys, *args: str) -> subprocess.CompletedProcess:
    """`./dev verify ARGS` through its `main` in this process (an update runs no job and starts no process:
    the command's own exit statuses are tested in test_matrices.py): what it returned and printed."""
    from llm_perf_opt.jobs.verify import main

    code = main(list(args))
    out = capsys.readouterr()
    return subprocess.CompletedProcess(["verify", *args], code, out.out, out.err)


def test_update_writes_the_file_and_a_second_update_changes_nothing(tmp_path, capsys):
    path = tmp_path / "expected.yaml"
    cmd = ["--update-expected", f"verify.expected={path}"]
    first = verify_in_process(capsys, *cmd)
    assert first.returncode == 0, first.stderr
    n = len(mode_names()) * len(pins.DEFAULT_PAGES) * 4
    assert f"{path}: {n} pinned totals, {n} changed" in first.stdout
    assert path.read_text() == pins.default_path().read_text()  # the committed file is exactly what it writes
    second = verify_in_process(capsys, *cmd)
    assert second.returncode == 0 and f"{n} pinned totals, 0 changed" in second.stdout
    assert not (tmp_path / "sweep").exists()  # an update runs no job


def test_a_missing_or_malformed_file_is_one_line(tmp_path):
    with pytest.raises(ConfigError, match=r"no such file; create it with \./dev verify verify.update_expected=true"):
        pins.load(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "pages: [letter_portrait]\npins:\n  tiny:\n    letter_portrait:\n      prefill: {flops_matmul: 1.5}\n"
    )
    with pytest.raises(
        ConfigError, match=r"pins.tiny.letter_portrait.prefill.flops_matmul must be an integer, found 1.5"
    ):
        pins.load(bad)

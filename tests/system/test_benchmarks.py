"""Every benchmark of benchmarks/ runs with its defaults: its argument parser accepts no argument (the script
is imported, not run: `parse_args(argv)` / `main(argv)`; data_identity, a tool with commands, names them),
and where a benchmark has a mode on the tiny twin (or needs no model), that mode runs here and prints its
figures. The full-size runs stay out of the suite:
they are what the benchmarks are for (`./dev bench NAME`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest
from shared_runs import load_benchmark

from llm_perf_opt.dsocr.parts import mode_names

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
GPU_DATA = Path(__file__).resolve().parents[1] / "data" / "gpu"
NAMES = sorted(p.stem for p in BENCHMARKS.glob("*.py"))
COMMANDS = {"data_identity": (["run", "out"], {"cmd": "run", "no_vendor": False})}  # no default command

# what each parser gives with no argument, as each script's docstring and help say
DEFAULTS = {
    "analytic_speed": {"n": 10_000, "cold": 300, "parts": False},
    "cpu_forward_parts": {"mode": "tiny", "threads": 1, "repeats": 6, "quick_calibration": False},
    "cpu_decode_parts": {"mode": "tiny", "batch": 4, "step": 2, "threads": 1, "repeats": 6, "quick_calibration": False},
    "cuda_validation": {"models": "", "modes": "tiny,base,gundam", "decode_steps": 8, "repeats": 3, "runs": ""},
    "decode_capture": {"mode": "tiny", "steps": 4, "spec": "deepseek_ocr"},
    "export_speed": {"model": "twin", "workload": "gundam", "runtime": "cpu"},
    "host_workload": {"device": "cpu", "dtype": "", "rounds": 9, "steps": 20},
    "layout_speed": {"n": 200_000},
    "memory_fit": {"models": ["twin_tiny", "twin"], "batches": [1], "runs": None},
    "profile_overhead": {"spec": "deepseek_ocr", "mode": "gundam", "runtime": "cpu_bf16", "warmup": 1, "repeats": 3},
    "replay_levels": {"data": ""},
    "roofline_speed": {"n": 10_000, "cold": 200, "hardware": "h100_sxm", "parts": False},
    "serving_replay": {"data": "", "experts": ""},
    "cpu_row_products": {"rows": [1, 2, 4, 8, 16], "repeats": 7, "warm": 3},
    "serving_curve": {"model": "twin_tiny", "mode": "tiny", "runtime": "cpu", "batches": [1, 2, 4], "steps": 2},
    "sizing": {"pages": 25, "batches": 80, "mode": "gundam", "output_tokens": 1000},
    "sweep_memory": {"model": "twin", "runtime": "cpu_bf16", "keep": False, "overrides": []},
    "sweep_modes": {"trace": "default", "n": 64, "keep": False},
    "time_model": {
        "model": "twin_tiny",
        "runtime": "cpu",
        "modes": "tiny,base,gundam",
        "pages": "default,slide",
        "threads": 1,
        "decode_steps": 1,
        "repeats": 3,
        "quick": False,
        "runs": "",
    },
    "trace_full_twin": {"modes": ["tiny", "gundam"], "spec": "deepseek_ocr", "dtype": "bfloat16", "repeat": 1},
    "twin_forward": {"modes": list(mode_names())},
    "verify_full_twin": {"mode": "gundam", "spec": "deepseek_ocr", "decode_steps": "1", "fvcore": False},
}


def test_every_benchmark_is_listed_here():
    assert NAMES == sorted([*DEFAULTS, *COMMANDS])


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_tool_with_commands_names_them(name, capsys):
    module = load_benchmark(name)
    with pytest.raises(SystemExit) as exc:
        module.parse_args([])
    assert exc.value.code == 2 and "the following arguments are required: cmd" in capsys.readouterr().err
    argv, want = COMMANDS[name]
    args = module.parse_args(argv)
    assert {k: getattr(args, k) for k in want} == want


@pytest.mark.parametrize("name", sorted(DEFAULTS))
def test_the_parser_takes_no_argument(name):
    module = load_benchmark(name)
    args = module.parse_args([])
    assert isinstance(args, argparse.Namespace)
    want = DEFAULTS[name]
    assert {k: getattr(args, k) for k in want} == want


def test_a_bad_mode_is_refused_by_name(capsys):
    with pytest.raises(SystemExit) as exc:
        load_benchmark("trace_full_twin").parse_args(["nope"])
    assert exc.value.code == 2 and "invalid mode 'nope'" in capsys.readouterr().err


# (arguments of a quick mode: the tiny twin, or a few pages of the analytic model; a line it prints per
# mode or once, and how many times). Not here: memory_fit (its tiny-twin run is in
# tests/report/test_serving_reports.py), twin_forward (full size only), sweep_modes and sweep_memory (six-job sweeps
# of the tiny twin: a minute or more).
SMOKE = {
    "analytic_speed": (["-n", "20", "--cold", "2"], "evaluations/s", len(mode_names())),
    "roofline_speed": (["-n", "20", "--cold", "2"], " pages in ", len(mode_names()) + 1),
    "layout_speed": (["-n", "200"], " calls/s ", 4),
    "sizing": (["--pages", "2", "--batches", "4", "--devices", "h100_sxm"], " evaluations/s ", 1),
    "trace_full_twin": (["tiny", "--spec", "tiny", "--dtype", "float32"], "fastest trace stage", 1),
    "decode_capture": (["--spec", "tiny", "--steps", "1"], "plain decode step (median of 1)", 1),
    "profile_overhead": (
        ["--spec", "tiny", "--mode", "tiny", "--runtime", "cpu", "--warmup", "0", "--repeats", "1"],
        "overhead: profiled / plain",
        1,
    ),
    "export_speed": (["--model", "twin_tiny", "--workload", "tiny"], "peak RSS", 1),
    "replay_levels": ([], " units within 25%, median |ratio - 1| ", 2),  # one recording and all (below)
    "cpu_forward_parts": (["--repeats", "1", "--quick-calibration"], " ms of their own time;", 1),
    "cpu_decode_parts": (["--repeats", "1", "--batch", "2", "--quick-calibration"], "lm_head alone: ", 1),
    "host_workload": (["--rounds", "2", "--steps", "2"], " that launch a kernel, ", 2),
    # one recorded H200 curve (below), priced at the experts the CPU twin's curve (tests/data/cpu/) logged
    "serving_replay": ([], "routing logged (tests/data/cpu/twin-tiny-2026-11-27/serving_curve.json: ", 1),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SMOKE))
def test_the_quick_mode_runs(name, capsys, tmp_path, monkeypatch):
    argv, line, count = SMOKE[name]
    monkeypatch.chdir(tmp_path)  # anything a benchmark writes under tmp/ stays in the test's directory
    monkeypatch.setattr(sys, "argv", [name])
    module = load_benchmark(name)
    if name == "profile_overhead":
        argv = [*argv, "--out", str(tmp_path / "out")]
    if name == "replay_levels":  # one recording (its two runs): tests/measure/test_replay_levels.py replays them all
        (tmp_path / "gpu").mkdir()
        (tmp_path / "gpu" / "h200-2026-11-27-1648").symlink_to(GPU_DATA / "h200-2026-11-27-1648")
        argv = [*argv, "--data", str(tmp_path / "gpu")]
    if name == "serving_replay":  # one recording: tests/analytic/test_serve_engines.py replays both curves
        (tmp_path / "gpu").mkdir()
        (tmp_path / "gpu" / "h200-2026-11-27-1635").symlink_to(GPU_DATA / "h200-2026-11-27-1635")
        argv = [*argv, "--data", str(tmp_path / "gpu")]
    module.main(argv)
    out = capsys.readouterr().out
    assert out.count(line) == count, out[-3000:]


def test_verify_full_twin_quick_mode_passes(capsys):
    module = load_benchmark("verify_full_twin")
    with pytest.raises(SystemExit) as exc:
        module.main(["tiny", "--spec", "tiny", "--decode-steps", "1"])
    out = capsys.readouterr().out
    assert exc.value.code == 0, out[-3000:]
    assert out.count("analytic ") >= 3  # vision, prefill and decode rows


# ------------------------------------------------------------------ issue 34, group 9: ./dev bench's input
DEV = Path(__file__).resolve().parents[2] / "dev"


@pytest.mark.parametrize(
    "argv, says",
    [
        ([], "error: ./dev bench: NAME is one of: analytic_speed "),
        (["nosuch"], "error: ./dev bench: 'nosuch' is not a benchmark; NAME is one of: analytic_speed "),
        (["../pipelines/analyze"], "error: ./dev bench: '../pipelines/analyze' is not a benchmark"),
        (["__pycache__"], "error: ./dev bench: '__pycache__' is not a benchmark"),
    ],
)
def test_dev_bench_takes_a_benchmark_by_name_only(tmp_path, argv, says):
    import subprocess

    proc = subprocess.run([str(DEV), "bench", *argv], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    lines = proc.stderr.splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith(says), proc.stderr
    assert "__pycache__" not in lines[0].split("NAME is one of:")[-1]
    assert sorted(lines[0].split("NAME is one of: ")[1].split()) == NAMES
    assert list(tmp_path.iterdir()) == []  # nothing ran, nothing was written


@pytest.mark.parametrize(
    "name, argv, says",
    [
        ("layout_speed", ["-n", "-5"], "argument -n: -5 is not a positive integer"),
        ("sizing", ["--pages", "0"], "argument --pages: 0 is not between 1 and 10,000"),
        ("sizing", ["--batches", "100000"], "argument --batches: 100000 is not between 1 and 4,096"),
        (
            "sizing",
            ["--devices", "h100_sxm", "nosuch"],
            "--devices: 'nosuch' not among the datasheets (a100_40gb, a100_80gb",
        ),
        ("analytic_speed", ["--cold", "0"], "argument --cold: 0 is not a positive integer"),
        (
            "serving_curve",
            ["--hardware", "h200", "--recalibrate"],
            "--recalibrate and --quick-calibration need --hardware measured",
        ),
    ],
)
def test_a_size_a_benchmark_cannot_respect_is_one_line(name, argv, says, capsys):
    with pytest.raises(SystemExit) as exc:
        load_benchmark(name).parse_args(argv)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert exc.value.code == 2 and len(err) == 1 and says in err[0] and "usage:" not in err[0], err


def test_a_benchmarks_bad_input_at_run_time_is_one_line(capsys):
    from llm_perf_opt.errors import ConfigError
    from llm_perf_opt.jobs.args import run_script

    def main() -> None:
        raise ConfigError.field("hardware", "nosuch", "one of a100_80gb, h100_sxm")

    assert run_script(main) == 2
    assert capsys.readouterr().err == "error: hardware='nosuch' is invalid: one of a100_80gb, h100_sxm\n"
    assert run_script(lambda: None) == 0


def test_serving_replay_refuses_an_experts_file_that_is_no_serving_curve(tmp_path, capsys):
    """`serving_replay --experts FILE`: a missing file or one that is not a serving_curve.json is one line naming
    --experts, exit 2, before any recording is printed."""
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    replay = load_benchmark("serving_replay")
    compared = 0
    for path, says in ((tmp_path / "none.json", "no such file"), (bad, "missing field 'schema'")):
        assert replay.main(["--experts", str(path)]) == 2
        out, err = capsys.readouterr()
        lines = [line for line in err.splitlines() if line.strip()]
        assert out == "" and len(lines) == 1 and "--experts=" in lines[0] and says in lines[0], err
        compared += 1
    assert compared == 2

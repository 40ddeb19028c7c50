"""The jobs with `hardware=measured hardware.calibration=PATH` (the H200 recording in tests/data/gpu/h200-2026-11-26/):
`./dev analyze` prints the three levels on the recorded device and host with the figures the recorded run printed,
and the trace job's roofs; a bad file, or a file with a datasheet, is refused by analyze, trace and size before their
run directory exists. In-process (`jobs.cli.main`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from roofline_helpers import compose_cfg

from llm_perf_opt.config import to_typed_config
from llm_perf_opt.errors import ExitCode
from llm_perf_opt.jobs.cli import main

DATA = Path(__file__).resolve().parents[1] / "data" / "gpu" / "h200-2026-11-26"
H200 = DATA / "NVIDIA_H200-torch2.11.0+cu130-threads16-cuda.json"
RECORDED_LOG = DATA / "twin_tiny-tiny" / "job.log"  # the recorded run: model=twin_tiny workload=tiny runtime=cuda


def run(capsys, *args: str) -> tuple[int, str, list[str]]:
    try:
        code = main(list(args))
    except SystemExit as exc:  # a refusal in a Hydra callback ends the process
        code = exc.code
    got = capsys.readouterr()
    return code, got.out, [line for line in got.err.splitlines() if line.strip()]


def _line(text: str, prefix: str) -> str:
    found = [line for line in text.splitlines() if line.startswith(prefix)]
    assert len(found) == 1, (prefix, found)
    return found[0]


def _rows(text: str) -> dict[str, list[str]]:
    """{stage or '  part': the row's cells} of the levels table."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("time levels on "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("device figures: "))
    rule = next(i for i in range(start, end) if set(lines[i]) == {"-"})  # the rule under the column header
    return {line[:20].rstrip(): line[20:].split() for line in lines[rule + 1 : end]}


def test_analyze_on_the_recorded_file_alone_prints_the_figures_the_recorded_run_printed(tmp_path, capsys):
    alone = Path(shutil.copy(H200, tmp_path / H200.name))
    out = tmp_path / "run"
    code, text, err = run(
        capsys,
        "analyze",
        "model=twin_tiny",
        "workload=tiny",
        "runtime=cuda",  # the recorded run's runtime (no CUDA needed: nothing runs)
        "hardware=measured",
        f"hardware.calibration={alone}",
        f"hydra.run.dir={out}",
    )
    assert code == ExitCode.OK, err
    recorded = RECORDED_LOG.read_text()
    assert _line(text, "device figures: ") == _line(recorded, "device figures: ")
    assert _line(text, "host figures: ").split(" (")[0] == _line(recorded, "host figures: ").split(" (")[0]
    label = _line(text, "time levels on ")
    assert label.startswith(
        "time levels on the recorded host (Intel(R) Xeon(R) Processor (16 logical CPUs), torch 2.11.0+cu130, "
        "16 threads) + NVIDIA H200 (torch 2.11.0+cu130, 16 threads; recorded 2026-11-26"
    )
    assert label.endswith("(recorded calibration, bfloat16)")
    assert "min_kernel_s: the file's version-5 figure, kept: launch-bound" in text
    payload = json.loads((out / "roofline.json").read_text())["data"]
    assert payload["levels"] == ["ideal", "kernel", "eager"] and payload["absent_levels"] == {}
    notes = payload["time_model"]["notes"]
    assert notes[0] == f"recorded calibration {alone} (kernel-level figures version 5)" and len(notes) == 16
    # 2 figures kept (min_kernel_s, host.op_s), 7 named defaults (gemm_fixed_s, conv_fixed_s, multiprocessors, the 4
    # one-wave kernel times: none without a recording), 6 launch-bound ones labelled and kept
    # (`level_fillers.launch_bound_rules`: alone, nothing set aside)
    assert sum("launch-bound: timed by CUDA events" in n for n in notes) == 6
    assert sum("kept: no recording beside the file" in n for n in notes) == 6
    defaults = ("gemm_fixed_s: named default 0", "conv_fixed_s: named default 0", "multiprocessors: named default 0")
    assert sum(n.startswith(defaults) for n in notes) == 3
    assert sum(n.startswith("wave_kernel_s.") and ": named default 0: no recording" in n for n in notes) == 4
    assert (
        payload["time_model"]["device"]["min_kernel_s"]
        == json.loads(H200.read_text())["data"]["levels"]["bfloat16"]["min_kernel_s"]
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == [H200.name, "run"]  # the file is read, nothing beside it


def test_analyze_gundam_on_the_recorded_file_prints_all_three_levels(capsys, tmp_path):
    code, text, err = run(
        capsys,
        "analyze",
        "model=twin",
        "workload=gundam",
        "hardware=measured",
        f"hardware.calibration={H200}",
        f"hydra.run.dir={tmp_path / 'run'}",
    )
    assert code == ExitCode.OK, err
    rows = _rows(text)
    stages = [name for name in rows if not name.startswith(" ")]
    assert [s.split(" (")[0] for s in stages] == ["vision", "prefill", "decode"]
    for stage in stages:
        cells = rows[stage]
        assert "absent" not in cells[:6] and len(cells) >= 8, (stage, cells)  # ideal, kernel, eager: value + unit
    assert "level absent" not in text
    assert "min_kernel_s: from the recording beside the file" in text and "twin_tiny-tiny" in text
    assert any("hardware.calibration:" in line and "nothing measured" in line for line in err)


def test_the_trace_jobs_primary_roof_is_the_recorded_one(tmp_path):
    from llm_perf_opt.trace.roofline import job_roofs

    cfg = to_typed_config(compose_cfg("hardware=measured", f"hardware.calibration={H200}"))
    roofs = job_roofs(cfg, profiled=False)
    assert [(r.name, r.same_device) for r in roofs] == [("recorded", False)]
    assert roofs[0].hardware.label.startswith("NVIDIA H200") and str(H200) in roofs[0].note


def _bad(tmp_path: Path) -> Path:
    doc = json.loads(H200.read_text())
    doc["data"]["levels"]["float32"]["version"] = 99
    path = tmp_path / "newer.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize(
    "job, extra",
    [
        ("analyze", []),
        ("trace", ["trace=forward_only"]),
        ("size", ["size.ttft_s=1", "size.tpot_s=0.02", "size.pages_per_day=1000"]),
    ],
)
@pytest.mark.parametrize("case", ["missing", "newer", "datasheet"])
def test_a_refused_calibration_file_writes_nothing(tmp_path, capsys, job, extra, case):
    path = {"missing": tmp_path / "nope.json", "newer": _bad(tmp_path), "datasheet": H200}[case]
    hardware = "hardware=h100_sxm" if case == "datasheet" else "hardware=measured"
    out = tmp_path / "out"
    code, _, err = run(
        capsys, job, "model=twin_tiny", hardware, f"hardware.calibration={path}", *extra, f"hydra.run.dir={out}"
    )
    assert code == ExitCode.CONFIG and len(err) == 1 and err[0].startswith("error: "), (code, err)
    assert f"hardware.calibration={str(path)!r}" in err[0]
    assert {"missing": "file: no such file", "newer": "levels.float32.version: 99", "datasheet": "h100_sxm"}[
        case
    ] in err[0]
    assert not out.exists()
